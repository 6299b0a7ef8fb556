//! clmulti's process supervision: every OpenCL call runs in a process of its own, so
//! that what a runtime does (crash, hang, exit while loading, exhaust a limit) takes
//! that process down and leaves a report, not the command.
//!
//! Two kinds of process are watched:
//!
//! - **A command's worker** ([`worker::supervise`]): `clmulti` forks before anything
//!   touches a runtime; the parent only watches, through a shared page, whether the
//!   worker loads the runtime, its deadline, the signals it saw, and its exit code; it
//!   passes on a signal sent to it alone and kills a worker past its limit.
//! - **A run's child** ([`run_child`]): `clmulti run --child` (or any program that
//!   honours [`PROGRESS_ENV`](clmulti_contract::progress::PROGRESS_ENV)) in its own process group, dying with its parent,
//!   bounded in time, given an interrupt and a grace to report; it tells the parent
//!   how far it got through a progress file ([`protocol`]): loading, setup, every
//!   sample, its report last. A crash still leaves what it measured.
//!
//! Signals ([`signal`]): the first SIGINT, SIGTERM or SIGHUP asks for a graceful stop
//! ([`INTERRUPT`]), a second ends the process at once; a signal a process inherited
//! ignored (`nohup`, a background job) stays ignored.
//!
//! ## Example: a child that crashes
//! ```
//! use clmulti_supervise::{run_child, ChildCommand};
//! use std::os::unix::process::ExitStatusExt;
//! use std::time::Duration;
//!
//! let command = ChildCommand {
//!     program: "sh".into(),
//!     args: vec!["-c".into(), "echo measured; kill -SEGV $$".into()],
//!     env: Default::default(),
//!     timeout: Duration::from_secs(10),
//!     interrupt: None,
//!     interrupt_grace: Duration::ZERO,
//!     abandon_when: None,
//!     resolved: None,
//!     placement: Default::default(),
//!     inherit: Vec::new(),
//! };
//! let outcome = run_child(&command).unwrap();
//! assert_eq!(outcome.status.signal(), Some(libc::SIGSEGV));
//! assert_eq!(outcome.stdout, "measured\n");
//! ```

pub mod child;
pub mod ended;
pub mod protocol;
pub mod signal;
pub mod worker;

pub use child::{
    hang_margin, run_child, run_child_watching, tracer_beside, ChildCommand, ChildOutcome,
    Placement, PrivateFolder,
};
pub use protocol::{read_resolved, Progress, ProgressWriter};
pub use signal::{handle_unless_ignored, Interrupt, INTERRUPT};
