//! The answer to the seed's question over a set of runs: one device, N devices in one
//! shared context, N per-device contexts (with `create`, and with a strategy that
//! forces residency), plus the experiments and fixes re-run on a failing shared case.
//! What sharing a context costs per buffer, where each run stopped, what caused a
//! failure (only a candidate whose experiment moved the failure: see
//! [`experiment`](crate::experiment)), what the experiments found about a limit no
//! reading shows, which fixes removed the failure, measured, and what is known from
//! documented sources. `clmulti diagnose` runs the matrix; the sweep's report builds
//! the same diagnosis from the runs it has.
//!
//! [`fixes`] lists the fixes that apply, [`matrix`] builds the diagnosis; its
//! wording for people is in [`render`](crate::render).

mod compare;
mod fixes;
mod matrix;

pub(crate) use fixes::fix_claim;
pub use fixes::fixes_for;

use crate::report::{Report, StopKind, StopReason};
use crate::resource::{Resource, Unit};
use crate::verdict::{Candidate, ShapeFinding, Statement};
use clmulti_probe::DeviceInfo;
use clmulti_scenario::{ContextMode, Rlimit, Strategy};
use serde::{Deserialize, Serialize};

/// Version of the [`Diagnosis`] JSON shape; bumped when a field changes meaning.
pub const DIAGNOSIS_SCHEMA_VERSION: u32 = 5;

/// Which of the seed's three cases a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// One device in one context.
    OneDevice,
    /// N devices in one shared context (the seed's failing case).
    Shared,
    /// N devices, one context each.
    PerDevice,
}

impl Role {
    /// The case in words.
    pub fn label(self, devices: usize) -> String {
        match self {
            Role::OneDevice => "1 device".into(),
            Role::Shared => format!("{devices} devices, one shared context"),
            Role::PerDevice => format!("{devices} devices, one context each"),
        }
    }

    /// The role of a run, from its scenario and devices.
    pub fn of(report: &Report) -> Role {
        let devices = report.devices.len().max(report.scenario.devices.set.len());
        match (devices, report.scenario.context_mode) {
            (0 | 1, _) => Role::OneDevice,
            (_, ContextMode::Shared) => Role::Shared,
            (_, ContextMode::PerDevice) => Role::PerDevice,
        }
    }
}

/// A fix for a failure of the shared case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fix", rename_all = "kebab-case")]
pub enum Fix {
    /// One context per device instead of one shared context.
    PerDeviceContexts,
    /// A higher soft resource limit (up to the hard one).
    RaiseSoftLimit {
        /// Which.
        limit: Rlimit,
        /// The soft value tried.
        to: u64,
    },
    /// A system-wide setting: clmulti never changes one, so it is never tested.
    SystemSetting {
        /// The setting.
        setting: String,
        /// The command that would raise it.
        command: String,
    },
    /// `CL_MEM_DEVICE_ID_INTEL`: each buffer allocated on its device only.
    Pin,
    /// Large buffers carved into sub-buffers: fewer runtime allocations.
    Pool,
    /// A newer release of the runtime, where a documented change removed the cause.
    UpgradeRuntime {
        /// The runtime.
        runtime: String,
        /// The version the runs used.
        from: String,
        /// The first version with the change.
        to: String,
        /// Where the change is documented.
        source: String,
    },
    /// Runtime settings from a documented table.
    RuntimeKnob {
        /// Environment variables set.
        env: Vec<(String, String)>,
        /// Where the knob is documented.
        source: String,
    },
}

impl Fix {
    /// The fix in words.
    pub fn label(&self) -> String {
        match self {
            Fix::PerDeviceContexts => "one context per device".into(),
            Fix::RaiseSoftLimit { limit, to } => {
                format!(
                    "soft {} raised to {}",
                    limit.name(),
                    limit_value(*limit, *to)
                )
            }
            Fix::SystemSetting { setting, .. } => format!("{setting} raised"),
            Fix::Pin => "buffers pinned to their device (CL_MEM_DEVICE_ID_INTEL)".into(),
            Fix::Pool => "pooled: 256 MiB buffers carved into sub-buffers".into(),
            Fix::UpgradeRuntime { runtime, to, .. } => format!("{runtime} {to} or later"),
            Fix::RuntimeKnob { env, .. } => format!(
                "runtime settings {}",
                env.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }

    /// What a user does to apply it.
    pub fn how(&self) -> String {
        match self {
            Fix::PerDeviceContexts => "create one cl_context per device (clCreateContext with one device each) and keep each buffer in its device's context".into(),
            Fix::RaiseSoftLimit { limit, to } => format!(
                "`{}` in the shell that starts the program (or setrlimit({}) in it; scenario: [limits] {} = {})",
                limit.ulimit_command(*to),
                limit.name(),
                limit.key(),
                scenario_value(*limit, *to)
            ),
            Fix::SystemSetting { command, .. } => format!("`{command}` (as root; it changes the whole machine)"),
            Fix::Pin => "clCreateBufferWithProperties(ctx, {CL_MEM_DEVICE_ID_INTEL (0x4219), device, 0}, flags, size, NULL, &err)".into(),
            Fix::Pool => "allocate a few large buffers per device and hand out sub-buffers (clCreateSubBuffer at CL_DEVICE_MEM_BASE_ADDR_ALIGN)".into(),
            Fix::UpgradeRuntime { runtime, from, to, source } => format!("install {runtime} {to} or later in place of {from} ({source})"),
            Fix::RuntimeKnob { env, .. } => format!(
                "set {} in the program's environment",
                env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
            ),
        }
    }
}

/// A fix and how it fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixOutcome {
    /// The fix.
    #[serde(flatten)]
    pub fix: Fix,
    /// Run or not, and what happened.
    pub outcome: Outcome,
    /// For a fix whose run still failed: whether the same limit stopped it again or
    /// another, with what each rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<crate::claim::Claim>,
}

/// What became of a fix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Re-run; the shared case no longer failed.
    Worked {
        /// Buffers the run reached.
        buffers: u64,
        /// How it ended.
        stop: String,
    },
    /// Re-run; it still failed or stopped.
    DidNotWork {
        /// Buffers the run reached.
        buffers: u64,
        /// How it ended.
        stop: String,
    },
    /// Not run, and why.
    Untested {
        /// Why not.
        reason: String,
    },
}

/// What sharing a context costs per buffer, for one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharingCost {
    /// The strategy of the runs compared.
    pub strategy: Strategy,
    /// The resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Per buffer with one device.
    pub one_device: Option<f64>,
    /// Per buffer with N devices in one context.
    pub shared: Option<f64>,
    /// Per buffer with one context per device.
    pub per_device: Option<f64>,
    /// Shared minus per-device (what sharing adds).
    pub extra: Option<f64>,
    /// Whether `extra` stands out: beyond the noise floor and both fits' margins.
    #[serde(default)]
    pub measurable: bool,
    /// Whether the readings are an emulated driver's model, not a real kernel's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub modelled: bool,
}

impl SharingCost {
    /// The resource in words, with `(as modelled)` for an emulated driver's readings.
    pub fn label(&self) -> String {
        if self.modelled {
            format!("{} (as modelled)", self.resource.label())
        } else {
            self.resource.label()
        }
    }
}

/// A limit as a scenario writes it: a byte limit in the largest unit that holds it
/// exactly (`"46875MiB"`), a count as a number.
fn scenario_value(limit: Rlimit, value: u64) -> String {
    if !limit.in_bytes() || value == 0 {
        return value.to_string();
    }
    let (unit, shift) = [("GiB", 30), ("MiB", 20), ("KiB", 10), ("B", 0)]
        .into_iter()
        .find(|(_, shift)| value % (1u64 << shift) == 0)
        .unwrap_or(("B", 0));
    format!("\"{}{unit}\"", value >> shift)
}

/// A soft limit's value in words: bytes for the byte limits.
fn limit_value(limit: Rlimit, value: u64) -> String {
    if limit.in_bytes() {
        clmulti_scenario::format_bytes(value as f64)
    } else {
        value.to_string()
    }
}

/// What the experiments on the failing shared case found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Investigation {
    /// The run investigated.
    pub run_name: String,
    /// Its candidates, each with its experiments.
    pub candidates: Vec<Candidate>,
    /// What shape experiments found, when no candidate was confirmed.
    pub shape: Vec<ShapeFinding>,
    /// The failing case re-run unchanged first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicates: Option<crate::verdict::Replicates>,
    /// What the replicates say about the failure (steady, chance, time, outside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<crate::claim::Claim>,
    /// What stopped the run, every alternative judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<crate::claim::Claim>,
}

/// What the runtime logged per buffer in one case of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedCase {
    /// The case.
    pub role: Role,
    /// Log lines per buffer, by type (the difference of two runs, N and 2N buffers).
    pub per_buffer: clmulti_probe::neo::AllocationsPerBuffer,
}

/// What one buffer cost the kernel driver in one case: the emulated driver's counts
/// (or, where a tracer counted them, the calls that reached the driver), each live
/// count's growth per buffer between the first and the last sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCounts {
    /// The case.
    pub role: Role,
    /// Its strategy.
    pub strategy: Strategy,
    /// Where the counts come from, in words.
    pub source: String,
    /// Buffers between the two readings.
    pub buffers: u64,
    /// Count name (as the source names it) -> growth per buffer.
    pub per_buffer: std::collections::BTreeMap<String, f64>,
}

impl KernelCounts {
    /// What the emulated driver counted in one run, when its samples carry its counts.
    pub fn of(report: &Report, role: Role) -> Option<Self> {
        Self::from_samples(report, role, KERNEL_COUNTS, |s| s.kernel_counts.as_ref())
    }

    /// What the tracer counted in one run, when its samples carry its counts.
    pub fn traced(report: &Report, role: Role) -> Option<Self> {
        Self::from_samples(report, role, TRACED_COUNTS, |s| s.traced_counts.as_ref())
    }

    fn from_samples(
        report: &Report,
        role: Role,
        source: &str,
        counts: impl Fn(&crate::Sample) -> Option<&clmulti_probe::kmd_emu::Counts>,
    ) -> Option<Self> {
        let with_counts = || report.samples.iter().filter(|s| counts(s).is_some());
        let (first, last) = (with_counts().next()?, with_counts().last()?);
        let buffers = last.live().saturating_sub(first.live());
        let per_buffer = clmulti_probe::kmd_emu::per_buffer(counts(first)?, counts(last)?, buffers);
        (buffers > 0).then(|| KernelCounts {
            role,
            strategy: report.scenario.allocation.strategy,
            source: source.into(),
            buffers,
            per_buffer,
        })
    }

    /// The counts per buffer in each case of one strategy, as one statement: what
    /// the runtime asked of the kernel driver for each buffer.
    pub fn statement(cases: &[&KernelCounts], devices: usize) -> Option<Statement> {
        let first = cases.first()?;
        let parts: Vec<String> = cases
            .iter()
            .map(|c| {
                format!(
                    "{}: {}",
                    c.role.label(devices),
                    crate::words::kernel_counts_list(&c.per_buffer)
                )
            })
            .collect();
        Some(Statement::measured(format!(
            "strategy {}, what the runtime asked per buffer ({}): {}",
            first.strategy.name(),
            first.source,
            parts.join("; ")
        )))
    }
}

/// The source of counts the emulated kernel driver (i915 or xe) kept.
pub const KERNEL_COUNTS: &str = "the emulated kernel driver's counts (clmulti-kmd-emu)";

/// Whether counts came from the emulated kernel driver (diagnoses written before xe
/// named it "the emulated i915 driver's counts").
pub fn is_kernel_counts(source: &str) -> bool {
    source == KERNEL_COUNTS || source == "the emulated i915 driver's counts (clmulti-kmd-emu)"
}
/// The source of counts clmulti's tracer kept.
pub const TRACED_COUNTS: &str = "the calls clmulti-trace counted in the process";

/// A run whose readings did not come back after release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseFinding {
    /// The run.
    pub run_name: String,
    /// What stayed, in words.
    pub not_returned: Vec<String>,
    /// Two rounds of the run, when they were made: a cache or a leak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_round: Option<crate::report::SecondRound>,
    /// What `malloc_trim(0)` gave back after release, as a clause.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trimmed: String,
}

/// One run of the diagnosis, in brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunBrief {
    /// The case.
    pub role: Role,
    /// Its strategy.
    pub strategy: Strategy,
    /// The run's name.
    pub run_name: String,
    /// Buffers reached.
    pub buffers: u64,
    /// How it ended, in one line.
    pub headline: String,
    /// The outcome kind: completed, failed, guard, ...
    pub outcome: StopKind,
    /// Seconds of its allocation loop.
    #[serde(default)]
    pub seconds: f64,
    /// Driver messages, when there were any.
    pub driver_messages: Vec<String>,
}

/// The diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// See [`DIAGNOSIS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The platform.
    pub platform: String,
    /// The devices of the multi-device runs.
    pub devices: Vec<DeviceInfo>,
    /// Each run.
    pub runs: Vec<RunBrief>,
    /// What sharing a context costs, per strategy and resource (only resources that
    /// differ or grow).
    pub sharing_costs: Vec<SharingCost>,
    /// Intel's GPU runtime NEO emulating the devices in AUB mode, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neo_emulation: Option<clmulti_probe::neo::NeoEmulation>,
    /// The runtime's own account of what it allocated for each buffer, per case
    /// (NEO's allocation log), when it keeps one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocation_log: Vec<LoggedCase>,
    /// What each buffer cost the kernel driver, per case, where it was counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_counts: Vec<KernelCounts>,
    /// The experiments on the failing shared case, when one failed.
    #[serde(default)]
    pub investigation: Option<Investigation>,
    /// Runs whose readings stayed up after every buffer was released.
    #[serde(default)]
    pub release: Vec<ReleaseFinding>,
    /// The fixes, tested or not.
    pub fixes: Vec<FixOutcome>,
    /// The conclusion, each statement with its basis.
    pub verdict: Vec<Statement>,
    /// The answer it opens with ([`Diagnosis::answer`]), as [`Diagnosis::finish`] left it.
    #[serde(default)]
    pub answer: Vec<String>,
    /// The limit the shared context heads for at its growth, in words, when it heads
    /// for one (a reading the real system gives, not an emulation's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_ahead: Option<String>,
    /// What a signal that stopped the diagnosis left out, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Runs on the same page that the comparison leaves out and that did not
    /// complete, each as "name: how it ended": the answer names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncompared: Vec<String>,
    /// Where and how it ran (machine, OS, runtime, clmulti, date, emulated parts),
    /// as the command that ran it saw; `None` when built without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<crate::context::PageContext>,
}

/// A run with its place in the matrix.
#[derive(Debug, Clone)]
pub struct Placed<'a> {
    /// The case.
    pub role: Role,
    /// The run.
    pub report: &'a Report,
}

pub(crate) fn failed(r: &Report) -> bool {
    matches!(
        r.stop,
        StopReason::Failed { .. } | StopReason::Crashed { .. } | StopReason::TimedOut { .. }
    )
}

pub(crate) fn cost_of(r: &Report, resource: &Resource) -> Option<f64> {
    r.costs
        .iter()
        .find(|c| &c.resource == resource && !c.estimated)
        .map(|c| c.per_buffer)
}

/// Whether two per-buffer costs differ beyond noise.
pub(crate) fn differs(resource: &Resource, a: f64, b: f64) -> bool {
    let d = (a - b).abs();
    match resource.unit() {
        Unit::Count => d >= 0.1,
        // Every process on the machine moves a system-wide figure: less than a page
        // per buffer there is not the run's.
        Unit::Bytes if resource.system_wide() => d >= 4096.0 && d >= 0.05 * a.abs().max(b.abs()),
        // 64 B a buffer over thousands of buffers is many pages: measurable.
        Unit::Bytes => d >= 64.0 && d >= 0.05 * a.abs().max(b.abs()),
    }
}
