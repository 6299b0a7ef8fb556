//! Counts as clmulti's preloaded libraries give them: `key: value` lines, the
//! emulated kernel driver's (`objects-0-system0`, `maps`, `exports`...; documented in
//! `clmulti-kmd-emu`) and the tracer's (`open`, `ioctl:DRM_IOCTL_...`).

use std::collections::BTreeMap;

/// Counts by key, as the text gives them.
pub type Counts = BTreeMap<String, u64>;

/// Parses `key: value` lines (comments and other lines skipped).
pub fn parse_counts(text: &str) -> Counts {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(k, v)| Some((k.trim().to_owned(), v.trim().parse().ok()?)))
        .collect()
}
