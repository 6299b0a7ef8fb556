//! The names clmulti's call tracer (crate `clmulti-trace`) answers to: one definition
//! for the tracer itself, for the harness that preloads it into every run, and for
//! whoever asks a run for more.
//!
//! Preloaded (`LD_PRELOAD`), the tracer counts the calls a runtime makes by kind and
//! records the ones that fail. How much it records is [`MODE`]'s:
//! - unset (or any other value): counts, and every failure after the program's first
//!   mark (clmulti marks before it creates its contexts) with its arguments and stack;
//!   a failure before that (a runtime probing for files while it loads) with its call
//!   and errno only;
//! - [`FULL`]: every failure in detail from the process's start, loading included,
//!   and the allocators' too (clmulti then preloads [`ALLOC_FILE_NAME`] beside the
//!   tracer: wrapping `malloc` costs every call); after release, the C library's heap
//!   figures and what `malloc_trim(0)` gives back. What a diagnosis asks for in the
//!   replicate of a failing case;
//! - [`OFF`] (or `0`, `no`): clmulti does not preload the tracer at all.

/// The tracer's mode, read from the environment of the traced process (and of the
/// clmulti that starts it): `CLMULTI_TRACE=full clmulti run FILE` records in full.
pub const MODE: &str = "CLMULTI_TRACE";
/// [`MODE`]'s value for full recording.
pub const FULL: &str = "full";
/// [`MODE`]'s value that turns the tracer off (`0` and `no` too).
pub const OFF: &str = "off";
/// A file the tracer writes its failures and counts to at the process's exit, for
/// programs that never ask; failures are then recorded in detail from the start.
pub const REPORT: &str = "CLMULTI_TRACE_REPORT";

/// The tracer's allocator half (crate `clmulti-trace-alloc`), preloaded after the
/// tracer in full mode.
pub const ALLOC_FILE_NAME: &str = "libclmulti_trace_alloc.so";

/// Whether a [`MODE`] value turns the tracer off.
pub fn is_off(value: &str) -> bool {
    let value = value.trim();
    value.eq_ignore_ascii_case(OFF) || value == "0" || value.eq_ignore_ascii_case("no")
}

/// Whether a [`MODE`] value asks for full recording.
pub fn is_full(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case(FULL)
}
