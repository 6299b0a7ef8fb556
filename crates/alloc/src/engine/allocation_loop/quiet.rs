//! Buffers that need none of the loop's checks, allocated with nothing but the call.

use super::{Backend, Clock, LoopOutcome, LoopPlan, RssGuard};
use clmulti_explain::StopReason;
use clmulti_scenario::Placement;

/// How many buffers from `out.buffers` on need none of the loop's checks: none is
/// due a sample or a release round, reaches the target or the total's bound, falls
/// on the clock's next look or makes a guard want a reading, and nothing pauses
/// between them. They go through [`allocate_quietly`]: a lazy runtime creates a
/// buffer in 400 ns, and the checks of every buffer cost 130 instructions of it
/// (measured).
pub(super) fn quiet_buffers(
    plan: &LoopPlan,
    out: &LoopOutcome,
    next_sample: u64,
    clock: &Clock,
    guards: [&RssGuard; 3],
) -> u64 {
    if !plan.pause.is_zero() || plan.size == 0 {
        return 0;
    }
    let index = out.buffers;
    let within = |bound: u64, used: u64| bound.saturating_sub(used) / plan.size;
    let mut quiet = next_sample
        .saturating_sub(index + 1)
        .min(plan.target.saturating_sub(index))
        .min(clock.countdown.saturating_sub(1))
        .min(within(plan.max_total, out.bytes));
    if let Some(every) = plan.release_every {
        quiet = quiet.min(every.saturating_sub(out.live + 1));
    }
    for guard in guards {
        quiet = quiet
            .min(guard.next_learning_read.saturating_sub(index))
            .min(within(guard.read_past, out.bytes));
    }
    quiet
}

/// Buffers in a row that need no check between them: what [`quiet_buffers`] found,
/// handed to [`Backend::allocate_run`] whole.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run<'a> {
    /// The first buffer's index.
    pub first: u64,
    /// How many.
    pub count: u64,
    /// The first buffer's device.
    pub device: usize,
    /// Each next buffer on the next device (round robin over `devices`); otherwise
    /// all on `device`.
    pub round_robin: bool,
    /// Number of devices.
    pub devices: usize,
    /// Stops the run before the next buffer once it holds a signal number.
    pub interrupt: Option<&'a std::sync::atomic::AtomicI32>,
}

impl Run<'_> {
    /// The signal that asks to stop, if one came.
    #[inline]
    pub fn interrupted(&self) -> Option<i32> {
        self.interrupt
            .map(|i| i.load(std::sync::atomic::Ordering::Relaxed))
            .filter(|s| *s != 0)
    }

    /// The device after `device` (one step, not a division per buffer).
    #[inline]
    pub fn next_device(&self, device: usize) -> usize {
        if !self.round_robin {
            return device;
        }
        if device + 1 == self.devices {
            0
        } else {
            device + 1
        }
    }
}

/// Why a run of buffers ended before its last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunStop {
    /// A call failed.
    Failed(clmulti_probe::ClCode, clmulti_explain::Call),
    /// A signal asked to stop.
    Interrupted(i32),
}

/// [`Backend::allocate_run`] for any backend: [`Backend::allocate`] for each buffer.
pub(crate) fn allocate_each(backend: &mut impl Backend, run: &Run<'_>) -> (u64, Option<RunStop>) {
    let mut device = run.device;
    for done in 0..run.count {
        if let Some(signal) = run.interrupted() {
            return (done, Some(RunStop::Interrupted(signal)));
        }
        if let Err((code, call)) = backend.allocate(run.first + done, device) {
            return (done, Some(RunStop::Failed(code, call)));
        }
        device = run.next_device(device);
    }
    (run.count, None)
}

/// Allocates `count` buffers with no check but the interrupt: what
/// [`quiet_buffers`] found needs none.
pub(super) fn allocate_quietly(
    count: u64,
    plan: &LoopPlan,
    devices: usize,
    backend: &mut impl Backend,
    out: &mut LoopOutcome,
    interrupt: Option<&std::sync::atomic::AtomicI32>,
) -> Option<StopReason> {
    let run = Run {
        first: out.buffers,
        count,
        device: plan.placement.device(out.buffers, devices),
        round_robin: plan.placement == Placement::RoundRobin,
        devices,
        interrupt,
    };
    let (done, stop) = backend.allocate_run(&run);
    out.buffers += done;
    out.live += done;
    out.bytes += done * plan.size;
    stop.map(|stop| match stop {
        RunStop::Failed(code, call) => StopReason::Failed {
            error: code.into(),
            call,
            index: out.buffers,
        },
        RunStop::Interrupted(signal) => StopReason::interrupted(signal),
    })
}
