//! How a process ended, as clmulti's processes tell each other: signal names and the
//! exit codes a command ends with.

/// A signal's name (`SIGSEGV`), or `SIG<n>` for one without a name here.
pub fn signal_name(signal: i32) -> String {
    const NAMES: [&str; 16] = [
        "", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
        "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
    ];
    usize::try_from(signal)
        .ok()
        .and_then(|i| NAMES.get(i))
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("SIG{signal}"), |n| (*n).to_owned())
}

/// The tool could not do its job (no runtime, I/O, a closed stdout).
pub const EXIT_TOOL: u8 = 1;
/// The input was wrong (a scenario, the arguments).
pub const EXIT_INPUT: u8 = 2;

/// The exit code of a command a signal stopped after it reported: `128 + signal`, as
/// a shell reports a process the signal killed.
pub fn exit_by_signal(signal: i32) -> u8 {
    128u8.wrapping_add(signal as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_and_exits_follow_the_shell() {
        assert_eq!(signal_name(6), "SIGABRT");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(40), "SIG40");
        assert_eq!(exit_by_signal(libc::SIGINT), 130);
    }
}
