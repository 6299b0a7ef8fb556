//! The shape of a limit no reading explains, each question a claim over the
//! alternatives its experiments can tell apart, and no further: time, a count or a
//! budget time restores ([`time`]); buffers, bytes or bytes in granules ([`unit`]);
//! given back at once, later or never ([`lifetime`]); shared by a context, the process,
//! the user, a cgroup or the system ([`scope`]); and how it depends on the devices
//! ([`peers`]). Time is asked first: a failure that follows time answers every other
//! question wrongly, so they are not asked.

mod lifetime;
mod peers;
mod scope;
mod time;
mod unit;

pub use peers::per_peer;

use super::{failing_count, judge, Noise, Runner, Trial};
use crate::claim::{Alternative, Claim};
use crate::report::Report;
use crate::verdict::{Change, Experiment, Knob, ShapeFinding, ShapeQuestion};

/// The shape questions, each run as the failing case with things moved.
pub fn shape(report: &Report, runner: &mut dyn Runner, noise: Noise) -> Vec<ShapeFinding> {
    let mut findings = vec![time::ask(report, runner, noise)];
    if findings[0].settles_on("time") {
        for question in [
            ShapeQuestion::CountOrBytes,
            ShapeQuestion::LiveOrCumulative,
            ShapeQuestion::PerContextOrProcess,
            ShapeQuestion::PerPeer,
        ] {
            findings.push(unasked(question, "the failure follows time, not buffers"));
        }
        return findings;
    }
    let rate = findings[0].claim.clone();
    findings.push(unit::ask(report, runner, noise));
    findings.push(lifetime::ask(report, runner, noise, rate.as_ref()));
    findings.push(scope::ask(report, runner, noise));
    findings.push(peers::ask(report, runner, noise));
    findings
}

fn unasked(question: ShapeQuestion, why: &str) -> ShapeFinding {
    ShapeFinding {
        question,
        claim: None,
        experiments: Vec::new(),
        not_tested: Some(why.to_owned()),
    }
}

/// One shape re-run: its experiment and, when it ran, its report.
struct Ran {
    experiment: Experiment,
    report: Option<Report>,
}

impl Ran {
    /// Where it failed (or what it reached without failing), when it ran and says
    /// something of the limit under study: `None` when it did not run, or failed at
    /// another limit its own readings show (that limit answers, not this one).
    fn count(&self, before: u64, noise: Noise) -> Option<Reached> {
        let r = self.report.as_ref()?;
        match failing_count(r) {
            Ok(n) if self.experiment.met.is_some() && !noise.same(n, before) => None,
            Ok(n) => Some(Reached::Failed(n)),
            Err(_) if matches!(r.stop, crate::StopReason::Completed) => {
                Some(Reached::Completed(r.buffers))
            }
            Err(_) => None,
        }
    }
}

/// Where a shape run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reached {
    /// It failed after this many buffers.
    Failed(u64),
    /// It completed this many without failing.
    Completed(u64),
}

impl Reached {
    fn buffers(self) -> u64 {
        match self {
            Reached::Failed(n) | Reached::Completed(n) => n,
        }
    }

    /// Whether a model predicting a failure at `predicted` fits: a failure near it, or
    /// a run that completed short of it.
    fn fits(self, predicted: f64, noise: Noise) -> bool {
        let p = predicted.max(0.0).round() as u64;
        match self {
            Reached::Failed(n) => super::near(n, p, noise),
            Reached::Completed(n) => p + noise.slack() >= n,
        }
    }

    fn words(self) -> String {
        match self {
            Reached::Failed(n) => format!("failed at {n}"),
            Reached::Completed(n) => format!("completed {n} without failing"),
        }
    }
}

/// Runs one changed case (with `also` changes beside it) and judges it against the
/// failing count.
fn run(
    report: &Report,
    runner: &mut dyn Runner,
    noise: Noise,
    change: Change,
    also: &[Change],
    asked: u64,
) -> Ran {
    let trial = Trial {
        change,
        asked,
        predicted: None,
    };
    let mut changes = vec![trial.change.clone()];
    changes.extend_from_slice(also);
    let outcome = runner.run(&changes, asked);
    let experiment = judge(&trial, report.buffers, noise, outcome.as_ref());
    Ran {
        experiment,
        report: outcome.ok(),
    }
}

fn change(knob: Knob, from: u64, to: u64) -> Change {
    Change { knob, from, to }
}

/// A finding whose re-run gave no count to judge: every alternative left open, and
/// why (it met another limit its readings show, or did not run).
fn no_answer(
    question: ShapeQuestion,
    subject: &str,
    alternatives: Vec<Alternative>,
    runs: &[Ran],
) -> ShapeFinding {
    let why = runs
        .iter()
        .find_map(|r| {
            r.experiment
                .met
                .as_ref()
                .map(|m| format!("the re-run met {} first, a limit of its own", m.words()))
        })
        .unwrap_or_else(|| {
            runs.last().map_or("no re-run was made".into(), |r| {
                format!("the re-run {}", r.experiment.stop)
            })
        });
    let alternatives = alternatives
        .into_iter()
        .map(|a| a.open(why.clone()))
        .collect();
    ShapeFinding {
        question,
        claim: Some(Claim::new(question.topic(), subject, alternatives)),
        experiments: runs.iter().map(|r| r.experiment.clone()).collect(),
        not_tested: None,
    }
}

fn finding(question: ShapeQuestion, claim: Claim, runs: &[Ran]) -> ShapeFinding {
    ShapeFinding {
        question,
        claim: Some(claim),
        experiments: runs.iter().map(|r| r.experiment.clone()).collect(),
        not_tested: None,
    }
}
