//! The names clmulti's kernel-driver emulation (crate `clmulti-kmd-emu`) answers to:
//! one definition for the emulation itself, for scenarios that preload it and for the
//! readings that look for what it reports.
//!
//! Preloaded (`LD_PRELOAD`), the emulation presents one of its [`MODELS`] as the model's
//! Linux kernel driver does: Arc A770s (the default) or Alder Lake-S GPUs on i915, Arc
//! B580s on xe ([`DRIVER`] `xe`), so that Intel's GPU runtime NEO runs its real
//! kernel-driver path without a GPU. The driver is [`DRIVER`] (default i915); the
//! device is [`MODEL`], one of that driver's models (default the driver's first).

/// The library, as a scenario names it (`LD_PRELOAD = "{clmulti-kmd-emu}"`).
pub use crate::KMD_EMU as LIBRARY;

/// The kernel driver emulated, a [`Kernel`]'s key: `i915` (the default) or `xe`.
pub const DRIVER: &str = "CLMULTI_KMD_EMU_DRIVER";
/// Emulated devices, 1 to [`MAX_DEVICES`] (default 2).
pub const DEVICES: &str = "CLMULTI_KMD_EMU_DEVICES";
/// Device-local memory per device, bytes (default the model's: 16 GiB on an A770, 12 GiB
/// on a B580; an integrated GPU has none).
pub const LOCAL_MEMORY: &str = "CLMULTI_KMD_EMU_LOCAL_MEMORY";
/// The folder holding the emulated `/dev/dri` and `/sys` trees (made per process, and
/// removed at its exit, when unset).
pub const ROOT: &str = "CLMULTI_KMD_EMU_ROOT";
/// `1`: every ioctl on an emulated descriptor, with its result, on stderr.
pub const TRACE: &str = "CLMULTI_KMD_EMU_TRACE";
/// A file the process's counts are written to at its exit.
pub const REPORT: &str = "CLMULTI_KMD_EMU_REPORT";
/// The device presented: the key of one of [`DRIVER`]'s [`MODELS`] (default the
/// driver's first: `a770` on i915, `b580` on xe).
pub const MODEL: &str = "CLMULTI_KMD_EMU_MODEL";
/// Every knob, for validation and for reports of what was set.
pub const KNOBS: [&str; 7] = [DRIVER, MODEL, DEVICES, LOCAL_MEMORY, ROOT, TRACE, REPORT];
/// Most devices the emulation presents.
pub const MAX_DEVICES: usize = 8;
/// NEO's debug keys the xe emulation needs (`clmulti emulate --driver xe` sets them):
/// NEO 26's direct submission on Battlemage hands work to a ring the GPU keeps running
/// and polls memory for; no GPU runs it here, so NEO submits each batch itself.
pub const XE_NEO_KEYS: [(&str, &str); 2] =
    [("NEOReadDebugKeys", "1"), ("EnableDirectSubmission", "0")];
/// The live counts file of an emulated process (`key: value` lines); it exists only
/// inside a process that runs under the emulation.
pub const COUNTS_PATH: &str = "/run/clmulti-kmd-emu/counts";

/// A Linux kernel driver the emulation answers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kernel {
    /// i915: Intel GPUs up to Alder Lake and Arc Alchemist (DG2).
    #[default]
    I915,
    /// xe: Intel GPUs since Lunar Lake and Arc Battlemage.
    Xe,
}

/// Every kernel driver the emulation answers as.
pub const KERNELS: [Kernel; 2] = [Kernel::I915, Kernel::Xe];

impl Kernel {
    /// Its name, as `DRM_IOCTL_VERSION` gives it and [`DRIVER`] takes it: `i915`, `xe`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::I915 => "i915",
            Kernel::Xe => "xe",
        }
    }

    /// The driver [`name`](Self::name)d `name`.
    pub fn named(name: &str) -> Option<Kernel> {
        KERNELS.into_iter().find(|k| k.name() == name)
    }

    /// The models it drives, in [`MODELS`]' order.
    pub fn models(self) -> impl Iterator<Item = Model> {
        MODELS.into_iter().filter(move |m| m.kernel == self)
    }

    /// The model it presents unless told: its first ([`A770`] on i915, [`B580`] on xe).
    pub fn default_model(self) -> Model {
        self.models().next().unwrap_or(A770)
    }

    /// Its models' keys: "a770, adl-s".
    pub fn model_keys(self) -> String {
        self.models().map(|m| m.key).collect::<Vec<_>>().join(", ")
    }
}

/// A device the emulation presents, as clmulti names it (what its kernel driver
/// answers for it is the emulation's own table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Model {
    /// What `clmulti emulate --model` and [`MODEL`] take.
    pub key: &'static str,
    /// The kernel driver that drives it (`clmulti emulate --driver`, [`DRIVER`]).
    pub kernel: Kernel,
    /// The PCI device id the driver reports (i915's `I915_PARAM_CHIPSET_ID`, xe's
    /// config query).
    pub pci_id: u16,
    /// The product, as a report names it.
    pub name: &'static str,
    /// Its family as NEO names it (`ProductFamilyOverride`'s value, upper case).
    pub family: &'static str,
    /// Device memory, bytes (the default of [`LOCAL_MEMORY`]); 0 for an integrated GPU,
    /// which uses system memory only.
    pub local_bytes: u64,
}

impl Model {
    /// A card with memory of its own.
    pub fn discrete(&self) -> bool {
        self.local_bytes > 0
    }
}

/// Arc A770 (DG2-512, discrete, 16 GiB) on i915: the seed's GPU, and the default.
pub const A770: Model = Model {
    key: "a770",
    kernel: Kernel::I915,
    pci_id: 0x56a0,
    name: "Arc A770",
    family: "DG2",
    local_bytes: 16 << 30,
};

/// UHD Graphics 770 (Alder Lake-S GT1, integrated, 32 EUs, no device memory) on i915:
/// the newest Intel GPU NEO 20.44 (Debian bullseye) lists; it predates DG2. No machine
/// has two integrated GPUs: several are the emulation's, to run NEO's multi-device code.
pub const ADL_S: Model = Model {
    key: "adl-s",
    kernel: Kernel::I915,
    pci_id: 0x4680,
    name: "UHD Graphics 770 (Alder Lake-S)",
    family: "ADLS",
    local_bytes: 0,
};

/// Arc B580 (Battlemage G21, discrete, 12 GiB of GDDR6) on xe: i915 does not drive
/// Battlemage.
pub const B580: Model = Model {
    key: "b580",
    kernel: Kernel::Xe,
    pci_id: 0xe20b,
    name: "Arc B580",
    family: "BMG",
    local_bytes: 12 << 30,
};

/// Every device the emulation presents, each driver's default first.
pub const MODELS: [Model; 3] = [A770, ADL_S, B580];

/// The model `key` names.
pub fn model(key: &str) -> Option<Model> {
    MODELS.into_iter().find(|m| m.key == key)
}

/// The model of PCI device id `id`.
pub fn model_of_pci_id(id: u64) -> Option<Model> {
    MODELS.into_iter().find(|m| u64::from(m.pci_id) == id)
}

/// The model of NEO's family name `family` (`DG2`).
pub fn model_of_family(family: &str) -> Option<Model> {
    MODELS.into_iter().find(|m| m.family == family)
}

/// The model `kernel` presents when [`MODEL`] says `key` (`None`: the driver's
/// default), or why `key` does not fit: not a model, or another driver's.
pub fn model_on(kernel: Kernel, key: Option<&str>) -> Result<Model, String> {
    let Some(key) = key else {
        return Ok(kernel.default_model());
    };
    let keys = kernel.model_keys();
    let model = model(key).ok_or_else(|| {
        format!(
            "not a model of the emulation ({}'s models: {keys})",
            kernel.name()
        )
    })?;
    if model.kernel != kernel {
        return Err(format!(
            "the {} is an {} device, not an {} one ({}'s models: {keys})",
            model.name,
            model.kernel.name(),
            kernel.name(),
            kernel.name()
        ));
    }
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_one_of_its_drivers_and_each_driver_has_a_default() {
        assert_eq!(model_on(Kernel::I915, None), Ok(A770));
        assert_eq!(model_on(Kernel::Xe, None), Ok(B580));
        assert_eq!(model_on(Kernel::I915, Some("adl-s")), Ok(ADL_S));
        assert_eq!(model_on(Kernel::Xe, Some("b580")), Ok(B580));
        let wrong = model_on(Kernel::I915, Some("b580")).unwrap_err();
        assert_eq!(
            wrong,
            "the Arc B580 is an xe device, not an i915 one (i915's models: a770, adl-s)"
        );
        assert!(model_on(Kernel::Xe, Some("a770")).is_err());
        assert!(model_on(Kernel::Xe, Some("b770"))
            .unwrap_err()
            .contains("xe's models: b580"));
        for kernel in KERNELS {
            assert_eq!(Kernel::named(kernel.name()), Some(kernel));
        }
        assert!(!ADL_S.discrete() && A770.discrete() && B580.discrete());
        assert_eq!(model_of_family("BMG").map(|m| m.kernel), Some(Kernel::Xe));
    }
}
