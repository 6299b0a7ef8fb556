//! What re-running the failing case unchanged says about the failure, as a claim: a
//! steady limit, chance, a time limit, something outside the process that runs use
//! up, kept or restored with time (a run after a wait tells), or a budget of the run's
//! own that time restores as it runs, whose count follows each run's pace.

use crate::claim::{Alternative, Claim, Range, Topic};
use crate::thresholds::PACE_APART;
use crate::verdict::{
    Candidate, ReplicateRun, Replicates, Reproduced, ShapeFinding, ShapeQuestion,
};
use crate::words::{counts, seconds};

/// What re-running unchanged says about the failure, as a claim: a steady limit,
/// chance, a time limit, or something outside the process, used up and kept or
/// restored with time. The shape findings and the candidates' tests add what the
/// re-runs alone cannot tell: a pause (time or count), a moved limit or a second
/// process beside the run (the process's own limit, or one outside it).
pub fn claim(r: &Replicates, shape: &[ShapeFinding], candidates: &[Candidate]) -> Claim {
    let paused = finding(shape, ShapeQuestion::TimeOrCount);
    let moved = moved(candidates);
    let own = moved
        || finding(shape, ShapeQuestion::PerContextOrProcess)
            .is_some_and(|c| c.settles_on("context") || c.settles_on("process"));
    let mut a = Five {
        steady: Alternative::new("steady", "the same failure each time: a limit on what the run holds or has done"),
        random: Alternative::new("random", "not reproducible: chance (a failure that strikes at random)"),
        time: Alternative::new("time", "a limit on time"),
        kept: Alternative::new(
            "outside-kept",
            "a limit that persists across processes: something outside the process (a file, a daemon, the driver) that runs use up and that stays used",
        ),
        restored: Alternative::new("outside-restored", "a budget outside the process that runs use up and time restores"),
    };
    let pace = Alternative::new(
        "pace",
        "a budget of the run's own that time restores as it runs: a slower run goes further",
    );
    let all = counts(&r.counts());
    let reproduced = r.reproduced();
    match reproduced {
        Reproduced::Yes => a.steady_case(r, &all, paused, (moved, own)),
        Reproduced::Time { seconds: at } => a.time_case(at, &all),
        Reproduced::No if r.short_of_first() => {
            let by = format!(
                "the same case failed at {all} buffers: every re-run at under half the first"
            );
            a.steady = a.steady.excluded(by.clone());
            a.time = a.time.excluded(by.clone());
            a.random = a.random.open("chance could spread the counts this way too");
            (a.kept, a.restored) = outside(r, a.kept, a.restored, &by);
        }
        Reproduced::No => a.spread_case(r, &all),
        Reproduced::Persistent | Reproduced::Depleted => {
            let fell = format!("re-runs fell short of the first run ({all} buffers)");
            a.steady = a.steady.excluded(fell.clone());
            a.time = a.time.excluded(fell.clone());
            a.random = if at_once(r) >= 2 {
                a.random.excluded("re-runs failed at once, before their first buffer, again and again: chance does not")
            } else {
                a.random
                    .open("chance rarely falls this evenly, but these few runs do not rule it out")
            };
            (a.kept, a.restored) = outside(r, a.kept, a.restored, &fell);
        }
    }
    let mut alternatives = vec![a.steady, a.random, a.time, a.kept, a.restored];
    // Re-runs that held still answer the question whatever restores the limit (one
    // restored as the run goes holds still at a steady pace: the pause's question).
    match reproduced {
        Reproduced::Yes => {}
        Reproduced::Time { .. } => alternatives.push(pace.excluded(
            "the failures held their time while their counts did not: a budget restored as the run goes moves both",
        )),
        _ => alternatives.push(judge_pace(r, pace)),
    }
    Claim::new(Topic::Reproduction, "re-run unchanged", alternatives)
}

/// A budget of the run's own that time restores as it runs starts full in every
/// process and lets a slower run go further: ruled out by a re-run that failed before
/// its first buffer, or by a run clearly faster than another that still went further.
fn judge_pace(r: &Replicates, pace: Alternative) -> Alternative {
    let runs: Vec<&ReplicateRun> = r
        .runs
        .iter()
        .chain(r.after_wait.iter().map(|w| &w.run))
        .collect();
    if at_once(r) > 0 {
        return pace.excluded(
            "a re-run failed before its first buffer: a budget of the run's own starts full in every process",
        );
    }
    let per_second =
        |run: &ReplicateRun| (run.seconds > 0.0).then(|| run.count as f64 / run.seconds);
    for further in &runs {
        for other in &runs {
            let (Some(fast), Some(slow)) = (per_second(further), per_second(other)) else {
                continue;
            };
            if further.count > other.count + r.tolerance && fast > slow * (1.0 + PACE_APART) {
                return pace.excluded(format!(
                    "a run at {fast:.0} buffers a second reached {}, one at {slow:.0} only {}: a budget restored as the run goes lets the slower run go further",
                    further.count, other.count
                ));
            }
        }
    }
    let paces: Vec<f64> = runs.iter().filter_map(|run| per_second(run)).collect();
    if paces.is_empty() {
        return pace.open("the runs' paces were not recorded");
    }
    let (low, high) = paces
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), p| (l.min(*p), h.max(*p)));
    pace.open(format!(
        "no run went further at a clearly faster pace ({low:.0} to {high:.0} buffers a second): a budget restored as the run goes spreads counts this way too; a pause after each buffer tells"
    ))
}

/// The five alternatives, judged case by case.
struct Five {
    steady: Alternative,
    random: Alternative,
    time: Alternative,
    kept: Alternative,
    restored: Alternative,
}

impl Five {
    /// Every re-run failed within the tolerance: a steady failure, or a time limit met
    /// at a steady speed, which moving a limit or a pause tells apart; or a budget
    /// outside the process that time restores between runs, which a limit of the
    /// process's own (`own`: moved, or a second process beside it left it) rules out.
    fn steady_case(
        &mut self,
        r: &Replicates,
        all: &str,
        paused: Option<&Claim>,
        (moved, own): (bool, bool),
    ) {
        let by = format!(
            "re-run unchanged, every run failed within {} buffers ({all})",
            r.tolerance
        );
        self.steady = self.steady.clone().supported(by.clone());
        self.random = self.random.clone().excluded(by.clone());
        self.kept = self.kept.clone().excluded(by);
        self.restored = if own {
            self.restored.clone().excluded(
                "the limit is the process's own (a moved limit moved it, or a second process beside the run left it)",
            )
        } else {
            self.restored.clone().open(
                "a budget outside the process that time restores between runs (each a fresh process) fails at the same count each time: a second process beside the run tells",
            )
        };
        let time = self.time.clone();
        let paused_time = paused.and_then(|c| c.alternatives.iter().find(|a| a.key == "time"));
        let timed = paused.is_some_and(|c| c.settles_on("time"));
        self.time = match paused_time {
            _ if moved => {
                time.excluded("moving a limit moved the failure to the count its line predicts")
            }
            Some(a) if a.is_excluded() => {
                time.excluded("a pause after each buffer left the count where it was")
            }
            Some(_) if timed => {
                time.supported("a pause after each buffer moved the failure to about the same time")
            }
            _ => time.open(
                "a run at a steady speed meets a time limit at a steady count: a pause tells",
            ),
        };
        if timed {
            self.steady = self
                .steady
                .clone()
                .excluded("a pause after each buffer moved the failure to about the same time");
        }
    }

    /// The failures held their time while their counts did not.
    fn time_case(&mut self, at: f64, all: &str) {
        self.time.words = format!("a time limit (after about {})", seconds(at));
        let by = format!(
            "the failures held their time (about {}) while their counts did not ({all})",
            seconds(at)
        );
        self.time = self.time.clone().supported(by.clone());
        for a in [
            &mut self.steady,
            &mut self.random,
            &mut self.kept,
            &mut self.restored,
        ] {
            *a = a.clone().excluded(by.clone());
        }
    }

    /// Counts and times spread: chance; a budget the runs share and time restores
    /// spreads them too, by how long each waited; one used up for good cannot rise.
    fn spread_case(&mut self, r: &Replicates, all: &str) {
        let by = format!("the same case failed at {all} buffers, at different times");
        self.random = self.random.clone().supported(by.clone());
        self.steady = self.steady.clone().excluded(by.clone());
        self.time = self.time.clone().excluded(by);
        self.restored = self.restored.clone().open(
            "a budget shared by the runs and restored with time would spread their counts too",
        );
        self.kept = match rose(r) {
            Some(words) => self.kept.clone().excluded(words),
            None => self
                .kept
                .clone()
                .open("the counts never rose again after falling"),
        };
    }
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

/// The claim a shape question reached, where it was asked.
fn finding(shape: &[ShapeFinding], question: ShapeQuestion) -> Option<&Claim> {
    shape
        .iter()
        .find(|f| f.question == question)?
        .claim
        .as_ref()
}

/// Whether moving a candidate's limit moved the failure as its line predicted.
pub(crate) fn moved(candidates: &[Candidate]) -> bool {
    candidates.iter().any(|c| {
        c.test
            .experiments()
            .first()
            .is_some_and(|e| e.outcome == crate::verdict::ExperimentOutcome::AsPredicted)
    })
}
