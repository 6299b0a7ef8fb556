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
    /// Emulated devices (Arc A770s on i915 unless [`pci_id`](Self::pci_id) says).
    pub devices: usize,
    /// Device-local memory per device, bytes (0: an integrated GPU).
    pub local_bytes: u64,
    /// The devices' PCI id (0 in reports from before it was kept: A770s).
    #[serde(default)]
    pub pci_id: u16,
}

impl EmulatedDriver {
    /// The emulated device (the A770 when the id is not one clmulti emulates).
    pub fn model(&self) -> clmulti_scenario::kmd_emu::Model {
        clmulti_scenario::kmd_emu::model_of_pci_id(u64::from(self.pci_id))
            .unwrap_or(clmulti_scenario::kmd_emu::A770)
    }

    /// "2 emulated i915 Arc A770 devices".
    pub fn devices_label(&self) -> String {
        let s = if self.devices == 1 { "" } else { "s" };
        format!(
            "{} emulated i915 {} device{s}",
            self.devices,
            self.model().name
        )
    }
}

/// The emulation's counts: `key -> value` as the file gives them (`objects-0-system0`,
/// `maps`, `exports`, `imports`...; the keys are documented in `clmulti-kmd-emu`).
pub type Counts = BTreeMap<String, u64>;

/// Parses the counts file's `key: value` lines (comments and other lines skipped).
pub fn parse_counts(text: &str) -> Counts {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(k, v)| Some((k.trim().to_owned(), v.trim().parse().ok()?)))
        .collect()
}

/// This process's counts, when it runs under the emulation.
pub fn read_counts() -> Option<Counts> {
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
        pci_id: counts
            .get("pci-id")
            .and_then(|&id| u16::try_from(id).ok())
            .unwrap_or(clmulti_scenario::kmd_emu::A770.pci_id),
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
                && !matches!(k.as_str(), "devices" | "local-bytes" | "pci-id")
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
