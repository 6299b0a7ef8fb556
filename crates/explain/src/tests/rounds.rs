//! Memory kept after release, in rounds: what each round adds tells a cache from a
//! leak, the C library's freed heap from what live allocations and mappings hold.

use crate::report::{Kept, RoundReadings};
use crate::verdict::{Change, ExperimentOutcome, Knob};
use crate::Resource;

fn rounds(resource: Resource, before: f64, after: &[f64], tolerance: f64) -> RoundReadings {
    RoundReadings {
        resource,
        before,
        after_rounds: after.to_vec(),
        tolerance,
    }
}

#[test]
fn rounds_tell_a_swinging_cache_from_a_small_leak_by_what_each_round_adds() {
    const MIB: f64 = 1048576.0;
    // The allocator's mood: up and down by hundreds of MiB, no trend.
    let swings = rounds(
        Resource::HostRss,
        100.0 * MIB,
        &[100.5, 600.0, 115.0, 604.0, 116.0, 600.0].map(|m| m * MIB),
        MIB,
    );
    assert_eq!(swings.kept(), Kept::Reused);
    // 32 KiB a buffer, 300 buffers a round: 9.4 MiB a round, small against the
    // 500 MiB the first round kept.
    let leak: Vec<f64> = (0..6).map(|i| (600.0 + 9.4 * i as f64) * MIB).collect();
    let leak = rounds(
        Resource::HostRss,
        100.0 * MIB,
        &leak,
        10.0 * MIB * 0.02 + MIB,
    );
    assert_eq!(leak.kept(), Kept::Leak);
    // Filling up: each round half of the one before.
    let filling = rounds(
        Resource::HostRss,
        0.0,
        &[100.0, 150.0, 175.0, 187.5, 193.75, 196.9].map(|m| m * MIB),
        MIB,
    );
    assert_eq!(filling.kept(), Kept::Settling);
    // Flat after the first: a cache.
    let cache = rounds(Resource::HostRss, 0.0, &[300.0; 6].map(|m| m * MIB), MIB);
    assert_eq!(cache.kept(), Kept::Reused);
}

#[test]
fn freed_heap_the_c_library_keeps_is_named_as_such() {
    const MIB: f64 = 1048576.0;
    let round = crate::report::SecondRound {
        experiment: crate::verdict::Experiment {
            change: Change {
                knob: Knob::ReleaseEvery,
                from: 0,
                to: 300,
            },
            asked: 1800,
            predicted_count: None,
            before_count: 300,
            observed_count: 1800,
            stop: "completed".into(),
            observed_seconds: None,
            met: None,
            failing_errno: None,
            outcome: ExperimentOutcome::MovedOtherwise,
        },
        readings: vec![
            rounds(Resource::HostRss, 0.0, &[300.0 * MIB; 6], MIB),
            rounds(Resource::HeapInUse, 0.0, &[0.2 * MIB; 6], MIB),
        ],
        control: None,
    };
    let words = crate::release::rounds_words(&round);
    // Who holds the RSS that stays, measured: little of it the C library's.
    assert!(
        words.contains("the C library's live allocations hold 204.80 KiB, it keeps 0 B of freed heap (resident or not), and at least 299.80 MiB is outside its heap"),
        "{words}"
    );
    let claims = crate::release::kept_claims(&round);
    // Flat after the first round: reused, or a leak that stopped after it.
    assert!(
        claims[0].leaves("reused") && claims[0].leaves("stopped"),
        "{:?}",
        claims[0].sentence()
    );
    assert!(!claims[0].leaves("filling"), "{}", claims[0].sentence());
    // A heap that grows the same every round, under a megabyte: a leak of live
    // allocations, told by the C library's exact count.
    let leak: Vec<f64> = (0..6).map(|i| (1.0 + 0.85 * i as f64) * MIB).collect();
    let rss: Vec<f64> = (0..6).map(|i| (20.0 + 1.3 * i as f64) * MIB).collect();
    let round = crate::report::SecondRound {
        readings: vec![
            rounds(Resource::HostRss, 0.0, &rss, MIB),
            rounds(Resource::HeapInUse, 0.0, &leak, 256.0 * 1024.0),
            rounds(Resource::HeapFree, 0.0, &[5.0 * MIB; 6], MIB),
        ],
        ..round
    };
    let claims = crate::release::kept_claims(&round);
    let heap = claims
        .iter()
        .find(|c| c.subject.contains("C heap in use"))
        .unwrap();
    assert!(
        heap.leaves("leak") && !heap.leaves("reused"),
        "{}",
        heap.sentence()
    );
    // The RSS grows with it, not with the C library's freed heap (flat here).
    let rss = claims
        .iter()
        .find(|c| c.subject.contains("host RSS"))
        .unwrap();
    assert!(!rss.leaves("freed-heap"), "{}", rss.sentence());
}
