//! # clmulti-contract: what clmulti's processes agree on
//!
//! clmulti runs every OpenCL call in a process of its own, and loads libraries of its
//! own into those processes. This crate holds what two sides of that boundary must
//! read alike, and nothing that does the work on either side:
//!
//! - [`signal`]: signal names and the exit codes a command ends with (the supervisor
//!   reads them, the command sets them, reports print them);
//! - [`progress`]: the progress envelope a run's child writes and its supervisor reads
//!   (`clmulti-supervise` moves it; `clmulti-alloc` fills and reads its payloads);
//! - [`library`]: the project's libraries a run loads ([`LAYER`], [`KMD_EMU`],
//!   [`TRACE`]), and the names each answers to: [`layer`] (the OpenCL emulation layer),
//!   [`kmd_emu`] (the emulated kernel driver, with the models it presents) and
//!   [`trace`] (the call tracer and its allocator half);
//! - [`interpose`]: the libc shim both preloaded libraries interpose through
//!   ([`libc_next!`], [`libc_open_family!`]);
//! - [`region`]: memory of its own for an allocator that must leave the C library's
//!   heap as the runtime left it (clmulti's process after release, the tracer's
//!   answers).
//!
//! Its contract: constants, plain data and allocation-free shims only; it depends on
//! `libc` alone, so every crate of the workspace, preloaded libraries included, can
//! use it without pulling in another's vocabulary.
//!
//! ```
//! use clmulti_contract::{progress::Kind, signal_name, TRACE};
//!
//! assert_eq!(signal_name(11), "SIGSEGV");
//! assert_eq!(TRACE.file_name, "libclmulti_trace.so");
//! assert_eq!(Kind::parse("report\t{}"), Some((Kind::Report, "{}")));
//! ```

pub mod interpose;
pub mod kmd_emu;
pub mod layer;
pub mod library;
pub mod progress;
pub mod region;
pub mod signal;
pub mod trace;

/// libc, for [`libc_next!`] and [`libc_open_family!`] in the crates that use them.
#[doc(hidden)]
pub use libc;
pub use library::{ProjectLibrary, KMD_EMU, LAYER, PROJECT_LIBRARIES, TRACE};
pub use signal::{exit_by_signal, signal_name, EXIT_INPUT, EXIT_TOOL};
