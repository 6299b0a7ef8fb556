//! A run that hangs inside the runtime (oclgrind through the ICD loader hangs in
//! `clCreateCommandQueueWithProperties`; an ICD's constructor can hang inside
//! `clGetPlatformIDs`) must still end by its time limit: the engine records which
//! call is running, and a watchdog thread reports it when the limit passes.
//!
//! The thread is started, and has finished starting, before the caller touches the
//! runtime: a new thread's first thread-local with a destructor registers it through
//! glibc's `__cxa_thread_atexit_impl`, which takes the dynamic loader's lock, and a
//! runtime whose loading hangs holds that lock for ever (seen: the watchdog blocked
//! in its own start-up in 5 of 14 runs against a hanging ICD). Arming starts it;
//! [`Watchdog::started`] waits for its start-up to finish, right before the runtime
//! loads, so that the run's own set-up goes on meanwhile (on another core: a
//! thread's start took 0.3 to 0.5 ms of a run's time on a 2-core machine).

use clmulti_explain::Call;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The OpenCL call the run is in, shared with the watchdog.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallTracker(Arc<AtomicU8>);

impl CallTracker {
    pub fn enter(&self, call: Call) {
        let index = Call::ALL
            .iter()
            .position(|c| *c == call)
            .map_or(0, |i| i + 1);
        self.0.store(index as u8, Ordering::Relaxed);
    }

    /// The call returned: the run is between calls (its own code, a pause).
    pub fn leave(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    pub fn current(&self) -> Option<Call> {
        let index = self.0.load(Ordering::Relaxed) as usize;
        index.checked_sub(1).and_then(|i| Call::ALL.get(i).copied())
    }
}

/// What to do when a run outlives its limit: called once, from the watchdog's
/// thread, with the call that was running and the limit in seconds. It usually
/// reports and exits the process: the hung call never returns.
pub type OnHang = Box<dyn FnOnce(Option<Call>, f64) + Send>;

/// Fires `on_hang` unless dropped before its limit passes. Arm it before anything
/// touches the OpenCL runtime and hold it until the report is written: it bounds
/// loading, the loop, the checks, release and the output.
pub struct Watchdog {
    done: Arc<(Mutex<State>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
    tracker: CallTracker,
    limit: Duration,
    deadline: Instant,
    /// Says when the thread's start-up is done; taken by the first wait.
    starting: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog")
            .field("limit", &self.limit)
            .field("call", &self.tracker.current())
            .finish()
    }
}

impl Watchdog {
    /// Starts the watchdog's thread; [`started`](Self::started) waits until it runs
    /// with everything its report needs already set up (so that it takes no loader
    /// lock later).
    pub fn arm(limit: Duration, on_hang: OnHang) -> std::io::Result<Self> {
        let start = Instant::now();
        let deadline = start + limit;
        let tracker = CallTracker::default();
        let done = Arc::new((Mutex::new(State::Watching), Condvar::new()));
        let shared = Arc::clone(&done);
        let watched = tracker.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("clmulti-watchdog".into())
            .spawn(move || {
                // What the report path touches first, done now: the thread's handle
                // (a thread-local with a destructor) and the standard streams' locks.
                let _ = std::thread::current();
                drop(std::io::stdout().lock());
                drop(std::io::stderr().lock());
                let _ = ready_tx.send(());
                let (lock, wake) = &*shared;
                let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
                while *state == State::Watching {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        *state = State::Fired;
                        drop(state);
                        on_hang(watched.current(), limit.as_secs_f64());
                        return;
                    }
                    state = wake
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            })?;
        Ok(Watchdog {
            done,
            thread: Some(thread),
            tracker,
            limit,
            deadline,
            starting: Mutex::new(Some(ready_rx)),
        })
    }

    /// Returns once the thread has finished starting: call it before anything
    /// touches the runtime (the engine does, before loading it). Its start-up needs
    /// no lock the caller holds.
    pub fn started(&self) {
        let starting = self
            .starting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(ready) = starting {
            let _ = ready.recv();
        }
    }

    /// The limit it was armed with.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// When it fires.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub(crate) fn tracker(&self) -> &CallTracker {
        &self.tracker
    }
}

/// Where the watchdog's thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Watching,
    /// Dropped in time: the thread ends on its own.
    Disarmed,
    /// The limit passed: the thread is reporting the hang.
    Fired,
}

impl Drop for Watchdog {
    /// Disarms it without waiting for the thread to end (a run's process exits
    /// right after: the join took 0.3 ms of it, seen under `perf trace`); one that
    /// fired is waited for, as its report ends the process.
    fn drop(&mut self) {
        let (lock, wake) = &*self.done;
        let fired = {
            let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
            if *state == State::Watching {
                *state = State::Disarmed;
            }
            *state == State::Fired
        };
        wake.notify_all();
        if let (true, Some(thread)) = (fired, self.thread.take()) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn fires_with_the_running_call_and_not_after_disarming() {
        let (tx, rx) = mpsc::channel();
        let dog = Watchdog::arm(
            Duration::from_millis(20),
            Box::new(move |call, _| tx.send(call).unwrap()),
        )
        .unwrap();
        dog.tracker().enter(Call::CreateCommandQueue);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            Some(Call::CreateCommandQueue)
        );
        drop(dog);

        let (tx, rx) = mpsc::channel();
        let dog = Watchdog::arm(
            Duration::from_secs(30),
            Box::new(move |call, _| tx.send(call).unwrap()),
        )
        .unwrap();
        drop(dog);
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    }
}
