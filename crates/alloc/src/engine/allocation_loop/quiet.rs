//! Buffers that need none of the loop's checks, allocated with nothing but the call.

use super::{Backend, Clock, LoopOutcome, LoopPlan, RssGuard};
use clmulti_explain::StopReason;

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
    for _ in 0..count {
        if let Some(signal) = interrupt
            .map(|i| i.load(std::sync::atomic::Ordering::Relaxed))
            .filter(|s| *s != 0)
        {
            return Some(StopReason::interrupted(signal));
        }
        let index = out.buffers;
        let device = plan.placement.device(index, devices);
        if let Err((code, call)) = backend.allocate(index, device) {
            return Some(StopReason::Failed {
                error: code.into(),
                call,
                index,
            });
        }
        out.buffers += 1;
        out.live += 1;
        out.bytes += plan.size;
    }
    None
}
