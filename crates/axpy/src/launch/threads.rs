//! A thread per part: each launches its part when released and waits for it, so no
//! part's launch waits behind another's.

use super::*;

/// One part from its own thread: enqueue, flush, meet the other threads
/// (`all_launched` returns once every part is launched), wait.
fn own_part(
    part: &Prepared<'_>,
    strategy: Strategy,
    epoch: Instant,
    all_launched: &dyn Fn(),
) -> Result<PartRep, AxpyError> {
    let at = || epoch.elapsed().as_secs_f64();
    let mut rep = PartRep {
        launch_at: at(),
        ..PartRep::default()
    };
    let started = (|| {
        let event = enqueue(part, strategy)?;
        rep.enqueued_at = at();
        rep.flush_at = rep.enqueued_at;
        flush(part, strategy)?;
        rep.launched_at = at();
        Ok(event)
    })();
    // Waiting calls can take the runtime's locks that another thread's enqueue
    // needs (in one shared context on NVIDIA, waiting threads made enqueues take
    // 30-50 us instead of 8): nobody waits before everybody has launched.
    all_launched();
    let event = started?;
    if part.kernel.is_some() {
        match (strategy.completion, &event) {
            (Completion::Poll, Some(e)) => {
                while !complete(e)? {
                    std::hint::spin_loop();
                }
            }
            (Completion::WaitForEvents, Some(e)) => e.wait().map_err(cl3("clWaitForEvents"))?,
            _ => part.queue(strategy).finish().map_err(cl3("clFinish"))?,
        }
    }
    rep.seen_at = at();
    rep.profile = profile(event.as_ref(), strategy.profiling)?;
    Ok(rep)
}

/// Spins, then parks, until `ready` holds: a released worker starts within a spin
/// (microseconds), an idle one stops burning its core after `SPIN`.
fn wait_until(ready: impl Fn() -> bool) {
    const SPIN: Duration = Duration::from_millis(5);
    let since = Instant::now();
    while !ready() {
        if since.elapsed() < SPIN {
            std::hint::spin_loop();
        } else {
            std::thread::park_timeout(Duration::from_micros(200));
        }
    }
}

pub(super) const STOP: u64 = u64::MAX;

/// Host threads, one per part, that launch their part when released.
pub(super) struct Workers {
    pub generation: AtomicU64,
    pub strategy: Mutex<Option<Strategy>>,
    pub done: AtomicUsize,
    pub launched: AtomicUsize,
    pub slots: Vec<Mutex<Option<Result<PartRep, AxpyError>>>>,
    pub epoch: Instant,
}

impl Workers {
    pub fn work(&self, index: usize, part: &Prepared<'_>) {
        let mut seen = 0;
        loop {
            wait_until(|| self.generation.load(Ordering::Acquire) != seen);
            seen = self.generation.load(Ordering::Acquire);
            if seen == STOP {
                return;
            }
            let strategy = self
                .strategy
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .expect("set before release");
            let all_launched = || {
                self.launched.fetch_add(1, Ordering::AcqRel);
                wait_until(|| self.launched.load(Ordering::Acquire) == self.slots.len());
            };
            let result = own_part(part, strategy, self.epoch, &all_launched);
            *self.slots[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            self.done.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Releases every worker for one repetition and collects it.
    pub fn rep(
        &self,
        strategy: Strategy,
        threads: &[std::thread::Thread],
    ) -> Result<Rep, AxpyError> {
        *self.strategy.lock().unwrap_or_else(|e| e.into_inner()) = Some(strategy);
        self.done.store(0, Ordering::Release);
        self.launched.store(0, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
        threads.iter().for_each(std::thread::Thread::unpark);
        wait_until(|| self.done.load(Ordering::Acquire) == self.slots.len());
        self.slots
            .iter()
            .map(|s| {
                s.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .expect("every worker reported")
            })
            .collect()
    }
}
