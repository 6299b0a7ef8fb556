//! Building a [`Diagnosis`] from the matrix's runs, the experiments on the failing
//! shared case, and the fixes' runs.

mod known;
mod release;
mod time;

use cause::{no_failure, shared_cause};
use known::{known, seen_in};
use release::{release_findings, release_statement};
use time::time_across_strategies;
mod cause;

use super::{
    cost_of, differs, failed, Diagnosis, Fix, FixOutcome, Investigation, KernelCounts, LoggedCase,
    Outcome, Placed, Role, RunBrief, SharingCost, DIAGNOSIS_SCHEMA_VERSION,
};
use crate::report::{Report, StopKind, StopReason};
use crate::resource::Resource;
use crate::verdict::{Basis, Cause, Statement};
use crate::words;
use clmulti_scenario::Strategy;

/// The strategies in the order the verdict lists them.
const STRATEGIES: [Strategy; 5] = [
    Strategy::Create,
    Strategy::Fill,
    Strategy::Migrate,
    Strategy::Pin,
    Strategy::Pool,
];

/// The matrix's runs, looked up by case and strategy.
struct Matrix<'r> {
    runs: &'r [Placed<'r>],
}

impl<'r> Matrix<'r> {
    fn pick(&self, role: Role, strategy: Strategy) -> Option<&'r Report> {
        self.runs
            .iter()
            .find(|p| p.role == role && p.report.scenario.allocation.strategy == strategy)
            .map(|p| p.report)
    }

    /// The seed's own case (create) speaks for the shared context when it ran.
    fn shared(&self) -> Option<&'r Report> {
        self.pick(Role::Shared, Strategy::Create).or_else(|| {
            self.runs
                .iter()
                .find(|p| p.role == Role::Shared)
                .map(|p| p.report)
        })
    }

    fn strategies(&self) -> Vec<Strategy> {
        STRATEGIES
            .into_iter()
            .filter(|s| {
                self.runs
                    .iter()
                    .any(|p| p.report.scenario.allocation.strategy == *s)
            })
            .collect()
    }
}

impl Diagnosis {
    /// Builds the diagnosis from the matrix's runs (the failing shared case carrying
    /// its experiments in its analysis, when they ran) and the fixes' runs (`Err`:
    /// not run, with the reason).
    pub fn new(runs: &[Placed<'_>], fixes: &[(Fix, Result<&Report, String>)]) -> Self {
        let matrix = Matrix { runs };
        let shared_any = matrix.shared();
        let platform = shared_any
            .or_else(|| runs.first().map(|p| p.report))
            .map_or_else(String::new, |r| r.platform.clone());
        let devices = shared_any
            .or_else(|| runs.first().map(|p| p.report))
            .map_or_else(Vec::new, |r| r.devices.clone());
        let n = devices.len().max(2);
        let neo_emulation = shared_any.and_then(|r| r.neo_emulation.clone());
        let mut verdict: Vec<Statement> = neo_emulation
            .iter()
            .map(crate::analysis::emulation_statement)
            .collect();
        let mut sharing_costs = Vec::new();
        let mut investigated = None;
        let kernel_counts = kernel_counts(runs);
        // Runs that stopped before their first buffer measured no buffer at all.
        let none_allocated = !runs.is_empty() && runs.iter().all(|p| p.report.buffers == 0);
        for strategy in matrix.strategies() {
            verdict.push(stops_statement(&matrix, strategy, n));
            verdict.extend(ended_without_report(&matrix, strategy));
            let Some(shared) = matrix.pick(Role::Shared, strategy) else {
                continue;
            };
            if none_allocated {
                continue;
            }
            let per = matrix.pick(Role::PerDevice, strategy);
            let (costs, extra) = sharing(&matrix, strategy, shared, n);
            sharing_costs.extend(costs);
            verdict.extend(extra);
            verdict.extend(counts_statements(&kernel_counts, strategy, n));
            verdict.extend(shared_cause(shared, per, n));
            if investigated.is_none() {
                investigated = investigation(shared);
            }
        }
        verdict.extend(time_across_strategies(&matrix));
        if none_allocated {
            verdict.push(Statement::measured(
                "no run allocated a buffer: every case stopped before its first (see how each ended above), so nothing here measures what a buffer costs or where one fails".to_owned(),
            ));
        } else if !runs.iter().any(|p| failed(p.report)) {
            verdict.extend(no_failure(shared_any));
        }
        let release = release_findings(runs);
        verdict.extend(release_statement(runs, &release));
        // The machine as any run read it: a shared case skipped on one GPU named none.
        let read_devices = runs
            .iter()
            .map(|p| p.report)
            .find(|r| !r.devices.is_empty())
            .or(shared_any);
        verdict.extend(known(&platform, read_devices.map(seen_in)));
        let mut diagnosis = Diagnosis {
            schema_version: DIAGNOSIS_SCHEMA_VERSION,
            platform,
            devices,
            runs: runs.iter().map(brief).collect(),
            sharing_costs,
            neo_emulation,
            allocation_log: Vec::new(),
            kernel_counts,
            investigation: investigated,
            release,
            fixes: fixes.iter().map(|f| fix_outcome(f, shared_any)).collect(),
            verdict,
            answer: Vec::new(),
            uncompared: Vec::new(),
            limit_ahead: shared_any.and_then(limit_ahead),
            stopped: None,
            context: None,
        };
        diagnosis.finish();
        diagnosis
    }

    /// Adds what the runtime logged per buffer in each case (NEO's allocation log),
    /// and what the shared context adds over one context per device, to the verdict.
    pub fn add_allocation_log(&mut self, cases: Vec<LoggedCase>) {
        let n = self.devices.len().max(2);
        let at = |role: Role| cases.iter().find(|c| c.role == role).map(|c| &c.per_buffer);
        let mut statements: Vec<Statement> = cases
            .iter()
            .map(|c| {
                Statement::measured(format!(
                    "NEO's allocation log, {}: {} lines per buffer by allocation type (runs of {} and {} buffers, each in a fresh process)",
                    c.role.label(n),
                    c.per_buffer.summary(),
                    c.per_buffer.buffers.0,
                    c.per_buffer.buffers.1
                ))
            })
            .collect();
        if let (Some(shared), Some(per)) = (at(Role::Shared), at(Role::PerDevice)) {
            let extra: Vec<String> = shared
                .minus(per)
                .into_iter()
                .filter(|(_, v)| v.abs() >= 0.005)
                .map(|(k, v)| format!("{k} {v:+.2}"))
                .collect();
            statements.push(Statement::inferred(
                "NEO's allocation log in the shared and per-device cases",
                if extra.is_empty() {
                    "NEO's own log shows no more allocations per buffer in the shared context than with one context per device".to_owned()
                } else {
                    format!(
                        "NEO's own log shows, per buffer, {} lines by type in the shared context over one context per device (a line is one allocation logged; a runtime may log one allocation again when it retypes it)",
                        extra.join(", ")
                    )
                },
            ));
        }
        let at_end = self
            .verdict
            .iter()
            .position(|s| matches!(s.basis, Basis::Known(_)))
            .unwrap_or(self.verdict.len());
        self.verdict.splice(at_end..at_end, statements);
        self.allocation_log = cases;
    }

    /// Sets the answer from everything the diagnosis now holds: call it once the
    /// verdict is complete (after a compare, a stop).
    pub fn finish(&mut self) {
        for s in &mut self.verdict {
            shorten(s);
        }
        self.answer = self.answer();
    }

    /// The statements a person reads first: measured and inferred ones.
    pub fn headline(&self) -> Vec<&Statement> {
        self.verdict
            .iter()
            .filter(|s| !matches!(s.basis, Basis::Known(_)))
            .collect()
    }
}

/// The limit a shared run heads for at its measured growth, in words: `RLIMIT_NOFILE
/// (soft) at about 1000 buffers`.
fn limit_ahead(shared: &Report) -> Option<String> {
    let ahead = shared.analysis.first_limit.as_ref()?;
    Some(format!(
        "{} at about {} buffers{}",
        ahead.limit.name,
        clmulti_scenario::format_count(ahead.count as f64),
        if ahead.estimated {
            " (estimated from declared capacity)"
        } else {
            ""
        }
    ))
}

fn brief(p: &Placed<'_>) -> RunBrief {
    RunBrief {
        role: p.role,
        strategy: p.report.scenario.allocation.strategy,
        run_name: p.report.run_name.clone(),
        buffers: p.report.buffers,
        headline: p.report.headline(),
        outcome: p.report.stop.kind(),
        seconds: p.report.elapsed_seconds,
        driver_messages: p.report.driver_messages.clone(),
    }
}

/// Each run of `strategy` whose process ended without its report (a crash, a hang),
/// with the end of its stderr: what the runtime said as it went.
fn ended_without_report(matrix: &Matrix<'_>, strategy: Strategy) -> Vec<Statement> {
    matrix
        .runs
        .iter()
        .map(|p| p.report)
        .filter(|r| r.scenario.allocation.strategy == strategy)
        .filter(|r| r.stop.kind().ended_early() && r.stop.kind() != StopKind::Failed)
        .map(|r| {
            let lines: Vec<&str> = r
                .stderr_tail
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let said = match lines.len() {
                0 => "nothing on stderr".to_owned(),
                k => format!(
                    "its stderr ends: {}",
                    lines[k.saturating_sub(2)..].join(" / ")
                ),
            };
            Statement::measured(format!(
                "{}: {} after {}; {said}",
                r.run_name,
                r.stop.summary(),
                r.buffers_words()
            ))
        })
        .collect()
}

/// Where each case of one strategy stopped.
fn stops_statement(matrix: &Matrix<'_>, strategy: Strategy, n: usize) -> Statement {
    let stops: Vec<String> = [Role::OneDevice, Role::Shared, Role::PerDevice]
        .into_iter()
        .filter_map(|role| {
            let r = matrix.pick(role, strategy)?;
            Some(format!("{}: {}", role.label(n), outcome(r)))
        })
        .collect();
    Statement::measured(format!(
        "strategy {}: {}",
        strategy.name(),
        stops.join("; ")
    ))
}

/// What sharing costs per buffer for one strategy: the table's rows, and the
/// statement comparing the shared context with per-device ones.
fn sharing(
    matrix: &Matrix<'_>,
    strategy: Strategy,
    shared: &Report,
    n: usize,
) -> (Vec<SharingCost>, Option<Statement>) {
    let one = matrix.pick(Role::OneDevice, strategy);
    let per = matrix.pick(Role::PerDevice, strategy);
    let mut rows = Vec::new();
    let mut extras = Vec::new();
    let resources = shared
        .costs
        .iter()
        // Other processes move system-wide readings: no control here, not the run's.
        .filter(|c| !c.estimated && !c.resource.system_wide())
        .map(|c| c.resource.clone());
    for resource in resources {
        let (o, s, p) = (
            one.and_then(|r| cost_of(r, &resource)),
            cost_of(shared, &resource),
            per.and_then(|r| cost_of(r, &resource)),
        );
        if ![o, s, p]
            .iter()
            .flatten()
            .any(|v| differs(&resource, *v, 0.0))
        {
            continue;
        }
        let extra = s.zip(p).map(|(s, p)| s - p);
        let mut measurable = false;
        if let (Some(e), Some(s), Some(p)) = (extra, s, p) {
            // Apart beyond both fits' margins, not only beyond the noise floor.
            fn fitted<'a>(r: Option<&'a Report>, resource: &Resource) -> Option<&'a crate::Cost> {
                r.and_then(|r| r.costs.iter().find(|c| &c.resource == resource))
            }
            let margin = |r: Option<&Report>| fitted(r, &resource).map_or(0.0, |c| c.margin);
            let margins = margin(Some(shared)).hypot(margin(per));
            // A slope through a few samples (a run that failed early) measures nothing.
            let enough = [Some(shared), per].into_iter().all(|r| {
                fitted(r, &resource)
                    .is_some_and(|c| c.samples >= crate::thresholds::MIN_COST_SAMPLES)
            });
            measurable = enough && differs(&resource, s, p) && e.abs() > margins;
            if measurable {
                let unit = resource.unit();
                extras.push(format!(
                    "{} {}{} per buffer ({} shared vs {} per device)",
                    labelled(&resource, shared),
                    if e >= 0.0 { "+" } else { "-" },
                    unit.format(e.abs()),
                    unit.format(s),
                    unit.format(p)
                ));
            }
        }
        rows.push(SharingCost {
            strategy,
            modelled: crate::analysis::modelled(shared, &resource),
            resource,
            one_device: o,
            shared: s,
            per_device: p,
            extra,
            measurable,
        });
    }
    let statement = per.map(|_| {
        Statement::measured(if extras.is_empty() {
            format!("with strategy {}, sharing one context over {n} devices adds no measurable cost per buffer over one context per device (system-wide readings left out: other processes move them)", strategy.name())
        } else {
            format!(
                "with strategy {}, sharing one context over {n} devices adds {}",
                strategy.name(),
                extras.join(", ")
            )
        })
    });
    (rows, statement)
}

/// Whether the run's experiments found its confirmed cause costs once per peer.
fn per_peer_of(run: &Report) -> bool {
    run.analysis
        .shape
        .iter()
        .any(|f| f.question == crate::verdict::ShapeQuestion::PerPeer && f.settles_on("linear"))
}

/// A resource's label, with who exported a run's dma-bufs where that was read:
/// "dma-buf fds (exported by i915)".
pub(crate) fn labelled(resource: &Resource, run: &Report) -> String {
    match (resource, crate::report::Sample::exporters(&run.samples)) {
        (Resource::DmabufFds | Resource::DmabufBytes, Some(exporters)) => {
            format!("{} (exported by {exporters})", resource.label())
        }
        _ if crate::analysis::modelled(run, resource) => {
            format!("{} (as the emulated driver models it)", resource.label())
        }
        _ => resource.label(),
    }
}

/// How a run ended, without the analysis: `completed 10000 buffers`.
pub(crate) fn outcome(r: &Report) -> String {
    match &r.stop {
        StopReason::Completed => format!("completed {} buffers", r.buffers),
        StopReason::Failed { error, call, .. } => {
            format!(
                "FAILED after {} buffers with {error} in {}",
                r.buffers,
                call.c_name()
            )
        }
        other => format!("{} after {}", other.summary(), r.buffers_words()),
    }
}

/// What a fix's run shows. For a shared case that failed: whether the fix run got
/// through. For one that only headed for a limit: whether the fix moved that limit
/// (gone, or at least twice as far).
fn fix_outcome(
    (fix, result): &(Fix, Result<&Report, String>),
    shared: Option<&Report>,
) -> FixOutcome {
    let ahead = |r: &Report| {
        r.analysis
            .first_limit
            .as_ref()
            .map(|l| (l.count, l.limit.name.clone()))
    };
    let outcome = match result {
        Err(reason) => Outcome::Untested {
            reason: reason.clone(),
        },
        Ok(r) if !matches!(r.stop, StopReason::Completed) => Outcome::DidNotWork {
            buffers: r.buffers,
            stop: outcome(r),
        },
        Ok(r) => match (shared.filter(|s| !failed(s)).and_then(ahead), ahead(r)) {
            (Some((before, _)), Some((after, name))) if after < before.saturating_mul(2) => {
                Outcome::DidNotWork {
                    buffers: r.buffers,
                    stop: format!(
                        "{}, still heading for {name} at about {after} buffers (the shared context: about {before})",
                        outcome(r)
                    ),
                }
            }
            _ => Outcome::Worked {
                buffers: r.buffers,
                stop: outcome(r),
            },
        },
    };
    let claim = match (result, shared) {
        (Ok(r), Some(s)) if matches!(outcome, Outcome::DidNotWork { .. }) => {
            super::fix_claim(fix, r, s)
        }
        _ => None,
    };
    FixOutcome {
        fix: fix.clone(),
        outcome,
        claim,
    }
}

/// The most words a statement's text holds; the rest of a longer one is evidence,
/// moved to its detail at a clause boundary.
pub const MAX_WORDS: usize = 80;

/// Cuts a statement over [`MAX_WORDS`] at the last clause boundary (`; `, `: `, `, `)
/// that leaves it within them, moving the rest to its detail.
fn shorten(s: &mut Statement) {
    if s.words() <= MAX_WORDS {
        return;
    }
    // The byte where the word after MAX_WORDS - 5 begins: the cut comes before it.
    let limit = s
        .text
        .match_indices(char::is_whitespace)
        .filter(|(i, _)| *i > 0)
        .nth(MAX_WORDS - 5)
        .map_or(s.text.len(), |(i, _)| i);
    let head = &s.text[..limit];
    // Never inside parentheses: the head must read whole.
    let outside = |i: usize| head[..i].matches('(').count() == head[..i].matches(')').count();
    let cut = ["; ", ": ", ", "]
        .iter()
        .flat_map(|sep| {
            head.match_indices(sep)
                .map(|(i, _)| (i, sep.len()))
                .collect::<Vec<_>>()
        })
        .filter(|(i, _)| outside(*i))
        .max_by_key(|(i, _)| *i)
        .unwrap_or((limit, 0));
    let rest = s.text[cut.0 + cut.1..].trim().to_owned();
    s.text = format!("{} (more in the evidence)", s.text[..cut.0].trim_end());
    let moved = std::mem::take(&mut s.detail);
    s.detail = Some(match moved {
        Some(d) if !d.is_empty() => format!("{rest}; {d}"),
        _ => rest,
    });
}

/// The kernel's counts of every run, as the runtime logs them and as traced.
fn kernel_counts(runs: &[Placed<'_>]) -> Vec<KernelCounts> {
    runs.iter()
        .flat_map(|p| {
            [
                KernelCounts::of(p.report, p.role),
                KernelCounts::traced(p.report, p.role),
            ]
        })
        .flatten()
        .collect()
}

/// What the kernel's counts say of one strategy, from each source.
fn counts_statements(
    kernel_counts: &[KernelCounts],
    strategy: Strategy,
    n: usize,
) -> Vec<Statement> {
    let mut out = Vec::new();
    for source in [super::KERNEL_COUNTS, super::TRACED_COUNTS] {
        out.extend(KernelCounts::statement(
            &kernel_counts
                .iter()
                .filter(|k| k.strategy == strategy && k.source == source)
                .collect::<Vec<_>>(),
            n,
        ));
    }
    out
}

/// The failing shared case's investigation, when it found anything.
fn investigation(shared: &Report) -> Option<Investigation> {
    let found = !shared.analysis.candidates.is_empty()
        || !shared.analysis.shape.is_empty()
        || shared.analysis.replicates.is_some();
    (failed(shared) && found).then(|| Investigation {
        run_name: shared.run_name.clone(),
        candidates: shared.analysis.candidates.clone(),
        shape: shared.analysis.shape.clone(),
        replicates: shared.analysis.replicates.clone(),
        reproduction: shared
            .analysis
            .claim(crate::claim::Topic::Reproduction)
            .cloned(),
        cause: shared.analysis.claim(crate::claim::Topic::Cause).cloned(),
    })
}
