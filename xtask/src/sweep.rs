//! `cargo xtask sweep`: every run of every scenario in its own `clmulti run` child,
//! each record appended as the run ends, summaries re-rendered at most every few
//! seconds and at the end.

use crate::records::{self, fnv64, SweepRecord};
use crate::summary::{Summary, SweepState};
use crate::{compare, lock, progress::Progress, workspace};
use clmulti_explain::StopReason;
use clmulti_probe::DevicesReport;
use clmulti_scenario::{Scenario, ScenarioFile};
use clmulti_supervise::{run_child, ChildCommand, Interrupt, INTERRUPT};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

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

// long: the sweep's flow in order (inputs, plan, what is done, each run recorded as it ends, the closing words), each step able to stop on a signal
pub fn sweep_with_stats(args: &Args) -> Result<(ExitCode, Stats), String> {
    let mut stats = Stats::default();
    Interrupt::catch();
    // Bad input exits 2, as `clmulti run` does.
    let input_error = |message: String| {
        eprintln!("error: {message}");
        Ok((ExitCode::from(2), Stats::default()))
    };
    if let Some(old) = &args.compare {
        if let Err(e) = compare::check_input(old) {
            return input_error(format!("--compare {e}"));
        }
    }
    let files = match scenario_files(&args.paths) {
        Ok(files) => files,
        Err(message) => return input_error(message),
    };
    let root = workspace::root()?;
    let bin = match &args.bin {
        // Absolute: the libraries beside it are not named from a scenario's folder.
        Some(b) => std::path::absolute(b).unwrap_or_else(|_| b.clone()),
        None => workspace::build_release(&root, args.features.as_deref())?,
    };
    let libraries = bin.parent().map_or_else(
        || std::path::PathBuf::from("."),
        std::path::Path::to_path_buf,
    );
    let (scenario_files, bindings, bad_files) = load_files(&files, &libraries, &args.allow);
    if args.check {
        // Every run, as a shard would plan it.
        let invalid = scenario_files
            .iter()
            .filter_map(|f| f.check().err())
            .inspect(|e| eprintln!("error: {e}"))
            .count();
        eprintln!(
            "sweep: {} scenario file(s) checked, {} invalid or refused; nothing was run",
            files.len(),
            bad_files + invalid
        );
        let code = if bad_files + invalid > 0 { 2 } else { 0 };
        return Ok((ExitCode::from(code), stats));
    }
    let mut plan: Vec<(usize, usize)> = scenario_files
        .iter()
        .enumerate()
        .flat_map(|(f, file)| (0..file.len()).map(move |i| (f, i)))
        .collect();
    let (plan_runs, plan_id) = plan_identity(&scenario_files, &plan);
    if let Some((k, n)) = args.shard {
        plan = plan
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % n == k - 1)
            .map(|(_, p)| p)
            .collect();
    }
    let env = child_env(&bin);
    let devices = devices_report(&bin, &env)?;
    let (machine, host) = machine(&devices);
    let (os, tool) = (clmulti_probe::os_words(), tool_version(&bin));
    let (_lock, results) = prepare_out(args)?;

    let mut summary = Summary::new(&args.out);
    summary.set_state(SweepState::Running);
    let mut done: HashSet<String> = HashSet::new();
    let mut retry: HashSet<String> = HashSet::new();
    let mut other_machines = HashSet::new();
    // Each run once: a retried run's newest record, a duplicated line once.
    records::for_each_latest(&results, |r| {
        if r.machine != machine {
            other_machines.insert(r.host.clone());
        }
        if args.retry_failed && r.report.stop.is_abnormal() {
            retry.insert(r.key.clone());
        } else {
            done.insert(r.key.clone());
            summary.add(r);
        }
    })
    .map_err(|e| format!("{}: {e}", results.display()))?;
    if !other_machines.is_empty() {
        eprintln!(
            "sweep: {} holds runs from another kind of machine ({}); they are kept and run again here",
            results.display(),
            other_machines.into_iter().collect::<Vec<_>>().join("; ")
        );
    }
    let mut todo = Vec::new();
    let mut planned_keys = Vec::with_capacity(plan.len());
    let mut said = HashSet::new();
    let mut invalid_runs = 0;
    for &(f, i) in &plan {
        match scenario_files[f].run(i) {
            Ok(scenario) => {
                let key = run_key(&scenario, &machine);
                planned_keys.push(key.clone());
                if !done.contains(&key) {
                    todo.push((f, i, key));
                }
            }
            Err(e) => {
                // Every run of a grid repeats its file's problem: say it once.
                let message = e.to_string();
                if said.insert(message.clone()) {
                    eprintln!("error: {message}");
                }
                invalid_runs += 1;
            }
        }
    }
    // A resumed shard (a requeue, maybe on another node) keeps its earlier starts.
    // A shard resumed as another shard, or on another plan, would give its merge two
    // plans' records (an unsharded sweep resumed after an edit takes the edited runs
    // as new ones).
    let earlier = records::Plan::read(&args.out).ok().flatten();
    if let (true, Some(earlier)) = (args.resume, &earlier) {
        let other_plan = earlier.plan_id.as_ref().is_some_and(|id| *id != plan_id);
        if earlier.shard != args.shard || (other_plan && args.shard.is_some()) {
            return Err(format!(
                "{}: --resume of another plan: the folder's plan.json is plan {} ({}), this sweep's is plan {plan_id} ({}); resume with the files and --shard it started with, or use another --out",
                args.out.display(),
                earlier.plan_id.as_deref().unwrap_or("unknown"),
                shard_words(earlier.shard),
                shard_words(args.shard)
            ));
        }
    }
    let mut starts = match earlier {
        Some(earlier) if args.resume => earlier.starts,
        _ => Vec::new(),
    };
    starts.push(records::Start {
        host: clmulti_probe::host_name(),
        pid: std::process::id(),
        at: unix_now(),
        done: planned_keys.len() - todo.len(),
    });
    records::Plan {
        plan_id: Some(plan_id),
        runs: plan_runs,
        shard: args.shard,
        host: host.clone(),
        keys: planned_keys,
        starts,
    }
    .write(&args.out)
    .map_err(|e| format!("{}: {e}", args.out.join(records::Plan::FILE_NAME).display()))?;
    if args.resume {
        eprintln!(
            "sweep: {} run(s) already done, {} to go{}",
            plan.len() - todo.len() - invalid_runs,
            todo.len(),
            if retry.is_empty() {
                String::new()
            } else {
                format!(" ({} that crashed, were killed or timed out)", retry.len())
            }
        );
    }
    let sweep_start = Instant::now();
    let mut child_seconds = 0.0;
    let mut progress = Progress::new(todo.len());
    let mut without_report = 0;
    let mut skipped = 0;
    let mut refused_runs = 0;
    let mut last_render = Instant::now();
    let render_every = Duration::from_secs_f64(args.render_every.max(0.0));
    // A render costs O(runs): waiting 500 times its cost keeps the sweep's own time
    // per run flat as results grow (10000 runs render in ~0.1 s).
    let mut render_wait = render_every;
    let mut writer =
        records::Writer::open(&results).map_err(|e| format!("{}: {e}", results.display()))?;
    for (f, i, key) in &todo {
        if INTERRUPT.signal().is_some() {
            break;
        }
        let iteration = Instant::now();
        let file = &scenario_files[*f];
        // Validated above; validating again costs microseconds and keeps no list.
        let Ok(scenario) = file.run(*i) else { continue };
        progress.start(&scenario.name);
        // What the run loads is checked again now, and handed over as checked.
        let prepared = match clmulti::trust::prepare(&scenario.env, &bindings[*f]) {
            Ok(prepared) => prepared,
            Err(why) => {
                progress.finish_run(&format!("error: {}: {why}; not run", scenario.name));
                refused_runs += 1;
                continue;
            }
        };
        let mut child_env = env.clone();
        child_env.extend(prepared.env.clone());
        let outcome = run_child(&ChildCommand {
            interrupt: Some(&INTERRUPT),
            inherit: prepared.inherit.clone(),
            ..ChildCommand::scenario_run_in(
                bin.clone(),
                &scenario,
                child_env,
                args.timeout.map(Duration::from_secs_f64),
            )
        })
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        drop(prepared);
        if outcome.interrupted {
            break;
        }
        child_seconds += outcome.wall_seconds;
        use std::os::unix::process::ExitStatusExt;
        let record = SweepRecord {
            key: key.clone(),
            file: file.file().to_owned(),
            index: *i,
            machine: machine.clone(),
            host: host.clone(),
            os: os.clone(),
            tool: tool.clone(),
            finished_at: unix_now(),
            wall_seconds: outcome.wall_seconds,
            exit_code: outcome.status.code(),
            signal: outcome.status.signal(),
            report: clmulti_alloc::child::report_of(&scenario, &outcome),
        };
        writer
            .append(&record)
            .map_err(|e| format!("{}: {e}", results.display()))?;
        if matches!(record.report.stop, StopReason::NoReport { .. }) {
            without_report += 1;
        }
        if matches!(record.report.stop, StopReason::Skipped { .. }) {
            skipped += 1;
        }
        progress.finish_run(&format!(
            "{}: {} ({:.2} s)",
            record.report.run_name,
            record.report.headline(),
            record.wall_seconds
        ));
        summary.add(record);
        if last_render.elapsed() >= render_wait {
            let start = Instant::now();
            summary
                .write()
                .map_err(|e| format!("writing the summary: {e}"))?;
            render_wait = render_every.max(start.elapsed() * 500);
            last_render = Instant::now();
        }
        stats.child_seconds.push(outcome.wall_seconds);
        stats
            .own_seconds
            .push(iteration.elapsed().as_secs_f64() - outcome.wall_seconds);
    }
    progress.finish();
    summary.set_state(if INTERRUPT.signal().is_some() {
        SweepState::Interrupted
    } else {
        SweepState::Ended
    });
    summary
        .write()
        .map_err(|e| format!("writing the summary: {e}"))?;
    let total = sweep_start.elapsed().as_secs_f64();
    let ran = summary.len();
    let done_now = stats.child_seconds.len();
    if done_now > 0 {
        eprintln!(
            "sweep: {done_now} run(s) in {total:.2} s; children {child_seconds:.2} s; sweep overhead {:.1} ms per run",
            (total - child_seconds) * 1e3 / done_now as f64
        );
    }
    eprintln!(
        "sweep: {ran} run(s) in {}",
        args.out.join("index.html").display()
    );
    if skipped > 0 {
        eprintln!(
            "sweep: {skipped} run(s) skipped: they ask for more devices than this machine has (by design on a node with fewer, such as a Slurm node; each record says why, and `clmulti check FILE` names the key); `clmulti run` refuses such a run with exit 2"
        );
    }
    if let Some(old) = &args.compare {
        let text = compare::compare_files(old, &results, args.threshold)?;
        crate::write_stdout(&text)?;
        clmulti::output::write_file(&args.out.join("compare.md"), text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    if INTERRUPT.signal().is_some() {
        eprintln!(
            "sweep: interrupted; every finished run is in {}; --resume continues",
            results.display()
        );
        return Ok((ExitCode::from(130), stats));
    }
    if bad_files > 0 || invalid_runs + refused_runs > 0 || without_report > 0 {
        eprintln!(
            "sweep: {bad_files} invalid or refused scenario file(s), {invalid_runs} invalid run(s), {refused_runs} run(s) refused (what they load changed since planning), {without_report} run(s) without a report"
        );
        let code = if bad_files + invalid_runs + refused_runs > 0 {
            2
        } else {
            1
        };
        return Ok((ExitCode::from(code), stats));
    }
    Ok((ExitCode::SUCCESS, stats))
}
