//! clmulti's call tracer (crate `clmulti-trace`), seen from a process it runs in: the
//! system calls that failed inside an OpenCL call, and the calls counted by kind.
//!
//! The tracer, when preloaded, exports `clmulti_trace_mark`, `clmulti_trace_seq`,
//! `clmulti_trace_own`, `clmulti_trace_failures` and `clmulti_trace_counts`;
//! [`Tracer::find`] looks them up and is `None` when the tracer is not loaded (nothing
//! else depends on it). What clmulti does itself while it reads (its `/proc` reads, and
//! what a preloaded emulation does to answer them) runs under [`Tracer::own`], so the
//! counts and failures are the runtime's alone.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::c_char;

/// One frame of a failed call's stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The module's file name (`libigdrcl.so`).
    pub module: String,
    /// The address's offset in it (`0x72f060`).
    pub offset: String,
    /// The exported symbol and offset, when the module has one there.
    #[serde(default)]
    pub symbol: Option<String>,
}

impl std::fmt::Display for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.symbol {
            Some(symbol) => write!(f, "{symbol} ({})", self.module),
            None => write!(f, "{}+{}", self.module, self.offset),
        }
    }
}

/// A system call (or allocation) that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedCall {
    /// The libc function (`ioctl`, `openat`, `mmap`, `malloc`...).
    pub call: String,
    /// Its arguments, as `strace` prints them.
    pub args: String,
    /// errno.
    pub errno: i32,
    /// errno by name (`EMFILE`).
    pub errno_name: String,
    /// The thread.
    pub thread: i32,
    /// The stack, innermost first.
    pub stack: Vec<Frame>,
}

impl TracedCall {
    /// `ioctl(3, DRM_IOCTL_PRIME_HANDLE_TO_FD) failed with EMFILE`.
    pub fn summary(&self) -> String {
        format!(
            "{}({}) failed with {}",
            self.call, self.args, self.errno_name
        )
    }

    /// The first frames in words, innermost first: `libigdrcl.so+0x742f3c <-
    /// libigdrcl.so+0x72f060`.
    pub fn where_(&self, frames: usize) -> String {
        self.stack
            .iter()
            .take(frames)
            .map(Frame::to_string)
            .collect::<Vec<_>>()
            .join(" <- ")
    }
}

#[derive(Deserialize)]
struct Failures {
    failures: Vec<TracedCall>,
}

type Mark = unsafe extern "C" fn() -> u64;
type Own = unsafe extern "C" fn(libc::c_int) -> libc::c_int;
type Text = unsafe extern "C" fn(u64, *mut c_char, usize) -> usize;
type Counts = unsafe extern "C" fn(*mut c_char, usize) -> usize;

/// The preloaded tracer's entry points.
#[derive(Debug, Clone, Copy)]
pub struct Tracer {
    mark: Mark,
    seq: &'static std::sync::atomic::AtomicU64,
    fd_gen: &'static std::sync::atomic::AtomicU64,
    own: Own,
    failures: Text,
    counts: Counts,
}

fn symbol(name: &std::ffi::CStr) -> Option<usize> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
    (address != 0).then_some(address)
}

impl Tracer {
    /// The tracer, when this process runs under it (looked up once).
    pub fn find() -> Option<Self> {
        static FOUND: std::sync::OnceLock<Option<Tracer>> = std::sync::OnceLock::new();
        *FOUND.get_or_init(Self::look_up)
    }

    fn look_up() -> Option<Self> {
        let (mark, seq, fd_gen, own, failures, counts) = (
            symbol(c"clmulti_trace_mark")?,
            symbol(c"clmulti_trace_seq")?,
            symbol(c"clmulti_trace_fd_gen")?,
            symbol(c"clmulti_trace_own")?,
            symbol(c"clmulti_trace_failures")?,
            symbol(c"clmulti_trace_counts")?,
        );
        // SAFETY: the tracer defines these with these signatures and types (crate
        // clmulti-trace); a preloaded library stays loaded for the process's life.
        unsafe {
            Some(Tracer {
                mark: std::mem::transmute::<usize, Mark>(mark),
                seq: &*(seq as *const std::sync::atomic::AtomicU64),
                fd_gen: &*(fd_gen as *const std::sync::atomic::AtomicU64),
                own: std::mem::transmute::<usize, Own>(own),
                failures: std::mem::transmute::<usize, Text>(failures),
                counts: std::mem::transmute::<usize, Counts>(counts),
            })
        }
    }

    /// Where the failures stand now: take it before a call. Failures from the first
    /// mark on are recorded with their arguments and stack.
    #[inline]
    pub fn mark(&self) -> u64 {
        // SAFETY: the tracer's function takes nothing.
        unsafe { (self.mark)() }
    }

    /// Where the failures stand now, as [`mark`](Self::mark) but without a call: for a
    /// loop that marks before each of its calls, after one `mark`.
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many calls so far may have freed a descriptor number (a close, `dup2`
    /// onto an open one...): while it stands still, each open number names the file
    /// it named before.
    #[inline]
    pub fn fd_generation(&self) -> u64 {
        self.fd_gen.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Marks this thread as clmulti's own until the guard is dropped: its calls are
    /// neither counted nor recorded.
    pub fn own(&self) -> OwnCalls {
        // SAFETY: the tracer's function takes a flag.
        let was = unsafe { (self.own)(1) };
        OwnCalls {
            own: self.own,
            was,
            _thread: std::marker::PhantomData,
        }
    }

    fn text(&self, get: impl Fn(*mut c_char, usize) -> usize) -> String {
        let mut buf = vec![0u8; get(std::ptr::null_mut(), 0) + 1];
        let n = get(buf.as_mut_ptr().cast(), buf.len());
        buf.truncate(n.min(buf.len() - 1));
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// The calls that failed after `mark`, on every thread, in order.
    pub fn failures_since(&self, mark: u64) -> Vec<TracedCall> {
        // SAFETY: a buffer of the length given.
        let json = self.text(|buf, len| unsafe { (self.failures)(mark, buf, len) });
        serde_json::from_str::<Failures>(&json).map_or_else(|_| Vec::new(), |f| f.failures)
    }

    /// Every call counted so far, by kind (`mmap`, `ioctl:DRM_IOCTL_...`).
    pub fn counts(&self) -> BTreeMap<String, u64> {
        // SAFETY: a buffer of the length given.
        let text = self.text(|buf, len| unsafe { (self.counts)(buf, len) });
        crate::counts::parse_counts(&text)
    }
}

/// Marks this thread as clmulti's own to the tracer, when it is loaded, until the
/// guard is dropped ([`Tracer::own`]).
pub fn own_calls() -> Option<OwnCalls> {
    Tracer::find().map(|t| t.own())
}

/// While it lives, the thread that made it is clmulti's own to the tracer
/// ([`Tracer::own`]).
#[derive(Debug)]
#[must_use = "the thread is clmulti's own only while the guard lives"]
pub struct OwnCalls {
    own: Own,
    was: libc::c_int,
    /// Belongs to the thread that made it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for OwnCalls {
    fn drop(&mut self) {
        // SAFETY: the tracer's function takes a flag; restores what the thread was.
        unsafe { (self.own)(self.was) };
    }
}

/// The line a run writes into its stdout (the runtime's output) where it failed, so
/// the runtime's own log can be cut around it.
pub const FAILURE_MARK: &str = "=== clmulti: ";

/// What the tracer cannot see, said once wherever its findings are.
pub const UNSEEN: &str = "calls through libc's dynamic symbols only: not raw syscall(), not libc's calls inside itself (a large malloc's mmap shows as the malloc), not other processes (a daemon)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_parse_and_read_as_a_line() {
        let json = r#"{"dropped":0,"failures":[{"seq":3,"thread":7,"ns":1,"call":"ioctl","args":"3, DRM_IOCTL_PRIME_HANDLE_TO_FD","errno":24,"errno_name":"EMFILE","stack":[{"module":"libigdrcl.so","offset":"0x742f3c","symbol":null},{"module":"libc.so.6","offset":"0x10","symbol":"ioctl+0x5"}]}]}"#;
        let f = serde_json::from_str::<Failures>(json).unwrap().failures;
        assert_eq!(
            f[0].summary(),
            "ioctl(3, DRM_IOCTL_PRIME_HANDLE_TO_FD) failed with EMFILE"
        );
        assert_eq!(
            f[0].where_(2),
            "libigdrcl.so+0x742f3c <- ioctl+0x5 (libc.so.6)"
        );
        assert!(Tracer::find().is_none(), "no tracer in the test process");
    }
}
