//! The C functions a traced program calls, and the report at exit.

use crate::answers::answer;
use crate::api::{copy_out, counts_text, failures_json};
use crate::record;

/// The last failure's number: mark before a call, ask with it after.
#[no_mangle]
pub extern "C" fn clmulti_trace_mark() -> u64 {
    record::mark()
}

/// Records a failed call made outside this library: `libclmulti_trace_alloc.so` hands
/// each allocation that failed here (`call` its name, `args` as `strace` prints
/// them, both NUL-terminated).
///
/// # Safety
/// `call` and `args` are null or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn clmulti_trace_failed(
    call: *const libc::c_char,
    args: *const libc::c_char,
    errno: libc::c_int,
) {
    // SAFETY: the caller's strings, NUL-terminated (or null).
    let text = |p: *const libc::c_char| unsafe { crate::names::c_string(p) };
    let name = match text(call).trim_matches('"') {
        "malloc" => "malloc",
        "calloc" => "calloc",
        "realloc" => "realloc",
        "memalign" => "memalign",
        "aligned_alloc" => "aligned_alloc",
        "posix_memalign" => "posix_memalign",
        _ => "allocation",
    };
    record::failed(name, || text(args).trim_matches('"').to_owned(), errno);
}

/// Marks the calling thread as the program's own (`on` nonzero) or not; returns 1
/// when it was marked.
#[no_mangle]
pub extern "C" fn clmulti_trace_own(on: libc::c_int) -> libc::c_int {
    libc::c_int::from(crate::count::set_own(on != 0))
}

/// The failures after `since` as JSON; returns the length needed.
///
/// # Safety
/// `buf` is null or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn clmulti_trace_failures(
    since: u64,
    buf: *mut libc::c_char,
    len: usize,
) -> usize {
    let text = record::outside(|| answer(|| failures_json(since))).unwrap_or_default();
    // SAFETY: the caller's contract.
    unsafe { copy_out(&text, buf, len) }
}

/// The counts, `key: value` lines; returns the length needed.
///
/// # Safety
/// `buf` is null or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn clmulti_trace_counts(buf: *mut libc::c_char, len: usize) -> usize {
    let text = record::outside(|| answer(counts_text)).unwrap_or_default();
    // SAFETY: the caller's contract.
    unsafe { copy_out(&text, buf, len) }
}

extern "C" fn at_exit() {
    let Some(path) = std::env::var_os(clmulti_contract::trace::REPORT).filter(|p| !p.is_empty())
    else {
        return;
    };
    let text = record::outside(|| {
        let counts: Vec<String> = counts_text()
            .lines()
            .filter_map(|l| l.rsplit_once(": "))
            .map(|(k, v)| format!("{}:{v}", record::json_string(k)))
            .collect();
        format!(
            "{{\"trace\":{},\"counts\":{{{}}}}}\n",
            failures_json(0),
            counts.join(",")
        )
    });
    let Some(text) = text else { return };
    let mut written = std::fs::write(&path, &text);
    if matches!(&written, Err(e) if e.raw_os_error() == Some(libc::EMFILE)) {
        // A process that ran out of descriptors (what the tracer is often there to
        // see) has none left to write with; it is exiting, so its last one can go.
        if let Some(fd) = highest_fd() {
            // SAFETY: closing a descriptor of the exiting process.
            unsafe { libc::syscall(libc::SYS_close, fd) };
            written = std::fs::write(&path, &text);
        }
    }
    if let Err(e) = written {
        eprintln!(
            "clmulti-trace: cannot write {}: {e}",
            path.to_string_lossy()
        );
    }
}

/// The highest open descriptor above the standard streams.
fn highest_fd() -> Option<i32> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is writable.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    let top = i32::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1 << 20);
    // SAFETY: F_GETFD only asks whether the descriptor is open.
    (3..top)
        .rev()
        .find(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0)
}

extern "C" fn init() {
    let asked = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    // A program that never asks gets its report in full; so does full mode.
    let full = asked(clmulti_contract::trace::MODE)
        .is_some_and(|v| clmulti_contract::trace::is_full(&v.to_string_lossy()));
    if full || asked(clmulti_contract::trace::REPORT).is_some() {
        record::detail_from_now();
    }
    // SAFETY: registering a plain extern "C" function.
    unsafe { libc::atexit(at_exit) };
}

/// Runs when the library loads.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;
