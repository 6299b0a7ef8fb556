//! clmulti's kernel-driver emulation (crate `clmulti-kmd-emu`), seen from a process it
//! runs in: whether it is there, and the counts it keeps of what the runtime asked of
//! the (emulated) kernel driver.
//!
//! The emulation answers one file only inside a process it is preloaded into,
//! [`COUNTS_PATH`](clmulti_contract::kmd_emu::COUNTS_PATH): reading it is how a
//! process knows its kernel driver is emulated, so a report never calls an emulated
//! driver real, and on real GPUs nothing here is found and nothing depends on it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use clmulti_contract::kmd_emu::COUNTS_PATH;

/// What the emulation presents to this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredDriver")]
pub struct EmulatedDriver {
    /// Emulated devices, all of [`model`](Self::model).
    pub devices: usize,
    /// Device-local memory per device, bytes (0: an integrated GPU).
    pub local_bytes: u64,
    /// The devices' PCI id: the model, and so the kernel driver (0x56a0 an Arc A770 and
    /// 0x4680 an Alder Lake-S on i915, 0xe20b an Arc B580 on xe).
    pub pci_id: u16,
}

use clmulti_contract::kmd_emu::{Kernel, Model};

/// An [`EmulatedDriver`] as reports hold it: those from before the PCI id was kept
/// have none (A770s), or only `kernel: "xe"` (B580s).
#[derive(Deserialize)]
struct StoredDriver {
    devices: usize,
    local_bytes: u64,
    #[serde(default)]
    pci_id: u16,
    #[serde(default)]
    kernel: Option<String>,
}

impl From<StoredDriver> for EmulatedDriver {
    fn from(stored: StoredDriver) -> Self {
        let pci_id = match (stored.pci_id, stored.kernel.as_deref()) {
            (0, Some("xe")) => clmulti_contract::kmd_emu::B580.pci_id,
            (0, _) => clmulti_contract::kmd_emu::A770.pci_id,
            (id, _) => id,
        };
        Self {
            devices: stored.devices,
            local_bytes: stored.local_bytes,
            pci_id,
        }
    }
}

impl EmulatedDriver {
    /// The emulated device (the A770 when the id is not one clmulti emulates).
    pub fn model(&self) -> Model {
        clmulti_contract::kmd_emu::model_of_pci_id(u64::from(self.pci_id))
            .unwrap_or(clmulti_contract::kmd_emu::A770)
    }

    /// The kernel driver emulated: the model's.
    pub fn kernel(&self) -> Kernel {
        self.model().kernel
    }

    /// "2 emulated i915 Arc A770 devices".
    pub fn devices_label(&self) -> String {
        let s = if self.devices == 1 { "" } else { "s" };
        let model = self.model();
        format!(
            "{} emulated {} {} device{s}",
            self.devices,
            model.kernel.name(),
            model.name
        )
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
        pci_id: counts
            .get("pci-id")
            .and_then(|&id| u16::try_from(id).ok())
            .unwrap_or(clmulti_contract::kmd_emu::A770.pci_id),
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
        let xe = EmulatedDriver {
            devices: 2,
            local_bytes: 12 << 30,
            pci_id: 0xe20b,
        };
        assert_eq!(xe.kernel(), Kernel::Xe);
        assert_eq!(xe.devices_label(), "2 emulated xe Arc B580 devices");
        let json = serde_json::to_string(&xe).unwrap();
        assert_eq!(serde_json::from_str::<EmulatedDriver>(&json).unwrap(), xe);
        // Reports from before the PCI id was kept: A770s, or B580s that said xe.
        let read = |json: &str| serde_json::from_str::<EmulatedDriver>(json).unwrap();
        let old_xe = read(r#"{"devices": 2, "local_bytes": 12884901888, "kernel": "xe"}"#);
        assert_eq!(old_xe, xe);
        let old_i915 = read(r#"{"devices": 1, "local_bytes": 17179869184}"#);
        assert_eq!(old_i915.devices_label(), "1 emulated i915 Arc A770 device");
    }
}
