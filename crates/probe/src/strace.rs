//! A system-call observer: Debian's `strace`, run around one child, for the one
//! question the libc tracer (crate `clmulti-trace`) cannot answer: did *any* system
//! call fail inside the OpenCL call that failed? The tracer sees calls through libc's
//! dynamic symbols only; strace, through ptrace, sees every system call of every
//! thread, raw ones and those libc makes inside itself. It costs a context switch per
//! call, so it watches only the replicate a verdict needs, never a measured run.
//!
//! The child runs as `strace -f -qq -ttt -Z -k -o LOG -- program ...`: every thread,
//! wall-clock times, failed calls only, each with its stack. The engine, told by
//! [`OBSERVED_ENV`], records when the failing OpenCL call began and ended; the calls
//! strace logged between those times are the ones inside it ([`failed_between`]).

use crate::trace::{Frame, TracedCall};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Set in a child that a system-call observer watches: its engine records when the
/// failing call began and ended.
pub const OBSERVED_ENV: &str = "CLMULTI_OBSERVED";

/// The observer's program.
pub const PROGRAM: &str = "strace";

/// Seconds since the Unix epoch, as strace's `-ttt` prints them.
pub fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// strace on this machine's `PATH`, when it is installed.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(PROGRAM))
        .find(|p| p.is_file())
}

/// The command a child runs under to be observed, its log written to `log`.
pub fn wrapper(strace: &Path, log: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![strace.into()];
    args.extend(["-f", "-qq", "-ttt", "-Z", "-k", "-o"].map(OsString::from));
    args.push(log.into());
    args.push("--".into());
    args
}

/// The calls strace logged as failed with a start time in `[start, end]`, on every
/// thread, in order. Lines it cannot read are skipped.
pub fn failed_between(log: &str, start: f64, end: f64) -> Vec<TracedCall> {
    let mut calls: Vec<TracedCall> = Vec::new();
    let mut in_window = false;
    for line in log.lines() {
        if let Some(frame) = line.strip_prefix(" > ") {
            if let (true, Some(last)) = (in_window, calls.last_mut()) {
                last.stack.extend(frame_of(frame));
            }
            continue;
        }
        in_window = false;
        let Some(call) = failed_call(line) else {
            continue;
        };
        if (start..=end).contains(&call.1) {
            in_window = true;
            calls.push(call.0);
        }
    }
    calls
}

/// One logged line: `PID SECONDS name(args) = -1 ERRNO (text)`, when it is a failed
/// call.
fn failed_call(line: &str) -> Option<(TracedCall, f64)> {
    let mut words = line.splitn(3, ' ').filter(|w| !w.is_empty());
    let pid: i32 = words.next()?.trim().parse().ok()?;
    let rest = line[line.find(' ')?..].trim_start();
    let (time, rest) = rest.split_once(' ')?;
    let time: f64 = time.parse().ok()?;
    let (call, result) = rest.rsplit_once(" = ")?;
    let errno_name = result
        .strip_prefix("-1 ")?
        .split_whitespace()
        .next()?
        .to_owned();
    let (name, args) = call.split_once('(')?;
    let args = args.strip_suffix(')').unwrap_or(args);
    Some((
        TracedCall {
            call: name.trim().to_owned(),
            args: args.to_owned(),
            errno: 0,
            errno_name,
            thread: pid,
            stack: Vec::new(),
        },
        time,
    ))
}

/// A stack line: `/usr/lib/x86_64-linux-gnu/libc.so.6(__open64+0x5b) [0xf8f2b]`.
fn frame_of(text: &str) -> Option<Frame> {
    let (path, rest) = text.split_once('(')?;
    let (symbol, rest) = rest.split_once(')')?;
    let offset = rest.trim().trim_start_matches('[').trim_end_matches(']');
    let module = Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |f| f.to_string_lossy().into_owned());
    Some(Frame {
        module,
        offset: offset.to_owned(),
        symbol: (!symbol.is_empty()).then(|| symbol.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
101 1700000000.100000 openat(AT_FDCWD, \"/etc/ld.so.preload\", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)
 > /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2(_dl_catch_error+0x869d) [0x20b1d]
102 1700000005.500000 inotify_init1(IN_CLOEXEC) = -1 EMFILE (Too many open files)
 > /usr/lib/x86_64-linux-gnu/libc.so.6(inotify_init1+0xb) [0x10f38b]
 > /tmp/layer.so() [0x1f2c]
101 1700000005.600000 +++ exited with 0 +++
101 1700000006.000000 statx(AT_FDCWD, \"/x\", 0, STATX_BASIC_STATS, 0x7ffd) = -1 ENOENT (No such file or directory)
";

    #[test]
    fn calls_inside_the_window_are_read_with_their_stacks() {
        let calls = failed_between(LOG, 1700000005.0, 1700000005.9);
        assert_eq!(calls.len(), 1);
        let c = &calls[0];
        assert_eq!(c.summary(), "inotify_init1(IN_CLOEXEC) failed with EMFILE");
        assert_eq!(c.thread, 102);
        assert_eq!(c.stack.len(), 2);
        assert_eq!(c.stack[0].symbol.as_deref(), Some("inotify_init1+0xb"));
        assert_eq!(c.stack[1].to_string(), "layer.so+0x1f2c");
        assert_eq!(failed_between(LOG, 1.0, 2.0).len(), 0);
        assert_eq!(failed_between(LOG, 0.0, 2e9).len(), 3);
    }

    #[test]
    fn the_wrapper_logs_every_thread_failed_calls_and_stacks() {
        let w = wrapper(Path::new("/usr/bin/strace"), Path::new("/tmp/log"));
        let w: Vec<String> = w.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            w.join(" "),
            "/usr/bin/strace -f -qq -ttt -Z -k -o /tmp/log --"
        );
    }
}
