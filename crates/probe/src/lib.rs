//! # clmulti-probe: what the OpenCL runtimes and the host offer
//!
//! The bottom layer of clmulti, and the only crate that calls the raw OpenCL C API
//! (through `cl-sys`). It answers three questions without allocating anything:
//!
//! - **Which platforms and devices exist**, with the facts that bound allocation
//!   (global memory, max allocation size, host-unified memory, extensions, PCI bus
//!   and UUID where exposed): [`platforms`].
//! - **Which devices a request means**: select by platform name or vendor substring
//!   (the loader's order changes between boots), or by index: [`select`].
//! - **Which host limits apply and how much of them this process uses**: open file
//!   descriptors against `RLIMIT_NOFILE`, mappings against `vm.max_map_count`,
//!   virtual size against `RLIMIT_AS`, RSS against RAM: [`HostLimits`], [`ProcessUsage`].
//!
//! Every OpenCL status is shown by name and number through [`ClCode`]:
//! `CL_OUT_OF_HOST_MEMORY (-6)`.
//!
//! ## Contract
//! - The unsafe FFI lives in `raw` and states its `# Safety` requirements; the rest
//!   of the crate is safe.
//! - A query that fails on one device is kept in that field as [`Queried::Error`];
//!   listing fails only when the loader does, or there is no platform at all
//!   ([`ProbeError::NoPlatform`], whose message names the packages to install).
//!
//! ## Example
//! ```no_run
//! let platforms = clmulti_probe::platforms()?;
//! for p in &platforms {
//!     for d in &p.devices {
//!         println!("{} {} {:?} bytes", d.selector, d.display_name(), d.global_mem_bytes.value());
//!     }
//! }
//! let limits = clmulti_probe::HostLimits::read();
//! println!("fd soft limit: {:?}", limits.nofile_soft);
//! # Ok::<(), clmulti_probe::ProbeError>(())
//! ```
//!
//! The binary links `libOpenCL.so` (the ICD loader) at build time: on Debian or
//! Ubuntu install `ocl-icd-opencl-dev` to build and `ocl-icd-libopencl1` to run.

mod devices;
mod error_names;
mod host;
#[cfg(feature = "nvml")]
mod nvml;
pub mod raw;
mod select;

pub use devices::{
    platforms, DeviceHandle, DeviceInfo, DeviceKind, DeviceTypeFilter, PciBus, PlatformInfo,
    Queried,
};
pub use error_names::{error_name, ClCode, ERROR_NAMES};
pub use host::{meminfo_kib, rss_bytes, HostLimits, ProcessUsage, UsageReader};
#[cfg(feature = "nvml")]
pub use nvml::NvmlMemory;
pub use select::{select, DeviceChoice, DeviceRequest, PlatformSelector, SelectError, Selection};

/// The advice shown when no OpenCL platform is found.
pub const INSTALL_HINT: &str = "install an OpenCL runtime: on Debian/Ubuntu run \
`scripts/setup-opencl.sh` (or `sudo apt-get install ocl-icd-libopencl1 pocl-opencl-icd` for CPU \
devices), or your GPU vendor's OpenCL driver; the loader reads its ICD files from \
/etc/OpenCL/vendors unless OCL_ICD_VENDORS points elsewhere";

/// Why probing could not list any platform.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The loader answered, but no ICD (runtime) is registered.
    #[error("no OpenCL platform found: {INSTALL_HINT}")]
    NoPlatform,
    /// `clGetPlatformIDs` itself failed.
    #[error("the OpenCL ICD loader failed: clGetPlatformIDs returned {0}; {INSTALL_HINT}")]
    Loader(ClCode),
}
