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
    /// Emulated devices (Arc A770s on i915, Arc B580s on xe).
    pub devices: usize,
    /// Device-local memory per device, bytes.
    pub local_bytes: u64,
    /// The kernel driver emulated (absent in reports: i915).
    #[serde(default, skip_serializing_if = "Kernel::is_i915")]
    pub kernel: Kernel,
}

/// The kernel driver an emulation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// i915, on Arc A770s (DG2).
    #[default]
    I915,
    /// xe, on Arc B580s (Battlemage).
    Xe,
}

impl Kernel {
    fn is_i915(&self) -> bool {
        *self == Kernel::I915
    }

    /// "i915 Arc A770".
    pub fn devices(self) -> &'static str {
        match self {
            Kernel::I915 => "i915 Arc A770",
            Kernel::Xe => "xe Arc B580",
        }
    }

    /// The driver's name: `i915`, `xe`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::I915 => "i915",
            Kernel::Xe => "xe",
        }
    }

    /// NEO's name of the product: `DG2`, `BMG`.
    pub fn product(self) -> &'static str {
        match self {
            Kernel::I915 => "DG2",
            Kernel::Xe => "BMG",
        }
    }

    /// The kernel driver a product runs on here (`BMG`: xe; anything else: i915).
    pub fn of_product(product: Option<&str>) -> Self {
        match product {
            Some("BMG") => Kernel::Xe,
            _ => Kernel::I915,
        }
    }
}

impl EmulatedDriver {
    /// "2 emulated i915 Arc A770 devices".
    pub fn devices_label(&self) -> String {
        let s = if self.devices == 1 { "" } else { "s" };
        format!(
            "{} emulated {} device{s}",
            self.devices,
            self.kernel.devices()
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
    let _own = crate::trace::own_calls();
    let text = std::fs::read_to_string(COUNTS_PATH).ok()?;
    let counts = parse_counts(&text);
    Some(EmulatedDriver {
        devices: usize::try_from(*counts.get("devices")?).ok()?,
        local_bytes: counts.get("local-bytes").copied().unwrap_or(0),
        kernel: kernel_of(&text),
    })
}

/// The kernel driver a counts file says it is (`driver: xe`; none said: i915).
pub fn kernel_of(text: &str) -> Kernel {
    let xe = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .any(|(k, v)| k.trim() == "driver" && v.trim() == "xe");
    if xe {
        Kernel::Xe
    } else {
        Kernel::I915
    }
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
        assert_eq!(kernel_of("driver: xe\ndevices: 2\n"), Kernel::Xe);
        assert_eq!(kernel_of("devices: 2\n"), Kernel::I915);
        let xe = EmulatedDriver {
            devices: 2,
            local_bytes: 12 << 30,
            kernel: Kernel::Xe,
        };
        assert_eq!(xe.devices_label(), "2 emulated xe Arc B580 devices");
        let json = serde_json::to_string(&EmulatedDriver {
            kernel: Kernel::I915,
            ..xe
        })
        .unwrap();
        assert!(
            !json.contains("kernel"),
            "an i915 report reads as before: {json}"
        );
    }
}
