//! clmulti's kernel-driver emulation (crate `clmulti-kmd-emu`), seen from a process it
//! runs in: whether it is there, and the counts it keeps of what the runtime asked of
//! the (emulated) kernel driver.
//!
//! The emulation answers one file only inside a process it is preloaded into,
//! [`COUNTS_PATH`]: reading it is how a process knows its kernel driver is emulated, so
//! a report never calls an emulated driver real, and on real GPUs nothing here is
//! found and nothing depends on it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use clmulti_scenario::kmd_emu::COUNTS_PATH;

/// What the emulation presents to this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulatedDriver {
    /// Emulated devices (Arc A770s on i915).
    pub devices: usize,
    /// Device-local memory per device, bytes.
    pub local_bytes: u64,
}

impl EmulatedDriver {
    /// "2 emulated i915 Arc A770 devices".
    pub fn devices_label(&self) -> String {
        let s = if self.devices == 1 { "" } else { "s" };
        format!("{} emulated i915 Arc A770 device{s}", self.devices)
    }
}

pub use crate::counts::{parse_counts, Counts};

/// This process's counts, when it runs under the emulation. The read is clmulti's own
/// to the tracer: the emulation answers it through a memfd the runtime never made.
pub fn read_counts() -> Option<Counts> {
    let _own = crate::trace::own_calls();
    std::fs::read_to_string(COUNTS_PATH)
        .ok()
        .map(|t| parse_counts(&t))
}

/// The emulation, when this process runs under it.
pub fn active() -> Option<EmulatedDriver> {
    let counts = read_counts()?;
    Some(EmulatedDriver {
        devices: usize::try_from(*counts.get("devices")?).ok()?,
        local_bytes: counts.get("local-bytes").copied().unwrap_or(0),
    })
}

/// What one buffer cost the kernel driver, from two readings of the counts `buffers`
/// buffers apart: each live count's growth per buffer (counts that did not move are
/// left out, as are the `-created` totals, which only ever grow).
pub fn per_buffer(before: &Counts, after: &Counts, buffers: u64) -> BTreeMap<String, f64> {
    if buffers == 0 {
        return BTreeMap::new();
    }
    after
        .iter()
        .filter(|(k, _)| {
            !k.contains("-created")
                && !k.starts_with("bytes-")
                && !matches!(k.as_str(), "devices" | "local-bytes")
        })
        .filter_map(|(k, &a)| {
            let b = before.get(k).copied().unwrap_or(0);
            (a != b).then(|| (k.clone(), (a as f64 - b as f64) / buffers as f64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_and_per_buffer_growth_leaves_out_totals() {
        let before = parse_counts("# header\ndevices: 2\nlocal-bytes: 17179869184\nmaps: 3\nexports: 18\nexports-created: 18\nobjects-0-system0: 20\n");
        assert_eq!(before["local-bytes"], 16 << 30);
        let after = parse_counts("devices: 2\nmaps: 1003\nexports: 1018\nexports-created: 1018\nobjects-0-system0: 1020\nimports: 0\n");
        let per = per_buffer(&before, &after, 1000);
        assert_eq!(per.get("maps"), Some(&1.0));
        assert_eq!(per.get("exports"), Some(&1.0));
        assert_eq!(per.get("objects-0-system0"), Some(&1.0));
        assert!(!per.contains_key("exports-created"));
        let created = parse_counts("objects-created-0-local0: 5\n");
        assert!(
            per_buffer(&Counts::new(), &created, 5).is_empty(),
            "totals are not live counts"
        );
        assert!(!per.contains_key("imports"), "unmoved counts are left out");
        assert!(read_counts().is_none(), "no emulation in this test process");
    }
}
