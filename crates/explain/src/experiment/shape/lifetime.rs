//! Whether capacity comes back after release: the failing case releasing every
//! buffer half way and going on at once; when that fails where the run did, again
//! with a pause after the release (a runtime that frees on another thread, later). What
//! a longer pause would give back stays open, said with the pause tried.

use super::{change, finding, no_answer, run, Noise, Ran, Reached, Runner};
use crate::claim::{Alternative, Claim, Judged, Range};
use crate::report::Report;
use crate::verdict::{Change, Knob, ShapeFinding, ShapeQuestion};
use crate::words::seconds;

const SUBJECT: &str = "whether capacity comes back after release";
/// The pause after the release, when capacity did not come back at once.
pub const RELEASE_PAUSE_US: u64 = 1_000_000;

/// Capacity given back some time after release: the key every delay shares, its
/// range the delays the words cover.
fn given_back(range: Range, words: String) -> Alternative {
    Alternative::new("given-back", words).over(range)
}

fn cumulative() -> Alternative {
    Alternative::new(
        "cumulative",
        "a cumulative limit (a leak, or a count of buffers ever made): nothing comes back",
    )
}

fn rate() -> Alternative {
    Alternative::new("rate", "a budget that time restores, not release")
}

/// Whether a run that released every buffer half way went past the failing count:
/// capacity came back (a limit that gives nothing back stops it at the same count;
/// one that fails further on met another limit after capacity came back).
fn came_back(r: Reached, n: u64, noise: Noise) -> bool {
    r.buffers() > n + noise.slack().max(n / 20)
}

/// The delays capacity may come back after: at once (within the time the run took to
/// allocate again), within the pause tried, later than it.
struct Delays {
    again: f64,
    pause: f64,
}

impl Delays {
    fn at_once(&self) -> Alternative {
        given_back(
            Range::between(0.0, self.again),
            format!(
                "capacity comes back on release (within the {} the run took to allocate again)",
                seconds(self.again)
            ),
        )
    }

    /// Within the pause: overlapping the window at once, which a run's start-up
    /// stretches or shortens.
    fn within_pause(&self) -> Alternative {
        given_back(
            Range::between(0.0, self.pause),
            format!(
                "capacity comes back some time after release (within {})",
                seconds(self.pause)
            ),
        )
    }

    fn later(&self) -> Alternative {
        given_back(
            Range::at_least(self.pause),
            format!("capacity comes back later than {}", seconds(self.pause)),
        )
    }
}

pub(super) fn ask(
    report: &Report,
    runner: &mut dyn Runner,
    noise: Noise,
    time: Option<&Claim>,
) -> ShapeFinding {
    let q = ShapeQuestion::LiveOrCumulative;
    let n = report.buffers;
    if n < 2 {
        return super::unasked(q, "the run failed before its second buffer");
    }
    // Going on at once, the run allocates again about as fast as it did: what comes
    // back within that time looks the same as what comes back on release.
    let delays = Delays {
        again: (report.elapsed_seconds / 2.0).max(0.001),
        pause: RELEASE_PAUSE_US as f64 / 1e6,
    };
    let release = change(Knob::ReleaseEvery, 0, n / 2);
    let asked = (2 * n + 10).min(super::super::MAX_EXPERIMENT_BUFFERS);
    let first_run = run(report, runner, noise, release.clone(), &[], asked);
    let Some(first) = first_run.count(n, noise) else {
        let all = vec![
            delays.at_once(),
            delays.within_pause(),
            delays.later(),
            cumulative(),
            rate(),
        ];
        return no_answer(q, SUBJECT, all, &[first_run]);
    };
    let rate = rate_from(rate(), time);
    let said_first = format!(
        "released every buffer after {} and went on at once: {}",
        n / 2,
        first.words()
    );
    if came_back(first, n, noise) {
        return came_back_at_once(q, &delays, rate, &said_first, first_run);
    }
    let pause = Change {
        knob: Knob::ReleasePause,
        from: 0,
        to: RELEASE_PAUSE_US,
    };
    let paused = run(report, runner, noise, release, &[pause], asked);
    let runs: [Ran; 2] = [first_run, paused];
    let Some(second) = runs[1].count(n, noise) else {
        let at_once = delays.at_once().excluded(said_first.clone());
        let all = vec![
            at_once,
            delays.within_pause(),
            delays.later(),
            cumulative(),
            rate,
        ];
        return no_answer(q, SUBJECT, all, &runs);
    };
    let said = format!(
        "{said_first}; with {} of pause after the release: {}",
        seconds(delays.pause),
        second.words()
    );
    let mut alternatives = vec![delays.at_once().excluded(said_first)];
    alternatives.extend(after_the_pause(
        &delays, rate, second, first, n, noise, &said,
    ));
    finding(q, Claim::new(q.topic(), SUBJECT, alternatives), &runs)
}

/// What the run with a pause after the release says: capacity came back within it,
/// part of it did, or none did (cumulative, or given back later than the pause).
fn after_the_pause(
    delays: &Delays,
    rate: Alternative,
    second: Reached,
    first: Reached,
    n: u64,
    noise: Noise,
    said: &str,
) -> Vec<Alternative> {
    if came_back(second, n, noise) {
        return vec![
            delays.within_pause().supported(said.to_owned()),
            delays.later().excluded(said.to_owned()),
            cumulative().excluded(said.to_owned()),
            rate_given(rate, said, true),
        ];
    }
    if second.buffers() > first.buffers() + noise.slack() {
        let why = format!("{said}: part of it came back");
        return vec![
            delays.within_pause().open(why.clone()),
            delays.later().open(why.clone()),
            cumulative().excluded(why.clone()),
            rate_given(rate, &why, true),
        ];
    }
    vec![
        delays.within_pause().excluded(said.to_owned()),
        delays.later().open(format!(
            "given back later than the {} tried would not show",
            seconds(delays.pause)
        )),
        cumulative().supported(said.to_owned()),
        rate_given(rate, said, false),
    ]
}

/// The budget-restored-by-time alternative as the time question left it: ruled out
/// there, supported there, or open.
fn rate_from(rate: Alternative, time: Option<&Claim>) -> Alternative {
    match time.and_then(|c| c.alternatives.iter().find(|a| a.key == "rate")) {
        Some(a) => Alternative {
            judged: match &a.judged {
                Judged::Excluded { by } => Judged::Excluded {
                    by: format!("the pause after each buffer: {by}"),
                },
                Judged::Supported { by } => Judged::Supported {
                    by: format!("the pause after each buffer: {by}"),
                },
                Judged::Open { why } => Judged::Open { why: why.clone() },
            },
            range: a.range,
            ..rate
        },
        None => rate,
    }
}

fn keep_unless_supported(rate: Alternative, by: &str) -> Alternative {
    if matches!(rate.judged, Judged::Supported { .. }) {
        rate
    } else {
        rate.excluded(by.to_owned())
    }
}

/// A budget time restores, given what the pause after the release showed: what came
/// back fits it when it was supported or left open before.
fn rate_given(rate: Alternative, by: &str, something_came_back: bool) -> Alternative {
    match (&rate.judged, something_came_back) {
        (Judged::Excluded { .. }, _) => rate,
        // One too slow to show in the pause after each buffer stays open here too.
        (Judged::Open { .. }, false) if rate.range.is_some() => rate,
        (_, false) => rate.excluded(format!("{by}: nothing came back in the pause either")),
        _ => rate,
    }
}

/// The run that went on at once got past the failing count: capacity came back within
/// the time that run actually took (a loaded machine stretches it past the first
/// run's).
fn came_back_at_once(
    q: ShapeQuestion,
    delays: &Delays,
    rate: Alternative,
    said_first: &str,
    first_run: Ran,
) -> ShapeFinding {
    // What came back did so within the time this run actually took (a loaded
    // machine stretches it past the first run's).
    let seen = Delays {
        again: first_run
            .report
            .as_ref()
            .map_or(delays.again, |r| r.elapsed_seconds.max(delays.again)),
        pause: delays.pause,
    };
    let alternatives = vec![
        seen.at_once().supported(said_first.to_owned()),
        delays.within_pause().excluded(said_first.to_owned()),
        delays.later().excluded(said_first.to_owned()),
        cumulative().excluded(said_first.to_owned()),
        keep_unless_supported(rate, said_first),
    ];
    finding(
        q,
        Claim::new(q.topic(), SUBJECT, alternatives),
        &[first_run],
    )
}
