//! The failing case again, unchanged: whether it reproduces, and how much its count
//! moves on its own (the noise every experiment is judged against).

use super::{allowance, Runner};
use crate::report::{Report, StopReason};
use crate::thresholds::{noise_slack, MIN_SLACK, REPLICATE_SHARE};
use crate::verdict::{Change, Knob, ReplicateRun, Replicates, Reproduced};

/// Replicates run first; as many again when they disagree.
pub const REPLICATES: u64 = 2;

/// How far a count moves on its own: from the replicates' spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Noise {
    spread: u64,
}

impl Noise {
    /// The noise of a set of replicates.
    pub fn of(replicates: &Replicates) -> Noise {
        Noise {
            spread: replicates.spread(),
        }
    }

    /// Buffers within which a count is the same count.
    pub fn slack(self) -> u64 {
        noise_slack(self.spread)
    }

    /// Whether two counts are the same within the noise.
    pub fn same(self, a: u64, b: u64) -> bool {
        a.abs_diff(b) <= self.slack()
    }
}

/// Re-runs the failing case of `report` unchanged, each in a fresh process:
/// [`REPLICATES`] times, and as many again when they disagree (and do not already
/// fall run after run, a limit kept outside the process).
pub fn replicate(report: &Report, runner: &mut dyn Runner) -> Replicates {
    let count = report.buffers;
    let mut replicates = Replicates {
        runs: vec![ReplicateRun {
            count,
            seconds: report.elapsed_seconds,
            failed: true,
        }],
        tolerance: ((count as f64 * REPLICATE_SHARE).round() as u64).max(MIN_SLACK),
    };
    // The case as it ran: its own count, or room to fail twice as late when it ran
    // until failure (a replicate that completes says the failure moved).
    let asked = match report.scenario.allocation.count {
        clmulti_scenario::Count::Fixed(n) => n,
        clmulti_scenario::Count::UntilFailure => allowance(count.saturating_mul(2)),
    };
    let mut next = 1;
    for batch in [REPLICATES, REPLICATES] {
        for _ in 0..batch {
            let change = Change {
                knob: Knob::Replicate,
                from: 0,
                to: next,
            };
            next += 1;
            // One that could not run (stopped by a signal) is no replicate.
            let Ok(run) = runner.run(std::slice::from_ref(&change), asked) else {
                return replicates;
            };
            replicates.runs.push(ReplicateRun {
                count: run.buffers,
                seconds: run.elapsed_seconds,
                failed: matches!(run.stop, StopReason::Failed { .. }),
            });
        }
        if matches!(
            replicates.reproduced(),
            Reproduced::Yes | Reproduced::Persistent
        ) {
            break;
        }
    }
    replicates
}
