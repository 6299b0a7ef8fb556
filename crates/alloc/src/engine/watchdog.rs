//! A run that hangs inside the runtime (oclgrind through the ICD loader hangs in
//! `clCreateCommandQueueWithProperties`) must still end by its time limit: the engine
//! records which call is running, and a watchdog thread reports it when the limit
//! passes.

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

    pub fn current(&self) -> Option<Call> {
        let index = self.0.load(Ordering::Relaxed) as usize;
        index.checked_sub(1).and_then(|i| Call::ALL.get(i).copied())
    }
}

/// What to do when a run outlives its limit: called once, from the watchdog's
/// thread, with the call that was running and the limit in seconds. It usually
/// reports and exits the process: the hung call never returns.
pub type OnHang = Box<dyn FnOnce(Option<Call>, f64) + Send>;

/// Fires `on_hang` unless disarmed (dropped) before `limit` passes.
pub(crate) struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    pub fn arm(limit: Duration, tracker: CallTracker, on_hang: OnHang) -> Self {
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let shared = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            let (lock, wake) = &*shared;
            let mut finished = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !*finished {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    drop(finished);
                    on_hang(tracker.current(), limit.as_secs_f64());
                    return;
                }
                finished = wake
                    .wait_timeout(finished, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        });
        Watchdog {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (lock, wake) = &*self.done;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
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
        let tracker = CallTracker::default();
        tracker.enter(Call::CreateCommandQueue);
        let (tx, rx) = mpsc::channel();
        let dog = Watchdog::arm(
            Duration::from_millis(20),
            tracker.clone(),
            Box::new(move |call, _| tx.send(call).unwrap()),
        );
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            Some(Call::CreateCommandQueue)
        );
        drop(dog);

        let (tx, rx) = mpsc::channel();
        let dog = Watchdog::arm(
            Duration::from_secs(30),
            tracker,
            Box::new(move |call, _| tx.send(call).unwrap()),
        );
        drop(dog);
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    }
}
