//! The loop against a fake backend and meter: guards, sampling, rounds, stops.

use super::*;
use std::cell::Cell;

/// Time as the fakes tell it: slowness advances it instead of sleeping, so what a
/// test asserts about time holds on a loaded machine (sleeps there overshoot 10x).
#[derive(Clone)]
struct VirtualClock {
    start: Instant,
    passed: std::rc::Rc<Cell<Duration>>,
}

impl VirtualClock {
    fn new() -> Self {
        VirtualClock {
            start: Instant::now(),
            passed: std::rc::Rc::new(Cell::new(Duration::ZERO)),
        }
    }

    fn advance(&self, by: Duration) {
        self.passed.set(self.passed.get() + by);
    }

    fn now(&self) -> Instant {
        self.start + self.passed.get()
    }
}

/// A backend that "allocates" by growing a fake RSS, fails at a chosen buffer,
/// and can be slow.
struct Fake {
    devices: usize,
    rss: std::rc::Rc<Cell<u64>>,
    rss_per_buffer: u64,
    fail_at: Option<u64>,
    delay: Duration,
    clock: VirtualClock,
    placed: Vec<usize>,
    held: u64,
    released: u64,
}

impl Backend for Fake {
    fn allocate(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)> {
        if Some(index) == self.fail_at {
            return Err((ClCode::OUT_OF_HOST_MEMORY, Call::CreateBuffer));
        }
        self.clock.advance(self.delay);
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
    maps_walks: Cell<u64>,
    /// What one walk of the mappings takes.
    walk_cost: Duration,
    /// What one reading of the two devices' memory takes.
    device_cost: Duration,
    device_reads: Cell<u64>,
    clock: VirtualClock,
    vsize: std::rc::Rc<Cell<u64>>,
}

impl Meter for FakeMeter {
    fn guard_reading(&self, _bytes: u64) -> GuardReading {
        self.rss_reads.set(self.rss_reads.get() + 1);
        GuardReading {
            held: self.rss.get(),
            vsize: self.vsize.get(),
            data: 0,
        }
    }

    fn guard_reading_in(&self, usage: &Usage, _bytes: u64) -> GuardReading {
        self.rss_reads.set(self.rss_reads.get() + 1);
        GuardReading {
            held: usage.process.rss_bytes,
            vsize: self.vsize.get(),
            data: 0,
        }
    }

    fn usage(&self) -> Usage {
        let mut usage = Usage::default();
        usage.process.rss_bytes = self.rss.get();
        usage
    }

    fn memory_maps(&self) -> u64 {
        self.maps_walks.set(self.maps_walks.get() + 1);
        self.clock.advance(self.walk_cost);
        7
    }

    fn accounting(&self, usage: &mut Usage) {
        usage.process.locked_bytes = Some(4096);
    }

    fn device_used(&mut self) -> Vec<Option<u64>> {
        self.device_reads.set(self.device_reads.get() + 1);
        self.clock.advance(self.device_cost);
        vec![Some(1), Some(2)]
    }

    fn now(&self) -> Instant {
        self.clock.now()
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
        sample_maps: MapsSampling::Budgeted,
        max_total: u64::MAX,
        max_rss: u64::MAX,
        max_vsize: u64::MAX,
        max_data: u64::MAX,
        max_seconds: 60.0,
        rss_per_byte: 1.0,
        pause: std::time::Duration::ZERO,
        release_pause: std::time::Duration::ZERO,
    }
}

fn fake(rss_per_buffer: u64) -> (Fake, FakeMeter) {
    let rss = std::rc::Rc::new(Cell::new(100 * MIB));
    let clock = VirtualClock::new();
    (
        Fake {
            devices: 2,
            rss: rss.clone(),
            rss_per_buffer,
            fail_at: None,
            delay: Duration::ZERO,
            clock: clock.clone(),
            placed: Vec::new(),
            held: 0,
            released: 0,
        },
        FakeMeter {
            rss,
            rss_reads: Cell::new(0),
            maps_walks: Cell::new(0),
            walk_cost: Duration::ZERO,
            device_cost: Duration::ZERO,
            device_reads: Cell::new(0),
            clock,
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
fn every_buffer_goes_round_robin_across_the_runs_between_checks() {
    // Three devices, an interval no multiple of three: each quiet run starts on a
    // device of its own, which must be where the one before left off.
    let (mut backend, mut meter) = fake(0);
    backend.devices = 3;
    let plan = LoopPlan {
        sample_every: 7,
        ..plan()
    };
    let out = allocation_loop(&plan, &mut backend, &mut meter, None);
    assert_eq!(out.buffers, 100);
    let expected: Vec<usize> = (0..100).map(|i| i % 3).collect();
    assert_eq!(backend.placed, expected);
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
fn learning_reads_are_left_to_the_samples_once_they_come_often_enough() {
    // Samples every 1000 buffers: the learning reads after the 1st, 2nd... 512th
    // buffer come before the first sample; from the 1024th on a sample read within
    // the last half of the way, and no guard reading is taken between samples.
    let (mut backend, mut meter) = fake(0);
    let plan = LoopPlan {
        target: 100_000,
        sample_every: 1000,
        ..plan()
    };
    let out = allocation_loop(&plan, &mut backend, &mut meter, None);
    assert_eq!(out.stop, StopReason::Completed);
    assert_eq!(out.cost.guard_readings, 10, "1, 2, 4... 512");
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
    // Each allocation takes 20 ms and the clock is read before each slow one: at
    // 0.2 s (10 made) the guard is not yet crossed, at 0.22 s (11) it is.
    assert_eq!(out.buffers, 11, "allocations under a 0.2 s guard");
}

fn walked(out: &LoopOutcome) -> Vec<bool> {
    out.samples
        .iter()
        .map(|s| s.host.memory_maps.is_some())
        .collect()
}

#[test]
fn costly_mapping_walks_are_left_out_of_fast_samples_but_never_the_first_or_last() {
    // Walks of 1 ms beside instant allocations: the free 0.1 ms go in the first
    // sample, after which 0.5% of the loop's time never pays for another; the 8th
    // sample (7) walks anyway, the last always.
    let (mut backend, mut meter) = fake(0);
    meter.walk_cost = Duration::from_millis(1);
    let out = allocation_loop(&plan(), &mut backend, &mut meter, None);
    let walked = walked(&out);
    assert_eq!(walked.len(), 11);
    for always in [0, 7, 10] {
        assert!(walked[always], "sample {always}: {walked:?}");
    }
    for skipped in [1, 2, 3, 4, 5, 6, 8, 9] {
        assert!(!walked[skipped], "sample {skipped}: {walked:?}");
    }
    assert_eq!(
        meter.maps_walks.get(),
        walked.iter().filter(|w| **w).count() as u64
    );
}

#[test]
fn a_costly_device_reading_goes_with_the_walks_and_a_few_samples_more() {
    // NVML's query of 1 ms beside free walks, 41 samples: its cost spends the budget
    // as a walk's would (walks at the 1st, 8th and last only); the devices are read
    // there and at the first 8, the 16th and the 32nd; the samples between leave
    // each device's figure out, never a stale one.
    let (mut backend, mut meter) = fake(0);
    meter.device_cost = Duration::from_millis(1);
    let plan = LoopPlan {
        target: 400,
        ..plan()
    };
    let out = allocation_loop(&plan, &mut backend, &mut meter, None);
    let walked = walked(&out);
    assert_eq!(walked.len(), 41);
    let walks: Vec<usize> = (0..41).filter(|&n| walked[n]).collect();
    assert_eq!(walks, [0, 7, 40]);
    let read: Vec<usize> = (0..41)
        .filter(|&n| out.samples[n].device_used_bytes == [Some(1), Some(2)])
        .collect();
    assert_eq!(read, [0, 1, 2, 3, 4, 5, 6, 7, 15, 31, 40]);
    for (nth, sample) in out.samples.iter().enumerate() {
        if !read.contains(&nth) {
            assert_eq!(sample.device_used_bytes, [None, None], "sample {nth}");
        }
    }
    // `status`'s and `meminfo`'s figures go with the devices: absent between.
    let accounted: Vec<usize> = (0..41)
        .filter(|&n| out.samples[n].host.locked_bytes.is_some())
        .collect();
    assert_eq!(accounted, read);
    assert_eq!(meter.device_reads.get(), read.len() as u64);
}

#[test]
fn maps_every_sample_walks_at_every_sample_whatever_it_costs() {
    let (mut backend, mut meter) = fake(0);
    meter.walk_cost = Duration::from_millis(1);
    let plan = LoopPlan {
        sample_maps: MapsSampling::EverySample,
        ..plan()
    };
    let out = allocation_loop(&plan, &mut backend, &mut meter, None);
    assert_eq!(walked(&out), vec![true; 11]);
    assert_eq!(meter.maps_walks.get(), 11);
    assert!(out.samples.iter().all(|s| s.host.locked_bytes.is_some()));
}

#[test]
fn a_slow_runtime_gets_the_mapping_count_at_every_sample() {
    // 10 buffers of 2 ms between samples: a 80 us walk is 0.4% of that, within the
    // 0.5% once the free 0.1 ms are spent (after 2 of the 21 samples).
    let (mut backend, mut meter) = fake(0);
    backend.delay = Duration::from_millis(2);
    meter.walk_cost = Duration::from_micros(80);
    let plan = LoopPlan {
        target: 200,
        ..plan()
    };
    let out = allocation_loop(&plan, &mut backend, &mut meter, None);
    assert_eq!(walked(&out), vec![true; 21]);
}

#[test]
fn the_budget_walks_free_then_by_share_and_at_powers_of_eight_whatever_the_cost() {
    let ms = Duration::from_millis;
    let budget = |spent| MapsBudget { spent };
    // Under the free 0.1 ms: any sample, however short the loop so far.
    assert!(budget(Duration::from_micros(50)).allows(ms(0), 2));
    assert!(!budget(Duration::from_micros(150)).allows(ms(0), 2));
    // Beyond it: 3 ms of walks need over 600 ms of loop (0.5%).
    assert!(!budget(ms(3)).allows(ms(590), 2));
    assert!(budget(ms(3)).allows(ms(610), 2));
    // The 1st, 8th, 64th, 512th (0, 7, 63, 511) walk over any budget; the 2nd,
    // 4th, 16th and 1024th (1, 3, 15, 1023) not.
    for nth in [0, 7, 63, 511] {
        assert!(budget(ms(1000)).allows(ms(1), nth), "sample {nth}");
    }
    for nth in [1, 3, 15, 1023] {
        assert!(!budget(ms(1000)).allows(ms(1), nth), "sample {nth}");
    }
}

#[test]
fn a_last_sample_taken_without_the_walk_is_taken_again_with_it() {
    // The walks' budget is spent before the last interval sample, which is the
    // loop's last: it is replaced by one with every figure, at the same count.
    let (mut backend, mut meter) = fake(0);
    meter.walk_cost = Duration::from_millis(3);
    let out = allocation_loop(&plan(), &mut backend, &mut meter, None);
    let at: Vec<u64> = out.samples.iter().map(|s| s.allocations).collect();
    assert_eq!(at, (0..=10).map(|i| i * 10).collect::<Vec<_>>());
    // The 1st and 8th (0, 7) and the last.
    let first_eighth_or_last = |i: usize| matches!(i, 0 | 7 | 10);
    assert_eq!(
        walked(&out),
        (0..11).map(first_eighth_or_last).collect::<Vec<_>>()
    );
}

#[test]
fn a_release_round_is_walked_at_its_peak_and_after_it() {
    // Rounds of 30 buffers, samples every 10, walks too dear for the budget: the
    // sample before each release (the round's peak, 20 live) and the one right
    // after it (0 live) have the count all the same.
    let (mut backend, mut meter) = fake(0);
    meter.walk_cost = Duration::from_millis(3);
    let plan = LoopPlan {
        release_every: Some(30),
        target: 90,
        ..plan()
    };
    let out = allocation_loop(&plan, &mut backend, &mut meter, None);
    let walked_at: Vec<u64> = out
        .samples
        .iter()
        .filter(|s| s.host.memory_maps.is_some())
        .map(|s| s.allocations)
        .collect();
    for round_end in [30, 60, 90] {
        assert!(walked_at.contains(&(round_end - 10)), "{walked_at:?}");
        assert!(walked_at.contains(&round_end), "{walked_at:?}");
    }
}
