//! The shape of a limit no reading explains: buffers or bytes, live or cumulative,
//! per context or per process, per peer; one re-run each.

use super::*;

/// The shape questions, each run as the failing case with one thing moved.
pub fn shape(report: &Report, runner: &mut dyn Runner) -> Vec<ShapeFinding> {
    let n = report.buffers;
    shape_trials(report)
        .into_iter()
        .map(|(question, trial, not_tested)| {
            let Some(trial) = trial else {
                return ShapeFinding {
                    question,
                    answer: None,
                    experiments: Vec::new(),
                    not_tested: Some(not_tested.to_owned()),
                    met_other_limit: None,
                };
            };
            let run = runner.run(std::slice::from_ref(&trial.change), trial.asked);
            let experiment = judge(&trial, n, run.as_ref());
            // A re-run whose failure moved to a limit it measured (more devices, more
            // descriptors per buffer) answers for that limit, not for the one under
            // study. One that failed where the run did met the same limit as the run.
            let met_other_limit = run.as_ref().ok().and_then(|r| {
                if failing_count(r).is_ok_and(|m| near(m, n)) {
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
                (None, Ok(r)) => answer(question, &trial, n, &r),
                _ => None,
            };
            ShapeFinding {
                question,
                answer,
                experiments: vec![experiment],
                not_tested: None,
                met_other_limit,
            }
        })
        .collect()
}

/// Each shape question's re-run, or why it cannot be made here.
fn shape_trials(report: &Report) -> [(ShapeQuestion, Option<Trial>, &'static str); 4] {
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
    [
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
fn answer(question: ShapeQuestion, trial: &Trial, n: u64, report: &Report) -> Option<ShapeAnswer> {
    let failed = failing_count(report).ok();
    let reached = report.buffers;
    Some(match question {
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
