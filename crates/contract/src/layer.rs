//! The names clmulti's emulation layer (crate `clmulti-layer`) answers to: its knobs,
//! read from a run's environment, and the query that tells a run the layer is in the
//! call path. What the knobs' values mean is `clmulti-scenario`'s `layer` module's to
//! parse.

/// Which candidate explanations of the seed's failure the layer models: one policy,
/// or several joined by commas (`fail-after,fd-per-peer`), each acting on every buffer.
pub const POLICY: &str = "CLMULTI_LAYER_POLICY";
/// host-mirror: the most mirror bytes before creation fails (a size, or `N%` of RAM).
pub const MIRROR_LIMIT: &str = "CLMULTI_LAYER_MIRROR_LIMIT";
/// Any policy: each device's memory as the layer reports and enforces it (a size).
pub const DEVICE_MEMORY: &str = "CLMULTI_LAYER_DEVICE_MEMORY";
/// fail-after: multi-device buffers created before creation fails.
pub const FAIL_AFTER: &str = "CLMULTI_LAYER_FAIL_AFTER";
/// fail-after: the error creation fails with (an OpenCL status, default -6).
pub const FAIL_ERROR: &str = "CLMULTI_LAYER_FAIL_ERROR";
/// fail-after: what the count is kept for: `process` (default) or `context`.
pub const FAIL_SCOPE: &str = "CLMULTI_LAYER_FAIL_SCOPE";
/// byte-budget: the most bytes of live multi-device buffers (a size, default 1GiB).
pub const BYTE_BUDGET: &str = "CLMULTI_LAYER_BYTE_BUDGET";
/// Every knob, for validation.
pub const KNOBS: [&str; 7] = [
    POLICY,
    MIRROR_LIMIT,
    DEVICE_MEMORY,
    FAIL_AFTER,
    FAIL_ERROR,
    FAIL_SCOPE,
    BYTE_BUDGET,
];
/// A `clGetPlatformInfo` parameter only the layer answers, with its policy's name
/// (`none` without one): how a run knows the layer is in the call path, since an ICD
/// loader without layer support ignores `OPENCL_LAYERS` without a word.
pub const ACTIVE_QUERY: u32 = 0x7C1A_0001;
