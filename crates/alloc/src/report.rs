//! The report of one run: a serde type with stable field names (`schema_version`
//! changes when a field changes meaning or is removed; [`Report::from_json`] reads
//! older versions).

use crate::analysis::RunAnalysis;
use crate::resource::{Limit, Resource};
use clmulti_probe::{
    ClCode, DeviceInfo, DriverLimits, DrmUsage, HostLimits, ProcessUsage, SystemMemory,
};
use clmulti_scenario::{format_bytes, Scenario};
use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 2;

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

/// The OpenCL call that failed (or hung).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// `clGetPlatformIDs`: the ICD loader found no runtime it could load.
    GetPlatformIds,
    /// `clCreateSubDevices`
    CreateSubDevices,
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
    /// `clReleaseMemObject`
    ReleaseMemObject,
    /// The engine's own host allocation behind a `USE_HOST_PTR` / `COPY_HOST_PTR`
    /// buffer, before any OpenCL call (reported as `CL_OUT_OF_HOST_MEMORY`).
    HostAlloc,
}

impl Call {
    /// Every call, in a fixed order (its index identifies it in a watchdog).
    pub const ALL: [Call; 12] = [
        Call::GetPlatformIds,
        Call::CreateSubDevices,
        Call::CreateContext,
        Call::CreateCommandQueue,
        Call::CreateBuffer,
        Call::CreateBufferWithProperties,
        Call::CreateSubBuffer,
        Call::EnqueueFillBuffer,
        Call::EnqueueMigrateMemObjects,
        Call::Finish,
        Call::ReleaseMemObject,
        Call::HostAlloc,
    ];

    /// The C function's name.
    pub fn c_name(self) -> &'static str {
        match self {
            Call::GetPlatformIds => "clGetPlatformIDs",
            Call::CreateSubDevices => "clCreateSubDevices",
            Call::CreateContext => "clCreateContext",
            Call::CreateCommandQueue => "clCreateCommandQueueWithProperties",
            Call::CreateBuffer => "clCreateBuffer",
            Call::CreateBufferWithProperties => "clCreateBufferWithProperties",
            Call::CreateSubBuffer => "clCreateSubBuffer",
            Call::EnqueueFillBuffer => "clEnqueueFillBuffer",
            Call::EnqueueMigrateMemObjects => "clEnqueueMigrateMemObjects",
            Call::Finish => "clFinish",
            Call::ReleaseMemObject => "clReleaseMemObject",
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
    /// A guard stopped the run before the machine suffered (or before it started,
    /// when one buffer alone would pass it).
    Guard {
        /// Which guard.
        guard: GuardKind,
        /// The reading (or, before an allocation, the estimate) that crossed it.
        value: f64,
        /// The guard's limit.
        limit: f64,
    },
    /// The strategy cannot run on these devices.
    Unsupported {
        /// Why, and what to do instead.
        reason: String,
    },
    /// The machine cannot run this run (e.g. it asks for more devices than exist);
    /// nothing was attempted.
    Skipped {
        /// Why.
        reason: String,
    },
    /// The process running the scenario was killed by a signal (set by the parent).
    Crashed {
        /// Signal number.
        signal: i32,
        /// Its name, e.g. `SIGABRT`.
        signal_name: String,
    },
    /// The run outlived its time limit: its process was killed (set by the parent),
    /// or, in process, a call never returned.
    TimedOut {
        /// The limit.
        seconds: f64,
        /// The call that was running, when known.
        #[serde(default)]
        call: Option<Call>,
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

    /// A one-word outcome for colours and counts: `completed`, `failed`, `guard`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::Failed { .. } => "failed",
            StopReason::Guard { .. } => "guard",
            StopReason::Unsupported { .. } => "unsupported",
            StopReason::Skipped { .. } => "skipped",
            StopReason::Crashed { .. } => "crashed",
            StopReason::TimedOut { .. } => "timed_out",
            StopReason::NoReport { .. } => "no_report",
        }
    }

    /// Whether the run ended without a measurement of its own (crash, kill, no
    /// report): a run `--retry-failed` runs again.
    pub fn is_abnormal(&self) -> bool {
        matches!(
            self,
            StopReason::Crashed { .. } | StopReason::TimedOut { .. } | StopReason::NoReport { .. }
        )
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
            } => match guard {
                GuardKind::MaxTotalBytes => {
                    let (value, limit) = apart(*value, *limit);
                    format!("guard max_total: {value} requested would pass {limit}")
                }
                GuardKind::MaxRss => {
                    let (value, limit) = apart(*value, *limit);
                    format!("guard max_rss: host RSS {value} would pass {limit}")
                }
                GuardKind::MaxSeconds => {
                    format!("guard max_seconds: {value:.1} s passed {limit:.1} s")
                }
            },
            StopReason::Unsupported { reason } => format!("unsupported: {reason}"),
            StopReason::Skipped { reason } => format!("skipped: {reason}"),
            StopReason::Crashed { signal_name, .. } => format!("crashed: {signal_name}"),
            StopReason::TimedOut { seconds, call } => match call {
                Some(call) => format!(
                    "timed out: {} did not return within {seconds:.0} s",
                    call.c_name()
                ),
                None => format!("timed out after {seconds:.0} s"),
            },
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
    /// System memory, when `/proc/meminfo` could be read.
    #[serde(default)]
    pub system: Option<SystemMemory>,
    /// DRM memory of the process's GPU clients (empty without DRM devices).
    #[serde(default)]
    pub drm: Vec<DrmUsage>,
    /// Device memory in use per selected device, bytes, where a source exists.
    pub device_used_bytes: Vec<Option<u64>>,
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
    pub limit: Option<Limit>,
    /// The buffer count at which the limit would be reached at this rate.
    pub predicted_count: Option<u64>,
    /// Whether the reading is an estimate (device memory from declared capacity and
    /// residency) rather than a measurement.
    #[serde(default)]
    pub estimated: bool,
}

/// Objects created versus released, and the host after release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LeakCheck {
    /// Buffers (and sub-buffers) created.
    pub buffers_created: u64,
    /// Buffers (and sub-buffers) released without error.
    pub buffers_released: u64,
    /// Pool buffers created.
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
    /// Created buffers measurably hold no memory yet: the runtime allocates lazily.
    LazyAllocation,
    /// Too few samples to fit costs.
    FewSamples,
    /// The run shared its process with earlier runs: freed memory may be reused, so
    /// per-buffer costs can read low.
    ReusedProcess,
    /// An OpenCL layer (`OPENCL_LAYERS`) was loaded: the runtime's behaviour is
    /// partly the layer's.
    EmulationLayer,
    /// DRM memory of a device the run did not select, or whose PCI address is unknown.
    DrmDeviceUnmatched,
    /// `OPENCL_LAYERS` names a library the ICD loader did not load.
    LayerNotLoaded,
}

/// The OpenCL layers a run ran under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layers {
    /// `OPENCL_LAYERS`.
    pub opencl_layers: String,
    /// clmulti's emulation layer's knobs (`CLMULTI_LAYER_*`), when set.
    pub emulation: Vec<(String, String)>,
}

impl Layers {
    /// The layers named by an environment (`lookup` reads a variable).
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let opencl_layers = lookup("OPENCL_LAYERS").filter(|l| !l.is_empty())?;
        let emulation = clmulti_scenario::layer::KNOBS
            .iter()
            .filter_map(|k| Some((k.to_string(), lookup(k)?)))
            .collect();
        Some(Layers {
            opencl_layers,
            emulation,
        })
    }

    /// The emulation layer's settings, when its knobs are set.
    pub fn settings(&self) -> Option<clmulti_scenario::layer::LayerSettings> {
        clmulti_scenario::layer::LayerSettings::read(|k| {
            self.emulation
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        })
        .ok()?
    }
}

/// The guards a run enforced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectiveGuards {
    /// Bytes requested at most.
    pub max_total_bytes: Option<u64>,
    /// Host RSS at most, bytes.
    pub max_rss_bytes: u64,
    /// Seconds of allocation at most.
    pub max_seconds: f64,
    /// Why a guard is lower than the scenario asked, when it is.
    pub capped: Vec<String>,
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

/// Everything one run found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// clmulti's version.
    pub tool_version: String,
    /// The validated scenario run.
    pub scenario: Scenario,
    /// The run's name (scenario name with grid point).
    pub run_name: String,
    /// The platform used.
    pub platform: String,
    /// Its version string (`CL_PLATFORM_VERSION`).
    #[serde(default)]
    pub platform_version: String,
    /// The probed facts of the devices used.
    pub devices: Vec<DeviceInfo>,
    /// Host limits in force during the run.
    pub host_limits: HostLimits,
    /// GPU drivers' memory caps on this machine.
    #[serde(default)]
    pub driver_limits: DriverLimits,
    /// Where device-memory readings came from.
    pub device_memory_source: DeviceMemorySource,
    /// The OpenCL layers the ICD loader was told to load (`OPENCL_LAYERS` as the run
    /// saw it), and the settings of clmulti's emulation layer among them.
    #[serde(default)]
    pub layers: Option<Layers>,
    /// Whether the run had its process to itself (a fresh process, or the first
    /// run in it): costs from a reused process can read low.
    #[serde(default = "yes")]
    pub fresh_process: bool,
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
    /// Why the run stopped.
    pub stop: StopReason,
    /// Resource readings.
    pub samples: Vec<Sample>,
    /// Growth per buffer of each resource.
    pub costs: Vec<Cost>,
    /// The guards as enforced: the scenario's, capped by what the machine has.
    #[serde(default)]
    pub effective_guards: Option<EffectiveGuards>,
    /// What the measurements say: first limit ahead, cause of a failure.
    #[serde(default)]
    pub analysis: RunAnalysis,
    /// Created versus released.
    pub leak_check: LeakCheck,
    /// The engine's own overhead.
    pub bookkeeping: Bookkeeping,
    /// Messages the driver sent to the context callback.
    pub driver_messages: Vec<String>,
    /// The dAxpy check over allocated buffers, when the scenario asked for one.
    pub axpy_check: Option<AxpyCheckReport>,
    /// The split dAxpy after the loop, when the scenario asked for one (JSON as
    /// `clmulti-axpy` reports it).
    #[serde(default)]
    pub axpy_split: Option<serde_json::Value>,
    /// The end of the run's stderr, when its process crashed or left no report
    /// (e.g. the runtime's assertion text).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr_tail: String,
    /// Things to know.
    pub warnings: Vec<Warning>,
}

fn yes() -> bool {
    true
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

/// Why a stored report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON, or not a report of any known schema.
    #[error("not a clmulti report: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a newer clmulti.
    #[error("report schema {found} is newer than this clmulti understands ({SCHEMA_VERSION})")]
    Newer {
        /// The report's `schema_version`.
        found: u64,
    },
}

impl Report {
    /// A report for a run whose process never produced one, or that never started:
    /// the scenario, the stop reason, and nothing measured.
    pub fn without_measurements(scenario: &Scenario, stop: StopReason) -> Self {
        Report {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            scenario: scenario.clone(),
            run_name: scenario.name.clone(),
            platform: String::new(),
            platform_version: String::new(),
            devices: Vec::new(),
            host_limits: HostLimits::read()
                .with_soft_limits(scenario.limits.nofile, scenario.limits.address_space_bytes),
            driver_limits: DriverLimits::default(),
            device_memory_source: DeviceMemorySource::None,
            layers: Layers::from_env(|k| {
                scenario
                    .env
                    .get(k)
                    .cloned()
                    .or_else(|| std::env::var(k).ok())
            }),
            fresh_process: true,
            buffers: 0,
            bytes_requested: 0,
            elapsed_seconds: 0.0,
            sampling_seconds: 0.0,
            allocations_per_second: None,
            stop,
            samples: Vec::new(),
            costs: Vec::new(),
            effective_guards: None,
            analysis: RunAnalysis::default(),
            leak_check: LeakCheck::default(),
            bookkeeping: Bookkeeping::default(),
            driver_messages: Vec::new(),
            axpy_check: None,
            axpy_split: None,
            stderr_tail: String::new(),
            warnings: Vec::new(),
        }
    }

    /// One line saying how the run ended and, from the analysis, why: what a person
    /// reads first.
    pub fn headline(&self) -> String {
        use crate::analysis::Cause;
        let cause = match &self.analysis.cause {
            Some(Cause::Resource {
                resource, limit, ..
            }) => {
                format!(
                    "; {} reached {} (likely cause)",
                    resource.label(),
                    limit.name
                )
            }
            Some(Cause::NotExplained { .. }) => "; not explained by what was measured".into(),
            None => String::new(),
        };
        let ahead = match (&self.stop, &self.analysis.first_limit) {
            (StopReason::Completed | StopReason::Guard { .. }, Some(ahead)) => format!(
                "; first limit ahead: {} at ~{} buffers{}",
                ahead.limit.name,
                ahead.count,
                if ahead.estimated { " (estimate)" } else { "" }
            ),
            _ => String::new(),
        };
        match &self.stop {
            StopReason::Completed => format!("completed: {} buffers{ahead}", self.buffers),
            StopReason::Failed { error, call, index } if *index > 0 || self.buffers > 0 => format!(
                "FAILED after {} buffers: {error} in {}{cause}",
                self.buffers,
                call.c_name()
            ),
            StopReason::Failed { error, call, .. } => {
                format!(
                    "FAILED before the first buffer: {error} in {}",
                    call.c_name()
                )
            }
            other => format!("{} ({} buffers){ahead}", other.summary(), self.buffers),
        }
    }

    /// Reads a report written by this or an earlier clmulti (schema 1 reports are
    /// upgraded: their `axpy_check` scenario key became `axpy.check`, and their
    /// prediction is recomputed from the costs).
    pub fn from_json(text: &str) -> Result<Self, ReadError> {
        let mut value: serde_json::Value = serde_json::from_str(text)?;
        let version = value["schema_version"].as_u64().unwrap_or(1);
        if version > u64::from(SCHEMA_VERSION) {
            return Err(ReadError::Newer { found: version });
        }
        if version < 2 {
            upgrade_v1(&mut value);
        }
        Ok(serde_json::from_value(value)?)
    }
}

/// Schema 1 -> 2: the scenario's `axpy_check` became `axpy: {check, split}`; costs'
/// limits became `{value, name}`; the prediction moved out of the report; the
/// warning `lazy_allocation_likely` became `lazy_allocation`.
fn upgrade_v1(report: &mut serde_json::Value) {
    use serde_json::{json, Value};
    let scenario = &mut report["scenario"];
    if let Some(check) = scenario
        .as_object_mut()
        .and_then(|s| s.remove("axpy_check"))
    {
        scenario["axpy"] = json!({ "check": check, "split": false });
    }
    if let Some(costs) = report["costs"].as_array_mut() {
        for cost in costs {
            let name = match cost["resource"].as_str() {
                Some("host_rss") => "physical RAM",
                Some("virtual_size") => "RLIMIT_AS (soft)",
                Some("open_fds") => "RLIMIT_NOFILE (soft)",
                Some("memory_maps") => "vm.max_map_count",
                Some("device_memory") => "device global memory",
                _ => "limit",
            };
            if let Some(value) = cost.get("limit").and_then(Value::as_f64) {
                cost["limit"] = json!({ "value": value, "name": name });
            }
        }
    }
    if let Some(warnings) = report["warnings"].as_array_mut() {
        for warning in warnings {
            if warning["kind"] == "lazy_allocation_likely" {
                warning["kind"] = json!("lazy_allocation");
            }
        }
    }
    if let Some(object) = report.as_object_mut() {
        object.remove("prediction");
        object.insert("schema_version".into(), json!(SCHEMA_VERSION));
    }
}

/// Two byte counts formatted so they read apart: exact bytes when two decimals would
/// show them equal ("4.00 GiB would pass 4.00 GiB").
fn apart(value: f64, limit: f64) -> (String, String) {
    let (v, l) = (format_bytes(value), format_bytes(limit));
    if v == l {
        (format!("{value:.0} B"), format!("{limit:.0} B"))
    } else {
        (v, l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reports of schema 1 as an earlier clmulti wrote them on a real machine.
    #[test]
    fn schema_1_reports_in_the_shipped_results_still_read() {
        let records = include_str!("../../../results/pocl-8cpu/scaling/results.jsonl");
        let mut read = 0;
        for line in records.lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(record["report"]["schema_version"], 1);
            let report = Report::from_json(&record["report"].to_string())
                .unwrap_or_else(|e| panic!("{e}: {line:.200}"));
            assert_eq!(report.schema_version, SCHEMA_VERSION);
            read += 1;
        }
        assert_eq!(read, 16);
    }

    /// Seen on the GPU node: a child that exits 2 prints the real error first and a
    /// count of problems last; the summary must show the first.
    #[test]
    fn no_report_summary_shows_the_first_error() {
        let stop = StopReason::NoReport {
            exit_code: Some(2),
            stderr_tail: "error: scaling.toml: [devices]: asked for 4 devices of type gpu on platform 1 (NVIDIA CUDA), found 2\n\
                          error: 1 scenario problem(s)\n"
                .into(),
        };
        assert_eq!(
            stop.summary(),
            "no report (exit 2): scaling.toml: [devices]: asked for 4 devices of type gpu on platform 1 (NVIDIA CUDA), found 2"
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
            "guard max_rss: host RSS 5.00 GiB would pass 4.00 GiB"
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
            error: ClCode::OUT_OF_HOST_MEMORY.into(),
            call: Call::CreateBuffer,
            index: 1003,
        };
        assert_eq!(
            stop.summary(),
            "failed: CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer at buffer 1003"
        );
    }

    #[test]
    fn a_hung_call_is_named() {
        let stop = StopReason::TimedOut {
            seconds: 5.0,
            call: Some(Call::CreateCommandQueue),
        };
        assert_eq!(
            stop.summary(),
            "timed out: clCreateCommandQueueWithProperties did not return within 5 s"
        );
    }
}
