//! A scenario file is code, and `clmulti trust` is the user's word for one. Its
//! `[env]` can preload a library, point the ICD loader at runtimes and layers, move
//! where libraries, programs and compiled kernels are found, or write files: any key
//! not on the list of inert keys ([`INERT_KEYS`]) is a load ([`Load`]). `clmulti run`
//! and the sweep refuse a file whose loads nothing trusts until the user, having
//! read it, trusts it here (by its content and the content of every library it
//! names: a change to either needs trust again) or allows the libraries for one run
//! (`--allow PATH`); every run checks them again right before its process starts and
//! hands the loader what was checked ([`prepare`]).

mod bind;
mod icd;
mod inert;
mod loads;
mod owner;
mod store;

pub use bind::{assess, prepare, Assessment, Binding, Prepared};
pub use inert::{inert, InertKey, INERT_KEYS};
pub use loads::{Load, LoadKind, Trusted};
pub use store::TRUST_FILE_ENV;

use crate::format::write_stdout;
use crate::Failure;
use clmulti_scenario::ScenarioFile;
use std::path::{Path, PathBuf};

/// Arguments of `clmulti trust`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario files to trust, as they are now, with the libraries they load.
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
        return list();
    }
    for file in &args.files {
        if args.revoke {
            revoke(file)?;
        } else {
            trust(file)?;
        }
    }
    Ok(())
}

fn list() -> Result<(), Failure> {
    let recorded = store::recorded().map_err(|e| Failure::Tool(e.to_string()))?;
    let mut text = format!(
        "{} trusted file(s) in {}\n",
        recorded.len(),
        store::record_path().map_or_else(|| "(no record)".into(), |p| p.display().to_string())
    );
    for record in recorded {
        text.push_str(&format!(
            "{} {:?} ({} librar{}, {} folder(s) or file(s) written)\n",
            &record.sha256[..16.min(record.sha256.len())],
            record.scenario,
            record.files.len(),
            if record.files.len() == 1 { "y" } else { "ies" },
            record.places.len()
        ));
    }
    write_stdout(&text)
}

fn revoke(file: &Path) -> Result<(), Failure> {
    let real = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let sha256 = ScenarioFile::load(file)
        .ok()
        .map(|f| store::digest(f.text().as_bytes()));
    let gone = store::revoke(&real, sha256.as_deref()).map_err(|e| record_failure(file, &e))?;
    write_stdout(&format!(
        "{}: {gone} trust record(s) removed\n",
        file.display()
    ))
}

/// A failure of the trust record itself, named as such (not the scenario's).
fn record_failure(file: &Path, e: &std::io::Error) -> Failure {
    Failure::Tool(format!(
        "{}: the trust record {}: {e}",
        file.display(),
        store::record_path().map_or_else(|| "(none)".into(), |p| p.display().to_string())
    ))
}

fn trust(file: &Path) -> Result<(), Failure> {
    let scenario = ScenarioFile::load(file).map_err(|e| Failure::Input(e.to_string()))?;
    let record = bind::record_for(&scenario)
        .map_err(|why| Failure::Input(format!("{}: cannot be trusted: {why}", file.display())))?;
    if store::find(&record.scenario, &record.sha256).as_ref() != Some(&record) {
        store::add(&record).map_err(|e| record_failure(file, &e))?;
    }
    let mut text = format!(
        "trusted {} (sha256 {}), with {} librar{} by content\n",
        file.display(),
        &record.sha256[..16],
        record.files.len(),
        if record.files.len() == 1 { "y" } else { "ies" }
    );
    for load in assess(&scenario, &[]).loads {
        text.push_str(&format!("  {}\n", describe(&load)));
    }
    write_stdout(&text)
}

/// `clmulti trust`'s description: what a scenario may set without trust (the list of
/// inert keys), what trust records, and what every run checks.
pub fn long_about() -> String {
    let keys: String = INERT_KEYS
        .iter()
        .map(|k| match k.values {
            Some(values) => format!("  {} ({}): {}\n", k.key, values.join(", "), k.why),
            None => format!("  {}: {}\n", k.key, k.why),
        })
        .collect();
    format!(
        "Trust scenario files that load code, as they are now, with the libraries they load: run and the sweep refuse a file whose loads nothing trusts.\n\n\
         A scenario's [env] (and every env. value of its grid) may set without trust only these keys, each of which loads nothing and writes nothing outside the run, with a plain value (letters, digits, spaces and _ - . , : + % =, never a path):\n\n{keys}\n\
         Every other key is a load (HOME, PATH, TMPDIR, XDG_*, LD_*, GLIBC_TUNABLES, cache and compiler settings, a key nobody listed): it needs no word only when it is clmulti's own library, a system file, or what this checkout installed in folders writable by their owner alone. Relative paths resolve against the scenario file's own folder.\n\n\
         Trust records the file's real path and the SHA-256 of its text, and each library it loads that needs a word by its real path and SHA-256 (a folder by its real path): a change to either needs trust again. Every run checks them again right before its process starts and hands the loader a sealed copy of what was checked."
    )
}

/// A load and why it needs no word, whose word it has, or what is in its way:
/// `LD_PRELOAD loads library /tmp/x.so (needs your word)`.
pub fn describe(load: &Load) -> String {
    if let Some(problem) = &load.problem {
        return format!("{} (refused: {problem})", load.words());
    }
    let why = match load.trusted {
        Some(Trusted::ProjectLibrary) => "clmulti's own".to_owned(),
        Some(Trusted::System) => "a system file".to_owned(),
        Some(Trusted::ThisCheckout) => "installed by this checkout".to_owned(),
        Some(Trusted::ByYou) => "trusted by you".to_owned(),
        Some(Trusted::Allowed) => "allowed for this run".to_owned(),
        None => match &load.note {
            Some(note) => format!("needs your word: {note}"),
            None => "needs your word".to_owned(),
        },
    };
    format!("{} ({why})", load.words())
}

/// The most loads a refusal names one by one; `clmulti check` lists them all.
const NAMED: usize = 8;

/// Loads, described, the first few named and the rest counted.
fn listed(loads: &[&Load], path: &Path) -> String {
    let mut text: Vec<String> = loads.iter().take(NAMED).map(|l| describe(l)).collect();
    if loads.len() > NAMED {
        text.push(format!(
            "and {} more (`clmulti check {}` lists them)",
            loads.len() - NAMED,
            path.display()
        ));
    }
    text.join("; ")
}

/// The refusal of a file whose runs may not load what they would, naming each load
/// and the ways to allow them; `None` when it may run.
pub fn refusal(path: &Path, assessment: &Assessment) -> Option<String> {
    let refused = assessment.refused();
    if refused.is_empty() {
        return None;
    }
    let (in_the_way, unasked): (Vec<&Load>, Vec<&Load>) =
        refused.into_iter().partition(|l| l.problem.is_some());
    let mut parts = Vec::new();
    if !in_the_way.is_empty() {
        parts.push(format!(
            "it cannot run as it is, trusted or not: {}",
            listed(&in_the_way, path)
        ));
    }
    if !unasked.is_empty() {
        parts.push(format!(
            "the scenario loads code nothing trusts: {}; a scenario file is code: read it, then `clmulti trust {}` (its content and the libraries it loads, until they change), or allow the libraries for this run with --allow PATH",
            listed(&unasked, path),
            path.display()
        ));
    }
    Some(format!("{}: {}", path.display(), parts.join("; ")))
}
