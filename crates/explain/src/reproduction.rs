//! What re-running the failing case unchanged says about the failure, as a claim: a
//! steady limit, chance, a time limit, or something outside the process that runs use
//! up, kept or restored with time (a run after a wait tells).

use crate::claim::{Alternative, Claim, Range, Topic};
use crate::verdict::{Replicates, Reproduced};
use crate::words::{counts, seconds};

/// What re-running unchanged says about the failure, as a claim: a steady limit,
/// chance, a time limit, or something outside the process, used up and kept or
/// restored with time.
pub fn claim(r: &Replicates, paused: Option<&Claim>, moved: bool) -> Claim {
    let all = counts(&r.counts());
    let mut steady = Alternative::new(
        "steady",
        "the same failure each time: a limit on what the run holds or has done",
    );
    let mut random = Alternative::new(
        "random",
        "not reproducible: chance (a failure that strikes at random)",
    );
    let mut time = Alternative::new("time", "a limit on time");
    let mut kept = Alternative::new(
        "outside-kept",
        "a limit that persists across processes: something outside the process (a file, a daemon, the driver) that runs use up and that stays used",
    );
    let mut restored = Alternative::new(
        "outside-restored",
        "a budget outside the process that runs use up and time restores",
    );
    let fell = format!("re-runs fell short of the first run ({all} buffers)");
    match r.reproduced() {
        Reproduced::Yes => {
            let by = format!(
                "re-run unchanged, every run failed within {} buffers ({all})",
                r.tolerance
            );
            steady = steady.supported(by.clone());
            random = random.excluded(by.clone());
            kept = kept.excluded(by.clone());
            restored = restored.excluded(by);
            time = match paused.and_then(|c| c.alternatives.iter().find(|a| a.key == "time")) {
                _ if moved => {
                    time.excluded("moving a limit moved the failure to the count its line predicts")
                }
                Some(a) if a.is_excluded() => {
                    time.excluded("a pause after each buffer left the count where it was")
                }
                Some(a) if !a.is_excluded() && paused.is_some_and(|c| c.settles_on("time")) => time
                    .supported(
                        "a pause after each buffer moved the failure to about the same time",
                    ),
                _ => time.open(
                    "a run at a steady speed meets a time limit at a steady count: a pause tells",
                ),
            };
            if paused.is_some_and(|c| c.settles_on("time")) {
                steady = steady
                    .excluded("a pause after each buffer moved the failure to about the same time");
            }
        }
        Reproduced::Time { seconds: at } => {
            time.words = format!("a time limit (after about {})", seconds(at));
            let by = format!(
                "the failures held their time (about {}) while their counts did not ({all})",
                seconds(at)
            );
            time = time.supported(by.clone());
            steady = steady.excluded(by.clone());
            random = random.excluded(by.clone());
            kept = kept.excluded(by.clone());
            restored = restored.excluded(by);
        }
        Reproduced::No if r.short_of_first() => {
            let by = format!(
                "the same case failed at {all} buffers: every re-run at under half the first"
            );
            steady = steady.excluded(by.clone());
            time = time.excluded(by.clone());
            random = random.open("chance could spread the counts this way too");
            (kept, restored) = outside(r, kept, restored, &by);
        }
        Reproduced::No => {
            let by = format!("the same case failed at {all} buffers, at different times");
            random = random.supported(by.clone());
            steady = steady.excluded(by.clone());
            time = time.excluded(by.clone());
            // A budget the runs share and time restores spreads their counts too, by
            // how long each waited; one used up and never restored cannot rise again.
            restored = restored.open(
                "a budget shared by the runs and restored with time would spread their counts too",
            );
            kept = match rose(r) {
                Some(words) => kept.excluded(words),
                None => kept.open("the counts never rose again after falling"),
            };
        }
        Reproduced::Persistent | Reproduced::Depleted => {
            steady = steady.excluded(fell.clone());
            time = time.excluded(fell.clone());
            random = if at_once(r) >= 2 {
                random.excluded("re-runs failed at once, before their first buffer, again and again: chance does not")
            } else {
                random
                    .open("chance rarely falls this evenly, but these few runs do not rule it out")
            };
            (kept, restored) = outside(r, kept, restored, &fell);
        }
    }
    Claim::new(
        Topic::Reproduction,
        "re-run unchanged",
        vec![steady, random, time, kept, restored],
    )
}

/// Something outside the process that the re-runs found used up: kept, or restored
/// by the wait before the last run.
fn outside(
    r: &Replicates,
    kept: Alternative,
    restored: Alternative,
    fell: &str,
) -> (Alternative, Alternative) {
    match &r.after_wait {
        Some(w) if r.recovered() => {
            let by = format!(
                "after {} of waiting, a run reached {} buffers, past the re-runs before it",
                seconds(w.wait_seconds),
                w.run.count
            );
            (kept.excluded(by.clone()), restored.supported(by))
        }
        Some(w) => {
            let rate = (r.slack() as f64 / w.wait_seconds).max(1.0);
            (
                kept.supported(format!(
                    "{fell}, and a run after {} of waiting reached only {}",
                    seconds(w.wait_seconds),
                    w.run.count
                )),
                restored
                    .open(format!(
                        "restored more slowly than about {rate:.0} buffers a second would not show in {}",
                        seconds(w.wait_seconds)
                    ))
                    .over(Range::between(0.0, rate)),
            )
        }
        None => (
            kept.supported(fell.to_owned()),
            restored.open("no run was made after a wait"),
        ),
    }
}

/// Where a re-run went well past the one before it, in words: what something used up
/// for good cannot do.
fn rose(r: &Replicates) -> Option<String> {
    r.runs.windows(2).find_map(|w| {
        (w[1].count > w[0].count + r.tolerance).then(|| {
            format!(
                "a re-run reached {} after one that failed at {}: something used up for good does not come back",
                w[1].count, w[0].count
            )
        })
    })
}

/// Re-runs (the one after a wait included) that failed before their first buffer.
fn at_once(r: &Replicates) -> usize {
    r.runs[1..]
        .iter()
        .chain(r.after_wait.iter().map(|w| &w.run))
        .filter(|run| run.failed && run.count == 0)
        .count()
}
