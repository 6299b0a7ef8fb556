//! Running a scenario run in a child process: a run that crashes the runtime, hangs
//! or exhausts a limit takes down the child, not the caller, and a fresh process
//! measures true costs (freed memory of earlier runs is not reused). One harness
//! serves `clmulti run`, `clmulti diagnose` and the sweep.
//!
//! The child is `clmulti run --resolved SCENARIO.json --format json` (or any program
//! that prints a report line and honours [`PROGRESS_ENV`]). It runs in its own process
//! group, dies with its parent (`PR_SET_PDEATHSIG`), and writes its setup and every
//! sample to a progress file, so a crash or a kill still leaves what it measured.

use clmulti_explain::{Report, Sample, StopReason};
use clmulti_scenario::Scenario;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The environment variable naming the progress file a child writes.
pub const PROGRESS_ENV: &str = "CLMULTI_PROGRESS_FILE";
/// The end of a child's stderr that is kept, bytes.
const STDERR_TAIL: usize = 4000;

/// A child to run.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    /// The program (a `clmulti` binary).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables to set for it.
    pub env: BTreeMap<String, String>,
    /// Killed (with its process group) after this long.
    pub timeout: Duration,
    /// Killed at once when this turns true (e.g. set by a SIGINT handler).
    pub interrupt: Option<&'static std::sync::atomic::AtomicBool>,
    /// A resolved scenario (JSON) the child runs: written to a file whose path is
    /// the last argument, and removed after.
    pub resolved: Option<String>,
}

impl ChildCommand {
    /// One run of exactly this scenario: `program run --resolved FILE --format json
    /// --child -q`, FILE holding the scenario as JSON (so the child measures the run
    /// the caller planned, whatever happens to the scenario's file meanwhile), with
    /// the scenario's `[env]` over `base_env`, killed after `timeout` or, by default,
    /// after the run's time guard, twice the watchdog's margin and a minute for setup
    /// (the child's own watchdog ends a hang first).
    pub fn scenario_run(
        program: PathBuf,
        scenario: &Scenario,
        base_env: &BTreeMap<String, String>,
        timeout: Option<Duration>,
    ) -> Self {
        let max_seconds = scenario.guards.max_seconds;
        ChildCommand {
            program,
            args: ["run", "--format", "json", "--child", "-q", "--resolved"]
                .map(OsString::from)
                .to_vec(),
            env: base_env
                .iter()
                .chain(&scenario.env)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            timeout: timeout.unwrap_or_else(|| {
                Duration::from_secs_f64(max_seconds)
                    + crate::hang_margin(max_seconds) * 2
                    + Duration::from_secs(60)
            }),
            interrupt: None,
            resolved: Some(serde_json::to_string(scenario).unwrap_or_default()),
        }
    }
}

/// How a child ended.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    /// Its exit status.
    pub status: ExitStatus,
    /// Whether the harness killed it at the timeout.
    pub timed_out: bool,
    /// Whether the harness killed it because the caller was interrupted.
    pub interrupted: bool,
    /// Wall time, seconds.
    pub wall_seconds: f64,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// The end of its stderr.
    pub stderr_tail: String,
    /// What its progress file held.
    pub progress: Progress,
}

/// What a child reported as it went.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Its setup: platform, devices, limits (a report with nothing measured).
    pub started: Option<Report>,
    /// Its samples, in order.
    pub samples: Vec<Sample>,
}

/// Writes a run's progress for the parent: used by the child.
#[derive(Debug)]
pub struct ProgressWriter {
    file: std::fs::File,
}

impl ProgressWriter {
    /// The writer named by [`PROGRESS_ENV`], if the parent set it.
    pub fn from_env() -> Option<Self> {
        let path = std::env::var_os(PROGRESS_ENV)?;
        let file = std::fs::OpenOptions::new().append(true).open(path).ok()?;
        Some(ProgressWriter { file })
    }

    fn line(&mut self, kind: &str, value: &impl serde::Serialize) {
        if let Ok(json) = serde_json::to_string(value) {
            // One write per line: a crash leaves whole lines.
            let _ = self.file.write_all(format!("{kind}\t{json}\n").as_bytes());
        }
    }
}

impl crate::Observer for ProgressWriter {
    fn started(&mut self, report: &Report) {
        self.line("started", report);
    }

    fn sampled(&mut self, sample: &Sample) {
        self.line("sample", sample);
    }
}

fn read_progress(path: &Path) -> Progress {
    let mut progress = Progress::default();
    let Ok(file) = std::fs::File::open(path) else {
        return progress;
    };
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        match line.split_once('\t') {
            Some(("started", json)) => progress.started = Report::from_json(json).ok(),
            Some(("sample", json)) => {
                if let Ok(sample) = serde_json::from_str(json) {
                    progress.samples.push(sample);
                }
            }
            _ => {}
        }
    }
    progress
}

/// A fresh temporary file name: `clmulti-<what>-<pid>-<n>.<ext>`.
fn temp_path(what: &str, ext: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("clmulti-{what}-{}-{n}.{ext}", std::process::id()))
}

/// Files that exist for one child and go when it does, whatever happens.
struct TempFiles(Vec<PathBuf>);

impl Drop for TempFiles {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Runs a child to completion or its timeout.
///
/// Long on purpose: one child's life from spawn to reap (files, pipes drained by threads, the wait with timeout and interrupt, the group killed); split, the ordering of kill and drain would be harder to see.
pub fn run_child(command: &ChildCommand) -> std::io::Result<ChildOutcome> {
    let progress_file = temp_path("progress", "tsv");
    let mut temp = TempFiles(vec![progress_file.clone()]);
    std::fs::File::create(&progress_file)?;
    let mut cmd = Command::new(&command.program);
    cmd.args(&command.args);
    if let Some(json) = &command.resolved {
        let path = temp_path("scenario", "json");
        temp.0.push(path.clone());
        std::fs::write(&path, json)?;
        cmd.arg(&path);
    }
    let start = Instant::now();
    cmd.envs(&command.env)
        .env(PROGRESS_ENV, &progress_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let parent = std::process::id() as i32;
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            // Die with the parent: a killed sweep must not leave its run going.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as i32;
    let stdout = child.stdout.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    });
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            // Keep only the tail: a runtime can print without end.
            let mut tail: Vec<u8> = Vec::new();
            let mut chunk = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 4 * STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
            let text = String::from_utf8_lossy(&tail).into_owned();
            let cut = text.len().saturating_sub(STDERR_TAIL);
            let cut = (cut..=text.len())
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            text[cut..].to_owned()
        })
    });
    let mut pause = Duration::from_micros(200);
    let interrupted = || {
        command
            .interrupt
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed))
    };
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (status, false);
        }
        let late = start.elapsed() > command.timeout;
        if late || interrupted() {
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            break (child.wait()?, late);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    // Anything the child started in its group goes with it.
    // SAFETY: as above; the group may already be gone (ESRCH is fine).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let wall_seconds = start.elapsed().as_secs_f64();
    let stdout = stdout.and_then(|t| t.join().ok()).unwrap_or_default();
    let stderr_tail = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let progress = read_progress(&progress_file);
    drop(temp);
    Ok(ChildOutcome {
        status,
        timed_out,
        interrupted: !timed_out && interrupted(),
        wall_seconds,
        stdout,
        stderr_tail,
        progress,
    })
}

/// The report a child printed, or, when it printed none, one that says how it
/// ended (crashed with a signal, killed at the timeout, exited with its stderr),
/// with the setup and samples its progress file kept.
pub fn report_of(scenario: &Scenario, outcome: &ChildOutcome) -> Report {
    let printed = outcome.stdout.lines().find(|l| l.starts_with('{'));
    let parsed = printed.map(Report::from_json);
    if let (Some(Ok(report)), false) = (&parsed, outcome.timed_out) {
        return report.clone();
    }
    let stop = if outcome.timed_out {
        StopReason::TimedOut {
            seconds: outcome.wall_seconds.floor(),
            call: None,
        }
    } else if let Some(signal) = outcome.status.signal() {
        StopReason::crashed(signal)
    } else {
        let mut tail = outcome.stderr_tail.trim().to_owned();
        if let Some(Err(e)) = &parsed {
            tail.push_str(&format!("\nerror: unreadable report: {e}"));
        }
        StopReason::NoReport {
            exit_code: outcome.status.code(),
            stderr_tail: tail,
        }
    };
    let mut report = outcome
        .progress
        .started
        .clone()
        .unwrap_or_else(|| crate::blank_report(scenario, StopReason::Completed));
    report.stop = stop;
    report.samples = outcome.progress.samples.clone();
    if let Some(last) = report.samples.last() {
        report.buffers = last.allocations;
        report.bytes_requested = last.bytes_requested;
        report.elapsed_seconds = last.elapsed_seconds;
    }
    report.stderr_tail = outcome.stderr_tail.trim().to_owned();
    report.conclude();
    report
}
