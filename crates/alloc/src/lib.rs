//! # clmulti-alloc: the allocation engine
//!
//! Runs one validated [`Scenario`](clmulti_scenario::Scenario) through OpenCL
//! (`opencl3`) and reports how far allocation went, why it stopped, what each buffer
//! cost the host and each device, and what that means.
//!
//! What a run does ([`run`]):
//! 1. Selects devices ([`clmulti_probe::select`], sub-devices included) and builds the
//!    contexts for the context mode (one shared context, or one per device),
//!    registering a context callback whose driver messages land in the report.
//! 2. Allocates buffers by the strategy (`create`, `fill`, `migrate`, `pin`, `pool`),
//!    placing each on a device, keeping or releasing it, and stops at the count, the
//!    first OpenCL error (recorded with its name and the call that failed), or a
//!    guard, checked before each allocation that could cross it.
//! 3. Samples host RSS, virtual size, fds, dma-bufs, mappings, the DRM memory the
//!    kernel accounts to the process's GPU clients, system memory, and device memory
//!    where a source exists, every N allocations, at a failure and at the end.
//! 4. Releases everything and reads every resource again: the leak check sets each
//!    reading after release against its reading before the first buffer.
//! 5. Hands the report to [`clmulti_explain`] ([`Report::conclude`](clmulti_explain::Report::conclude)):
//!    per-buffer costs against limits, the first limit ahead, the candidates of a
//!    failure, each statement tagged measured, inferred or known.
//!
//! The engine's own cost is measured by running the same loop with the OpenCL calls
//! removed ([`Report::bookkeeping`]): 8 bytes per kept buffer plus amortised samples.
//!
//! A run that must not take the caller down (a runtime that aborts, hangs, or meets a
//! resource limit the scenario sets) runs in a child process: [`child`].
//!
//! ## Example
//! ```no_run
//! let runs = clmulti_scenario::load_str(r#"
//!     [devices]
//!     count = 2
//!     [allocation]
//!     size = "1MiB"
//!     count = 2000
//! "#, "inline.toml")?;
//! let report = clmulti_alloc::run(&runs[0], clmulti_alloc::RunOptions::default())?;
//! println!("{} buffers, stopped: {}", report.buffers, report.stop.summary());
//! for statement in &report.analysis.statements {
//!     println!("{statement}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The scenario's `[env]` and `[limits]` must be in force before the OpenCL runtime
//! loads: run each scenario in its own process, and call [`apply_limits`] there first.

pub mod child;
mod engine;
pub mod own_heap;
pub mod runtime_log;

pub use engine::{
    blank_report, hang_margin, run, time_limit, BufferCheck, BufferPair, EngineError, Observer,
    OnHang, RunOptions, Watchdog, CL_MEM_DEVICE_ID_INTEL, HOLD_ENV,
};

use clmulti_scenario::Limits;

/// Applies a scenario's soft resource limits to this process (the hard limits cap
/// what can be set): before the OpenCL runtime loads.
pub fn apply_limits(limits: &Limits) -> std::io::Result<()> {
    clmulti_probe::set_soft_rlimits(limits)
}
