//! BabelStream-style bandwidth: axpy and a float4 copy, interleaved, timed by
//! profiling events and checked against the host clock.

use crate::case::{test_data, AxpyCase};
use crate::error::{cl3, AxpyError};
use crate::runner::{
    buffer, event_seconds, round_up, write, KernelChoice, KernelRan, Runner, LOCAL_SIZE,
};
use opencl3::command_queue::CommandQueue;
use opencl3::device::Device;
use opencl3::event::Event;
use opencl3::kernel::ExecuteKernel;
use opencl3::memory::Buffer;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Which clock a timing comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// The command's profiling events (start to end on the device).
    Events,
    /// The host, from enqueue to completion (includes launch overhead): used when
    /// the events disagree with it.
    Host,
}

/// Kernel times and the bandwidth they give.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timing {
    /// Which kernel.
    pub kernel: String,
    /// Bytes moved per run.
    pub bytes: u64,
    /// Best time, seconds.
    pub min_s: f64,
    /// Median time.
    pub median_s: f64,
    /// Worst time.
    pub max_s: f64,
    /// bytes / min_s, in 10^9 bytes per second.
    pub gb_per_s_best: f64,
    /// bytes / median_s.
    pub gb_per_s_median: f64,
    /// Where the times come from.
    pub clock: Clock,
}

/// One launch timed both ways.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Launch {
    pub event_s: f64,
    pub host_s: f64,
}

/// Enqueues with `enqueue`, waits, and times it by its event and by the host.
pub(crate) fn timed(
    enqueue: impl FnOnce() -> Result<Option<Event>, AxpyError>,
) -> Result<Launch, AxpyError> {
    let start = Instant::now();
    let event = enqueue()?;
    let event_s = match &event {
        Some(ev) => event_seconds(ev)?,
        None => 0.0,
    };
    Ok(Launch {
        event_s,
        host_s: start.elapsed().as_secs_f64(),
    })
}

/// Whether profiling events can be believed next to the host clock: an event can
/// not take longer than its launch as the host saw it, nor much less unless the
/// difference is launch overhead. Mesa rusticl's events read ~0 (timer resolution
/// 0), which gave bandwidths 10^7 too high.
pub(crate) fn events_agree(launches: &[Launch]) -> bool {
    let mut events: Vec<f64> = launches.iter().map(|l| l.event_s).collect();
    let mut hosts: Vec<f64> = launches.iter().map(|l| l.host_s).collect();
    events.sort_by(f64::total_cmp);
    hosts.sort_by(f64::total_cmp);
    let (e, h) = (events[events.len() / 2], hosts[hosts.len() / 2]);
    e > 0.0 && e <= h * 1.1 + 1e-5 && (e >= 0.5 * h || h - e < 200e-6)
}

/// The timing of `launches`, by events where they agree with the host clock.
pub(crate) fn timing(
    kernel: &str,
    bytes: u64,
    launches: &[Launch],
    notes: &mut Vec<String>,
) -> Timing {
    let clock = if events_agree(launches) {
        Clock::Events
    } else {
        let median = |f: fn(&Launch) -> f64| {
            let mut v: Vec<f64> = launches.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        notes.push(format!(
            "{kernel}: profiling events disagree with the host clock (median {:.4} ms by events, {:.4} ms on the host): times are host times, enqueue to completion",
            median(|l| l.event_s) * 1e3,
            median(|l| l.host_s) * 1e3
        ));
        Clock::Host
    };
    let mut times: Vec<f64> = launches
        .iter()
        .map(|l| match clock {
            Clock::Events => l.event_s,
            Clock::Host => l.host_s,
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let min_s = times.first().copied().unwrap_or(f64::NAN);
    let max_s = times.last().copied().unwrap_or(f64::NAN);
    let median_s = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    Timing {
        kernel: kernel.to_owned(),
        bytes,
        min_s,
        median_s,
        max_s,
        gb_per_s_best: bytes as f64 / min_s / 1e9,
        gb_per_s_median: bytes as f64 / median_s / 1e9,
        clock,
    }
}

/// Bandwidth of axpy and of the float4 copy, measured in one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Elements.
    pub n: u64,
    /// Timed repetitions (after one warm-up): fewer than asked when
    /// [`Runner::bandwidth_until`]'s `stop` ended them (a note says so).
    pub repeat: usize,
    /// The axpy kernel's timing (3 * n * 4 bytes per run).
    pub axpy: Timing,
    /// Which axpy kernel.
    pub kernel: KernelRan,
    /// float4s per work-item the fast kernel used (chosen at warm-up).
    pub per_item: Option<u32>,
    /// The float4 copy (2 * n * 4 bytes per run).
    pub copy: Timing,
    /// axpy best GB/s over copy best GB/s.
    pub ratio_to_copy: f64,
    /// What to know about the figures (e.g. host timing used).
    pub notes: Vec<String>,
}

impl Runner<'_> {
    pub(crate) fn copy(
        &self,
        queue: &CommandQueue,
        from: &Buffer<f32>,
        to: &Buffer<f32>,
        n4: u64,
    ) -> Result<Option<Event>, AxpyError> {
        // SAFETY: argument types match copy_float4; both buffers hold n4 float4s.
        unsafe {
            ExecuteKernel::new(&self.copy)
                .set_arg(from)
                .set_arg(to)
                .set_arg(&n4)
                .set_global_work_size(round_up(n4, LOCAL_SIZE as u64) as usize)
                .set_local_work_size(LOCAL_SIZE)
                .enqueue_nd_range(queue)
        }
        .map(Some)
        .map_err(cl3("clEnqueueNDRangeKernel"))
    }

    /// Picks the fast kernel's float4s per work-item: the fastest of 1, 2, 4, 8 over
    /// three launches each.
    pub(crate) fn tune(
        &self,
        queue: &CommandQueue,
        case: &AxpyCase,
        x: &Buffer<f32>,
        y: &Buffer<f32>,
    ) -> Result<u32, AxpyError> {
        let mut best = (f64::MAX, 1);
        for candidate in [1u32, 2, 4, 8] {
            let mut t = f64::MAX;
            for _ in 0..3 {
                let launch = timed(|| self.enqueue(queue, KernelRan::Fast, case, x, y, candidate))?;
                t = t.min(launch.host_s.min(if launch.event_s > 0.0 {
                    launch.event_s
                } else {
                    f64::MAX
                }));
            }
            if t < best.0 {
                best = (t, candidate);
            }
        }
        Ok(best.1)
    }

    /// Bandwidth on `device`: one warm-up (which also picks the fast kernel's
    /// float4s per work-item), then `repeat` timed runs of axpy and of the float4
    /// copy, interleaved.
    pub fn bandwidth(
        &self,
        device: &Device,
        n: u64,
        repeat: usize,
        choice: KernelChoice,
    ) -> Result<Bandwidth, AxpyError> {
        self.bandwidth_until(device, n, repeat, choice, &|| false)
    }

    /// [`Runner::bandwidth`], asking `stop` after each repetition: once it says yes
    /// the figures are those of the repetitions done (at least one), and
    /// [`Bandwidth::repeat`] counts them (what a command does on Ctrl-C).
    pub fn bandwidth_until(
        &self,
        device: &Device,
        n: u64,
        repeat: usize,
        choice: KernelChoice,
        stop: &dyn Fn() -> bool,
    ) -> Result<Bandwidth, AxpyError> {
        let case = AxpyCase::contiguous(n.max(4), 2.0);
        let kernel = Self::pick(&case, choice)?;
        let queue = self.queue(device)?;
        let mut x = buffer(self.context, case.n)?;
        let mut y = buffer(self.context, case.n)?;
        let mut c = buffer(self.context, case.n)?;
        write(&queue, &mut x, &test_data(case.n, 1))?;
        write(&queue, &mut y, &test_data(case.n, 2))?;
        write(&queue, &mut c, &test_data(case.n, 3))?;
        let per_item = if kernel == KernelRan::Fast {
            Some(self.tune(&queue, &case, &x, &y)?)
        } else {
            timed(|| self.enqueue(&queue, kernel, &case, &x, &y, 1))?;
            None
        };
        let n4 = case.n / 4;
        timed(|| self.copy(&queue, &x, &c, n4))?;
        let (mut axpy_t, mut copy_t) = (Vec::new(), Vec::new());
        let asked = repeat.max(1);
        for _ in 0..asked {
            axpy_t.push(timed(|| {
                self.enqueue(&queue, kernel, &case, &x, &y, per_item.unwrap_or(1))
            })?);
            copy_t.push(timed(|| self.copy(&queue, &x, &c, n4))?);
            if stop() {
                break;
            }
        }
        queue.finish().map_err(cl3("clFinish"))?;
        let mut notes = Vec::new();
        if axpy_t.len() < asked {
            notes.push(format!(
                "stopped after {} of {asked} timed repetitions: the figures are theirs",
                axpy_t.len()
            ));
        }
        let axpy = timing(kernel.name(), 3 * case.n * 4, &axpy_t, &mut notes);
        let copy = timing("copy_float4", 2 * n4 * 4 * 4, &copy_t, &mut notes);
        Ok(Bandwidth {
            n: case.n,
            repeat: axpy_t.len(),
            ratio_to_copy: axpy.gb_per_s_best / copy.gb_per_s_best,
            axpy,
            kernel,
            per_item,
            copy,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launches(pairs: &[(f64, f64)]) -> Vec<Launch> {
        pairs
            .iter()
            .map(|&(event_s, host_s)| Launch { event_s, host_s })
            .collect()
    }

    #[test]
    fn events_are_believed_only_when_the_host_clock_agrees() {
        // A GPU: 0.2 ms kernels, 30 us of launch overhead.
        assert!(events_agree(&launches(&[(2e-4, 2.3e-4); 5])));
        // Mesa rusticl: events read nothing.
        assert!(!events_agree(&launches(&[(1e-10, 3e-3); 5])));
        assert!(!events_agree(&launches(&[(0.0, 3e-3); 5])));
        // An event longer than the whole launch cannot be right.
        assert!(!events_agree(&launches(&[(9e-3, 3e-3); 5])));
        let mut notes = Vec::new();
        let t = timing(
            "axpy",
            3_000_000,
            &launches(&[(1e-10, 1e-3); 3]),
            &mut notes,
        );
        assert_eq!(t.clock, Clock::Host);
        assert!((t.gb_per_s_best - 3.0).abs() < 1e-9);
        assert_eq!(notes.len(), 1);
    }
}
