//! `cargo xtask sweep` and `cargo xtask merge`.

use crate::args::{Error, MergeArgs, SweepArgs};
use crate::records::{self, fnv64, SweepRecord};
use crate::{compare, summary};
use clmulti_alloc::{Report, StopReason};
use clmulti_scenario::Scenario;
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// One run to perform.
struct Planned {
    file: PathBuf,
    index: usize,
    scenario: Scenario,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Builds the release `clmulti` once and returns its path.
fn build_clmulti(features: Option<&str>) -> Result<PathBuf, Error> {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--release", "-p", "clmulti"]);
    if let Some(f) = features {
        cmd.args(["--features", f]);
    }
    eprintln!("sweep: building the release clmulti");
    let status = cmd
        .status()
        .map_err(|e| Error::Failed(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(Error::Failed("building clmulti failed".into()));
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(target.join("release").join("clmulti"))
}

fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Error::Failed(format!("{}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "toml"))
                .collect();
            found.sort();
            files.extend(found);
        } else if p.exists() {
            files.push(p.clone());
        } else {
            return Err(Error::Usage(format!(
                "{}: no such file or folder",
                p.display()
            )));
        }
    }
    Ok(files)
}

/// Environment for the children: two PoCL CPU devices unless the user chose.
fn child_env(bin: &Path) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    if std::env::var_os("POCL_DEVICES").is_some() {
        return env;
    }
    for driver in ["cpu", "pthread"] {
        let value = format!("{driver} {driver}");
        let Ok(out) = Command::new(bin)
            .args(["devices", "--format", "json"])
            .env("POCL_DEVICES", &value)
            .output()
        else {
            break;
        };
        let Ok(json) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
            continue;
        };
        let pocl_devices = json["platforms"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("Portable Computing Language"))
            })
            .map(|p| p["devices"].as_array().map_or(0, Vec::len))
            .max()
            .unwrap_or(0);
        if pocl_devices >= 2 {
            env.insert("POCL_DEVICES".into(), value);
            break;
        }
    }
    env
}

/// A fingerprint of the platforms and devices the children will see.
fn machine_fingerprint(bin: &Path, env: &BTreeMap<String, String>) -> Result<String, Error> {
    let out = Command::new(bin)
        .args(["devices", "--format", "json"])
        .envs(env)
        .output()
        .map_err(|e| Error::Failed(format!("cannot run {}: {e}", bin.display())))?;
    if !out.status.success() {
        return Err(Error::Failed(format!(
            "`clmulti devices` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Failed(format!("`clmulti devices` output: {e}")))?;
    let mut parts = Vec::new();
    for p in json["platforms"].as_array().into_iter().flatten() {
        for d in p["devices"].as_array().into_iter().flatten() {
            parts.push(format!(
                "{}|{}|{}|{}",
                p["name"], d["name"], d["global_mem_bytes"], d["uuid"]
            ));
        }
    }
    parts.sort();
    Ok(fnv64(&parts.join("\n")))
}

/// How a child ended.
struct ChildResult {
    wall_seconds: f64,
    exit_code: Option<i32>,
    signal: Option<i32>,
    report: Report,
}

fn run_child(
    bin: &Path,
    run: &Planned,
    env: &BTreeMap<String, String>,
    timeout: f64,
) -> Result<ChildResult, Error> {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .arg("run")
        .arg(&run.file)
        .args(["--index", &run.index.to_string(), "--format", "json"])
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Failed(format!("cannot start {}: {e}", bin.display())))?;
    // Drain both pipes in threads so a large report cannot block the child.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let mut pause = Duration::from_micros(200);
    let (status, timed_out) = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::Failed(format!("waiting for child: {e}")))?
        {
            break (status, false);
        }
        if start.elapsed().as_secs_f64() > timeout {
            let _ = child.kill();
            let status = child
                .wait()
                .map_err(|e| Error::Failed(format!("waiting for child: {e}")))?;
            break (status, true);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    let wall_seconds = start.elapsed().as_secs_f64();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    let report = if timed_out {
        Report::without_measurements(&run.scenario, StopReason::TimedOut { seconds: timeout })
    } else {
        Report::from_child(&run.scenario, &stdout, &stderr, status)
    };
    use std::os::unix::process::ExitStatusExt;
    Ok(ChildResult {
        wall_seconds,
        exit_code: status.code(),
        signal: status.signal(),
        report,
    })
}

/// Reports progress: a bar on a terminal, plain lines otherwise.
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines { total: usize, done: usize },
}

impl Progress {
    fn new(total: usize) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} eta {eta} {msg}")
            {
                bar.set_style(style);
            }
            Progress::Bar(bar)
        } else {
            Progress::Lines { total, done: 0 }
        }
    }

    fn start(&mut self, name: &str) {
        match self {
            Progress::Bar(bar) => bar.set_message(name.to_owned()),
            Progress::Lines { total, done } => eprintln!("sweep: [{}/{}] {name}", *done + 1, total),
        }
    }

    fn finish_run(&mut self, line: &str) {
        match self {
            Progress::Bar(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            Progress::Lines { done, .. } => {
                *done += 1;
                eprintln!("sweep:   {line}");
            }
        }
    }

    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

pub fn sweep(args: &SweepArgs) -> Result<ExitCode, Error> {
    let files = scenario_files(&args.paths)?;
    let mut plan = Vec::new();
    let mut bad_files = 0;
    for file in &files {
        match clmulti_scenario::load_file(file) {
            Ok(runs) => {
                plan.extend(
                    runs.into_iter()
                        .enumerate()
                        .map(|(index, scenario)| Planned {
                            file: file.clone(),
                            index,
                            scenario,
                        }),
                )
            }
            Err(e) => {
                eprintln!("error: {e}");
                bad_files += 1;
            }
        }
    }
    if let Some((k, n)) = args.shard {
        plan = plan
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % n == k - 1)
            .map(|(_, p)| p)
            .collect();
    }
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => build_clmulti(args.features.as_deref())?,
    };
    let env = child_env(&bin);
    let machine = machine_fingerprint(&bin, &env)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Error::Failed(format!("{}: {e}", args.out.display())))?;
    let results = args.out.join("results.jsonl");
    if !args.resume && results.exists() {
        // A fresh sweep starts a fresh file; the old one is kept beside it.
        let old = args.out.join("results.previous.jsonl");
        std::fs::rename(&results, &old)
            .map_err(|e| Error::Failed(format!("{}: {e}", results.display())))?;
        eprintln!("sweep: previous results moved to {}", old.display());
    }
    let mut records = records::read(&results)
        .map_err(|e| Error::Failed(format!("{}: {e}", results.display())))?;
    let done: HashSet<String> = records.iter().map(|r| r.key.clone()).collect();

    let todo: Vec<(String, &Planned)> = plan
        .iter()
        .map(|p| (run_key(&p.scenario, &machine), p))
        .filter(|(key, _)| !done.contains(key))
        .collect();
    if args.resume {
        eprintln!(
            "sweep: {} run(s) already done, {} to go",
            plan.len() - todo.len(),
            todo.len()
        );
    }
    let sweep_start = Instant::now();
    let mut child_seconds = 0.0;
    let mut progress = Progress::new(todo.len());
    let mut failed_runs = 0;
    for (key, run) in &todo {
        progress.start(&run.scenario.name);
        let timeout = args
            .timeout
            .unwrap_or(run.scenario.guards.max_seconds + 120.0);
        let child = run_child(&bin, run, &env, timeout)?;
        child_seconds += child.wall_seconds;
        let record = SweepRecord {
            key: key.clone(),
            file: run.file.display().to_string(),
            index: run.index,
            machine: machine.clone(),
            wall_seconds: child.wall_seconds,
            exit_code: child.exit_code,
            signal: child.signal,
            report: child.report,
        };
        records::append(&results, &record)
            .map_err(|e| Error::Failed(format!("{}: {e}", results.display())))?;
        if matches!(record.report.stop, StopReason::NoReport { .. }) {
            failed_runs += 1;
        }
        progress.finish_run(&format!(
            "{}: {} buffers, {} ({:.2} s)",
            record.report.run_name,
            record.report.buffers,
            record.report.stop.summary(),
            record.wall_seconds
        ));
        let group = summary::group_of(&record);
        records.push(record);
        summary::write_all(&args.out, &records, Some(&group))
            .map_err(|e| Error::Failed(format!("writing the summary: {e}")))?;
    }
    progress.finish();
    if todo.is_empty() {
        summary::write_all(&args.out, &records, None)
            .map_err(|e| Error::Failed(format!("writing the summary: {e}")))?;
    }
    let total = sweep_start.elapsed().as_secs_f64();
    if !todo.is_empty() {
        eprintln!(
            "sweep: {} run(s) in {total:.2} s; children {child_seconds:.2} s; sweep overhead {:.1} ms per run (spawn excluded: it is inside the child's time)",
            todo.len(),
            (total - child_seconds) * 1e3 / todo.len() as f64
        );
    }
    eprintln!(
        "sweep: results in {}",
        args.out.join("index.html").display()
    );
    if let Some(old) = &args.compare {
        let old_records =
            records::read(old).map_err(|e| Error::Failed(format!("{}: {e}", old.display())))?;
        let text = compare::compare(&old_records, &records, args.threshold);
        print!("{text}");
        std::fs::write(args.out.join("compare.md"), &text)
            .map_err(|e| Error::Failed(e.to_string()))?;
    }
    if bad_files > 0 || failed_runs > 0 {
        eprintln!(
            "sweep: {bad_files} invalid scenario file(s), {failed_runs} run(s) without a report"
        );
        return Ok(ExitCode::from(if bad_files > 0 { 2 } else { 1 }));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_key(scenario: &Scenario, machine: &str) -> String {
    let json = serde_json::to_string(scenario).unwrap_or_default();
    fnv64(&format!("{json}\n{machine}"))
}

pub fn merge(args: &MergeArgs) -> Result<ExitCode, Error> {
    let mut by_key: BTreeMap<String, SweepRecord> = BTreeMap::new();
    let mut order = Vec::new();
    for input in &args.inputs {
        let file = if input.is_dir() {
            input.join("results.jsonl")
        } else {
            input.clone()
        };
        let records =
            records::read(&file).map_err(|e| Error::Failed(format!("{}: {e}", file.display())))?;
        if records.is_empty() {
            eprintln!("warning: {}: no records", file.display());
        }
        for r in records {
            if !by_key.contains_key(&r.key) {
                order.push(r.key.clone());
            }
            by_key.insert(r.key.clone(), r);
        }
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Error::Failed(format!("{}: {e}", args.out.display())))?;
    let merged = args.out.join("results.jsonl");
    let _ = std::fs::remove_file(&merged);
    let records: Vec<SweepRecord> = order.iter().filter_map(|k| by_key.remove(k)).collect();
    for r in &records {
        records::append(&merged, r)
            .map_err(|e| Error::Failed(format!("{}: {e}", merged.display())))?;
    }
    summary::write_all(&args.out, &records, None)
        .map_err(|e| Error::Failed(format!("writing the summary: {e}")))?;
    eprintln!(
        "merge: {} run(s) into {}",
        records.len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Builds the test layer that models Intel's per-buffer descriptor export.
pub fn build_layer() -> Result<ExitCode, Error> {
    let root = workspace_root();
    let source = root.join("crates/cli/tests/layers/fd_per_peer_device.c");
    let out_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("layers");
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| Error::Failed(format!("{}: {e}", out_dir.display())))?;
    let out = out_dir.join("libfd_per_peer_device.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .map_err(|e| Error::Failed(format!("cannot run {cc} (install build-essential): {e}")))?;
    if !status.success() {
        return Err(Error::Failed(format!(
            "{cc} failed on {}",
            source.display()
        )));
    }
    eprintln!("layer: {}", out.display());
    Ok(ExitCode::SUCCESS)
}
