//! What the emulation presents, read once from the environment.

/// Arc A770 (DG2-512, "Alchemist"): the seed's GPU.
pub const CHIPSET_ID: u16 = 0x56a0;
/// The A770's retail stepping (C0), as `lspci` shows it: `(rev 08)`.
pub const REVISION: u16 = 0x08;
/// The A770's device memory: 16 GiB.
pub const DEFAULT_LOCAL_BYTES: u64 = 16 << 30;
/// The DRM character-device major.
pub const DRM_MAJOR: u32 = 226;
/// Most devices the emulation presents.
pub const MAX_DEVICES: usize = clmulti_scenario::kmd_emu::MAX_DEVICES;
/// The A770's topology as i915 reports Xe-HPG: one slice of 32 dual-subslices of 16 EUs.
pub const SUBSLICES: u32 = 32;
/// EUs per dual-subslice.
pub const EUS_PER_SUBSLICE: u32 = 16;
/// The command streamer's timestamp clock on DG2, Hz.
pub const CS_TIMESTAMP_HZ: u64 = 100_000_000;

/// The environment variables the emulation reads (defined once, in clmulti-scenario).
pub use clmulti_scenario::kmd_emu as env;

/// Arc B580 (Battlemage G21), the xe emulation's device.
pub const XE_DEVICE_ID: u16 = 0xe20b;
/// The PCI revision the xe config query and sysfs give (invented: a value NEO accepts).
pub const XE_REVISION: u16 = 0x00;
/// The B580's memory: 12 GiB of GDDR6.
pub const XE_VRAM_BYTES: u64 = 12 << 30;

/// Which kernel driver the emulation is: the files, ioctls and fdinfo it answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kernel {
    /// i915, on Arc A770s (DG2).
    #[default]
    I915,
    /// xe, on Arc B580s (Battlemage): [`crate::xe`].
    Xe,
}

impl Kernel {
    /// The driver's name, as `DRM_IOCTL_VERSION` and fdinfo give it.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::I915 => "i915",
            Kernel::Xe => "xe",
        }
    }

    /// The device it presents: its PCI id.
    pub fn device_id(self) -> u16 {
        match self {
            Kernel::I915 => CHIPSET_ID,
            Kernel::Xe => XE_DEVICE_ID,
        }
    }

    /// The device it presents: "Arc A770".
    pub fn product(self) -> &'static str {
        match self {
            Kernel::I915 => "Arc A770",
            Kernel::Xe => "Arc B580",
        }
    }

    /// Each device's memory when the environment does not say.
    pub fn default_local_bytes(self) -> u64 {
        match self {
            Kernel::I915 => DEFAULT_LOCAL_BYTES,
            Kernel::Xe => XE_VRAM_BYTES,
        }
    }
}

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
    /// The kernel driver.
    pub kernel: Kernel,
    /// The devices, in PCI order.
    pub devices: Vec<Device>,
    /// System memory the `system0` region reports (the machine's RAM).
    pub system_bytes: u64,
    /// Whether ioctls are traced on stderr.
    pub trace: bool,
}

impl Config {
    /// `devices` devices with `local_bytes` each, on a machine of `system_bytes`.
    pub fn new(devices: usize, local_bytes: u64, system_bytes: u64) -> Self {
        let devices = (0..devices.clamp(1, MAX_DEVICES))
            .map(|index| Device {
                index,
                // Real A770s sit behind a switch each; distinct buses keep them apart.
                bdf: format!("0000:{:02x}:00.0", 3 + index),
                local_bytes,
            })
            .collect();
        Self {
            kernel: Kernel::I915,
            devices,
            system_bytes,
            trace: false,
        }
    }

    /// The same devices on another kernel driver.
    pub fn on(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        self
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
        let kernel = match read(env::DRIVER).as_deref().map(str::trim) {
            None | Some("i915") => Kernel::I915,
            Some("xe") => Kernel::Xe,
            Some(other) => {
                eprintln!(
                    "clmulti-kmd-emu: {} must be i915 or xe, not {other:?}; using i915",
                    env::DRIVER
                );
                Kernel::I915
            }
        };
        let default_local = kernel.default_local_bytes();
        let local = match read(env::LOCAL_MEMORY).map(|v| v.trim().parse::<u64>()) {
            None => default_local,
            Some(Ok(n)) if n >= 1 << 20 => n,
            Some(_) => {
                eprintln!(
                    "clmulti-kmd-emu: {} must be bytes, at least 1048576; using {} GiB",
                    env::LOCAL_MEMORY,
                    default_local >> 30
                );
                default_local
            }
        };
        let mut config = Self::new(devices, local, system_memory()).on(kernel);
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
