//! One child process's life: spawned in its own process group with the files it
//! inherits (the progress file, the resolved scenario), dying with its parent,
//! drained, bounded in time, passed an interrupt and given its grace, reaped.

use crate::protocol::{read_progress, Progress};
use crate::signal::Interrupt;
use clmulti_contract::progress::PROGRESS_ENV;
use clmulti_scenario::Scenario;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How often a wait for a child looks at the clock and for an interrupt.
const CHECK_EVERY: Duration = Duration::from_millis(20);
/// The end of a child's stderr that is kept, bytes.
const STDERR_TAIL: usize = 4000;
/// The most of a child's stdout that is kept, bytes (a report is a few MB at most; a
/// runtime can print without end).
const STDOUT_MAX: usize = 256 << 20;

/// How long past `guards.max_seconds` a call may run before the watchdog fires (a
/// tenth of the guard, 5 to 60 s); a child is killed after twice that.
pub fn hang_margin(max_seconds: f64) -> Duration {
    Duration::from_secs_f64((max_seconds * 0.1).clamp(5.0, 60.0))
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
    /// Asked a few times a second while the child runs: `true` ends it at once (its
    /// group killed), as no one would read what it found (the caller's output has
    /// no reader left: `run A B | head -1`).
    pub abandon_when: Option<fn() -> bool>,
    /// A resolved scenario (JSON) the child runs: handed over in a memfd named by
    /// the last argument (`/dev/fd/N`).
    pub resolved: Option<String>,
    /// Where it runs: as which user, in which cgroups, under which wrapper.
    pub placement: Placement,
    /// Open files the child inherits under their numbers (`/proc/self/fd/N` in its
    /// environment names them): the libraries a run was checked to load, handed
    /// over as checked.
    pub inherit: Vec<std::sync::Arc<std::os::fd::OwnedFd>>,
}

/// Where a child runs, when not simply as this process does: for experiments that ask
/// who shares a limit, and what a system-call observer sees.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// Run as this user and group (`setgid`, `setuid` before exec; needs root).
    pub user: Option<(u32, u32)>,
    /// `cgroup.procs` files the child writes its pid into before exec: moved into
    /// those cgroups (each hierarchy's root leaves every cgroup of this process).
    pub cgroups: Vec<PathBuf>,
    /// A command the child runs under, the program and its arguments after it
    /// (`strace -f -o LOG --`).
    pub wrapper: Vec<OsString>,
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
        let env: BTreeMap<String, String> = base_env
            .iter()
            .chain(&scenario.env)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Self::scenario_run_in(program, scenario, env, timeout)
    }

    /// [`scenario_run`](Self::scenario_run) with the child's environment given whole
    /// (`env`, the scenario's `[env]` as checked and handed over: libraries by the
    /// open file), while the scenario it runs and reports stays as planned.
    pub fn scenario_run_in(
        program: PathBuf,
        scenario: &Scenario,
        mut env: BTreeMap<String, String>,
        timeout: Option<Duration>,
    ) -> Self {
        let max_seconds = scenario.guards.max_seconds;
        if let Some(tracer) = tracer_beside(&program) {
            preload_first(&mut env, &tracer);
            // In full mode the allocators' half after it (its failures go to the
            // tracer, which must be loaded first).
            let alloc = program.with_file_name(clmulti_contract::trace::ALLOC_FILE_NAME);
            if full_mode(&env) && alloc.exists() {
                let preload = env.get("LD_PRELOAD").cloned().unwrap_or_default();
                let (first, rest) = preload.split_once(':').unwrap_or((&preload, ""));
                let value = [first, &alloc.display().to_string(), rest]
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join(":");
                env.insert("LD_PRELOAD".into(), value);
            }
        }
        ChildCommand {
            program,
            args: clmulti_contract::progress::RESOLVED_CHILD_ARGS
                .map(OsString::from)
                .to_vec(),
            env,
            timeout: timeout.unwrap_or_else(|| {
                Duration::from_secs_f64(max_seconds)
                    + hang_margin(max_seconds) * 2
                    + Duration::from_secs(60)
            }),
            interrupt: None,
            interrupt_grace: Duration::ZERO,
            abandon_when: None,
            resolved: Some(serde_json::to_string(scenario).unwrap_or_default()),
            placement: Placement::default(),
            inherit: Vec::new(),
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
            abandon_when: None,
            resolved: None,
            placement: Placement::default(),
            inherit: Vec::new(),
        }
    }
}

/// clmulti's call tracer beside `program` (the clmulti binary), unless
/// [`MODE`](clmulti_contract::trace::MODE) turns tracing off or it was not built.
pub fn tracer_beside(program: &Path) -> Option<PathBuf> {
    let off = std::env::var(clmulti_contract::trace::MODE)
        .is_ok_and(|v| clmulti_contract::trace::is_off(&v));
    let tracer = program.with_file_name(clmulti_contract::TRACE.file_name);
    (!off && tracer.exists()).then_some(tracer)
}

/// Whether the child records in full: its `[env]`, or else this process's,
/// sets [`MODE`](clmulti_contract::trace::MODE) to `full`.
fn full_mode(env: &BTreeMap<String, String>) -> bool {
    env.get(clmulti_contract::trace::MODE)
        .cloned()
        .or_else(|| std::env::var(clmulti_contract::trace::MODE).ok())
        .is_some_and(|v| clmulti_contract::trace::is_full(&v))
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
    /// Whether the harness ended it because `abandon_when` said so.
    pub abandoned: bool,
    /// Wall time, seconds.
    pub wall_seconds: f64,
    /// The limit it ran under, seconds: what a timed-out child did not finish
    /// within (a loaded machine kills it somewhat later, `wall_seconds`).
    pub timeout_seconds: f64,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// The end of its stderr.
    pub stderr_tail: String,
    /// What its progress file held.
    pub progress: Progress,
}

/// Writes this process's pid into a `cgroup.procs` file (between fork and exec: no
/// allocation, only open, write and close). A cgroup it cannot enter leaves it where
/// it was; the experiment reads where it ran from the child.
fn enter_cgroup(procs: &std::ffi::CStr) {
    let mut digits = [0u8; 20];
    // SAFETY: getpid has no preconditions.
    let mut pid = unsafe { libc::getpid() } as u64;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    // SAFETY: a NUL-terminated path; the buffer outlives the write.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, digits[at..].as_ptr().cast(), digits.len() - at);
            libc::close(fd);
        }
    }
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

/// A folder of this process's own: fresh, empty, mode 0700 (no other user can put
/// or change anything in it), removed with what is in it when dropped. A child's
/// working folder is one: what a runtime writes or reads relative to its working
/// folder (NEO's AUB capture and `igdrcl.config`, a relative path in an `.icd` file)
/// stays inside the run, wherever it was started.
#[derive(Debug)]
pub struct PrivateFolder(PathBuf);

impl PrivateFolder {
    /// A new one in the temporary folder, named `clmulti-<what>-<pid>-<n>`.
    pub fn new(what: &str) -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let path = std::env::temp_dir().join(format!(
                "clmulti-{what}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(PrivateFolder(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for PrivateFolder {
    fn drop(&mut self) {
        // remove_dir_all follows no link left in it.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a child to completion or its timeout.
pub fn run_child(command: &ChildCommand) -> std::io::Result<ChildOutcome> {
    run_child_watching(command, &mut |_| {})
}

/// The child's program (behind the placement's wrapper, when one is set). A
/// relative path names a file from this folder, not the child's own: a bare name is
/// the PATH's to find.
fn base_command(command: &ChildCommand) -> std::io::Result<Command> {
    let program = match command.program.components().count() > 1 {
        true => std::path::absolute(&command.program)?,
        false => command.program.clone(),
    };
    Ok(match command.placement.wrapper.split_first() {
        Some((wrapper, args)) => {
            let mut cmd = Command::new(wrapper);
            cmd.args(args).arg(&program);
            cmd
        }
        None => Command::new(&program),
    })
}

/// A thread reading the child's stdout: it keeps the head (the report line comes
/// first) and drains the rest.
fn drain_head(mut pipe: std::process::ChildStdout) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
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
}

/// A thread reading the child's stderr: it keeps only the tail (a runtime can print
/// without end).
fn drain_tail(mut pipe: std::process::ChildStderr) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
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
}

/// Paths as C strings, for a child's pre-exec (one with a NUL byte is left out).
fn c_paths(paths: &[PathBuf]) -> Vec<std::ffi::CString> {
    paths
        .iter()
        .filter_map(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok())
        .collect()
}

/// `json` in a memfd the child inherits, named by its last argument (`/dev/fd/N`).
fn hand_over(
    json: &str,
    cmd: &mut Command,
    inherited: &mut Vec<i32>,
) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let mut file = anonymous_file(c"clmulti-scenario")?;
    file.write_all(json.as_bytes())?;
    inherited.push(file.as_raw_fd());
    cmd.arg(format!("/dev/fd/{}", file.as_raw_fd()));
    Ok(file)
}

/// [`run_child`], handing each sample to `on_sample` while the child runs (the
/// latest at most every 200 ms): what a terminal's progress line shows.
// long: one unsafe sequence: a child's life from spawn to reap (pre-exec, the wait with timeout and interrupt, the group killed); split, the ordering of kill and drain would be harder to see.
pub fn run_child_watching(
    command: &ChildCommand,
    on_sample: &mut dyn FnMut(&str),
) -> std::io::Result<ChildOutcome> {
    use std::os::fd::AsRawFd;
    let progress_file = anonymous_file(c"clmulti-progress")?;
    let mut inherited = vec![progress_file.as_raw_fd()];
    inherited.extend(command.inherit.iter().map(|f| f.as_raw_fd()));
    let folder = PrivateFolder::new("run")?;
    let mut cmd = base_command(command)?;
    cmd.args(&command.args).current_dir(folder.path());
    if let Some((uid, gid)) = command.placement.user {
        // The child enters its folder after it became that user.
        std::os::unix::fs::chown(folder.path(), Some(uid), Some(gid))?;
        cmd.uid(uid).gid(gid);
    }
    let cgroups = c_paths(&command.placement.cgroups);
    let resolved = match &command.resolved {
        Some(json) => Some(hand_over(json, &mut cmd, &mut inherited)?),
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
    // functions (prctl, getppid, close_range, fcntl, _exit).
    unsafe {
        cmd.pre_exec(move || {
            // Die with the parent: a killed sweep must not leave its run going.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            // Nothing else of this process reaches the child: a runtime this process
            // loaded (diagnose lists the platforms) keeps descriptors open, and a run
            // that inherited them would fail sooner than a program started alone
            // (989 buffers against 991 on NEO's kernel path, its two render nodes).
            // Marked close-on-exec, so the standard streams and the files below stay.
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            for path in &cgroups {
                enter_cgroup(path);
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
    let stdout = child.stdout.take().map(drain_head);
    let stderr = child.stderr.take().map(drain_tail);
    let mut watched = crate::protocol::Tail::default();
    let mut last_look = Instant::now();
    // A thread waits for the child: its exit is seen at once (a poll with sleeps
    // between saw it up to 20 ms late, a share of every short run's time).
    let (exited, exit) = std::sync::mpsc::channel();
    let waiter = std::thread::Builder::new()
        .name("clmulti-wait".into())
        .spawn(move || {
            let _ = exited.send(child.wait());
        })?;
    let interrupt = || command.interrupt.and_then(|i| i.signal());
    // When the interrupt was passed on to the child.
    let mut passed_on: Option<Instant> = None;
    let mut abandoned = false;
    let (status, timed_out) = loop {
        match exit.recv_timeout(CHECK_EVERY) {
            Ok(status) => break (status?, false),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(std::io::Error::other(
                    "the thread waiting for the child ended",
                ));
            }
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
        if last_look.elapsed() >= Duration::from_millis(200) {
            abandoned = command.abandon_when.is_some_and(|f| f());
        }
        if late || kill_now || abandoned {
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let status = exit
                .recv()
                .map_err(|_| std::io::Error::other("the thread waiting for the child ended"))??;
            break (status, late);
        }
        if last_look.elapsed() >= Duration::from_millis(200) {
            if let Some(sample) = watched.latest_sample(&progress_file) {
                on_sample(&sample);
            }
            last_look = Instant::now();
        }
    };
    let _ = waiter.join();
    // Anything the child started in its group goes with it.
    // SAFETY: as above; the group may already be gone (ESRCH is fine).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let wall_seconds = start.elapsed().as_secs_f64();
    let stdout = stdout.and_then(|t| t.join().ok()).unwrap_or_default();
    let stderr_tail = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    Ok(ChildOutcome {
        status,
        timed_out,
        interrupted: !timed_out && interrupt().is_some(),
        interrupted_by: interrupt(),
        abandoned,
        wall_seconds,
        timeout_seconds: command.timeout.as_secs_f64(),
        stdout,
        stderr_tail,
        progress: read_progress(progress_file),
    })
}
