//! `cargo xtask sweep`: every run of every scenario in its own `clmulti run` child,
//! each record appended as the run ends, summaries re-rendered at most every few
//! seconds and at the end.

mod flow;

pub use flow::sweep_with_stats;

use crate::lock;
use crate::records::{self, fnv64};
use clmulti_probe::DevicesReport;
use clmulti_scenario::{Scenario, ScenarioFile};
use clmulti_supervise::{run_child, ChildCommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Arguments of `cargo xtask sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario files or folders (a folder: its *.toml, not its sub-folders).
    #[arg(default_value = "configs")]
    paths: Vec<PathBuf>,
    /// Results folder (results.jsonl, summary.md/.csv, *.svg, index.html).
    #[arg(long, default_value = "sweep-results")]
    out: PathBuf,
    /// Skip runs already in the folder's results.jsonl for this kind of machine.
    #[arg(long)]
    resume: bool,
    /// With --resume: run again the runs that crashed, were killed or timed out.
    #[arg(long, requires = "resume")]
    retry_failed: bool,
    /// Start over in a folder that holds results (they are kept as results.<n>.jsonl).
    #[arg(long, conflicts_with = "resume")]
    force: bool,
    /// Per-run limit in seconds (default: the run's max_seconds guard plus a margin).
    #[arg(long, value_name = "SECONDS", value_parser = clmulti_scenario::parse_seconds)]
    timeout: Option<f64>,
    /// Run only the K-th of N slices of the expanded list (1-based).
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    shard: Option<(usize, usize)>,
    /// Report per run what changed against an earlier sweep's results.jsonl.
    #[arg(long, value_name = "OLD.jsonl")]
    compare: Option<PathBuf>,
    /// Relative change flagged by --compare.
    #[arg(long, default_value_t = 0.10, value_parser = crate::compare::threshold)]
    threshold: f64,
    /// Use this clmulti binary (and the clmulti-layer next to it) instead of building
    /// the release ones.
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Cargo features for the release build (e.g. nvml).
    #[arg(long)]
    features: Option<String>,
    /// Re-render summaries at most this often while runs go on (seconds); a render
    /// that takes long waits longer, so rendering stays under 0.2% of the sweep's time.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS", value_parser = render_seconds)]
    render_every: f64,
    /// A library (or folder) the scenarios may load without being trusted (`clmulti
    /// trust`); repeat for several.
    #[arg(long, value_name = "PATH")]
    allow: Vec<PathBuf>,
    /// Check the scenario files and their trust as the sweep would, and run nothing
    /// (exit 2 naming each file refused): what `scripts/slurm/submit.sh` does
    /// before it submits.
    #[arg(long)]
    check: bool,
}

/// Seconds for `--render-every`: 0 (every run) to an hour.
fn render_seconds(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (0.0..=3600.0).contains(s))
        .ok_or_else(|| format!("{text}: expected seconds from 0 to 3600"))
}

fn parse_shard(v: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{v}: expected K/N with 1 <= K <= N");
    let (k, n) = v.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Scenario files named by paths: files as given, folders' *.toml sorted.
pub fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "toml"))
                .collect();
            found.sort();
            files.extend(found);
        } else if p.exists() {
            files.push(p.clone());
        } else {
            return Err(format!("{}: no such file or folder", p.display()));
        }
    }
    Ok(files)
}

/// The scenario files that load, each with what its runs may load (a scenario file
/// is code: one that loads what nothing trusts is not run), and how many did not.
fn load_files(
    files: &[PathBuf],
    libraries: &Path,
    allow: &[PathBuf],
) -> (Vec<ScenarioFile>, Vec<clmulti::trust::Binding>, usize) {
    let (mut loaded, mut bindings, mut bad) = (Vec::new(), Vec::new(), 0);
    for file in files {
        // Every problem of a file, as `clmulti check` says them; a grid's runs would
        // each repeat the first.
        let problems = ScenarioFile::problems_in(file);
        if !problems.is_empty() {
            problems.iter().for_each(|p| eprintln!("error: {p}"));
            bad += 1;
            continue;
        }
        let f = match ScenarioFile::load(file) {
            Ok(f) => f.with_libraries(libraries.to_path_buf()),
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
                continue;
            }
        };
        let assessment = clmulti::trust::assess(&f, allow);
        match clmulti::trust::refusal(file, &assessment) {
            Some(why) => {
                eprintln!("error: {why}");
                bad += 1;
            }
            None => {
                loaded.push(f);
                bindings.push(assessment.binding);
            }
        }
    }
    (loaded, bindings, bad)
}

/// Environment for the children: two PoCL CPU devices unless the user chose.
fn child_env(bin: &Path) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    if std::env::var_os("POCL_DEVICES").is_some() {
        return env;
    }
    for driver in ["cpu", "pthread"] {
        let value = format!("{driver} {driver}");
        let Some(report) = devices_report(
            bin,
            &BTreeMap::from([("POCL_DEVICES".to_owned(), value.clone())]),
        )
        .ok() else {
            break;
        };
        let pocl = report
            .platforms
            .iter()
            .filter(|p| clmulti_probe::is_pocl(p.display_name()))
            .map(|p| p.devices.len())
            .max()
            .unwrap_or(0);
        if pocl >= 2 {
            env.insert("POCL_DEVICES".into(), value);
            break;
        }
    }
    env
}

fn devices_report(bin: &Path, env: &BTreeMap<String, String>) -> Result<DevicesReport, String> {
    let outcome = run_child(&ChildCommand::devices(bin.to_path_buf(), env))
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    clmulti_supervise::ended::devices_report(&outcome)
        .map_err(|e| format!("`clmulti devices` failed: {e}"))
}

/// The kind of machine, from facts that do not move while it runs: platforms and
/// their versions, device models, driver versions, how many of each. Not memory
/// sizes: PoCL derives its devices' global memory from the host's free memory
/// (6.96 to 15.26 GB within an hour on an idle host), and a resume on the same
/// machine must find its runs. Not host names or device serials either: an identical
/// node continues a requeued task. With a description naming the host and devices.
pub fn machine(report: &DevicesReport) -> (String, String) {
    let mut parts = Vec::new();
    let mut names = Vec::new();
    for p in &report.platforms {
        for d in &p.devices {
            parts.push(format!(
                "{}|{}|{}|{}|{}",
                p.name, p.version, d.name, d.driver_version, d.kind
            ));
            names.push(records::device_words(d.display_name(), p.display_name()));
        }
    }
    parts.sort();
    names.dedup();
    (
        fnv64(&parts.join("\n")),
        records::machine_words(&clmulti_probe::host_name(), &names),
    )
}

/// The operating system and kernel, in words.
/// `clmulti --version` of the binary the sweep runs.
fn tool_version(bin: &Path) -> String {
    Command::new(bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `shard 1/2`, or `not sharded`.
fn shard_words(shard: Option<(usize, usize)>) -> String {
    shard.map_or("not sharded".into(), |(k, n)| format!("shard {k}/{n}"))
}

/// Every run of a whole plan, before sharding, by its identity (a run that does not
/// expand by its problem's), and the plan's identity: shards of one plan share it on
/// any machine and shards of another do not, and a merge computes it again.
fn plan_identity(files: &[ScenarioFile], plan: &[(usize, usize)]) -> (Vec<String>, String) {
    let runs: Vec<String> = plan
        .iter()
        .map(|&(f, i)| match files[f].run(i) {
            Ok(scenario) => records::run_identity(&scenario),
            Err(e) => format!("{}{}", records::INVALID, fnv64(&e.to_string())),
        })
        .collect();
    let id = records::plan_identity(&runs);
    (runs, id)
}

fn run_key(scenario: &Scenario, machine: &str) -> String {
    let json = serde_json::to_string(scenario).unwrap_or_default();
    fnv64(&format!("{json}\n{machine}"))
}

/// Prepares the output folder: refuses to overwrite results without --resume or
/// --force, keeps earlier generations, cuts a torn last line.
fn prepare_out(args: &Args) -> Result<(lock::FolderLock, PathBuf), String> {
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let held = lock::lock(&args.out)?;
    let results = args.out.join("results.jsonl");
    // A FIFO or a link to a device here would block or never end.
    let existing = records::open_regular(&results)
        .map_err(|e| format!("{}: {e}", results.display()))?
        .map_or(Ok(0), |f| f.metadata().map(|m| m.len()))
        .map_err(|e| format!("{}: {e}", results.display()))?;
    if existing > 0 && !args.resume {
        if !args.force {
            return Err(format!(
                "{} already holds results; --resume continues them, --force starts over (keeping them as results.<n>.jsonl)",
                args.out.display()
            ));
        }
        records::keep_generation(&results)?;
    }
    if let Some(repair) =
        records::repair(&results).map_err(|e| format!("{}: {e}", results.display()))?
    {
        eprintln!(
            "sweep: {} ended in a torn record ({} bytes, a crash mid-write): cut off and kept in {}",
            results.display(),
            repair.bytes,
            repair.kept_in.display()
        );
    }
    Ok((held, results))
}

/// What a sweep measured of itself: per run, the child's wall time and the sweep's
/// own time around it (planning, recording, rendering).
#[derive(Debug, Default)]
pub struct Stats {
    pub child_seconds: Vec<f64>,
    pub own_seconds: Vec<f64>,
}

pub fn sweep(args: &Args) -> Result<ExitCode, String> {
    sweep_with_stats(args).map(|(code, _)| code)
}
