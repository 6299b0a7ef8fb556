//! Running one scenario run: devices, contexts, the allocation loop, the checks,
//! release, and the report.

mod after_release;
mod allocation_loop;
mod bookkeeping;
mod check;
mod device_memory;
mod host_memory;
mod layers;
mod opencl;
mod phases;
mod pool;
mod setup;
mod watchdog;

pub use check::{BufferCheck, BufferPair};
pub(crate) use layers::names_variable;
pub use opencl::CL_MEM_DEVICE_ID_INTEL;
pub use watchdog::{OnHang, Watchdog};

use allocation_loop::LoopPlan;
use clmulti_explain::verdict::Statement;
use clmulti_explain::{
    Call, DeviceMemorySource, EffectiveGuards, Layers, Report, Sample, StopReason, Warning,
    WarningKind,
};
use clmulti_probe::{ClCode, DeviceRequest, DeviceTypeFilter, DriverLimits, HostLimits};
use clmulti_scenario::{Count, RssLimit, Scenario};
use setup::select_devices;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use watchdog::CallTracker;

/// Buffers in the dry bookkeeping measurement: the run's count, within these bounds
/// (10000 give a per-buffer figure as steady as more, at a tenth of 100000's 17 ms
/// inside the run's own time).
const BOOKKEEPING_BUFFERS: std::ops::RangeInclusive<u64> = 1_000..=10_000;
/// Byte guards stay below this share of the machine's memory ceiling.
const CEILING_SHARE: f64 = 0.9;

/// Why a scenario could not be run at all (as opposed to a run that stopped).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No OpenCL runtime: the tool cannot work here.
    #[error(transparent)]
    Probe(#[from] clmulti_probe::ProbeError),
    /// The scenario asks for devices that do not exist in a way no machine could
    /// satisfy (an unknown platform name, an empty platform).
    #[error("{file}: key `{}`: {source}", source.key())]
    Devices {
        /// The scenario file.
        file: String,
        /// What was missing.
        source: clmulti_probe::SelectError,
    },
}

/// What a run reports as it goes (a progress file, a terminal line).
pub trait Observer {
    /// The devices are chosen and the loop is about to start; `report` holds the
    /// setup (platform, devices, limits) and nothing measured yet.
    fn started(&mut self, _report: &Report) {}
    /// A sample was taken.
    fn sampled(&mut self, _sample: &Sample) {}
}

/// Runs dAxpy split over the run's devices after the loop (`[axpy] split`); its
/// figures go into the report.
pub type SplitRun<'a> =
    dyn FnMut(&[clmulti_probe::Device], &Scenario) -> clmulti_explain::AxpySplit + 'a;

/// How to run: the hooks around the engine.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Runs over kept buffer pairs when the scenario asks for `[axpy] check`.
    pub check: Option<&'a mut dyn BufferCheck>,
    /// Runs after the loop when the scenario asks for `[axpy] split`.
    pub split: Option<&'a mut SplitRun<'a>>,
    /// Told about the run's setup and each sample.
    pub observer: Option<&'a mut dyn Observer>,
    /// Tracks the OpenCL call the run is in and ends the run when it outlives its
    /// limit: armed by the caller before the runtime loads ([`time_limit`]);
    /// without one nothing watches.
    pub watchdog: Option<&'a Watchdog>,
    /// A signal number set by the caller's SIGINT/SIGTERM handler: the loop stops
    /// before the next buffer, the checks and the split are skipped, and everything
    /// is released ([`StopReason::Interrupted`]).
    pub interrupt: Option<&'a AtomicI32>,
    /// False when earlier runs used this process: freed memory may be reused, so
    /// the report warns that costs can read low.
    pub reused_process: bool,
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("check", &self.check.is_some())
            .field("split", &self.split.is_some())
            .field("observer", &self.observer.is_some())
            .field("watchdog", &self.watchdog)
            .field(
                "interrupt",
                &self.interrupt.map(|i| i.load(Ordering::Relaxed)),
            )
            .field("reused_process", &self.reused_process)
            .finish()
    }
}

pub use clmulti_supervise::hang_margin;

/// The longest a run may take from before its runtime loads to its last byte
/// written: `timeout` when the caller gives one, else the loop's `max_seconds`
/// plus [`hang_margin`] for loading, release and the report.
pub fn time_limit(scenario: &Scenario, timeout: Option<Duration>) -> Duration {
    let max_seconds = scenario.guards.max_seconds;
    timeout.unwrap_or_else(|| Duration::from_secs_f64(max_seconds) + hang_margin(max_seconds))
}

/// A report for `scenario` that has measured nothing yet (or never will), with the
/// host limits this process would run it under and the layers its environment names.
pub fn blank_report(scenario: &Scenario, stop: StopReason) -> Report {
    let host = HostLimits::read().with_soft_limits(&scenario.limits);
    let layers = Layers::from_env(|k| {
        scenario
            .env
            .get(k)
            .cloned()
            .or_else(|| std::env::var(k).ok())
    });
    Report::new(scenario, stop, host, layers)
}

/// Runs one scenario run in this process and reports what it found.
///
/// The scenario's `env` and `limits` are *not* applied here: they must be in force
/// before the OpenCL runtime loads, so the caller runs the scenario in a fresh
/// process (`clmulti run` does) and calls [`apply_limits`](crate::apply_limits) there.
pub fn run(scenario: &Scenario, options: RunOptions<'_>) -> Result<Report, EngineError> {
    let RunOptions {
        check,
        split,
        mut observer,
        watchdog,
        interrupt,
        reused_process,
    } = options;
    let tracker = watchdog.map_or_else(CallTracker::default, |w| w.tracker().clone());

    let mut report = blank_report(scenario, StopReason::Completed);
    report.fresh_process = !reused_process;
    let mut clock = PhaseClock::start();
    let bookkeeping = phases::engine_cost(scenario, &report.host_limits);
    clock.mark(&mut report, "the engine's own cost (a loop without OpenCL)");
    report.environment = Some(clmulti_probe::environment::current());
    // The watchdog's thread finished starting before the runtime takes the loader's lock.
    let _ = watchdog.inspect(|w| w.started());
    let selected = select_devices(scenario, &tracker, &mut report)?;
    clock.mark(&mut report, "load the runtime and choose the devices");
    let Some(devices) = selected else {
        return Ok(report);
    };
    let (plan, guards) = loop_plan(scenario, &report.host_limits);
    report.effective_guards = Some(guards);
    if let Some(observer) = observer.as_deref_mut() {
        observer.started(&report);
    }
    if let Some(stop) = phases::refused_up_front(scenario, &plan) {
        report.stop = stop;
        return Ok(report);
    }
    let messages: opencl::Messages = Arc::default();
    let Some((mut backend, tracer)) =
        phases::backend(scenario, &devices, &messages, tracker.clone(), &mut report)
    else {
        return Ok(report);
    };
    clock.mark(&mut report, "create contexts and queues");
    let (usage, before, mut memory) = phases::readers(&devices, &mut report);
    let (outcome, loop_start) = phases::loop_with_sampling(
        &plan,
        &mut backend,
        (&usage, &mut memory),
        observer,
        (interrupt, tracer),
        &mut report,
    );
    clock.mark(&mut report, "allocation loop (with sampling)");
    // The checks and the split share the loop's time: they stop at its deadline.
    let deadline = loop_start + Duration::from_secs_f64(scenario.guards.max_seconds);
    let interrupted = matches!(outcome.stop, StopReason::Interrupted { .. });
    phases::check_kept(
        scenario,
        check,
        &plan,
        &backend,
        (deadline, interrupted),
        &mut report,
    );
    if report.axpy_check.is_some() {
        clock.mark(&mut report, "dAxpy check over kept buffers");
    }
    hold_while_asked(interrupt);
    let (leak_check, released) = phases::release(backend, (&usage, &mut memory), &outcome, before);
    clock.mark_at(&mut report, "release every object", released);
    clock.mark(&mut report, "clmulti's readings after release");
    if let (Some(split), true) = (split, scenario.axpy.split) {
        let ended = (deadline, interrupted);
        report.axpy_split = Some(phases::split_or_skip(split, scenario, &devices, ended));
        clock.mark(&mut report, "dAxpy split over the devices");
    }
    report.leak_check = leak_check;
    report.driver_messages = take(&messages);
    report.bookkeeping = bookkeeping;
    finish(&mut report, outcome);
    clock.mark(&mut report, "analysis");
    Ok(report)
}

use clmulti_probe::trace::FAILURE_MARK;

/// Set in a run that holds its buffers beside another run (an experiment on who
/// shares a limit): once its loop ends it creates `PATH.ready` and keeps every buffer
/// until `PATH` is gone (or a signal, or ten minutes), then releases as usual.
pub const HOLD_ENV: &str = "CLMULTI_HOLD";

fn hold_while_asked(interrupt: Option<&AtomicI32>) {
    let stopped = || interrupt.is_some_and(|i| i.load(Ordering::Relaxed) != 0);
    let Some(path) = std::env::var_os(HOLD_ENV).map(std::path::PathBuf::from) else {
        return;
    };
    let mut ready = path.clone().into_os_string();
    ready.push(".ready");
    // The runner waits for this file: it says the buffers are held, and where (the
    // cgroups this process is in; its owner is the user it runs as).
    let cgroups = std::fs::read("/proc/self/cgroup").unwrap_or_default();
    let _ = std::fs::write(&ready, cgroups);
    let until = Instant::now() + Duration::from_secs(600);
    while path.exists() && !stopped() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Writes [`FAILURE_MARK`] and `what` on stdout after whatever the runtime printed
/// (its stdio buffers flushed first, so the line lands in order).
fn mark_output(what: &str) {
    // SAFETY: fflush(NULL) flushes every C stdio stream; harmless when none is used.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    let line = format!("{FAILURE_MARK}{what} ===\n");
    // SAFETY: one write of a local buffer to stdout.
    unsafe { libc::write(1, line.as_ptr().cast(), line.len()) };
}

/// Times a run's steps into its report's `phases`.
struct PhaseClock(std::time::Instant);

impl PhaseClock {
    fn start() -> Self {
        PhaseClock(std::time::Instant::now())
    }

    /// The step that ends now, timed from the last mark.
    fn mark(&mut self, report: &mut Report, phase: &str) {
        self.mark_at(report, phase, Instant::now());
    }

    /// The step that ended at `end` (taken where pushing a phase would allocate).
    fn mark_at(&mut self, report: &mut Report, phase: &str, end: Instant) {
        report.phases.push(clmulti_explain::Phase {
            phase: phase.to_owned(),
            seconds: (end - self.0).as_secs_f64(),
        });
        self.0 = end;
    }
}

/// The loop's figures into the report, the engine's own cost, warnings, and the
/// one finishing step ([`Report::conclude`]).
fn finish(report: &mut Report, outcome: allocation_loop::LoopOutcome) {
    let scenario = report.scenario.clone();
    report.buffers = outcome.buffers;
    report.bytes_requested = outcome.bytes;
    report.elapsed_seconds = outcome.elapsed_seconds;
    report.sampling_seconds = outcome.sampling_seconds;
    report.sampling_cost = Some(outcome.cost);
    let allocating = outcome.elapsed_seconds - outcome.sampling_seconds;
    report.allocations_per_second =
        (outcome.buffers > 0 && allocating > 0.0).then(|| outcome.buffers as f64 / allocating);
    report.samples = outcome.samples;
    report.stop = outcome.stop;
    add_warnings(&scenario, report);
    report.conclude();
}

/// The loop's bounds: the scenario's guards, capped by what the machine has.
fn loop_plan(scenario: &Scenario, host: &HostLimits) -> (LoopPlan, EffectiveGuards) {
    let alloc = &scenario.allocation;
    let mut capped = Vec::new();
    let ceiling = host.memory_ceiling();
    let ceiling_bytes = ceiling.map_or(u64::MAX, |(b, _)| b);
    let asked_rss = match scenario.guards.max_rss {
        RssLimit::Bytes(b) => b,
        RssLimit::FractionOfRam(f) => (ceiling_bytes as f64 * f) as u64,
    };
    let cap = (ceiling_bytes as f64 * CEILING_SHARE) as u64;
    let max_rss = if asked_rss > cap {
        if let Some((bytes, kind)) = ceiling {
            capped.push(format!(
                "max_rss {} capped at {:.0}% of {} ({})",
                clmulti_scenario::format_bytes(asked_rss as f64),
                CEILING_SHARE * 100.0,
                kind.label(),
                clmulti_scenario::format_bytes(bytes as f64)
            ));
        }
        cap
    } else {
        asked_rss
    };
    // A request budget, not a memory guard: lazy runtimes back created buffers with
    // nothing, and device memory failing is a result. The RSS guard protects the host.
    let max_total = scenario.guards.max_total_bytes.unwrap_or(u64::MAX);
    let host_pointer = alloc.flags.iter().any(|f| f.needs_host_memory());
    // An allocation past RLIMIT_AS or RLIMIT_DATA fails inside the runtime, which
    // may abort (PoCL asserts): under a limit the process inherited (`ulimit -v`, a
    // batch system), the loop stops a tenth short, room for the runtime. A limit the
    // scenario sets in [limits] is what it studies: the runtime meets it.
    let short_of = |limit: Option<u64>, which: clmulti_scenario::Rlimit| match limit {
        Some(l) if !scenario.limits.soft.contains_key(&which) => (l as f64 * CEILING_SHARE) as u64,
        _ => u64::MAX,
    };
    let max_vsize = short_of(
        host.address_space_soft,
        clmulti_scenario::Rlimit::AddressSpace,
    );
    let max_data = short_of(host.data_soft, clmulti_scenario::Rlimit::Data);
    let plan = LoopPlan {
        size: alloc.size_bytes,
        target: match alloc.count {
            Count::Fixed(n) => n,
            Count::UntilFailure => u64::MAX,
        },
        placement: alloc.placement,
        release_every: alloc.release_every,
        sample_every: scenario.sample_every,
        sample_maps: scenario.sample_maps,
        max_total,
        max_rss,
        max_vsize,
        max_data,
        max_seconds: scenario.guards.max_seconds,
        rss_per_byte: if host_pointer { 2.0 } else { 1.0 },
        pause: std::time::Duration::from_micros(alloc.pause_us),
        release_pause: std::time::Duration::from_micros(alloc.release_pause_us),
    };
    let guards = EffectiveGuards {
        max_total_bytes: (max_total != u64::MAX).then_some(max_total),
        max_rss_bytes: max_rss,
        max_seconds: scenario.guards.max_seconds,
        capped,
    };
    (plan, guards)
}

fn take(messages: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *messages.lock().unwrap_or_else(|e| e.into_inner()))
}

fn add_warnings(scenario: &Scenario, report: &mut Report) {
    let all_host_unified = report
        .devices
        .iter()
        .all(|d| d.host_unified_memory.value() == Some(&true));
    if report.device_memory_source == DeviceMemorySource::None && !all_host_unified {
        report.warnings.push(Warning {
            kind: WarningKind::NoDeviceMemorySource,
            message: "no device-memory readings on these devices; device memory is estimated from the strategy and declared capacity".into(),
            advice: "on NVIDIA build with `--features nvml`; AMD devices report free memory themselves; Intel and AMD GPUs show DRM memory per client".into(),
        });
    }
    if report.samples.len() < 3 && report.buffers > 0 {
        report.warnings.push(Warning {
            kind: WarningKind::FewSamples,
            message: format!(
                "only {} samples: per-buffer costs are rough",
                report.samples.len()
            ),
            advice: "lower sampling.every".into(),
        });
    }
    if !report.fresh_process {
        report.warnings.push(Warning {
            kind: WarningKind::ReusedProcess,
            message: "earlier runs used this process: memory they freed can be reused, so per-buffer costs can read low".into(),
            advice: "run it alone, or with `clmulti run --isolate`".into(),
        });
    }
    layers::warn(scenario, report);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(ram: u64, cgroup: Option<u64>) -> HostLimits {
        let mut host = HostLimits::read();
        host.ram_bytes = Some(ram);
        host.cgroup_memory_bytes = cgroup;
        host.slurm_memory_bytes = None;
        host
    }

    fn scenario(guards: &str) -> Scenario {
        clmulti_scenario::load_str(&format!("[guards]\n{guards}\n"), "g.toml")
            .unwrap()
            .remove(0)
    }

    #[test]
    fn the_rss_guard_is_capped_by_the_machine_and_the_cgroup() {
        // A 4 GiB guard on a 4 GiB machine is no guard: capped at 90% of RAM.
        let (plan, guards) = loop_plan(&scenario("max_rss = \"4GiB\""), &host(4 << 30, None));
        assert_eq!(plan.max_rss, ((4u64 << 30) as f64 * 0.9) as u64);
        assert!(
            guards.capped[0].contains("physical RAM"),
            "{:?}",
            guards.capped
        );
        // A job's cgroup limit wins over RAM, and the default guard is half of it.
        let (plan, guards) = loop_plan(&scenario(""), &host(64 << 30, Some(8 << 30)));
        assert_eq!(plan.max_rss, 4 << 30);
        assert!(guards.capped.is_empty());
        // max_total bounds requests, which lazy runtimes do not back: not capped.
        let (plan, _) = loop_plan(
            &scenario("max_total = \"1TiB\""),
            &host(64 << 30, Some(8 << 30)),
        );
        assert_eq!(plan.max_total, 1 << 40);
        let (plan, _) = loop_plan(&scenario(""), &host(64 << 30, None));
        assert_eq!(plan.max_total, u64::MAX);
        // A guard within the machine stays as asked.
        let (plan, guards) = loop_plan(&scenario("max_rss = \"1GiB\""), &host(64 << 30, None));
        assert_eq!(plan.max_rss, 1 << 30);
        assert!(guards.capped.is_empty());
    }
}
