//! The report of one run, as plain data: a serde type with stable field names
//! (`schema_version` changes when a field changes meaning or is removed;
//! [`Report::from_json`] reads older versions). Nothing here reads the machine or
//! draws a conclusion: [`Report::conclude`](crate::analysis) does that.

mod leak;
mod read;
mod stop;

pub use crate::sample::{Layers, Sample};
pub use leak::{Kept, LeakCheck, NotReturned, RoundReadings, RoundsControl, SecondRound};
pub use read::ReadError;
pub use stop::{Call, ErrorCode, GuardKind, StopKind, StopReason};

use crate::resource::{Limit, Resource};
use crate::verdict::RunAnalysis;
use clmulti_probe::{DeviceInfo, DriverLimits, HostLimits};
use clmulti_scenario::Scenario;
use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 8;

/// A resource's growth per buffer and where it meets its limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Growth per buffer (least-squares slope over the samples).
    pub per_buffer: f64,
    /// Half the width of `per_buffer`'s 95% confidence interval: a cost within it of
    /// zero is not measurable.
    #[serde(default)]
    pub margin: f64,
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
    /// Samples the slope was fitted through: fewer than
    /// [`MIN_COST_SAMPLES`](crate::thresholds::MIN_COST_SAMPLES) measure nothing.
    #[serde(default)]
    pub samples: usize,
}

impl Cost {
    /// The cost with its margin: `+1.00 KiB ± 12 B`, or `not measurable (below 12 B)`
    /// when zero lies within it; a line through fewer samples than a measurement
    /// needs says so after it (`+1 (3 samples: too few to measure)`; an estimate says
    /// what it comes from instead).
    pub fn per_buffer_words(&self) -> String {
        let words = self.slope_words();
        let needed = crate::thresholds::MIN_COST_SAMPLES;
        // A slope is claimed only where it reads as one (`+518 B`), not a 0 or a margin.
        if !self.estimated && self.samples < needed && words.starts_with(['+', '-']) {
            return format!("{words} ({} samples: too few to measure)", self.samples);
        }
        words
    }

    /// The slope with its margin, however many samples it runs through.
    fn slope_words(&self) -> String {
        let unit = self.resource.unit();
        // A margin below what the unit shows (a hundredth of a count, half a byte) is
        // no margin a reader can see.
        let shown = match unit {
            crate::Unit::Count => 0.005,
            crate::Unit::Bytes => 0.5,
        };
        let margin = if self.margin < shown {
            0.0
        } else {
            self.margin
        };
        if self.per_buffer.abs() < shown && margin == 0.0 {
            return "0".into();
        }
        if margin > 0.0 && self.per_buffer.abs() <= margin {
            return format!("not measurable (below {})", unit.format(margin));
        }
        let sign = if self.per_buffer < 0.0 { "-" } else { "+" };
        let value = unit.format(self.per_buffer.abs());
        if margin > 0.0 {
            format!("{sign}{value} ± {}", unit.format(self.margin))
        } else {
            format!("{sign}{value}")
        }
    }
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

/// Where the loop's instrumentation time went (its sum is `sampling_seconds`):
/// the run's own cost, part by part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SamplingCost {
    /// Sample readings taken: the samples, and a last one taken again to walk the
    /// mappings (its cost was paid twice).
    pub samples: u64,
    /// Seconds reading `/proc` (and the heap, the counts, device memory) at samples,
    /// the mapping walks left out.
    pub readings_seconds: f64,
    /// Seconds walking the mappings, at the samples that walked them.
    pub mappings_seconds: f64,
    /// Seconds telling the observer (the progress file a parent reads).
    pub observer_seconds: f64,
    /// Guard readings between samples.
    pub guard_readings: u64,
    /// Seconds of those.
    pub guard_seconds: f64,
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
    /// `OPENCL_LAYERS` names a library not in the call path: a loader that does not
    /// read the variable skipped it, or one that does opened it and found no layer.
    LayerNotLoaded,
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
    /// Pairs chosen but not checked: the run's `max_seconds` passed first.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pairs_not_checked: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The scenario's `[axpy] split`: one dAxpy cut over the run's devices after the
/// loop (`clmulti axpy --split` has the full figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum AxpySplit {
    /// It ran, and was verified or not (`max_error_ulps`).
    Ran {
        /// Elements of the whole vector.
        n: u64,
        /// Each layout and kernel.
        runs: Vec<SplitFigures>,
    },
    /// It could not run: why.
    Failed {
        /// The error, in words.
        error: String,
    },
    /// It was not run: the run was interrupted, or its time had passed.
    Skipped {
        /// Why, in words.
        reason: String,
    },
}

/// One split run of [`AxpySplit`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitFigures {
    /// Devices split over.
    pub devices: usize,
    /// The run's context mode.
    pub context: clmulti_scenario::ContextMode,
    /// Where the parts lived: `buffers` or `sub-buffers`.
    pub layout: String,
    /// The kernel: `dAxpy` (the seed's) or `axpy_fast`.
    pub kernel: String,
    /// Whole-vector bytes over host time, best, GB/s.
    pub aggregate_gb_per_s: f64,
    /// The aggregate over one device's times the device count.
    pub scaling_efficiency: f64,
    /// Largest error, in epsilons of the tolerance (<= 2 passes).
    pub max_error_ulps: f64,
}

/// What clmulti's tracer (crate `clmulti-trace`, preloaded) saw of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Traced {
    /// The system calls that failed inside the OpenCL call that stopped the run, in
    /// order (empty when it failed with none failing, or did not fail).
    pub failing_calls: Vec<clmulti_probe::trace::TracedCall>,
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
    /// Intel's GPU runtime NEO emulating its devices in AUB mode, when it was (read
    /// from the platform and the run's environment when the run started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neo_emulation: Option<clmulti_probe::neo::NeoEmulation>,
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
    /// The parts of `sampling_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_cost: Option<SamplingCost>,
    /// Buffers per second of the loop without the instrumentation time.
    pub allocations_per_second: Option<f64>,
    /// Why the run stopped.
    pub stop: StopReason,
    /// The process's environment as far as it concerns OpenCL (loader, runtimes'
    /// keys, preloads, layers, clmulti's emulations), and what was left out by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<clmulti_probe::environment::Environment>,
    /// Descriptors clmulti itself held in the run's process (beyond the standard
    /// three): they count against `RLIMIT_NOFILE` like the runtime's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clmulti_fds: Option<u64>,
    /// What clmulti's tracer saw of the process's calls; `None` when the run was not
    /// traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced: Option<Traced>,
    /// For a run watched by a system-call observer (every call of every thread, raw
    /// ones too): the calls that failed inside its failing OpenCL call; `None` when
    /// nothing watched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_calls: Option<Vec<clmulti_probe::trace::TracedCall>>,
    /// Under a system-call observer: when the OpenCL call that failed began and ended
    /// (Unix seconds), which the observer's log is read between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_window: Option<(f64, f64)>,
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
    /// The split dAxpy after the loop, when the scenario asked for one.
    #[serde(default)]
    pub axpy_split: Option<AxpySplit>,
    /// The end of the run's stderr, when its process crashed or left no report
    /// (e.g. the runtime's assertion text).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr_tail: String,
    /// The end of what the run's process printed on stdout: the runtime's own output
    /// (its debug log), which never mixes with the report.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout_tail: String,
    /// Things to know.
    pub warnings: Vec<Warning>,
    /// How long each step of the run took, in order: loading the runtime and
    /// choosing devices, contexts and queues, the loop, release, ... (what `-v`
    /// shows; absent in reports of runs that never started).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
}

/// One step of a run and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// The step, in words.
    pub phase: String,
    /// Wall time, seconds.
    pub seconds: f64,
}

fn yes() -> bool {
    true
}

impl Report {
    /// A report of a run that has not measured anything yet (or never will): the
    /// scenario, how it stopped, the host limits and the layers it ran under.
    pub fn new(
        scenario: &Scenario,
        stop: StopReason,
        host_limits: HostLimits,
        layers: Option<Layers>,
    ) -> Self {
        Report {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            scenario: scenario.clone(),
            run_name: scenario.name.clone(),
            platform: String::new(),
            platform_version: String::new(),
            devices: Vec::new(),
            host_limits,
            driver_limits: DriverLimits::default(),
            device_memory_source: DeviceMemorySource::None,
            layers,
            neo_emulation: None,
            environment: None,
            clmulti_fds: None,
            traced: None,
            observed_calls: None,
            failing_window: None,
            fresh_process: true,
            buffers: 0,
            bytes_requested: 0,
            elapsed_seconds: 0.0,
            sampling_seconds: 0.0,
            sampling_cost: None,
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
            stdout_tail: String::new(),
            warnings: Vec::new(),
            phases: Vec::new(),
        }
    }
}
