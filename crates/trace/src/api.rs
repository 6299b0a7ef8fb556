//! What a program asks the tracer, through three C functions it finds with
//! `dlsym(RTLD_DEFAULT, ...)` (present only when the tracer is preloaded), and the
//! report written at exit for programs that never ask.

use crate::names;
use crate::record::{self, json_string, Failure};
use std::fmt::Write as _;

/// The failures after `since` as JSON: `{"dropped": N, "failures": [{"seq", "thread",
/// "ns", "call", "args", "errno", "errno_name", "stack": [{"module", "offset",
/// "symbol"}]}]}`, innermost frame first, the tracer's own frames left out.
pub fn failures_json(since: u64) -> String {
    let (failures, dropped) = record::failures_since(since);
    let own = own_module();
    let mut out = format!("{{\"dropped\":{dropped},\"failures\":[");
    for (i, f) in failures.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_failure(&mut out, f, &own);
    }
    out.push_str("]}");
    out
}

fn write_failure(out: &mut String, f: &Failure, own: &str) {
    let _ = write!(
        out,
        "{{\"seq\":{},\"thread\":{},\"ns\":{},\"call\":{},\"args\":{},\"errno\":{},\"errno_name\":{},\"stack\":[",
        f.seq,
        f.thread,
        f.ns,
        json_string(f.call),
        json_string(&f.args),
        f.errno,
        json_string(&names::errno_name(f.errno)),
    );
    let mut first = true;
    for &address in &f.frames {
        let (module, offset, symbol) = record::frame(address);
        if module == own || module == ALLOC_MODULE {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(
            out,
            "{{\"module\":{},\"offset\":{},\"symbol\":{}}}",
            json_string(&module),
            json_string(&format!("{offset:#x}")),
            symbol.map_or_else(|| "null".to_owned(), |s| json_string(&s))
        );
    }
    out.push_str("]}");
}

/// The allocator half's file name (crate `clmulti-trace-alloc`), whose frames a
/// stack leaves out too.
const ALLOC_MODULE: &str = "libclmulti_trace_alloc.so";

/// The tracer's own file name, whose frames a stack leaves out.
fn own_module() -> String {
    record::frame(own_module as fn() -> String as usize).0
}

/// Every call counted so far: `key: value` lines (`mmap: 12`,
/// `ioctl:DRM_IOCTL_PRIME_HANDLE_TO_FD: 1001`), sorted.
pub fn counts_text() -> String {
    let mut lines: Vec<(String, u64)> = crate::count::snapshot()
        .into_iter()
        .map(|(k, v)| (names::key_name(k), v))
        .collect();
    lines.sort();
    let mut merged: Vec<(String, u64)> = Vec::new();
    for (k, v) in lines {
        match merged.last_mut() {
            Some((last, total)) if *last == k => *total += v,
            _ => merged.push((k, v)),
        }
    }
    merged.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
}

/// Copies `text` into a caller's buffer (NUL-terminated, cut to fit) and returns the
/// bytes it needs, NUL excluded.
///
/// # Safety
/// `buf` is null or valid for `len` bytes of writes.
pub unsafe fn copy_out(text: &str, buf: *mut libc::c_char, len: usize) -> usize {
    if !buf.is_null() && len > 0 {
        let n = text.len().min(len - 1);
        // SAFETY: the caller's contract; `n + 1 <= len`.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    text.len()
}
