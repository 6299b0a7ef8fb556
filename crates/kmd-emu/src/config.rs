//! What the emulation presents, read once from the environment.

pub use clmulti_contract::kmd_emu::{Kernel, Model};
use clmulti_drm_uapi::{
    I915_ENGINE_CLASS_COMPUTE as COMPUTE, I915_ENGINE_CLASS_COPY as COPY,
    I915_ENGINE_CLASS_RENDER as RENDER, I915_ENGINE_CLASS_VIDEO as VIDEO,
    I915_ENGINE_CLASS_VIDEO_ENHANCE as VIDEO_ENHANCE,
};

/// The DRM character-device major.
pub const DRM_MAJOR: u32 = 226;
/// Most devices the emulation presents.
pub const MAX_DEVICES: usize = clmulti_contract::kmd_emu::MAX_DEVICES;

/// What the kernel driver reports of one device model (the model says which driver:
/// i915 or xe). Values no uAPI fixes for a model (the timestamp clock of a board, clock
/// ranges) are a typical part's.
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
    /// Engines as `(class, instance)`, in the driver's order (i915 and xe number the
    /// classes alike: render 0, copy 1, video 2, video-enhance 3, compute 4).
    pub engines: &'static [(u16, u16)],
    /// The command streamer's timestamp clock, Hz.
    pub cs_timestamp_hz: u64,
    /// The GT clock's range, MHz (min, max).
    pub clock_mhz: (u32, u32),
    /// Whether the GPU shares the CPU's last-level cache (integrated parts).
    pub has_llc: bool,
}

impl Hardware {
    /// The kernel driver that drives it.
    pub fn kernel(&self) -> Kernel {
        self.model.kernel
    }

    /// Whether it has memory of its own (a discrete card).
    pub fn discrete(&self) -> bool {
        self.model.discrete()
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

    /// How many engines of `class` it has.
    pub fn engines_of_class(&self, class: u16) -> usize {
        self.engines.iter().filter(|&&(c, _)| c == class).count()
    }

    /// The timestamp counter `now_ns` nanoseconds into the host's clock (ticks of
    /// [`cs_timestamp_hz`](Self::cs_timestamp_hz)).
    pub fn timestamp(&self, now_ns: u64) -> u64 {
        (u128::from(now_ns) * u128::from(self.cs_timestamp_hz) / 1_000_000_000) as u64
    }

    /// The hardware of `model`.
    pub fn of(model: Model) -> &'static Hardware {
        [&A770, &ADL_S, &B580]
            .into_iter()
            .find(|h| h.model == model)
            .unwrap_or(&A770)
    }
}

/// Arc A770 (DG2-512, "Alchemist"): the seed's GPU. One slice of 32 dual-subslices of
/// 16 EUs, as i915 reports Xe-HPG (it folds DG2's slices into one); retail stepping C0
/// (`rev 08`).
pub const A770: Hardware = Hardware {
    model: clmulti_contract::kmd_emu::A770,
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
    has_llc: false,
};

/// UHD Graphics 770 (Alder Lake-S GT1, Gen12LP, integrated): i915's Gen12 topology of
/// up to 6 dual-subslices, 2 enabled, of 16 EUs (32 EUs); the engines i915 lists for
/// ADL-S (RCS0, BCS0, VCS0, VCS2, VECS0: no compute engine on Gen12LP); a 19.2 MHz
/// crystal clock (boards also use 24 or 38.4); stepping C0 (`rev 0c`); i9-12900K's
/// 300-1550 MHz. Integrated: the LLC, system memory only.
pub const ADL_S: Hardware = Hardware {
    model: clmulti_contract::kmd_emu::ADL_S,
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
    has_llc: true,
};

/// Arc B580 (Battlemage G21, Xe2-HPG), on xe: 20 Xe2 cores (dual-subslices) of 8 SIMD16
/// EUs; the engines xe exposes (render, copy and, in CCS mode 1, one compute engine on
/// the main GT; two video and two video-enhance engines on the media GT); a 2850 MHz
/// boost. Invented (xe reads them from the hardware): the revision (one NEO accepts),
/// the 19.2 MHz timestamp clock and the 400 MHz floor.
pub const B580: Hardware = Hardware {
    model: clmulti_contract::kmd_emu::B580,
    revision: 0x00,
    max_subslices: 20,
    subslices: 20,
    eus_per_subslice: 8,
    engines: &[
        (RENDER, 0),
        (COPY, 0),
        (COMPUTE, 0),
        (VIDEO, 0),
        (VIDEO, 1),
        (VIDEO_ENHANCE, 0),
        (VIDEO_ENHANCE, 1),
    ],
    cs_timestamp_hz: 19_200_000,
    clock_mhz: (400, 2850),
    has_llc: false,
};

/// The environment variables the emulation reads (defined once, in clmulti-scenario).
pub use clmulti_contract::kmd_emu as env;

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
    /// What every device is, and so which kernel driver answers
    /// ([`kernel`](Self::kernel)).
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

    /// The kernel driver: the hardware's.
    pub fn kernel(&self) -> Kernel {
        self.hardware.kernel()
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
        let hardware = hardware_from_env();
        let local = match read(env::LOCAL_MEMORY).map(|v| v.trim().parse::<u64>()) {
            None => hardware.model.local_bytes,
            Some(Ok(n)) if n >= 1 << 20 => n,
            Some(_) => {
                eprintln!(
                    "clmulti-kmd-emu: {} must be bytes, at least 1048576; using the model's",
                    env::LOCAL_MEMORY
                );
                hardware.model.local_bytes
            }
        };
        let mut config = Self::of(hardware, devices, local, system_memory());
        config.trace = read(env::TRACE).is_some_and(|v| v != "0");
        config
    }
}

/// A variable of the environment, when set and not empty.
fn read(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

/// The driver ([`env::DRIVER`], default i915) and the model of it ([`env::MODEL`],
/// default the driver's first).
fn hardware_from_env() -> &'static Hardware {
    let kernel = match read(env::DRIVER) {
        None => Kernel::I915,
        Some(name) => Kernel::named(name.trim()).unwrap_or_else(|| {
            eprintln!(
                "clmulti-kmd-emu: {} must be i915 or xe, not {name:?}; using i915",
                env::DRIVER
            );
            Kernel::I915
        }),
    };
    let key = read(env::MODEL);
    let model = env::model_on(kernel, key.as_deref().map(str::trim)).unwrap_or_else(|why| {
        let model = kernel.default_model();
        eprintln!(
            "clmulti-kmd-emu: {}={}: {why}; using {}",
            env::MODEL,
            key.unwrap_or_default(),
            model.key
        );
        model
    });
    Hardware::of(model)
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
