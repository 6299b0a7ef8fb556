//! What one run's measurements say: the first limit ahead, the candidate causes of a
//! failure (a resource within one buffer's growth of its limit whose line predicts
//! the failing count), whether everything came back after release, and statements
//! each tagged with where they come from. A candidate becomes a cause only when an
//! experiment confirms it ([`experiment`](crate::experiment)); nothing here advises
//! a fix.
//!
//! [`Report::conclude`] is the one finishing step every report goes through, in the
//! process that ran it or in the parent of a child that died.

use crate::costs::{costs, negligible};
use crate::report::{Cost, Report, StopReason, Warning, WarningKind};
use crate::resource::{Facts, Resource};
use crate::thresholds::{AT_LIMIT_SHARE, HORIZON, MATCH_BUFFERS, MATCH_SHARE};
use crate::verdict::{
    Candidate, CandidateTest, Cause, LimitAhead, RunAnalysis, ShapeFinding, Statement,
};
use crate::words;
use clmulti_scenario::{format_bytes, Strategy};

impl Report {
    /// Finishes a report from its samples: per-buffer costs against the run's limits,
    /// the leak check by readings, the warnings that depend on them, and the
    /// analysis. Idempotent.
    pub fn conclude(&mut self) {
        let facts = Facts {
            scenario: &self.scenario,
            devices: &self.devices,
            host: &self.host_limits,
            driver: &self.driver_limits,
            buffers: self.buffers,
            layers: self.layers.as_ref(),
            failed: !matches!(self.stop, StopReason::Completed),
            emulated_devices: self.neo_emulation.is_some(),
        };
        self.costs = costs(&self.samples, facts);
        crate::release::judge_release(self);
        warn_unmatched_drm(self);
        self.analysis = analyze(self);
    }
}

/// Whether two counts agree: within [`MATCH_SHARE`] or [`MATCH_BUFFERS`].
pub fn counts_match(predicted: u64, observed: u64) -> bool {
    let slack = ((observed as f64 * MATCH_SHARE) as u64).max(MATCH_BUFFERS);
    predicted.abs_diff(observed) <= slack
}

/// Whether a cost grows measurably: above the noise floor and outside its own
/// confidence interval of zero.
pub(crate) fn growing(cost: &Cost) -> bool {
    !negligible(&cost.resource, cost.per_buffer) && cost.per_buffer > cost.margin
}

/// Whether a cost is a measurement worth saying: it grows, and its line runs through
/// enough samples (an estimate says what it comes from instead).
pub(crate) fn measured(cost: &Cost) -> bool {
    growing(cost) && (cost.estimated || cost.samples >= crate::thresholds::MIN_COST_SAMPLES)
}

impl Cost {
    /// Whether it is a measurement worth saying: it grows beyond its margin and the
    /// noise floor, through enough samples (or is an estimate, which says what it
    /// comes from). What the findings say and a sweep comparison compares.
    pub fn is_measured(&self) -> bool {
        measured(self)
    }
}

/// The resource's reading when the run stopped, as its limit counts it.
fn reading_at_end(cost: &Cost) -> f64 {
    match &cost.limit {
        Some(l) if l.of_growth => cost.last - cost.first,
        _ => cost.last,
    }
}

/// The candidates of a failed run: every growing resource whose reading at the
/// failure is within one buffer's growth (or [`AT_LIMIT_SHARE`]) of its limit and
/// whose line meets that limit at the failing count ([`counts_match`]).
pub fn candidates(report: &Report) -> Vec<Candidate> {
    report
        .costs
        .iter()
        .filter(|c| growing(c))
        .filter_map(|c| {
            let limit = c.limit.as_ref()?;
            let reading = reading_at_end(c);
            let room = limit.value - reading;
            let at_limit = room <= c.per_buffer.max(limit.value * AT_LIMIT_SHARE);
            let predicted = c.predicted_count?;
            (at_limit && counts_match(predicted, report.buffers)).then(|| Candidate {
                resource: c.resource.clone(),
                limit: limit.clone(),
                reading,
                per_buffer: c.per_buffer,
                baseline: if limit.of_growth { 0.0 } else { c.first },
                predicted_count: predicted,
                observed_count: report.buffers,
                test: CandidateTest::Pending,
            })
        })
        .collect()
}

/// What this run did not read, from what its samples hold: where a "not explained"
/// leaves room.
pub fn unmeasured(report: &Report) -> Vec<String> {
    let mut list = Vec::new();
    let has_device_readings = report
        .costs
        .iter()
        .any(|c| matches!(c.resource, Resource::DeviceMemory { .. }) && !c.estimated);
    let has_drm = report.samples.iter().any(|s| !s.drm.is_empty());
    if !has_device_readings && !has_drm {
        list.push(
            "device memory in use (no NVML, AMD query or DRM fdinfo for these devices)".to_owned(),
        );
    }
    if !has_drm {
        list.push(
            "GPU driver memory accounted per client (no DRM or DRM accel file descriptors in this process)"
                .to_owned(),
        );
    }
    if report.samples.iter().all(|s| s.host.threads == 0) {
        list.push("threads and locked memory (not in these samples)".to_owned());
    } else if report.host_limits.root {
        let threads = report.host_limits.cgroup_pids.as_ref().map_or_else(
            || "threads meet only kernel.threads-max here".to_owned(),
            |p| format!("threads are bounded by {} ({})", p.name, p.max),
        );
        list.push(format!(
            "RLIMIT_NPROC and RLIMIT_MEMLOCK, which the kernel does not enforce for root (threads and locked memory were read; {threads})"
        ));
    }
    if report.host_limits.nproc_soft.is_some() && !report.host_limits.root {
        list.push(
            "the other processes and threads of this user, which RLIMIT_NPROC counts too"
                .to_owned(),
        );
    }
    list.push(
        "the runtime's own internal limits (handle tables, GPU virtual address space, pools)"
            .to_owned(),
    );
    if report.layers.is_some() {
        list.push("the state of the OpenCL layers named in OPENCL_LAYERS".to_owned());
    }
    list
}

/// Whether the run failed inside its allocation loop, with samples to read.
fn failed_in_loop(report: &Report) -> bool {
    matches!(&report.stop, StopReason::Failed { index, .. } if *index > 0)
        && report.samples.len() >= 2
}

/// Analyses one run's report (its costs must be fitted): candidates untested.
pub fn analyze(report: &Report) -> RunAnalysis {
    let candidates = if failed_in_loop(report) {
        candidates(report)
    } else {
        Vec::new()
    };
    conclusions(report, candidates, Vec::new())
}

/// The analysis of a report given its candidates (tested or not) and what shape
/// experiments found.
pub(crate) fn conclusions(
    report: &Report,
    candidates: Vec<Candidate>,
    shape: Vec<ShapeFinding>,
) -> RunAnalysis {
    let mut statements = Vec::new();
    let first_limit = first_limit(report);
    statements.extend(report.neo_emulation.as_ref().map(emulation_statement));
    statements.extend(growth_statement(report));
    statements.extend(lazy_statement(report));
    statements.extend(oversize_statement(report));
    statements.extend(crate::cause::failing_call_statement(report, &shape));
    let replicates = report.analysis.replicates.clone();
    let observed = report.analysis.observed.clone();
    let failed = failed_in_loop(report);
    let cause_claim = failed.then(|| crate::cause::cause_claim(report, &candidates));
    let unsteady = failed
        .then(|| reproduction_cause(report, replicates.as_ref(), &shape))
        .flatten();
    let cause = match (&unsteady, &cause_claim) {
        (Some(c), _) => Some(c.clone()),
        (None, Some(claim)) => Some(crate::cause::cause_from(
            claim,
            &candidates,
            unmeasured(report),
        )),
        (None, None) => None,
    };
    statements.extend(
        replicates
            .as_ref()
            .map(|r| words::replicates(r, crate::reproduction::claim(r, &shape, &candidates))),
    );
    statements.extend(own_fds_statement(report, &candidates));
    statements.extend(system_noise_statement(report));
    for c in &candidates {
        let estimated = cost_of(report, &c.resource).is_some_and(|cost| cost.estimated);
        statements.push(words::candidate(c, estimated));
    }
    // A failure that does not hold still has no cause among limits: its replicates'
    // claim says what it is. One that does gets the cause claim.
    if unsteady.is_none() {
        if let Some(claim) = cause_claim {
            statements.push(words::cause(
                claim,
                crate::cause::cause_basis(report, &candidates),
            ));
        }
        if let Some(Cause::NotExplained { unmeasured }) = &cause {
            statements.push(words::not_measured(unmeasured));
        }
    }
    statements.extend(shape.iter().map(words::shape));
    statements.extend(crate::release::release_statements(report));
    let quiet = matches!(
        report.stop,
        StopReason::Skipped { .. } | StopReason::Unsupported { .. }
    );
    if cause.is_none() && !quiet {
        statements.extend(ahead_statement(report, first_limit.as_ref()));
    }
    RunAnalysis {
        first_limit,
        cause,
        candidates,
        shape,
        replicates,
        observed,
        statements,
    }
}

/// The cause when the failure itself does not hold still: re-runs that spread,
/// that follow time, or that remember across processes; a pause that showed time.
fn reproduction_cause(
    report: &Report,
    replicates: Option<&crate::verdict::Replicates>,
    shape: &[ShapeFinding],
) -> Option<Cause> {
    use crate::verdict::{Reproduced, ShapeQuestion};
    if let Some(r) = replicates {
        match r.reproduced() {
            Reproduced::Yes => {}
            Reproduced::No => return Some(Cause::NotReproducible { counts: r.counts() }),
            Reproduced::Time { seconds } => {
                return Some(Cause::TimeLimit {
                    seconds,
                    counts: r.counts(),
                })
            }
            Reproduced::Persistent | Reproduced::Depleted => {
                return Some(Cause::Persistent { counts: r.counts() })
            }
        }
    }
    let paused = shape
        .iter()
        .find(|f| f.question == ShapeQuestion::TimeOrCount && f.settles_on("time"))?;
    let mut counts = vec![report.buffers];
    counts.extend(paused.experiments.iter().map(|e| e.observed_count));
    Some(Cause::TimeLimit {
        seconds: report.elapsed_seconds,
        counts,
    })
}

/// Where descriptors are at stake, once: the count includes clmulti's own.
fn own_fds_statement(report: &Report, candidates: &[Candidate]) -> Option<Statement> {
    let own = report.clmulti_fds.filter(|n| *n > 0)?;
    let fds_matter = candidates.iter().any(|c| c.resource == Resource::OpenFds)
        || cost_of(report, &Resource::OpenFds).is_some_and(growing);
    fds_matter.then(|| {
        Statement::measured(format!(
            "open fds count clmulti's own {own} descriptors (its /proc readers and progress file), which RLIMIT_NOFILE counts like the runtime's"
        ))
    })
}

/// When system-wide memory moved more than the whole process did: other processes
/// were at work, and system-wide readings say nothing of this run.
fn system_noise_statement(report: &Report) -> Option<Statement> {
    let (first, last) = (report.samples.first()?, report.samples.last()?);
    let host = &report.host_limits;
    let moved = |r: Resource| Some((r.reading(last, host)? - r.reading(first, host)?).abs());
    let own = moved(Resource::HostRss)?;
    let system = moved(Resource::SystemMemoryUsed)
        .unwrap_or(0.0)
        .max(moved(Resource::SystemShmem).unwrap_or(0.0));
    (system > 2.0 * own + 64.0 * 1048576.0).then(|| {
        Statement::measured(format!(
            "system-wide memory moved by {} during the run, against {} of this process's RSS: other processes were at work, so no system-wide reading (MemAvailable, Shmem) is attributed to this run",
            format_bytes(system),
            format_bytes(own)
        ))
    })
}

/// The first limit the growing resources meet.
fn first_limit(report: &Report) -> Option<LimitAhead> {
    nearest_limit(report).filter(|ahead| ahead.count <= horizon(report))
}

/// How far a run's lines are extrapolated: [`HORIZON`] times the buffers it reached.
fn horizon(report: &Report) -> u64 {
    report.buffers.max(1).saturating_mul(HORIZON)
}

/// Whether a resource's readings are an emulated driver's model (its memory totals),
/// not what a real kernel reported.
pub(crate) fn modelled(report: &Report, resource: &Resource) -> bool {
    report
        .neo_emulation
        .as_ref()
        .is_some_and(|n| n.kernel_driver.is_some())
        && matches!(
            resource,
            Resource::Drm { .. } | Resource::DeviceMemory { .. }
        )
}

/// The nearest limit the growing resources meet, however far. A system-wide reading
/// (other processes move it) counts only against a cap on what the run adds to it;
/// an emulated driver's modelled totals are no reading a real system gives, and meet
/// no limit here.
pub(crate) fn nearest_limit(report: &Report) -> Option<LimitAhead> {
    report
        .costs
        .iter()
        .filter(|c| measured(c) && !modelled(report, &c.resource))
        .filter_map(|c| Some((c, c.limit.clone()?, c.predicted_count?)))
        .filter(|(c, limit, _)| !c.resource.system_wide() || limit.of_growth)
        // A limit the run went clearly past is not ahead of it: the line that predicts
        // it (an estimate from declared sizes, a cost that stopped growing) is wrong.
        .filter(|(_, _, count)| *count as f64 >= 0.95 * report.buffers as f64)
        .min_by_key(|(_, _, n)| *n)
        .map(|(c, limit, count)| LimitAhead {
            resource: c.resource.clone(),
            limit,
            count,
            estimated: c.estimated,
        })
}

/// What a run on NEO's emulated devices can and cannot show.
pub fn emulation_statement(neo: &clmulti_probe::neo::NeoEmulation) -> Statement {
    if neo.kernel_driver.is_some() {
        return Statement::measured(format!(
            "{}: NEO's own code issued every ioctl counted here, against an {} emulated by clmulti-kmd-emu, which enforces no limit the kernel would not (descriptors are real ones, counted against RLIMIT_NOFILE by the kernel itself); what a real kernel would add (page faults, GPU work, its own memory) is not modelled {}",
            neo.label(),
            neo.kernel_driver.map_or("i915", |d| d.kernel().name()),
            neo.evidence()
        ));
    }
    Statement::inferred(
        "the platform, its driver version and the run's environment (NEOReadDebugKeys=1, SetCommandStreamReceiver=1), and what AUB mode does, known: intel/compute-runtime shared/source/execution_environment/execution_environment.cpp",
        format!(
            "{}: what NEO allocates on the host for each buffer is real, but nothing reaches a kernel driver, so the kernel-level limits behind the seed's failure (GTT, dma-buf descriptors, device memory) cannot be met here",
            neo.label()
        ),
    )
}

fn cost_of<'a>(report: &'a Report, resource: &Resource) -> Option<&'a Cost> {
    report.costs.iter().find(|c| &c.resource == resource)
}

fn growth_statement(report: &Report) -> Option<Statement> {
    if report.samples.len() < 2 {
        return None;
    }
    let min = crate::thresholds::MIN_COST_SAMPLES;
    if report.samples.len() < min {
        return Some(Statement::measured(format!(
            "growth per buffer not measurable: {} samples before the run ended, fewer than the {min} a slope needs",
            report.samples.len()
        )));
    }
    let growth: Vec<String> = report
        .costs
        .iter()
        .filter(|c| measured(c) && !c.estimated && !c.resource.system_wide())
        .map(|c| {
            let modelled = if modelled(report, &c.resource) {
                " (as the emulated driver models it)"
            } else {
                ""
            };
            format!(
                "{}{modelled} {} per buffer",
                c.resource.label(),
                c.per_buffer_words()
            )
        })
        .collect();
    Some(Statement::measured(if growth.is_empty() {
        "no measured resource grows per buffer".to_owned()
    } else {
        growth.join(", ")
    }))
}

/// Created buffers that measurably hold nothing: the runtime allocates at first use.
fn lazy_statement(report: &Report) -> Option<Statement> {
    if report.scenario.allocation.strategy != Strategy::Create || report.buffers == 0 {
        return None;
    }
    let rss = cost_of(report, &Resource::HostRss)?;
    let size = report.scenario.allocation.size_bytes as f64;
    let device_growth = report.costs.iter().any(|c| {
        matches!(
            c.resource,
            Resource::DeviceMemory { .. } | Resource::Drm { .. }
        ) && !c.estimated
            && growing(c)
    });
    let devices_read = report.costs.iter().any(|c| {
        matches!(
            c.resource,
            Resource::DeviceMemory { .. } | Resource::Drm { .. }
        ) && !c.estimated
    });
    // Address space reserved at creation is not memory held: said beside it.
    let reserved = cost_of(report, &Resource::VirtualSize)
        .filter(|c| measured(c) && c.per_buffer >= 0.5 * size)
        .map(|c| {
            format!(
                "; each reserves {} of address space already (virtual size), untouched",
                format_bytes(c.per_buffer)
            )
        })
        .unwrap_or_default();
    (rss.per_buffer < 0.01 * size && !device_growth).then(|| {
        Statement::inferred(
            if devices_read {
                "host RSS and device readings"
            } else {
                "host RSS"
            },
            format!(
                "created buffers hold no resident memory yet (only {} of host RSS per {} buffer, under 1% of its size){reserved}: the runtime backs them at first use, so strategy \"fill\" shows what residency costs",
                format_bytes(rss.per_buffer),
                format_bytes(size)
            ),
        )
    })
}

/// The first buffer refused for its size: which device's limit it passed.
fn oversize_statement(report: &Report) -> Option<Statement> {
    let StopReason::Failed {
        error, index: 0, ..
    } = &report.stop
    else {
        return None;
    };
    let size = report.scenario.allocation.size_bytes;
    let over: Vec<String> = report
        .devices
        .iter()
        .filter_map(|d| {
            let max = *d.max_alloc_bytes.value()?;
            (size > max).then(|| format!("{} ({})", d.display_name(), format_bytes(max as f64)))
        })
        .collect();
    (error.code == clmulti_probe::ClCode::INVALID_BUFFER_SIZE.0 && !over.is_empty()).then(|| {
        Statement::measured(format!(
            "allocation.size ({}) is above CL_DEVICE_MAX_MEM_ALLOC_SIZE of {}: the runtime refuses any buffer that large; use a size at or below it",
            format_bytes(size as f64),
            over.join(", ")
        ))
    })
}

fn ahead_statement(report: &Report, ahead: Option<&LimitAhead>) -> Option<Statement> {
    // Growth not measurable (too few samples): no measured line to extend either way.
    let few = report.samples.len() < crate::thresholds::MIN_COST_SAMPLES;
    let beyond = nearest_limit(report).filter(|a| a.count > horizon(report) && !few);
    match ahead {
        Some(ahead) if few && !ahead.estimated => None,
        None if beyond.is_some() => beyond.map(|ahead| {
            Statement::inferred(
                format!("{} growth", ahead.resource.label()),
                format!(
                    "no limit within {HORIZON} times this run's {} buffers: the nearest, {} ({}), lies beyond; a line is not extrapolated further",
                    report.buffers,
                    ahead.limit.name,
                    ahead.resource.unit().format(ahead.limit.value),
                ),
            )
        }),
        Some(ahead) => Some(Statement::inferred(
            format!(
                "{} growth{}",
                ahead.resource.label(),
                if ahead.estimated {
                    " (estimated from the strategy and declared capacity)"
                } else {
                    ""
                }
            ),
            format!(
                "first limit ahead: {} ({}) at about {} buffers",
                ahead.limit.name,
                ahead.resource.unit().format(ahead.limit.value),
                clmulti_scenario::format_count(ahead.count as f64)
            ),
        )),
        None if report.samples.len() >= 2 => Some(Statement::inferred(
            "every measured resource",
            "no measured resource grows toward a limit",
        )),
        None => None,
    }
}

/// DRM memory of a device the run did not select (or could not match by PCI address).
fn warn_unmatched_drm(report: &mut Report) {
    let unmatched: std::collections::BTreeSet<String> = report
        .costs
        .iter()
        .filter_map(|c| match &c.resource {
            Resource::Drm {
                device: None,
                pdev,
                driver,
                ..
            } => Some(format!(
                "{driver} at {}",
                pdev.as_deref().unwrap_or("no drm-pdev")
            )),
            _ => None,
        })
        .collect();
    if unmatched.is_empty()
        || report
            .warnings
            .iter()
            .any(|w| w.kind == WarningKind::DrmDeviceUnmatched)
    {
        return;
    }
    let addresses: Vec<String> = report
        .devices
        .iter()
        .map(|d| {
            d.pci_bus
                .as_ref()
                .and_then(|b| b.value())
                .map_or("unknown".into(), |b| b.to_string())
        })
        .collect();
    report.warnings.push(Warning {
        kind: WarningKind::DrmDeviceUnmatched,
        message: format!(
            "DRM memory of {} matches none of the run's devices (PCI addresses: {})",
            unmatched.into_iter().collect::<Vec<_>>().join(", "),
            addresses.join(", ")
        ),
        advice: "a device without cl_khr_pci_bus_info cannot be matched; the figures are still shown by PCI address".into(),
    });
}
