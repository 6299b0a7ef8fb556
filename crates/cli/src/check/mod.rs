//! `clmulti check`: validate scenario files without running them, as strictly as a
//! run would (this machine's hard limits, paths named in `[env]`, the platform
//! `devices.platform` names).

use crate::format::{self, Format};
use crate::Failure;
use clmulti_probe::{PlatformInfo, PlatformSelector};
use clmulti_scenario::{ScenarioError, ScenarioFile};
use clmulti_supervise::ChildCommand;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod machine;

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

/// Version of `clmulti check --format json` (3: warnings placed as errors are).
const CHECK_SCHEMA_VERSION: u32 = 3;

#[derive(Debug, Serialize)]
struct CheckReport {
    schema_version: u32,
    files: Vec<FileResult>,
}

#[derive(Debug, Serialize)]
struct FileResult {
    file: String,
    runs: Option<usize>,
    /// The first problem in the file (`errors[0]`).
    error: Option<ErrorJson>,
    /// Every problem found, the first included, in file order.
    errors: Vec<ErrorJson>,
    /// Why `devices.platform` could not be checked against this machine's platforms.
    #[serde(skip_serializing_if = "Option::is_none")]
    platforms_not_checked: Option<String>,
    /// What its runs would load or write outside themselves, each with why it is
    /// trusted (`null`: it needs the user's word, `clmulti trust`), and what is in
    /// the way of one no word can allow (`problem`).
    loads: Vec<crate::trust::Load>,
    /// Whether the file may run as it is: every load trusted, or the file itself.
    trusted: bool,
    /// What is valid but likely a mistake, each placed as an error is: an `[env]`
    /// name a typo from one clmulti knows, a size guard below what the process holds
    /// before its first buffer, a buffer above its device's largest allocation, an
    /// address space the runtime does not load in.
    warnings: Vec<ErrorJson>,
}

#[derive(Debug, Clone, Serialize)]
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
    let mut listings = Listings::new();
    let mut under = machine::UnderLimits::new();
    let results: Vec<FileResult> = args
        .files
        .iter()
        .map(|file| check_file(file, &mut listings, &mut under))
        .collect();
    let bad = results.iter().filter(|r| r.error.is_some()).count();
    match args.format {
        Format::Json => format::print_json(&CheckReport {
            schema_version: CHECK_SCHEMA_VERSION,
            files: results,
        })?,
        Format::Text => {
            for r in &results {
                say_file(r)?;
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

/// What a file's check found: its runs, what it loads and warnings, or its problems.
fn check_file(
    file: &Path,
    listings: &mut Listings,
    under: &mut machine::UnderLimits,
) -> FileResult {
    let problems = ScenarioFile::problems_in(file);
    let checked = if problems.is_empty() {
        load(file).map_err(|e| vec![e])
    } else {
        Err(problems)
    };
    match checked.and_then(|f| checked_here(file, &f, listings, under)) {
        Ok((runs, platforms_not_checked, loads, trusted, warnings)) => FileResult {
            file: file.display().to_string(),
            runs: Some(runs),
            error: None,
            errors: Vec::new(),
            platforms_not_checked,
            loads,
            trusted,
            warnings,
        },
        Err(problems) => {
            let errors: Vec<ErrorJson> = problems.iter().map(ErrorJson::from).collect();
            FileResult {
                file: file.display().to_string(),
                runs: None,
                platforms_not_checked: None,
                error: errors.first().cloned(),
                errors,
                loads: Vec::new(),
                trusted: false,
                warnings: Vec::new(),
            }
        }
    }
}

/// What a file that loads is, checked: (runs, why its platform was not checked,
/// what it loads, whether it is trusted, warnings).
type Checked = (
    usize,
    Option<String>,
    Vec<crate::trust::Load>,
    bool,
    Vec<ErrorJson>,
);

/// A file that loads, checked on this machine: its platforms only when trusted
/// (listing them loads the runtime under the file's [env]: not for code nothing
/// trusts).
fn checked_here(
    file: &Path,
    f: &ScenarioFile,
    listings: &mut Listings,
    under: &mut machine::UnderLimits,
) -> Result<Checked, Vec<ScenarioError>> {
    show_runs(file, f);
    let assessment = crate::trust::assess(f, &[]);
    let trusted = assessment.refused().is_empty();
    let mut warnings = f.warnings();
    warnings.extend(rss_warnings(f));
    warnings.extend(load_problems(f, &assessment.loads));
    // Listing the platforms loads the runtime under the file's [env]: not for
    // code nothing trusts.
    let not_checked = if trusted {
        let binding = &assessment.binding;
        let not_checked = check_platforms(f, binding, listings).map_err(|e| vec![e])?;
        let said = machine::said(f, binding, listings, under);
        if !said.errors.is_empty() {
            return Err(said.errors);
        }
        warnings.extend(said.warnings);
        not_checked
    } else if !f.names_a_platform() {
        None
    } else {
        Some(format!(
            "it loads code nothing trusts, which check does not run (`clmulti trust {}`)",
            file.display()
        ))
    };
    warnings.sort_by_key(|w| (w.line, w.column));
    let warnings = warnings.iter().map(ErrorJson::from).collect();
    Ok((f.len(), not_checked, assessment.loads, trusted, warnings))
}

/// A file's result as text: its problems, or its runs, loads and warnings.
fn say_file(r: &FileResult) -> Result<(), Failure> {
    match (&r.error, r.runs) {
        (Some(_), _) => {
            for e in &r.errors {
                crate::say!("error: {}", e.text);
            }
            if r.errors.len() >= clmulti_scenario::MAX_PROBLEMS {
                crate::say!(
                    "error: {}: the first {} problems; fix them and check again for more",
                    r.file,
                    clmulti_scenario::MAX_PROBLEMS
                );
            }
        }
        (None, Some(n)) => {
            let mut text = format!("ok {}: {n} run(s)\n", r.file);
            text.push_str(&loads_text(&r.loads));
            for warning in &r.warnings {
                text.push_str(&format!("  warning: {}\n", warning.text));
            }
            let in_the_way = r.loads.iter().any(|l| l.problem.is_some());
            if !r.trusted && !in_the_way {
                text.push_str(&format!(
                    "  not trusted: `clmulti run` refuses it until `clmulti trust {}` (or --allow PATH)\n",
                    r.file
                ));
            }
            format::write_stdout(&text)?
        }
        (None, None) => {}
    }
    if let Some(why) = &r.platforms_not_checked {
        crate::note!(
            "check: {}: devices.platform was not checked against this machine's OpenCL platforms: {why}",
            r.file
        );
    }
    Ok(())
}

/// With `-v`: each run of the file, as check read it.
fn show_runs(file: &Path, f: &ScenarioFile) {
    if !crate::format::shows(crate::format::Verbosity::Verbose) {
        return;
    }
    for (index, run) in f.runs().enumerate() {
        let Ok(s) = run else { break };
        let a = &s.allocation;
        let count = match a.count {
            clmulti_scenario::Count::Fixed(n) => n.to_string(),
            clmulti_scenario::Count::UntilFailure => "until failure".into(),
        };
        let env: Vec<String> = s.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        eprintln!(
            "check: {} --index {index}: {}: {} device(s) of type {}, context {}, strategy {}, {} x {count}{}{}",
            file.display(),
            s.name,
            s.devices.set.len(),
            format!("{:?}", s.devices.device_type).to_lowercase(),
            s.context_mode.name(),
            a.strategy.name(),
            clmulti_scenario::format_size(a.size_bytes),
            if env.is_empty() { String::new() } else { format!(", env {}", env.join(" ")) },
            if s.limits.any() { format!(", limits {:?}", s.limits.soft) } else { String::new() },
        );
    }
}

/// A file's loads, a line each; of a key with many (an `env.` axis of 100 000
/// values), the first few and a count (`--format json` has them all).
fn loads_text(loads: &[crate::trust::Load]) -> String {
    const PER_KEY: usize = 5;
    let mut text = String::new();
    let mut shown: HashMap<(&str, bool), usize> = HashMap::new();
    for load in loads {
        let seen = shown.entry((&load.key, load.may_run())).or_default();
        *seen += 1;
        if *seen <= PER_KEY {
            text.push_str(&format!("  loads: {}\n", crate::trust::describe(load)));
        }
    }
    let mut more: Vec<_> = shown.into_iter().filter(|(_, n)| *n > PER_KEY).collect();
    more.sort();
    for ((key, _), n) in more {
        text.push_str(&format!(
            "  loads: ... and {} more of {key} (`--format json` lists them)\n",
            n - PER_KEY
        ));
    }
    text
}

impl From<&ScenarioError> for ErrorJson {
    fn from(e: &ScenarioError) -> Self {
        ErrorJson {
            line: e.line,
            column: e.column,
            key: e.key.clone(),
            message: e.message.clone(),
            text: e.to_string(),
        }
    }
}

/// The platforms the ICD loader lists under each `[env]` met so far (or why it
/// listed none): one `clmulti devices` child per `[env]`.
type Listings = HashMap<BTreeMap<String, String>, Result<Vec<PlatformInfo>, String>>;

/// Checks each run's `devices.platform`, when it names an index or a name, against
/// the platforms the ICD loader lists under the run's `[env]`, as the run would
/// look it up: a platform not present is the run's error, at its key. `Ok(Some)`
/// says why the platforms could not be listed (no OpenCL runtime here): the file
/// is then not refused for it.
fn check_platforms(
    file: &ScenarioFile,
    binding: &crate::trust::Binding,
    listings: &mut Listings,
) -> Result<Option<String>, ScenarioError> {
    let mut not_checked = None;
    // Every run is valid (checked before): look at them again only for a platform.
    if !file.names_a_platform() {
        return Ok(None);
    }
    for (index, run) in file.runs().enumerate() {
        let run = run?;
        let selector = PlatformSelector::from(&run.devices.platform);
        if selector == PlatformSelector::Auto {
            continue;
        }
        let listed = listings
            .entry(run.env.clone())
            .or_insert_with(|| list_platforms(&run.env, binding, None));
        match listed {
            Ok(platforms) => clmulti_probe::check_platform(platforms, &selector)
                .map_err(|e| file.error_in_run(index, e.key(), &e.to_string()))?,
            Err(why) => {
                // A folder the file names for the loader, with nothing to load, is
                // the file's fault, not the machine's.
                if let Some(vendors) = run.env.get("OCL_ICD_VENDORS") {
                    let path = Path::new(vendors);
                    if path.is_dir() && !lists_an_icd(path) {
                        return Err(file.error_in_run(
                            index,
                            "env.OCL_ICD_VENDORS",
                            &format!(
                                "{vendors} has no .icd file: the ICD loader finds no OpenCL runtime there (name a folder holding one, e.g. /etc/OpenCL/vendors, or one .icd file)"
                            ),
                        ));
                    }
                }
                not_checked.get_or_insert_with(|| why.clone());
            }
        }
    }
    Ok(not_checked)
}

/// Valid settings that would stop a run before it measures anything: a `max_rss`
/// below what this process already holds (a run's holds more: the runtime too),
/// usually a `%` forgotten (`"50"` is 50 bytes).
fn rss_warnings(file: &ScenarioFile) -> Vec<ScenarioError> {
    let own = clmulti_probe::UsageReader::own_statm().rss_bytes;
    let mut out: Vec<ScenarioError> = Vec::new();
    // The first run says it for all unless the grid varies the guard.
    let runs = if file.varies("guards.max_rss") {
        file.len()
    } else {
        file.len().min(1)
    };
    for (index, run) in file.runs().take(runs).enumerate() {
        let Ok(run) = run else { continue };
        let clmulti_scenario::RssLimit::Bytes(limit) = run.guards.max_rss else {
            continue;
        };
        let warning = file.error_in_run(
            index,
            "guards.max_rss",
            &format!(
                "{}: below the {} this check's own process holds, so a run stops before its first buffer; a fraction of RAM is written with a % (\"50%\")",
                clmulti_scenario::format_bytes(limit as f64),
                clmulti_scenario::format_bytes(own as f64)
            ),
        );
        if limit < own && !out.contains(&warning) {
            out.push(warning);
        }
    }
    out
}

/// What no word allows among a file's loads (a vendors file that is a FIFO, a
/// relative library in an `.icd` file), placed at its `[env]` key.
fn load_problems(file: &ScenarioFile, loads: &[crate::trust::Load]) -> Vec<ScenarioError> {
    loads
        .iter()
        .filter_map(|l| {
            let problem = l.problem.as_ref()?;
            let name = l.key.split_whitespace().next().unwrap_or(&l.key);
            Some(file.error_in_run(
                0,
                &format!("env.{name}"),
                &format!("{}: {problem}; `clmulti run` refuses it", l.key),
            ))
        })
        .collect()
}

fn lists_an_icd(folder: &Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "icd"))
    })
}

/// The platforms a run with `env` would see: listed by this binary in a child, so
/// that a runtime that hangs or crashes while loading takes only the child down.
fn list_platforms(
    env: &BTreeMap<String, String>,
    binding: &crate::trust::Binding,
    limits: Option<&clmulti_scenario::Limits>,
) -> Result<Vec<PlatformInfo>, String> {
    let program =
        std::env::current_exe().map_err(|e| format!("cannot find clmulti's own binary: {e}"))?;
    // What a run would be given, checked as a run's is.
    let prepared = crate::trust::prepare(env, binding)?;
    let mut command = ChildCommand {
        inherit: prepared.inherit.clone(),
        ..ChildCommand::devices(program, &prepared.env)
    };
    if let Some(limits) = limits {
        let json = serde_json::to_string(limits).map_err(|e| e.to_string())?;
        command.args.extend(["--under-limits".into(), json.into()]);
    }
    let outcome = clmulti_supervise::run_child(&command)
        .map_err(|e| format!("cannot start `clmulti devices`: {e}"))?;
    clmulti_supervise::ended::devices_report(&outcome).map(|r| r.platforms)
}
