//! The names clmulti's kernel-driver emulation (crate `clmulti-kmd-emu`) answers to:
//! one definition for the emulation itself, for scenarios that preload it and for the
//! readings that look for what it reports.
//!
//! Preloaded (`LD_PRELOAD`), the emulation presents Arc A770s (or another of its
//! [`MODELS`]) as Linux's i915 driver does, so that Intel's GPU runtime NEO runs its
//! real kernel-driver path without a GPU.

/// The library, as a scenario names it (`LD_PRELOAD = "{clmulti-kmd-emu}"`).
pub use crate::KMD_EMU as LIBRARY;

/// Emulated devices, 1 to [`MAX_DEVICES`] (default 2).
pub const DEVICES: &str = "CLMULTI_KMD_EMU_DEVICES";
/// Device-local memory per device, bytes (default 16 GiB, an A770's).
pub const LOCAL_MEMORY: &str = "CLMULTI_KMD_EMU_LOCAL_MEMORY";
/// The folder holding the emulated `/dev/dri` and `/sys` trees (made per process, and
/// removed at its exit, when unset).
pub const ROOT: &str = "CLMULTI_KMD_EMU_ROOT";
/// `1`: every ioctl on an emulated descriptor, with its result, on stderr.
pub const TRACE: &str = "CLMULTI_KMD_EMU_TRACE";
/// A file the process's counts are written to at its exit.
pub const REPORT: &str = "CLMULTI_KMD_EMU_REPORT";
/// The device presented: a key of [`MODELS`] (default `a770`).
pub const MODEL: &str = "CLMULTI_KMD_EMU_MODEL";
/// Every knob, for validation and for reports of what was set.
pub const KNOBS: [&str; 6] = [DEVICES, LOCAL_MEMORY, ROOT, TRACE, REPORT, MODEL];
/// Most devices the emulation presents.
pub const MAX_DEVICES: usize = 8;
/// The live counts file of an emulated process (`key: value` lines); it exists only
/// inside a process that runs under the emulation.
pub const COUNTS_PATH: &str = "/run/clmulti-kmd-emu/counts";

/// A device the emulation presents, as clmulti names it (what i915 answers for it is
/// the emulation's own table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Model {
    /// What `clmulti emulate --model` and [`MODEL`] take.
    pub key: &'static str,
    /// The PCI device id i915 reports (`I915_PARAM_CHIPSET_ID`).
    pub pci_id: u16,
    /// The product, as a report names it.
    pub name: &'static str,
    /// Its family as NEO names it (`ProductFamilyOverride`'s value, upper case).
    pub family: &'static str,
    /// A card with memory of its own; integrated GPUs use system memory only.
    pub discrete: bool,
}

/// Arc A770 (DG2-512, discrete, 16 GiB): the seed's GPU, and the default.
pub const A770: Model = Model {
    key: "a770",
    pci_id: 0x56a0,
    name: "Arc A770",
    family: "DG2",
    discrete: true,
};

/// UHD Graphics 770 (Alder Lake-S GT1, integrated, 32 EUs, no device memory): the
/// newest Intel GPU NEO 20.44 (Debian bullseye) lists; it predates DG2. No machine has
/// two integrated GPUs: several are the emulation's, to run NEO's multi-device code.
pub const ADL_S: Model = Model {
    key: "adl-s",
    pci_id: 0x4680,
    name: "UHD Graphics 770 (Alder Lake-S)",
    family: "ADLS",
    discrete: false,
};

/// Every device the emulation presents.
pub const MODELS: [Model; 2] = [A770, ADL_S];

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
