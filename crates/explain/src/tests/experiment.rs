//! Experiments over a runner that answers from a rule: confirmed, refuted, not
//! testable, and the shape answers.

use super::{keys, left, text};
use crate::experiment::{investigate, plan, Plan, Runner};
use crate::testing::{failed_at_limit, rerun_failing_at, run};
use crate::verdict::{CandidateTest, Cause, Change, ExperimentOutcome, Knob, ShapeQuestion};
use crate::{Report, Resource};
use clmulti_scenario::{ContextMode, Rlimit};

/// A runner whose runs fail where `rule` says: the changes and buffers allowed in,
/// `Some(count)` to fail there, `None` to complete what was allowed.
/// A replicate (the case unchanged) fails at the rule's `replicate` count when one
/// is given.
struct Rule<F: FnMut(&[Change], u64) -> Option<u64>>(F, Vec<Vec<Change>>, Option<u64>);

impl<F: FnMut(&[Change], u64) -> Option<u64>> Rule<F> {
    fn replicating(mut self, count: u64) -> Self {
        self.2 = Some(count);
        self
    }
}

impl<F: FnMut(&[Change], u64) -> Option<u64>> Runner for Rule<F> {
    fn run(&mut self, changes: &[Change], count: u64) -> Result<Report, crate::experiment::NotRun> {
        self.1.push(changes.to_vec());
        if let (Knob::Replicate, Some(n)) = (&changes[0].knob, self.2) {
            return Ok(run(2, ContextMode::Shared).failed_at(n));
        }
        // A microsecond a buffer, and the pause asked for on top.
        let pause = changes
            .iter()
            .find(|c| c.knob == Knob::Pause)
            .map_or(0.0, |c| c.to as f64 * 1e-6);
        let mut build = run(2, ContextMode::Shared).seconds_per_buffer(1e-6 + pause);
        if changes[0].knob == Knob::Devices {
            // One descriptor a buffer, as the failing case had, whatever the peers.
            build = build.fds(10.0, 1.0);
        }
        Ok(match (self.0)(changes, count) {
            Some(n) => build.failed_at(n.min(count)),
            None => build.completed(count),
        })
    }
}

fn rule<F: FnMut(&[Change], u64) -> Option<u64>>(f: F) -> Rule<F> {
    Rule(f, Vec::new(), None)
}

#[test]
fn moving_the_descriptor_limit_moves_the_failure_so_the_candidate_is_confirmed() {
    let mut r = failed_at_limit(1014, 1024, 10);
    // Descriptors really are the limit: the run fails where the soft limit leaves room.
    let mut runner = rule(|changes, _| match changes[0].knob {
        Knob::SoftLimit { .. } => Some(changes[0].to.saturating_sub(10)),
        // One more device: the same count, descriptors are not per peer here.
        _ => Some(1014),
    })
    .replicating(1014);
    investigate(&mut r, &mut runner);
    let c = &r.analysis.candidates[0];
    let CandidateTest::Confirmed { experiments, .. } = &c.test else {
        panic!("{:?}\n{}", c.test, text(&r))
    };
    let lowered = &experiments[0];
    assert_eq!(
        lowered.change.knob,
        Knob::SoftLimit {
            limit: Rlimit::NoFile
        }
    );
    assert_eq!((lowered.change.from, lowered.change.to), (1024, 517));
    assert_eq!(
        (lowered.predicted_count, lowered.observed_count),
        (Some(507), 507)
    );
    assert_eq!(lowered.outcome, ExperimentOutcome::AsPredicted);
    // Raised within the hard limit (4096): 2038 predicted, 2028 observed.
    let raised = &experiments[1];
    assert_eq!(raised.change.to, 2038);
    assert_eq!(raised.outcome, ExperimentOutcome::AsPredicted);
    assert!(matches!(
        &r.analysis.cause,
        Some(Cause::Resource {
            resource: Resource::OpenFds,
            ..
        })
    ));
    // A confirmed cause on two devices asks only whether it is per peer.
    assert_eq!(
        r.analysis
            .shape
            .iter()
            .map(|f| f.question)
            .collect::<Vec<_>>(),
        [ShapeQuestion::PerPeer]
    );
    // One descriptor a buffer at 2, 3 and 4 devices: the same whatever the devices.
    assert_eq!(
        left(&r, ShapeQuestion::PerPeer),
        keys(&["none"]),
        "{}",
        text(&r)
    );
    let t = text(&r);
    assert!(
        t.contains("[measured] confirmed: open fds at RLIMIT_NOFILE (soft) is the cause"),
        "{t}"
    );
    assert!(t.contains("soft RLIMIT_NOFILE 1024 -> 517"), "{t}");
    // The cause claim rests on the experiments too, and says so.
    assert!(
        t.contains("inferred from the readings at the failure, the experiments on the limits and the failing call]"),
        "{t}"
    );
    assert!(
        r.headline().contains("confirmed by moving the limit"),
        "{}",
        r.headline()
    );
}

#[test]
fn a_failure_that_stays_put_refutes_the_candidate_and_the_shape_runs_describe_it() {
    // The case: descriptors at the limit, but a counter fails at 1000
    // whatever the limit is.
    let mut r = run(2, ContextMode::Shared)
        .fds(15.0, 1.0)
        .limit(Rlimit::NoFile, 1024, Some(20000))
        .failed_at(1000);
    assert_eq!(r.analysis.candidates.len(), 1);
    let mut runner = rule(|_, _| Some(1000));
    investigate(&mut r, &mut runner);
    let c = &r.analysis.candidates[0];
    assert!(
        matches!(c.test, CandidateTest::Refuted { .. }),
        "{:?}",
        c.test
    );
    assert!(matches!(
        &r.analysis.cause,
        Some(Cause::NotExplained { .. })
    ));
    let t = text(&r);
    assert!(
        t.contains("refuted: open fds was at RLIMIT_NOFILE (soft)"),
        "{t}"
    );
    assert!(!t.contains("is the cause"), "{t}");
    assert!(!r.headline().contains("reached"), "{}", r.headline());
    // A counter of buffers ever created, per process, whatever the peers.
    // Three sizes failed at 1000: buffers, or granules coarser than every size tried.
    assert_eq!(
        left(&r, ShapeQuestion::CountOrBytes),
        keys(&["buffers", "granules"])
    );
    // Released half way, at once and after a pause: nothing came back; later than
    // the pause stays open.
    assert_eq!(
        left(&r, ShapeQuestion::LiveOrCumulative),
        keys(&["given-back", "cumulative", "rate"])
    );
    assert_eq!(
        left(&r, ShapeQuestion::PerContextOrProcess),
        keys(&["process"])
    );
    assert_eq!(left(&r, ShapeQuestion::PerPeer), keys(&["none"]));
    assert!(
        t.contains("what the limit counts: buffers or bytes charged in granules of at least"),
        "{t}"
    );
    super::assert_claims_name_what_is_left(&r);
}

/// The case: descriptors are a real limit (lowering them moves the failure
/// down), but a counter stops the run at 1000 first (raising them moves nothing).
#[test]
fn a_limit_that_lowering_moves_but_raising_does_not_is_refuted_as_the_cause() {
    let mut r = run(2, ContextMode::Shared)
        .fds(10.0, 1.0)
        .limit(Rlimit::NoFile, 1020, Some(20000))
        .failed_at(1000);
    assert_eq!(r.analysis.candidates.len(), 1, "{}", text(&r));
    let mut runner =
        rule(|changes, _| Some(changes[0].to.saturating_sub(10).min(1000))).replicating(1000);
    investigate(&mut r, &mut runner);
    let c = &r.analysis.candidates[0];
    let CandidateTest::Refuted { experiments } = &c.test else {
        panic!("{:?}", c.test)
    };
    assert_eq!(experiments[0].outcome, ExperimentOutcome::AsPredicted);
    assert_eq!(experiments[1].outcome, ExperimentOutcome::NotMoved);
    assert_eq!(experiments[1].observed_count, 1000);
    assert!(!matches!(&r.analysis.cause, Some(Cause::Resource { .. })));
    assert!(text(&r).contains("refuted"), "{}", text(&r));
}

/// (limit, rule, question, what is left): each shape of unseen limit, as a runner
/// would behave under it, with the failing case at 1000 x 1 MiB on two devices. A
/// device alone never fails: each is a cost of sharing.
#[test]
fn the_shape_runs_tell_bytes_from_buffers_live_from_cumulative_context_from_process_and_peers() {
    type Behaviour = fn(&[Change], u64) -> Option<u64>;
    let byte_budget: Behaviour = |changes, _| match &changes[0].knob {
        Knob::BufferSize => Some(1000 * (1 << 20) / changes[0].to),
        Knob::ReleaseEvery | Knob::OnlyDevice => None,
        _ => Some(1000),
    };
    let per_context: Behaviour = |changes, _| match &changes[0].knob {
        Knob::Contexts => Some(1000 * changes[0].to),
        Knob::ReleaseEvery | Knob::OnlyDevice => None,
        _ => Some(1000),
    };
    let per_peer: Behaviour = |changes, _| match &changes[0].knob {
        // One descriptor per peer: 1000 with one peer, 500 with two, 333 with three.
        Knob::Devices => Some(1000 / (changes[0].to - 1)),
        Knob::ReleaseEvery | Knob::OnlyDevice => None,
        _ => Some(1000),
    };
    let cases: [(&str, Behaviour, ShapeQuestion, &[&str]); 5] = [
        (
            "byte budget: size",
            byte_budget,
            ShapeQuestion::CountOrBytes,
            &["bytes"],
        ),
        (
            "byte budget: release",
            byte_budget,
            ShapeQuestion::LiveOrCumulative,
            &["given-back"],
        ),
        (
            "per context",
            per_context,
            ShapeQuestion::PerContextOrProcess,
            &["context"],
        ),
        ("per peer", per_peer, ShapeQuestion::PerPeer, &["linear"]),
        (
            "per peer: not per context",
            per_peer,
            ShapeQuestion::PerContextOrProcess,
            &["process"],
        ),
    ];
    for (case, behaviour, question, expected) in cases {
        let mut r = rerun_failing_at(1000);
        let mut runner = rule(behaviour);
        investigate(&mut r, &mut runner);
        assert_eq!(left(&r, question), keys(expected), "{case}\n{}", text(&r));
        // Each run moves one thing, or a release with its pause.
        assert!(runner.1.iter().all(|c| c.len() <= 2), "{case}");
        // The same count, later, when paused: a count, or a budget restored too
        // slowly to show in the pause.
        assert_eq!(
            left(&r, ShapeQuestion::TimeOrCount),
            keys(&["count", "rate"]),
            "{case}"
        );
        super::assert_claims_name_what_is_left(&r);
    }
}

/// The counter that also holds a descriptor per peer: with a third device the re-run
/// fails at the descriptor limit, not at the counter, so it says nothing of peers.
#[test]
fn a_shape_rerun_that_met_a_measured_limit_answers_nothing() {
    let mut r = rerun_failing_at(1000);
    struct CounterWithDescriptors;
    impl Runner for CounterWithDescriptors {
        fn run(
            &mut self,
            changes: &[Change],
            count: u64,
        ) -> Result<Report, crate::experiment::NotRun> {
            Ok(match changes[0].knob {
                // Three devices, two descriptors per buffer: 10 + 2 x 502 of 1015.
                Knob::Devices => run(3, ContextMode::Shared)
                    .fds(10.0, 2.0)
                    .limit(Rlimit::NoFile, 1015, Some(4096))
                    .failed_at(502),
                Knob::ReleaseEvery => run(2, ContextMode::Shared).completed(count),
                // At the counter, descriptors near their limit too (as in the run):
                // the failure did not move, so the counter answers.
                _ => run(2, ContextMode::Shared)
                    .fds(10.0, 1.0)
                    .limit(Rlimit::NoFile, 1015, Some(4096))
                    .failed_at(1000),
            })
        }
    }
    investigate(&mut r, &mut CounterWithDescriptors);
    let per_peer = r
        .analysis
        .shape
        .iter()
        .find(|f| f.question == ShapeQuestion::PerPeer)
        .unwrap();
    // The device-count re-runs met RLIMIT_NOFILE, a limit of their own: they say
    // nothing of peers, and no per-peer model is claimed from them.
    let claim = per_peer.claim.as_ref().expect("a claim");
    assert!(!claim.leaves("linear"), "{}", text(&r));
    assert!(
        claim.evidence().iter().any(|e| e.contains("RLIMIT_NOFILE")),
        "{:?}",
        claim.evidence()
    );
    let t = text(&r);
    assert!(
        !t.contains("once per peer (each other device in the context)\n"),
        "{t}"
    );
    // The other questions, whose re-runs met no measured limit, still answer.
    assert_eq!(
        left(&r, ShapeQuestion::CountOrBytes),
        keys(&["buffers", "granules"])
    );
}

#[test]
fn system_wide_limits_are_not_tested_and_the_command_is_given() {
    let mut r = run(2, ContextMode::Shared).failed_at(1000);
    let mut candidate = failed_at_limit(1014, 1024, 10).analysis.candidates[0].clone();
    candidate.resource = Resource::MemoryMaps;
    candidate.limit.name = "vm.max_map_count".into();
    candidate.limit.value = 65530.0;
    match plan(&candidate, &r) {
        Plan::NotTestable { reason, command } => {
            assert!(reason.contains("never changes"), "{reason}");
            assert_eq!(
                command.as_deref(),
                Some("sudo sysctl -w vm.max_map_count=131060")
            );
        }
        other => panic!("{other:?}"),
    }
    r.analysis.candidates = vec![candidate];
    r.analysis.cause = Some(Cause::Untested {
        resources: vec![Resource::MemoryMaps],
    });
    let mut runner = rule(|_, _| Some(1000));
    investigate(&mut r, &mut runner);
    assert!(matches!(
        r.analysis.candidates[0].test,
        CandidateTest::NotTested { .. }
    ));
    assert!(
        text(&r).contains("not tested: memory maps was at vm.max_map_count"),
        "{}",
        text(&r)
    );
    // Only the shape runs ran: nothing moved the global setting.
    assert!(runner
        .1
        .iter()
        .all(|c| !matches!(c[0].knob, Knob::SoftLimit { .. } | Knob::Env { .. })));
}

#[test]
fn an_experiment_that_cannot_run_leaves_the_candidate_not_tested() {
    let mut r = failed_at_limit(1014, 1024, 10);
    struct Broken;
    impl Runner for Broken {
        fn run(&mut self, _: &[Change], _: u64) -> Result<Report, crate::experiment::NotRun> {
            Err(crate::experiment::NotRun::Failed("no child process".into()))
        }
    }
    investigate(&mut r, &mut Broken);
    match &r.analysis.candidates[0].test {
        CandidateTest::NotTested { reason, .. } => {
            assert!(reason.contains("no child process"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // Nothing refuted it: it stays the candidate, not "not explained".
    assert!(matches!(
        &r.analysis.cause,
        Some(Cause::Untested { resources }) if resources == &[Resource::OpenFds]
    ));
}
