//! How a child ended, in words and figures: the devices it listed, whether loading the
//! runtime failed, and the runtime's output cut around clmulti's failure mark.

use crate::child::ChildOutcome;
use std::os::unix::process::ExitStatusExt;

/// The end of a child's stdout (the runtime's output) a report keeps, bytes.
const OUTPUT_TAIL: usize = 16000;

/// The runtime's output around where the run failed ([`clmulti_probe::trace::FAILURE_MARK`]): lines
/// before it and a few after, within [`OUTPUT_TAIL`]; the end when it never failed.
pub fn around_failure(text: &str) -> String {
    let Some(at) = text.rfind(clmulti_probe::trace::FAILURE_MARK) else {
        return tail(text, OUTPUT_TAIL);
    };
    let before = tail(&text[..at], OUTPUT_TAIL * 3 / 4);
    let after: String = text[at..]
        .lines()
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    let after = &after[..after.len().min(OUTPUT_TAIL / 4)];
    format!("{before}{after}")
}

/// The last `bytes` of `text`, from a line's start.
pub fn tail(text: &str, bytes: usize) -> String {
    if text.len() <= bytes {
        return text.to_owned();
    }
    let cut = text.len() - bytes;
    let cut = text[cut..].find('\n').map_or(cut, |n| cut + n + 1);
    let cut = (cut..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[cut..].to_owned()
}
/// What a [`ChildCommand::devices`] child listed, or why it listed nothing, in
/// words: its error (`no OpenCL platform found: ...`), a crash, a hang.
pub fn devices_report(outcome: &ChildOutcome) -> Result<clmulti_probe::DevicesReport, String> {
    if outcome.status.success() {
        return serde_json::from_str(&outcome.stdout)
            .map_err(|e| format!("`clmulti devices --format json` printed no report: {e}"));
    }
    let said = outcome
        .stderr_tail
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::to_owned);
    Err(match (said, outcome.status.signal()) {
        _ if outcome.timed_out => format!(
            "`clmulti devices` did not finish within {:.0} s (killed)",
            outcome.wall_seconds
        ),
        (Some(said), _) => said,
        (None, Some(signal)) => format!(
            "`clmulti devices` was killed by {}",
            clmulti_contract::signal_name(signal)
        ),
        (None, None) => format!(
            "`clmulti devices` exited with {} and said nothing",
            outcome.status.code().unwrap_or(-1)
        ),
    })
}

/// When the child ended while loading the OpenCL runtime (it said it was loading
/// and never finished its setup) and printed no report: how, in words. Loading that
/// crashes, exits or hangs leaves nothing measured: the caller fails.
pub fn loading_failure(outcome: &ChildOutcome) -> Option<String> {
    let printed =
        outcome.progress.report.is_some() || outcome.stdout.lines().any(|l| l.starts_with('{'));
    if !outcome.progress.loading || outcome.progress.loaded || printed || outcome.interrupted {
        return None;
    }
    let how = if outcome.timed_out {
        format!(
            "did not return within {:.1} s (the child was killed after {:.1} s)",
            outcome.timeout_seconds, outcome.wall_seconds
        )
    } else if let Some(signal) = outcome.status.signal() {
        format!(
            "crashed the process with {}",
            clmulti_contract::signal_name(signal)
        )
    } else {
        format!(
            "ended the process (exit {}) before it returned",
            outcome
                .status
                .code()
                .map_or_else(|| "?".to_owned(), |c| c.to_string())
        )
    };
    Some(format!(
        "loading the OpenCL runtime failed: clGetPlatformIDs {how}; an ICD the loader opened (OCL_ICD_VENDORS, /etc/OpenCL/vendors) hangs, crashes or exits while loading"
    ))
}
