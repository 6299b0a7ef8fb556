//! The answer a diagnosis opens with, in at most three lines, each computed from the
//! runs on its page: what was compared (the cases and strategies that ran, and what a
//! stop left out), what sharing a context costs per buffer (only for strategies where
//! both a shared and a per-device run ran), and the finding (a failure with its cause
//! and the fix that worked; a run stopped some other way; a slow shared context; what
//! stayed after release; or that nothing failed, with the limit ahead).

use crate::claim::{Claim, Topic};
use crate::diagnosis::{Diagnosis, Outcome, Role, RunBrief};
use crate::StopKind;
use clmulti_scenario::Strategy;

/// A shared context this many times slower per buffer than one device is slow.
const SLOW: f64 = 10.0;

impl Diagnosis {
    /// The answer in at most three lines, before everything else.
    pub fn answer(&self) -> Vec<String> {
        if self.runs.is_empty() {
            return vec!["Nothing ran.".into()];
        }
        let mut lines = vec![self.compared_line()];
        lines.extend(self.sharing_line());
        lines.push(self.finding_line());
        lines
    }

    /// The strategies that ran, in the order they ran.
    fn strategies_run(&self) -> Vec<Strategy> {
        let mut out: Vec<Strategy> = Vec::new();
        for r in &self.runs {
            if !out.contains(&r.strategy) {
                out.push(r.strategy);
            }
        }
        out
    }

    fn run_of(&self, role: Role, strategy: Strategy) -> Option<&RunBrief> {
        self.runs
            .iter()
            .find(|r| r.role == role && r.strategy == strategy)
    }

    fn compared_line(&self) -> String {
        let n = self.devices.len().max(2);
        let has = |role: Role| self.runs.iter().any(|r| r.role == role);
        let cases: Vec<String> = [
            (Role::OneDevice, "1 device".to_owned()),
            (Role::Shared, format!("{n} devices in one shared context")),
            (Role::PerDevice, format!("{n} with one context each")),
        ]
        .into_iter()
        .filter(|(role, _)| has(*role))
        .map(|(_, words)| words)
        .collect();
        let strategies: Vec<&str> = self.strategies_run().iter().map(|s| s.name()).collect();
        let stopped = self
            .stopped
            .as_ref()
            .map_or(String::new(), |s| format!(" Stopped part way: {s}."));
        format!(
            "Compared: {} ({}; each run in a fresh process).{stopped}",
            cases.join(", "),
            strategies.join(" and ")
        )
    }

    /// What sharing adds per buffer, strategy by strategy, where both a shared and a
    /// per-device run of that strategy ran.
    fn sharing_line(&self) -> Option<String> {
        let compared: Vec<Strategy> = self
            .strategies_run()
            .into_iter()
            .filter(|s| {
                self.run_of(Role::Shared, *s).is_some()
                    && self.run_of(Role::PerDevice, *s).is_some()
            })
            .collect();
        if compared.is_empty() {
            return None;
        }
        let mut adds = Vec::new();
        let mut none = Vec::new();
        for strategy in &compared {
            let extras: Vec<String> = self
                .sharing_costs
                .iter()
                .filter(|c| c.measurable && c.strategy == *strategy)
                .filter_map(|c| {
                    let e = c.extra?;
                    let sign = if e >= 0.0 { "+" } else { "-" };
                    Some(format!(
                        "{} {sign}{}",
                        c.label(),
                        c.resource.unit().format(e.abs())
                    ))
                })
                .take(3)
                .collect();
            if extras.is_empty() {
                none.push(strategy.name());
            } else {
                adds.push(format!("{} ({})", extras.join(", "), strategy.name()));
            }
        }
        let mut parts = Vec::new();
        if !adds.is_empty() {
            parts.push(format!(
                "Sharing a context adds per buffer: {}",
                adds.join("; ")
            ));
        }
        if !none.is_empty() {
            parts.push(format!(
                "{} no measurable cost per buffer ({})",
                if adds.is_empty() {
                    "Sharing a context adds"
                } else {
                    "and"
                },
                none.join(", ")
            ));
        }
        Some(format!("{}.", parts.join(" ")))
    }

    /// The finding: what failed and why, or what else the runs show first.
    fn finding_line(&self) -> String {
        let shared: Vec<&RunBrief> = self
            .runs
            .iter()
            .filter(|r| r.role == Role::Shared)
            .collect();
        if let Some(r) = shared.iter().find(|r| r.outcome == StopKind::Failed) {
            return self.failure_line(r);
        }
        if let Some(r) = shared
            .iter()
            .find(|r| r.outcome.ended_early() && r.outcome != StopKind::Interrupted)
        {
            return format!(
                "The shared context ({}) {}{}.",
                r.strategy.name(),
                r.headline,
                self.slow_words(r)
            );
        }
        if let Some(leak) = self.leak_words() {
            return leak;
        }
        if let Some(r) = shared.iter().find(|r| !self.slow_words(r).is_empty()) {
            return format!(
                "No shared context {}failed, but the shared context ({}) is slow{}{}.",
                self.among_compared(),
                r.strategy.name(),
                self.slow_words(r),
                self.uncompared_words()
            );
        }
        let ran: Vec<&str> = shared.iter().map(|r| r.strategy.name()).collect();
        if ran.is_empty() {
            return format!("No shared context ran{}.", self.uncompared_words());
        }
        match &self.limit_ahead {
            Some(ahead) => format!(
                "No shared context {}failed ({}); by its growth it heads for {ahead}{}.",
                self.among_compared(),
                ran.join(", "),
                self.uncompared_words()
            ),
            None => format!(
                "No shared context {}failed ({}){}.",
                self.among_compared(),
                ran.join(", "),
                self.uncompared_words()
            ),
        }
    }

    /// "of those compared " when the page holds runs the comparison leaves out that
    /// did not complete.
    fn among_compared(&self) -> &'static str {
        if self.uncompared.is_empty() {
            ""
        } else {
            "of those compared "
        }
    }

    /// `; not compared: big: FAILED after 278 buffers ...`, the runs the comparison
    /// leaves out that did not complete (the first two, and a count).
    fn uncompared_words(&self) -> String {
        match self.uncompared.len() {
            0 => String::new(),
            n @ 1..=2 => format!(
                "; not compared, and did not complete: {}",
                self.uncompared[..n].join("; ")
            ),
            n => format!(
                "; not compared, and did not complete: {} and {} more",
                self.uncompared[..2].join("; "),
                n - 2
            ),
        }
    }

    fn failure_line(&self, r: &RunBrief) -> String {
        let investigated = self
            .investigation
            .as_ref()
            .filter(|i| i.run_name == r.run_name);
        let cause = investigated
            .and_then(|i| i.reproduction.as_ref().filter(|c| !c.leaves("steady")))
            .or_else(|| investigated.and_then(|i| i.cause.as_ref()))
            .map_or_else(String::new, |c| format!("; {}", short(c)));
        let worked = self.fixes.iter().find_map(|f| match f.outcome {
            Outcome::Worked { .. } => Some(f.fix.label()),
            _ => None,
        });
        let fix = match worked {
            Some(f) => format!("; a fix that worked: {f}"),
            None if self
                .fixes
                .iter()
                .any(|f| !matches!(f.outcome, Outcome::Untested { .. })) =>
            {
                "; no fix tried here worked".into()
            }
            None => String::new(),
        };
        format!(
            "The shared context ({}) FAILED after {} buffers{}{cause}{fix}.",
            r.strategy.name(),
            r.buffers,
            failure_call(&r.headline)
        )
    }

    /// `: 3.1 ms per buffer against 2 us with one device`, when the shared run took
    /// [`SLOW`] times as long per buffer as the one-device run of its strategy.
    fn slow_words(&self, shared: &RunBrief) -> String {
        let Some(one) = self.run_of(Role::OneDevice, shared.strategy) else {
            return String::new();
        };
        let per = |r: &RunBrief| (r.buffers > 0).then(|| r.seconds / r.buffers as f64);
        match (per(shared), per(one)) {
            (Some(s), Some(o)) if o > 0.0 && s >= SLOW * o && s >= 1e-4 => format!(
                ": {} per buffer against {} with one device ({:.0}x)",
                crate::words::seconds(s),
                crate::words::seconds(o),
                s / o
            ),
            _ => String::new(),
        }
    }

    /// What stayed after release, when rounds found a shared run's memory growing.
    fn leak_words(&self) -> Option<String> {
        let claim = self
            .verdict
            .iter()
            .filter_map(|s| s.claim.as_ref())
            .filter(|c| c.topic == Topic::Kept && c.subject.starts_with("shared"))
            .find(|c| {
                c.alternatives.iter().any(|a| {
                    a.key == "leak" && matches!(a.judged, crate::claim::Judged::Supported { .. })
                })
            })?;
        Some(format!(
            "No shared context {}failed, but memory stayed after release ({}){}.",
            self.among_compared(),
            claim.sentence(),
            self.uncompared_words()
        ))
    }
}

/// `: CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer` from a run's headline.
fn failure_call(headline: &str) -> String {
    headline
        .split_once(": ")
        .map(|(_, rest)| rest.split(';').next().unwrap_or(rest))
        .map_or(String::new(), |c| format!(": {c}"))
}

/// A claim as the answer says it: what is left, without the subject.
fn short(claim: &Claim) -> String {
    let sentence = claim.sentence();
    // One alternative left that no run supported (the experiments not run): a
    // candidate, not a cause.
    let untested = matches!(
        claim.remaining().as_slice(),
        [one] if matches!(one.judged, crate::claim::Judged::Open { .. })
    );
    let called = if untested {
        "a candidate cause, not tested"
    } else {
        "the cause"
    };
    match claim.topic {
        Topic::Cause => sentence
            .split_once(": ")
            .map_or(sentence.clone(), |(_, rest)| format!("{called}: {rest}")),
        _ => sentence,
    }
}
