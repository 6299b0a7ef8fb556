//! The failing case re-run unchanged: where each run failed, and what that says of
//! the failure before anything is moved.

use serde::{Deserialize, Serialize};

/// The failing case re-run unchanged, each in a fresh process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replicates {
    /// Each run: the original first.
    pub runs: Vec<ReplicateRun>,
    /// How far apart two counts may be and still be the same failure.
    pub tolerance: u64,
    /// When every re-run fell short of the first: one more, after a wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_wait: Option<WaitedRun>,
}

/// A re-run made after waiting: whether time gave back what earlier runs used up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitedRun {
    /// How long it waited before it started, seconds.
    pub wait_seconds: f64,
    /// How it went.
    pub run: ReplicateRun,
}

/// Where one replicate failed, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicateRun {
    /// Buffers before it failed (or reached).
    pub count: u64,
    /// Seconds of its allocation loop at the failure.
    pub seconds: f64,
    /// Whether it failed (else it ended another way).
    pub failed: bool,
}

impl Replicates {
    /// The counts, in order.
    pub fn counts(&self) -> Vec<u64> {
        self.runs.iter().map(|r| r.count).collect()
    }

    /// The spread of the counts (largest minus smallest).
    pub fn spread(&self) -> u64 {
        let counts = self.counts();
        counts.iter().max().copied().unwrap_or(0) - counts.iter().min().copied().unwrap_or(0)
    }

    /// Whether every run failed within the tolerance of the others.
    pub fn agree(&self) -> bool {
        self.runs.iter().all(|r| r.failed) && self.spread() <= self.tolerance
    }

    /// What the runs say about the failure.
    pub fn reproduced(&self) -> Reproduced {
        let counts = self.counts();
        let Some((&first, rest)) = counts.split_first() else {
            return Reproduced::Yes;
        };
        // At once, again and again, where the original got going; or earlier and
        // earlier on a straight line over every run: something outside the process
        // remembers. (A random failure fails at once now and then, and falls three
        // times in a row one time in six: neither is enough.)
        let at_once = |r: &ReplicateRun| r.failed && r.count == 0;
        let stuck = first > self.tolerance
            && self.runs[1..].iter().filter(|r| at_once(r)).count() >= 2
            && self.runs.last().is_some_and(at_once);
        let falling = rest.len() >= 4
            && counts.windows(2).all(|w| w[1] + self.tolerance < w[0])
            && straight(&counts);
        if stuck || falling {
            return Reproduced::Persistent;
        }
        if self.agree() {
            return Reproduced::Yes;
        }
        if self.depleted() {
            return Reproduced::Depleted;
        }
        // The failures at one time; a run that did not fail ended before it.
        let mut seconds: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.failed)
            .map(|r| r.seconds)
            .collect();
        seconds.sort_by(f64::total_cmp);
        let Some(&median) = seconds.get(seconds.len() / 2) else {
            return Reproduced::No;
        };
        let spread = seconds[seconds.len() - 1] - seconds[0];
        let ended_before = self
            .runs
            .iter()
            .all(|r| r.failed || r.seconds <= median * (1.0 + crate::thresholds::TIME_SHARE));
        let long_enough = median >= crate::thresholds::MIN_TIME_LIMIT_SECONDS;
        let same_time =
            spread <= crate::thresholds::TIME_SHARE * median || jittered_time(&self.runs, median);
        if seconds.len() >= 2 && long_enough && same_time && ended_before {
            return Reproduced::Time { seconds: median };
        }
        Reproduced::No
    }

    /// How far a count may move and still be the same failure (see
    /// [`noise_slack`](crate::thresholds::noise_slack)).
    pub fn slack(&self) -> u64 {
        crate::thresholds::noise_slack(self.spread())
    }

    /// Whether every re-run failed well short of the first run while agreeing among
    /// themselves: the first used up something the later ones found gone.
    fn depleted(&self) -> bool {
        let Some((first, rest)) = self.runs.split_first() else {
            return false;
        };
        if rest.len() < 2 || !self.runs.iter().all(|r| r.failed) {
            return false;
        }
        let counts: Vec<u64> = rest.iter().map(|r| r.count).collect();
        let (low, high) = (
            counts.iter().min().copied().unwrap_or(0),
            counts.iter().max().copied().unwrap_or(0),
        );
        let together = high - low <= (3 * crate::thresholds::MIN_SLACK).max(high / 4);
        together && high.saturating_mul(2) + self.tolerance < first.count
    }

    /// Whether the re-runs fell: persistently, or all short of the first.
    pub fn fell(&self) -> bool {
        matches!(
            self.reproduced(),
            Reproduced::Persistent | Reproduced::Depleted
        ) || self.short_of_first()
    }

    /// Whether every re-run (two at least) failed at under half the first run's
    /// count, however they spread: the first may have used up what the later ones met.
    pub fn short_of_first(&self) -> bool {
        let Some((first, rest)) = self.runs.split_first() else {
            return false;
        };
        rest.len() >= 2
            && rest
                .iter()
                .all(|r| r.failed && r.count.saturating_mul(2) + self.tolerance < first.count)
    }

    /// Whether the run after the wait got well past the re-runs before it.
    pub fn recovered(&self) -> bool {
        let Some(waited) = &self.after_wait else {
            return false;
        };
        // Well past every re-run before it: time gave some back (all of it or not).
        let before = self.runs[1..].iter().map(|r| r.count).max().unwrap_or(0);
        waited.run.count > before + 3 * self.tolerance.max(crate::thresholds::MIN_SLACK)
    }
}

/// Whether counts fall on a straight line (R² of at least 0.9 against their order).
fn straight(counts: &[u64]) -> bool {
    let points: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .map(|(i, c)| (i as f64, *c as f64))
        .collect();
    crate::stats::straight(&points, 0.9)
}

/// What re-running the failing case unchanged showed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reproduced {
    /// Every run failed at the same count, within the tolerance.
    Yes,
    /// The counts spread beyond the tolerance, and so did the times.
    No,
    /// The counts spread, the times held: a limit on time.
    Time {
        /// The median time of the failures, seconds.
        seconds: f64,
    },
    /// Re-runs failed earlier and earlier, or at once.
    Persistent,
    /// Every re-run failed well short of the first, at about the same count: the
    /// first run used up something outside the process.
    Depleted,
}

/// Whether the failed runs' times are one time a loaded machine's scheduler moved:
/// within [`TIME_JITTER_SECONDS`](crate::thresholds::TIME_JITTER_SECONDS) while their
/// counts spread at least twice as far (a random failure spreads both alike). With
/// four failures or more, the one furthest from the `median` time is left out: one
/// run the scheduler held back 10 ms (seen beside two busy loops on 2 cores) must not
/// hide the others' agreement; the rule itself still compares counts with times.
fn jittered_time(runs: &[ReplicateRun], median: f64) -> bool {
    let mut failed: Vec<&ReplicateRun> = runs.iter().filter(|r| r.failed).collect();
    if failed.len() >= 4 {
        let furthest = (0..failed.len()).max_by(|&a, &b| {
            let off = |i: usize| (failed[i].seconds - median).abs();
            off(a).total_cmp(&off(b))
        });
        if let Some(i) = furthest {
            failed.remove(i);
        }
    }
    let (Some(lo), Some(hi)) = (
        failed.iter().map(|r| r.seconds).min_by(f64::total_cmp),
        failed.iter().map(|r| r.seconds).max_by(f64::total_cmp),
    ) else {
        return false;
    };
    let spread = hi - lo;
    let counts_share = match (
        failed.iter().map(|r| r.count).min(),
        failed.iter().map(|r| r.count).max(),
    ) {
        (Some(lo), Some(hi)) if hi > 0 => (hi - lo) as f64 / hi as f64,
        _ => 0.0,
    };
    spread <= crate::thresholds::TIME_JITTER_SECONDS && counts_share >= 2.0 * spread / median
}
