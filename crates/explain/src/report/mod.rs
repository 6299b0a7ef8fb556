//! The report of one run, as plain data: a serde type with stable field names
//! (`schema_version` changes when a field changes meaning or is removed;
//! [`Report::from_json`] reads older versions). Nothing here reads the machine or
//! draws a conclusion: [`Report::conclude`](crate::analysis) does that.

mod read;
mod stop;

pub use read::ReadError;
pub use stop::{signal_name, Call, ErrorCode, GuardKind, StopKind, StopReason};

use crate::resource::{Limit, Resource};
use crate::verdict::RunAnalysis;
use clmulti_probe::{DeviceInfo, DriverLimits, DrmUsage, HostLimits, ProcessUsage, SystemMemory};
use clmulti_scenario::Scenario;
use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 6;

/// The resource readings at one point of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Buffers allocated so far.
    pub allocations: u64,
    /// Buffers held at this point, when the run released some on the way
    /// (`allocation.release_every`); otherwise every allocated buffer is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<u64>,
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
    /// Who exported the open dma-bufs (their fdinfo's `exp_name`), each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dmabuf_exporters: Vec<String>,
    /// The emulated kernel driver's counts (GEM objects by device and region, CPU
    /// maps, exports, imports...), under clmulti's kernel-driver emulation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_counts: Option<clmulti_probe::kmd_emu::Counts>,
    /// The calls clmulti's tracer counted in the process so far, by kind (`mmap`,
    /// `ioctl:DRM_IOCTL_PRIME_HANDLE_TO_FD`), when the run was traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_counts: Option<clmulti_probe::kmd_emu::Counts>,
}

impl Sample {
    /// Who exported the dma-bufs of a run's samples, each once: "i915", "i915, amdgpu".
    pub fn exporters(samples: &[Sample]) -> Option<String> {
        let mut names: Vec<&str> = samples
            .iter()
            .flat_map(|s| s.dmabuf_exporters.iter().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        (!names.is_empty()).then(|| names.join(", "))
    }

    /// Buffers held at this point.
    pub fn live(&self) -> u64 {
        self.live.unwrap_or(self.allocations)
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
}

impl Cost {
    /// The cost with its margin: `+1.00 KiB ± 12 B`, or `not measurable (below 12 B)`
    /// when zero lies within it.
    pub fn per_buffer_words(&self) -> String {
        let unit = self.resource.unit();
        if self.margin > 0.0 && self.per_buffer.abs() <= self.margin {
            return format!("not measurable (below {})", unit.format(self.margin));
        }
        let sign = if self.per_buffer < 0.0 { "-" } else { "+" };
        let value = unit.format(self.per_buffer.abs());
        if self.margin > 0.0 {
            format!("{sign}{value} ± {}", unit.format(self.margin))
        } else {
            format!("{sign}{value}")
        }
    }
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
    /// Host readings after that, once `malloc_trim(0)` ran: what the C library kept
    /// of freed heap comes back here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_trim: Option<ProcessUsage>,
    /// Every reading after everything was released (set against the first sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_release_sample: Option<Sample>,
    /// Resources that grew during the run and did not come back after release.
    #[serde(default)]
    pub not_returned: Vec<NotReturned>,
    /// For those, a re-run of two rounds (allocate, release all, allocate again,
    /// release all): whether the second round reused what the first kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_round: Option<SecondRound>,
    /// True when every object was released without error and every reading came
    /// back within its tolerance.
    pub clean: bool,
}

impl LeakCheck {
    /// Whether every object created was released without an error.
    pub fn objects_released(&self) -> bool {
        self.release_errors.is_empty()
            && self.buffers_released == self.buffers_created
            && self.pools_released == self.pools_created
            && self.queues_released == self.queues_created
            && self.contexts_released == self.contexts_created
    }
}

/// The same run in several rounds (allocate, release everything, again): what each
/// resource that did not come back read after each round's release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondRound {
    /// The re-run.
    pub experiment: crate::verdict::Experiment,
    /// Each resource that did not come back (and the C library's heap), after each
    /// round.
    pub readings: Vec<RoundReadings>,
    /// The same rounds with one device, for a run over several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Box<RoundsControl>>,
}

/// The rounds again without the suspect (one device): what happens anyway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundsControl {
    /// The re-run.
    pub experiment: crate::verdict::Experiment,
    /// The same resources, after each round.
    pub readings: Vec<RoundReadings>,
}

/// One resource over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundReadings {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Before the first buffer.
    pub before: f64,
    /// After each round's release, in order.
    pub after_rounds: Vec<f64>,
    /// What one round may add and still be noise.
    pub tolerance: f64,
}

/// The fewest rounds whose increments are judged.
pub const MIN_ROUNDS: usize = 4;

/// What the rounds say about memory kept after release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kept {
    /// No growth that repeats: what one round kept, later rounds reuse (a cache),
    /// however much single rounds swing.
    Reused,
    /// Growth that neither repeats every round nor stops, never giving back: a cache
    /// still filling, or a leak slowing.
    Settling,
    /// Fewer than [`MIN_ROUNDS`] rounds ran (the rounds run stopped early): too few
    /// increments to tell.
    TooFew,
    /// Every round (all but one at most, and at least two) adds beyond the noise,
    /// and the last still adds half the usual: a leak, however small against one
    /// round's total.
    Leak,
}

impl RoundReadings {
    /// What each round added to the one before (from the second round on).
    pub fn increments(&self) -> Vec<f64> {
        self.after_rounds.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// What the rounds say, from the increments against the tolerance.
    pub fn kept(&self) -> Kept {
        if self.after_rounds.len() < MIN_ROUNDS {
            return Kept::TooFew;
        }
        let increments = self.increments();
        let tolerance = self.tolerance;
        let adding = increments.iter().filter(|d| **d > tolerance).count();
        let last = increments[increments.len() - 1];
        let mut sorted = increments.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let repeats = adding + 1 >= increments.len() && adding >= 2;
        if repeats && last > tolerance && last >= 0.5 * median {
            return Kept::Leak;
        }
        // A round that gave memory back reuses it; one that still adds, never
        // giving back, is filling.
        let gave_back = increments.iter().any(|d| *d < -tolerance);
        if gave_back || last <= tolerance {
            Kept::Reused
        } else {
            Kept::Settling
        }
    }
}

/// A resource that did not come back after every buffer was released.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotReturned {
    /// Which resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Its reading before the first buffer.
    pub before: f64,
    /// Its highest reading during the run.
    pub peak: f64,
    /// Its reading after release.
    pub after: f64,
    /// How far above `before` still counts as returned.
    pub tolerance: f64,
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
            stdout_tail: String::new(),
            warnings: Vec::new(),
            phases: Vec::new(),
        }
    }
}
