//! # clmulti-explain: what allocation runs mean
//!
//! clmulti's reasoning, apart from the OpenCL engine that produces the runs
//! (`clmulti-alloc`) and from any terminal or page: give it reports, and it says
//! what each buffer cost, which limit stopped a run, whether that is proven, and
//! what the seed's three cases (one device, one shared context, one context per
//! device) say together. It reads the machine nowhere and calls no OpenCL, so its
//! tests run in milliseconds over hand-built reports.
//!
//! The house has floors, each reading only the ones below:
//!
//! 1. **Data.** [`Report`] (one run: scenario, devices, limits, samples, stop
//!    reason, leak check), its readings as [`Resource`]s with [`Limit`]s, and the
//!    conclusion types of [`verdict`] ([`Statement`]s tagged measured / inferred /
//!    known, [`Candidate`]s, [`Experiment`]s).
//! 2. **Costs.** [`costs`]: each resource's growth per buffer (least squares over the
//!    samples) and the count at which it meets its limit.
//! 3. **Analysis.** [`analysis`]: [`Report::conclude`] fits the costs, checks that
//!    every reading came back after release, and names *candidates*: resources
//!    within one buffer's growth of their limits whose lines meet them at the
//!    failing count.
//! 4. **Experiments.** [`experiment`]: the failing case re-run unchanged first (not
//!    reproducible, a time limit, a limit outside the process: nothing more is
//!    judged); a candidate is the cause only when lowering its limit lands where
//!    predicted and raising it lets the run go further (one side only: consistent);
//!    when none is, re-runs find the shape of the unseen limit (time or count, buffers
//!    or bytes, live or cumulative, per context or process, per peer). A
//!    [`Runner`](experiment::Runner) runs each changed case.
//! 5. **Diagnosis.** [`diagnosis`]: the seed's matrix, what sharing costs, the
//!    investigation of a failing shared case, the fixes, and documented facts
//!    ([`knowledge`]).
//! 6. **Wording.** [`words`] phrases candidates, experiments and shape findings as
//!    statements; [`render`] turns a diagnosis into terminal text, Markdown and HTML
//!    and a run into its headline.
//!
//! ## Example: a failure at the descriptor limit, tested
//! ```
//! use clmulti_explain::experiment::{investigate, Runner};
//! use clmulti_explain::verdict::{Change, CandidateTest, Knob};
//! use clmulti_explain::testing::{failed_at_limit, rerun_failing_at};
//!
//! // A shared context that failed at 1014 buffers with one fd per buffer at a soft
//! // RLIMIT_NOFILE of 1024 (10 fds open before the first buffer).
//! let mut report = failed_at_limit(1014, 1024, 10);
//! assert!(matches!(report.analysis.candidates[0].test, CandidateTest::Pending));
//!
//! // A runner whose re-runs fail where the limit says (as the real runtime did):
//! // unchanged at 1014 again, under a moved soft limit 10 short of it.
//! struct Fds;
//! impl Runner for Fds {
//!     fn run(&mut self, changes: &[Change], count: u64) -> Result<clmulti_explain::Report, clmulti_explain::experiment::NotRun> {
//!         let soft = match changes[0].knob {
//!             Knob::SoftLimit { .. } => changes[0].to,
//!             _ => 1024,
//!         };
//!         Ok(rerun_failing_at(soft.saturating_sub(10).min(count)))
//!     }
//! }
//! investigate(&mut report, &mut Fds);
//! assert!(matches!(report.analysis.candidates[0].test, CandidateTest::Confirmed { .. }));
//! ```

mod analysis;
mod cause;
pub mod claim;
pub mod context;
mod costs;
pub mod diagnosis;
pub mod experiment;
pub mod knowledge;
mod release;
pub mod render;
mod report;
mod reproduction;
mod resource;
mod sample;
mod stats;
#[doc(hidden)]
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;
pub mod thresholds;
pub mod verdict;
mod words;

pub use report::{
    AxpyCheckReport, AxpySplit, Bookkeeping, Call, Cost, DeviceMemorySource, EffectiveGuards,
    ErrorCode, GuardKind, Kept, Layers, LeakCheck, NotReturned, Phase, ReadError, Report,
    RoundReadings, RoundsControl, Sample, SamplingCost, SecondRound, SplitFigures, StopKind,
    StopReason, Traced, Warning, WarningKind, SCHEMA_VERSION,
};
pub use resource::{Facts, Limit, Resource, Unit};
pub use verdict::{Basis, Candidate, Cause, Experiment, Statement};
pub use words::library_file_names;
