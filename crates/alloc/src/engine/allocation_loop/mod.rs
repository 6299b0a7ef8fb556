//! The allocation loop: one backend call per buffer, guards checked before each
//! allocation that could cross them, samples every N buffers. It knows nothing of
//! OpenCL: a [`Backend`] allocates, a [`Meter`] reads the host.

mod kernel;
mod quiet;
mod sample;

use clmulti_explain::{Call, GuardKind, Sample, StopReason};
use clmulti_probe::{ClCode, Usage, UsageReader};
use clmulti_scenario::{MapsSampling, Placement};
pub(crate) use kernel::KernelTrend;
pub(crate) use quiet::{allocate_each, Run, RunStop};
use quiet::{allocate_quietly, quiet_buffers};
use sample::{complete_last_sample, pause, take_sample};
use std::time::{Duration, Instant};

/// What the loop needs from whatever allocates.
pub(crate) trait Backend {
    /// Allocates buffer `index` on `device`, then keeps or releases it.
    fn allocate(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)>;
    /// Allocates a run of buffers that need no check between them (the loop's hot
    /// path): how many it allocated, and why it stopped before the last. A backend
    /// whose calls cost less than a few hundred nanoseconds keeps this loop as lean
    /// as a C loop's; the default calls [`allocate`](Self::allocate) for each.
    fn allocate_run(&mut self, run: &Run<'_>) -> (u64, Option<RunStop>)
    where
        Self: Sized,
    {
        quiet::allocate_each(self, run)
    }
    /// Number of devices.
    fn device_count(&self) -> usize;
    /// Releases every kept buffer (a round of `allocation.release_every`).
    fn release_live(&mut self);
}

/// What the guards read between samples (cheap: one `statm`, one `meminfo`, the
/// cgroup's kernel memory where it reports it).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GuardReading {
    /// Host memory the run holds: its RSS, plus the system's Shmem and its cgroup's
    /// kernel memory grown since the loop started (memfds, an emulation layer's host
    /// mirror, page tables and kernel objects: memory the kernel accounts that RSS
    /// does not show).
    pub held: u64,
    /// Virtual size, bytes (what `RLIMIT_AS` bounds).
    pub vsize: u64,
    /// Data segment, bytes (what `RLIMIT_DATA` bounds).
    pub data: u64,
}

/// What the loop reads from the host.
pub(crate) trait Meter {
    /// What the guards watch, with `bytes` requested so far.
    fn guard_reading(&self, bytes: u64) -> GuardReading;
    /// What the guards watch, as a sample's reading has it.
    fn guard_reading_in(&self, usage: &Usage, bytes: u64) -> GuardReading;
    /// Every reading but the mapping count, the C library's heap and the counts
    /// (samples).
    fn usage(&self) -> Usage;
    /// The mapping count, walked now.
    fn memory_maps(&self) -> u64;
    /// `status`'s and `meminfo`'s figures (locked memory, the data segment,
    /// `MemAvailable`), read now into `usage`: at the samples that read the devices'
    /// memory (the kernel prints 1.5 KiB for each file: 14 us of a 16 us reading on
    /// a 2-core VM; the others take `statm`, `sysinfo` and the task count).
    fn accounting(&self, _usage: &mut Usage) {}
    /// The C library's heap, read now into `usage`: at the samples that walk the
    /// mappings (`mallinfo2` walks every arena: 3 to 6 us a sample on a 16-core
    /// node with PoCL's threads, a tenth of a sample's readings).
    fn heap(&self, _usage: &mut Usage) {}
    /// The emulated driver's and the tracer's counts, read now into `usage`: only
    /// their first and last readings are compared, so only the samples that always
    /// walk the mappings (the first, the last, either side of a release) read them.
    fn counts(&self, _usage: &mut Usage) {}
    /// Device memory in use per device, where a source exists.
    fn device_used(&mut self) -> Vec<Option<u64>>;
    /// A sample was taken (progress reporting).
    fn sampled(&mut self, _sample: &Sample) {}
    /// The clock the time guard, the samples and the walks' budget read. A test's
    /// meter keeps a virtual one, so a loaded machine cannot change what it asserts.
    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }
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
    /// Which samples walk the mappings.
    pub sample_maps: MapsSampling,
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
    /// Waited after each buffer (`allocation.pause_us`).
    pub pause: std::time::Duration,
    /// Waited after each release of every live buffer (`allocation.release_pause_us`).
    pub release_pause: std::time::Duration,
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
    /// The parts of `sampling_seconds`.
    pub cost: clmulti_explain::SamplingCost,
    pub samples: Vec<Sample>,
    pub stop: StopReason,
    /// Whether the latest sample read every figure (the mappings and the counts).
    pub last_sample_whole: bool,
}

/// Estimates RSS between readings, so the guard reads RSS only when the next buffer
/// could cross it: an estimate assumes every requested byte since the last reading
/// costs as much RSS as the most any byte of this run did (at least `rss_per_byte`).
/// Readings after the 1st, 2nd, 4th, 8th... buffer learn that cost early, unless a
/// reading (a sample's) came after the first half of the way.
struct RssGuard {
    limit: u64,
    reading: u64,
    bytes_at_reading: u64,
    per_byte: f64,
    next_learning_read: u64,
    /// The largest total whose estimate stays within the limit: what each buffer
    /// compares with, in integers (the estimate in floating point cost ~15 ns of a
    /// ~100 ns lazy clCreateBuffer, three guards a buffer).
    read_past: u64,
}

impl RssGuard {
    fn new(limit: u64, reading: u64, per_byte: f64) -> Self {
        let mut guard = RssGuard {
            limit,
            reading,
            bytes_at_reading: 0,
            per_byte,
            next_learning_read: 0,
            read_past: 0,
        };
        guard.read_past = guard.crossing();
        guard
    }

    fn estimate(&self, bytes_after: u64) -> f64 {
        self.reading as f64 + (bytes_after - self.bytes_at_reading) as f64 * self.per_byte
    }

    /// The largest total whose estimate stays within the limit (rounded down: a
    /// reading a little early costs nothing).
    fn crossing(&self) -> u64 {
        let room = self.limit as f64 - self.reading as f64;
        if room < 0.0 {
            return self.bytes_at_reading;
        }
        if self.per_byte <= 0.0 {
            return u64::MAX;
        }
        // `as` saturates: a room no total reaches is u64::MAX.
        self.bytes_at_reading
            .saturating_add((room / self.per_byte).floor() as u64)
    }

    /// Whether to read RSS before allocating buffer `index` that brings the total to
    /// `bytes_after`.
    fn wants_reading(&mut self, index: u64, bytes_after: u64) -> bool {
        if index == self.next_learning_read {
            self.next_learning_read = (index * 2).max(1);
            // A reading within the last half of the way (a sample's) has learned it.
            return index > 0 && self.bytes_at_reading.saturating_mul(2) < bytes_after;
        }
        bytes_after > self.read_past
    }

    fn observe(&mut self, rss: u64, bytes: u64) {
        let grown = bytes - self.bytes_at_reading;
        if grown > 0 {
            let per_byte = rss.saturating_sub(self.reading) as f64 / grown as f64;
            self.per_byte = self.per_byte.max(per_byte);
        }
        self.reading = rss;
        self.bytes_at_reading = bytes;
        self.read_past = self.crossing();
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
    fn new(start: Instant) -> Self {
        Clock {
            start,
            last: Duration::ZERO,
            every: 1,
            countdown: 1,
        }
    }

    /// `buffers` allocations that look at no clock: fewer than the countdown left.
    #[inline]
    fn skip(&mut self, buffers: u64) {
        self.countdown -= buffers;
    }

    /// Seconds since the start, when it is time to look; `None` otherwise.
    #[inline]
    fn tick(&mut self, now: impl FnOnce() -> Instant) -> Option<f64> {
        self.countdown -= 1;
        if self.countdown > 0 {
            return None;
        }
        let now = now() - self.start;
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
// long: a hot loop: its checks run in order for each buffer (total, time, RSS, allocate, release round, sample); split, each buffer would cross calls the guards must see in order.
pub(crate) fn allocation_loop(
    plan: &LoopPlan,
    backend: &mut impl Backend,
    meter: &mut impl Meter,
    interrupt: Option<&std::sync::atomic::AtomicI32>,
) -> LoopOutcome {
    let devices = backend.device_count().max(1);
    let mut clock = Clock::new(meter.now());
    let mut out = LoopOutcome::default();
    let mut maps = MapsBudget::default();
    // Samples are timed apart so the allocation rate excludes the instrumentation.
    let mut sample = |out: &mut LoopOutcome, meter: &mut dyn Meter, start: Instant, walk: Walk| {
        take_sample(plan, &mut maps, out, meter, (start, walk))
    };
    sample(&mut out, meter, clock.start, Walk::Always);
    let baseline = meter.guard_reading(0);
    let mut rss = RssGuard::new(plan.max_rss, baseline.held, plan.rss_per_byte);
    // What a buffer adds to the mappings is learned from the readings.
    let mut vsize = RssGuard::new(plan.max_vsize, baseline.vsize, 0.0);
    let mut data = RssGuard::new(plan.max_data, baseline.data, 0.0);
    // The backend's own host memory is in the baseline by now.
    if let Some(stop) = refused_up_front(plan, baseline, 0) {
        out.stop = stop;
    }
    let mut next_sample = plan.sample_every;

    while out.buffers < plan.target && out.stop == StopReason::Completed {
        // Up to the next buffer any check would act on, only the calls.
        let quiet = quiet_buffers(plan, &out, next_sample, &clock, [&rss, &vsize, &data]);
        if quiet > 0 {
            clock.skip(quiet);
            if let Some(stop) = allocate_quietly(quiet, plan, devices, backend, &mut out, interrupt)
            {
                out.stop = stop;
            }
            continue;
        }
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
            out.stop = guard_stop(GuardKind::MaxTotalBytes, next_total as f64, plan.max_total);
            break;
        }
        if let Some(seconds) = clock.tick(|| meter.now()) {
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
        // `|`, not `||`: each guard counts its learning reads.
        let wants = rss.wants_reading(index, next_total)
            | vsize.wants_reading(index, next_total)
            | data.wants_reading(index, next_total);
        if wants {
            let reading = meter.now();
            let now = meter.guard_reading(out.bytes);
            rss.observe(now.held, out.bytes);
            vsize.observe(now.vsize, out.bytes);
            data.observe(now.data, out.bytes);
            let seconds = (meter.now() - reading).as_secs_f64();
            out.sampling_seconds += seconds;
            out.cost.guard_readings += 1;
            out.cost.guard_seconds += seconds;
            let estimate = rss.estimate(next_total);
            if estimate > rss.limit as f64 {
                out.stop = guard_stop(GuardKind::MaxRss, estimate, rss.limit);
                break;
            }
            let estimate = vsize.estimate(next_total);
            if estimate > vsize.limit as f64 {
                out.stop = guard_stop(GuardKind::AddressSpace, estimate, vsize.limit);
                break;
            }
            let estimate = data.estimate(next_total);
            if estimate > data.limit as f64 {
                out.stop = guard_stop(GuardKind::DataSegment, estimate, data.limit);
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
        pause(plan.pause);
        let released = plan.release_every == Some(out.live);
        if released {
            backend.release_live();
            out.live = 0;
            pause(plan.release_pause);
        }
        let due = out.buffers == next_sample;
        if due {
            next_sample += plan.sample_every;
        }
        // One sample for both reasons: right after a release, or at the interval.
        if released || due {
            // The round's peak too: the last sample before the next release.
            let before_release = plan
                .release_every
                .is_some_and(|r| out.live + plan.sample_every >= r);
            let walk = if released || before_release {
                Walk::Always
            } else {
                Walk::Budgeted
            };
            let latest = sample(&mut out, meter, clock.start, walk);
            rss.observe(latest.held, out.bytes);
            vsize.observe(latest.vsize, out.bytes);
            data.observe(latest.data, out.bytes);
        }
    }
    out.elapsed_seconds = (meter.now() - clock.start).as_secs_f64();
    complete_last_sample(plan, &mut maps, &mut out, meter, clock.start);
    out
}

/// A guard's stop at `value` past its `limit`.
#[inline]
fn guard_stop(guard: GuardKind, value: f64, limit: u64) -> StopReason {
    StopReason::Guard {
        guard,
        value,
        limit: limit as f64,
    }
}

/// Whether a sample walks the mappings (and, [`Walk::Always`], reads the counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// The first and last samples, and the ones either side of a release round.
    Always,
    /// The samples between: as [`MapsBudget`] allows.
    Budgeted,
}

/// Walking the mappings costs about 1 us per mapping (150-200 with a runtime
/// loaded), several times the rest of a reading, and a lazy runtime creates a
/// buffer in well under 1 us: walking at every sample of 100000 buffers took 18 ms
/// of PoCL's 66 ms loop (measured). Samples between the first and last walk them
/// while the walks so far have cost under [`MAPS_FREE`], or under [`MAPS_SHARE`] of
/// the loop's time, and at the 1st, 8th, 64th, 512th... sample whatever they cost
/// (so a long run's middle has counts); the others leave the count out (`None`),
/// never a stale one. A slow runtime (a GPU's, ~10 us a buffer) gets it at every
/// sample. (The schedule before, every power of two with 0.5 ms free and 1%, cost
/// 1.3 ms of a 100 000-buffer PoCL run on a 16-core node, a fifth of its sampling.)
/// The devices' memory is read at the same samples, and at the first 8 and the 16th,
/// 32nd, 64th... (a line per device needs 5 points), its cost in the same budget:
/// NVML's query took 0.7 ms on an H200 node and slowed the runtime's calls after it;
/// read at every 1000th buffer it held the engine at 0.96 of a plain loop's rate,
/// where no query between the first and last sample gave 1.00 (`clmulti bench`,
/// 281 rounds each, measured).
#[derive(Debug, Default)]
struct MapsBudget {
    spent: Duration,
}

/// What the walks may cost before they are counted against the loop's time (on a
/// 16-core node with two runtimes loaded, 260 mappings: a walk costs 75 to 120 us).
const MAPS_FREE: Duration = Duration::from_micros(100);
/// The share of the loop's time the walks may take beyond that.
const MAPS_SHARE: f64 = 0.005;

impl MapsBudget {
    /// Whether sample number `nth` (0 is the first) walks the mappings: the 1st,
    /// 8th, 64th, 512th... whatever the walks cost.
    fn allows(&self, elapsed: Duration, nth: usize) -> bool {
        let power_of_eight = (nth + 1).is_power_of_two() && (nth + 1).trailing_zeros() % 3 == 0;
        power_of_eight
            || self.spent < MAPS_FREE
            || self.spent.as_secs_f64() < MAPS_SHARE * elapsed.as_secs_f64()
    }
}

/// The real host, through a [`UsageReader`] opened before the loop.
pub(crate) struct HostMeter<'a, 'o> {
    pub usage: &'a UsageReader,
    pub devices: &'a mut super::device_memory::DeviceMemory,
    pub on_sample: Option<&'a mut (dyn super::Observer + 'o)>,
    /// The system's Shmem before the loop, bytes.
    pub shmem_start: u64,
    /// The kernel memory of the process's cgroup, where the cgroup reports it: what
    /// the run makes the kernel hold counts too.
    pub kernel: Option<KernelTrend>,
}

impl Meter for HostMeter<'_, '_> {
    fn guard_reading(&self, bytes: u64) -> GuardReading {
        let statm = self.usage.statm();
        let shmem = self.usage.shmem_bytes();
        let kernel = self.kernel.as_ref().map_or(0, |k| k.read(bytes));
        GuardReading {
            held: statm.rss_bytes + shmem.saturating_sub(self.shmem_start) + kernel,
            vsize: statm.virtual_bytes,
            data: statm.data_bytes,
        }
    }

    fn guard_reading_in(&self, usage: &Usage, bytes: u64) -> GuardReading {
        let shmem = usage.system.map_or(0, |s| s.shmem_bytes);
        let kernel = self.kernel.as_ref().map_or(0, |k| k.estimate(bytes));
        GuardReading {
            held: usage.process.rss_bytes + shmem.saturating_sub(self.shmem_start) + kernel,
            vsize: usage.process.virtual_bytes,
            // statm's data (with the stack), as between samples: one figure for the
            // guard's learning.
            data: usage.data_and_stack_bytes,
        }
    }

    fn usage(&self) -> Usage {
        self.usage.read_light()
    }

    fn accounting(&self, usage: &mut Usage) {
        self.usage.add_accounting(usage);
    }

    fn heap(&self, usage: &mut Usage) {
        self.usage.add_heap(usage);
    }

    fn memory_maps(&self) -> u64 {
        self.usage.memory_maps()
    }

    fn counts(&self, usage: &mut Usage) {
        self.usage.add_counts(usage);
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
mod tests;
