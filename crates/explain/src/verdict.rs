//! What a conclusion is made of, as plain data: statements with their basis, the
//! first limit ahead, candidate causes and the experiments that tested them, and what
//! experiments found out about a limit no reading shows. The reasoning that fills
//! these in is in [`analysis`](crate::analysis) and [`experiment`](crate::experiment).

use crate::claim::Claim;
use crate::resource::{Limit, Resource};
use clmulti_scenario::Rlimit;
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

    /// Whether it is the same kind of limit as `candidate` (the same resource against
    /// a limit of the same name), whatever its value.
    pub fn same_as(&self, candidate: &Candidate) -> bool {
        self.resource == candidate.resource && self.limit == candidate.limit.name
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
        if seconds.len() >= 2
            && long_enough
            && spread <= crate::thresholds::TIME_SHARE * median
            && ended_before
        {
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
