//! What a conclusion is made of, as plain data: statements with their basis, the
//! first limit ahead, candidate causes and the experiments that tested them, and what
//! experiments found out about a limit no reading shows. The reasoning that fills
//! these in is in [`analysis`](crate::analysis) and [`experiment`](crate::experiment).

use crate::claim::Claim;

mod experiment;
mod replicates;
use crate::resource::{Limit, Resource};
pub use experiment::{Change, EnvUnit, Experiment, ExperimentOutcome, Knob, LimitMet, Place};
pub use replicates::{ReplicateRun, Replicates, Reproduced, WaitedRun};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a statement comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "basis", content = "from", rename_all = "snake_case")]
pub enum Basis {
    /// Read on this machine, in this run or these runs.
    Measured,
    /// Computed from measurements: which ones.
    Inferred(String),
    /// Documented elsewhere: the source.
    Known(String),
}

/// One sentence of a conclusion, with its basis; a sentence about a mechanism carries
/// its [`Claim`]: every alternative considered and what judged each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// Where it comes from.
    #[serde(flatten)]
    pub basis: Basis,
    /// The sentence.
    pub text: String,
    /// The claim it states, when it states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    /// The evidence behind the sentence, for a reader who asks (`-v`, a page's
    /// details): the runs, the readings, what ruled out each alternative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Statement {
    /// A measured statement.
    pub fn measured(text: impl Into<String>) -> Self {
        Statement {
            basis: Basis::Measured,
            text: text.into(),
            claim: None,
            detail: None,
        }
    }

    /// An inferred statement, and from what.
    pub fn inferred(from: impl Into<String>, text: impl Into<String>) -> Self {
        Statement {
            basis: Basis::Inferred(from.into()),
            text: text.into(),
            claim: None,
            detail: None,
        }
    }

    /// A documented statement, and its source.
    pub fn known(source: impl Into<String>, text: impl Into<String>) -> Self {
        Statement {
            basis: Basis::Known(source.into()),
            text: text.into(),
            claim: None,
            detail: None,
        }
    }

    /// A claim, said in its sentence (after `lead`, when there is one) and inferred
    /// from `from`: the runs that judged its alternatives.
    pub fn claim(from: impl Into<String>, lead: &str, claim: Claim) -> Self {
        let sentence = claim.sentence();
        Statement {
            basis: Basis::Inferred(from.into()),
            text: if lead.is_empty() {
                sentence
            } else {
                format!("{lead}{sentence}")
            },
            detail: Some(claim.evidence().join("; ")),
            claim: Some(claim),
        }
    }

    /// With the evidence behind it, for a reader who asks.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        self.detail = Some(match self.detail.take() {
            Some(before) if !before.is_empty() => format!("{detail}; {before}"),
            _ => detail,
        });
        self
    }

    /// The words of its text.
    pub fn words(&self) -> usize {
        self.text.split_whitespace().count()
    }

    /// `measured`, `inferred` or `known`.
    pub fn tag(&self) -> &'static str {
        match self.basis {
            Basis::Measured => "measured",
            Basis::Inferred(_) => "inferred",
            Basis::Known(_) => "known",
        }
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.basis {
            Basis::Measured => write!(f, "[measured] {}", self.text),
            Basis::Inferred(from) => write!(f, "[inferred from {from}] {}", self.text),
            Basis::Known(source) => write!(f, "[known: {source}] {}", self.text),
        }
    }
}

/// The first limit a run heads for at its measured rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitAhead {
    /// The resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Its limit.
    pub limit: Limit,
    /// The buffer count at which the limit is reached.
    pub count: u64,
    /// Whether the resource's reading is an estimate.
    pub estimated: bool,
}

/// Why a failed run failed, as far as measurements and experiments say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum Cause {
    /// A resource at its limit whose experiment moved the failure as predicted.
    Resource {
        /// Which.
        #[serde(flatten)]
        resource: Resource,
        /// Its limit.
        limit: Limit,
        /// Its reading at the failure.
        reading: f64,
        /// Growth per buffer.
        per_buffer: f64,
        /// The count at which its fitted line meets the limit.
        predicted_count: u64,
        /// The count at which the run failed.
        observed_count: u64,
    },
    /// Resources at their limits that no experiment has tested yet.
    Untested {
        /// The candidates, in the order of [`RunAnalysis::candidates`].
        resources: Vec<Resource>,
    },
    /// No candidate was confirmed: none was at its limit, or each was refuted.
    NotExplained {
        /// What this machine could not measure.
        unmeasured: Vec<String>,
    },
    /// Lowering a candidate's limit moved the failure as predicted, but its limit
    /// could not be raised: consistent with it, not shown to be the one met.
    OneSided {
        /// The resource.
        resource: Resource,
        /// Its limit.
        limit: Limit,
        /// Why only one side could be tried.
        why: String,
    },
    /// The failing case re-run unchanged failed elsewhere each time: no shape or
    /// cause is claimed from runs within that spread.
    NotReproducible {
        /// Where each run failed (the original first).
        counts: Vec<u64>,
    },
    /// The failure comes after a time, not a count: its time held across re-runs
    /// while its count did not.
    TimeLimit {
        /// About when (seconds into the allocation loop).
        seconds: f64,
        /// Where each run failed.
        counts: Vec<u64>,
    },
    /// Re-runs failed earlier and earlier, or at once: the limit outlives the
    /// process (a file, a daemon), and experiments after it are void.
    Persistent {
        /// Where each run failed, in order.
        counts: Vec<u64>,
    },
}

/// A resource that was at its limit when a run failed, and whose predicted count
/// matches the failure: a cause only once an experiment confirms it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Its limit.
    pub limit: Limit,
    /// Its reading at the failure, as the limit counts it.
    pub reading: f64,
    /// Growth per buffer.
    pub per_buffer: f64,
    /// Its fitted reading before the first buffer, as the limit counts it.
    pub baseline: f64,
    /// The count at which its fitted line meets the limit.
    pub predicted_count: u64,
    /// The count at which the run failed.
    pub observed_count: u64,
    /// What the experiments on its limit found.
    pub test: CandidateTest,
}

impl Candidate {
    /// How far the predicted count is from the failing one, relative to the latter.
    pub fn prediction_error(&self) -> f64 {
        self.predicted_count.abs_diff(self.observed_count) as f64
            / self.observed_count.max(1) as f64
    }
}

/// What became of a candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "kebab-case")]
pub enum CandidateTest {
    /// Not tested yet: the run ran without experiments (`clmulti diagnose` or
    /// `clmulti run --experiment` test it).
    Pending,
    /// Lowering its limit moved the failure down as predicted, and raising it let the
    /// run go further: both sides moved.
    Confirmed {
        /// The experiments.
        experiments: Vec<Experiment>,
        /// When the raised run went further but stopped short of its prediction: how
        /// many buffers past the old failure a second limit stopped it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        second_limit_after: Option<u64>,
    },
    /// Lowering its limit moved the failure as predicted, but the limit could not be
    /// raised: it is a limit, not shown to be the one the run met.
    Consistent {
        /// The experiments.
        experiments: Vec<Experiment>,
        /// Why only one side could be tried.
        why: String,
    },
    /// Its limit was moved and the failure did not move.
    Refuted {
        /// The experiments.
        experiments: Vec<Experiment>,
    },
    /// Its limit was moved and the failure moved, but not as predicted.
    Inconclusive {
        /// The experiments.
        experiments: Vec<Experiment>,
    },
    /// Its limit cannot be moved from here.
    NotTested {
        /// Why not.
        reason: String,
        /// The command that would move it, for a person to run (never run by clmulti).
        command: Option<String>,
    },
}

impl CandidateTest {
    /// The experiments behind it.
    pub fn experiments(&self) -> &[Experiment] {
        match self {
            CandidateTest::Confirmed { experiments, .. }
            | CandidateTest::Consistent { experiments, .. }
            | CandidateTest::Refuted { experiments }
            | CandidateTest::Inconclusive { experiments } => experiments,
            CandidateTest::Pending | CandidateTest::NotTested { .. } => &[],
        }
    }
}

/// What experiments establish about a limit clmulti cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShapeQuestion {
    /// Does it count buffers, bytes, or bytes in granules? (the failing case at three
    /// other buffer sizes)
    CountOrBytes,
    /// Does capacity come back after release, at once, later, never? (release half
    /// way and go on; again with a pause after the release)
    LiveOrCumulative,
    /// Who shares it: a context, the process, the user, a cgroup, the system? (two
    /// contexts; a second process beside it, as another user, outside the cgroups)
    PerContextOrProcess,
    /// How does it depend on the devices in the context? (more devices; each device
    /// alone)
    PerPeer,
    /// Does it come after a time, a count, or a budget time restores? (a pause after
    /// each buffer)
    TimeOrCount,
}

impl ShapeQuestion {
    /// The claim's topic for this question.
    pub fn topic(self) -> crate::claim::Topic {
        use crate::claim::Topic;
        match self {
            ShapeQuestion::CountOrBytes => Topic::Unit,
            ShapeQuestion::LiveOrCumulative => Topic::Lifetime,
            ShapeQuestion::PerContextOrProcess => Topic::Scope,
            ShapeQuestion::PerPeer => Topic::Peers,
            ShapeQuestion::TimeOrCount => Topic::TimeOrCount,
        }
    }
}

/// One question about a limit, answered by experiment as a claim, or not asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeFinding {
    /// The question.
    pub question: ShapeQuestion,
    /// What the runs say, every alternative judged; `None` when it was not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    /// The runs that answer it.
    pub experiments: Vec<Experiment>,
    /// Why it was not asked, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_tested: Option<String>,
}

impl ShapeFinding {
    /// Whether its claim settled on `key`.
    pub fn settles_on(&self, key: &str) -> bool {
        self.claim.as_ref().is_some_and(|c| c.settles_on(key))
    }
}

/// What an observer that saw every system call found in a replicate of the failing
/// case: the calls that failed inside its failing OpenCL call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedRun {
    /// Buffers the observed run reached.
    pub count: u64,
    /// Seconds its allocation loop took (0 in records made before it was kept): the
    /// observer slows every call, so a limit that follows time may stop it elsewhere.
    #[serde(default)]
    pub seconds: f64,
    /// Whether it failed in its loop, so that its failing call was watched.
    pub watched_failure: bool,
    /// How it ended, in one line.
    pub stop: String,
    /// The system calls that failed inside the failing OpenCL call, on every thread,
    /// in order.
    pub failed_calls: Vec<clmulti_probe::trace::TracedCall>,
}

/// One run's conclusions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunAnalysis {
    /// The first limit ahead at the measured rates.
    pub first_limit: Option<LimitAhead>,
    /// For a run that failed in its allocation loop: the cause.
    pub cause: Option<Cause>,
    /// For a run that failed: the resources at their limits, each with its test.
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    /// For a failure no candidate explains: what experiments found out about it.
    #[serde(default)]
    pub shape: Vec<ShapeFinding>,
    /// The failing case re-run unchanged, before anything is judged: the noise every
    /// experiment is judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicates: Option<Replicates>,
    /// A replicate of the failing case watched by a system-call observer, when the
    /// libc tracer saw no call fail inside the failing call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedRun>,
    /// The conclusions, each with its basis.
    pub statements: Vec<Statement>,
}

impl RunAnalysis {
    /// Every claim its statements make, in order.
    pub fn claims(&self) -> impl Iterator<Item = &Claim> {
        self.statements.iter().filter_map(|s| s.claim.as_ref())
    }

    /// The first claim on `topic`.
    pub fn claim(&self, topic: crate::claim::Topic) -> Option<&Claim> {
        self.claims().find(|c| c.topic == topic)
    }
}
