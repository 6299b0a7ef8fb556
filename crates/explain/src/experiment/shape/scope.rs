//! Who shares the limit: two shared contexts in one process (per context, or more);
//! then a second process holding half the buffers while the run goes (per process, or
//! shared with it); then that process as another user (per user), then outside the
//! run's cgroups (per cgroup, or the whole system). Each step is run only while the
//! one before left more than one answer.

use super::{change, finding, no_answer, run, Noise, Ran, Reached, Runner};
use crate::claim::{Alternative, Claim};
use crate::report::Report;
use crate::verdict::{Knob, Place, ShapeFinding, ShapeQuestion};
use clmulti_scenario::ContextMode;

const SUBJECT: &str = "who shares the limit";

fn alternatives() -> Vec<Alternative> {
    vec![
        Alternative::new("context", "each context has its own"),
        Alternative::new("process", "the process"),
        Alternative::new("user", "every process of the user"),
        Alternative::new("cgroup", "every process of the cgroup"),
        Alternative::new("system", "every process on the machine"),
    ]
}

/// Rules out the alternatives `out` names, keeping the rest.
fn exclude(alternatives: &mut [Alternative], out: &[&str], by: &str) {
    for a in alternatives
        .iter_mut()
        .filter(|a| out.contains(&a.key.as_str()))
    {
        *a = a.clone().excluded(by);
    }
}

fn support(alternatives: &mut [Alternative], key: &str, by: &str) {
    for a in alternatives.iter_mut().filter(|a| a.key == key) {
        *a = a.clone().supported(by);
    }
}

/// Where a re-run's failure fits `expected` buffers.
fn near(r: Reached, expected: u64, noise: Noise) -> bool {
    matches!(r, Reached::Failed(m) if super::super::near(m, expected, noise))
}

pub(super) fn ask(report: &Report, runner: &mut dyn Runner, noise: Noise) -> ShapeFinding {
    let q = ShapeQuestion::PerContextOrProcess;
    let n = report.buffers;
    let mut alternatives = alternatives();
    let mut runs: Vec<Ran> = Vec::new();
    if report.scenario.context_mode == ContextMode::Shared {
        let c = report.scenario.context_count;
        let two = change(Knob::Contexts, c, c * 2);
        let ran = run(
            report,
            runner,
            noise,
            two,
            &[],
            super::super::allowance(2 * n),
        );
        let reached = ran.count(n, noise);
        runs.push(ran);
        let said = |r: Reached| format!("{} shared contexts in one process: {}", c * 2, r.words());
        match reached {
            Some(r) if near(r, 2 * n, noise) => {
                support(&mut alternatives, "context", &said(r));
                exclude(
                    &mut alternatives,
                    &["process", "user", "cgroup", "system"],
                    &said(r),
                );
                return finding(q, Claim::new(q.topic(), SUBJECT, alternatives), &runs);
            }
            Some(r) if near(r, n, noise) => exclude(&mut alternatives, &["context"], &said(r)),
            _ => return no_answer(q, SUBJECT, alternatives, &runs),
        }
    }
    beside(report, runner, noise, &mut alternatives, &mut runs);
    finding(q, Claim::new(q.topic(), SUBJECT, alternatives), &runs)
}

/// A second process holding half as many buffers of the same case while the run goes
/// (a limit it shares fails the run about that many buffers sooner): as the same user,
/// as another, outside the run's cgroups, each while the one before left a choice.
fn beside(
    report: &Report,
    runner: &mut dyn Runner,
    noise: Noise,
    alternatives: &mut [Alternative],
    runs: &mut Vec<Ran>,
) {
    let n = report.buffers;
    let held = n / 2;
    if held < 2 * noise.slack().max(1) {
        return;
    }
    let steps: [(Place, &str, &[&str], &[&str]); 3] = [
        (
            Place::Beside,
            "process",
            &["user", "cgroup", "system"],
            &["process"],
        ),
        (Place::OtherUser, "user", &["cgroup", "system"], &["user"]),
        (Place::OtherCgroup, "cgroup", &["system"], &["cgroup"]),
    ];
    for (place, alone_key, if_alone_out, if_shared_out) in steps {
        let second = change(Knob::Sibling { place }, 0, held);
        let ran = run(
            report,
            runner,
            noise,
            second,
            &[],
            super::super::allowance(n),
        );
        let reached = ran.count(n, noise);
        let stop = ran.experiment.stop.clone();
        runs.push(ran);
        let said = |r: Reached| {
            format!(
                "with a second process {} holding {held} buffers: {}",
                place.words(),
                r.words()
            )
        };
        match reached {
            Some(r) if near(r, n, noise) => {
                support(alternatives, alone_key, &said(r));
                exclude(alternatives, if_alone_out, &said(r));
                return;
            }
            Some(r) if near(r, n - held, noise) => {
                exclude(alternatives, if_shared_out, &said(r));
                if place == Place::OtherCgroup {
                    support(alternatives, "system", &said(r));
                }
            }
            // Could not run that way (not root, no cgroup to leave), or an answer
            // that fits neither: what is left stays open.
            _ => {
                for a in alternatives.iter_mut().filter(|a| !a.is_excluded()) {
                    *a = a.clone().open(format!(
                        "the run beside a second process {}: {stop}",
                        place.words()
                    ));
                }
                return;
            }
        }
    }
}
