//! # clmulti-trace: the system call behind an OpenCL error
//!
//! An OpenCL runtime turns whatever failed inside it into one status:
//! `CL_OUT_OF_HOST_MEMORY (-6)` carries no errno and no call. This crate builds a
//! library that, preloaded (`LD_PRELOAD`), wraps the libc calls a runtime gets
//! resources with and records every one that fails: the call, its arguments as
//! `strace` prints them (`ioctl(5, DRM_IOCTL_PRIME_HANDLE_TO_FD)`, `openat(AT_FDCWD,
//! "/dev/null", O_RDONLY|O_CLOEXEC)`), errno by name (`EMFILE`), the thread and the
//! stack (module and offset; the symbol where the module exports one). It also counts
//! every traced call by kind, DRM ioctls by request, driver and (i915's
//! `GEM_CREATE_EXT`) memory region: what a runtime asks of the kernel per buffer,
//! from the outside, on any driver.
//!
//! Wrapped: `open`, `openat`, `fopen` (and their 64-bit and fortified forms),
//! `ioctl`, `mmap`, `munmap`, `mremap`, `mprotect`, `memfd_create`, `pipe`, `pipe2`,
//! `socket`, `dup`, `dup2`, `dup3`, `fcntl(F_DUPFD)`, `eventfd`, `epoll_create1`,
//! `timerfd_create`, `pthread_create`, `mlock`, `mlock2`, `mlockall`. The allocators
//! (`malloc`, `calloc`...) are wrapped in full mode only, by a library of their own
//! (crate `clmulti-trace-alloc`) that hands each failure here
//! (`clmulti_trace_failed`): a wrapper costs every call of the hottest calls of any
//! program. The calls
//! that free a descriptor number (`close`, `fclose`, `closedir`, `pclose`, `freopen`,
//! `fcloseall`, `close_range`, `closefrom`, `dup2`, `dup3`) move one generation,
//! `clmulti_trace_fd_gen`: while it stands still, every open number names the file
//! it named before (a reader of `/proc/self/fd` need not ask each again).
//!
//! What it cannot see: raw `syscall()`; libc's calls inside itself (the `mmap` behind
//! a large `malloc` shows, in full mode, as the `malloc` that failed); calls of other
//! processes (a daemon, a driver's helper). A runtime that refuses by itself, with no call failing,
//! leaves no failure: "no system call failed" is then the finding.
//!
//! ## Asking it
//! A process finds these with `dlsym(RTLD_DEFAULT, ...)`; they exist only when the
//! tracer is loaded:
//! - `uint64_t clmulti_trace_mark(void)`: the last failure's number, taken before a
//!   call (failures from the first mark on are recorded with arguments and stack);
//! - `clmulti_trace_seq`: the same number as a variable (an atomic `uint64_t`), for a
//!   loop that marks before every call;
//! - `int clmulti_trace_own(int on)`: marks the calling thread as the program's own
//!   (1) or not (0), returning what it was: while marked, its calls are neither
//!   counted nor recorded (a program's readings of `/proc` are not the runtime's);
//! - `size_t clmulti_trace_failures(uint64_t since, char *buf, size_t len)`: the
//!   failures after the mark, as JSON (see [`api::failures_json`]);
//! - `size_t clmulti_trace_counts(char *buf, size_t len)`: the counts, `key: value`
//!   lines.
//!
//! Both text functions return the length needed and fill `buf` as far as it goes.
//! `CLMULTI_TRACE_REPORT=FILE` writes both at exit, for programs that never ask
//! (failures are then recorded in detail from the start):
//!
//! ```sh
//! cargo build -p clmulti-trace
//! CLMULTI_TRACE_REPORT=trace.json LD_PRELOAD=$PWD/target/debug/libclmulti_trace.so ./program
//! ```
//!
//! ## What it costs, and full mode
//! A call that succeeds pays a thread-local check and an add to its thread's own table
//! (no lock, no atomic read-modify-write, nothing allocated or formatted; and for DRM
//! ioctls, once per descriptor, one `DRM_IOCTL_VERSION` to learn the driver). A
//! failure pays a lock; from the program's first mark on, a backtrace and its
//! arguments in words too. Before the first mark (a runtime probing for files while
//! it loads) only its call and errno are kept, unless `CLMULTI_TRACE=full`
//! ([`clmulti_contract::trace::MODE`]) asks for every failure in detail from the
//! start, and the allocators' failures too: what a diagnosis asks for in the
//! replicate of a failing case.
//!
//! Its answers (the counts, the failures as text) are built in a region of memory of
//! its own, never in the C library's heap the runtime uses: asking the tracer after a
//! release does not make glibc consolidate the blocks the runtime freed, nor move
//! the heap it watches.

#[cfg(not(test))]
mod answers;
pub mod api;
pub mod count;
#[cfg(not(test))]
mod exports;
#[cfg(not(test))]
mod interpose;
pub mod names;
pub mod record;

/// The library's answers are built off the traced program's heap ([`answers`]).
#[cfg(not(test))]
#[global_allocator]
static HEAP: answers::AnswerHeap = answers::AnswerHeap;
