//! The TOML as written: loose types, every key optional, unknown keys rejected.
//! [`crate::validate`] turns it into the trusted [`crate::Scenario`]. What each key
//! means, takes and defaults to is in the table of keys ([`crate::defs`]); a test
//! holds these fields and that table to the same keys.

use serde::Deserialize;
use std::collections::BTreeMap;

/// A number of bytes: an integer, or a string with a unit ("1MiB", "1.5 GiB", "64KB").
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawSize {
    Bytes(u64),
    Text(String),
}

/// An integer, or a keyword string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawNumberOrWord {
    Number(i64),
    Word(String),
}

/// "equally" (one compute unit per sub-device) or a list of compute-unit counts.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawPartition {
    Word(String),
    Counts(Vec<i64>),
}

/// A clmulti scenario: one allocation experiment, expanded over its [grid] into runs.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// The scenario's name (default: the file name; one line, at most 256 bytes); a
    /// grid appends its point.
    pub name: Option<String>,
    /// What the scenario shows (at most 64 KiB).
    pub description: Option<String>,
    /// Which devices.
    #[serde(default)]
    pub devices: RawDevices,
    /// One context over all devices, or one per device.
    #[serde(default)]
    pub context: RawContext,
    /// What to allocate, and how.
    #[serde(default)]
    pub allocation: RawAllocation,
    /// Environment variables set before the OpenCL runtime loads. OPENCL_LAYERS,
    /// OCL_ICD_VENDORS and OCL_ICD_FILENAMES are paths, relative to this file;
    /// "{clmulti-layer}" names clmulti's emulation layer; "{devices.count}" in any
    /// value is the run's device count (e.g. CreateMultipleRootDevices for NEO).
    /// Names without '=', spaces or control characters; values one line of printable
    /// text.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Resource limits (soft) for the process that runs the scenario.
    #[serde(default)]
    pub limits: RawLimits,
    /// When to stop early.
    #[serde(default)]
    pub guards: RawGuards,
    /// When to read the resources.
    #[serde(default)]
    pub sampling: RawSampling,
    /// dAxpy after the allocation loop.
    #[serde(default)]
    pub axpy: RawAxpy,
    /// Keys to vary: "table.key" = [values]; the file expands to every combination.
    #[allow(dead_code)] // Named so serde knows the key: loading takes [grid] out first.
    #[serde(default)]
    pub grid: Option<toml::Table>,
}

/// Which devices.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevices {
    /// "auto", a substring of the platform's name or vendor ("NVIDIA", "Intel"), or an index.
    pub platform: Option<RawNumberOrWord>,
    /// gpu | cpu | accelerator | all (default gpu).
    #[serde(rename = "type")]
    pub device_type: Option<String>,
    /// The first N devices of that type (default 1).
    pub count: Option<i64>,
    /// These devices of that type, by index (instead of count; at most 4096).
    pub indices: Option<Vec<i64>>,
    /// any-type (default: with no device of the type, use any type) | none.
    pub fallback: Option<String>,
    /// Split each device into sub-devices first: "equally" or compute-unit counts [1, 1].
    pub partition: Option<RawPartition>,
}

/// One context over all devices, or one per device.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawContext {
    /// shared (default) | per-device.
    pub mode: Option<String>,
    /// Shared contexts in the process (default 1; only with mode = "shared"): buffers
    /// take turns over them.
    pub count: Option<i64>,
}

/// What to allocate, and how.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAllocation {
    /// Bytes per buffer (default "1MiB").
    pub size: Option<RawSize>,
    /// How many buffers (default 1000), or "until-failure".
    pub count: Option<RawNumberOrWord>,
    /// READ_WRITE (default), READ_ONLY, WRITE_ONLY, ALLOC_HOST_PTR, USE_HOST_PTR, COPY_HOST_PTR.
    pub flags: Option<Vec<String>>,
    /// "round-robin" (default) or the index of one selected device.
    pub placement: Option<RawNumberOrWord>,
    /// Keep every buffer (default true), or release each right after creating it.
    pub keep: Option<bool>,
    /// create (default) | fill | migrate | pin | pool.
    pub strategy: Option<String>,
    /// Strategy pool: bytes per pool buffer (default the larger of size and 256MiB).
    pub pool_size: Option<RawSize>,
    /// Release every live buffer after each N buffers, then go on (default: never).
    pub release_every: Option<i64>,
    /// Microseconds to wait after each buffer (default 0): tells a limit on time
    /// from one on buffers.
    pub pause_us: Option<i64>,
    /// Microseconds to wait after each release of every live buffer (default 0).
    pub release_pause_us: Option<i64>,
}

/// Resource limits (soft) for the process that runs the scenario.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// RLIMIT_NOFILE: open file descriptors (at least 3, at most the hard limit).
    pub nofile: Option<i64>,
    /// RLIMIT_AS: virtual address space (at least "64MiB").
    #[serde(rename = "as")]
    pub address_space: Option<RawSize>,
    /// RLIMIT_MEMLOCK: locked memory (a size; root is exempt).
    pub memlock: Option<RawSize>,
    /// RLIMIT_NPROC: processes and threads of this user (root is exempt).
    pub nproc: Option<i64>,
    /// RLIMIT_DATA: data segment, heap and private mappings (at least "64MiB").
    pub data: Option<RawSize>,
}

/// When to stop early; the run says which guard stopped it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGuards {
    /// Bytes requested at most.
    pub max_total: Option<RawSize>,
    /// Host RSS at most: a size or a percentage of the memory ceiling ("50%", the default).
    pub max_rss: Option<RawSize>,
    /// Seconds of allocation at most (default 300, at most a week).
    pub max_seconds: Option<f64>,
}

/// When to read the resources.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSampling {
    /// Read every N buffers (default 1000), and at the end and at a failure.
    pub every: Option<i64>,
    /// budgeted (default) | every-sample: which samples count the process's mappings.
    pub maps: Option<String>,
}

/// dAxpy after the allocation loop.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAxpy {
    /// none (default) | sample | all: dAxpy over pairs of kept buffers.
    pub check: Option<String>,
    /// With check = "sample": how many pairs (default 8).
    pub samples: Option<i64>,
    /// One dAxpy split over all the run's devices, in its context mode.
    pub split: Option<bool>,
}
