//! Experiments: a cause is what moved when its limit was moved.
//!
//! For a failed run, each candidate ([`analysis::candidates`](crate::analysis::candidates))
//! whose limit the process can move is re-run with the limit lowered (always
//! possible for a soft limit) and, where allowed, raised; the candidate is
//! *confirmed* when the failing count moves to the count its line predicts (within
//! [`MOVED_SHARE`]), *refuted* when it does not move, *inconclusive* when it moves
//! elsewhere, and *not tested* (with why, and the command a person could run) when
//! the limit is a system-wide setting or cannot be moved at all. When no candidate is
//! confirmed, more re-runs find the *shape* of the unseen limit: buffers or bytes
//! (another buffer size), live or cumulative (release half way and go on), per
//! context or per process (two shared contexts), per peer (one more device).
//!
//! The reasoning here plans and judges; a [`Runner`] runs each changed case in a
//! fresh process (the CLI's child harness; a table of reports in tests).

use crate::analysis::conclusions;
use crate::report::{Report, RoundReadings, SecondRound, StopReason};
use crate::resource::Resource;
use crate::verdict::{
    Candidate, CandidateTest, Change, EnvUnit, Experiment, ExperimentOutcome, Knob, ShapeAnswer,
    ShapeFinding, ShapeQuestion,
};
use clmulti_scenario::layer::{DEVICE_MEMORY, MIRROR_LIMIT};
use clmulti_scenario::{format_size, ContextMode, Count, DeviceSet, Scenario};

mod shape;
pub use shape::shape;

/// A failing count has moved (or stayed) when it is within this share of the count
/// expected.
pub const MOVED_SHARE: f64 = 0.05;
/// The most buffers an experiment may ask for.
pub const MAX_EXPERIMENT_BUFFERS: u64 = 1_000_000;
/// PoCL reads its device memory size, in whole GiB, from this variable.
pub const POCL_MEMORY_LIMIT: &str = "POCL_MEMORY_LIMIT";

/// Runs the failing case again with things moved.
pub trait Runner {
    /// Runs the case with `changes` applied, allowed `count` buffers, in a fresh
    /// process; `Err` says why it could not run.
    fn run(&mut self, changes: &[Change], count: u64) -> Result<Report, String>;
}

/// One re-run to make: the change, the buffers to allow, the count predicted.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// What to move.
    pub change: Change,
    /// Buffers to allow.
    pub asked: u64,
    /// The failing count the candidate predicts under the change.
    pub predicted: Option<u64>,
}

/// How a candidate's limit can be tested.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Re-run with these changes, the first one lowering the limit.
    Trials(Vec<Trial>),
    /// It cannot be moved from here.
    NotTestable {
        /// Why.
        reason: String,
        /// The command a person could run to move it (clmulti never runs it).
        command: Option<String>,
    },
}

/// Whether `count` is within [`MOVED_SHARE`] of `expected` (or 2 buffers).
pub fn near(count: u64, expected: u64) -> bool {
    let slack = ((expected as f64 * MOVED_SHARE).round() as u64).max(2);
    count.abs_diff(expected) <= slack
}

/// Buffers to allow a run expected to fail near `expected`: a margin past it.
fn allowance(expected: u64) -> u64 {
    (expected + expected / 5 + 10).min(MAX_EXPERIMENT_BUFFERS)
}

/// The count a candidate's line reaches at `limit`.
fn predicted_at(candidate: &Candidate, limit: f64) -> Option<u64> {
    let at = (limit - candidate.baseline) / candidate.per_buffer;
    (at.is_finite() && at >= 1.0).then_some(at as u64)
}

/// The environment variable that moves a candidate's limit, when one does.
fn env_knob(candidate: &Candidate, report: &Report) -> Option<(Knob, u64)> {
    let name = candidate.limit.name.as_str();
    let size = |key: &str| Knob::Env {
        key: key.to_owned(),
        unit: EnvUnit::Size,
    };
    if name.contains(MIRROR_LIMIT) {
        return Some((size(MIRROR_LIMIT), candidate.limit.value as u64));
    }
    // The layer's device size, whether read against it or estimated against the
    // global memory the layer declares in its place.
    let layer_device = report
        .layers
        .as_ref()
        .and_then(|l| l.settings())
        .and_then(|s| s.device_memory);
    let device = matches!(candidate.resource, Resource::DeviceMemory { .. });
    if name.contains(DEVICE_MEMORY) || (device && layer_device.is_some()) {
        let from = layer_device.unwrap_or(candidate.limit.value as u64);
        return Some((size(DEVICE_MEMORY), from));
    }
    let pocl = report.platform.contains("Portable Computing Language");
    if pocl && matches!(candidate.resource, Resource::DeviceMemory { .. }) {
        let knob = Knob::Env {
            key: POCL_MEMORY_LIMIT.to_owned(),
            unit: EnvUnit::Gib,
        };
        return Some((knob, candidate.limit.value as u64));
    }
    None
}

/// How to test a candidate: which knob, lowered and raised, or why it cannot be.
pub fn plan(candidate: &Candidate, report: &Report) -> Plan {
    let limit = candidate.limit.value;
    let (knob, from) = if let Some(which) = candidate.limit.rlimit() {
        (Knob::SoftLimit { limit: which }, limit as u64)
    } else if let Some(found) = env_knob(candidate, report) {
        found
    } else {
        return not_testable(candidate);
    };
    let mut lowered = candidate.baseline + (limit - candidate.baseline) / 2.0;
    if let Knob::Env {
        unit: EnvUnit::Gib, ..
    } = knob
    {
        // PoCL takes whole GiB; a device of 1 GiB cannot be halved.
        lowered = ((limit / 2.0) / (1u64 << 30) as f64).floor() * (1u64 << 30) as f64;
        if lowered < (1u64 << 30) as f64 {
            return Plan::NotTestable {
                reason: format!(
                    "{POCL_MEMORY_LIMIT} is set in whole GiB and the device has {}",
                    format_size(from)
                ),
                command: None,
            };
        }
    }
    let mut trials = Vec::new();
    if let Some(predicted) = predicted_at(candidate, lowered) {
        trials.push(Trial {
            change: Change {
                knob: knob.clone(),
                from,
                to: lowered as u64,
            },
            asked: allowance(candidate.observed_count),
            predicted: Some(predicted),
        });
    }
    if let Knob::SoftLimit { limit: which } = knob {
        // Up to the hard limit, or past it where the process may raise that (root).
        let ceiling = report.host_limits.raisable(which);
        let raised = (candidate.baseline + (limit - candidate.baseline) * 2.0)
            .min(ceiling.map_or(f64::MAX, |h| h as f64));
        let predicted = predicted_at(candidate, raised);
        if let Some(p) =
            predicted.filter(|p| raised > limit && allowance(*p) < MAX_EXPERIMENT_BUFFERS)
        {
            trials.push(Trial {
                change: Change {
                    knob: knob.clone(),
                    from,
                    to: raised as u64,
                },
                asked: allowance(p),
                predicted: Some(p),
            });
        }
    }
    if trials.is_empty() {
        return Plan::NotTestable {
            reason: format!(
                "{} is too close to the reading before the first buffer to move",
                candidate.limit.name
            ),
            command: None,
        };
    }
    Plan::Trials(trials)
}

/// Limits a process cannot move: system-wide settings and physical sizes.
fn not_testable(candidate: &Candidate) -> Plan {
    let name = candidate.limit.name.as_str();
    let doubled = (candidate.limit.value * 2.0) as u64;
    let (reason, command) = if name == "vm.max_map_count" {
        (
            "vm.max_map_count is a system-wide setting: clmulti never changes one".to_owned(),
            Some(format!("sudo sysctl -w vm.max_map_count={doubled}")),
        )
    } else if name.starts_with("TTM pages_limit") {
        (
            "TTM's pages_limit is a system-wide driver setting: clmulti never changes one"
                .to_owned(),
            Some(format!(
                "echo {} | sudo tee /sys/module/ttm/parameters/pages_limit",
                doubled / 4096
            )),
        )
    } else if name == "kernel.threads-max" {
        (
            "kernel.threads-max is a system-wide setting: clmulti never changes one".to_owned(),
            Some(format!("sudo sysctl -w kernel.threads-max={doubled}")),
        )
    } else if matches!(
        candidate.resource,
        Resource::DeviceMemory { .. } | Resource::Drm { .. }
    ) {
        (
            format!("{} is the device's physical size: nothing moves it; the buffer-size experiment tells bytes from buffers", candidate.limit.name),
            None,
        )
    } else if name.contains("cgroup") || name.contains("RAM") || name.contains("Slurm") {
        (
            format!("{} is not a limit a process can move", candidate.limit.name),
            Some("systemd-run --user --scope -p MemoryMax=<bytes> <the program> (a cgroup with a lower memory.max)".to_owned()),
        )
    } else {
        (
            format!("no knob clmulti knows moves {}", candidate.limit.name),
            None,
        )
    };
    Plan::NotTestable { reason, command }
}

/// The failing count of an experiment's run, or why it has none.
fn failing_count(report: &Report) -> Result<u64, String> {
    match &report.stop {
        StopReason::Failed { index, .. } if *index > 0 || report.buffers > 0 => Ok(report.buffers),
        StopReason::Completed => Err(format!(
            "completed all {} buffers without failing",
            report.buffers
        )),
        other => Err(format!(
            "{} after {} buffers",
            other.summary(),
            report.buffers
        )),
    }
}

/// Judges one re-run against the count before the change and the count predicted.
pub fn judge(trial: &Trial, before: u64, outcome: Result<&Report, &String>) -> Experiment {
    let (observed, stop, verdict) = match outcome {
        Err(why) => (
            0,
            "did not run".to_owned(),
            ExperimentOutcome::DidNotRun { why: why.clone() },
        ),
        Ok(report) => {
            let stop = report.stop.summary();
            let verdict = match failing_count(report) {
                Ok(n) if trial.predicted.is_some_and(|p| near(n, p)) && !near(n, before) => {
                    ExperimentOutcome::AsPredicted
                }
                Ok(n) if near(n, before) => ExperimentOutcome::NotMoved,
                Ok(_) => ExperimentOutcome::MovedOtherwise,
                // Allowed past the prediction and never failed: it moved further.
                Err(_)
                    if matches!(report.stop, StopReason::Completed) && report.buffers > before =>
                {
                    ExperimentOutcome::MovedOtherwise
                }
                Err(why) => ExperimentOutcome::DidNotRun { why },
            };
            (report.buffers, stop, verdict)
        }
    };
    Experiment {
        change: trial.change.clone(),
        asked: trial.asked,
        predicted_count: trial.predicted,
        before_count: before,
        observed_count: observed,
        stop,
        outcome: verdict,
    }
}

/// A candidate's test from its experiments (the lowering first, the raising second
/// when there is one). Lowering shows the resource is *a* limit; raising shows it is
/// the one the run met: confirmed when the lowered run failed where predicted and the
/// raised run (where the hard limit allowed one) got past the old failure; refuted
/// when either stayed where the run failed before.
pub fn test_of(experiments: Vec<Experiment>) -> CandidateTest {
    let ran: Vec<&ExperimentOutcome> = experiments
        .iter()
        .map(|e| &e.outcome)
        .filter(|o| !matches!(o, ExperimentOutcome::DidNotRun { .. }))
        .collect();
    let moved_up =
        |e: &Experiment| e.change.to > e.change.from && e.observed_count > e.before_count;
    let raised_moved = experiments
        .iter()
        .skip(1)
        .all(|e| moved_up(e) || matches!(e.outcome, ExperimentOutcome::DidNotRun { .. }));
    if ran.contains(&&ExperimentOutcome::NotMoved) {
        CandidateTest::Refuted { experiments }
    } else if ran.first() == Some(&&ExperimentOutcome::AsPredicted) && raised_moved {
        CandidateTest::Confirmed { experiments }
    } else if !ran.is_empty() {
        CandidateTest::Inconclusive { experiments }
    } else {
        let reason = experiments.first().map_or_else(
            || "no experiment could run".to_owned(),
            |e| match &e.outcome {
                ExperimentOutcome::DidNotRun { why } => {
                    format!("the experiment could not run: {why}")
                }
                _ => String::new(),
            },
        );
        CandidateTest::NotTested {
            reason,
            command: None,
        }
    }
}

/// Tests every candidate of a failed report, then, when none is confirmed, asks
/// the shape questions; records it all in the report's analysis (candidates, cause,
/// shape, statements). A report that did not fail in its loop is left as it is.
pub fn investigate(report: &mut Report, runner: &mut dyn Runner) {
    if report.analysis.cause.is_none() {
        return;
    }
    let before = report.buffers;
    let mut candidates = report.analysis.candidates.clone();
    for candidate in &mut candidates {
        candidate.test = match plan(candidate, report) {
            Plan::NotTestable { reason, command } => CandidateTest::NotTested { reason, command },
            Plan::Trials(trials) => test_of(
                trials
                    .iter()
                    .map(|t| {
                        let run = runner.run(std::slice::from_ref(&t.change), t.asked);
                        judge(t, before, run.as_ref())
                    })
                    .collect(),
            ),
        };
    }
    let confirmed = candidates
        .iter()
        .any(|c| matches!(c.test, CandidateTest::Confirmed { .. }));
    let shape = if confirmed {
        Vec::new()
    } else {
        shape(report, runner)
    };
    report.analysis = conclusions(report, candidates, shape);
}

/// Rounds of the same run that [`second_round`] makes.
pub const ROUNDS: u64 = 4;

/// For a run whose readings stayed up after release: the same run in [`ROUNDS`]
/// rounds (release everything after each), to tell memory the runtime reuses (a
/// cache: the last round ends where the one before did) from memory it adds to (a
/// leak: each round adds about what the first kept). Two rounds are not enough: a
/// heap can grow in the second and settle after (measured on NEO 22.43). Recorded in
/// the report's leak check.
pub fn second_round(report: &mut Report, runner: &mut dyn Runner) {
    let n = report.buffers;
    if report.leak_check.not_returned.is_empty() || n == 0 {
        return;
    }
    let trial = Trial {
        change: Change {
            knob: Knob::ReleaseEvery,
            from: 0,
            to: n,
        },
        asked: ROUNDS * n,
        predicted: None,
    };
    let run = runner.run(std::slice::from_ref(&trial.change), trial.asked);
    let experiment = judge(&trial, n, run.as_ref());
    let readings = match &run {
        Ok(r) => round_readings(report, r),
        Err(_) => Vec::new(),
    };
    report.leak_check.second_round = Some(SecondRound {
        experiment,
        readings,
    });
    report.analysis = conclusions(
        report,
        report.analysis.candidates.clone(),
        report.analysis.shape.clone(),
    );
}

/// What each resource that stayed up read after each round of `rounds`.
fn round_readings(report: &Report, rounds: &Report) -> Vec<RoundReadings> {
    let mut released: Vec<&crate::report::Sample> = rounds
        .samples
        .iter()
        .filter(|s| s.live == Some(0) && s.allocations > 0)
        .collect();
    released.dedup_by_key(|s| s.allocations);
    let Some(start) = rounds.samples.first().filter(|_| released.len() >= 2) else {
        return Vec::new();
    };
    let host = &rounds.host_limits;
    report
        .leak_check
        .not_returned
        .iter()
        .filter_map(|n| {
            let read = |s: &crate::report::Sample| n.resource.reading(s, host);
            let before = read(start)?;
            let after_rounds: Vec<f64> = released.iter().map(|s| read(s)).collect::<Option<_>>()?;
            let first = after_rounds[0] - before;
            Some(RoundReadings {
                resource: n.resource.clone(),
                before,
                after_rounds,
                tolerance: crate::analysis::return_tolerance(n.resource.unit(), first),
            })
        })
        .collect()
}

/// Applies a change to a scenario (the Runner's first step); `Knob::Devices` sets
/// the count, and the runner adds what the runtime needs to expose more devices.
pub fn apply(scenario: &Scenario, change: &Change, count: u64) -> Result<Scenario, String> {
    let mut s = scenario.clone();
    s.allocation.count = Count::Fixed(count);
    match &change.knob {
        Knob::SoftLimit { limit } => {
            s.limits.soft.insert(*limit, change.to);
        }
        Knob::Env { key, unit } => {
            let value = match unit {
                EnvUnit::Size => format_size(change.to),
                EnvUnit::Gib => (change.to >> 30).to_string(),
                EnvUnit::Count => change.to.to_string(),
            };
            s.env.insert(key.clone(), value);
        }
        Knob::BufferSize => s.allocation.size_bytes = change.to,
        Knob::ReleaseEvery => s.allocation.release_every = Some(change.to),
        Knob::Contexts => s.context_count = change.to,
        Knob::Devices => match &s.devices.set {
            DeviceSet::Count(_) => s.devices.set = DeviceSet::Count(change.to as usize),
            DeviceSet::Indices(list) => {
                let mut list = list.clone();
                let next = (0..).find(|i| !list.contains(i)).unwrap_or(0);
                list.push(next);
                s.devices.set = DeviceSet::Indices(list);
            }
        },
    }
    s.name = format!("{} [{}]", scenario.name, crate::words::change(change));
    Ok(s)
}
