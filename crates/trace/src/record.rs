//! What the tracer keeps of each failed call: what, errno, the thread, and in detail
//! its arguments and stack. Failures are rare and kept under a lock. In detail means
//! from the program's first [`mark`] on (it asks only about what fails after a mark),
//! and from the start in [`full`](clmulti_contract::trace::FULL) mode or when the report is written at
//! exit: a runtime that probes for files while loading fails dozens of calls nobody
//! asks about, and a stack costs the unwinder's load and a walk.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Frames kept per failure.
const FRAMES: usize = 24;
/// Failures kept; older ones are dropped (and counted).
const KEPT: usize = 512;

/// One failed call.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Order among failures, from 1.
    pub seq: u64,
    /// The thread (`gettid`).
    pub thread: i32,
    /// Monotonic nanoseconds.
    pub ns: u64,
    /// The libc function.
    pub call: &'static str,
    /// Its arguments as `strace` would print them.
    pub args: String,
    /// errno.
    pub errno: i32,
    /// Return addresses, innermost first.
    pub frames: Vec<usize>,
}

struct Failures {
    kept: VecDeque<Failure>,
    dropped: u64,
}

static FAILURES: Mutex<Failures> = Mutex::new(Failures {
    kept: VecDeque::new(),
    dropped: 0,
});
/// The number of the last failure (the count of failures so far); exported as
/// `clmulti_trace_seq`, read where a call would cost more than the read.
#[cfg_attr(not(test), export_name = "clmulti_trace_seq")]
pub static SEQ: AtomicU64 = AtomicU64::new(0);
/// Whether failures are recorded with their arguments and stack.
static DETAIL: AtomicBool = AtomicBool::new(false);

/// Records every later failure with its arguments and stack.
pub fn detail_from_now() {
    if !DETAIL.load(Ordering::Relaxed) {
        DETAIL.store(true, Ordering::Relaxed);
    }
}

thread_local! {
    /// Set while the tracer itself runs on this thread: its own allocations and calls
    /// are never traced (no recursion through malloc, backtrace, formatting).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` unless the tracer is already running on this thread.
pub fn outside<T>(f: impl FnOnce() -> T) -> Option<T> {
    let entered = INSIDE
        .try_with(|inside| !inside.replace(true))
        .unwrap_or(false);
    if !entered {
        return None;
    }
    let result = f();
    let _ = INSIDE.try_with(|inside| inside.set(false));
    Some(result)
}

/// The sequence number of the last failure: a caller marks before a call and asks
/// for what failed after the mark. Failures after the first mark are recorded in
/// detail.
pub fn mark() -> u64 {
    detail_from_now();
    SEQ.load(Ordering::SeqCst)
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is writable.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Records a failed call (`errno` as the call left it), in detail with its
/// arguments and stack; nothing on a thread marked as the program's own.
pub fn failed(call: &'static str, args: impl FnOnce() -> String, errno: i32) {
    if crate::count::own() {
        return;
    }
    outside(|| {
        let detail = DETAIL.load(Ordering::Relaxed);
        let frames = if detail { stack() } else { Vec::new() };
        let failure = Failure {
            seq: SEQ.fetch_add(1, Ordering::SeqCst) + 1,
            // SAFETY: gettid has no preconditions.
            thread: unsafe { libc::gettid() },
            ns: now_ns(),
            call,
            args: if detail { args() } else { String::new() },
            errno,
            frames,
        };
        let mut all = FAILURES.lock().unwrap_or_else(|e| e.into_inner());
        if all.kept.len() == KEPT {
            all.kept.pop_front();
            all.dropped += 1;
        }
        all.kept.push_back(failure);
    });
    // The caller's errno is what it would have seen without the tracer.
    clmulti_contract::interpose::set_errno(errno);
}

/// This thread's return addresses, innermost first.
fn stack() -> Vec<usize> {
    let mut frames = [std::ptr::null_mut::<libc::c_void>(); FRAMES];
    // SAFETY: `frames` holds FRAMES writable slots.
    let depth = unsafe { libc::backtrace(frames.as_mut_ptr(), FRAMES as i32) };
    frames[..depth.max(0) as usize]
        .iter()
        .map(|&p| p as usize)
        .collect()
}

/// The failures after `since`, and how many older ones were dropped.
pub fn failures_since(since: u64) -> (Vec<Failure>, u64) {
    let all = FAILURES.lock().unwrap_or_else(|e| e.into_inner());
    (
        all.kept.iter().filter(|f| f.seq > since).cloned().collect(),
        all.dropped,
    )
}

/// One frame in words: module, offset, and the symbol when the module exports one.
pub fn frame(address: usize) -> (String, usize, Option<String>) {
    // SAFETY: a zeroed Dl_info is valid to receive the answer.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address as a number.
    if unsafe { libc::dladdr(address as *const libc::c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return ("?".into(), address, None);
    }
    // SAFETY: dladdr gave a NUL-terminated file name.
    let module = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let module = module.rsplit('/').next().unwrap_or(&module).to_owned();
    let offset = address.wrapping_sub(info.dli_fbase as usize);
    let symbol = (!info.dli_sname.is_null()).then(|| {
        // SAFETY: dladdr gave a NUL-terminated symbol name.
        let name = unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }.to_string_lossy();
        format!(
            "{name}+{:#x}",
            address.wrapping_sub(info.dli_saddr as usize)
        )
    });
    (module, offset, symbol)
}

/// JSON text of a string.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_its_errno_stack_and_order() {
        // Before any mark (and no full mode): call and errno, no arguments or stack.
        failed("mmap", || "unused".into(), libc::ENOMEM);
        let light = failures_since(0).0;
        assert!(light
            .iter()
            .any(|f| f.call == "mmap" && f.args.is_empty() && f.frames.is_empty()));
        let before = mark();
        failed("openat", || "AT_FDCWD, \"/x\"".into(), libc::EMFILE);
        // SAFETY: the thread's errno location.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::EMFILE);
        let (failures, _) = failures_since(before);
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].call, "openat");
        assert_eq!(failures[0].args, "AT_FDCWD, \"/x\"");
        assert!(!failures[0].frames.is_empty());
        assert!(failures_since(mark()).0.is_empty());
        assert_eq!(json_string("a\"b\n"), "\"a\\\"b\\u000a\"");
    }
}
