//! One dAxpy split over several devices at once: what a multi-device context is for.
//!
//! The vector is cut into one contiguous part per device (equal, or by weights),
//! every part is launched before any is waited on, and the aggregate bandwidth is
//! the bytes of the whole vector over the host time from the first enqueue to the
//! last completion seen. How the parts are launched and waited for is chosen per
//! runtime (see [`crate::launch`]). The same split runs in one shared context (parts
//! in buffers of their own, and as sub-buffers of one buffer) and in one context per
//! device, against the same kernel on one device, timed the same way, in the same
//! run; and over fewer devices, for the efficiency per device count.

mod plan;
mod run;

use plan::{layout_notes, Split};
use run::run_split;

mod report;

pub use report::{Layout, PartFigures, SplitReport, SplitRun, Transfers};

use crate::bandwidth::Clock;
use crate::case::{check_contiguous, test_data, AxpyCase};
use crate::error::{cl3, AxpyError};
use crate::launch::{self, Prepared, Strategy};
use crate::runner::{buffer, event_seconds, read, write, KernelChoice, KernelRan, Runner};
use clmulti_scenario::ContextMode;
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::memory::{Buffer, ClMem};
use std::time::Instant;

/// The smallest relative difference between the shared context's two layouts that
/// is called a difference (see the note in [`split`]).
pub const LAYOUT_DIFFERENCE: f64 = 0.03;

/// How the split is run.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitOptions {
    /// Elements of the whole vector.
    pub n: u64,
    /// Relative share of each device (`None`: equal).
    pub weights: Option<Vec<f64>>,
    /// Timed repetitions after one warm-up.
    pub repeat: usize,
    /// Which context modes.
    pub modes: Vec<ContextMode>,
    /// Which kernels.
    pub kernels: Vec<KernelChoice>,
    /// Also time moving the data: host to devices, back, and between devices.
    pub include_transfers: bool,
    /// Also split over the first k devices for each k here below the device count
    /// (buffers per device, every mode and kernel): the efficiency per device count.
    pub device_counts: Vec<usize>,
}

/// The default device counts for `devices` devices: 2, 4, 8... below it, and itself.
pub fn default_device_counts(devices: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = std::iter::successors(Some(2usize), |k| Some(k * 2))
        .take_while(|k| *k < devices)
        .collect();
    counts.push(devices);
    counts
}

/// Cuts `n` elements into one part per weight, each boundary a multiple of `align`
/// elements (sub-buffer origins must be), the last part taking the rest.
pub fn parts(n: u64, weights: &[f64], align: u64) -> Result<Vec<u64>, AxpyError> {
    if weights.is_empty() || weights.iter().any(|w| !(w.is_finite() && *w > 0.0)) {
        return Err(AxpyError::Split(
            "weights must be positive numbers, one per device".into(),
        ));
    }
    let total: f64 = weights.iter().sum();
    let align = align.max(1);
    let mut parts = Vec::with_capacity(weights.len());
    let mut used = 0u64;
    for (i, w) in weights.iter().enumerate() {
        let part = if i + 1 == weights.len() {
            n - used
        } else {
            let want = (n as f64 * w / total) as u64;
            (want / align * align).min(n - used)
        };
        parts.push(part);
        used += part;
    }
    if parts.contains(&0) && n >= align * weights.len() as u64 {
        return Err(AxpyError::Split(format!(
            "n = {n} leaves a device without elements at alignment {align}"
        )));
    }
    Ok(parts)
}

/// One part's buffers and queues.
struct Part<'r> {
    runner: &'r Runner<'r>,
    /// A profiling queue (writes, reads, tuning, profiled launches).
    queue: CommandQueue,
    /// The same device without profiling.
    plain: CommandQueue,
    x: Buffer<f32>,
    y: Buffer<f32>,
    case: AxpyCase,
    per_item: u32,
    /// The part's slice of the whole vectors as written (for the check).
    x0: &'r [f32],
    y0: &'r [f32],
}

/// What timing the parts found.
struct Timed {
    measured: launch::Measured,
    /// Host seconds of each timed repetition, first enqueue to last completion seen.
    totals: Vec<f64>,
}

/// Times `parts` together: every launch strategy tried, then `repeat` repetitions
/// with the fastest. Tuning and earlier launches must be done.
fn time_parts(
    parts: &[Part<'_>],
    kernel: KernelRan,
    repeat: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Timed, AxpyError> {
    let prepared = parts
        .iter()
        .map(|p| {
            Ok(Prepared {
                profiled: &p.queue,
                plain: &p.plain,
                kernel: p.runner.prepare(kernel, &p.case, &p.x, &p.y, p.per_item)?,
                context: p.runner.context.get() as usize,
            })
        })
        .collect::<Result<Vec<_>, AxpyError>>()?;
    // Enough trials that a median means something, few enough to stay short.
    let trials = (repeat / 2).clamp(3, 10);
    let measured = launch::measure(&prepared, trials, repeat, stop)?;
    let totals = measured.timed.iter().map(|r| launch::total_s(r)).collect();
    Ok(Timed { measured, totals })
}
/// Whether a part's events can be believed: non-zero, and within the host time of
/// the same launch (which includes waiting for the other parts).
fn events_within_host(launches: &[launch::PartRep]) -> bool {
    let mut events: Vec<f64> = launches.iter().filter_map(|l| l.kernel_s()).collect();
    if events.len() != launches.len() || events.is_empty() {
        return false;
    }
    events.sort_by(f64::total_cmp);
    let median = events[events.len() / 2];
    median > 0.0
        && launches
            .iter()
            .all(|l| l.kernel_s().unwrap_or(0.0) <= l.host_s() * 1.1 + 1e-5)
}

fn align_floats(devices: &[Device]) -> u64 {
    let bits = devices
        .iter()
        .map(|d| u64::from(d.mem_base_addr_align().unwrap_or(1024)))
        .max()
        .unwrap_or(1024);
    (bits / 8 / 4).max(4)
}

/// Runs the split over `devices` (distinct, of one platform), and over the first k
/// of them for each of `options.device_counts` below their number.
pub fn split(devices: &[Device], options: &SplitOptions) -> Result<SplitReport, AxpyError> {
    split_until(devices, options, &|| false)
}

/// [`split`], asking `stop` before each run (a mode, layout and kernel over some
/// devices): once it says yes, no run starts, the report holds the runs that
/// finished and [`SplitReport::not_run`] names the others (what a command does on
/// Ctrl-C).
pub fn split_until(
    devices: &[Device],
    options: &SplitOptions,
    stop: &dyn Fn() -> bool,
) -> Result<SplitReport, AxpyError> {
    let weights = checked_weights(devices, options)?;
    let mut report = SplitReport {
        n: options.n,
        parts: parts(options.n, &weights, align_floats(devices))?,
        repeat: options.repeat.max(1),
        runs: Vec::new(),
        scaling: Vec::new(),
        transfers: Vec::new(),
        notes: Vec::new(),
        not_run: Vec::new(),
    };
    let mut counts: Vec<usize> = options
        .device_counts
        .iter()
        .copied()
        .filter(|k| *k < devices.len())
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts.push(devices.len());
    let mut split = Split::new(devices, options, stop, weights, &counts);
    let mut run_all = || -> Result<(), AxpyError> {
        for &k in &counts {
            if !split.run_count(k, &mut report)? {
                break;
            }
        }
        Ok(())
    };
    if let Err(e) = run_all() {
        // A stop can make the run in flight fail (PoCL's compiler, on the signal,
        // deletes its temporary files): then it is not run, not an error.
        if !stop() {
            return Err(e);
        }
        let ran = report.runs.len() + report.scaling.len();
        report.notes.push(format!(
            "the run in flight when the stop came failed, and is counted as not run: {e}"
        ));
        report.not_run = split.planned[ran..].to_vec();
    }
    layout_notes(&mut report);
    Ok(report)
}

/// The devices' weights (equal unless given), once the devices are distinct and
/// every device count is among them.
fn checked_weights(devices: &[Device], options: &SplitOptions) -> Result<Vec<f64>, AxpyError> {
    for (i, d) in devices.iter().enumerate() {
        if devices[..i].iter().any(|o| o.id() == d.id()) {
            return Err(AxpyError::SameDevice(d.name().unwrap_or_default()));
        }
    }
    let weights = options
        .weights
        .clone()
        .unwrap_or_else(|| vec![1.0; devices.len()]);
    if weights.len() != devices.len() {
        return Err(AxpyError::Split(format!(
            "{} weights for {} device(s): one share per device selected",
            weights.len(),
            devices.len()
        )));
    }
    if let Some(k) = options
        .device_counts
        .iter()
        .find(|k| **k == 0 || **k > devices.len())
    {
        return Err(AxpyError::Split(format!(
            "device count {k}: expected 1 to {} (the devices selected)",
            devices.len()
        )));
    }
    Ok(weights)
}

/// The layouts a split of `k` of `all` devices runs in `mode`: sub-buffers of one
/// buffer only in a shared context over every device (and more than one).
fn layouts(mode: ContextMode, k: usize, all: usize) -> &'static [Layout] {
    match mode {
        ContextMode::Shared if k > 1 && k == all => &[Layout::Buffers, Layout::SubBuffers],
        _ => &[Layout::Buffers],
    }
}

/// A kernel choice as a run names it.
fn choice_name(choice: KernelChoice) -> &'static str {
    match choice {
        KernelChoice::Seed => KernelRan::Seed.name(),
        KernelChoice::Fast => KernelRan::Fast.name(),
        KernelChoice::Auto => "auto",
    }
}

#[cfg(test)]
mod tests;
