//! Running a scenario run in a child process: a run that crashes the runtime, hangs
//! or exhausts a limit takes down the child, not the caller, and a fresh process
//! measures true costs (freed memory of earlier runs is not reused). One harness
//! serves `clmulti run`, `clmulti diagnose` and the sweep.
//!
//! The child is `clmulti run --resolved SCENARIO.json --format json` (or any program
//! that prints a report line and honours [`PROGRESS_ENV`]). It runs in its own process
//! group, dies with its parent (`PR_SET_PDEATHSIG`), and writes that it loads the
//! runtime, its setup and every sample to a progress file, so a crash or a kill still
//! leaves what it measured and where it was.
//!
//! The progress file and the resolved scenario are memfds the child inherits: they
//! have no name in any folder, so nothing is left behind however the parent ends
//! (a killed sweep used to leave a `clmulti-progress-*.tsv` per run).

use clmulti_explain::{Report, Sample, StopReason};
use clmulti_scenario::Scenario;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The environment variable naming the progress file a child writes: a path, or
/// `/dev/fd/N` for a descriptor it inherited.
pub const PROGRESS_ENV: &str = "CLMULTI_PROGRESS_FILE";
/// The end of a child's stderr that is kept, bytes.
const STDERR_TAIL: usize = 4000;
/// The end of a child's stdout (the runtime's output) a report keeps, bytes.
const OUTPUT_TAIL: usize = 16000;

/// The runtime's output around where the run failed ([`clmulti_probe::trace::FAILURE_MARK`]): lines
/// before it and a few after, within [`OUTPUT_TAIL`]; the end when it never failed.
fn around_failure(text: &str) -> String {
    let Some(at) = text.rfind(clmulti_probe::trace::FAILURE_MARK) else {
        return tail(text, OUTPUT_TAIL);
    };
    let before = tail(&text[..at], OUTPUT_TAIL * 3 / 4);
    let after: String = text[at..]
        .lines()
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    let after = &after[..after.len().min(OUTPUT_TAIL / 4)];
    format!("{before}{after}")
}

/// The last `bytes` of `text`, from a line's start.
fn tail(text: &str, bytes: usize) -> String {
    if text.len() <= bytes {
        return text.to_owned();
    }
    let cut = text.len() - bytes;
    let cut = text[cut..].find('\n').map_or(cut, |n| cut + n + 1);
    let cut = (cut..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[cut..].to_owned()
}
/// The most of a child's stdout that is kept, bytes (a report is a few MB at most; a
/// runtime can print without end).
const STDOUT_MAX: usize = 256 << 20;
/// The most of a progress file that is read back, bytes.
const PROGRESS_MAX: u64 = 256 << 20;

/// What SIGINT and SIGTERM handlers record: the last signal, and how many came. The
/// first asks for a graceful stop; the second ends the process at once.
#[derive(Debug)]
pub struct Interrupt {
    signal: std::sync::atomic::AtomicI32,
    count: std::sync::atomic::AtomicU32,
}

/// The process's interrupt state, set by [`Interrupt::record`].
pub static INTERRUPT: Interrupt = Interrupt {
    signal: std::sync::atomic::AtomicI32::new(0),
    count: std::sync::atomic::AtomicU32::new(0),
};

impl Interrupt {
    /// Records `signal`; the second one exits the process with `128 + signal` at
    /// once. Async-signal-safe: call it from a signal handler.
    pub fn record(&self, signal: i32) {
        use std::sync::atomic::Ordering;
        if self.count.fetch_add(1, Ordering::SeqCst) >= 1 {
            // SAFETY: _exit is async-signal-safe and ends the process at once.
            unsafe { libc::_exit(128 + signal) };
        }
        self.signal.store(signal, Ordering::SeqCst);
    }

    /// The signal that asked for a stop, if one did.
    pub fn signal(&self) -> Option<i32> {
        Some(self.signal.load(std::sync::atomic::Ordering::SeqCst)).filter(|s| *s != 0)
    }

    /// The signal number, 0 while none came: what the engine's loop watches.
    pub fn as_atomic(&self) -> &std::sync::atomic::AtomicI32 {
        &self.signal
    }

    /// Routes SIGINT, SIGTERM and SIGHUP of this process to [`INTERRUPT`], those
    /// not inherited ignored ([`handle_unless_ignored`]).
    pub fn catch() {
        extern "C" fn on_signal(signal: libc::c_int) {
            INTERRUPT.record(signal);
        }
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler only touches atomics and may call _exit, all
            // async-signal-safe.
            unsafe { handle_unless_ignored(signal, on_signal) };
        }
    }
}

/// Installs `handler` for `signal` unless this process inherited `signal` ignored:
/// `nohup` ignores SIGHUP, and a shell ignores SIGINT for a job it starts in the
/// background; that choice is kept (the POSIX convention).
///
/// # Safety
/// `handler` must be async-signal-safe.
pub unsafe fn handle_unless_ignored(signal: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a zeroed sigaction is valid to receive the current one.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: querying only (null new action).
    let queried = unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) };
    if queried == 0 && current.sa_sigaction == libc::SIG_IGN {
        return;
    }
    // SAFETY: the caller's contract on `handler`.
    unsafe {
        libc::signal(
            signal,
            handler as extern "C" fn(libc::c_int) as libc::sighandler_t,
        )
    };
}

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
    /// When a signal is recorded here, the child's process group gets it too and
    /// has `interrupt_grace` to stop, release and print its partial report before
    /// it is killed (at once on a second signal).
    pub interrupt: Option<&'static Interrupt>,
    /// How long an interrupted child may take to end by itself.
    pub interrupt_grace: Duration,
    /// A resolved scenario (JSON) the child runs: handed over in a memfd named by
    /// the last argument (`/dev/fd/N`).
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
        let mut env: BTreeMap<String, String> = base_env
            .iter()
            .chain(&scenario.env)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(tracer) = tracer_beside(&program) {
            preload_first(&mut env, &tracer);
        }
        ChildCommand {
            program,
            args: ["run", "--format", "json", "--child", "-q", "--resolved"]
                .map(OsString::from)
                .to_vec(),
            env,
            timeout: timeout.unwrap_or_else(|| {
                Duration::from_secs_f64(max_seconds)
                    + crate::hang_margin(max_seconds) * 2
                    + Duration::from_secs(60)
            }),
            interrupt: None,
            interrupt_grace: Duration::ZERO,
            resolved: Some(serde_json::to_string(scenario).unwrap_or_default()),
        }
    }

    /// `program devices --format json -q` with `env` over this process's
    /// environment: the platforms the ICD loader lists where a run with that `[env]`
    /// loads it (loading hangs and crashes stay in the child, whose own supervisor
    /// ends a runtime that loads for a minute). [`devices_report`] reads it.
    pub fn devices(program: PathBuf, env: &BTreeMap<String, String>) -> Self {
        ChildCommand {
            program,
            args: ["devices", "--format", "json", "-q"]
                .map(OsString::from)
                .to_vec(),
            env: env.clone(),
            timeout: Duration::from_secs(90),
            interrupt: None,
            interrupt_grace: Duration::ZERO,
            resolved: None,
        }
    }
}

/// Set to `off` (or `0`), runs are not traced.
pub const TRACE_ENV: &str = "CLMULTI_TRACE";

/// clmulti's call tracer beside `program` (the clmulti binary), unless
/// [`TRACE_ENV`] turns tracing off or it was not built.
pub fn tracer_beside(program: &Path) -> Option<PathBuf> {
    let off = std::env::var(TRACE_ENV).is_ok_and(|v| matches!(v.trim(), "off" | "0" | "no"));
    let tracer = program.with_file_name(clmulti_scenario::TRACE.file_name);
    (!off && tracer.exists()).then_some(tracer)
}

/// Puts `library` first in the child's `LD_PRELOAD` (the scenario's, or else the one
/// this process runs with, which the child would inherit), so it sees the calls the
/// libraries after it answer (clmulti's emulated i915 driver).
fn preload_first(env: &mut BTreeMap<String, String>, library: &Path) {
    let rest = env
        .get("LD_PRELOAD")
        .cloned()
        .or_else(|| std::env::var("LD_PRELOAD").ok())
        .filter(|r| !r.is_empty());
    let first = library.display().to_string();
    let value = match rest {
        Some(rest) if rest.split([':', ' ']).any(|p| p == first) => rest,
        Some(rest) => format!("{first}:{rest}"),
        None => first,
    };
    env.insert("LD_PRELOAD".into(), value);
}

/// What a [`ChildCommand::devices`] child listed, or why it listed nothing, in
/// words: its error (`no OpenCL platform found: ...`), a crash, a hang.
pub fn devices_report(outcome: &ChildOutcome) -> Result<clmulti_probe::DevicesReport, String> {
    if outcome.status.success() {
        return serde_json::from_str(&outcome.stdout)
            .map_err(|e| format!("`clmulti devices --format json` printed no report: {e}"));
    }
    let said = outcome
        .stderr_tail
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::to_owned);
    Err(match (said, outcome.status.signal()) {
        _ if outcome.timed_out => format!(
            "`clmulti devices` did not finish within {:.0} s (killed)",
            outcome.wall_seconds
        ),
        (Some(said), _) => said,
        (None, Some(signal)) => format!(
            "`clmulti devices` was killed by {}",
            clmulti_explain::signal_name(signal)
        ),
        (None, None) => format!(
            "`clmulti devices` exited with {} and said nothing",
            outcome.status.code().unwrap_or(-1)
        ),
    })
}

/// How a child ended.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    /// Its exit status.
    pub status: ExitStatus,
    /// Whether the harness killed it at the timeout.
    pub timed_out: bool,
    /// Whether the harness passed an interrupt on (and killed it after its grace).
    pub interrupted: bool,
    /// The signal passed on.
    pub interrupted_by: Option<i32>,
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
    /// It was about to load the OpenCL runtime (`clGetPlatformIDs`).
    pub loading: bool,
    /// `clGetPlatformIDs` returned.
    pub loaded: bool,
    /// Its setup: platform, devices, limits (a report with nothing measured).
    pub started: Option<Report>,
    /// Its samples, in order.
    pub samples: Vec<Sample>,
    /// Its report, written here and not on stdout: stdout and stderr are the
    /// runtime's (and may be anything).
    pub report: Option<Report>,
}

/// The progress descriptor this process adopted, for its report.
static PROGRESS_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Writes a run's progress for the parent: used by the child.
#[derive(Debug)]
pub struct ProgressWriter {
    /// Never closed: the report goes through it last ([`Self::report_to_parent`]),
    /// after the writer is gone; the process's exit closes it.
    file: std::mem::ManuallyDrop<std::fs::File>,
}

impl ProgressWriter {
    /// The writer named by [`PROGRESS_ENV`], if the parent set it. A descriptor
    /// this process inherited (`/dev/fd/N`) is taken over, not opened again: under
    /// `[limits] nofile` every descriptor counts.
    pub fn from_env() -> Option<Self> {
        let path = std::env::var_os(PROGRESS_ENV)?;
        let file = match inherited_fd(Path::new(&path)) {
            Some(fd) => {
                use std::os::fd::FromRawFd;
                // SAFETY: the harness left this descriptor open for this process
                // alone; it is adopted once (the variable is removed below) and
                // closed on exec so that nothing this process starts keeps it.
                unsafe {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    std::fs::File::from_raw_fd(fd)
                }
            }
            None => std::fs::OpenOptions::new().append(true).open(&path).ok()?,
        };
        std::env::remove_var(PROGRESS_ENV);
        use std::os::fd::AsRawFd;
        PROGRESS_FD.store(file.as_raw_fd(), std::sync::atomic::Ordering::SeqCst);
        Some(ProgressWriter {
            file: std::mem::ManuallyDrop::new(file),
        })
    }

    /// Writes `loading` and `loaded` around the runtime's loading
    /// ([`clmulti_probe::on_loading`]): a crash, an exit or a hang between the two is
    /// the runtime's loading.
    pub fn mark_loading(&self) {
        use std::os::fd::AsRawFd;
        static FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
        fn hook(loading: bool) {
            let fd = FD.load(std::sync::atomic::Ordering::SeqCst);
            let line: &[u8] = if loading { b"loading\n" } else { b"loaded\n" };
            // SAFETY: one write of a static line to the progress descriptor.
            unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
        }
        if FD.swap(self.file.as_raw_fd(), std::sync::atomic::Ordering::SeqCst) == -1 {
            clmulti_probe::on_loading(hook);
        }
    }

    /// Writes the run's report to the progress file this process adopted (the
    /// parent reads it there; stdout stays the runtime's); `false` when there is none.
    pub fn report_to_parent(report: &Report) -> bool {
        let fd = PROGRESS_FD.load(std::sync::atomic::Ordering::SeqCst);
        let Ok(json) = serde_json::to_string(report) else {
            return false;
        };
        if fd < 0 {
            return false;
        }
        let line = format!("report\t{json}\n");
        let mut written = 0;
        while written < line.len() {
            // SAFETY: writing the rest of `line` to the adopted progress descriptor.
            let n =
                unsafe { libc::write(fd, line.as_ptr().add(written).cast(), line.len() - written) };
            if n <= 0 {
                return false;
            }
            written += n as usize;
        }
        true
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

/// `N` for a path `/dev/fd/N` naming an open descriptor of this process.
fn inherited_fd(path: &Path) -> Option<i32> {
    let fd: i32 = path.to_str()?.strip_prefix("/dev/fd/")?.parse().ok()?;
    // SAFETY: F_GETFD only asks whether the descriptor is open.
    (fd > 2 && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0).then_some(fd)
}

/// The resolved scenario a harness handed over ([`ChildCommand::resolved`]), read
/// whole; an inherited descriptor is closed after, so the run keeps no descriptor
/// it did not open.
pub fn read_resolved(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    if let Some(fd) = inherited_fd(path) {
        // SAFETY: the harness's descriptor, read above and used nowhere else.
        unsafe { libc::close(fd) };
    }
    Ok(text)
}

fn read_progress(mut file: std::fs::File) -> Progress {
    use std::io::Seek;
    let mut progress = Progress::default();
    if file.rewind().is_err() {
        return progress;
    }
    let reader = std::io::BufReader::new(file.take(PROGRESS_MAX));
    for line in reader.lines().map_while(Result::ok) {
        match line.as_str() {
            "loading" => progress.loading = true,
            "loaded" => progress.loaded = true,
            _ => {}
        }
        match line.split_once('\t') {
            Some(("started", json)) => progress.started = Report::from_json(json).ok(),
            Some(("report", json)) => progress.report = Report::from_json(json).ok(),
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

/// An anonymous file (memfd) closed on exec: it has no path, so nothing is left
/// behind whatever happens to this process.
fn anonymous_file(name: &std::ffi::CStr) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: memfd_create with a NUL-terminated name; the descriptor is owned below.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Runs a child to completion or its timeout.
///
/// Long on purpose: one child's life from spawn to reap (files, pipes drained by threads, the wait with timeout and interrupt, the group killed); split, the ordering of kill and drain would be harder to see.
pub fn run_child(command: &ChildCommand) -> std::io::Result<ChildOutcome> {
    use std::os::fd::AsRawFd;
    let progress_file = anonymous_file(c"clmulti-progress")?;
    let mut inherited = vec![progress_file.as_raw_fd()];
    let mut cmd = Command::new(&command.program);
    cmd.args(&command.args);
    let resolved = match &command.resolved {
        Some(json) => {
            let mut file = anonymous_file(c"clmulti-scenario")?;
            file.write_all(json.as_bytes())?;
            inherited.push(file.as_raw_fd());
            cmd.arg(format!("/dev/fd/{}", file.as_raw_fd()));
            Some(file)
        }
        None => None,
    };
    let start = Instant::now();
    cmd.envs(&command.env)
        .env(
            PROGRESS_ENV,
            format!("/dev/fd/{}", progress_file.as_raw_fd()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let parent = std::process::id() as i32;
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (prctl, getppid, fcntl, _exit).
    unsafe {
        cmd.pre_exec(move || {
            // Die with the parent: a killed sweep must not leave its run going.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            // The child, and only it, keeps the progress file and the scenario.
            for &fd in &inherited {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    drop(resolved);
    let pid = child.id() as i32;
    let stdout = child.stdout.take().map(|mut pipe| {
        std::thread::spawn(move || {
            // Keep the head (the report line comes first); drain the rest.
            let mut text = Vec::new();
            let mut chunk = [0u8; 65536];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let room = STDOUT_MAX.saturating_sub(text.len());
                text.extend_from_slice(&chunk[..n.min(room)]);
            }
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
    let interrupt = || command.interrupt.and_then(|i| i.signal());
    // When the interrupt was passed on to the child.
    let mut passed_on: Option<Instant> = None;
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (status, false);
        }
        let late = start.elapsed() > command.timeout;
        let kill_now = match (interrupt(), passed_on) {
            (None, _) => false,
            (Some(signal), None) => {
                // SAFETY: signalling the child's own process group.
                unsafe { libc::kill(-pid, signal) };
                passed_on = Some(Instant::now());
                command.interrupt_grace.is_zero()
            }
            // A second signal ends the caller itself (`Interrupt::record`), and
            // this child with it (PR_SET_PDEATHSIG).
            (Some(_), Some(at)) => at.elapsed() > command.interrupt_grace,
        };
        if late || kill_now {
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
    let progress = read_progress(progress_file);
    Ok(ChildOutcome {
        status,
        timed_out,
        interrupted: !timed_out && interrupt().is_some(),
        interrupted_by: interrupt(),
        wall_seconds,
        stdout,
        stderr_tail,
        progress,
    })
}

/// When the child ended while loading the OpenCL runtime (it said it was loading
/// and never finished its setup) and printed no report: how, in words. Loading that
/// crashes, exits or hangs leaves nothing measured: the caller fails.
pub fn loading_failure(outcome: &ChildOutcome) -> Option<String> {
    let printed =
        outcome.progress.report.is_some() || outcome.stdout.lines().any(|l| l.starts_with('{'));
    if !outcome.progress.loading || outcome.progress.loaded || printed || outcome.interrupted {
        return None;
    }
    let how = if outcome.timed_out {
        format!(
            "did not return within {:.1} s (the child was killed)",
            outcome.wall_seconds
        )
    } else if let Some(signal) = outcome.status.signal() {
        format!(
            "crashed the process with {}",
            clmulti_explain::signal_name(signal)
        )
    } else {
        format!(
            "ended the process (exit {}) before it returned",
            outcome
                .status
                .code()
                .map_or_else(|| "?".to_owned(), |c| c.to_string())
        )
    };
    Some(format!(
        "loading the OpenCL runtime failed: clGetPlatformIDs {how}; an ICD the loader opened (OCL_ICD_VENDORS, /etc/OpenCL/vendors) hangs, crashes or exits while loading"
    ))
}

/// The report a child printed, or, when it printed none, one that says how it
/// ended (crashed with a signal, killed at the timeout, exited with its stderr),
/// with the setup and samples its progress file kept.
pub fn report_of(scenario: &Scenario, outcome: &ChildOutcome) -> Report {
    if let (Some(report), false) = (&outcome.progress.report, outcome.timed_out) {
        let mut report = report.clone();
        report.stdout_tail = around_failure(&outcome.stdout);
        report.stderr_tail = outcome.stderr_tail.trim().to_owned();
        return report;
    }
    let printed = outcome.stdout.lines().find(|l| l.starts_with('{'));
    let parsed = printed.map(Report::from_json);
    if let (Some(Ok(report)), false) = (&parsed, outcome.timed_out) {
        return report.clone();
    }
    let loading = loading_failure(outcome);
    let stop = if let (true, Some(signal)) = (
        outcome.interrupted,
        outcome.interrupted_by.or(outcome.status.signal()),
    ) {
        // Stopped as the caller asked, before it could say so itself.
        StopReason::interrupted(signal)
    } else if outcome.timed_out {
        StopReason::TimedOut {
            seconds: outcome.wall_seconds.floor(),
            call: loading
                .is_some()
                .then_some(clmulti_explain::Call::GetPlatformIds),
        }
    } else if let Some(signal) = outcome.status.signal() {
        StopReason::crashed(signal)
    } else {
        let mut tail = outcome.stderr_tail.trim().to_owned();
        if let Some(Err(e)) = &parsed {
            tail.push_str(&format!("\nerror: unreadable report: {e}"));
        }
        if let Some(why) = &loading {
            tail = format!("error: {why}\n{tail}");
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
    if let Some(why) = loading {
        report
            .analysis
            .statements
            .insert(0, clmulti_explain::verdict::Statement::measured(why));
    }
    report
}
