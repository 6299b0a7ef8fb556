//! The report of one run: a serde type with stable field names
//! (`schema_version` changes when a field changes meaning).

use clmulti_probe::{ClCode, DeviceInfo, HostLimits, ProcessUsage};
use clmulti_scenario::Scenario;
use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 1;

/// An OpenCL status with its name: `{"code": -6, "name": "CL_OUT_OF_HOST_MEMORY"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCode {
    /// The numeric status.
    pub code: i32,
    /// Its symbolic name.
    pub name: String,
}

impl From<ClCode> for ErrorCode {
    fn from(c: ClCode) -> Self {
        ErrorCode {
            code: c.0,
            name: c.name().to_owned(),
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.code)
    }
}

/// The OpenCL call that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// `clCreateContext`
    CreateContext,
    /// `clCreateCommandQueueWithProperties`
    CreateCommandQueue,
    /// `clCreateBuffer`
    CreateBuffer,
    /// `clCreateBufferWithProperties`
    CreateBufferWithProperties,
    /// `clCreateSubBuffer`
    CreateSubBuffer,
    /// `clEnqueueFillBuffer`
    EnqueueFillBuffer,
    /// `clEnqueueMigrateMemObjects`
    EnqueueMigrateMemObjects,
    /// `clFinish` after an enqueued command
    Finish,
    /// The engine's own host allocation behind a `USE_HOST_PTR` / `COPY_HOST_PTR`
    /// buffer, before any OpenCL call (reported as `CL_OUT_OF_HOST_MEMORY`).
    HostAlloc,
}

impl Call {
    /// The C function's name.
    pub fn c_name(self) -> &'static str {
        match self {
            Call::CreateContext => "clCreateContext",
            Call::CreateCommandQueue => "clCreateCommandQueueWithProperties",
            Call::CreateBuffer => "clCreateBuffer",
            Call::CreateBufferWithProperties => "clCreateBufferWithProperties",
            Call::CreateSubBuffer => "clCreateSubBuffer",
            Call::EnqueueFillBuffer => "clEnqueueFillBuffer",
            Call::EnqueueMigrateMemObjects => "clEnqueueMigrateMemObjects",
            Call::Finish => "clFinish",
            Call::HostAlloc => "the engine's host allocation for the buffer's host pointer",
        }
    }
}

/// The guard that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardKind {
    /// `guards.max_total`
    MaxTotalBytes,
    /// `guards.max_rss`
    MaxRss,
    /// `guards.max_seconds`
    MaxSeconds,
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopReason {
    /// Every buffer asked for was allocated.
    #[default]
    Completed,
    /// An OpenCL call failed.
    Failed {
        /// The status.
        error: ErrorCode,
        /// Which call.
        call: Call,
        /// Which buffer (0-based) was being allocated; 0 for setup calls.
        index: u64,
    },
    /// A guard stopped the run before the machine suffered.
    Guard {
        /// Which guard.
        guard: GuardKind,
        /// The reading that crossed it.
        value: f64,
        /// The guard's limit.
        limit: f64,
    },
    /// The strategy cannot run on these devices.
    Unsupported {
        /// Why, and what to do instead.
        reason: String,
    },
    /// The process running the scenario was killed by a signal (set by the parent).
    Crashed {
        /// Signal number.
        signal: i32,
        /// Its name, e.g. `SIGABRT`.
        signal_name: String,
    },
    /// The process running the scenario outlived its timeout (set by the parent).
    TimedOut {
        /// The timeout.
        seconds: f64,
    },
    /// The process running the scenario exited without a report (set by the parent).
    NoReport {
        /// Its exit code.
        exit_code: Option<i32>,
        /// The end of its stderr.
        stderr_tail: String,
    },
}

impl StopReason {
    /// A crash by `signal`, named.
    pub fn crashed(signal: i32) -> Self {
        StopReason::Crashed {
            signal,
            signal_name: signal_name(signal),
        }
    }

    /// A one-line description: `failed: CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer`.
    pub fn summary(&self) -> String {
        match self {
            StopReason::Completed => "completed".into(),
            StopReason::Failed { error, call, index } => {
                format!("failed: {error} in {} at buffer {index}", call.c_name())
            }
            StopReason::Guard {
                guard,
                value,
                limit,
            } => {
                let gib = |v: f64| format!("{:.2} GiB", v / (1u64 << 30) as f64);
                match guard {
                    GuardKind::MaxTotalBytes => format!(
                        "guard max_total: {} requested would pass {}",
                        gib(*value),
                        gib(*limit)
                    ),
                    GuardKind::MaxRss => {
                        format!(
                            "guard max_rss: host RSS {} passed {}",
                            gib(*value),
                            gib(*limit)
                        )
                    }
                    GuardKind::MaxSeconds => {
                        format!("guard max_seconds: {value:.1} s passed {limit:.1} s")
                    }
                }
            }
            StopReason::Unsupported { reason } => format!("unsupported: {reason}"),
            StopReason::Crashed { signal_name, .. } => format!("crashed: {signal_name}"),
            StopReason::TimedOut { seconds } => format!("timed out after {seconds:.0} s"),
            StopReason::NoReport {
                exit_code,
                stderr_tail,
            } => {
                let code = exit_code.map_or_else(|| "?".to_owned(), |c| c.to_string());
                // The first error line says why; the last one only counts problems.
                let why = stderr_tail
                    .lines()
                    .find(|l| l.trim_start().starts_with("error:"))
                    .or_else(|| stderr_tail.lines().rev().find(|l| !l.trim().is_empty()))
                    .unwrap_or("");
                format!(
                    "no report (exit {code}): {}",
                    why.trim().trim_start_matches("error: ")
                )
            }
        }
    }
}

/// The resource readings at one point of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Buffers allocated so far.
    pub allocations: u64,
    /// Bytes requested so far.
    pub bytes_requested: u64,
    /// Seconds since the loop started.
    pub elapsed_seconds: f64,
    /// Host process readings.
    #[serde(flatten)]
    pub host: ProcessUsage,
    /// Device memory in use per selected device, bytes, where a source exists.
    pub device_used_bytes: Vec<Option<u64>>,
}

/// A resource whose growth per buffer is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case", tag = "resource", content = "device")]
pub enum Resource {
    /// Resident set size, bytes; limit: physical RAM.
    HostRss,
    /// Virtual size, bytes; limit: `RLIMIT_AS`.
    VirtualSize,
    /// Open file descriptors; limit: `RLIMIT_NOFILE` (soft).
    OpenFds,
    /// Memory mappings; limit: `vm.max_map_count`.
    MemoryMaps,
    /// Used memory of one selected device, bytes; limit: its global memory.
    DeviceMemory(usize),
}

impl Resource {
    /// A short human name.
    pub fn label(self) -> String {
        match self {
            Resource::HostRss => "host RSS".into(),
            Resource::VirtualSize => "virtual size".into(),
            Resource::OpenFds => "open fds".into(),
            Resource::MemoryMaps => "memory maps".into(),
            Resource::DeviceMemory(d) => format!("device {d} memory"),
        }
    }

    /// What the limit is called.
    pub fn limit_name(self) -> &'static str {
        match self {
            Resource::HostRss => "physical RAM",
            Resource::VirtualSize => "RLIMIT_AS",
            Resource::OpenFds => "RLIMIT_NOFILE (soft)",
            Resource::MemoryMaps => "vm.max_map_count",
            Resource::DeviceMemory(_) => "device global memory",
        }
    }

    /// How to raise the limit, or get under it.
    pub fn advice(self) -> &'static str {
        match self {
            Resource::HostRss => "each buffer costs host memory: use per-device contexts or pin buffers to one device",
            Resource::VirtualSize => "raise `ulimit -v` (or [limits] as), or allocate fewer, larger buffers",
            Resource::OpenFds => "raise the soft limit: `ulimit -n 1048576` (or [limits] nofile); with Intel multi-GPU contexts each buffer exports handles",
            Resource::MemoryMaps => "raise `sysctl vm.max_map_count`, or pool small buffers (strategy = \"pool\")",
            Resource::DeviceMemory(_) => "the device is full: release buffers or spread them over devices",
        }
    }
}

/// A resource's growth per buffer and where it meets its limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Growth per buffer (least-squares slope over the samples).
    pub per_buffer: f64,
    /// Reading at the first sample.
    pub first: f64,
    /// Reading at the last sample.
    pub last: f64,
    /// The limit, if the resource has one here.
    pub limit: Option<f64>,
    /// The buffer count at which the limit would be reached at this rate.
    pub predicted_count: Option<u64>,
}

/// The first limit the run heads for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// The buffer count at which it runs out.
    pub count: u64,
    /// Whether the run's failure happened within 10% of this count.
    pub matches_failure: Option<bool>,
    /// A sentence a user can act on.
    pub explanation: String,
}

/// Objects created versus released, and the host after release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LeakCheck {
    /// Buffers (and sub-buffers) created.
    pub buffers_created: u64,
    /// Buffers (and sub-buffers) released without error.
    pub buffers_released: u64,
    /// Pool buffers created / released.
    pub pools_created: u64,
    /// Pool buffers released.
    pub pools_released: u64,
    /// Command queues created.
    pub queues_created: u64,
    /// Command queues released.
    pub queues_released: u64,
    /// Contexts created.
    pub contexts_created: u64,
    /// Contexts released.
    pub contexts_released: u64,
    /// Release calls that failed, with their errors.
    pub release_errors: Vec<String>,
    /// Host readings before the first buffer.
    pub before: ProcessUsage,
    /// Host readings after everything was released.
    pub after_release: ProcessUsage,
    /// True when every object was released.
    pub clean: bool,
}

/// The engine's own cost, measured without OpenCL calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Bookkeeping {
    /// Heap bytes the engine holds per buffer (handle list and samples).
    pub bytes_per_buffer: f64,
    /// Nanoseconds of loop overhead per buffer.
    pub ns_per_buffer: f64,
    /// Buffers in the measurement.
    pub measured_buffers: u64,
}

/// Something the reader should know, with what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// Machine-readable kind.
    pub kind: WarningKind,
    /// What happened.
    pub message: String,
    /// What to do.
    pub advice: String,
}

/// Kinds of warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// No device of the wanted type; another type was used.
    FellBackToAnyType,
    /// No source of device-memory readings.
    NoDeviceMemorySource,
    /// The runtime allocates lazily: created buffers may not hold memory yet.
    LazyAllocationLikely,
    /// Too few samples to fit costs.
    FewSamples,
}

/// Where device-memory readings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceMemorySource {
    /// NVML used memory (NVIDIA, feature `nvml`).
    Nvml,
    /// `CL_DEVICE_GLOBAL_FREE_MEMORY_AMD`.
    AmdFreeMemory,
    /// None available.
    None,
}

/// Everything one run found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// clmulti's version.
    pub tool_version: String,
    /// The validated scenario (as JSON, so reports can be read back without it).
    pub scenario: serde_json::Value,
    /// The run's name (scenario name with grid point).
    pub run_name: String,
    /// The platform used.
    pub platform: String,
    /// The probed facts of the devices used.
    pub devices: Vec<DeviceInfo>,
    /// Host limits in force during the run.
    pub host_limits: HostLimits,
    /// Where device-memory readings came from.
    pub device_memory_source: DeviceMemorySource,
    /// Buffers allocated.
    pub buffers: u64,
    /// Bytes requested.
    pub bytes_requested: u64,
    /// Seconds in the allocation loop (wall clock, sampling included).
    pub elapsed_seconds: f64,
    /// Of those, seconds spent taking samples and guard readings (instrumentation).
    pub sampling_seconds: f64,
    /// Buffers per second of the loop without the instrumentation time.
    pub allocations_per_second: Option<f64>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Readings along the way.
    pub samples: Vec<Sample>,
    /// Growth per buffer of each resource.
    pub costs: Vec<Cost>,
    /// The first limit the run heads for.
    pub prediction: Option<Prediction>,
    /// Created versus released.
    pub leak_check: LeakCheck,
    /// The engine's own overhead.
    pub bookkeeping: Bookkeeping,
    /// Messages the driver sent to the context callback.
    pub driver_messages: Vec<String>,
    /// The dAxpy check over allocated buffers, when the scenario asked for one.
    pub axpy_check: Option<AxpyCheckReport>,
    /// Things to know.
    pub warnings: Vec<Warning>,
}

/// `SIGABRT` for 6, and so on; `SIG<n>` for numbers not in the table.
pub fn signal_name(signal: i32) -> String {
    const NAMES: [&str; 16] = [
        "", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
        "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
    ];
    usize::try_from(signal)
        .ok()
        .and_then(|i| NAMES.get(i))
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("SIG{signal}"), |n| (*n).to_owned())
}

/// The result of running dAxpy over allocated buffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AxpyCheckReport {
    /// Pairs of buffers checked.
    pub pairs_checked: u64,
    /// Pairs whose result was right.
    pub pairs_ok: u64,
    /// What went wrong, per failing pair (first 20).
    pub failures: Vec<String>,
}

impl Report {
    /// The report a `clmulti run FILE --index N --format json` child printed, or, when
    /// it printed none, one that says how it ended: killed by a signal (crashed) or
    /// exited with the end of its stderr. Timeouts are the caller's to report.
    pub fn from_child(
        scenario: &Scenario,
        stdout: &str,
        stderr: &str,
        status: std::process::ExitStatus,
    ) -> Self {
        use std::os::unix::process::ExitStatusExt;
        let printed = stdout.lines().find(|l| l.starts_with('{'));
        match (printed.map(serde_json::from_str::<Report>), status.signal()) {
            (Some(Ok(report)), None) => report,
            (_, Some(signal)) => Self::without_measurements(scenario, StopReason::crashed(signal)),
            (parsed, None) => {
                let mut tail = stderr.trim().to_owned();
                if let Some(Err(e)) = parsed {
                    tail.push_str(&format!("\nerror: unreadable report: {e}"));
                }
                let start = (tail.len().saturating_sub(2000)..tail.len())
                    .find(|&i| tail.is_char_boundary(i))
                    .unwrap_or(tail.len());
                Self::without_measurements(
                    scenario,
                    StopReason::NoReport {
                        exit_code: status.code(),
                        stderr_tail: tail[start..].to_owned(),
                    },
                )
            }
        }
    }

    /// A report for a run whose process never produced one (crash, timeout): the
    /// scenario, the stop reason, and nothing measured.
    pub fn without_measurements(scenario: &Scenario, stop: StopReason) -> Self {
        Report {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            scenario: serde_json::to_value(scenario).unwrap_or_default(),
            run_name: scenario.name.clone(),
            platform: String::new(),
            devices: Vec::new(),
            host_limits: HostLimits::read(),
            device_memory_source: DeviceMemorySource::None,
            buffers: 0,
            bytes_requested: 0,
            elapsed_seconds: 0.0,
            sampling_seconds: 0.0,
            allocations_per_second: None,
            stop,
            samples: Vec::new(),
            costs: Vec::new(),
            prediction: None,
            leak_check: LeakCheck::default(),
            bookkeeping: Bookkeeping::default(),
            driver_messages: Vec::new(),
            axpy_check: None,
            warnings: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seen on the GPU node: a child that exits 2 prints the real error first and a
    /// count of problems last; the summary must show the first.
    #[test]
    fn no_report_summary_shows_the_first_error() {
        let stop = StopReason::NoReport {
            exit_code: Some(2),
            stderr_tail: "error: scaling.toml: [devices]: asked for 4 Gpu device(s) on platform 1 (NVIDIA CUDA), found 2\n\
                          error: 1 scenario problem(s); the valid runs were performed\n"
                .into(),
        };
        assert_eq!(
            stop.summary(),
            "no report (exit 2): scaling.toml: [devices]: asked for 4 Gpu device(s) on platform 1 (NVIDIA CUDA), found 2"
        );
    }

    #[test]
    fn guards_say_which_and_in_units() {
        let stop = StopReason::Guard {
            guard: GuardKind::MaxRss,
            value: (5u64 << 30) as f64,
            limit: (4u64 << 30) as f64,
        };
        assert_eq!(
            stop.summary(),
            "guard max_rss: host RSS 5.00 GiB passed 4.00 GiB"
        );
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(6), "SIGABRT");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(40), "SIG40");
        assert_eq!(StopReason::crashed(11).summary(), "crashed: SIGSEGV");
    }

    #[test]
    fn failures_name_the_code_and_call() {
        let stop = StopReason::Failed {
            error: ClCode(-6).into(),
            call: Call::CreateBuffer,
            index: 1003,
        };
        assert_eq!(
            stop.summary(),
            "failed: CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer at buffer 1003"
        );
    }
}
