//! What an experiment moves, and what its re-run showed.

use crate::resource::Resource;
use clmulti_scenario::Rlimit;
use serde::{Deserialize, Serialize};

/// Something an experiment moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "knob", rename_all = "kebab-case")]
pub enum Knob {
    /// A soft resource limit of the run's process.
    SoftLimit {
        /// Which.
        limit: Rlimit,
    },
    /// An environment variable the runtime (or a layer) reads.
    Env {
        /// Its name.
        key: String,
        /// How its value is written.
        unit: EnvUnit,
    },
    /// Bytes per buffer.
    BufferSize,
    /// Buffers between two releases of every live buffer (`allocation.release_every`).
    ReleaseEvery,
    /// Shared contexts in the process (`[context] count`).
    Contexts,
    /// Devices in the shared context (peers of each buffer).
    Devices,
    /// Nothing: the failing case again, unchanged (`to` numbers the replicate).
    Replicate,
    /// A wait before the run starts, milliseconds: what time restores.
    Wait,
    /// A wait after each release of every buffer, microseconds
    /// (`allocation.release_pause_us`): capacity a runtime gives back late.
    ReleasePause,
    /// A second process beside the run, holding `to` buffers of the same case while
    /// the run goes: who shares the limit.
    Sibling {
        /// Where the second process runs.
        place: Place,
    },
    /// The run watched by a system-call observer (every call of every thread, raw ones
    /// too): what failed inside the failing call.
    Observe,
    /// The run on one of its devices alone (`to`: its place among the run's devices).
    OnlyDevice,
    /// A pause after each buffer, microseconds (`allocation.pause_us`): a limit on
    /// time fails sooner in buffers, one on buffers does not.
    Pause,
}

/// Where a second process beside the run runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// The same user, the same cgroups.
    Beside,
    /// Another user (`nobody`), the same cgroups.
    OtherUser,
    /// The same user, outside every cgroup of the run (each hierarchy's root).
    OtherCgroup,
}

impl Place {
    /// The place in words: `as another user`.
    pub fn words(self) -> &'static str {
        match self {
            Place::Beside => "as the same user in the same cgroups",
            Place::OtherUser => "as another user (nobody) in the same cgroups",
            Place::OtherCgroup => "as the same user outside the run's cgroups",
        }
    }
}

/// How an environment knob's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnvUnit {
    /// A size with a unit (`128MiB`).
    Size,
    /// Whole GiB (`POCL_MEMORY_LIMIT`).
    Gib,
    /// A plain number.
    Count,
}

impl Knob {
    /// Whether its values are bytes (else a count).
    pub fn in_bytes(&self) -> bool {
        match self {
            Knob::SoftLimit { limit } => limit.in_bytes(),
            Knob::Env { unit, .. } => *unit != EnvUnit::Count,
            Knob::BufferSize => true,
            Knob::ReleaseEvery
            | Knob::Contexts
            | Knob::Devices
            | Knob::Replicate
            | Knob::Pause
            | Knob::Wait
            | Knob::ReleasePause
            | Knob::Sibling { .. }
            | Knob::Observe
            | Knob::OnlyDevice => false,
        }
    }

    /// What it is called: `soft RLIMIT_NOFILE`, `CLMULTI_LAYER_MIRROR_LIMIT`.
    pub fn label(&self) -> String {
        match self {
            Knob::SoftLimit { limit } => format!("soft {}", limit.name()),
            Knob::Env { key, .. } => key.clone(),
            Knob::BufferSize => "buffer size".into(),
            Knob::ReleaseEvery => "a release of every buffer every".into(),
            Knob::Contexts => "shared contexts".into(),
            Knob::Devices => "devices in the context".into(),
            Knob::Replicate => "replicate".into(),
            Knob::Pause => "pause after each buffer (us)".into(),
            Knob::Wait => "a wait before the run (ms)".into(),
            Knob::ReleasePause => "a pause after each release (us)".into(),
            Knob::Sibling { place } => {
                format!("buffers held by a second process {}", place.words())
            }
            Knob::Observe => "a system-call observer".into(),
            Knob::OnlyDevice => "the run on one device alone".into(),
        }
    }
}

/// One thing moved for an experiment, from its value in the failing run to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// What was moved.
    #[serde(flatten)]
    pub knob: Knob,
    /// Its value in the failing run.
    pub from: u64,
    /// Its value in the experiment.
    pub to: u64,
}

impl Change {
    /// Whether it raises a limit (a soft resource limit or a size the runtime reads).
    pub fn raises(&self) -> bool {
        matches!(self.knob, Knob::SoftLimit { .. } | Knob::Env { .. }) && self.to > self.from
    }
}

/// How an experiment's failing count compares with what was expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum ExperimentOutcome {
    /// The failure moved to the predicted count (within 5%, or the replicates'
    /// noise).
    AsPredicted,
    /// The failure stayed where it was (within the replicates' noise).
    NotMoved,
    /// The failure moved, but not to the predicted count.
    MovedOtherwise,
    /// The limit was raised and the run went further than before (beyond the
    /// replicates' spread), but not as far as predicted: another limit stopped it.
    MovedUp,
    /// The run ran and failed before its first buffer: the change made it fail at
    /// once (a runtime that uses the value some other way), which is evidence too.
    FailedAtOnce,
    /// The run ended some other way (completed, crashed, a guard), or could not run.
    DidNotRun {
        /// How it ended, or why it could not run.
        why: String,
    },
}

/// A re-run of a failing case in a fresh process with one thing moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// What was moved.
    pub change: Change,
    /// The buffers the run was allowed.
    pub asked: u64,
    /// The count the candidate's line predicts under the change, when it predicts one.
    pub predicted_count: Option<u64>,
    /// The count the failing run reached before the change.
    pub before_count: u64,
    /// The count this run reached (buffers allocated in all; with releases, the
    /// total created).
    pub observed_count: u64,
    /// How it ended, in one line.
    pub stop: String,
    /// Seconds of its allocation loop when it ended (at its failure, if it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_seconds: Option<f64>,
    /// What that means.
    pub outcome: ExperimentOutcome,
    /// The resource its own readings found at a limit when it failed, if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub met: Option<LimitMet>,
    /// The errno of the call that failed inside its failing call, where one was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_errno: Option<String>,
}

/// A resource a run's own readings found at its limit when it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitMet {
    /// Which.
    #[serde(flatten)]
    pub resource: Resource,
    /// The limit's name.
    pub limit: String,
    /// The reading at the failure.
    pub reading: f64,
    /// The limit's value.
    pub value: f64,
}

impl LimitMet {
    /// `open fds at RLIMIT_NOFILE (soft) (2048 of 2048)`.
    pub fn words(&self) -> String {
        let unit = self.resource.unit();
        format!(
            "{} at {} ({} of {})",
            self.resource.label(),
            self.limit,
            unit.format(self.reading),
            unit.format(self.value)
        )
    }

    /// The first candidate of a run's own analysis.
    pub fn of(report: &crate::Report) -> Option<LimitMet> {
        let c = report.analysis.candidates.first()?;
        Some(LimitMet {
            resource: c.resource.clone(),
            limit: c.limit.name.clone(),
            reading: c.reading,
            value: c.limit.value,
        })
    }
}
