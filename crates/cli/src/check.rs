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

/// Loads a scenario file with this machine's hard limits, so that everything a run
/// would reject from the file alone is rejected here too.
pub fn load(path: &Path) -> Result<ScenarioFile, ScenarioError> {
    let mut file = ScenarioFile::load(path)?.with_hard_limits(clmulti_probe::hard_limits());
    if let Ok(exe) = std::env::current_exe() {
        file = file.with_layer(exe.with_file_name(clmulti_scenario::LAYER_FILE_NAME));
    }
    Ok(file)
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let mut results = Vec::new();
    for file in &args.files {
        let checked = load(file).and_then(|f| f.check());
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
