//! `clmulti trust`: the user's word for scenario files that load code. A scenario
//! file is code: its `[env]` can preload a library, point the ICD loader at runtimes
//! and layers, or change where libraries are found; `clmulti run` (and the sweep)
//! refuse a file whose loads nothing trusts until the user, having read it, trusts
//! it here (by its content: a changed file needs trust again) or allows the
//! libraries for one run (`--allow PATH`).

use crate::format::write_stdout;
use crate::Failure;
use clmulti_scenario::loads::Load;
use clmulti_scenario::{trust, ScenarioFile};
use std::path::{Path, PathBuf};

/// Arguments of `clmulti trust`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario files to trust, as they are now (each is read and shown first).
    #[arg(required_unless_present = "list")]
    files: Vec<PathBuf>,
    /// Take the files' trust back instead.
    #[arg(long)]
    revoke: bool,
    /// List the trusted files (their content hash and path), and trust nothing.
    #[arg(long, conflicts_with = "revoke")]
    list: bool,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    if args.list {
        let recorded = trust::recorded();
        let mut text = format!(
            "{} trusted file(s) in {}\n",
            recorded.len(),
            trust::record_path().map_or_else(|| "(no record)".into(), |p| p.display().to_string())
        );
        for (hash, path) in recorded {
            text.push_str(&format!("{} {path}\n", &hash[..16]));
        }
        return write_stdout(&text);
    }
    for file in &args.files {
        if args.revoke {
            let gone = trust::revoke(file)
                .map_err(|e| Failure::Tool(format!("{}: {e}", file.display())))?;
            write_stdout(&format!(
                "{}: {gone} trust record(s) removed\n",
                file.display()
            ))?;
            continue;
        }
        let scenario = ScenarioFile::load(file).map_err(|e| Failure::Input(e.to_string()))?;
        let loads = scenario.loads();
        let hash =
            trust::trust(file).map_err(|e| Failure::Tool(format!("{}: {e}", file.display())))?;
        let mut text = format!("trusted {} (sha256 {})\n", file.display(), &hash[..16]);
        for load in loads {
            text.push_str(&format!("  {}\n", describe(&load)));
        }
        write_stdout(&text)?;
    }
    Ok(())
}

/// A load and why it needs no word, if it does not: `LD_PRELOAD loads library
/// /tmp/x.so (not trusted)`.
pub fn describe(load: &Load) -> String {
    let why = match load.trusted {
        Some(clmulti_scenario::loads::Trusted::ProjectLibrary) => "clmulti's own",
        Some(clmulti_scenario::loads::Trusted::System) => "a system file",
        Some(clmulti_scenario::loads::Trusted::ThisCheckout) => "installed by this checkout",
        None => "needs your word",
    };
    format!("{} ({why})", load.words())
}

/// The refusal of a file whose loads nothing trusts, naming them and the ways to
/// allow them; `None` when it may run.
pub fn refusal(path: &Path, file: &ScenarioFile, allowed: &[PathBuf]) -> Option<String> {
    let untrusted = file.untrusted_loads(allowed);
    if untrusted.is_empty() {
        return None;
    }
    let listed: Vec<String> = untrusted.iter().map(Load::words).collect();
    Some(format!(
        "{}: the scenario loads code nothing trusts: {}; a scenario file is code: read it, then `clmulti trust {}` (its content, until it changes), or allow the libraries for this run with --allow PATH",
        path.display(),
        listed.join("; "),
        path.display()
    ))
}
