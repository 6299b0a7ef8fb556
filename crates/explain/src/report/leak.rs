//! What came back after release: objects released, readings that stayed up, and the
//! rounds that tell a cache from a leak.

use crate::resource::Resource;
use crate::sample::Sample;
use clmulti_probe::ProcessUsage;
use serde::{Deserialize, Serialize};

/// Objects created versus released, and the host after release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LeakCheck {
    /// Buffers (and sub-buffers) created.
    pub buffers_created: u64,
    /// Buffers (and sub-buffers) released without error.
    pub buffers_released: u64,
    /// Pool buffers created.
    pub pools_created: u64,
    /// Pool buffers released.
    pub pools_released: u64,
    /// Command queues created.
    pub queues_created: u64,
    /// Command queues released.
    pub queues_released: u64,
    /// Contexts created.
    pub contexts_created: u64,
    /// Contexts released.
    pub contexts_released: u64,
    /// Release calls that failed, with their errors.
    pub release_errors: Vec<String>,
    /// Host readings before the first buffer.
    pub before: ProcessUsage,
    /// Host readings after everything was released.
    pub after_release: ProcessUsage,
    /// Host readings after that, once `malloc_trim(0)` ran: what the C library kept
    /// of freed heap comes back here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_trim: Option<ProcessUsage>,
    /// Every reading after everything was released (set against the first sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_release_sample: Option<Sample>,
    /// Resources that grew during the run and did not come back after release.
    #[serde(default)]
    pub not_returned: Vec<NotReturned>,
    /// For those, a re-run of two rounds (allocate, release all, allocate again,
    /// release all): whether the second round reused what the first kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_round: Option<SecondRound>,
    /// True when every object was released without error and every reading came
    /// back within its tolerance.
    pub clean: bool,
}

impl LeakCheck {
    /// Whether every object created was released without an error.
    pub fn objects_released(&self) -> bool {
        self.release_errors.is_empty()
            && self.buffers_released == self.buffers_created
            && self.pools_released == self.pools_created
            && self.queues_released == self.queues_created
            && self.contexts_released == self.contexts_created
    }
}

/// The same run in several rounds (allocate, release everything, again): what each
/// resource that did not come back read after each round's release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondRound {
    /// The re-run.
    pub experiment: crate::verdict::Experiment,
    /// Each resource that did not come back (and the C library's heap), after each
    /// round.
    pub readings: Vec<RoundReadings>,
    /// The same rounds with one device, for a run over several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Box<RoundsControl>>,
}

/// The rounds again without the suspect (one device): what happens anyway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundsControl {
    /// The re-run.
    pub experiment: crate::verdict::Experiment,
    /// The same resources, after each round.
    pub readings: Vec<RoundReadings>,
}

/// One resource over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundReadings {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Before the first buffer.
    pub before: f64,
    /// After each round's release, in order.
    pub after_rounds: Vec<f64>,
    /// What one round may add and still be noise.
    pub tolerance: f64,
}

/// The fewest rounds whose increments are judged.
pub const MIN_ROUNDS: usize = 4;

/// What the rounds say about memory kept after release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kept {
    /// No growth that repeats: what one round kept, later rounds reuse (a cache),
    /// however much single rounds swing.
    Reused,
    /// Growth that neither repeats every round nor stops, never giving back: a cache
    /// still filling, or a leak slowing.
    Settling,
    /// Fewer than [`MIN_ROUNDS`] rounds ran (the rounds run stopped early): too few
    /// increments to tell.
    TooFew,
    /// Every round (all but one at most, and at least two) adds beyond the noise,
    /// and the last still adds half the usual: a leak, however small against one
    /// round's total.
    Leak,
}

impl RoundReadings {
    /// What each round added to the one before (from the second round on).
    pub fn increments(&self) -> Vec<f64> {
        self.after_rounds.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// What the rounds say, from the increments against the tolerance.
    pub fn kept(&self) -> Kept {
        if self.after_rounds.len() < MIN_ROUNDS {
            return Kept::TooFew;
        }
        let increments = self.increments();
        let tolerance = self.tolerance;
        let adding = increments.iter().filter(|d| **d > tolerance).count();
        let last = increments[increments.len() - 1];
        let mut sorted = increments.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let repeats = adding + 1 >= increments.len() && adding >= 2;
        if repeats && last > tolerance && last >= 0.5 * median {
            return Kept::Leak;
        }
        // A round that gave memory back reuses it; one that still adds, never
        // giving back, is filling.
        let gave_back = increments.iter().any(|d| *d < -tolerance);
        if gave_back || last <= tolerance {
            Kept::Reused
        } else {
            Kept::Settling
        }
    }
}

/// A resource that did not come back after every buffer was released.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotReturned {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Its reading before the first buffer.
    pub before: f64,
    /// Its highest reading during the run.
    pub peak: f64,
    /// Its reading after release.
    pub after: f64,
    /// How far above `before` still counts as returned.
    pub tolerance: f64,
}
