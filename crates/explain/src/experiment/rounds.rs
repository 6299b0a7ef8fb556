//! Memory kept after release: a cache the runtime reuses, or a leak that grows. The
//! same run in rounds (release everything after each), judged per resource by what
//! each round adds, beside a control with one device.

use super::{judge, Noise, Runner, Trial};
use crate::analysis::conclusions;
use crate::report::{Report, RoundReadings, RoundsControl, Sample, SecondRound};
use crate::resource::{Resource, Unit};
use crate::verdict::{Change, Knob};

/// Rounds of the same run that [`second_round`] makes: enough increments that growth
/// repeating round after round stands apart from an allocator's swings (a heap can
/// grow in one round and give back in the next: measured on NEO 22.43 and glibc).
pub const ROUNDS: u64 = 6;

/// For a run whose readings stayed up after release: the same run in [`ROUNDS`]
/// rounds, and, for a run over several devices, the same rounds with one device (the
/// control: what the runtime keeps without sharing). Recorded in the report's leak
/// check.
pub fn second_round(report: &mut Report, runner: &mut dyn Runner) {
    let n = report.buffers;
    if report.leak_check.not_returned.is_empty() || n == 0 {
        return;
    }
    let (experiment, readings) = rounds(report, runner, None);
    let devices = report.devices.len().max(report.scenario.devices.set.len()) as u64;
    let control = (devices >= 2).then(|| {
        let one = Change {
            knob: Knob::Devices,
            from: devices,
            to: 1,
        };
        let (experiment, readings) = rounds(report, runner, Some(one));
        Box::new(RoundsControl {
            experiment,
            readings,
        })
    });
    report.leak_check.second_round = Some(SecondRound {
        experiment,
        readings,
        control,
    });
    report.analysis = conclusions(
        report,
        report.analysis.candidates.clone(),
        report.analysis.shape.clone(),
    );
}

/// One rounds run (with `also` changed): the experiment and each resource's readings.
fn rounds(
    report: &Report,
    runner: &mut dyn Runner,
    also: Option<Change>,
) -> (crate::verdict::Experiment, Vec<RoundReadings>) {
    let n = report.buffers;
    let trial = Trial {
        change: Change {
            knob: Knob::ReleaseEvery,
            from: 0,
            to: n,
        },
        asked: ROUNDS * n,
        predicted: None,
    };
    let mut changes = vec![trial.change.clone()];
    changes.extend(also);
    let run = runner.run(&changes, trial.asked);
    let experiment = judge(&trial, n, Noise::default(), run.as_ref());
    let readings = match &run {
        Ok(r) => round_readings(report, r),
        Err(_) => Vec::new(),
    };
    (experiment, readings)
}

/// What each resource that stayed up read after each round of `rounds`, and the C
/// library's heap beside host memory.
fn round_readings(report: &Report, rounds: &Report) -> Vec<RoundReadings> {
    let mut released: Vec<&Sample> = rounds
        .samples
        .iter()
        .filter(|s| s.live == Some(0) && s.allocations > 0)
        .collect();
    released.dedup_by_key(|s| s.allocations);
    let Some(start) = rounds.samples.first().filter(|_| released.len() >= 2) else {
        return Vec::new();
    };
    let host = &rounds.host_limits;
    let mut resources: Vec<Resource> = report
        .leak_check
        .not_returned
        .iter()
        .map(|n| n.resource.clone())
        .collect();
    // Beside memory, what the C library's live allocations hold and the freed heap it
    // keeps: the contrast that tells its own retention from the runtime's.
    if resources.iter().any(|r| r.unit() == Unit::Bytes) {
        resources.extend([Resource::HeapInUse, Resource::HeapFree]);
    }
    resources.dedup();
    resources
        .into_iter()
        .filter_map(|resource| {
            let read = |s: &Sample| resource.reading(s, host);
            let before = read(start)?;
            let after_rounds: Vec<f64> = released.iter().map(|s| read(s)).collect::<Option<_>>()?;
            let first = after_rounds[0] - before;
            Some(RoundReadings {
                tolerance: round_tolerance(&resource, first),
                resource,
                before,
                after_rounds,
            })
        })
        .collect()
}

/// What one round may add and still be noise: for the C library's heap in use (an
/// exact count of live bytes) 256 KiB; for other memory (pages, mappings) a
/// megabyte or 2% of what the first round kept; two for counts. Not a share of a
/// round's total: a leak small against one round still adds every round.
pub fn round_tolerance(resource: &Resource, first_round: f64) -> f64 {
    match resource.unit() {
        Unit::Bytes if *resource == Resource::HeapInUse => 256.0 * 1024.0,
        Unit::Bytes => (first_round.abs() * 0.02).max(1024.0 * 1024.0),
        Unit::Count => 2.0,
    }
}
