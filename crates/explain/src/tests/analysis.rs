//! One run's analysis: which resource is a candidate cause (proximity), what is
//! only a cost, the first limit ahead, the leak check by readings.

use super::text;
use crate::testing::{rerun_failing_at, run};
use crate::verdict::{CandidateTest, Cause};
use crate::{Report, Resource, StopReason};
use clmulti_scenario::{ContextMode, Rlimit, Strategy};

fn candidates(r: &Report) -> Vec<&Resource> {
    r.analysis.candidates.iter().map(|c| &c.resource).collect()
}

/// (case, report, the candidates expected)
fn proximity_cases() -> Vec<(&'static str, Report, Vec<Resource>)> {
    vec![
        (
            "a shared run at its descriptor limit",
            run(2, ContextMode::Shared)
                .fds(10.0, 1.0)
                .limit(Rlimit::NoFile, 1024, Some(4096))
                .failed_at(1014),
            vec![Resource::OpenFds],
        ),
        (
            // The counter fault leaking one fd a buffer under nofile 1100:
            // 1006 of 1100 at the failure, 94 descriptors (many buffers) short.
            "a counter fault at 91% of the descriptor limit",
            run(2, ContextMode::Shared)
                .fds(6.0, 1.0)
                .limit(Rlimit::NoFile, 1100, Some(4096))
                .failed_at(1000),
            vec![],
        ),
        (
            "a failure with nothing near a limit",
            rerun_failing_at(1000),
            vec![],
        ),
        (
            "virtual size within one buffer of RLIMIT_AS",
            run(2, ContextMode::Shared)
                .virtual_size(200.0 * 1048576.0, 1048576.0)
                .limit(Rlimit::AddressSpace, 3_000_000_000, None)
                .failed_at(2660),
            vec![Resource::VirtualSize],
        ),
        (
            "threads at RLIMIT_NPROC",
            run(2, ContextMode::Shared)
                .threads(4.0, 1.0)
                .limit(Rlimit::NProc, 1000, Some(1000))
                .failed_at(996),
            vec![Resource::Threads],
        ),
        (
            // Root is exempt from RLIMIT_NPROC: the same readings meet no limit.
            "threads as root, whom RLIMIT_NPROC does not bind",
            run(2, ContextMode::Shared)
                .threads(4.0, 1.0)
                .limit(Rlimit::NProc, 1000, Some(1000))
                .as_root()
                .failed_at(996),
            vec![],
        ),
    ]
}

#[test]
fn a_resource_is_a_candidate_only_within_one_buffer_of_its_limit_at_the_failing_count() {
    for (case, report, expected) in proximity_cases() {
        let expected: Vec<&Resource> = expected.iter().collect();
        assert_eq!(candidates(&report), expected, "{case}\n{}", text(&report));
        match (&report.analysis.cause, expected.is_empty()) {
            (Some(Cause::NotExplained { unmeasured }), true) => {
                assert!(!unmeasured.is_empty(), "{case}");
                assert!(text(&report).contains("not explained"), "{case}");
                assert!(!text(&report).contains("candidate"), "{case}");
            }
            (Some(Cause::Untested { resources }), false) => {
                assert_eq!(resources.iter().collect::<Vec<_>>(), expected, "{case}");
                assert!(text(&report).contains("a candidate cause"), "{case}");
                // Untested: never called the cause.
                assert!(!text(&report).contains("is the cause"), "{case}");
            }
            (other, _) => panic!("{case}: {other:?}"),
        }
        for c in &report.analysis.candidates {
            assert_eq!(c.test, CandidateTest::Pending, "{case}");
        }
        // The cause claim says what it rests on: no experiment ran, no call was traced.
        let t = text(&report);
        assert!(
            t.contains("inferred from the readings at the failure and the failing call]")
                && !t.contains("the experiments on"),
            "{case}\n{t}"
        );
    }
}

#[test]
fn a_growing_resource_far_from_its_limit_is_a_cost_never_a_cause() {
    let r = run(2, ContextMode::Shared)
        .fds(6.0, 1.0)
        .limit(Rlimit::NoFile, 1100, Some(4096))
        .failed_at(1000);
    let t = text(&r);
    assert!(t.contains("open fds +1 per buffer"), "{t}");
    assert!(!t.contains("RLIMIT_NOFILE (soft) ("), "{t}");
}

#[test]
fn completed_runs_name_the_first_limit_ahead_and_crashed_ones_no_cause() {
    let r = run(2, ContextMode::Shared)
        .fds(10.0, 0.5)
        .limit(Rlimit::NoFile, 1024, Some(4096))
        .completed(500);
    let ahead = r.analysis.first_limit.as_ref().expect("a limit ahead");
    assert_eq!(ahead.resource, Resource::OpenFds);
    assert_eq!(ahead.count, 2028);
    assert!(r.analysis.cause.is_none());
    assert!(r
        .headline()
        .contains("first limit ahead: RLIMIT_NOFILE (soft) at ~2028"));

    let crashed = run(2, ContextMode::Shared).crashed(300, 6);
    assert!(crashed.analysis.cause.is_none());
    assert!(crashed.analysis.candidates.is_empty());
    assert!(
        crashed.headline().starts_with("crashed: SIGABRT"),
        "{}",
        crashed.headline()
    );
    assert_eq!(crashed.stop, StopReason::crashed(6));
}

#[test]
fn memory_that_stays_after_release_fails_the_leak_check_though_every_call_succeeded() {
    let mut build = run(2, ContextMode::Shared).rss(84.0 * 1048576.0, 1048576.0);
    build.report.scenario.allocation.strategy = Strategy::Fill;
    let mut r = build.completed(1000);
    assert!(r.leak_check.clean, "{:?}", r.leak_check.not_returned);
    // The same run, but RSS after release stays where it peaked.
    let after = r.leak_check.after_release_sample.as_mut().unwrap();
    after.host.rss_bytes = r.samples.last().unwrap().host.rss_bytes;
    r.conclude();
    assert!(r.leak_check.objects_released());
    assert!(!r.leak_check.clean);
    assert_eq!(r.leak_check.not_returned[0].resource, Resource::HostRss);
    let t = text(&r);
    assert!(
        t.contains("every release call succeeded, yet host RSS 1000.00 MiB stayed above the start after release"),
        "{t}"
    );
}

#[test]
fn a_run_with_its_own_release_rounds_says_what_they_read_not_to_run_them() {
    let mut build = run(2, ContextMode::Shared).rss(84.0 * 1048576.0, 1048576.0);
    build.report.scenario.allocation.strategy = Strategy::Fill;
    build.report.scenario.allocation.release_every = Some(500);
    let mut r = build.completed(1000);
    // A sample right after the round's release: 10 MiB kept above the start.
    let mut round = r.samples[0].clone();
    round.allocations = 500;
    round.live = Some(0);
    round.host.rss_bytes = (94.0 * 1048576.0) as u64;
    r.samples.insert(1, round);
    let after = r.leak_check.after_release_sample.as_mut().unwrap();
    after.host.rss_bytes = r.samples.last().unwrap().host.rss_bytes;
    r.conclude();
    let t = text(&r);
    assert!(
        t.contains("its own rounds (allocation.release_every = 500) read, above the start, right after each release: host RSS 10.00 MiB"),
        "{t}"
    );
    assert!(
        !t.contains("a second round (allocation.release_every) tells"),
        "{t}"
    );
}

#[test]
fn a_run_that_releases_each_buffer_estimates_no_device_memory() {
    let mut build = run(2, ContextMode::Shared);
    build.report.scenario.allocation.strategy = Strategy::Fill;
    let kept = build.clone().completed(1000);
    assert!(kept
        .costs
        .iter()
        .any(|c| c.estimated && matches!(c.resource, Resource::DeviceMemory { .. })));
    build.report.scenario.allocation.keep = false;
    let released = build.completed(1000);
    assert!(
        !released.costs.iter().any(|c| c.estimated),
        "{:?}",
        released.costs
    );
    assert!(!matches!(
        released.analysis.first_limit.as_ref().map(|a| &a.resource),
        Some(Resource::DeviceMemory { .. })
    ));
}

/// Reports recorded on two H200s (`results/nvidia-h200x2/diagnose-emulation`),
/// concluded again by this reasoning: the eager layer's 128 MiB devices, read by NVML
/// with the CUDA context and the layer's queues on top, still make device memory the
/// candidate; fd-per-peer's descriptors likewise.
#[test]
fn real_h200_failures_name_their_candidates() {
    for (file, resource) in [
        (
            include_str!("../../../../results/nvidia-h200x2/diagnose-emulation/eager/runs.jsonl"),
            Resource::DeviceMemory { device: 0 },
        ),
        (
            include_str!(
                "../../../../results/nvidia-h200x2/diagnose-emulation/fd-per-peer/runs.jsonl"
            ),
            Resource::OpenFds,
        ),
    ] {
        let mut shared = file
            .lines()
            .map(|l| Report::from_json(l).unwrap())
            .find(|r| r.run_name == "shared-create")
            .unwrap();
        shared.conclude();
        assert!(
            candidates(&shared).contains(&&resource),
            "{resource:?}: {:?}\n{}",
            shared.analysis.candidates,
            text(&shared)
        );
    }
}

/// A replicate watched by strace that met the same count carries "no call failed"
/// over only when it ran at the run's pace (or a pause showed the limit counts): the
/// observer slows every call, and a limit that follows time stops a slowed replicate
/// at about the same count by another limit behind it.
#[test]
fn a_slowed_watched_replicate_leaves_the_refusal_open() {
    let mut r = run(2, ContextMode::Shared)
        .seconds_per_buffer(1e-4)
        .failed_at(1000);
    let watched = |seconds| crate::verdict::ObservedRun {
        count: 1000,
        seconds,
        watched_failure: true,
        stop: "failed".into(),
        failed_calls: Vec::new(),
    };
    let said = |r: &Report| {
        crate::cause::failing_call_statement(r, &[])
            .unwrap()
            .to_string()
    };
    r.analysis.observed = Some(watched(r.elapsed_seconds * 1.1));
    let same_pace = said(&r);
    assert!(
        same_pace.contains("the runtime refused by itself"),
        "{same_pace}"
    );
    assert!(
        !same_pace.contains("or a call the libc tracer"),
        "{same_pace}"
    );
    r.analysis.observed = Some(watched(r.elapsed_seconds * 20.0));
    let slowed = said(&r);
    assert!(
        slowed.contains(
            "the runtime refused by itself or a call the libc tracer does not see failed"
        ),
        "{slowed}"
    );
}

/// A limit the run went clearly past is no limit ahead of it (a line from declared
/// sizes, a cost that stopped growing): the run itself refutes the prediction.
#[test]
fn a_limit_the_run_went_past_is_not_ahead() {
    // 1 descriptor a buffer from 10, under a soft limit of 1024: about 1014 buffers.
    let build = run(2, ContextMode::Shared).fds(10.0, 1.0);
    let short = build.clone().completed(500);
    assert!(matches!(
        short.analysis.first_limit.as_ref().map(|a| &a.resource),
        Some(Resource::OpenFds)
    ));
    let past = build.completed(5_000);
    assert_eq!(past.analysis.first_limit, None);
}

#[test]
fn created_buffers_that_reserve_address_space_hold_no_resident_memory_yet() {
    // 2 KiB of RSS and 1 MiB of address space a 1 MiB buffer; no device readings.
    let r = run(2, ContextMode::Shared)
        .virtual_size(256.0 * 1048576.0, 1048576.0)
        .completed(1000);
    let t = text(&r);
    assert!(
        t.contains("[inferred from host RSS] created buffers hold no resident memory yet")
            && t.contains(
                "each reserves 1.00 MiB of address space already (virtual size), untouched"
            ),
        "{t}"
    );
}
