//! Time, a count, or a budget time restores: the failing case with a pause after each
//! buffer that makes each buffer take about twice as long. A count fails at the same
//! count, later; a time limit at about the same time, fewer buffers in; a budget time
//! restores lets the slower run go further.

use super::{change, finding, no_answer, run, Noise, Reached, Runner};
use crate::claim::{Alternative, Claim, Range};
use crate::report::Report;
use crate::thresholds::TIME_HELD;
use crate::verdict::{Knob, ShapeFinding, ShapeQuestion};
use crate::words::seconds;

const SUBJECT: &str = "time or count";

fn alternatives() -> [Alternative; 3] {
    [
        Alternative::new("count", "a count of what the run allocated"),
        Alternative::new("time", "a limit on time"),
        Alternative::new(
            "rate",
            "a budget that time restores, which the run outpaced",
        ),
    ]
}

pub(super) fn ask(report: &Report, runner: &mut dyn Runner, noise: Noise) -> ShapeFinding {
    let q = ShapeQuestion::TimeOrCount;
    let n = report.buffers;
    if n < 2 {
        return super::unasked(q, "the run failed before its second buffer");
    }
    let before = report.elapsed_seconds;
    // As long again per buffer: a time limit then fails at about half the count.
    let pause_us = ((before * 1e6 / n as f64).ceil() as u64).max(1);
    let ran = run(
        report,
        runner,
        noise,
        change(Knob::Pause, 0, pause_us),
        &[],
        super::super::allowance(n),
    );
    let (Some(reached), Some(after)) = (
        ran.count(n, noise),
        ran.report.as_ref().map(|r| r.elapsed_seconds),
    ) else {
        return no_answer(q, SUBJECT, alternatives().into(), &[ran]);
    };
    let what = format!(
        "paused {pause_us} us after each buffer, it {} at {} (before: {n} at {})",
        reached.words(),
        seconds(after),
        seconds(before)
    );
    let alternatives = judge(reached, n, (before, after), noise, &what);
    let claim = Claim::new(q.topic(), SUBJECT, alternatives.into());
    finding(q, claim, &[ran])
}

/// The three alternatives after the paused run: the same count later (a count, or a
/// budget too slow to show), the same time with fewer buffers (time), further (a
/// budget time restores), or none of these.
fn judge(
    reached: Reached,
    n: u64,
    (before, after): (f64, f64),
    noise: Noise,
    what: &str,
) -> [Alternative; 3] {
    let [count, time, rate] = alternatives();
    let m = reached.buffers();
    let failed = matches!(reached, Reached::Failed(_));
    let same_count = failed && noise.same(m, n);
    let later = after > before * (1.0 + TIME_HELD);
    let same_time = (after - before).abs() <= TIME_HELD * before;
    if same_count && later {
        // A budget restored slowly enough would not show in the extra time. Each of
        // the two counts may sit anywhere in the replicates' spread, so the refill
        // the pause added may hide behind up to twice the slack.
        let slowest = 2.0 * noise.slack() as f64 / (after - before).max(1e-6);
        let slow = Alternative {
            words: format!(
                "a budget that time restores at under about {slowest:.0} buffers a second"
            ),
            ..rate
        };
        let why = format!(
            "one that slow would not show in the {} the pause added",
            seconds(after - before)
        );
        return [
            count.supported(what),
            time.excluded(what),
            slow.open(why).over(Range::between(0.0, slowest)),
        ];
    }
    if same_time && m + noise.slack() < n && failed {
        let by = format!("{what}: a budget time restores would have let the slower run go further");
        return [
            count.excluded(what),
            time.supported(what),
            rate.excluded(by),
        ];
    }
    if m > n + noise.slack() {
        let per_second = (m - n) as f64 / (after - before).max(1e-6);
        let by = format!("{what}: about {per_second:.0} buffers a second came back");
        return [
            count.excluded(what),
            time.excluded(what),
            rate.supported(by),
        ];
    }
    let why = format!("{what}: neither the same count nor the same time");
    [
        count.open(why.clone()),
        time.open(why.clone()),
        rate.open(why),
    ]
}
