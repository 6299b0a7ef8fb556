//! An experimenter that is not fooled: replicates before anything is judged, time as
//! a dimension, both sides of a limit, noise from the replicates, costs with their
//! margins, system-wide readings kept out, rounds judged by what each adds.

use super::text;
use crate::experiment::{investigate, Runner};
use crate::testing::run;
use crate::verdict::{
    CandidateTest, Cause, Change, ExperimentOutcome, Knob, ReplicateRun, Replicates, Reproduced,
};
use crate::{Report, Resource};
use clmulti_scenario::{ContextMode, Rlimit};

/// A runner from a table: what each change does. `unchanged` gives each replicate
/// in turn (`(count, seconds per buffer)`); `rule` the rest, `None` to complete.
pub(super) struct Table<F: FnMut(&Change) -> Option<u64>> {
    unchanged: Vec<(u64, f64)>,
    rule: F,
    pub(super) runs: Vec<Change>,
}

impl<F: FnMut(&Change) -> Option<u64>> Runner for Table<F> {
    fn run(&mut self, changes: &[Change], count: u64) -> Result<Report, crate::experiment::NotRun> {
        let change = changes[0].clone();
        self.runs.push(change.clone());
        let pause = changes
            .iter()
            .find(|c| c.knob == Knob::Pause)
            .map_or(0.0, |c| c.to as f64 * 1e-6);
        if change.knob == Knob::Replicate {
            let (n, per) = self.unchanged[(change.to as usize - 1) % self.unchanged.len()];
            return Ok(run(2, ContextMode::Shared)
                .seconds_per_buffer(per)
                .failed_at(n));
        }
        let build = run(2, ContextMode::Shared).seconds_per_buffer(1e-6 + pause);
        Ok(match (self.rule)(&change) {
            Some(n) => build.failed_at(n.min(count)),
            None => build.completed(count),
        })
    }
}

pub(super) fn table<F: FnMut(&Change) -> Option<u64>>(
    unchanged: Vec<(u64, f64)>,
    rule: F,
) -> Table<F> {
    Table {
        unchanged,
        rule,
        runs: Vec::new(),
    }
}

/// A counter failing at 1000 whatever moves: nothing at its limit.
pub(super) fn unexplained(at: u64) -> Report {
    run(2, ContextMode::Shared).failed_at(at)
}

#[test]
fn a_failure_that_strikes_at_random_is_not_reproducible_and_gets_no_shape() {
    let mut r = unexplained(1000);
    let mut runner = table(
        vec![(58, 1e-6), (460, 1e-6), (486, 1e-6), (171, 1e-6)],
        |_| Some(1000),
    );
    investigate(&mut r, &mut runner);
    let replicates = r.analysis.replicates.as_ref().unwrap();
    assert_eq!(replicates.counts(), [1000, 58, 460, 486, 171]);
    assert_eq!(
        r.analysis.cause,
        Some(Cause::NotReproducible {
            counts: vec![1000, 58, 460, 486, 171]
        })
    );
    assert!(r.analysis.shape.is_empty());
    // Replicates only (every one short of the first, the last after a wait): no
    // experiment judged against a spread this wide.
    assert!(runner
        .runs
        .iter()
        .all(|c| matches!(c.knob, Knob::Replicate | Knob::Wait)));
    let t = text(&r);
    assert!(
        t.contains("failed at 1000 (1 ms); re-run unchanged, each in a fresh process: 58 (0 ms), 460 (0 ms), 486 (0 ms), 171 (0 ms)")
            && t.contains("re-run unchanged: not reproducible: chance"),
        "{t}"
    );
    for shape in ["counts buffers", "per context", "live", "cumulative"] {
        assert!(!t.contains(shape), "{shape}: {t}");
    }
    assert!(
        r.headline().contains("not reproducible"),
        "{}",
        r.headline()
    );
}

#[test]
fn replicates_within_the_tolerance_agree_and_two_more_run_only_on_disagreement() {
    let mut r = unexplained(1000);
    let mut runner = table(vec![(1003, 1e-6), (998, 1e-6)], |_| Some(1000));
    investigate(&mut r, &mut runner);
    let reps = r.analysis.replicates.as_ref().unwrap();
    assert_eq!(reps.runs.len(), 3);
    assert_eq!(reps.reproduced(), Reproduced::Yes);
    assert_eq!(reps.tolerance, 20);
    assert!(
        text(&r).contains("failed at 1000 (1 ms); re-run unchanged, each in a fresh process: 1003 (1 ms), 998 (1 ms)"),
        "{}",
        text(&r)
    );
    // Disagreeing, two more ran.
    let mut r = unexplained(1000);
    let mut runner = table(vec![(700, 1e-6), (1000, 1e-6)], |_| Some(1000));
    investigate(&mut r, &mut runner);
    assert_eq!(r.analysis.replicates.as_ref().unwrap().runs.len(), 5);
}

#[test]
fn a_failure_whose_time_holds_while_its_count_does_not_is_a_time_limit() {
    // 0.4 s each time, at different speeds: 2000 buffers, then 1600, then 2300.
    let mut r = run(2, ContextMode::Shared)
        .seconds_per_buffer(0.4 / 2000.0)
        .failed_at(2000);
    let mut runner = table(vec![(1600, 0.4 / 1600.0), (2300, 0.4 / 2300.0)], |_| {
        Some(2000)
    });
    investigate(&mut r, &mut runner);
    let Some(Cause::TimeLimit { seconds, counts }) = &r.analysis.cause else {
        panic!("{:?}\n{}", r.analysis.cause, text(&r))
    };
    assert!((seconds - 0.4).abs() < 0.01, "{seconds}");
    // Disagreeing counts ask for two more.
    assert_eq!(counts, &[2000, 1600, 2300, 1600, 2300]);
    let t = text(&r);
    assert!(
        t.contains("re-run unchanged: a time limit (after about 0.40 s)"),
        "{t}"
    );
    assert!(
        r.headline().contains("a time limit (after about 0.40 s)"),
        "{}",
        r.headline()
    );
    assert!(
        !t.contains("counts buffers") && !t.contains("cumulative"),
        "{t}"
    );
}

#[test]
fn a_limit_kept_outside_the_process_is_persistent_and_voids_what_follows() {
    let mut r = unexplained(1000);
    let mut runner = table(vec![(0, 1e-6), (0, 1e-6)], |_| Some(0));
    investigate(&mut r, &mut runner);
    assert_eq!(
        r.analysis.cause,
        Some(Cause::Persistent {
            counts: vec![1000, 0, 0]
        })
    );
    // Replicates only, the last after a wait: time gave nothing back.
    assert!(runner
        .runs
        .iter()
        .all(|c| matches!(c.knob, Knob::Replicate | Knob::Wait)));
    assert!(
        text(&r).contains("something outside the process (a file, a daemon, the driver) that runs use up and that stays used"),
        "{}",
        text(&r)
    );
    // Earlier and earlier on a line, not at once: the same.
    let falling = Replicates {
        runs: [1000, 800, 600, 400, 200]
            .map(|count| ReplicateRun {
                count,
                seconds: 0.1,
                failed: true,
            })
            .to_vec(),
        tolerance: 20,
        after_wait: None,
    };
    assert_eq!(falling.reproduced(), Reproduced::Persistent);
    // A random failure: falling three times, or at once once, is not persistence.
    let random = |counts: &[u64]| Replicates {
        runs: counts
            .iter()
            .map(|&count| ReplicateRun {
                count,
                seconds: count as f64 * 1e-5,
                failed: true,
            })
            .collect(),
        tolerance: 27,
        after_wait: None,
    };
    assert_eq!(random(&[1337, 100, 32]).reproduced(), Reproduced::No);
    assert_eq!(
        random(&[1337, 0, 512, 77, 900]).reproduced(),
        Reproduced::No
    );
    assert_eq!(
        random(&[1337, 900, 950, 100, 32]).reproduced(),
        Reproduced::No
    );
    // Failing within the loop's first buffers, times say nothing: start-up dominates.
    let early = Replicates {
        runs: [(18, 3e-4, true), (53, 2e-4, false), (31, 3.2e-4, true)]
            .map(|(count, seconds, failed)| ReplicateRun {
                count,
                seconds,
                failed,
            })
            .to_vec(),
        tolerance: 2,
        after_wait: None,
    };
    assert_eq!(early.reproduced(), Reproduced::No);
}

/// Descriptors at the soft limit (7 open before, one per buffer: 1017 of 1024), and a
/// counter 23 buffers behind: raised, the run goes further, then stops.
#[test]
fn two_limits_close_together_confirm_the_first_and_name_the_second() {
    let mut r = run(2, ContextMode::Shared)
        .fds(7.0, 1.0)
        .limit(Rlimit::NoFile, 1024, Some(20000))
        .failed_at(1017);
    let mut runner = table(vec![(1017, 1e-6)], |c| match c.knob {
        Knob::SoftLimit { .. } => Some(c.to.saturating_sub(7).min(1040)),
        _ => Some(1017),
    });
    investigate(&mut r, &mut runner);
    let c = &r.analysis.candidates[0];
    let CandidateTest::Confirmed {
        experiments,
        second_limit_after,
    } = &c.test
    else {
        panic!("{:?}\n{}", c.test, text(&r))
    };
    assert_eq!(experiments[1].outcome, ExperimentOutcome::MovedUp);
    assert_eq!(*second_limit_after, Some(23));
    let t = text(&r);
    assert!(
        t.contains("[measured] confirmed: open fds at RLIMIT_NOFILE (soft) is the cause"),
        "{t}"
    );
    assert!(
        t.contains(
            "raised, the run stopped 23 buffers past the old failure with open fds short of its raised limit: a second limit (not explained)"
        ),
        "{t}"
    );
    assert!(matches!(r.analysis.cause, Some(Cause::Resource { .. })));
}

/// A 50 ms limit on a loaded machine: times move 21%, counts by half: one time.
#[test]
fn a_time_limit_on_a_loaded_machine_is_still_one_time() {
    let loaded = |runs: &[(u64, f64)]| Replicates {
        runs: runs
            .iter()
            .map(|&(count, seconds)| ReplicateRun {
                count,
                seconds,
                failed: true,
            })
            .collect(),
        tolerance: 27,
        after_wait: None,
    };
    let timed = [
        (8800, 0.052),
        (7221, 0.058),
        (7600, 0.063),
        (16011, 0.056),
        (12453, 0.051),
    ];
    assert!(matches!(
        loaded(&timed).reproduced(),
        Reproduced::Time { .. }
    ));
    let random_slow = [(8800, 0.052), (7221, 0.043), (12000, 0.071)];
    assert_eq!(loaded(&random_slow).reproduced(), Reproduced::No);
}

#[test]
fn a_raised_run_within_the_replicates_noise_has_not_moved() {
    // Replicates spread 3: a raised run 4 buffers further is noise (slack 9).
    let mut r = run(2, ContextMode::Shared)
        .fds(7.0, 1.0)
        .limit(Rlimit::NoFile, 1024, Some(20000))
        .failed_at(1017);
    let mut runner = table(vec![(1014, 1e-6), (1016, 1e-6)], |c| match c.knob {
        Knob::SoftLimit { .. } => Some(c.to.saturating_sub(7).min(1021)),
        _ => Some(1017),
    });
    investigate(&mut r, &mut runner);
    let c = &r.analysis.candidates[0];
    assert!(
        matches!(c.test, CandidateTest::Refuted { .. }),
        "{:?}\n{}",
        c.test,
        text(&r)
    );
    assert_eq!(c.test.experiments()[1].outcome, ExperimentOutcome::NotMoved);
}

#[test]
fn a_limit_that_can_only_be_lowered_is_consistent_never_confirmed() {
    // Hard = soft and no right to raise it: one side only.
    let mut r = run(2, ContextMode::Shared)
        .fds(7.0, 1.0)
        .limit(Rlimit::NoFile, 1015, Some(1015))
        .failed_at(1008);
    let mut runner = table(vec![(1008, 1e-6)], |c| match c.knob {
        Knob::SoftLimit { .. } => Some(c.to.saturating_sub(7).min(1000)),
        _ => Some(1008),
    });
    investigate(&mut r, &mut runner);
    let c = &r.analysis.candidates[0];
    assert!(
        matches!(&c.test, CandidateTest::Consistent { why, .. } if why.contains("may not raise the hard one")),
        "{:?}",
        c.test
    );
    let t = text(&r);
    assert!(!t.contains("confirmed"), "{t}");
    // Lowering moved it; raising could not be tried; no call was seen failing: the
    // descriptors stay open beside a limit no reading shows.
    assert!(
        t.contains("open fds at RLIMIT_NOFILE (soft): lowering the limit moved the failure as its line predicts; raising it could not be tried"),
        "{t}"
    );
    assert!(
        matches!(r.analysis.cause, Some(Cause::Untested { .. })),
        "{t}"
    );
    assert!(
        r.headline().contains(
            "not settled: open fds at RLIMIT_NOFILE (soft) or not explained by what was measured"
        ),
        "{}",
        r.headline()
    );
    super::assert_claims_name_what_is_left(&r);
    // The same, with the failing call seen: open() failing with EMFILE is what the
    // limit gives, so it is the one met.
    let mut r = run(2, ContextMode::Shared)
        .fds(7.0, 1.0)
        .limit(Rlimit::NoFile, 1015, Some(1015))
        .failed_at(1008);
    r.traced = Some(crate::Traced {
        failing_calls: vec![clmulti_probe::trace::TracedCall {
            call: "openat".into(),
            args: "AT_FDCWD, \"/dev/null\", O_RDONLY".into(),
            errno: 24,
            errno_name: "EMFILE".into(),
            thread: 1,
            stack: Vec::new(),
        }],
    });
    r.conclude();
    let mut runner = table(vec![(1008, 1e-6)], |c| match c.knob {
        Knob::SoftLimit { .. } => Some(c.to.saturating_sub(7).min(1000)),
        _ => Some(1008),
    });
    investigate(&mut r, &mut runner);
    assert!(
        matches!(r.analysis.cause, Some(Cause::OneSided { .. })),
        "{}",
        text(&r)
    );
    assert!(
        r.headline().contains("open fds at RLIMIT_NOFILE (soft) (lowering its limit moved the failure as predicted, raising it could not be tried, and the failing call names it)"),
        "{}",
        r.headline()
    );
}

#[test]
fn root_that_may_raise_hard_limits_raises_past_the_hard_one() {
    let mut r = run(2, ContextMode::Shared)
        .fds(7.0, 1.0)
        .limit(Rlimit::NoFile, 1015, Some(1015))
        .as_root()
        .failed_at(1008);
    r.host_limits.may_raise_hard = true;
    let mut runner = table(vec![(1008, 1e-6)], |c| match c.knob {
        Knob::SoftLimit { .. } => Some(c.to.saturating_sub(7)),
        _ => Some(1008),
    });
    investigate(&mut r, &mut runner);
    let c = &r.analysis.candidates[0];
    let raised = &c.test.experiments()[1];
    assert!(raised.change.to > 1015, "{raised:?}");
    assert!(matches!(c.test, CandidateTest::Confirmed { .. }));
}

#[test]
fn a_cost_inside_its_margin_is_not_measurable_and_costs_carry_margins() {
    let mut r = run(2, ContextMode::Shared).completed(1000);
    // RSS swinging +-300 KiB around flat: no cost.
    for (i, s) in r.samples.iter_mut().enumerate() {
        s.host.rss_bytes = (64u64 << 20) + if i % 2 == 0 { 300 << 10 } else { 0 };
    }
    r.conclude();
    let rss = r
        .costs
        .iter()
        .find(|c| c.resource == Resource::HostRss)
        .unwrap();
    assert!(rss.margin > rss.per_buffer.abs(), "{rss:?}");
    assert!(
        rss.per_buffer_words().starts_with("not measurable (below "),
        "{}",
        rss.per_buffer_words()
    );
    assert_eq!(rss.predicted_count, None);
    assert!(!text(&r).contains("host RSS +"), "{}", text(&r));
    // A clean line: exact, no margin.
    let r = run(2, ContextMode::Shared).fds(7.0, 1.0).completed(1000);
    let fds = r
        .costs
        .iter()
        .find(|c| c.resource == Resource::OpenFds)
        .unwrap();
    assert_eq!((fds.per_buffer, fds.margin), (1.0, 0.0));
    assert_eq!(fds.per_buffer_words(), "+1");
    // A line through fewer samples than a slope needs is said as such, whatever it reads.
    let mut few = fds.clone();
    few.samples = 4;
    assert_eq!(few.per_buffer_words(), "+1 (4 samples: too few to measure)");
}

#[test]
fn system_wide_readings_are_no_cost_and_a_noisy_machine_is_said() {
    // Shmem fell 1.11 MiB a buffer: other processes, not this run.
    let r = run(2, ContextMode::Shared)
        .shmem(4e9, -1.11 * 1048576.0)
        .completed(1000);
    let t = text(&r);
    assert!(!t.contains("Shmem -"), "{t}");
    assert!(t.contains("other processes were at work"), "{t}");
    assert!(r
        .leak_check
        .not_returned
        .iter()
        .all(|n| !n.resource.system_wide()));
}

#[test]
fn extrapolation_stops_at_a_horizon() {
    // 2 KiB a buffer against 64 GiB: 33 million buffers from a 10000-buffer line.
    let r = run(2, ContextMode::Shared).completed(10000);
    let t = text(&r);
    assert!(
        t.contains("no limit within 10 times this run's 10000 buffers"),
        "{t}"
    );
    assert!(!t.contains("million"), "{t}");
}

#[test]
fn clmulti_s_own_descriptors_are_said_once_where_descriptors_matter() {
    let mut r = run(2, ContextMode::Shared)
        .fds(7.0, 1.0)
        .limit(Rlimit::NoFile, 256, Some(20000))
        .failed_at(249);
    r.clmulti_fds = Some(7);
    r.conclude();
    let t = text(&r);
    assert_eq!(t.matches("clmulti's own 7 descriptors").count(), 1, "{t}");
    // The candidate is met at 256 too: 7 + 249 = 256.
    assert_eq!(r.analysis.candidates.len(), 1, "{t}");
    let r = run(2, ContextMode::Shared).completed(1000);
    assert!(!text(&r).contains("own"));
}

fn diagnose(runs: &[(crate::diagnosis::Role, Report)]) -> crate::diagnosis::Diagnosis {
    let placed: Vec<crate::diagnosis::Placed<'_>> = runs
        .iter()
        .map(|(role, report)| crate::diagnosis::Placed {
            role: *role,
            report,
        })
        .collect();
    crate::diagnosis::Diagnosis::new(&placed, &[])
}

#[test]
fn strategies_failing_at_one_time_and_far_apart_in_buffers_read_as_time() {
    use crate::diagnosis::Role;
    use clmulti_scenario::Strategy;
    let d = diagnose(&[
        (
            Role::Shared,
            run(2, ContextMode::Shared)
                .seconds_per_buffer(0.4 / 2000.0)
                .failed_at(2000),
        ),
        (
            Role::Shared,
            run(2, ContextMode::Shared)
                .strategy(Strategy::Fill)
                .seconds_per_buffer(0.41 / 350.0)
                .failed_at(350),
        ),
    ]);
    let v: String = d.verdict.iter().map(|s| format!("{s}\n")).collect();
    assert!(
        v.contains("the shared context's failure follows time, not buffers: create at 2000 buffers after 0.40 s, fill at 350 buffers after 0.41 s"),
        "{v}"
    );
}

#[test]
fn a_confirmed_cost_that_falls_with_peers_is_said_per_peer() {
    use crate::diagnosis::Role;
    // Descriptors: one per peer of each buffer, 10 open before, soft limit 1024.
    let fds_per_peer = |devices: u64, soft: u64| (soft - 10) / (devices - 1);
    let mut shared = run(3, ContextMode::Shared)
        .fds(10.0, 2.0)
        .limit(Rlimit::NoFile, 1024, Some(20000))
        .failed_at(fds_per_peer(3, 1024));
    /// Unchanged and with the limit moved, three devices; with one more, four.
    struct PerPeer;
    impl Runner for PerPeer {
        fn run(&mut self, changes: &[Change], _: u64) -> Result<Report, crate::experiment::NotRun> {
            let (devices, soft) = match changes[0].knob {
                Knob::SoftLimit { .. } => (3, changes[0].to),
                Knob::Devices => (changes[0].to, 1024),
                _ => (3, 1024),
            };
            let per_buffer = (devices - 1) as f64;
            Ok(run(devices as usize, ContextMode::Shared)
                .every(20)
                .fds(10.0, per_buffer)
                .limit(Rlimit::NoFile, soft, Some(20000))
                .failed_at((soft - 10) / (devices - 1)))
        }
    }
    investigate(&mut shared, &mut PerPeer);
    assert!(matches!(
        shared.analysis.cause,
        Some(Cause::Resource { .. })
    ));
    let d = diagnose(&[
        (
            Role::OneDevice,
            run(1, ContextMode::Shared).completed(10000),
        ),
        (Role::Shared, shared),
        (
            Role::PerDevice,
            run(3, ContextMode::PerDevice).completed(10000),
        ),
    ]);
    let v: String = d.verdict.iter().map(|s| format!("{s}\n")).collect();
    assert!(
        v.contains(
            "it grows 2 per buffer there (1 per peer: each buffer is shared with 2 other devices)"
        ),
        "{v}"
    );
}
