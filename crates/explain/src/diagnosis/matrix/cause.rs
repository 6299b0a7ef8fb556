//! The shared case's cause in the verdict: the resource its experiments confirmed (per
//! peer where one more device showed it), or why none is named; and what a run that
//! did not fail heads for.

use super::*;

/// The cause of the shared case's failure, as far as its candidates and their
/// experiments say; set against the per-device run.
pub(super) fn shared_cause(shared: &Report, per: Option<&Report>, n: usize) -> Vec<Statement> {
    if !failed(shared) {
        return Vec::new();
    }
    let mut out: Vec<Statement> = Vec::new();
    out.extend(crate::cause::failing_call_statement(
        shared,
        &shared.analysis.shape,
    ));
    out.extend(replicates(shared));
    match &shared.analysis.cause {
        Some(cause @ Cause::Resource { resource, .. }) => {
            out.extend(resource_cause(cause, shared, per, n));
            out.extend(crate::cause::call_agrees(resource, shared));
        }
        // The replicates' claim above says what a failure that does not hold still is.
        Some(
            Cause::NotReproducible { .. } | Cause::TimeLimit { .. } | Cause::Persistent { .. },
        ) => {}
        Some(Cause::Untested { .. } | Cause::NotExplained { .. } | Cause::OneSided { .. }) => {
            out.push(words::cause(
                crate::cause::cause_claim(shared, &shared.analysis.candidates),
                crate::cause::cause_basis(shared, &shared.analysis.candidates),
            ));
        }
        None => out.push(Statement::measured(format!(
            "the shared context stopped: {}",
            shared.stop.summary()
        ))),
    }
    out.extend(words::runtime_log(shared));
    // The candidates, their experiments, and what the shape runs found, as the
    // shared run's analysis states them.
    for c in &shared.analysis.candidates {
        out.push(words::candidate(c, false));
    }
    if let Some(Cause::NotExplained { unmeasured }) = &shared.analysis.cause {
        out.push(words::not_measured(unmeasured));
    }
    out.extend(shared.analysis.shape.iter().map(words::shape));
    out
}

/// The replicates' sentence: whether the failure held, and what it is when not.
fn replicates(shared: &Report) -> Option<Statement> {
    shared.analysis.replicates.as_ref().map(|r| {
        let a = &shared.analysis;
        words::replicates(r, crate::reproduction::claim(r, &a.shape, &a.candidates))
    })
}

/// The resource that failed the shared case: its reading against its limit, per
/// peer and in dma-bufs where that says more, and set against one context per device.
fn resource_cause(
    cause: &Cause,
    shared: &Report,
    per: Option<&Report>,
    n: usize,
) -> Option<Statement> {
    let Cause::Resource {
        resource,
        limit,
        reading,
        per_buffer,
        predicted_count,
        observed_count,
    } = cause
    else {
        return None;
    };
    let unit = resource.unit();
    let elsewhere = per
        .and_then(|p| p.costs.iter().find(|c| &c.resource == resource))
        .map_or(0.0, |c| c.per_buffer);
    let same_in_per_device = per.is_some_and(|p| {
        p.analysis
            .candidates
            .iter()
            .any(|c| &c.resource == resource)
    });
    let dmabufs = (*resource == Resource::OpenFds)
        .then(|| cost_of(shared, &Resource::DmabufFds))
        .flatten()
        .filter(|d| *d >= 0.5 * per_buffer)
        .map_or(String::new(), |d| {
            format!(
                " (of which {} {})",
                labelled(&Resource::DmabufFds, shared),
                unit.format(d)
            )
        });
    let peers = n.saturating_sub(1);
    let per_peer = per_peer_of(shared).then(|| {
        format!(
            " ({} per peer: each buffer is shared with {peers} other device{})",
            unit.format(per_buffer / peers.max(1) as f64),
            if peers == 1 { "" } else { "s" }
        )
    });
    let per_peer = per_peer.unwrap_or_default();
    let whose = if same_in_per_device {
        format!(
            "; one context per device failed the same way (at {}): not a cost of sharing a context",
            per.map_or(0, |p| p.buffers)
        )
    } else {
        String::new()
    };
    Some(Statement::inferred(
        format!(
            "{} readings of the {n}-device runs against {}, and the experiments below",
            resource.label(),
            limit.name
        ),
        format!(
            "the shared context failed because {} reached {} ({} of {}): it grows {} per buffer there{per_peer}{dmabufs} and {} per buffer with one context per device; the limit predicts {predicted_count} buffers, the run failed at {observed_count}{whose}",
            resource.label(),
            limit.name,
            unit.format(*reading),
            unit.format(limit.value),
            unit.format(*per_buffer),
            unit.format(elsewhere),
        ),
    )
    )
}

pub(super) fn no_failure(shared: Option<&Report>) -> Vec<Statement> {
    let mut out = vec![Statement::measured("no run failed".to_owned())];
    let beyond = shared
        .filter(|r| r.analysis.first_limit.is_none())
        .and_then(|r| crate::analysis::nearest_limit(r).map(|a| (r.buffers, a)));
    if let Some((buffers, ahead)) = beyond {
        out.push(Statement::inferred(
            "the shared context's growth",
            format!(
                "no limit within {} times the shared context's {buffers} buffers (the nearest, {}, lies beyond): a line is not extrapolated further",
                crate::thresholds::HORIZON,
                ahead.limit.name
            ),
        ));
    }
    if let Some(ahead) = shared.and_then(|r| r.analysis.first_limit.as_ref()) {
        out.push(Statement::inferred(
            format!("{} growth in the shared context", ahead.resource.label()),
            format!(
                "first limit ahead for the shared context: {} at about {} buffers{}",
                ahead.limit.name,
                clmulti_scenario::format_count(ahead.count as f64),
                if ahead.estimated {
                    " (estimated from declared capacity)"
                } else {
                    ""
                }
            ),
        ));
    }
    out
}
