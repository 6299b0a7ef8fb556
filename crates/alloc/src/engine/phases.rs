//! The run's phases around the allocation loop, each a step of [`super::run`]:
//! the engine's own cost, refusals up front, the backend, the checks, the split.

use super::allocation_loop::{self, allocation_loop, HostMeter, LoopOutcome, LoopPlan};
use super::check::{self, BufferCheck};
use super::device_memory::DeviceMemory;
use super::opencl::{self, OpenClBackend, SetupError};
use super::watchdog::CallTracker;
use super::{after_release, bookkeeping, loop_plan, take, SplitRun, BOOKKEEPING_BUFFERS};
use super::{host_memory, mark_output, Observer};
use clmulti_explain::{AxpySplit, Bookkeeping, LeakCheck, Report, StopReason};
use clmulti_probe::trace::Tracer;
use clmulti_probe::{HostLimits, UsageReader};
use clmulti_scenario::{MemFlag, Scenario};
use std::sync::atomic::AtomicI32;
use std::time::Instant;

/// The engine's own cost, measured before the runtime loads: after the loop, the
/// runtime's threads (still freeing) and its heap would be in the figure.
pub(super) fn engine_cost(scenario: &Scenario, host: &HostLimits) -> Bookkeeping {
    let (dry_plan, _) = loop_plan(scenario, host);
    bookkeeping::measure(
        &dry_plan,
        scenario.devices.set.len().max(1),
        scenario.allocation.keep,
        dry_plan
            .target
            .clamp(*BOOKKEEPING_BUFFERS.start(), *BOOKKEEPING_BUFFERS.end()),
    )
}

/// Why the run cannot start from what this process already holds, if it cannot.
pub(super) fn refused_up_front(scenario: &Scenario, plan: &LoopPlan) -> Option<StopReason> {
    // Before the backend allocates a COPY_HOST_PTR source block of the buffer's size.
    let source_block = if scenario.allocation.flags.contains(&MemFlag::CopyHostPtr) {
        plan.size
    } else {
        0
    };
    let statm = UsageReader::own_statm();
    let now = allocation_loop::GuardReading {
        held: statm.rss_bytes,
        vsize: statm.virtual_bytes,
        data: statm.data_bytes,
    };
    allocation_loop::refused_up_front(plan, now, source_block)
}

/// The backend and the tracer (where one is loaded), or `None` with the report's
/// stop said: the call that failed (with what the tracer saw fail), or why the
/// scenario is unsupported.
pub(super) fn backend(
    scenario: &Scenario,
    devices: &[clmulti_probe::Device],
    messages: &opencl::Messages,
    tracker: CallTracker,
    report: &mut Report,
) -> Option<(OpenClBackend, Option<Tracer>)> {
    let tracer = Tracer::find();
    report.traced = tracer.map(|_| clmulti_explain::Traced::default());
    let setup_mark = tracer.map(|t| (t, t.mark()));
    match OpenClBackend::new(scenario, devices, messages, tracker) {
        Ok(b) => Some((b, tracer)),
        Err(SetupError::Failed(code, call)) => {
            report.stop = StopReason::Failed {
                error: code.into(),
                call,
                index: 0,
            };
            if let (Some((t, mark)), Some(traced)) = (setup_mark, &mut report.traced) {
                traced.failing_calls = t.failures_since(mark);
            }
            report.driver_messages = take(messages);
            None
        }
        Err(SetupError::Unsupported(reason)) => {
            report.stop = StopReason::Unsupported { reason };
            None
        }
    }
}

/// `[axpy] check` over the kept buffer pairs, unless the run was interrupted or a
/// pair's check would pass `guards.max_rss` (then the report says so).
pub(super) fn check_kept(
    scenario: &Scenario,
    check: Option<&mut dyn BufferCheck>,
    plan: &LoopPlan,
    backend: &OpenClBackend,
    (deadline, interrupted): (Instant, bool),
    report: &mut Report,
) {
    // A pair's check holds host copies of both buffers and the result beside what
    // the run keeps: where that would pass max_rss, the check is not run.
    let check_need = 3 * plan.size;
    let resident = UsageReader::own_statm().rss_bytes;
    let check_fits = resident.saturating_add(check_need) <= plan.max_rss;
    let asked = scenario.axpy.check != clmulti_scenario::AxpyCheck::None;
    if asked && !check_fits && !interrupted {
        report.axpy_check = Some(clmulti_explain::AxpyCheckReport {
            failures: vec![format!(
                "not run: a pair's check holds about {} of host memory, and with {} resident the run would pass guards.max_rss ({})",
                clmulti_scenario::format_bytes(check_need as f64),
                clmulti_scenario::format_bytes(resident as f64),
                clmulti_scenario::format_bytes(plan.max_rss as f64)
            )],
            ..Default::default()
        });
    }
    if let (Some(check), true, false, true) = (check, asked, interrupted, check_fits) {
        let (contexts, context_of) = backend.contexts();
        report.axpy_check = Some(check::check_pairs(
            scenario,
            backend.live(),
            backend.devices(),
            contexts,
            &context_of,
            check,
            deadline,
        ));
    }
}

/// `[axpy] split` over the run's devices, or why it was skipped: an interrupt, or
/// the loop's time gone.
pub(super) fn split_or_skip(
    split: &mut SplitRun<'_>,
    scenario: &Scenario,
    devices: &[clmulti_probe::Device],
    (deadline, interrupted): (Instant, bool),
) -> AxpySplit {
    if interrupted {
        AxpySplit::Skipped {
            reason: "the run was interrupted".into(),
        }
    } else if Instant::now() >= deadline {
        AxpySplit::Skipped {
            reason: format!(
                "guards.max_seconds ({} s) had passed when the loop and the checks ended",
                scenario.guards.max_seconds
            ),
        }
    } else {
        split(devices, scenario)
    }
}

/// The allocation loop with its sampling, traced where a tracer is: what it found,
/// and when it started (the checks and the split share its time).
pub(super) fn loop_with_sampling(
    plan: &LoopPlan,
    backend: &mut OpenClBackend,
    (usage, memory): (&UsageReader, &mut DeviceMemory),
    observer: Option<&mut dyn Observer>,
    (interrupt, tracer): (Option<&AtomicI32>, Option<Tracer>),
    report: &mut Report,
) -> (LoopOutcome, Instant) {
    let mut meter = HostMeter {
        usage,
        devices: memory,
        on_sample: observer,
        shmem_start: usage.shmem_bytes(),
        kernel: super::allocation_loop::KernelTrend::find(),
    };
    let loop_start = Instant::now();
    backend.trace_with(tracer);
    let headroom = host_memory::Headroom::reserve();
    let outcome = allocation_loop(plan, backend, &mut meter, interrupt);
    drop(headroom);
    if let Some(traced) = &mut report.traced {
        traced.failing_calls = backend.failing_calls();
    }
    report.failing_window = backend.failing_window();
    if let StopReason::Failed { error, call, index } = &outcome.stop {
        mark_output(&format!(
            "buffer {index}: {} returned {error}",
            call.c_name()
        ));
    }
    (outcome, loop_start)
}

/// Every object released, then what the process holds after release: the leak
/// check, and when release ended.
pub(super) fn release(
    backend: OpenClBackend,
    (usage, memory): (&UsageReader, &mut DeviceMemory),
    outcome: &LoopOutcome,
    before: clmulti_probe::ProcessUsage,
) -> (LeakCheck, Instant) {
    let mut backend = backend;
    let mut leak_check = backend.release_all();
    let released = Instant::now();
    after_release::read(&mut leak_check, usage, memory, outcome);
    leak_check.before = before;
    drop(backend);
    (leak_check, released)
}

/// The readers the loop samples with, opened before it (at the descriptor limit
/// nothing new can be opened), and what the process held before it.
pub(super) fn readers(
    devices: &[clmulti_probe::Device],
    report: &mut Report,
) -> (UsageReader, clmulti_probe::ProcessUsage, DeviceMemory) {
    let usage = UsageReader::open();
    report.clmulti_fds = Some(usage.clmulti_fd_count());
    let before = usage.read().process;
    let memory = DeviceMemory::open(devices);
    report.device_memory_source = memory.source;
    (usage, before, memory)
}
