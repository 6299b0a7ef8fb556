//! The pause after each buffer: a time limit told from a count, and the slowest
//! refill of a budget it cannot show.

use super::rigor::{table, unexplained};
use super::text;
use crate::experiment::investigate;
use crate::testing::run;
use crate::verdict::{Cause, Knob, ShapeQuestion};
use clmulti_scenario::ContextMode;

/// A budget time restores hides behind the replicates' spread on both sides: the
/// first count and the paused one may each sit anywhere in it, so the slowest refill
/// the claim leaves open is twice the slack over the time the pause added.
#[test]
fn the_slowest_budget_left_open_allows_the_spread_on_both_sides() {
    let mut r = unexplained(2000);
    let mut runner = table(vec![(1990, 1e-6), (2010, 1e-6)], |_| Some(2000));
    investigate(&mut r, &mut runner);
    let slack = r.analysis.replicates.as_ref().unwrap().slack() as f64;
    assert!(slack > 0.0, "{}", text(&r));
    let finding = r
        .analysis
        .shape
        .iter()
        .find(|f| f.question == ShapeQuestion::TimeOrCount)
        .unwrap();
    let paused = finding.experiments[0].observed_seconds.unwrap();
    let added = paused - r.elapsed_seconds;
    let claim = finding.claim.as_ref().unwrap();
    assert!(
        claim.admits("rate", Some(1.5 * slack / added)),
        "{}",
        text(&r)
    );
    assert!(
        !claim.admits("rate", Some(2.5 * slack / added)),
        "{}",
        text(&r)
    );
}

#[test]
fn a_pause_tells_a_steady_time_limit_from_a_count() {
    // Steady: every replicate at 2000 buffers, 2 ms. The pause doubles each buffer's
    // time (the table's runs take 1 us a buffer and the pause): half as many by then.
    let mut r = run(2, ContextMode::Shared)
        .seconds_per_buffer(1e-6)
        .failed_at(2000);
    let pause_us = 1; // elapsed 2 ms over 2000 buffers: 1 us a buffer
    let mut runner = table(vec![(2000, 1e-6)], move |c| match c.knob {
        Knob::Pause => {
            assert_eq!(c.to, pause_us);
            Some(1000)
        }
        _ => Some(2000),
    });
    investigate(&mut r, &mut runner);
    assert!(
        matches!(r.analysis.cause, Some(Cause::TimeLimit { .. })),
        "{}",
        text(&r)
    );
    // The other shape questions are not asked of a time limit.
    assert!(runner
        .runs
        .iter()
        .all(|c| matches!(c.knob, Knob::Replicate | Knob::Pause | Knob::Observe)));
    assert!(text(&r).contains("the failure follows time, not buffers"));
    // A count: paused, the same count, twice the time.
    let mut r = unexplained(2000);
    let mut runner = table(vec![(2000, 1e-6)], |_| Some(2000));
    investigate(&mut r, &mut runner);
    assert_eq!(
        super::left(&r, ShapeQuestion::TimeOrCount),
        super::keys(&["count", "rate"])
    );
}
