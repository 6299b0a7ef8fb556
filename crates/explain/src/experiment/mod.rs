//! Experiments: a cause is what moved when its limit was moved.
//!
//! First the failing case is re-run unchanged ([`replicate`]): counts that spread
//! make the failure *not reproducible*, times that hold while counts spread make it
//! *a time limit*, re-runs that fail earlier and earlier make it *persistent*; in
//! each case nothing more is judged. Otherwise the replicates' spread is the noise
//! ([`Noise`]) every later count is judged against.
//!
//! Then each candidate ([`analysis::candidates`](crate::analysis::candidates)) whose
//! limit the process can move is re-run with the limit lowered and raised. It is
//! *confirmed* when lowering lands where its line predicts (within [`MOVED_SHARE`](crate::thresholds::MOVED_SHARE) or
//! the noise) *and* raising lets the run go further (a second limit may stop it
//! short of the prediction: that is said); *consistent* when only lowering could be
//! tried; *refuted* when either did not move; *inconclusive* when lowering moved
//! elsewhere; *not tested* (with why, and the command a person could run) when the
//! limit cannot be moved. A confirmed cause on several devices is re-run with one
//! more device: per peer or not. When none is confirmed, more re-runs find the
//! *shape* of the unseen limit: time or count (a pause after each buffer), buffers or
//! bytes, live or cumulative, per context or per process, per peer.
//!
//! The reasoning here plans and judges; a [`Runner`] runs each changed case in a
//! fresh process (the CLI's child harness; a table of reports in tests).

use crate::analysis::conclusions;
use crate::report::{Report, StopReason};
use crate::resource::Resource;
use crate::thresholds::MOVED_SHARE;
use crate::verdict::{
    Candidate, CandidateTest, Change, EnvUnit, Experiment, ExperimentOutcome, Knob, LimitMet,
};
use clmulti_contract::layer::{DEVICE_MEMORY, MIRROR_LIMIT};
use clmulti_scenario::{format_size, Count, DeviceSet, Scenario};

mod replicate;
mod rounds;
mod shape;
pub use replicate::{replicate, Noise};
pub use rounds::{second_round, ROUNDS};
pub use shape::shape;

/// The most buffers an experiment may ask for.
pub const MAX_EXPERIMENT_BUFFERS: u64 = 1_000_000;
/// PoCL reads its device memory size, in whole GiB, from this variable.
pub const POCL_MEMORY_LIMIT: &str = "POCL_MEMORY_LIMIT";

/// Runs the failing case again with things moved.
pub trait Runner {
    /// Runs the case with `changes` applied, allowed `count` buffers, in a fresh
    /// process; `Err` says why it could not run.
    fn run(&mut self, changes: &[Change], count: u64) -> Result<Report, NotRun>;
}

/// Why a re-run was not made (or cannot be judged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRun {
    /// A signal asked the caller to stop: no further run, and none stopped part way
    /// is judged.
    #[error("not run: stopped by {}", clmulti_contract::signal_name(*.0))]
    Stopped(i32),
    /// The run could not be made: why.
    #[error("{0}")]
    Failed(String),
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
    /// Re-run with these changes, the first one lowering the limit, the second (when
    /// there is one) raising it.
    Trials {
        /// The re-runs.
        trials: Vec<Trial>,
        /// Why the limit could not be raised, when it could not.
        one_sided: Option<String>,
    },
    /// It cannot be moved from here.
    NotTestable {
        /// Why.
        reason: String,
        /// The command a person could run to move it (clmulti never runs it).
        command: Option<String>,
    },
}

/// Whether `count` is where `expected` said: within [`MOVED_SHARE`] of it, or the
/// noise.
pub fn near(count: u64, expected: u64, noise: Noise) -> bool {
    let slack = ((expected as f64 * MOVED_SHARE).round() as u64).max(noise.slack());
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
    let pocl = clmulti_probe::is_pocl(&report.platform);
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
    let mut one_sided = None;
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
    match raise_to(candidate, report, &knob) {
        Ok(raised) => {
            let predicted = predicted_at(candidate, raised);
            match predicted.filter(|p| allowance(*p) < MAX_EXPERIMENT_BUFFERS) {
                Some(p) => trials.push(Trial {
                    change: Change {
                        knob: knob.clone(),
                        from,
                        to: raised as u64,
                    },
                    asked: allowance(p),
                    predicted: Some(p),
                }),
                None => {
                    one_sided = Some(format!(
                        "only lowering could be tried: a limit, not shown to be the one met; raised, it would take more than {MAX_EXPERIMENT_BUFFERS} buffers"
                    ))
                }
            }
        }
        Err(why) => {
            one_sided = Some(format!(
                "only lowering could be tried: a limit, not shown to be the one met; {why}"
            ))
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
    Plan::Trials { trials, one_sided }
}

/// Where a candidate's limit is raised to (twice its growth room), or why it cannot
/// be: a soft limit up to the hard one (past it where the process may raise that, as
/// root with CAP_SYS_RESOURCE), a size the runtime reads while the machine has
/// the memory.
fn raise_to(candidate: &Candidate, report: &Report, knob: &Knob) -> Result<f64, String> {
    let limit = candidate.limit.value;
    let doubled = candidate.baseline + (limit - candidate.baseline) * 2.0;
    match knob {
        Knob::SoftLimit { limit: which } => {
            let host = &report.host_limits;
            let ceiling = host.raisable(*which).map_or(f64::MAX, |h| h as f64);
            let raised = doubled.min(ceiling);
            if raised > limit + candidate.per_buffer.max(1.0) {
                return Ok(raised);
            }
            let who = if host.root {
                "root without CAP_SYS_RESOURCE (a container or sandbox dropped it) may not raise the hard one"
            } else {
                "this process may not raise the hard one (that takes root)"
            };
            Err(format!(
                "the soft {} is at its hard limit ({}) and {who}",
                which.name(),
                ceiling as u64
            ))
        }
        Knob::Env { key, .. } => {
            let ram = report.host_limits.ram_bytes.unwrap_or(0) as f64;
            if doubled <= ram / 4.0 {
                Ok(doubled)
            } else {
                Err(format!(
                    "raising {key} to {} would take more than a quarter of this machine's memory",
                    format_size(doubled as u64)
                ))
            }
        }
        _ => Err("nothing raises it".into()),
    }
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

/// Judges one re-run against the count before the change, the count predicted, and
/// the noise: a count within the noise of `before` has not moved, one beyond it
/// under a raised limit has moved up, however far short of the prediction.
pub fn judge(
    trial: &Trial,
    before: u64,
    noise: Noise,
    outcome: Result<&Report, &NotRun>,
) -> Experiment {
    let (observed, seconds, stop, verdict) = match outcome {
        Err(why) => (
            0,
            None,
            "did not run".to_owned(),
            ExperimentOutcome::DidNotRun {
                why: why.to_string(),
            },
        ),
        Ok(report) => {
            let stop = report.stop.summary();
            let moved = |n: u64| !noise.same(n, before);
            let at_once = matches!(report.stop, StopReason::Failed { .. }) && report.buffers == 0;
            let verdict = match failing_count(report) {
                _ if at_once => ExperimentOutcome::FailedAtOnce,
                Ok(n) if trial.predicted.is_some_and(|p| near(n, p, noise)) && moved(n) => {
                    ExperimentOutcome::AsPredicted
                }
                Ok(n) if !moved(n) => ExperimentOutcome::NotMoved,
                Ok(n) if trial.change.raises() && n > before => ExperimentOutcome::MovedUp,
                Ok(_) => ExperimentOutcome::MovedOtherwise,
                // Allowed past the prediction and never failed: it moved further.
                Err(_) if matches!(report.stop, StopReason::Completed) && moved(report.buffers) => {
                    if trial.change.raises() {
                        ExperimentOutcome::MovedUp
                    } else {
                        ExperimentOutcome::MovedOtherwise
                    }
                }
                Err(why) => ExperimentOutcome::DidNotRun { why },
            };
            (report.buffers, Some(report.elapsed_seconds), stop, verdict)
        }
    };
    let run = outcome.ok();
    Experiment {
        change: trial.change.clone(),
        asked: trial.asked,
        predicted_count: trial.predicted,
        before_count: before,
        observed_count: observed,
        stop,
        observed_seconds: seconds,
        outcome: verdict,
        met: run.and_then(LimitMet::of),
        failing_errno: run.and_then(crate::cause::failing_errno),
    }
}

/// A candidate's test from its experiments (the lowering first, the raising second
/// when there is one). Lowering shows the resource is *a* limit; raising shows it is
/// the one the run met. Confirmed: the lowered run failed where predicted and the
/// raised one went further (where it failed short of its prediction, a second limit
/// stopped it: how many buffers past the old failure is kept). Consistent: lowering
/// as predicted, raising impossible (`one_sided` says why) or not run. Refuted:
/// either stayed where the run failed before.
pub fn test_of(
    resource: &Resource,
    experiments: Vec<Experiment>,
    one_sided: Option<String>,
    failing_call: Option<&str>,
) -> CandidateTest {
    let ran: Vec<&Experiment> = experiments
        .iter()
        .filter(|e| !matches!(e.outcome, ExperimentOutcome::DidNotRun { .. }))
        .collect();
    let lowered = experiments.first().map(|e| &e.outcome);
    let raised = experiments.get(1);
    // Raised, it stayed within the noise, but the call that failed is the one this
    // limit fails: another limit sits right behind it, not a refutation.
    if let (Some(ExperimentOutcome::AsPredicted), Some(r), Some(errno)) =
        (lowered, raised, failing_call)
    {
        if r.outcome == ExperimentOutcome::NotMoved {
            let why = format!(
                "raising it moved the failure {} buffers, no further than the replicates' noise, while the failing call ({errno}) is the one this limit fails: another limit sits within the noise behind it",
                r.observed_count as i64 - r.before_count as i64
            );
            return CandidateTest::Consistent { experiments, why };
        }
    }
    if ran.iter().any(|e| e.outcome == ExperimentOutcome::NotMoved) {
        return CandidateTest::Refuted { experiments };
    }
    if lowered == Some(&ExperimentOutcome::AsPredicted) {
        let Some(raised) = raised else {
            let why = one_sided.unwrap_or_else(|| "the limit could not be raised".into());
            return CandidateTest::Consistent { experiments, why };
        };
        let second_limit_after = match &raised.outcome {
            ExperimentOutcome::AsPredicted => None,
            // Short of its allowance, it failed: at this limit again (its own readings
            // show it there, at the raised value), or at a second one.
            ExperimentOutcome::MovedUp => (raised.observed_count < raised.asked
                && raised.met.as_ref().is_none_or(|m| &m.resource != resource))
            .then(|| raised.observed_count.saturating_sub(raised.before_count)),
            // It could not run at all (a signal, a refused change): one side only.
            ExperimentOutcome::DidNotRun { why } => {
                let why = format!("the raised run could not run: {why}");
                return CandidateTest::Consistent { experiments, why };
            }
            // It ran and failed at once, or moved elsewhere: evidence, not a side missing.
            _ => return CandidateTest::Inconclusive { experiments },
        };
        return CandidateTest::Confirmed {
            experiments,
            second_limit_after,
        };
    }
    if !ran.is_empty() {
        return CandidateTest::Inconclusive { experiments };
    }
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

/// Re-runs the failing case unchanged, then (when it reproduces) tests every
/// candidate, asks whether a confirmed cause is per peer, and, when none is
/// confirmed, asks the shape questions; records it all in the report's analysis
/// (replicates, candidates, cause, shape, statements). A report that did not fail
/// in its loop is left as it is.
pub fn investigate(report: &mut Report, runner: &mut dyn Runner) {
    if report.analysis.cause.is_none() {
        return;
    }
    let replicates = replicate(report, runner);
    let steady = replicates.reproduced() == crate::verdict::Reproduced::Yes;
    let noise = Noise::of(&replicates);
    report.analysis.replicates = Some(replicates);
    // What failed inside a failure that holds still, seen by an observer of every call.
    report.analysis.observed = steady.then(|| observe(report, runner)).flatten();
    let mut candidates = report.analysis.candidates.clone();
    if !steady {
        for candidate in &mut candidates {
            candidate.test = CandidateTest::NotTested {
                reason:
                    "the failure does not hold still when re-run unchanged (see the replicates)"
                        .into(),
                command: None,
            };
        }
        report.analysis = conclusions(report, candidates, Vec::new());
        return;
    }
    let before = report.buffers;
    for candidate in &mut candidates {
        candidate.test = match plan(candidate, report) {
            Plan::NotTestable { reason, command } => CandidateTest::NotTested { reason, command },
            Plan::Trials { trials, one_sided } => test_of(
                &candidate.resource,
                trials
                    .iter()
                    .map(|t| {
                        let run = runner.run(std::slice::from_ref(&t.change), t.asked);
                        judge(t, before, noise, run.as_ref())
                    })
                    .collect(),
                one_sided,
                crate::cause::failing_errno_of(&candidate.resource, report),
            ),
        };
    }
    // A cause the claim settles on (moved both ways, or one way with the failing call
    // naming it) needs no shape: only how it depends on the devices, by its own cost.
    let claim = crate::cause::cause_claim(report, &candidates);
    let settled = claim.settled().and_then(|a| {
        candidates
            .iter()
            .find(|c| crate::cause::resource_key(&c.resource) == a.key)
    });
    let shape = match settled {
        Some(c) => shape::per_peer(report, runner, noise, &c.resource),
        None => shape(report, runner, noise),
    };
    report.analysis = conclusions(report, candidates, shape);
}

/// A replicate watched by a system-call observer, when the libc tracer saw no call
/// fail inside the failing call (or did not run): what failed that it cannot see.
fn observe(report: &Report, runner: &mut dyn Runner) -> Option<crate::verdict::ObservedRun> {
    let seen = report
        .traced
        .as_ref()
        .is_some_and(|t| !t.failing_calls.is_empty());
    if seen {
        return None;
    }
    let change = Change {
        knob: Knob::Observe,
        from: 0,
        to: 1,
    };
    let asked = allowance(report.buffers.saturating_mul(2));
    let run = runner.run(std::slice::from_ref(&change), asked).ok()?;
    let calls = run.observed_calls.clone()?;
    Some(crate::verdict::ObservedRun {
        count: run.buffers,
        seconds: run.elapsed_seconds,
        watched_failure: matches!(run.stop, StopReason::Failed { .. }),
        stop: run.stop.summary(),
        failed_calls: calls,
    })
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
        // What the runner does around the run, not the scenario.
        Knob::Replicate | Knob::Wait | Knob::Sibling { .. } | Knob::Observe => {}
        Knob::Pause => s.allocation.pause_us = change.to,
        Knob::ReleasePause => s.allocation.release_pause_us = change.to,
        Knob::OnlyDevice => {
            let index = match &s.devices.set {
                DeviceSet::Count(_) => change.to as usize,
                DeviceSet::Indices(list) => *list
                    .get(change.to as usize)
                    .ok_or_else(|| format!("the run has no device {} of its own", change.to))?,
            };
            s.devices.set = DeviceSet::Indices(vec![index]);
        }
        Knob::Devices => match &s.devices.set {
            DeviceSet::Count(_) => s.devices.set = DeviceSet::Count(change.to as usize),
            DeviceSet::Indices(list) => {
                let mut list = list.clone();
                list.truncate(change.to as usize);
                while list.len() < change.to as usize {
                    list.push((0..).find(|i| !list.contains(i)).unwrap_or(0));
                }
                s.devices.set = DeviceSet::Indices(list);
            }
        },
    }
    s.name = format!("{} [{}]", scenario.name, crate::words::change(change));
    Ok(s)
}
