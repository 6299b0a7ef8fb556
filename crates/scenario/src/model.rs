//! The validated scenario: every value checked, every default filled in.
//! Field names here are the report's stable names.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which samples count the process's memory mappings (`sampling.maps`): the count is
/// a walk of about 1 us per mapping, several times the rest of a reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MapsSampling {
    /// The first and last samples, either side of a release round, the 1st, 8th,
    /// 64th..., and the others while the walks cost under 100 us or 0.5% of the loop
    /// (the C library's heap is read at the same samples; the devices' memory and
    /// `status`'s and `meminfo`'s figures there and at the first 8, the 16th, 32nd...).
    #[default]
    Budgeted,
    /// Every sample and every figure, whatever it costs the loop's rate.
    EverySample,
}

/// One run: a scenario file with one point of its grid applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The scenario's name, with the grid point appended: `seed[context.mode=shared]`.
    pub name: String,
    /// What the scenario shows.
    pub description: String,
    /// The file it came from.
    pub file: String,
    /// The grid values applied to this run, `key path -> value`, each as the file
    /// wrote it (`"devices.count": 2`, `"allocation.size": "1MiB"`).
    pub grid_point: BTreeMap<String, toml::Value>,
    /// Which devices.
    pub devices: Devices,
    /// One context over all devices, or one per device.
    pub context_mode: ContextMode,
    /// Shared contexts in the process (`[context] count`, default 1): buffers take
    /// turns over them. Two tell a limit per context from one per process.
    #[serde(default = "one")]
    pub context_count: u64,
    /// What to allocate, and how.
    pub allocation: Allocation,
    /// Environment variables set for the run (before the OpenCL runtime loads).
    pub env: BTreeMap<String, String>,
    /// Resource limits applied to the process that runs the scenario.
    pub limits: Limits,
    /// When to stop early.
    pub guards: Guards,
    /// Sample resources every this many allocations (and at the end, and at a failure).
    pub sample_every: u64,
    /// Which samples count the process's memory mappings.
    #[serde(default)]
    pub sample_maps: MapsSampling,
    /// dAxpy after the loop: over allocated buffers, and split over the devices.
    pub axpy: Axpy,
}

fn one() -> u64 {
    1
}

/// The platform selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    /// The first platform with devices of the wanted type.
    Auto,
    /// The loader's index (changes between boots on some machines).
    Index(usize),
    /// A substring of the platform's name or vendor.
    Name(String),
}

/// Device types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceType {
    /// GPUs.
    Gpu,
    /// CPUs.
    Cpu,
    /// Accelerators.
    Accelerator,
    /// Any type.
    All,
}

/// Which devices of the platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceSet {
    /// The first `n`.
    Count(usize),
    /// These indices among the platform's devices of the wanted type.
    Indices(Vec<usize>),
}

impl DeviceSet {
    /// How many devices the set names.
    pub fn len(&self) -> usize {
        match self {
            DeviceSet::Count(n) => *n,
            DeviceSet::Indices(v) => v.len(),
        }
    }

    /// Always false: validation rejects empty sets.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The `[devices]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Devices {
    /// Which platform.
    pub platform: Platform,
    /// Which type.
    pub device_type: DeviceType,
    /// Which devices.
    pub set: DeviceSet,
    /// With no device of `device_type` anywhere, use devices of any type (e.g. PoCL's
    /// CPU devices on a machine without a GPU). The report says when it happened.
    pub fallback_to_any_type: bool,
    /// Split each device of the type into sub-devices first; `set` then picks among
    /// the sub-devices.
    #[serde(default)]
    pub partition: Option<Partition>,
}

/// How devices are split into sub-devices (`clCreateSubDevices`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Partition {
    /// `CL_DEVICE_PARTITION_EQUALLY`: sub-devices of this many compute units each.
    Equally(u32),
    /// `CL_DEVICE_PARTITION_BY_COUNTS`: one sub-device per entry, of that many compute units.
    ByCounts(Vec<u32>),
}

impl Partition {
    /// Parses the command line's form: `equally` (one compute unit each) or
    /// compute-unit counts `1,1`.
    ///
    /// ```
    /// use clmulti_scenario::Partition;
    /// assert_eq!(Partition::parse("equally"), Ok(Partition::Equally(1)));
    /// assert_eq!(Partition::parse("2, 1"), Ok(Partition::ByCounts(vec![2, 1])));
    /// assert!(Partition::parse("0,1").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim() == "equally" {
            return Ok(Partition::Equally(1));
        }
        text.split(',')
            .map(|c| c.trim().parse::<u32>().ok().filter(|n| *n > 0))
            .collect::<Option<Vec<u32>>>()
            .filter(|counts| !counts.is_empty())
            .map(Partition::ByCounts)
            .ok_or_else(|| format!("{text}: expected \"equally\" or compute-unit counts like 1,1"))
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Partition::Equally(n) => write!(f, "equally, {n} compute unit(s) each"),
            Partition::ByCounts(counts) => write!(f, "by counts {counts:?}"),
        }
    }
}

/// Context mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContextMode {
    /// One context over every selected device (the seed's failing case).
    Shared,
    /// One context per device (the seed's working case).
    PerDevice,
}

impl ContextMode {
    /// Its name in scenario files: `shared`, `per-device`.
    pub fn name(self) -> &'static str {
        match self {
            ContextMode::Shared => "shared",
            ContextMode::PerDevice => "per-device",
        }
    }
}

/// How each buffer is made resident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// `clCreateBuffer` only (the seed).
    Create,
    /// Create, then `clEnqueueFillBuffer` on the placed device (defeats lazy allocation).
    Fill,
    /// Create, then `clEnqueueMigrateMemObjects` to the placed device.
    Migrate,
    /// `clCreateBufferWithProperties` with `CL_MEM_DEVICE_ID_INTEL` (0x4219).
    Pin,
    /// One large buffer per device carved into sub-buffers.
    Pool,
}

impl Strategy {
    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Create => "create",
            Strategy::Fill => "fill",
            Strategy::Migrate => "migrate",
            Strategy::Pin => "pin",
            Strategy::Pool => "pool",
        }
    }
}

/// `cl_mem_flags` bits a scenario may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemFlag {
    /// `CL_MEM_READ_WRITE`
    ReadWrite,
    /// `CL_MEM_READ_ONLY`
    ReadOnly,
    /// `CL_MEM_WRITE_ONLY`
    WriteOnly,
    /// `CL_MEM_ALLOC_HOST_PTR`
    AllocHostPtr,
    /// `CL_MEM_USE_HOST_PTR`, with host memory the engine owns.
    UseHostPtr,
    /// `CL_MEM_COPY_HOST_PTR`, copied from host memory the engine owns.
    CopyHostPtr,
}

impl MemFlag {
    /// The flag's OpenCL bit.
    pub fn bits(self) -> u64 {
        match self {
            MemFlag::ReadWrite => 1 << 0,
            MemFlag::WriteOnly => 1 << 1,
            MemFlag::ReadOnly => 1 << 2,
            MemFlag::UseHostPtr => 1 << 3,
            MemFlag::AllocHostPtr => 1 << 4,
            MemFlag::CopyHostPtr => 1 << 5,
        }
    }

    /// Its name in scenario files: `READ_WRITE`, ...
    pub fn name(self) -> &'static str {
        match self {
            MemFlag::ReadWrite => "READ_WRITE",
            MemFlag::ReadOnly => "READ_ONLY",
            MemFlag::WriteOnly => "WRITE_ONLY",
            MemFlag::AllocHostPtr => "ALLOC_HOST_PTR",
            MemFlag::UseHostPtr => "USE_HOST_PTR",
            MemFlag::CopyHostPtr => "COPY_HOST_PTR",
        }
    }

    /// Whether the engine must supply host memory for each buffer.
    pub fn needs_host_memory(self) -> bool {
        matches!(self, MemFlag::UseHostPtr | MemFlag::CopyHostPtr)
    }
}

/// How many buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Count {
    /// Exactly this many (fewer if something stops the run).
    Fixed(u64),
    /// Until an error or a guard stops the run.
    UntilFailure,
}

/// Which device each buffer is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Buffer `i` goes to device `i % devices`.
    RoundRobin,
    /// Every buffer goes to this device (index among the selected devices).
    Device(usize),
}

impl Placement {
    /// The device (index among `devices`) buffer `index` is placed on.
    ///
    /// ```
    /// use clmulti_scenario::Placement;
    /// assert_eq!(Placement::RoundRobin.device(5, 2), 1);
    /// assert_eq!(Placement::Device(1).device(5, 2), 1);
    /// ```
    #[inline] // called once per buffer by the allocation loop, from another crate
    pub fn device(self, index: u64, devices: usize) -> usize {
        match self {
            Placement::RoundRobin => (index % devices.max(1) as u64) as usize,
            Placement::Device(d) => d,
        }
    }

    /// The share of buffers device `device` of `devices` gets.
    pub fn share(self, device: usize, devices: usize) -> f64 {
        match self {
            Placement::RoundRobin => 1.0 / devices.max(1) as f64,
            Placement::Device(d) if d == device => 1.0,
            Placement::Device(_) => 0.0,
        }
    }

    /// The devices (indices among `devices`) that get buffers.
    pub fn used(self, devices: usize) -> Vec<usize> {
        match self {
            Placement::RoundRobin => (0..devices).collect(),
            Placement::Device(d) => vec![d],
        }
    }
}

/// The `[allocation]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// Bytes per buffer.
    pub size_bytes: u64,
    /// How many.
    pub count: Count,
    /// Memory flags, sorted.
    pub flags: Vec<MemFlag>,
    /// Which device each buffer is for.
    pub placement: Placement,
    /// Keep every buffer alive (the seed), or release each right after creating it.
    pub keep: bool,
    /// How each buffer is made resident.
    pub strategy: Strategy,
    /// For [`Strategy::Pool`]: bytes per pool buffer.
    pub pool_size_bytes: Option<u64>,
    /// Release every live buffer after each this many buffers, then go on: whether
    /// capacity comes back after release (a live limit) or not (a leak, a counter).
    #[serde(default)]
    pub release_every: Option<u64>,
    /// Microseconds to wait after each buffer: a limit on time then fails sooner in
    /// buffers, a limit on buffers does not.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pause_us: u64,
    /// Microseconds to wait after each release of every live buffer: capacity given
    /// back some time after release comes back.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub release_pause_us: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Allocation {
    /// All flags OR-ed together.
    pub fn flag_bits(&self) -> u64 {
        self.flags.iter().fold(0, |acc, f| acc | f.bits())
    }
}

/// A process resource limit a scenario can set (`setrlimit`, soft value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Rlimit {
    /// `RLIMIT_NOFILE`: open file descriptors; key `nofile`.
    #[serde(rename = "nofile")]
    NoFile,
    /// `RLIMIT_AS`: virtual address space, bytes; key `as`.
    #[serde(rename = "as")]
    AddressSpace,
    /// `RLIMIT_MEMLOCK`: locked memory, bytes; key `memlock`.
    #[serde(rename = "memlock")]
    MemLock,
    /// `RLIMIT_NPROC`: processes and threads of the real user; key `nproc`.
    #[serde(rename = "nproc")]
    NProc,
    /// `RLIMIT_DATA`: data segment (heap, private mappings), bytes; key `data`.
    #[serde(rename = "data")]
    Data,
}

impl Rlimit {
    /// Every limit, in the order `[limits]` documents them.
    pub const ALL: [Rlimit; 5] = [
        Rlimit::NoFile,
        Rlimit::AddressSpace,
        Rlimit::MemLock,
        Rlimit::NProc,
        Rlimit::Data,
    ];

    /// Its C name: `RLIMIT_NOFILE`.
    pub fn name(self) -> &'static str {
        match self {
            Rlimit::NoFile => "RLIMIT_NOFILE",
            Rlimit::AddressSpace => "RLIMIT_AS",
            Rlimit::MemLock => "RLIMIT_MEMLOCK",
            Rlimit::NProc => "RLIMIT_NPROC",
            Rlimit::Data => "RLIMIT_DATA",
        }
    }

    /// Its key in `[limits]`: `nofile`, `as`, `memlock`, `nproc`, `data`.
    pub fn key(self) -> &'static str {
        match self {
            Rlimit::NoFile => "nofile",
            Rlimit::AddressSpace => "as",
            Rlimit::MemLock => "memlock",
            Rlimit::NProc => "nproc",
            Rlimit::Data => "data",
        }
    }

    /// Whether its values are bytes (else a count).
    pub fn in_bytes(self) -> bool {
        matches!(self, Rlimit::AddressSpace | Rlimit::MemLock | Rlimit::Data)
    }

    /// The shell command (bash's `ulimit`) that sets its soft value.
    pub fn ulimit_command(self, value: u64) -> String {
        match self {
            Rlimit::NoFile => format!("ulimit -n {value}"),
            Rlimit::AddressSpace => format!("ulimit -v {}", value / 1024),
            Rlimit::MemLock => format!("ulimit -l {}", value / 1024),
            Rlimit::NProc => format!("ulimit -u {value}"),
            Rlimit::Data => format!("ulimit -d {}", value / 1024),
        }
    }
}

/// The `[limits]` table: soft limits applied with `setrlimit` to the process running
/// the scenario, before the OpenCL runtime loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Limits {
    /// Each limit set, with its soft value (bytes or a count, by the limit).
    pub soft: BTreeMap<Rlimit, u64>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        !self.soft.is_empty()
    }

    /// The soft value of one limit, when set.
    pub fn get(&self, which: Rlimit) -> Option<u64> {
        self.soft.get(&which).copied()
    }
}

/// A ceiling on host RSS.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RssLimit {
    /// Absolute bytes.
    Bytes(u64),
    /// A fraction of physical RAM.
    FractionOfRam(f64),
}

/// The `[guards]` table: the engine stops at the first one reached and says which.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Guards {
    /// Total bytes requested.
    pub max_total_bytes: Option<u64>,
    /// Host RSS (default: half of RAM).
    pub max_rss: RssLimit,
    /// Wall-clock seconds of the allocation loop (default 300).
    pub max_seconds: f64,
}

/// The `[axpy]` table: dAxpy after the allocation loop, before release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axpy {
    /// dAxpy over pairs of the allocated buffers.
    pub check: AxpyCheck,
    /// One dAxpy split over all the run's devices, in its context mode: throughput
    /// beside the allocation costs.
    #[serde(default)]
    pub split: bool,
}

/// dAxpy over the allocated buffers, after the loop and before release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AxpyCheck {
    /// No check.
    None,
    /// This many pairs of buffers, spread over the run.
    Sample(u64),
    /// Every pair of buffers.
    All,
}
