//! What the tracer keeps: each failed call (what, its arguments, errno, the stack and
//! the thread), and a count of every traced call by kind. Failures are rare and kept
//! under a lock; counting is a lock-free table, so a call that succeeds costs one
//! atomic add.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
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
static SEQ: AtomicU64 = AtomicU64::new(0);

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
/// for what failed after the mark.
pub fn mark() -> u64 {
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

/// Records a failed call (`errno` as the call left it), with the stack.
pub fn failed(call: &'static str, args: impl FnOnce() -> String, errno: i32) {
    outside(|| {
        let mut frames = vec![std::ptr::null_mut::<libc::c_void>(); FRAMES];
        // SAFETY: `frames` holds FRAMES writable slots.
        let depth = unsafe { libc::backtrace(frames.as_mut_ptr(), FRAMES as i32) };
        let frames = frames[..depth.max(0) as usize]
            .iter()
            .map(|&p| p as usize)
            .collect();
        let failure = Failure {
            seq: SEQ.fetch_add(1, Ordering::SeqCst) + 1,
            // SAFETY: gettid has no preconditions.
            thread: unsafe { libc::gettid() },
            ns: now_ns(),
            call,
            args: args(),
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
    // SAFETY: the thread's errno location.
    unsafe { *libc::__errno_location() = errno };
}

/// The failures after `since`, and how many older ones were dropped.
pub fn failures_since(since: u64) -> (Vec<Failure>, u64) {
    let all = FAILURES.lock().unwrap_or_else(|e| e.into_inner());
    (
        all.kept.iter().filter(|f| f.seq > since).cloned().collect(),
        all.dropped,
    )
}

/// A lock-free count per key: open addressing over a fixed table.
#[allow(missing_debug_implementations)]
pub struct Counts {
    keys: [AtomicU64; SLOTS],
    values: [AtomicU64; SLOTS],
}

const SLOTS: usize = 1024;

impl Counts {
    /// An empty table.
    pub const fn new() -> Self {
        Self {
            keys: [const { AtomicU64::new(0) }; SLOTS],
            values: [const { AtomicU64::new(0) }; SLOTS],
        }
    }

    /// Adds one to `key` (nonzero); a full table drops the count.
    pub fn add(&self, key: u64) {
        let mut slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize % SLOTS;
        for _ in 0..SLOTS {
            match self.keys[slot].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.values[slot].fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(existing) if existing == key => {
                    self.values[slot].fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(_) => slot = (slot + 1) % SLOTS,
            }
        }
    }

    /// Every key with its count.
    pub fn snapshot(&self) -> Vec<(u64, u64)> {
        (0..SLOTS)
            .filter_map(|i| {
                let key = self.keys[i].load(Ordering::Acquire);
                (key != 0).then(|| (key, self.values[i].load(Ordering::Relaxed)))
            })
            .collect()
    }
}

impl Default for Counts {
    fn default() -> Self {
        Self::new()
    }
}

/// The process's counts.
pub static COUNTS: Counts = Counts::new();

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
    fn counts_keep_each_key_apart_and_survive_collisions() {
        let counts = Counts::new();
        for key in 1..=300u64 {
            for _ in 0..key % 5 + 1 {
                counts.add(key);
            }
        }
        let snapshot = counts.snapshot();
        assert_eq!(snapshot.len(), 300);
        assert!(snapshot.iter().all(|&(k, v)| v == k % 5 + 1));
    }

    #[test]
    fn a_failure_keeps_its_errno_stack_and_order() {
        let before = mark();
        failed("openat", || "AT_FDCWD, \"/x\"".into(), libc::EMFILE);
        // SAFETY: the thread's errno location.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::EMFILE);
        let (failures, _) = failures_since(before);
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].call, "openat");
        assert!(!failures[0].frames.is_empty());
        assert!(failures_since(mark()).0.is_empty());
        assert_eq!(json_string("a\"b\n"), "\"a\\\"b\\u000a\"");
    }
}
