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
use crate::report::{Cost, NotReturned, Report, Sample, StopReason, Warning, WarningKind};
use crate::resource::{Facts, Resource, Unit};
use crate::verdict::{
    Candidate, CandidateTest, Cause, LimitAhead, RunAnalysis, ShapeFinding, Statement,
};
use crate::words;
use clmulti_scenario::{format_bytes, Strategy};

/// A reading within this share of its limit counts as at the limit (when one
/// buffer's growth is smaller).
pub const AT_LIMIT_SHARE: f64 = 0.01;
/// A predicted count matches a failing count within this share, or
/// [`MATCH_BUFFERS`], whichever is larger.
pub const MATCH_SHARE: f64 = 0.02;
/// See [`MATCH_SHARE`].
pub const MATCH_BUFFERS: u64 = 2;
/// After release, a reading counts as returned within this share of its growth...
pub const RETURN_SHARE: f64 = 0.10;
/// ...or within this many bytes (allocators keep a few MiB of freed heap)...
pub const RETURN_BYTES: f64 = 8.0 * 1024.0 * 1024.0;
/// ...or this many (descriptors, maps, threads).
pub const RETURN_COUNT: f64 = 2.0;

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
        judge_release(self);
        warn_unmatched_drm(self);
        self.analysis = analyze(self);
    }
}

/// Whether two counts agree: within [`MATCH_SHARE`] or [`MATCH_BUFFERS`].
pub fn counts_match(predicted: u64, observed: u64) -> bool {
    let slack = ((observed as f64 * MATCH_SHARE) as u64).max(MATCH_BUFFERS);
    predicted.abs_diff(observed) <= slack
}

pub(crate) fn growing(cost: &Cost) -> bool {
    !negligible(&cost.resource, cost.per_buffer)
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

/// The cause the candidates support: a confirmed one; else untested ones (pending, or
/// ones no experiment could move: a system-wide setting stays a candidate, with its
/// command); else none.
pub fn cause_of(candidates: &[Candidate], unmeasured: Vec<String>) -> Cause {
    if let Some(c) = candidates
        .iter()
        .find(|c| matches!(c.test, CandidateTest::Confirmed { .. }))
    {
        return Cause::Resource {
            resource: c.resource.clone(),
            limit: c.limit.clone(),
            reading: c.reading,
            per_buffer: c.per_buffer,
            predicted_count: c.predicted_count,
            observed_count: c.observed_count,
        };
    }
    let pending: Vec<Resource> = candidates
        .iter()
        .filter(|c| {
            matches!(
                c.test,
                CandidateTest::Pending | CandidateTest::NotTested { .. }
            )
        })
        .map(|c| c.resource.clone())
        .collect();
    if pending.is_empty() {
        Cause::NotExplained { unmeasured }
    } else {
        Cause::Untested { resources: pending }
    }
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
        list.push(
            "RLIMIT_NPROC and RLIMIT_MEMLOCK, which the kernel does not enforce for root (threads and locked memory were read, but meet no limit here)"
                .to_owned(),
        );
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
    statements.extend(words::failing_call(report));
    let cause = failed_in_loop(report).then(|| cause_of(&candidates, unmeasured(report)));
    for c in &candidates {
        let estimated = cost_of(report, &c.resource).is_some_and(|cost| cost.estimated);
        statements.push(words::candidate(c, estimated));
    }
    if let Some(Cause::NotExplained { unmeasured }) = &cause {
        statements.push(words::not_explained(unmeasured, !candidates.is_empty()));
    }
    statements.extend(shape.iter().map(words::shape));
    statements.extend(release_statement(report));
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
        statements,
    }
}

/// The first limit the growing resources meet.
fn first_limit(report: &Report) -> Option<LimitAhead> {
    let rss = cost_of(report, &Resource::HostRss).map_or(0.0, |c| c.per_buffer);
    report
        .costs
        .iter()
        .filter(|c| growing(c))
        // System memory in use grows with RSS and with every other process: it is a
        // limit of its own only when it grows well beyond RSS (memory outside RSS).
        .filter(|c| {
            c.resource != Resource::SystemMemoryUsed || c.per_buffer > (2.0 * rss).max(4096.0)
        })
        .filter_map(|c| Some((c, c.limit.clone()?, c.predicted_count?)))
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
            "{}: NEO's own code issued every ioctl counted here, against an i915 emulated by clmulti-kmd-emu, which enforces no limit the kernel would not (descriptors are real ones, counted against RLIMIT_NOFILE by the kernel itself); what a real kernel would add (page faults, GPU work, its own memory) is not modelled {}",
            neo.label(),
            clmulti_probe::neo::KERNEL_PATH_EVIDENCE
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
    let growth: Vec<String> = report
        .costs
        .iter()
        .filter(|c| growing(c) && !c.estimated)
        .map(|c| {
            format!(
                "{} +{} per buffer",
                c.resource.label(),
                c.resource.unit().format(c.per_buffer)
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
    (rss.per_buffer < 0.01 * size && !device_growth).then(|| {
        Statement::inferred(
            "host RSS and device readings",
            format!(
                "created buffers hold no memory yet ({} of host RSS per {} buffer): the runtime allocates at first use, so strategy \"fill\" shows what residency costs",
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
    match ahead {
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

/// How far above `before` a reading may stay after release and still count as
/// returned: [`RETURN_SHARE`] of its growth, or [`RETURN_BYTES`] / [`RETURN_COUNT`].
pub fn return_tolerance(unit: Unit, growth: f64) -> f64 {
    let floor = match unit {
        Unit::Bytes => RETURN_BYTES,
        Unit::Count => RETURN_COUNT,
    };
    (growth * RETURN_SHARE).max(floor)
}

/// The leak check by readings: every resource that grew more than its tolerance
/// during the run must come back within it after release.
fn judge_release(report: &mut Report) {
    let check = &report.leak_check;
    let (Some(after), Some(first)) = (&check.after_release_sample, report.samples.first()) else {
        report.leak_check.clean = check.objects_released();
        return;
    };
    let host = &report.host_limits;
    let mut not_returned = Vec::new();
    for resource in Resource::all_in(&report.samples, &report.devices) {
        // System-wide figures move with every other process: too noisy to judge.
        if matches!(resource, Resource::SystemMemoryUsed) {
            continue;
        }
        let (Some(before), Some(after)) =
            (resource.reading(first, host), resource.reading(after, host))
        else {
            continue;
        };
        let peak = report
            .samples
            .iter()
            .filter_map(|s| resource.reading(s, host))
            .fold(before, f64::max);
        let tolerance = return_tolerance(resource.unit(), peak - before);
        if peak - before > tolerance && after - before > tolerance {
            not_returned.push(NotReturned {
                resource,
                before,
                peak,
                after,
                tolerance,
            });
        }
    }
    report.leak_check.clean = report.leak_check.objects_released() && not_returned.is_empty();
    report.leak_check.not_returned = not_returned;
}

/// What the leak check by readings found, as one statement (none without a reading
/// after release).
pub fn release_statement(report: &Report) -> Option<Statement> {
    let check = &report.leak_check;
    check.after_release_sample.as_ref()?;
    if !check.objects_released() {
        return Some(Statement::measured(format!(
            "release: {} of {} buffers, {} of {} contexts released{}",
            check.buffers_released,
            check.buffers_created,
            check.contexts_released,
            check.contexts_created,
            check
                .release_errors
                .first()
                .map_or(String::new(), |e| format!("; first error: {e}"))
        )));
    }
    if check.not_returned.is_empty() {
        return Some(Statement::measured(format!(
            "after all {} buffers held at the end were released, every reading came back to its start (within {:.0}% of its growth, {} or {} for counts)",
            report.samples.last().map_or(0, Sample::live),
            RETURN_SHARE * 100.0,
            format_bytes(RETURN_BYTES),
            RETURN_COUNT,
        )));
    }
    let parts: Vec<String> = check.not_returned.iter().map(words::not_returned).collect();
    let mut out = format!(
        "every release call succeeded, yet {}: memory the runtime (or a layer) keeps after release",
        parts.join("; ")
    );
    match (&check.second_round, report.scenario.allocation.release_every) {
        (Some(round), _) => out.push_str(&rounds_words(round)),
        (None, Some(every)) => out.push_str(&own_rounds_words(report, every)),
        (None, None) => out.push_str("; a second round (allocation.release_every) tells a cache it reuses from a leak that grows"),
    }
    Some(Statement::measured(out))
}

/// What a run's own release rounds read right after each release, for the
/// resources that did not come back.
fn own_rounds_words(report: &Report, every: u64) -> String {
    let after_releases: Vec<&Sample> = report
        .samples
        .iter()
        .filter(|s| s.live == Some(0) && s.allocations > 0)
        .collect();
    let readings: Vec<String> = report
        .leak_check
        .not_returned
        .iter()
        .filter_map(|n| {
            let unit = n.resource.unit();
            let after: Vec<String> = after_releases
                .iter()
                .filter_map(|s| n.resource.reading(s, &report.host_limits))
                .map(|v| unit.format(v - n.before))
                .collect();
            (!after.is_empty()).then(|| format!("{} {}", n.resource.label(), after.join(", ")))
        })
        .collect();
    if readings.is_empty() {
        return String::new();
    }
    format!(
        "; its own rounds (allocation.release_every = {every}) read, above the start, right after each release: {}",
        readings.join("; ")
    )
}

/// What the rounds of a run that kept memory after release found, as a clause.
pub(crate) fn rounds_words(round: &crate::report::SecondRound) -> String {
    if round.readings.is_empty() {
        return format!(
            "; a second round could not tell a cache from a leak ({})",
            round.experiment.stop
        );
    }
    let rounds: Vec<String> = round
        .readings
        .iter()
        .map(|r| {
            let unit = r.resource.unit();
            let after: Vec<String> = r
                .after_rounds
                .iter()
                .map(|a| unit.format(a - r.before))
                .collect();
            format!(
                "{} {} above its start after each round: {}",
                r.resource.label(),
                after.join(", "),
                match r.kept() {
                    crate::report::Kept::Reused => "the last round added nothing, so it is reused (a cache)",
                    crate::report::Kept::Settling => "each round added less, but still more than the tolerance (a cache still filling, or a slow leak)",
                    crate::report::Kept::Leak => "the last round still added half of what the first kept, or more: it keeps growing (a leak, unless it settles after more rounds)",
                }
            )
        })
        .collect();
    format!(
        "; in {} rounds of {} buffers, each released in full: {}",
        round.readings[0].after_rounds.len(),
        round.experiment.change.to,
        rounds.join("; ")
    )
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
