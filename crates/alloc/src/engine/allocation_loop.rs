//! The allocation loop: one backend call per buffer, guards checked before each
//! allocation that could cross them, samples every N buffers. It knows nothing of
//! OpenCL: a [`Backend`] allocates, a [`Meter`] reads the host.

use clmulti_explain::{Call, GuardKind, Sample, StopReason};
use clmulti_probe::{ClCode, Usage, UsageReader};
use clmulti_scenario::Placement;
use std::time::{Duration, Instant};

/// What the loop needs from whatever allocates.
pub(crate) trait Backend {
    /// Allocates buffer `index` on `device`, then keeps or releases it.
    fn allocate(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)>;
    /// Number of devices.
    fn device_count(&self) -> usize;
    /// Releases every kept buffer (a round of `allocation.release_every`).
    fn release_live(&mut self);
}

/// What the guards read between samples (cheap: one `statm`, one `meminfo`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GuardReading {
    /// Host memory the run holds: its RSS, plus the system's Shmem grown since the
    /// loop started (memfds, an emulation layer's host mirror: memory the kernel
    /// accounts that RSS does not show).
    pub held: u64,
    /// Virtual size, bytes (what `RLIMIT_AS` bounds).
    pub vsize: u64,
    /// Data segment, bytes (what `RLIMIT_DATA` bounds).
    pub data: u64,
}

/// What the loop reads from the host.
pub(crate) trait Meter {
    /// What the guards watch.
    fn guard_reading(&self) -> GuardReading;
    /// Every reading (samples).
    fn usage(&self) -> Usage;
    /// Device memory in use per device, where a source exists.
    fn device_used(&mut self) -> Vec<Option<u64>>;
    /// A sample was taken (progress reporting).
    fn sampled(&mut self, _sample: &Sample) {}
}

/// The loop's bounds, resolved from the scenario and the machine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopPlan {
    /// Bytes per buffer.
    pub size: u64,
    /// Buffers to allocate (`u64::MAX`: until something stops the run).
    pub target: u64,
    /// Which device each buffer is for.
    pub placement: Placement,
    /// Release every kept buffer after each this many.
    pub release_every: Option<u64>,
    /// Sample every this many buffers.
    pub sample_every: u64,
    /// Stop before the total requested would pass this.
    pub max_total: u64,
    /// Stop before host RSS (with the Shmem the run grew) would pass this.
    pub max_rss: u64,
    /// Stop before the virtual size would pass this (`RLIMIT_AS`, less a tenth).
    pub max_vsize: u64,
    /// Stop before the data segment would pass this (`RLIMIT_DATA`, less a tenth).
    pub max_data: u64,
    /// Stop once the loop has run this long.
    pub max_seconds: f64,
    /// RSS assumed per requested byte until the run shows more (1; 2 with host
    /// pointers, whose host copy the engine or runtime holds too).
    pub rss_per_byte: f64,
}

/// Why a run must not start: its first buffer alone, beside `fixed_host_bytes` the
/// engine would hold for the run (a COPY_HOST_PTR source block) and the `rss_now`
/// the process already has, would pass a guard. Checked before the backend allocates
/// anything, and again by the loop.
pub(crate) fn refused_up_front(
    plan: &LoopPlan,
    now: GuardReading,
    fixed_host_bytes: u64,
) -> Option<StopReason> {
    let first = now.held as f64 + fixed_host_bytes as f64 + plan.size as f64 * plan.rss_per_byte;
    let first_vsize = now.vsize as f64 + fixed_host_bytes as f64 + plan.size as f64;
    let first_data = now.data as f64 + fixed_host_bytes as f64;
    if plan.size > plan.max_total {
        Some(StopReason::Guard {
            guard: GuardKind::MaxTotalBytes,
            value: plan.size as f64,
            limit: plan.max_total as f64,
        })
    } else if first > plan.max_rss as f64 {
        Some(StopReason::Guard {
            guard: GuardKind::MaxRss,
            value: first,
            limit: plan.max_rss as f64,
        })
    } else if first_vsize > plan.max_vsize as f64 {
        Some(StopReason::Guard {
            guard: GuardKind::AddressSpace,
            value: first_vsize,
            limit: plan.max_vsize as f64,
        })
    } else if first_data > plan.max_data as f64 {
        Some(StopReason::Guard {
            guard: GuardKind::DataSegment,
            value: first_data,
            limit: plan.max_data as f64,
        })
    } else {
        None
    }
}

#[derive(Debug, Default)]
pub(crate) struct LoopOutcome {
    pub buffers: u64,
    /// Buffers held now (fewer than `buffers` once a round was released).
    pub live: u64,
    pub bytes: u64,
    pub elapsed_seconds: f64,
    pub sampling_seconds: f64,
    pub samples: Vec<Sample>,
    pub stop: StopReason,
}

/// Estimates RSS between readings, so the guard reads RSS only when the next buffer
/// could cross it: an estimate assumes every requested byte since the last reading
/// costs as much RSS as the most any byte of this run did (at least `rss_per_byte`).
/// Readings after the 1st, 2nd, 4th, 8th... buffer learn that cost early.
struct RssGuard {
    limit: u64,
    reading: u64,
    bytes_at_reading: u64,
    per_byte: f64,
    next_learning_read: u64,
}

impl RssGuard {
    fn estimate(&self, bytes_after: u64) -> f64 {
        self.reading as f64 + (bytes_after - self.bytes_at_reading) as f64 * self.per_byte
    }

    /// Whether to read RSS before allocating buffer `index` that brings the total to
    /// `bytes_after`.
    fn wants_reading(&mut self, index: u64, bytes_after: u64) -> bool {
        if index == self.next_learning_read {
            self.next_learning_read = (index * 2).max(1);
            return index > 0;
        }
        self.estimate(bytes_after) > self.limit as f64
    }

    fn observe(&mut self, rss: u64, bytes: u64) {
        let grown = bytes - self.bytes_at_reading;
        if grown > 0 {
            let per_byte = rss.saturating_sub(self.reading) as f64 / grown as f64;
            self.per_byte = self.per_byte.max(per_byte);
        }
        self.reading = rss;
        self.bytes_at_reading = bytes;
    }
}

/// Reads the clock every `every` allocations: every one while allocations are slow
/// (over 1 ms apart), up to every 64th while they are fast (`Instant::now` costs a
/// share of a lazy runtime's ~70 ns clCreateBuffer).
struct Clock {
    start: Instant,
    last: Duration,
    every: u64,
    countdown: u64,
}

impl Clock {
    fn new() -> Self {
        Clock {
            start: Instant::now(),
            last: Duration::ZERO,
            every: 1,
            countdown: 1,
        }
    }

    /// Seconds since the start, when it is time to look; `None` otherwise.
    fn tick(&mut self) -> Option<f64> {
        self.countdown -= 1;
        if self.countdown > 0 {
            return None;
        }
        let now = self.start.elapsed();
        let gap = now - self.last;
        self.last = now;
        self.every = if gap > Duration::from_millis(1) {
            1
        } else {
            (self.every * 2).min(64)
        };
        self.countdown = self.every;
        Some(now.as_secs_f64())
    }
}

/// Runs the loop; `interrupt`, when it turns non-zero (a signal number), stops it
/// before the next buffer.
pub(crate) fn allocation_loop(
    plan: &LoopPlan,
    backend: &mut impl Backend,
    meter: &mut impl Meter,
    interrupt: Option<&std::sync::atomic::AtomicI32>,
) -> LoopOutcome {
    let devices = backend.device_count().max(1);
    let mut clock = Clock::new();
    let mut out = LoopOutcome::default();
    // Samples are timed apart so the allocation rate excludes the instrumentation.
    let sample = |out: &mut LoopOutcome, meter: &mut dyn Meter, start: Instant| {
        let taken = Instant::now();
        let usage = meter.usage();
        let sample = Sample {
            allocations: out.buffers,
            live: (out.live != out.buffers).then_some(out.live),
            bytes_requested: out.bytes,
            elapsed_seconds: (taken - start).as_secs_f64(),
            host: usage.process,
            system: usage.system,
            drm: usage.drm,
            device_used_bytes: meter.device_used(),
        };
        meter.sampled(&sample);
        out.samples.push(sample);
        out.sampling_seconds += taken.elapsed().as_secs_f64();
    };
    sample(&mut out, meter, clock.start);
    let baseline = meter.guard_reading();
    let mut rss = RssGuard {
        limit: plan.max_rss,
        reading: baseline.held,
        bytes_at_reading: 0,
        per_byte: plan.rss_per_byte,
        next_learning_read: 0,
    };
    // What a buffer adds to the mappings is learned from the readings.
    let mut vsize = RssGuard {
        limit: plan.max_vsize,
        reading: baseline.vsize,
        bytes_at_reading: 0,
        per_byte: 0.0,
        next_learning_read: 0,
    };
    let mut data = RssGuard {
        limit: plan.max_data,
        reading: baseline.data,
        ..vsize
    };
    let guard = |guard, value: f64, limit: u64| StopReason::Guard {
        guard,
        value,
        limit: limit as f64,
    };
    // The backend's own host memory is in the baseline by now.
    if let Some(stop) = refused_up_front(plan, baseline, 0) {
        out.stop = stop;
    }
    let mut next_sample = plan.sample_every;

    while out.buffers < plan.target && out.stop == StopReason::Completed {
        if let Some(signal) = interrupt
            .map(|i| i.load(std::sync::atomic::Ordering::Relaxed))
            .filter(|s| *s != 0)
        {
            out.stop = StopReason::interrupted(signal);
            break;
        }
        let index = out.buffers;
        let next_total = out.bytes.saturating_add(plan.size);
        if next_total > plan.max_total {
            out.stop = guard(GuardKind::MaxTotalBytes, next_total as f64, plan.max_total);
            break;
        }
        if let Some(seconds) = clock.tick() {
            if seconds > plan.max_seconds {
                out.stop = StopReason::Guard {
                    guard: GuardKind::MaxSeconds,
                    value: seconds,
                    limit: plan.max_seconds,
                };
                break;
            }
        }
        // Both guards learn from one reading, taken when either wants it.
        let wants = [
            rss.wants_reading(index, next_total),
            vsize.wants_reading(index, next_total),
            data.wants_reading(index, next_total),
        ];
        if wants.contains(&true) {
            let reading = Instant::now();
            let now = meter.guard_reading();
            rss.observe(now.held, out.bytes);
            vsize.observe(now.vsize, out.bytes);
            data.observe(now.data, out.bytes);
            out.sampling_seconds += reading.elapsed().as_secs_f64();
            let estimate = rss.estimate(next_total);
            if estimate > rss.limit as f64 {
                out.stop = guard(GuardKind::MaxRss, estimate, rss.limit);
                break;
            }
            let estimate = vsize.estimate(next_total);
            if estimate > vsize.limit as f64 {
                out.stop = guard(GuardKind::AddressSpace, estimate, vsize.limit);
                break;
            }
            let estimate = data.estimate(next_total);
            if estimate > data.limit as f64 {
                out.stop = guard(GuardKind::DataSegment, estimate, data.limit);
                break;
            }
        }
        let device = plan.placement.device(index, devices);
        if let Err((code, call)) = backend.allocate(index, device) {
            out.stop = StopReason::Failed {
                error: code.into(),
                call,
                index,
            };
            break;
        }
        out.buffers += 1;
        out.live += 1;
        out.bytes = next_total;
        if plan.release_every == Some(out.live) {
            backend.release_live();
            out.live = 0;
            sample(&mut out, meter, clock.start);
        }
        if out.buffers == next_sample {
            next_sample += plan.sample_every;
            sample(&mut out, meter, clock.start);
            let latest = meter.guard_reading();
            rss.observe(latest.held, out.bytes);
            vsize.observe(latest.vsize, out.bytes);
            data.observe(latest.data, out.bytes);
        }
    }
    out.elapsed_seconds = clock.start.elapsed().as_secs_f64();
    if out.samples.last().map(|s| s.allocations) != Some(out.buffers) {
        sample(&mut out, meter, clock.start);
    }
    out
}

/// The real host, through a [`UsageReader`] opened before the loop.
pub(crate) struct HostMeter<'a, 'o> {
    pub usage: &'a UsageReader,
    pub devices: &'a mut super::device_memory::DeviceMemory,
    pub on_sample: Option<&'a mut (dyn super::Observer + 'o)>,
    /// The system's Shmem before the loop, bytes.
    pub shmem_start: u64,
}

impl Meter for HostMeter<'_, '_> {
    fn guard_reading(&self) -> GuardReading {
        let statm = self.usage.statm();
        let shmem = self.usage.system().map_or(0, |s| s.shmem_bytes);
        GuardReading {
            held: statm.rss_bytes + shmem.saturating_sub(self.shmem_start),
            vsize: statm.virtual_bytes,
            data: statm.data_bytes,
        }
    }

    fn usage(&self) -> Usage {
        self.usage.read()
    }

    fn device_used(&mut self) -> Vec<Option<u64>> {
        self.devices.read()
    }

    fn sampled(&mut self, sample: &Sample) {
        if let Some(observer) = self.on_sample.as_deref_mut() {
            observer.sampled(sample);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A backend that "allocates" by growing a fake RSS, fails at a chosen buffer,
    /// and can be slow.
    struct Fake {
        devices: usize,
        rss: std::rc::Rc<Cell<u64>>,
        rss_per_buffer: u64,
        fail_at: Option<u64>,
        delay: Duration,
        placed: Vec<usize>,
        held: u64,
        released: u64,
    }

    impl Backend for Fake {
        fn allocate(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)> {
            if Some(index) == self.fail_at {
                return Err((ClCode::OUT_OF_HOST_MEMORY, Call::CreateBuffer));
            }
            if !self.delay.is_zero() {
                std::thread::sleep(self.delay);
            }
            self.rss.set(self.rss.get() + self.rss_per_buffer);
            self.placed.push(device);
            self.held += 1;
            Ok(())
        }

        fn device_count(&self) -> usize {
            self.devices
        }

        fn release_live(&mut self) {
            self.rss
                .set(self.rss.get() - self.rss_per_buffer * self.held);
            self.released += self.held;
            self.held = 0;
        }
    }

    struct FakeMeter {
        rss: std::rc::Rc<Cell<u64>>,
        rss_reads: Cell<u64>,
        vsize: std::rc::Rc<Cell<u64>>,
    }

    impl Meter for FakeMeter {
        fn guard_reading(&self) -> GuardReading {
            self.rss_reads.set(self.rss_reads.get() + 1);
            GuardReading {
                held: self.rss.get(),
                vsize: self.vsize.get(),
                data: 0,
            }
        }

        fn usage(&self) -> Usage {
            let mut usage = Usage::default();
            usage.process.rss_bytes = self.rss.get();
            usage
        }

        fn device_used(&mut self) -> Vec<Option<u64>> {
            Vec::new()
        }
    }

    const MIB: u64 = 1 << 20;

    fn plan() -> LoopPlan {
        LoopPlan {
            size: MIB,
            target: 100,
            placement: Placement::RoundRobin,
            release_every: None,
            sample_every: 10,
            max_total: u64::MAX,
            max_rss: u64::MAX,
            max_vsize: u64::MAX,
            max_data: u64::MAX,
            max_seconds: 60.0,
            rss_per_byte: 1.0,
        }
    }

    fn fake(rss_per_buffer: u64) -> (Fake, FakeMeter) {
        let rss = std::rc::Rc::new(Cell::new(100 * MIB));
        (
            Fake {
                devices: 2,
                rss: rss.clone(),
                rss_per_buffer,
                fail_at: None,
                delay: Duration::ZERO,
                placed: Vec::new(),
                held: 0,
                released: 0,
            },
            FakeMeter {
                rss,
                rss_reads: Cell::new(0),
                vsize: std::rc::Rc::new(Cell::new(0)),
            },
        )
    }

    #[test]
    fn completes_with_samples_at_the_interval_and_round_robin_placement() {
        let (mut backend, mut meter) = fake(0);
        let out = allocation_loop(&plan(), &mut backend, &mut meter, None);
        assert_eq!(out.stop, StopReason::Completed);
        assert_eq!(out.buffers, 100);
        assert_eq!(out.bytes, 100 * MIB);
        let at: Vec<u64> = out.samples.iter().map(|s| s.allocations).collect();
        assert_eq!(at, (0..=10).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(&backend.placed[..4], &[0, 1, 0, 1]);
    }

    #[test]
    fn release_every_releases_in_rounds_and_samples_what_is_held() {
        let (mut backend, mut meter) = fake(MIB);
        let plan = LoopPlan {
            release_every: Some(30),
            ..plan()
        };
        let out = allocation_loop(&plan, &mut backend, &mut meter, None);
        assert_eq!(out.stop, StopReason::Completed);
        assert_eq!((out.buffers, out.live, backend.released), (100, 10, 90));
        let after_first_round = out
            .samples
            .iter()
            .find(|s| s.allocations == 30 && s.live == Some(0))
            .expect("a sample right after the first release");
        assert_eq!(after_first_round.host.rss_bytes, 100 * MIB);
        // Held buffers, not created ones, are what the readings follow.
        assert_eq!(out.samples.last().unwrap().live(), 10);
    }

    #[test]
    fn a_failure_stops_the_run_and_is_sampled() {
        let (mut backend, mut meter) = fake(0);
        backend.fail_at = Some(37);
        let out = allocation_loop(&plan(), &mut backend, &mut meter, None);
        assert_eq!(out.buffers, 37);
        match &out.stop {
            StopReason::Failed { error, call, index } => {
                assert_eq!(error.code, -6);
                assert_eq!(*call, Call::CreateBuffer);
                assert_eq!(*index, 37);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(out.samples.last().unwrap().allocations, 37);
    }

    #[test]
    fn the_rss_guard_stops_before_crossing_and_reads_rss_only_near_it() {
        // 4 MiB of RSS per 1 MiB buffer (a runtime with copies), guard at 100 + 200 MiB.
        let (mut backend, mut meter) = fake(4 * MIB);
        let plan = LoopPlan {
            target: 1000,
            max_rss: 300 * MIB,
            sample_every: 1000,
            ..plan()
        };
        let out = allocation_loop(&plan, &mut backend, &mut meter, None);
        assert!(
            matches!(
                out.stop,
                StopReason::Guard {
                    guard: GuardKind::MaxRss,
                    ..
                }
            ),
            "{:?}",
            out.stop
        );
        let peak = meter.rss.get();
        assert!(
            peak <= 300 * MIB,
            "RSS {} MiB passed the 300 MiB guard",
            peak / MIB
        );
        assert!(
            peak >= 290 * MIB,
            "stopped far too early: {} MiB",
            peak / MIB
        );
        assert!(
            meter.rss_reads.get() < 40,
            "{} RSS reads",
            meter.rss_reads.get()
        );
    }

    #[test]
    fn lazy_runs_far_from_the_guard_read_rss_rarely() {
        let (mut backend, mut meter) = fake(0);
        let plan = LoopPlan {
            target: 10_000,
            max_rss: 1100 * MIB,
            sample_every: 100_000,
            ..plan()
        };
        let out = allocation_loop(&plan, &mut backend, &mut meter, None);
        assert_eq!(out.stop, StopReason::Completed);
        // log2(10000) learning reads, and one each time the estimate meets the guard.
        assert!(
            meter.rss_reads.get() < 40,
            "{} RSS reads",
            meter.rss_reads.get()
        );
    }

    #[test]
    fn one_buffer_larger_than_a_guard_is_refused_up_front() {
        let (mut backend, mut meter) = fake(MIB);
        let plan = LoopPlan {
            size: 4 << 30,
            max_rss: 1 << 30,
            ..plan()
        };
        let out = allocation_loop(&plan, &mut backend, &mut meter, None);
        assert_eq!(out.buffers, 0);
        assert!(backend.placed.is_empty());
        assert!(matches!(
            out.stop,
            StopReason::Guard {
                guard: GuardKind::MaxRss,
                ..
            }
        ));
        let plan = LoopPlan {
            max_total: MIB - 1,
            ..self::plan()
        };
        let out = allocation_loop(&plan, &mut backend, &mut meter, None);
        assert!(matches!(
            out.stop,
            StopReason::Guard {
                guard: GuardKind::MaxTotalBytes,
                ..
            }
        ));
        assert!(backend.placed.is_empty());
    }

    #[test]
    fn a_copy_source_block_counts_before_the_backend_exists() {
        // 600 MiB buffers under a 1 GiB guard: the first fits alone, not beside the
        // COPY_HOST_PTR source block the backend would allocate first.
        let plan = LoopPlan {
            size: 600 * MIB,
            max_rss: 1 << 30,
            ..plan()
        };
        let now = GuardReading {
            held: 100 * MIB,
            vsize: 0,
            data: 0,
        };
        assert_eq!(refused_up_front(&plan, now, 0), None);
        match refused_up_front(&plan, now, 600 * MIB) {
            Some(StopReason::Guard {
                guard: GuardKind::MaxRss,
                value,
                ..
            }) => assert_eq!(value, (1300 * MIB) as f64),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_total_guard_is_exact() {
        let (mut backend, mut meter) = fake(0);
        let plan = LoopPlan {
            max_total: 10 * MIB,
            ..plan()
        };
        let out = allocation_loop(&plan, &mut backend, &mut meter, None);
        assert_eq!(out.buffers, 10);
    }

    #[test]
    fn the_time_guard_holds_with_slow_allocations() {
        let (mut backend, mut meter) = fake(0);
        backend.delay = Duration::from_millis(20);
        let plan = LoopPlan {
            target: u64::MAX,
            max_seconds: 0.2,
            ..plan()
        };
        let out = allocation_loop(&plan, &mut backend, &mut meter, None);
        assert!(matches!(
            out.stop,
            StopReason::Guard {
                guard: GuardKind::MaxSeconds,
                ..
            }
        ));
        // Each allocation takes at least 20 ms: at most 10 fit in 0.2 s, and the
        // clock is read before each slow one, so at most one more starts.
        assert!(
            out.buffers <= 11,
            "{} allocations under a 0.2 s guard",
            out.buffers
        );
    }
}
