//! # clmulti-probe: what the OpenCL runtimes and the host offer
//!
//! The bottom layer of clmulti, and the only crate that calls the raw OpenCL C API
//! (through `cl-sys`). It answers five questions without allocating any buffer:
//!
//! - **Which platforms and devices exist**, with the facts that bound allocation
//!   (global memory, max allocation size, host-unified memory, extensions, PCI bus
//!   and UUID where exposed): [`platforms`]. A [`Device`] holds the live handle; its
//!   [`DeviceInfo`] is plain data that reports serialize. Devices can be split into
//!   sub-devices ([`Device::partition`]).
//! - **Which devices a request means**: select by platform name or vendor substring
//!   (the loader's order changes between boots), or by index: [`select`].
//! - **Which host limits apply**: RAM, the cgroup's and the Slurm job's memory,
//!   `RLIMIT_NOFILE`, `RLIMIT_AS`, `RLIMIT_MEMLOCK`, `RLIMIT_NPROC`, `RLIMIT_DATA`,
//!   `vm.max_map_count`, `kernel.threads-max` ([`HostLimits`]), and GPU drivers' own
//!   caps ([`DriverLimits`]).
//! - **How much of them this process uses**: RSS, virtual size, data segment, locked
//!   memory, threads, open fds, dma-buf fds, mappings, the DRM memory the kernel
//!   accounts to its GPU (and DRM accel) clients outside RSS, and the system's
//!   available memory: [`UsageReader`].
//! - **Whether a platform is Intel's GPU runtime NEO running devices that are not
//!   there** (AUB mode, or its kernel-driver path over clmulti's emulated i915 driver,
//!   whose counts [`kmd_emu`] reads), and what NEO's own allocation log says: [`neo`].
//!
//! Every OpenCL status is shown by name and number through [`ClCode`]:
//! `CL_OUT_OF_HOST_MEMORY (-6)`.
//!
//! ## Contract
//! - The unsafe FFI lives in [`raw`] and states its `# Safety` requirements. Outside
//!   it, the unsafe code is the [`Device`] handle's reference counting and the
//!   `/proc` reads of [`UsageReader`], each with its `SAFETY` note.
//! - A query that fails on one device is kept in that field as [`Queried::Error`];
//!   listing fails only when the loader does, or there is no platform at all
//!   ([`ProbeError::NoPlatform`], whose message names the packages to install).
//!
//! ## Example
//! ```no_run
//! let platforms = clmulti_probe::platforms()?;
//! for p in &platforms {
//!     for d in &p.devices {
//!         let info = d.info();
//!         println!("{} {} {:?} bytes", info.selector, info.display_name(), info.global_mem_bytes.value());
//!     }
//! }
//! let limits = clmulti_probe::HostLimits::read();
//! println!("fd soft limit: {:?}", limits.nofile_soft);
//! let usage = clmulti_probe::UsageReader::open().read();
//! println!("RSS {} B, {} DRM figures", usage.process.rss_bytes, usage.drm.len());
//! # Ok::<(), clmulti_probe::ProbeError>(())
//! ```
//!
//! The binary links `libOpenCL.so` (the ICD loader) at build time: on Debian or
//! Ubuntu install `ocl-icd-opencl-dev` to build and `ocl-icd-libopencl1` to run.

mod cgroup;
mod counts;
mod device;
pub mod drm;
pub mod environment;
mod error_names;
mod host;
mod kernel_memory;
pub mod kmd_emu;
mod mapped;
pub mod neo;
#[cfg(feature = "nvml")]
mod nvml;
mod platform;
pub mod raw;
mod select;
pub mod strace;
pub mod trace;
mod usage;

pub use cgroup::{cgroup_memory_headroom, cgroup_memory_limit, own_cgroup_headroom, CgroupPids};
pub use clmulti_scenario::{Partition, Rlimit};
pub use device::{
    Device, DeviceInfo, DeviceKind, DeviceTypeFilter, ParentDevice, PciBus, Queried, PIN_EXTENSION,
};
pub use drm::{DriverLimits, DrmMemoryKind, DrmUsage};
pub use error_names::{error_name, ClCode, ERROR_NAMES};
pub use host::{
    host_name, meminfo_kib, os_words, rlimit, set_soft_rlimit, set_soft_rlimits, slurm_memory,
    HostLimits, MemoryCeiling, RlimitValues,
};
pub use kernel_memory::KernelMemory;
pub use mapped::{is_mapped, loaded_library};
#[cfg(feature = "nvml")]
pub use nvml::NvmlMemory;
pub use platform::{
    is_pocl, on_loading, platform_text, platforms, pocl_cpu_driver, DevicesReport, Platform,
    PlatformInfo, DEVICES_SCHEMA_VERSION,
};
pub use select::{
    check_platform, select, select_listed, DeviceChoice, DeviceRequest, PlatformSelector,
    SelectError, Selection,
};
pub use usage::{ProcessUsage, Statm, SystemMemory, Usage, UsageReader};

/// The advice shown when no OpenCL platform is found.
pub const INSTALL_HINT: &str = "install an OpenCL runtime: on Debian/Ubuntu run \
`scripts/setup-opencl.sh` (or `sudo apt-get install ocl-icd-libopencl1 pocl-opencl-icd` for CPU \
devices), or your GPU vendor's OpenCL driver; the loader reads its ICD files from \
/etc/OpenCL/vendors unless OCL_ICD_VENDORS points elsewhere";

/// What to do when the loader lists no platform: where it looked, when the
/// environment told it where to look, else how to install a runtime.
fn no_platform_hint() -> String {
    match std::env::var("OCL_ICD_VENDORS") {
        Ok(dir) if !dir.is_empty() => format!(
            "OCL_ICD_VENDORS={dir} names no runtime the loader could load (no .icd file there, \
             or their libraries failed to load): point it at a folder of .icd files, or unset \
             it to use /etc/OpenCL/vendors; or {INSTALL_HINT}"
        ),
        _ => INSTALL_HINT.to_owned(),
    }
}

/// Why probing could not list any platform.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The loader answered, but no ICD (runtime) is registered.
    #[error("no OpenCL platform found: {}", no_platform_hint())]
    NoPlatform,
    /// `clGetPlatformIDs` itself failed.
    #[error("the OpenCL ICD loader failed: clGetPlatformIDs returned {0}; {INSTALL_HINT}")]
    Loader(ClCode),
}
