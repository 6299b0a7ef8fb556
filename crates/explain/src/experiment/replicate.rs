//! The failing case again, unchanged: whether it reproduces, and how much its count
//! moves on its own (the noise every experiment is judged against). Re-runs that all
//! fall short of the first run are run once more after a wait: something outside the
//! process that time restores, or that stays used up.

use super::{allowance, Runner};
use crate::report::{Report, StopReason};
use crate::thresholds::{noise_slack, MIN_SLACK, REPLICATE_SHARE};
use crate::verdict::{Change, Knob, ReplicateRun, Replicates, Reproduced, WaitedRun};

/// Replicates run first; as many again when they disagree.
pub const REPLICATES: u64 = 2;
/// How long the re-run after re-runs that fell waits, milliseconds.
pub const WAIT_MS: u64 = 2000;

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
/// fall run after run); when every re-run fell short of the first, once more after
/// [`WAIT_MS`].
pub fn replicate(report: &Report, runner: &mut dyn Runner) -> Replicates {
    let count = report.buffers;
    let mut replicates = Replicates {
        runs: vec![ReplicateRun {
            count,
            seconds: report.elapsed_seconds,
            failed: true,
        }],
        tolerance: ((count as f64 * REPLICATE_SHARE).round() as u64).max(MIN_SLACK),
        after_wait: None,
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
            replicates.runs.push(replicate_run(&run));
        }
        if matches!(
            replicates.reproduced(),
            Reproduced::Yes | Reproduced::Persistent
        ) {
            break;
        }
    }
    if replicates.fell() {
        let wait = [
            Change {
                knob: Knob::Wait,
                from: 0,
                to: WAIT_MS,
            },
            Change {
                knob: Knob::Replicate,
                from: 0,
                to: next,
            },
        ];
        if let Ok(run) = runner.run(&wait, asked) {
            replicates.after_wait = Some(WaitedRun {
                wait_seconds: WAIT_MS as f64 / 1000.0,
                run: replicate_run(&run),
            });
        }
    }
    replicates
}

fn replicate_run(run: &Report) -> ReplicateRun {
    ReplicateRun {
        count: run.buffers,
        seconds: run.elapsed_seconds,
        failed: matches!(run.stop, StopReason::Failed { .. }),
    }
}
