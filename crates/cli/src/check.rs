//! `clmulti check`: validate scenario files without running them, as strictly as a
//! run would (this machine's hard limits, paths named in `[env]`).

use crate::format::{self, Format};
use crate::Failure;
use clmulti_scenario::{ScenarioError, ScenarioFile};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Arguments of `clmulti check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// Version of `clmulti check --format json`.
const CHECK_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
struct CheckReport {
    schema_version: u32,
    files: Vec<FileResult>,
}

#[derive(Debug, Serialize)]
struct FileResult {
    file: String,
    runs: Option<usize>,
    error: Option<ErrorJson>,
}

#[derive(Debug, Serialize)]
struct ErrorJson {
    line: Option<usize>,
    column: Option<usize>,
    key: Option<String>,
    message: String,
    text: String,
}

/// Loads a scenario file as a run on this machine would check it (this machine's
/// hard limits, the layer beside clmulti), as `clmulti_scenario::load_file` does.
pub fn load(path: &Path) -> Result<ScenarioFile, ScenarioError> {
    ScenarioFile::load(path)
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let mut results = Vec::new();
    for file in &args.files {
        let checked = load(file).and_then(|f| {
            if crate::format::shows(crate::format::Verbosity::Verbose) {
                for (index, run) in f.runs().enumerate() {
                    let Ok(s) = run else { break };
                    let a = &s.allocation;
                    eprintln!(
                        "check: {} --index {index}: {}: {} device(s) of type {}, context {}, strategy {}, {} x {}{}{}",
                        file.display(),
                        s.name,
                        s.devices.set.len(),
                        format!("{:?}", s.devices.device_type).to_lowercase(),
                        s.context_mode.name(),
                        a.strategy.name(),
                        clmulti_scenario::format_size(a.size_bytes),
                        match a.count {
                            clmulti_scenario::Count::Fixed(n) => n.to_string(),
                            clmulti_scenario::Count::UntilFailure => "until failure".into(),
                        },
                        if s.env.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ", env {}",
                                s.env
                                    .iter()
                                    .map(|(k, v)| format!("{k}={v}"))
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            )
                        },
                        if s.limits.any() {
                            format!(", limits {:?}", s.limits.soft)
                        } else {
                            String::new()
                        },
                    );
                }
            }
            f.check()
        });
        results.push(match checked {
            Ok(runs) => FileResult {
                file: file.display().to_string(),
                runs: Some(runs),
                error: None,
            },
            Err(e) => FileResult {
                file: file.display().to_string(),
                runs: None,
                error: Some(ErrorJson {
                    line: e.line,
                    column: e.column,
                    key: e.key.clone(),
                    message: e.message.clone(),
                    text: e.to_string(),
                }),
            },
        });
    }
    let bad = results.iter().filter(|r| r.error.is_some()).count();
    match args.format {
        Format::Json => format::print_json(&CheckReport {
            schema_version: CHECK_SCHEMA_VERSION,
            files: results,
        })?,
        Format::Text => {
            for r in &results {
                match (&r.error, r.runs) {
                    (Some(e), _) => crate::say!("error: {}", e.text),
                    (None, Some(n)) => {
                        format::write_stdout(&format!("ok {}: {n} run(s)\n", r.file))?
                    }
                    (None, None) => {}
                }
            }
        }
    }
    if bad > 0 {
        return Err(Failure::Input(format!(
            "{bad} of {} file(s) are invalid",
            args.files.len()
        )));
    }
    Ok(())
}
