//! The shape of a limit no reading explains: time or count, buffers or bytes, live
//! or cumulative, per context or per process, per peer; one re-run each.

use super::*;
use crate::thresholds::TIME_HELD;

/// The shape questions, each run as the failing case with one thing moved. Time is
/// asked first: a failure that follows time answers every other question wrongly,
/// so they are not asked.
pub fn shape(report: &Report, runner: &mut dyn Runner, noise: Noise) -> Vec<ShapeFinding> {
    let mut findings = Vec::new();
    for (question, trial, not_tested) in shape_trials(report) {
        let timed = findings
            .iter()
            .any(|f: &ShapeFinding| f.answer == Some(ShapeAnswer::Time));
        if timed {
            findings.push(unasked(question, "the failure follows time, not buffers"));
            continue;
        }
        findings.push(match trial {
            Some(trial) => ask(report, runner, noise, question, &trial),
            None => unasked(question, not_tested),
        });
    }
    findings
}

/// For a confirmed cause on several devices: does its growth per buffer rise with one
/// more peer (one more device in the context)? Judged by the cause's own cost in the
/// re-run, which meets the same limit sooner when it is per peer.
pub fn per_peer(
    report: &Report,
    runner: &mut dyn Runner,
    noise: Noise,
    cause: &Resource,
) -> Vec<ShapeFinding> {
    let Some((question, Some(trial), _)) = shape_trials(report)
        .into_iter()
        .find(|(q, _, _)| *q == ShapeQuestion::PerPeer)
    else {
        return Vec::new();
    };
    let run = runner.run(std::slice::from_ref(&trial.change), trial.asked);
    let experiment = judge(&trial, report.buffers, noise, run.as_ref());
    let cost = |r: &Report| {
        r.costs
            .iter()
            .find(|c| &c.resource == cause && !c.estimated)
            .map(|c| c.per_buffer)
    };
    let (peers_before, peers_after) = (trial.change.from - 1, trial.change.to - 1);
    let answer = match (cost(report), run.as_ref().ok().and_then(cost)) {
        (Some(before), Some(after)) if before > 0.0 => {
            let ratio = after / before;
            let per_peer = peers_after as f64 / peers_before.max(1) as f64;
            if (ratio - per_peer).abs() <= 0.15 * per_peer {
                Some(ShapeAnswer::PerPeer)
            } else if (ratio - 1.0).abs() <= 0.15 {
                Some(ShapeAnswer::NotPerPeer)
            } else {
                Some(ShapeAnswer::Neither)
            }
        }
        _ => None,
    };
    vec![ShapeFinding {
        question,
        answer,
        experiments: vec![experiment],
        not_tested: None,
        met_other_limit: None,
    }]
}

fn unasked(question: ShapeQuestion, why: &str) -> ShapeFinding {
    ShapeFinding {
        question,
        answer: None,
        experiments: Vec::new(),
        not_tested: Some(why.to_owned()),
        met_other_limit: None,
    }
}

/// One shape question's re-run, judged.
fn ask(
    report: &Report,
    runner: &mut dyn Runner,
    noise: Noise,
    question: ShapeQuestion,
    trial: &Trial,
) -> ShapeFinding {
    let n = report.buffers;
    {
        {
            let run = runner.run(std::slice::from_ref(&trial.change), trial.asked);
            let experiment = judge(trial, n, noise, run.as_ref());
            // A re-run whose failure moved to a limit it measured (more devices, more
            // descriptors per buffer) answers for that limit, not for the one under
            // study. One that failed where the run did met the same limit as the run.
            let met_other_limit = run.as_ref().ok().and_then(|r| {
                if failing_count(r).is_ok_and(|m| noise.same(m, n)) {
                    return None;
                }
                let c = r.analysis.candidates.first()?;
                Some(format!(
                    "{} at {} ({} of {})",
                    c.resource.label(),
                    c.limit.name,
                    c.resource.unit().format(c.reading),
                    c.resource.unit().format(c.limit.value)
                ))
            });
            let answer = match (&met_other_limit, run) {
                (None, Ok(r)) => answer(question, trial, report, noise, &r),
                _ => None,
            };
            ShapeFinding {
                question,
                answer,
                experiments: vec![experiment],
                not_tested: None,
                met_other_limit,
            }
        }
    }
}

/// Each shape question's re-run, or why it cannot be made here.
fn shape_trials(report: &Report) -> [(ShapeQuestion, Option<Trial>, &'static str); 5] {
    let n = report.buffers;
    let scenario = &report.scenario;
    let size = scenario.allocation.size_bytes;
    let max_alloc = report
        .devices
        .iter()
        .filter_map(|d| d.max_alloc_bytes.value().copied())
        .min()
        .unwrap_or(u64::MAX);
    let devices = report.devices.len().max(scenario.devices.set.len()) as u64;
    let other_size = size
        .checked_mul(2)
        .filter(|s| *s <= max_alloc)
        .or((size >= 2).then_some(size / 2));
    let trial = |knob: Knob, from: u64, to: u64, asked: u64| Trial {
        change: Change { knob, from, to },
        asked,
        predicted: None,
    };
    // As long again per buffer: a time limit then fails at about half the count.
    let pause_us = (report.elapsed_seconds * 1e6 / n.max(1) as f64).ceil() as u64;
    [
        (
            ShapeQuestion::TimeOrCount,
            (n >= 2).then(|| trial(Knob::Pause, 0, pause_us.max(1), allowance(n))),
            "the run failed before its second buffer",
        ),
        (
            ShapeQuestion::CountOrBytes,
            // Room for both answers: the same count, or the same bytes.
            other_size.map(|to| {
                trial(
                    Knob::BufferSize,
                    size,
                    to,
                    allowance(n.max(n.saturating_mul(size) / to)),
                )
            }),
            "no other buffer size fits the devices' largest allocation",
        ),
        (
            ShapeQuestion::LiveOrCumulative,
            (n >= 2).then(|| {
                trial(
                    Knob::ReleaseEvery,
                    0,
                    n / 2,
                    (2 * n + 10).min(MAX_EXPERIMENT_BUFFERS),
                )
            }),
            "the run failed before its second buffer",
        ),
        (
            ShapeQuestion::PerContextOrProcess,
            (scenario.context_mode == ContextMode::Shared).then(|| {
                let c = scenario.context_count;
                trial(Knob::Contexts, c, c * 2, allowance(2 * n))
            }),
            "the run made one context per device; the question needs shared contexts",
        ),
        (
            ShapeQuestion::PerPeer,
            (devices >= 2).then(|| trial(Knob::Devices, devices, devices + 1, allowance(n))),
            "a single device has no peers",
        ),
    ]
}

/// What one shape run says, from its failing (or completed) count.
fn answer(
    question: ShapeQuestion,
    trial: &Trial,
    original: &Report,
    noise: Noise,
    report: &Report,
) -> Option<ShapeAnswer> {
    let n = original.buffers;
    let failed = failing_count(report).ok();
    let reached = report.buffers;
    let near = |count: u64, expected: u64| near(count, expected, noise);
    Some(match question {
        ShapeQuestion::TimeOrCount => {
            let m = failed?;
            let (before, after) = (original.elapsed_seconds, report.elapsed_seconds);
            let same_time = (after - before).abs() <= TIME_HELD * before;
            if noise.same(m, n) && after > before * (1.0 + TIME_HELD) {
                ShapeAnswer::Count
            } else if same_time && m + noise.slack() < n {
                ShapeAnswer::Time
            } else {
                ShapeAnswer::Neither
            }
        }
        ShapeQuestion::CountOrBytes => {
            let m = failed?;
            let bytes_expected = n.saturating_mul(trial.change.from) / trial.change.to;
            if near(m, n) {
                ShapeAnswer::Buffers
            } else if near(m, bytes_expected) {
                ShapeAnswer::Bytes
            } else {
                ShapeAnswer::Neither
            }
        }
        ShapeQuestion::LiveOrCumulative => match failed {
            Some(m) if near(m, n) => ShapeAnswer::Cumulative,
            None | Some(_) if reached >= n + n / 2 => ShapeAnswer::Live,
            _ => ShapeAnswer::Neither,
        },
        ShapeQuestion::PerContextOrProcess => match failed {
            Some(m) if near(m, n) => ShapeAnswer::PerProcess,
            Some(m) if near(m, 2 * n) => ShapeAnswer::PerContext,
            _ => ShapeAnswer::Neither,
        },
        ShapeQuestion::PerPeer => {
            let m = failed?;
            // As many peers before as after: nothing to tell.
            if trial.change.from < 2 {
                return None;
            }
            let (peers_before, peers_after) = (trial.change.from - 1, trial.change.to - 1);
            let per_peer = n.saturating_mul(peers_before) / peers_after.max(1);
            if near(m, n) {
                ShapeAnswer::NotPerPeer
            } else if near(m, per_peer) {
                ShapeAnswer::PerPeer
            } else {
                ShapeAnswer::Neither
            }
        }
    })
}
