//! The libraries of this project that a run loads into its process (the layer through
//! the ICD loader, the others through `LD_PRELOAD`), as a scenario names them.

/// A library of this project that a path-valued `[env]` entry can name by a
/// placeholder: the copy built beside the running clmulti binary (`target/debug` or
/// `target/release`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProjectLibrary {
    /// The placeholder (`{clmulti-layer}`).
    pub token: &'static str,
    /// The file cargo builds (`libclmulti_layer.so`).
    pub file_name: &'static str,
    /// The package that builds it.
    pub package: &'static str,
    /// The `[env]` key it belongs in.
    pub env_key: &'static str,
    /// What it is, in words.
    pub what: &'static str,
}

/// clmulti's OpenCL emulation layer (crate `clmulti-layer`), for `OPENCL_LAYERS`.
pub const LAYER: ProjectLibrary = ProjectLibrary {
    token: "{clmulti-layer}",
    file_name: "libclmulti_layer.so",
    package: "clmulti-layer",
    env_key: "OPENCL_LAYERS",
    what: "clmulti's emulation layer",
};
/// clmulti's emulated i915 kernel driver (crate `clmulti-kmd-emu`), for `LD_PRELOAD`.
pub const KMD_EMU: ProjectLibrary = ProjectLibrary {
    token: "{clmulti-kmd-emu}",
    file_name: "libclmulti_kmd_emu.so",
    package: "clmulti-kmd-emu",
    env_key: "LD_PRELOAD",
    what: "clmulti's emulated i915 kernel driver",
};
/// clmulti's call tracer (crate `clmulti-trace`), for `LD_PRELOAD` (clmulti preloads
/// it into every run it starts unless told not to).
pub const TRACE: ProjectLibrary = ProjectLibrary {
    token: "{clmulti-trace}",
    file_name: "libclmulti_trace.so",
    package: "clmulti-trace",
    env_key: "LD_PRELOAD",
    what: "clmulti's call tracer",
};
/// Every project library a scenario can name.
pub const PROJECT_LIBRARIES: [ProjectLibrary; 3] = [LAYER, KMD_EMU, TRACE];
