//! The names clmulti's kernel-driver emulation (crate `clmulti-kmd-emu`) answers to:
//! one definition for the emulation itself, for scenarios that preload it and for the
//! readings that look for what it reports.
//!
//! Preloaded (`LD_PRELOAD`), the emulation presents Arc A770s as Linux's i915 driver
//! does (or Arc B580s as its xe driver does, with [`DRIVER`] `xe`), so that Intel's GPU
//! runtime NEO runs its real kernel-driver path without a GPU.

/// The library, as a scenario names it (`LD_PRELOAD = "{clmulti-kmd-emu}"`).
pub use crate::KMD_EMU as LIBRARY;

/// The kernel driver emulated: `i915` (Arc A770s, the default) or `xe` (Arc B580s).
pub const DRIVER: &str = "CLMULTI_KMD_EMU_DRIVER";
/// Emulated devices, 1 to [`MAX_DEVICES`] (default 2).
pub const DEVICES: &str = "CLMULTI_KMD_EMU_DEVICES";
/// Device-local memory per device, bytes (default 16 GiB, an A770's; 12 GiB, a B580's,
/// on xe).
pub const LOCAL_MEMORY: &str = "CLMULTI_KMD_EMU_LOCAL_MEMORY";
/// The folder holding the emulated `/dev/dri` and `/sys` trees (made per process, and
/// removed at its exit, when unset).
pub const ROOT: &str = "CLMULTI_KMD_EMU_ROOT";
/// `1`: every ioctl on an emulated descriptor, with its result, on stderr.
pub const TRACE: &str = "CLMULTI_KMD_EMU_TRACE";
/// A file the process's counts are written to at its exit.
pub const REPORT: &str = "CLMULTI_KMD_EMU_REPORT";
/// Every knob, for validation and for reports of what was set.
pub const KNOBS: [&str; 6] = [DRIVER, DEVICES, LOCAL_MEMORY, ROOT, TRACE, REPORT];
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
