//! Every command runs in a worker process forked from this one before anything
//! touches an OpenCL runtime; this process only watches it. What an ICD does while
//! loading cannot take the command down unreported:
//! - a constructor that crashes kills the worker by a signal: said, exit 1;
//! - one that calls `_exit(0)` ends the worker before it said it finished: said,
//!   exit 1 (in process, that was exit 0 with nothing printed);
//! - one that hangs holds the dynamic loader's lock, which any new thread-local in the
//!   worker may need: this process takes no lock of the worker's, and kills it when
//!   loading outlives its limit or the command outlives `--timeout`.
//!
//! The worker tells this process how far it got through a page of shared memory
//! (loading the runtime or not, the deadline its own watchdog keeps, the signals it
//! saw, its exit code once it finished). A signal sent to this process alone is
//! passed on; one the terminal sent to the whole group the worker handles itself.
//! Internal children (`run --child`, `bench --arm`) are watched by their parent's
//! harness instead ([`crate::child`]).

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// How long loading an OpenCL runtime may take when the command sets no
/// `--timeout` (PoCL loads in 0.05 s, Intel's CPU runtime in 0.5 s).
pub const LOAD_LIMIT: Duration = Duration::from_secs(60);

const STARTING: u32 = 0;
const LOADING: u32 = 1;
const RUNNING: u32 = 2;
const FINISHED: u32 = 3;

/// The page the worker writes and this process reads.
#[repr(C)]
struct Shared {
    phase: AtomicU32,
    exit_code: AtomicI32,
    /// CLOCK_MONOTONIC milliseconds when loading started.
    load_started_ms: AtomicU64,
    /// CLOCK_MONOTONIC milliseconds by which the worker ends itself (0: none).
    deadline_ms: AtomicU64,
    /// SIGINT, SIGTERM and SIGHUP the worker received.
    signals_seen: AtomicU32,
}

/// The shared page, in the worker; null when this process is not supervised.
static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the worker stops gracefully on the first SIGINT/SIGTERM (`run`) instead
/// of dying at once.
static GRACEFUL: AtomicU32 = AtomicU32::new(0);
/// The signal this (watching) process received last, and how many it received.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
static RECEIVED_COUNT: AtomicU32 = AtomicU32::new(0);

fn shared() -> Option<&'static Shared> {
    // SAFETY: set once to a page mapped for the life of the process.
    unsafe { SHARED.load(Ordering::Relaxed).as_ref() }
}

/// CLOCK_MONOTONIC in milliseconds: one clock for every process of the machine.
fn monotonic_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// What bounds a command.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The whole command ends by then (`--timeout`); `None` for `run`, whose runs
    /// bound themselves.
    pub timeout: Option<Duration>,
    /// The first SIGINT/SIGTERM asks the command to stop and report (`run`).
    pub graceful_signals: bool,
    /// The command's name, for messages.
    pub command: &'static str,
    /// Says a note on stderr (unless the command runs quiet).
    pub note: fn(&str),
}

/// The worker finished with `code`: called right before it exits (or `_exit`s).
/// Async-signal-safe.
pub fn finish(code: u8) {
    if let Some(s) = shared() {
        s.exit_code.store(i32::from(code), Ordering::SeqCst);
        s.phase.store(FINISHED, Ordering::SeqCst);
    }
}

/// The worker's own time limit: this process kills it a little after `deadline`
/// should it not have ended by then.
pub fn publish_deadline(limit: Duration) {
    if let Some(s) = shared() {
        let ms = monotonic_ms().saturating_add(limit.as_millis().min(u64::MAX as u128) as u64);
        s.deadline_ms.store(ms, Ordering::SeqCst);
    }
}

fn loading_hook(loading: bool) {
    if let Some(s) = shared() {
        if loading {
            s.load_started_ms.store(monotonic_ms(), Ordering::SeqCst);
            s.phase.store(LOADING, Ordering::SeqCst);
        } else {
            s.phase.store(RUNNING, Ordering::SeqCst);
        }
    }
}

extern "C" fn worker_signal(signal: libc::c_int) {
    let seen = shared().map_or(0, |s| s.signals_seen.fetch_add(1, Ordering::SeqCst) + 1);
    if GRACEFUL.load(Ordering::SeqCst) == 1 {
        if seen >= 2 {
            // The second one ends the worker at once (`Interrupt::record`): as asked.
            finish(clmulti_contract::exit_by_signal(signal));
        }
        crate::signal::INTERRUPT.record(signal);
    } else {
        // SAFETY: restoring the default action and re-raising are async-signal-safe.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

extern "C" fn watcher_signal(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    RECEIVED_COUNT.fetch_add(1, Ordering::SeqCst);
}

/// Handles `signals`, but those inherited ignored stay ignored (`nohup`).
fn set_handler(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int)) {
    for &signal in signals {
        // SAFETY: the handlers touch only atomics (and re-raise, or _exit).
        unsafe { crate::signal::handle_unless_ignored(signal, handler) };
    }
}

const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Runs `body` in a forked worker and watches it; returns the command's exit code.
/// Must be called while this process has one thread and has touched no runtime.
pub fn supervise(bounds: Bounds, body: impl FnOnce() -> u8) -> u8 {
    // SAFETY: an anonymous shared mapping of one page, checked below.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            std::mem::size_of::<Shared>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        // Nothing to watch with: run unwatched rather than not at all.
        return body();
    }
    // A fresh anonymous mapping is zeroed: every field starts at 0.
    let page = page.cast::<Shared>();
    let watcher = std::process::id() as i32;
    // SAFETY: this process has one thread (the caller's contract).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return body();
    }
    if pid == 0 {
        // SAFETY: prctl/getppid/_exit are plain syscalls.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != watcher {
                libc::_exit(1);
            }
        }
        SHARED.store(page, Ordering::SeqCst);
        GRACEFUL.store(u32::from(bounds.graceful_signals), Ordering::SeqCst);
        set_handler(&STOP_SIGNALS, worker_signal);
        clmulti_probe::on_loading(loading_hook);
        let code = body();
        finish(code);
        return code;
    }
    // SAFETY: the page stays mapped for the life of this process.
    let shared = unsafe { &*page };
    set_handler(&STOP_SIGNALS, watcher_signal);
    // This process writes only messages; a closed stderr must not kill it.
    // SAFETY: ignoring SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    watch(pid, shared, bounds)
}

/// Wakes the watcher as soon as the worker exits: a pidfd (Linux 5.3) turns readable
/// then. Polling every 5 ms alone kept a finished command 2.5 ms longer on average
/// (measured), a share of a 0.3 s run; without a pidfd, the 5 ms sleep remains.
struct ExitNotice(i32);

impl ExitNotice {
    fn open(pid: libc::pid_t) -> Self {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        ExitNotice(i32::try_from(fd).unwrap_or(-1))
    }

    /// Waits up to `limit`, less when the worker exits or a signal arrives.
    fn wait(&self, limit: Duration) {
        if self.0 < 0 {
            std::thread::sleep(limit);
            return;
        }
        let mut ready = libc::pollfd {
            fd: self.0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a signal or the timeout ends the poll.
        unsafe { libc::poll(&mut ready, 1, limit.as_millis() as libc::c_int) };
    }
}

impl Drop for ExitNotice {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: the descriptor is this value's, closed once.
            unsafe { libc::close(self.0) };
        }
    }
}

/// Why the watcher ended the worker.
enum Ended {
    /// It exited or was killed (status from waitpid).
    Status(libc::c_int),
    /// Loading outlived its limit.
    LoadHang(Duration),
    /// The command outlived its limit.
    Timeout(Duration),
}

/// Says, for a command that stops gracefully, that a signal arrived and what it does.
fn say_stopping(bounds: &Bounds) {
    if bounds.graceful_signals {
        (bounds.note)(&format!(
            "clmulti {}: stopping on {}: what is in flight stops where it can (a run at its next buffer, keeping what it measured) and what finished is reported; a second signal ends it at once, without a report",
            bounds.command,
            clmulti_contract::signal_name(RECEIVED.load(Ordering::SeqCst))
        ));
    }
}

// long: a state machine: the watcher's loop reads the worker's phase, its deadline and the signals passed on from one shared page each turn
fn watch(pid: libc::pid_t, shared: &Shared, bounds: Bounds) -> u8 {
    let start = monotonic_ms();
    let timeout_ms = bounds.timeout.map(|t| t.as_millis() as u64);
    // Signals received here; the stop requests they made (signals that arrive within
    // 50 ms of each other are one: `timeout` sends its signal to this process and then
    // to the whole group, two here for one in the worker); when the last signal came
    // and when one was last passed on (ms).
    let mut received = 0;
    let mut requests = 0;
    let mut last_arrived = 0;
    let mut last_received = 0;
    let exited = ExitNotice::open(pid);
    // When `--timeout` asked a graceful command to stop (SIGTERM), so that it reports
    // what finished; it is killed if it has not ended a grace later.
    let mut asked_to_stop: Option<u64> = None;
    let ended = loop {
        let mut status = 0;
        // SAFETY: waiting for our own child without blocking.
        let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if waited == pid {
            break Ended::Status(status);
        }
        if waited < 0 {
            break Ended::Status(0);
        }
        let now = monotonic_ms();
        let phase = shared.phase.load(Ordering::SeqCst);
        let loading_for = now.saturating_sub(shared.load_started_ms.load(Ordering::SeqCst));
        let load_limit = bounds.timeout.unwrap_or(LOAD_LIMIT).min(LOAD_LIMIT);
        let late = timeout_ms.filter(|l| now.saturating_sub(start) > *l);
        if phase == LOADING && (late.is_some() || loading_for > load_limit.as_millis() as u64) {
            break Ended::LoadHang(Duration::from_millis(loading_for));
        }
        if let Some(limit) = late {
            let grace = (limit / 10).clamp(2_000, 10_000);
            match asked_to_stop {
                None if bounds.graceful_signals && phase == RUNNING => {
                    // Stopping already (a Ctrl-C): another signal would end it at once.
                    if shared.signals_seen.load(Ordering::SeqCst) == 0 {
                        // SAFETY: signalling our own child.
                        unsafe { libc::kill(pid, libc::SIGTERM) };
                    }
                    asked_to_stop = Some(now);
                }
                Some(asked) if now.saturating_sub(asked) <= grace => {}
                _ => break Ended::Timeout(Duration::from_millis(limit)),
            }
        }
        // The worker's own deadline, with a tenth (at least 0.2 s) to print its report.
        let own = shared.deadline_ms.load(Ordering::SeqCst);
        if own != 0 {
            let grace = (own.saturating_sub(start) / 10).max(200);
            if now > own + grace {
                break Ended::Timeout(Duration::from_millis(own - start));
            }
        }
        // A signal sent to this process alone is passed on: the worker saw fewer
        // than the requests made here once 50 ms went by (one the terminal sent to
        // the whole group reaches both at once).
        let count = RECEIVED_COUNT.load(Ordering::SeqCst);
        if count != received {
            if requests == 0 {
                // Said at once: what is in flight may take a while to finish.
                say_stopping(&bounds);
            }
            if requests == 0 || now.saturating_sub(last_arrived) >= 50 {
                requests += 1;
            }
            received = count;
            last_arrived = now;
            last_received = now;
        }
        let seen = shared.signals_seen.load(Ordering::SeqCst);
        if requests > seen && now.saturating_sub(last_received) >= 50 {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, RECEIVED.load(Ordering::SeqCst)) };
            // Counted as seen by the worker when its handler runs; until then, wait.
            last_received = now;
        }
        exited.wait(Duration::from_millis(5));
    };
    drop(exited);
    if requests == 0 && RECEIVED_COUNT.load(Ordering::SeqCst) > 0 {
        // The worker ended before this process looked (a loaded machine): the
        // signal is still acknowledged, once.
        say_stopping(&bounds);
    }
    let status = match ended {
        Ended::Status(status) => status,
        Ended::LoadHang(seconds) | Ended::Timeout(seconds) => {
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            let what = why_killed(&ended, seconds, asked_to_stop.is_some(), shared, &bounds);
            say(&what);
            return 1;
        }
    };
    let finished = shared.phase.load(Ordering::SeqCst) == FINISHED;
    let code = shared.exit_code.load(Ordering::SeqCst);
    if libc::WIFSIGNALED(status) {
        return signalled(libc::WTERMSIG(status), finished, code, shared, &bounds);
    }
    let exit = libc::WEXITSTATUS(status);
    if let (Some(_), Some(limit)) = (asked_to_stop, bounds.timeout) {
        // It reported what finished before the limit; the command still did not end.
        say(&format!(
            "`clmulti {}` did not end within {:.1} s (--timeout): it was stopped with SIGTERM, and what had finished by then, if anything, is reported above",
            bounds.command,
            limit.as_secs_f64()
        ));
        return 1;
    }
    if finished {
        let signal = RECEIVED.load(Ordering::SeqCst);
        if bounds.graceful_signals
            && shared.signals_seen.load(Ordering::SeqCst) >= 2
            && code == 128 + signal
        {
            say(&format!(
                "note: `clmulti {}` ended at once by a second {}: what it had not reported is lost",
                bounds.command,
                clmulti_contract::signal_name(signal)
            ));
        }
        return u8::try_from(code).unwrap_or(1);
    }
    if exit == 101 {
        // A panic: its message is above.
        return 1;
    }
    say(&match shared.phase.load(Ordering::SeqCst) {
        LOADING => format!(
            "loading the OpenCL runtime ended the process (exit {exit}) before clGetPlatformIDs returned: an ICD the loader opened (OCL_ICD_VENDORS or /etc/OpenCL/vendors name them) calls exit while loading"
        ),
        _ => format!(
            "`clmulti {}` ended (exit {exit}) before it finished, {}: something it loaded called exit",
            bounds.command,
            where_it_was(shared)
        ),
    });
    1
}

/// Why the watcher killed the worker: loading hung, or the command outlived its
/// limit (after being asked to stop, or not).
fn why_killed(
    ended: &Ended,
    seconds: Duration,
    asked_to_stop: bool,
    shared: &Shared,
    bounds: &Bounds,
) -> String {
    match ended {
        Ended::LoadHang(_) => format!(
            "loading the OpenCL runtime did not finish within {:.1} s: clGetPlatformIDs never returned (an ICD the loader opened hangs while loading; OCL_ICD_VENDORS or /etc/OpenCL/vendors name them)",
            seconds.as_secs_f64()
        ),
        _ if asked_to_stop => format!(
            "`clmulti {}` did not end within {:.1} s (--timeout), nor within the grace after it was asked to stop (SIGTERM; what it had in flight had not finished): killed, nothing reported",
            bounds.command,
            seconds.as_secs_f64()
        ),
        _ => format!(
            "`clmulti {}` did not end within {:.1} s ({}): stopped",
            bounds.command,
            seconds.as_secs_f64(),
            where_it_was(shared)
        ),
    }
}

/// The exit for a worker ended by `signal`: a crash after it finished, a stop it
/// was asked for, or a crash while loading or running, each said.
fn signalled(signal: i32, finished: bool, code: i32, shared: &Shared, bounds: &Bounds) -> u8 {
    let name = clmulti_contract::signal_name(signal);
    if finished {
        say(&format!(
            "note: the process crashed with {name} after `clmulti {}` finished (in a runtime's exit handlers)",
            bounds.command
        ));
        return u8::try_from(code).unwrap_or(1);
    }
    if STOP_SIGNALS.contains(&signal) {
        // Stopped as asked: the shell's convention, and a line, so that a
        // command that printed nothing yet does not end in silence.
        say(&format!(
            "`clmulti {}` stopped by {name} before it finished: what it measured so far is not reported (`clmulti run` stops a run and reports it)",
            bounds.command
        ));
        return clmulti_contract::exit_by_signal(signal);
    }
    say(&match shared.phase.load(Ordering::SeqCst) {
        LOADING => format!(
            "loading the OpenCL runtime crashed the process with {name} (in clGetPlatformIDs): an ICD the loader opened (OCL_ICD_VENDORS or /etc/OpenCL/vendors name them) crashes while loading"
        ),
        _ => format!(
            "`clmulti {}` crashed with {name} {}",
            bounds.command,
            where_it_was(shared)
        ),
    });
    1
}

fn where_it_was(shared: &Shared) -> &'static str {
    match shared.phase.load(Ordering::SeqCst) {
        STARTING => "before it loaded an OpenCL runtime",
        LOADING => "while loading the OpenCL runtime (in clGetPlatformIDs)",
        _ => "after the OpenCL runtime loaded",
    }
}

fn say(message: &str) {
    let line = if message.starts_with("note:") {
        format!("{message}\n")
    } else {
        format!("error: {message}\n")
    };
    use std::io::Write;
    let _ = std::io::stderr().write_all(line.as_bytes());
}
