//! Re-runs unchanged, as a claim: the budget of the run's own that time restores as it
//! runs (its count follows each run's pace) is judged against the runs' paces.

use crate::reproduction::claim;
use crate::verdict::{ReplicateRun, Replicates, Reproduced};

/// Re-runs of `(count, seconds)`, each failed.
fn reruns(runs: &[(u64, f64)]) -> Replicates {
    Replicates {
        runs: runs
            .iter()
            .map(|&(count, seconds)| ReplicateRun {
                count,
                seconds,
                failed: true,
            })
            .collect(),
        tolerance: 20,
        after_wait: None,
    }
}

#[test]
fn counts_that_follow_the_pace_leave_a_budget_restored_as_the_run_goes_open() {
    // A per-process budget of 1000 restored at 1000 a second, on a loaded machine:
    // the slower the run, the further it goes (count = 1000 * pace / (pace - 1000)).
    let r = reruns(&[(1500, 0.5), (2000, 1.0), (1250, 0.25)]);
    assert_eq!(r.reproduced(), Reproduced::No);
    let c = claim(&r, &[], &[]);
    assert!(c.admits("pace", None), "{}", c.sentence());
    assert!(c.admits("random", None), "{}", c.sentence());
    assert!(!c.admits("steady", None));
    assert!(
        c.sentence().contains("a slower run goes further"),
        "{}",
        c.sentence()
    );
}

#[test]
fn a_clearly_faster_run_that_went_further_rules_the_pace_out() {
    // Chance: the run at 4000 a second went further than one at 2000.
    let r = reruns(&[(1000, 0.5), (2000, 0.5), (600, 0.3)]);
    assert_eq!(r.reproduced(), Reproduced::No);
    let c = claim(&r, &[], &[]);
    assert!(!c.admits("pace", None), "{}", c.sentence());
    let pace = c.alternatives.iter().find(|a| a.key == "pace").unwrap();
    assert!(
        format!("{pace:?}").contains("4000 buffers a second reached 2000"),
        "{pace:?}"
    );
    // Within the pace's noise (under 8% apart), nothing is ruled out.
    let close = reruns(&[(1000, 0.5), (1300, 0.605), (1150, 0.55)]);
    assert_eq!(close.reproduced(), Reproduced::No);
    assert!(claim(&close, &[], &[]).admits("pace", None));
}

#[test]
fn a_rerun_that_fails_at_once_rules_out_a_budget_of_the_runs_own() {
    let r = reruns(&[(1000, 0.5), (0, 0.0), (0, 0.0)]);
    assert_eq!(r.reproduced(), Reproduced::Persistent);
    let c = claim(&r, &[], &[]);
    assert!(!c.admits("pace", None), "{}", c.sentence());
}

#[test]
fn rerun_that_held_still_or_held_their_time_need_no_pace() {
    // Held still: the question is answered, whatever restores the limit.
    let steady = claim(&reruns(&[(1000, 0.5), (1005, 0.6), (998, 0.4)]), &[], &[]);
    assert!(steady.alternatives.iter().all(|a| a.key != "pace"));
    assert!(steady.admits("steady", None));
    // The same time, other counts: a time limit; a pace would move both.
    let timed = reruns(&[(1000, 0.5), (700, 0.5), (1300, 0.51)]);
    assert!(matches!(timed.reproduced(), Reproduced::Time { .. }));
    let c = claim(&timed, &[], &[]);
    assert!(c.settles_on("time"), "{}", c.sentence());
    assert!(!c.admits("pace", None));
}

#[test]
fn one_rerun_the_scheduler_held_back_does_not_hide_a_time_limit() {
    // Seen beside two busy loops on 2 cores: a 50 ms limit, one re-run 10 ms late.
    let late = reruns(&[
        (258, 0.052),
        (287, 0.052),
        (272, 0.053),
        (269, 0.062),
        (274, 0.053),
    ]);
    assert!(matches!(late.reproduced(), Reproduced::Time { .. }));
    // Times that spread as the counts do stay no time limit, one left out or not.
    let alike = reruns(&[
        (258, 0.052),
        (287, 0.058),
        (230, 0.046),
        (300, 0.060),
        (270, 0.054),
    ]);
    assert_eq!(alike.reproduced(), Reproduced::No);
}
