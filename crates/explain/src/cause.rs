//! The cause of a failure as a claim: each candidate (a resource at its limit) beside
//! a limit no reading shows, judged by the experiments that moved each limit and by
//! the call that failed inside the failing OpenCL call.
//!
//! Lowering a limit shows that it is *a* limit; only raising it, or the failing call
//! itself, shows it is the one the run met. A candidate whose limit was lowered with
//! effect but could not be raised is left open beside an unseen limit unless the
//! failing call settles it: the errno its exhaustion gives (EMFILE for descriptors)
//! supports it; an observer that saw every call and none failing, or a call failing
//! with another errno while its resource still had room, rules it out.

use crate::claim::{Alternative, Claim, Topic};
use crate::report::Report;
use crate::resource::Resource;
use crate::verdict::{Candidate, CandidateTest, Cause, ExperimentOutcome};
use crate::words::experiment_words;

/// The errnos a call returns when a resource's limit is reached.
pub fn errnos_at_limit(resource: &Resource) -> &'static [&'static str] {
    match resource {
        Resource::OpenFds | Resource::DmabufFds => &["EMFILE", "ENFILE"],
        Resource::MemoryMaps | Resource::VirtualSize | Resource::DataSize => &["ENOMEM"],
        Resource::Threads => &["EAGAIN"],
        Resource::LockedMemory => &["ENOMEM", "EAGAIN", "EPERM"],
        _ => &[],
    }
}

/// The errno of the last call the libc tracer saw failing inside a run's failing
/// call.
pub fn failing_errno(report: &Report) -> Option<String> {
    report
        .traced
        .as_ref()?
        .failing_calls
        .last()
        .map(|c| c.errno_name.clone())
}

/// What the calls inside the failing OpenCL call say, as the cause sees them.
#[derive(Debug, Clone)]
pub(crate) enum CallEvidence {
    /// These calls failed (the last one first), as `call(args) failed with E`.
    Failed { errnos: Vec<String>, words: String },
    /// An observer saw every system call of every thread and none failed.
    NoneFailed,
    /// The libc tracer saw none fail; calls it does not see were not watched.
    NoneSeen,
    /// Nothing was traced.
    NotTraced,
}

impl CallEvidence {
    /// The evidence of a run (with what an observer of its replicate saw, if one ran).
    pub(crate) fn of(report: &Report) -> CallEvidence {
        if let Some(observed) = report
            .analysis
            .observed
            .as_ref()
            .filter(|o| o.watched_failure)
        {
            return match observed.failed_calls.last() {
                Some(last) => CallEvidence::Failed {
                    errnos: observed
                        .failed_calls
                        .iter()
                        .map(|c| c.errno_name.clone())
                        .collect(),
                    words: format!("{} (seen by the system-call observer)", last.summary()),
                },
                None => CallEvidence::NoneFailed,
            };
        }
        match report.traced.as_ref() {
            None => CallEvidence::NotTraced,
            Some(t) => match t.failing_calls.last() {
                Some(last) => CallEvidence::Failed {
                    errnos: t
                        .failing_calls
                        .iter()
                        .map(|c| c.errno_name.clone())
                        .collect(),
                    words: last.summary(),
                },
                None => CallEvidence::NoneSeen,
            },
        }
    }

    /// Whether a call failed with an errno `resource` at its limit gives.
    fn agrees(&self, resource: &Resource) -> Option<&str> {
        let CallEvidence::Failed { errnos, words } = self else {
            return None;
        };
        let expected = errnos_at_limit(resource);
        errnos
            .iter()
            .any(|e| expected.contains(&e.as_str()))
            .then_some(words.as_str())
    }

    /// Why `resource` was not what failed, when the calls say so: nothing failed and
    /// something saw every call, or calls failed with other errnos only.
    fn against(&self, resource: &Resource) -> Option<String> {
        let expected = errnos_at_limit(resource);
        if expected.is_empty() {
            return None;
        }
        match self {
            CallEvidence::NoneFailed => Some(format!(
                "no system call failed inside the failing call (an observer watched every call of every thread), while {} at its limit fails one with {}",
                resource.label(),
                expected.join(" or ")
            )),
            CallEvidence::Failed { errnos, words }
                if !errnos.iter().any(|e| expected.contains(&e.as_str())) =>
            {
                Some(format!(
                    "the call that failed ({words}) is not what {} at its limit gives ({})",
                    resource.label(),
                    expected.join(" or ")
                ))
            }
            _ => None,
        }
    }
}

/// The key of a resource in a cause claim: `resource:open_fds`.
pub fn resource_key(resource: &Resource) -> String {
    let tag = serde_json::to_value(resource)
        .ok()
        .and_then(|v| {
            v.get("resource")
                .and_then(|r| r.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| resource.label());
    format!("resource:{tag}")
}

/// The key of the cause no reading shows.
pub const UNSEEN: &str = "unmeasured";

/// What a cause claim is inferred from, as far as it ran: the readings always; the
/// experiments on the limits where any ran; the failing call where one failed; the
/// calls inside it where they were traced or observed.
pub(crate) fn cause_basis(report: &Report, candidates: &[Candidate]) -> String {
    let mut parts = vec!["the readings at the failure"];
    if candidates.iter().any(|c| !c.test.experiments().is_empty()) {
        parts.push("the experiments on the limits");
    }
    if matches!(report.stop, crate::StopReason::Failed { .. }) {
        parts.push("the failing call");
    }
    if !matches!(CallEvidence::of(report), CallEvidence::NotTraced) {
        parts.push("the calls inside it");
    }
    match parts.as_slice() {
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => String::new(),
    }
}

/// The cause of a failed run as a claim: every candidate, and a limit no reading
/// shows, each judged by its experiments and the failing call.
pub(crate) fn cause_claim(report: &Report, candidates: &[Candidate]) -> Claim {
    let calls = CallEvidence::of(report);
    let mut alternatives: Vec<Alternative> = candidates
        .iter()
        .map(|c| candidate_alternative(c, &calls))
        .collect();
    let unseen = unseen_alternative(&alternatives, candidates, &calls);
    alternatives.push(unseen);
    Claim::new(
        Topic::Cause,
        format!("what stopped the run at {} buffers", report.buffers),
        alternatives,
    )
}

/// One candidate, judged.
fn candidate_alternative(c: &Candidate, calls: &CallEvidence) -> Alternative {
    let label = c.resource.label();
    let a = Alternative::new(
        resource_key(&c.resource),
        format!("{label} at {}", c.limit.name),
    );
    let runs = || {
        c.test
            .experiments()
            .iter()
            .map(experiment_words)
            .collect::<Vec<_>>()
            .join("; ")
    };
    let agrees = calls.agrees(&c.resource);
    let against = calls.against(&c.resource);
    match &c.test {
        CandidateTest::Confirmed { .. } => a.supported(format!(
            "lowering the limit moved the failure down as its line predicts and raising it let the run go further: {}",
            runs()
        )),
        CandidateTest::Refuted { .. } => a.excluded(format!(
            "moving the limit left the failure where it was: {}",
            runs()
        )),
        _ if against.is_some() => {
            let why = against.unwrap_or_default();
            let lowered = c.test.experiments().first().is_some_and(|e| {
                e.outcome == ExperimentOutcome::AsPredicted
            });
            a.excluded(if lowered {
                format!("{why}; lowering it did move the failure ({}): a limit behind the one met", runs())
            } else {
                why
            })
        }
        CandidateTest::Consistent { why, .. } => match agrees {
            Some(call) => a.supported(format!(
                "lowering the limit moved the failure as its line predicts and the failing call ({call}) is what it gives; raising it could not be tried ({why}): {}",
                runs()
            )),
            None => a.open(format!(
                "lowering the limit moved the failure as predicted, but raising it could not be tried ({why}) and no failing call shows it was met"
            )),
        },
        CandidateTest::Inconclusive { experiments } => {
            let at_once = experiments
                .iter()
                .any(|e| e.outcome == ExperimentOutcome::FailedAtOnce);
            a.open(if at_once {
                format!("moving the limit made the run fail at once: the runtime uses its value some other way ({})", runs())
            } else {
                format!("moving the limit moved the failure, but not as its line predicts ({})", runs())
            })
        }
        CandidateTest::NotTested { reason, .. } => match agrees {
            Some(call) => a.supported(format!(
                "its reading was at the limit and the failing call ({call}) is what it gives; not moved: {reason}"
            )),
            None => a.open(format!("not moved: {reason}")),
        },
        CandidateTest::Pending => match agrees {
            Some(call) => a.supported(format!(
                "its reading was at the limit and the failing call ({call}) is what it gives; not moved yet"
            )),
            None => a.open("its reading was at the limit; not moved yet"),
        },
    }
}

/// A limit no reading shows: ruled out by a confirmed candidate or one the failing
/// call names; supported when no candidate is left.
fn unseen_alternative(
    judged: &[Alternative],
    candidates: &[Candidate],
    calls: &CallEvidence,
) -> Alternative {
    let a = Alternative::new(
        UNSEEN,
        "not explained by what was measured: a limit no reading shows (the runtime's own, a layer's, or one outside the process)",
    );
    let confirmed = candidates
        .iter()
        .find(|c| matches!(c.test, CandidateTest::Confirmed { .. }));
    if let Some(c) = confirmed {
        return a.excluded(format!(
            "moving {} moved the failure both ways",
            c.limit.name
        ));
    }
    let named = candidates
        .iter()
        .zip(judged)
        .find(|(c, alt)| !alt.is_excluded() && calls.agrees(&c.resource).is_some());
    if let Some((c, _)) = named {
        return a.excluded(format!(
            "the failing call is what {} at {} gives",
            c.resource.label(),
            c.limit.name
        ));
    }
    if judged.iter().all(Alternative::is_excluded) {
        return a.supported(if candidates.is_empty() {
            "no measured resource was at its limit".to_owned()
        } else {
            "every resource at its limit was ruled out".to_owned()
        });
    }
    a.open("only moving the limits above would tell")
}

/// The [`Cause`] the claim supports: a confirmed candidate; one the failing call
/// settles where its limit could only be lowered (one-sided); candidates still open;
/// or none explains it.
pub(crate) fn cause_from(
    claim: &Claim,
    candidates: &[Candidate],
    unmeasured: Vec<String>,
) -> Cause {
    let settled = claim.settled().and_then(|a| {
        candidates
            .iter()
            .find(|c| resource_key(&c.resource) == a.key)
    });
    if let Some(c) = settled {
        return match &c.test {
            CandidateTest::Confirmed { .. } => Cause::Resource {
                resource: c.resource.clone(),
                limit: c.limit.clone(),
                reading: c.reading,
                per_buffer: c.per_buffer,
                predicted_count: c.predicted_count,
                observed_count: c.observed_count,
            },
            CandidateTest::Consistent { why, .. } => Cause::OneSided {
                resource: c.resource.clone(),
                limit: c.limit.clone(),
                why: why.clone(),
            },
            _ => Cause::Untested {
                resources: vec![c.resource.clone()],
            },
        };
    }
    let open: Vec<Resource> = candidates
        .iter()
        .filter(|c| claim.leaves(&resource_key(&c.resource)))
        .map(|c| c.resource.clone())
        .collect();
    if open.is_empty() {
        Cause::NotExplained { unmeasured }
    } else {
        Cause::Untested { resources: open }
    }
}

/// The errno of the run's failing call, when it is one a call gets with `resource`
/// at its limit.
pub fn failing_errno_of<'a>(resource: &Resource, run: &'a Report) -> Option<&'a str> {
    let call = run.traced.as_ref()?.failing_calls.last()?;
    errnos_at_limit(resource)
        .contains(&call.errno_name.as_str())
        .then_some(call.errno_name.as_str())
}

/// Whether the call that failed inside the shared run agrees with the cause its
/// readings name: the errno that limit gives, or not (both are then shown).
pub fn call_agrees(resource: &Resource, run: &Report) -> Option<crate::verdict::Statement> {
    use crate::verdict::Statement;
    let call = run.traced.as_ref()?.failing_calls.last()?;
    let expected = errnos_at_limit(resource);
    if expected.is_empty() {
        return None;
    }
    let basis = format!("the failing call and the {} readings", resource.label());
    Some(if expected.contains(&call.errno_name.as_str()) {
        Statement::inferred(
            basis,
            format!(
                "the failing call agrees with the readings: {} is what a call gets when {} is at its limit",
                call.errno_name,
                resource.label()
            ),
        )
    } else {
        Statement::inferred(
            basis,
            format!(
                "the failing call does not agree with the readings: {} failed with {}, while {} at its limit gives {}: one of them is not the cause; both are shown",
                call.call,
                call.errno_name,
                resource.label(),
                expected.join(" or ")
            ),
        )
    })
}

/// What failed inside the OpenCL call that stopped a run: the call the libc tracer or
/// the system-call observer saw fail ("clCreateBuffer returned CL_OUT_OF_HOST_MEMORY
/// (-6) after ioctl(3, DRM_IOCTL_PRIME_HANDLE_TO_FD) failed with EMFILE"), or, when
/// none was seen, a claim: the runtime refused by itself only when an observer saw
/// every call and none failed.
pub fn failing_call_statement(
    report: &Report,
    shape: &[crate::verdict::ShapeFinding],
) -> Option<crate::verdict::Statement> {
    let crate::StopReason::Failed { error, call, .. } = &report.stop else {
        return None;
    };
    let returned = format!("{} returned {error}", call.c_name());
    let observed = report
        .analysis
        .observed
        .as_ref()
        .filter(|o| o.watched_failure);
    let traced = report.traced.as_ref();
    if let Some(t) = traced.filter(|t| !t.failing_calls.is_empty()) {
        return Some(traced_statement(&returned, &t.failing_calls));
    }
    if let Some(o) = observed.filter(|o| !o.failed_calls.is_empty()) {
        return Some(observed_statement(
            &returned,
            &o.failed_calls,
            traced.is_some(),
        ));
    }
    if traced.is_none() && observed.is_none() {
        return None;
    }
    let watched = observed.map(|o| (o, other_failure(report, o, shape)));
    Some(refused_claim(&returned, watched))
}

/// Why the watched replicate may not have met this run's failure (`None`: it did).
/// The same count is not enough: the observer slows every call, so a limit that
/// follows time stops the replicate elsewhere, or at about the same count by another
/// limit behind it. Same count and either the same pace or a limit the pause showed
/// to count, not time, carry its finding over.
fn other_failure(
    report: &Report,
    observed: &crate::verdict::ObservedRun,
    shape: &[crate::verdict::ShapeFinding],
) -> Option<String> {
    if observed.count.abs_diff(report.buffers) > (report.buffers / 20).max(2) {
        return Some(format!(
            "the watched replicate failed at {} buffers, this run at {}: another failure",
            observed.count, report.buffers
        ));
    }
    let counts = shape
        .iter()
        .any(|f| f.question == crate::verdict::ShapeQuestion::TimeOrCount && f.settles_on("count"));
    let same_pace = observed.seconds > 0.0 && observed.seconds <= report.elapsed_seconds * 1.25;
    if counts || same_pace {
        return None;
    }
    Some(format!(
        "the watched replicate failed at {} buffers in {:.2} s, this run at {} in {:.2} s (the observer slows every call), and no experiment showed that the limit counts rather than follows time: the replicate may have met another limit",
        observed.count, observed.seconds, report.buffers, report.elapsed_seconds
    ))
}

/// What the libc tracer saw fail: the last call, where, and the first when several.
fn traced_statement(
    returned: &str,
    calls: &[clmulti_probe::trace::TracedCall],
) -> crate::verdict::Statement {
    let last = calls.last().expect("a failing call");
    let earlier = match calls.len() {
        1 => String::new(),
        n => format!(
            " ({n} calls failed inside it; the first: {})",
            calls[0].summary()
        ),
    };
    let in_layer = last
        .stack
        .first()
        .is_some_and(|f| f.module == clmulti_contract::LAYER.file_name);
    let layer = if in_layer {
        " (inside clmulti's emulation layer: the policy it emulates made the call)"
    } else {
        ""
    };
    crate::verdict::Statement::measured(format!("{returned} after {}{layer}", last.summary()))
        .with_detail(format!(
            "in {}{earlier}; traced by clmulti-trace, which sees {}",
            last.where_(4),
            clmulti_probe::trace::UNSEEN
        ))
}

/// What a system-call observer saw fail that the libc tracer did not (`traced`: the
/// tracer was loaded in the run, and saw none fail).
fn observed_statement(
    returned: &str,
    calls: &[clmulti_probe::trace::TracedCall],
    traced: bool,
) -> crate::verdict::Statement {
    let last = calls.last().expect("a failing call");
    let tracer = if traced {
        "the libc tracer saw no call fail inside it, but "
    } else {
        "the libc tracer was not loaded in this run; "
    };
    crate::verdict::Statement::measured(format!(
        "{returned}; {tracer}a system-call observer (strace) watching a replicate saw {}",
        last.summary(),
    ))
    .with_detail(format!(
        "in {}{}",
        if last.stack.is_empty() {
            format!("thread {}", last.thread)
        } else {
            last.where_(4)
        },
        match calls.len() {
            1 => String::new(),
            n => format!(
                " ({n} calls failed inside it; the first: {})",
                calls[0].summary()
            ),
        }
    ))
}

/// No call seen failing: the runtime refused by itself, or a call the libc tracer
/// does not see failed; only an observer of every call tells them apart.
fn refused_claim(
    returned: &str,
    watched: Option<(&crate::verdict::ObservedRun, Option<String>)>,
) -> crate::verdict::Statement {
    let mut refused = Alternative::new(
        "none",
        "no system call failed: the runtime refused by itself",
    );
    let mut unseen = Alternative::new(
        "unseen",
        "a call the libc tracer does not see failed (a raw syscall, a libc function it does not hook, a call inside libc)",
    );
    match watched {
        Some((_, Some(why))) => {
            refused = refused.open(why.clone());
            unseen = unseen.open(why);
        }
        Some((o, None)) => {
            let by = format!(
                "a system-call observer (strace) watched every call of every thread in a replicate that failed at {}, and none failed inside the failing call",
                o.count
            );
            refused = refused.supported(by.clone());
            unseen = unseen.excluded(by);
        }
        None => {
            let why = format!(
                "clmulti-trace saw none fail, and it sees {}; no system-call observer watched this failure",
                clmulti_probe::trace::UNSEEN
            );
            refused = refused.open(why.clone());
            unseen = unseen.open(why);
        }
    }
    crate::verdict::Statement::claim(
        "the calls traced inside the failing call",
        &format!("{returned}: "),
        Claim::new(Topic::FailingCall, "inside it", vec![refused, unseen]),
    )
}
