//! One sample of every reading, inside the loop, and the pause between buffers.

use super::*;

/// One sample of every reading (the mappings walked and the C library's heap read,
/// always, on every sample, or within the walks' time budget; the devices' memory
/// and `status`'s and `meminfo`'s figures there and at a few samples more), told to
/// the meter and kept; its guard reading.
#[inline]
pub(super) fn take_sample(
    plan: &LoopPlan,
    maps: &mut MapsBudget,
    out: &mut LoopOutcome,
    meter: &mut dyn Meter,
    (start, walk): (Instant, Walk),
) -> GuardReading {
    let taken = meter.now();
    let mut usage = meter.usage();
    let walks = match (walk, plan.sample_maps) {
        (Walk::Always, _) | (_, MapsSampling::EverySample) => true,
        (Walk::Budgeted, MapsSampling::Budgeted) => maps.allows(taken - start, out.samples.len()),
    };
    let mut walked = Duration::ZERO;
    if walks {
        meter.heap(&mut usage);
        let walking = meter.now();
        usage.process.memory_maps = Some(meter.memory_maps());
        walked = meter.now() - walking;
        maps.spent += walked;
    }
    // The devices' memory and `status`'s and `meminfo`'s figures where the walks go,
    // and at the first 8 samples and the 16th, 32nd, 64th... (enough for a line per
    // device however dear); the devices' cost in the walks' budget (see
    // `MapsBudget`). The other samples leave them out.
    let nth = out.samples.len();
    let detailed = walks || nth < 8 || (nth + 1).is_power_of_two();
    if detailed {
        meter.accounting(&mut usage);
    }
    let device_used_bytes = if detailed {
        let reading = meter.now();
        let device_used = meter.device_used();
        maps.spent += meter.now() - reading;
        device_used
    } else {
        let devices = out.samples.first().map_or(0, |s| s.device_used_bytes.len());
        vec![None; devices]
    };
    // Every figure: at the samples that always walk, and at all of them when asked
    // for every sample.
    let whole = walk == Walk::Always || plan.sample_maps == MapsSampling::EverySample;
    if whole {
        meter.counts(&mut usage);
    }
    out.last_sample_whole = whole;
    let guards = meter.guard_reading_in(&usage, out.bytes);
    let sample = Sample {
        allocations: out.buffers,
        live: (out.live != out.buffers).then_some(out.live),
        bytes_requested: out.bytes,
        elapsed_seconds: (taken - start).as_secs_f64(),
        host: usage.process,
        system: usage.system,
        drm: usage.drm,
        device_used_bytes,
        dmabuf_exporters: usage.dmabuf_exporters,
        kernel_counts: usage.kernel_counts,
        traced_counts: usage.traced_counts,
    };
    let telling = meter.now();
    meter.sampled(&sample);
    out.samples.push(sample);
    let done = meter.now();
    let cost = &mut out.cost;
    cost.samples += 1;
    cost.mappings_seconds += walked.as_secs_f64();
    cost.observer_seconds += (done - telling).as_secs_f64();
    cost.readings_seconds += (telling - taken - walked).as_secs_f64();
    out.sampling_seconds += (done - taken).as_secs_f64();
    guards
}

/// Waits `pause`: spinning below a millisecond, where sleep overshoots by tens of
/// microseconds (the pause must stay near what was asked to halve a rate).
pub(super) fn pause(pause: std::time::Duration) {
    if pause.is_zero() {
        return;
    }
    if pause >= std::time::Duration::from_millis(1) {
        std::thread::sleep(pause);
        return;
    }
    let until = Instant::now() + pause;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The last sample has every figure: one taken without the mappings is taken again;
/// one with them but not the counts gets the counts (read now, with nothing allocated
/// since: as they were).
pub(super) fn complete_last_sample(
    plan: &LoopPlan,
    maps: &mut MapsBudget,
    out: &mut LoopOutcome,
    meter: &mut dyn Meter,
    start: Instant,
) {
    let at_end = out
        .samples
        .last()
        .is_some_and(|l| l.allocations == out.buffers);
    let walked = out
        .samples
        .last()
        .is_some_and(|l| l.host.memory_maps.is_some());
    match (at_end, walked, out.last_sample_whole) {
        (true, true, true) => {}
        (true, true, false) => {
            let mut counts = Usage::default();
            meter.counts(&mut counts);
            if let Some(last) = out.samples.last_mut() {
                last.kernel_counts = counts.kernel_counts;
                last.traced_counts = counts.traced_counts;
            }
            out.last_sample_whole = true;
        }
        (at_end, _, _) => {
            if at_end {
                out.samples.pop();
            }
            take_sample(plan, maps, out, meter, (start, Walk::Always));
        }
    }
}
