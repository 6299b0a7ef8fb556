//! What the emulation presents, read once from the environment.

use clmulti_drm_uapi::{
    I915_ENGINE_CLASS_COMPUTE as COMPUTE, I915_ENGINE_CLASS_COPY as COPY,
    I915_ENGINE_CLASS_RENDER as RENDER, I915_ENGINE_CLASS_VIDEO as VIDEO,
    I915_ENGINE_CLASS_VIDEO_ENHANCE as VIDEO_ENHANCE,
};
pub use clmulti_scenario::kmd_emu::Model;

/// The DRM character-device major.
pub const DRM_MAJOR: u32 = 226;
/// Most devices the emulation presents.
pub const MAX_DEVICES: usize = clmulti_scenario::kmd_emu::MAX_DEVICES;

/// What i915 reports of one device model. Values no uAPI fixes for a model (the
/// timestamp clock of a board, clock ranges) are a typical part's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hardware {
    /// Its name and PCI id.
    pub model: Model,
    /// The PCI revision (stepping), as `lspci` shows it.
    pub revision: u16,
    /// Subslices (dual-subslices since Gen12) the topology query has room for.
    pub max_subslices: u32,
    /// Subslices enabled, the first ones.
    pub subslices: u32,
    /// EUs per subslice.
    pub eus_per_subslice: u32,
    /// Engines as `(class, instance)`, in i915's order.
    pub engines: &'static [(u16, u16)],
    /// The command streamer's timestamp clock, Hz.
    pub cs_timestamp_hz: u64,
    /// The GT clock's range, MHz (min, max).
    pub clock_mhz: (u32, u32),
    /// Device memory, bytes; 0 for an integrated GPU (system memory only).
    pub local_bytes: u64,
    /// Whether the GPU shares the CPU's last-level cache (integrated parts).
    pub has_llc: bool,
}

impl Hardware {
    /// Whether it has memory of its own (a discrete card).
    pub fn discrete(&self) -> bool {
        self.model.discrete
    }

    /// The PCI address of device `index`: discrete cards behind a switch each (one bus
    /// apiece), an integrated GPU where Intel's always is (00:02.0), further ones
    /// beside it (no machine has two: they exist to run multi-device code).
    pub fn bdf(&self, index: usize) -> String {
        if self.discrete() {
            format!("0000:{:02x}:00.0", 3 + index)
        } else {
            format!("0000:00:{:02x}.0", 2 + index)
        }
    }

    /// The hardware of `model`.
    pub fn of(model: Model) -> &'static Hardware {
        [&A770, &ADL_S]
            .into_iter()
            .find(|h| h.model == model)
            .unwrap_or(&A770)
    }
}

/// Arc A770 (DG2-512, "Alchemist"): the seed's GPU. One slice of 32 dual-subslices of
/// 16 EUs, as i915 reports Xe-HPG (it folds DG2's slices into one); retail stepping C0
/// (`rev 08`); 16 GiB of device memory.
pub const A770: Hardware = Hardware {
    model: clmulti_scenario::kmd_emu::A770,
    revision: 0x08,
    max_subslices: 32,
    subslices: 32,
    eus_per_subslice: 16,
    engines: &[
        (RENDER, 0),
        (COPY, 0),
        (VIDEO, 0),
        (VIDEO, 1),
        (VIDEO_ENHANCE, 0),
        (VIDEO_ENHANCE, 1),
        (COMPUTE, 0),
        (COMPUTE, 1),
        (COMPUTE, 2),
        (COMPUTE, 3),
    ],
    cs_timestamp_hz: 100_000_000,
    clock_mhz: (300, 2400),
    local_bytes: 16 << 30,
    has_llc: false,
};

/// UHD Graphics 770 (Alder Lake-S GT1, Gen12LP, integrated): i915's Gen12 topology of
/// up to 6 dual-subslices, 2 enabled, of 16 EUs (32 EUs); the engines i915 lists for
/// ADL-S (RCS0, BCS0, VCS0, VCS2, VECS0: no compute engine on Gen12LP); a 19.2 MHz
/// crystal clock (boards also use 24 or 38.4); stepping C0 (`rev 0c`); i9-12900K's
/// 300-1550 MHz. Integrated: the LLC, system memory only.
pub const ADL_S: Hardware = Hardware {
    model: clmulti_scenario::kmd_emu::ADL_S,
    revision: 0x0c,
    max_subslices: 6,
    subslices: 2,
    eus_per_subslice: 16,
    engines: &[
        (RENDER, 0),
        (COPY, 0),
        (VIDEO, 0),
        (VIDEO, 2),
        (VIDEO_ENHANCE, 0),
    ],
    cs_timestamp_hz: 19_200_000,
    clock_mhz: (300, 1550),
    local_bytes: 0,
    has_llc: true,
};

/// The environment variables the emulation reads (defined once, in clmulti-scenario).
pub use clmulti_scenario::kmd_emu as env;

/// One emulated device.
#[derive(Debug, Clone)]
pub struct Device {
    /// Index among the emulated devices: card N, render node 128 + N.
    pub index: usize,
    /// PCI address (`0000:03:00.0` for the first).
    pub bdf: String,
    /// Device-local memory, bytes.
    pub local_bytes: u64,
}

impl Device {
    /// The render node's minor number.
    pub fn render_minor(&self) -> u32 {
        128 + self.index as u32
    }
}

/// The emulation's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// What every device is.
    pub hardware: &'static Hardware,
    /// The devices, in PCI order.
    pub devices: Vec<Device>,
    /// System memory the `system0` region reports (the machine's RAM).
    pub system_bytes: u64,
    /// Whether ioctls are traced on stderr.
    pub trace: bool,
}

impl Config {
    /// `devices` A770s with `local_bytes` each, on a machine of `system_bytes`.
    pub fn new(devices: usize, local_bytes: u64, system_bytes: u64) -> Self {
        Self::of(&A770, devices, local_bytes, system_bytes)
    }

    /// `devices` devices of `hardware` with `local_bytes` each (ignored when it has no
    /// device memory), on a machine of `system_bytes`.
    pub fn of(
        hardware: &'static Hardware,
        devices: usize,
        local_bytes: u64,
        system_bytes: u64,
    ) -> Self {
        let local_bytes = if hardware.discrete() { local_bytes } else { 0 };
        let devices = (0..devices.clamp(1, MAX_DEVICES))
            .map(|index| Device {
                index,
                bdf: hardware.bdf(index),
                local_bytes,
            })
            .collect();
        Self {
            hardware,
            devices,
            system_bytes,
            trace: false,
        }
    }

    /// From the environment ([`env`]); bad values fall back to the defaults, said once
    /// on stderr.
    pub fn from_env() -> Self {
        let read = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
        let devices = match read(env::DEVICES).map(|v| v.trim().parse::<usize>()) {
            None => 2,
            Some(Ok(n)) if (1..=MAX_DEVICES).contains(&n) => n,
            Some(_) => {
                eprintln!(
                    "clmulti-kmd-emu: {} must be 1 to {MAX_DEVICES}; using 2",
                    env::DEVICES
                );
                2
            }
        };
        let hardware = match read(env::MODEL) {
            None => &A770,
            Some(key) => match clmulti_scenario::kmd_emu::model(key.trim()) {
                Some(model) => Hardware::of(model),
                None => {
                    eprintln!(
                        "clmulti-kmd-emu: {} must be one of {}; using a770",
                        env::MODEL,
                        clmulti_scenario::kmd_emu::MODELS.map(|m| m.key).join(", ")
                    );
                    &A770
                }
            },
        };
        let local = match read(env::LOCAL_MEMORY).map(|v| v.trim().parse::<u64>()) {
            None => hardware.local_bytes,
            Some(Ok(n)) if n >= 1 << 20 => n,
            Some(_) => {
                eprintln!(
                    "clmulti-kmd-emu: {} must be bytes, at least 1048576; using the model's",
                    env::LOCAL_MEMORY
                );
                hardware.local_bytes
            }
        };
        let mut config = Self::of(hardware, devices, local, system_memory());
        config.trace = read(env::TRACE).is_some_and(|v| v != "0");
        config
    }
}

/// The machine's RAM, bytes (what i915 reports as `system0`'s size).
fn system_memory() -> u64 {
    // SAFETY: sysinfo fills the struct it is given.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable sysinfo struct.
    if unsafe { libc::sysinfo(&mut info) } == 0 {
        info.totalram as u64 * u64::from(info.mem_unit.max(1))
    } else {
        16 << 30
    }
}
