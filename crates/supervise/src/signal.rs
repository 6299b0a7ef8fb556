//! Signals: what SIGINT, SIGTERM and SIGHUP ask of a process (stop gracefully, then
//! at once), kept the way `nohup` and shells set them.

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
