//! How a split's parts are launched and seen complete, and what each way costs.
//!
//! A split's time runs from the first part's enqueue to the host seeing the last
//! part complete. Beyond the kernels themselves, three things add to it: later parts
//! start late because each enqueue and flush before them takes time (launch skew);
//! a kernel starts some time after it was enqueued (start lag, on the device's
//! clock); and the host learns of the end some time after it (completion detection:
//! a blocking wait may sleep and be woken). Which way of launching and waiting is
//! fastest depends on the runtime, so the runner tries each [`Strategy`] on the
//! runtime at hand, measures those three parts of each, and times the run with the
//! fastest.

use crate::error::{cl3, AxpyError};
use crate::runner::{launch, launch_without_event};
use one_thread::one_thread;
use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use threads::{Workers, STOP};

mod one_thread;
mod threads;

/// Who launches the parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    /// One host thread enqueues and flushes each part in turn, then waits.
    OneThread,
    /// One host thread enqueues every part, then flushes every queue, then waits:
    /// no part waits for another's flush to be enqueued.
    OneThreadFlushAfter,
    /// A host thread per device, released together: each enqueues and flushes its
    /// own part, and once every part is launched, waits for its own.
    ThreadPerDevice,
}

/// How the host learns that the parts completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Completion {
    /// clFinish on each queue, in launch order (a thread per device: on its own);
    /// without profiling no event is asked for.
    FinishInOrder,
    /// clWaitForEvents: on all parts' events at once (one thread; once per context
    /// when the parts are in several), or on its own part's (a thread per device).
    WaitForEvents,
    /// Reading each event's CL_EVENT_COMMAND_EXECUTION_STATUS until CL_COMPLETE.
    Poll,
}

/// One way of launching a split and seeing it complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Strategy {
    /// Who launches.
    pub launcher: Launcher,
    /// How completion is seen.
    pub completion: Completion,
    /// Whether the queues profile (events carry device times; some runtimes add
    /// work to every launch for it).
    pub profiling: bool,
}

impl Strategy {
    /// Every strategy the runner tries.
    pub fn all() -> Vec<Strategy> {
        let mut all = Vec::new();
        for profiling in [true, false] {
            for (launcher, completion) in [
                (Launcher::OneThread, Completion::FinishInOrder),
                (Launcher::OneThread, Completion::WaitForEvents),
                (Launcher::OneThread, Completion::Poll),
                (Launcher::OneThreadFlushAfter, Completion::FinishInOrder),
                (Launcher::OneThreadFlushAfter, Completion::WaitForEvents),
                (Launcher::OneThreadFlushAfter, Completion::Poll),
                (Launcher::ThreadPerDevice, Completion::FinishInOrder),
                (Launcher::ThreadPerDevice, Completion::WaitForEvents),
                (Launcher::ThreadPerDevice, Completion::Poll),
            ] {
                all.push(Strategy {
                    launcher,
                    completion,
                    profiling,
                });
            }
        }
        all
    }

    /// A short description, e.g. "a thread per device, polling, no profiling".
    pub fn describe(&self) -> String {
        format!(
            "{}, {}, {}",
            match self.launcher {
                Launcher::OneThread => "one thread",
                Launcher::OneThreadFlushAfter => "one thread flushing after all enqueues",
                Launcher::ThreadPerDevice => "a thread per device",
            },
            match (self.launcher, self.completion) {
                (
                    Launcher::OneThread | Launcher::OneThreadFlushAfter,
                    Completion::FinishInOrder,
                ) => {
                    "clFinish in order"
                }
                (Launcher::ThreadPerDevice, Completion::FinishInOrder) => "clFinish",
                (
                    Launcher::OneThread | Launcher::OneThreadFlushAfter,
                    Completion::WaitForEvents,
                ) => "clWaitForEvents on all",
                (Launcher::ThreadPerDevice, Completion::WaitForEvents) => "clWaitForEvents",
                (_, Completion::Poll) => "polling",
            },
            if self.profiling {
                "profiling"
            } else {
                "no profiling"
            }
        )
    }
}

/// What one strategy cost, from its trial repetitions (medians over them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StrategyFigures {
    /// The strategy.
    pub strategy: Strategy,
    /// Trial repetitions.
    pub reps: usize,
    /// Host time, first enqueue to last completion seen: median, microseconds.
    pub total_us: f64,
    /// The same, best.
    pub total_us_best: f64,
    /// Host time from the first part's enqueue call to the last part's.
    pub skew_us: f64,
    /// The longest clEnqueueNDRangeKernel of one part, on the host.
    pub enqueue_us: f64,
    /// The longest clFlush of one part, on the host.
    pub flush_us: f64,
    /// From enqueue to the kernel's start on the device's clock (profiling
    /// CL_PROFILING_COMMAND_QUEUED to _START), the latest part's; `None` without
    /// profiling or where the runtime's QUEUED stamp is not usable.
    pub start_lag_us: Option<f64>,
    /// From the last kernel's end to the host seeing every part complete: the host
    /// clock less the device's queued-to-end time, anchored at each enqueue call
    /// (inferred; `None` without profiling or a usable QUEUED stamp).
    pub detect_us: Option<f64>,
    /// Median total less the longest part's best kernel time (profiled trials):
    /// everything that is not a kernel running.
    pub overhead_us: f64,
}

/// A part ready to launch again and again: its queues and its own kernel object
/// with its arguments set (`None`: an empty part, nothing to launch).
pub(crate) struct Prepared<'q> {
    pub profiled: &'q CommandQueue,
    pub plain: &'q CommandQueue,
    pub kernel: Option<(Kernel, usize)>,
    /// Which context the part's queues belong to (clWaitForEvents takes events of
    /// one context at a time): parts of one context share the number.
    pub context: usize,
}

// SAFETY: the kernel's arguments are set once, before the part is shared, and never
// again; clEnqueueNDRangeKernel is thread-safe (OpenCL 3.0 API spec, "Thread
// Safety": every call but clSetKernelArg, clSetKernelArgSVMPointer,
// clSetKernelExecInfo and clCloneKernel), and the runner never launches one part from
// two threads at once.
unsafe impl Sync for Prepared<'_> {}

/// One part's times in one repetition: host seconds since the trial's epoch, and
/// the device's profiling stamps (queued, start, end), ns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PartRep {
    pub launch_at: f64,
    pub enqueued_at: f64,
    pub flush_at: f64,
    pub launched_at: f64,
    pub seen_at: f64,
    pub profile: Option<[u64; 3]>,
}

impl PartRep {
    /// The kernel's time on the device, seconds.
    pub fn kernel_s(&self) -> Option<f64> {
        self.profile
            .map(|[_, start, end]| end.saturating_sub(start) as f64 * 1e-9)
    }

    /// Host time from this part's enqueue to its completion being seen.
    pub fn host_s(&self) -> f64 {
        self.seen_at - self.launch_at
    }

    /// Queued to start on the device, when the stamps are ordered.
    fn start_lag_s(&self) -> Option<f64> {
        self.profile
            .filter(|[queued, start, _]| *queued > 0 && queued <= start)
            .map(|[queued, start, _]| (start - queued) as f64 * 1e-9)
    }

    /// When the kernel ended on the host's clock, anchoring QUEUED at the enqueue call.
    fn ended_at(&self) -> Option<f64> {
        self.start_lag_s()?;
        self.profile
            .map(|[queued, _, end]| self.launch_at + end.saturating_sub(queued) as f64 * 1e-9)
    }
}

/// One repetition: every part launched once.
pub(crate) type Rep = Vec<PartRep>;

/// Host time of a repetition: first enqueue to last completion seen.
pub(crate) fn total_s(rep: &[PartRep]) -> f64 {
    let first = rep.iter().map(|p| p.launch_at).fold(f64::MAX, f64::min);
    let last = rep.iter().map(|p| p.seen_at).fold(0.0, f64::max);
    (last - first).max(0.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn median_of(v: Vec<Option<f64>>) -> Option<f64> {
    v.into_iter().collect::<Option<Vec<f64>>>().map(median)
}

/// The figures of one strategy's trials; `kernel_best_s` is the longest part's best
/// kernel time over all profiled trials.
pub(crate) fn figures(strategy: Strategy, reps: &[Rep], kernel_best_s: f64) -> StrategyFigures {
    let us = 1e6;
    let totals: Vec<f64> = reps.iter().map(|r| total_s(r)).collect();
    let skew = |r: &Rep| {
        let at = r.iter().map(|p| p.launch_at);
        at.clone().fold(0.0, f64::max) - at.fold(f64::MAX, f64::min)
    };
    let enqueue = |r: &Rep| {
        r.iter()
            .map(|p| p.enqueued_at - p.launch_at)
            .fold(0.0, f64::max)
    };
    let flush = |r: &Rep| {
        r.iter()
            .map(|p| p.launched_at - p.flush_at)
            .fold(0.0, f64::max)
    };
    let start_lag = |r: &Rep| {
        r.iter()
            .map(PartRep::start_lag_s)
            .collect::<Option<Vec<f64>>>()
            .map(|v| v.into_iter().fold(0.0, f64::max))
    };
    let detect = |r: &Rep| {
        let ended = r
            .iter()
            .map(PartRep::ended_at)
            .collect::<Option<Vec<f64>>>()?
            .into_iter()
            .fold(0.0, f64::max);
        let seen = r.iter().map(|p| p.seen_at).fold(0.0, f64::max);
        Some(seen - ended)
    };
    let total = median(totals.clone());
    StrategyFigures {
        strategy,
        reps: reps.len(),
        total_us: total * us,
        total_us_best: totals.iter().copied().fold(f64::MAX, f64::min) * us,
        skew_us: median(reps.iter().map(skew).collect()) * us,
        enqueue_us: median(reps.iter().map(enqueue).collect()) * us,
        flush_us: median(reps.iter().map(flush).collect()) * us,
        start_lag_us: median_of(reps.iter().map(start_lag).collect()).map(|s| s * us),
        detect_us: median_of(reps.iter().map(detect).collect()).map(|s| s * us),
        overhead_us: (total - kernel_best_s) * us,
    }
}

impl Prepared<'_> {
    fn queue(&self, strategy: Strategy) -> &CommandQueue {
        if strategy.profiling {
            self.profiled
        } else {
            self.plain
        }
    }
}

/// Enqueues a part (not flushed); its event, when the strategy needs one (`None`
/// for an empty part).
fn enqueue(part: &Prepared<'_>, strategy: Strategy) -> Result<Option<Event>, AxpyError> {
    let Some((kernel, global)) = &part.kernel else {
        return Ok(None);
    };
    let queue = part.queue(strategy);
    if strategy.profiling || strategy.completion != Completion::FinishInOrder {
        Ok(Some(launch(queue, kernel, *global)?))
    } else {
        launch_without_event(queue, kernel, *global)?;
        Ok(None)
    }
}

/// Flushes a part's queue: some runtimes start a queue's work only then.
fn flush(part: &Prepared<'_>, strategy: Strategy) -> Result<(), AxpyError> {
    if part.kernel.is_some() {
        part.queue(strategy).flush().map_err(cl3("clFlush"))?;
    }
    Ok(())
}

/// Whether the event's command completed; its error status as an error.
fn complete(event: &Event) -> Result<bool, AxpyError> {
    let status = event
        .command_execution_status()
        .map_err(cl3("clGetEventInfo"))?
        .0;
    if status < 0 {
        return Err(AxpyError::OpenCl {
            call: "clEnqueueNDRangeKernel (the kernel's execution status)",
            code: clmulti_probe::ClCode(status),
        });
    }
    Ok(status == opencl3::event::CL_COMPLETE)
}

fn profile(event: Option<&Event>, profiling: bool) -> Result<Option<[u64; 3]>, AxpyError> {
    let Some(event) = event.filter(|_| profiling) else {
        return Ok(None);
    };
    let get = cl3("clGetEventProfilingInfo");
    // QUEUED is optional in practice: a runtime that does not give it still times.
    let queued = event.profiling_command_queued().unwrap_or(0);
    let start = event.profiling_command_start().map_err(&get)?;
    let end = event.profiling_command_end().map_err(&get)?;
    Ok(Some([queued, start, end]))
}

/// Every strategy tried `trials` times after one warm-up, round-robin so drift
/// favours none, then `repeat` repetitions (until `stop`) with the fastest by median.
fn trials_then_timed(
    run: &dyn Fn(Strategy) -> Result<Rep, AxpyError>,
    (trials, repeat): (usize, usize),
    stop: &dyn Fn() -> bool,
) -> Result<Measured, AxpyError> {
    let strategies = Strategy::all();
    let mut applications = 0u32;
    let mut trial_reps: Vec<Vec<Rep>> = vec![Vec::new(); strategies.len()];
    for round in 0..=trials.max(1) {
        for (s, &strategy) in strategies.iter().enumerate() {
            let rep = run(strategy)?;
            applications += 1;
            if round > 0 {
                trial_reps[s].push(rep);
            }
        }
    }
    let mut profiled: Vec<Rep> = strategies
        .iter()
        .zip(&trial_reps)
        .filter(|(s, _)| s.profiling)
        .flat_map(|(_, reps)| reps.iter().cloned())
        .collect();
    let kernel_best_s = longest_best_kernel(&profiled);
    let figures: Vec<StrategyFigures> = strategies
        .iter()
        .zip(&trial_reps)
        .map(|(&s, reps)| figures(s, reps, kernel_best_s))
        .collect();
    let chosen = figures
        .iter()
        .min_by(|a, b| a.total_us.total_cmp(&b.total_us))
        .map(|f| f.strategy)
        .expect("strategies to try");
    let mut timed = Vec::with_capacity(repeat);
    for _ in 0..repeat.max(1) {
        let rep = run(chosen)?;
        applications += 1;
        if chosen.profiling {
            profiled.push(rep.clone());
        }
        timed.push(rep);
        if stop() {
            break;
        }
    }
    Ok(Measured {
        chosen,
        strategies: figures,
        timed,
        applications,
        profiled,
    })
}

/// What [`measure`] found.
pub(crate) struct Measured {
    /// The strategy the timed repetitions used.
    pub chosen: Strategy,
    /// Every strategy's trials.
    pub strategies: Vec<StrategyFigures>,
    /// The timed repetitions.
    pub timed: Vec<Rep>,
    /// Every repetition run (warm-ups and trials too): each added alpha * x to y once.
    pub applications: u32,
    /// Every profiled repetition (trials and timed), for the parts' device figures.
    pub profiled: Vec<Rep>,
}

/// Tries every strategy (`trials` repetitions each after one warm-up, round-robin so
/// drift favours none), then times `repeat` repetitions with the fastest by median.
pub(crate) fn measure(
    parts: &[Prepared<'_>],
    trials: usize,
    repeat: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Measured, AxpyError> {
    let workers = Workers {
        generation: AtomicU64::new(0),
        strategy: Mutex::new(None),
        done: AtomicUsize::new(0),
        launched: AtomicUsize::new(0),
        slots: parts.iter().map(|_| Mutex::new(None)).collect(),
        epoch: Instant::now(),
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let workers = &workers;
                scope.spawn(move || workers.work(i, part))
            })
            .collect();
        let threads: Vec<std::thread::Thread> =
            handles.iter().map(|h| h.thread().clone()).collect();
        let run = |strategy: Strategy| match strategy.launcher {
            Launcher::OneThread | Launcher::OneThreadFlushAfter => {
                one_thread(parts, strategy, workers.epoch)
            }
            Launcher::ThreadPerDevice => workers.rep(strategy, &threads),
        };
        let result = trials_then_timed(&run, (trials, repeat), stop);
        workers.generation.store(STOP, Ordering::Release);
        threads.iter().for_each(std::thread::Thread::unpark);
        result
    })
}

/// The longest part's best kernel time over profiled repetitions (0 without any).
pub(crate) fn longest_best_kernel(reps: &[Rep]) -> f64 {
    let parts = reps.first().map_or(0, Vec::len);
    (0..parts)
        .map(|i| {
            reps.iter()
                .filter_map(|r| r[i].kernel_s())
                .filter(|k| *k > 0.0)
                .fold(f64::MAX, f64::min)
        })
        .filter(|k| *k < f64::MAX)
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(launch_at: f64, launched_at: f64, seen_at: f64, profile: [u64; 3]) -> PartRep {
        PartRep {
            launch_at,
            enqueued_at: launch_at + (launched_at - launch_at) * 0.75,
            flush_at: launch_at + (launched_at - launch_at) * 0.75,
            launched_at,
            seen_at,
            profile: Some(profile),
        }
    }

    #[test]
    fn figures_split_the_time_into_skew_lag_kernel_and_detection() {
        // Part 0 enqueued at 0 (20 us call), part 1 at 20 us; each kernel starts 5 us
        // after its enqueue and runs 1000 us; the host sees both done at 1045 us.
        let rep = vec![
            part(0.0, 20e-6, 1045e-6, [1_000, 6_000, 1_006_000]),
            part(20e-6, 40e-6, 1045e-6, [50_000, 55_000, 1_055_000]),
        ];
        let all = Strategy::all();
        let f = figures(all[0], &[rep.clone(), rep], 1000e-6);
        assert!((f.total_us - 1045.0).abs() < 1e-6, "{f:?}");
        assert!((f.skew_us - 20.0).abs() < 1e-6);
        assert!((f.enqueue_us - 15.0).abs() < 1e-6);
        assert!((f.flush_us - 5.0).abs() < 1e-6);
        assert!((f.start_lag_us.unwrap() - 5.0).abs() < 1e-6);
        // Part 1 ended at 20 + 1005 = 1025 us on the host's clock: seen 20 us later.
        assert!((f.detect_us.unwrap() - 20.0).abs() < 1e-6);
        assert!((f.overhead_us - 45.0).abs() < 1e-6);
        // Without a usable QUEUED stamp there is no start lag nor detection estimate.
        let unstamped = vec![part(0.0, 1e-6, 1e-3, [0, 5, 900_000])];
        let f = figures(all[0], &[unstamped], 0.9e-3);
        assert_eq!((f.start_lag_us, f.detect_us), (None, None));
    }

    #[test]
    fn every_strategy_is_tried_and_described_once() {
        let all = Strategy::all();
        assert_eq!(all.len(), 18);
        let names: std::collections::BTreeSet<String> =
            all.iter().map(Strategy::describe).collect();
        assert_eq!(names.len(), 18);
        assert!(names.contains("a thread per device, polling, no profiling"));
    }
}
