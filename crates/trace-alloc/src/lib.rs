//! # clmulti-trace-alloc: the allocator half of clmulti's tracer, for full mode
//!
//! A runtime that fails to allocate host memory says `CL_OUT_OF_HOST_MEMORY (-6)`;
//! what failed is often a `malloc` (under `RLIMIT_AS` or `RLIMIT_DATA`, the `mmap` or
//! `brk` behind it fails inside the C library, where no preload sees it). This
//! library, preloaded after `libclmulti_trace.so`, wraps the allocators (`malloc`,
//! `calloc`, `realloc`, `memalign`, `aligned_alloc`, `posix_memalign`) and hands each
//! one that fails to the tracer (`clmulti_trace_failed`), which records it with its
//! errno and stack like any failed call.
//!
//! It is a library of its own because wrapping an allocator costs every call: PoCL
//! makes two allocations per buffer, and the wrapper's call, test and return are a
//! share of a 400 ns `clCreateBuffer`. clmulti preloads it only in full mode
//! (`CLMULTI_TRACE=full`, what a diagnosis sets for the replicate of a failing case),
//! so a default run pays nothing per allocation:
//!
//! ```sh
//! cargo build -p clmulti-trace -p clmulti-trace-alloc --lib --examples
//! LD_PRELOAD=$PWD/target/debug/libclmulti_trace.so:$PWD/target/debug/libclmulti_trace_alloc.so \
//!   target/debug/examples/failing_malloc
//! ```
//!
//! Without the tracer loaded it records nothing and only passes the calls on.

#[cfg(not(test))]
mod wrappers;

/// The file cargo builds.
pub const FILE_NAME: &str = "libclmulti_trace_alloc.so";
