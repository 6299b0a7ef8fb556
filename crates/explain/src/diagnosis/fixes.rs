//! The fixes that apply to a failing (or limit-bound) shared case, and why the
//! others are not tried.

use super::{cost_of, Fix};
use crate::experiment::{plan, Plan};
use crate::knowledge::runtime_of;
use crate::report::Report;
use crate::resource::Resource;
use crate::verdict::{Candidate, CandidateTest};
use clmulti_scenario::{Rlimit, Strategy};

/// The most a raised soft limit on a count (descriptors, processes) is set to.
const MAX_RAISED_COUNT: u64 = 1 << 20;

/// The fixes for a shared case, each with `Some(reason)` when it is not tried.
pub fn fixes_for(shared: &Report) -> Vec<(Fix, Option<String>)> {
    let mut fixes = vec![(Fix::PerDeviceContexts, None)];
    for which in soft_limits_in_question(shared) {
        fixes.push(raise(shared, which));
    }
    for candidate in shared.analysis.candidates.iter().filter(|c| not_refuted(c)) {
        if let Plan::NotTestable {
            command: Some(command),
            ..
        } = plan(candidate, shared)
        {
            if !command.starts_with("systemd-run") {
                fixes.push((
                    Fix::SystemSetting {
                        setting: candidate.limit.name.clone(),
                        command,
                    },
                    Some("clmulti never changes a system-wide setting".into()),
                ));
            }
        }
    }
    // Pinned and pooled runs create their buffers and never touch them: no test of a
    // failure that came with filling or migrating them.
    let strategy = shared.scenario.allocation.strategy;
    let touches = matches!(strategy, Strategy::Fill | Strategy::Migrate).then(|| {
        format!(
            "the failing case's buffers were touched (strategy {}), and this fix's run only creates them: it would not do what failed",
            strategy.name()
        )
    });
    fixes.push((
        Fix::Pin,
        (!shared.devices.iter().all(|d| d.pins_buffers()))
            .then(|| {
                format!(
                    "the devices do not list {} and are not NEO's, which takes the property without listing it",
                    clmulti_probe::PIN_EXTENSION
                )
            })
            .or_else(|| touches.clone()),
    ));
    fixes.push((
        Fix::Pool,
        (strategy == Strategy::Pool)
            .then(|| "the run already pools".into())
            .or(touches),
    ));
    if let Some(upgrade) = upgrade(shared) {
        fixes.push(upgrade);
    }
    if runtime_of(&shared.platform).is_some_and(|r| r.name.starts_with("Intel compute-runtime")) {
        for (key, value) in [
            ("ForceZeDeviceCanAccessPerReturnValue", "0"),
            ("EnableDeferBacking", "0"),
        ] {
            fixes.push((
                Fix::RuntimeKnob {
                    env: vec![
                        ("NEOReadDebugKeys".into(), "1".into()),
                        (key.into(), value.into()),
                    ],
                    source: "intel/compute-runtime#980".into(),
                },
                None,
            ));
        }
    }
    fixes
}

/// NEO before the release that closes the dma-buf descriptor of a shared buffer, when
/// descriptors grow per buffer in the shared case: the upgrade, which a diagnosis of
/// the newer runtime on the same machine measures (`clmulti diagnose --compare`).
fn upgrade(shared: &Report) -> Option<(Fix, Option<String>)> {
    let runtime = runtime_of(&shared.platform)?;
    let version = shared.devices.first()?.driver_version.value()?.clone();
    let fixed_in = crate::knowledge::NEO_FD_LEAK_FIXED_IN;
    let leaks = runtime
        .facts
        .contains(&crate::knowledge::NEO_FD_PER_SHARED_BUFFER)
        && crate::knowledge::version_before(&version, fixed_in)
        && cost_of(shared, &Resource::OpenFds).is_some_and(|c| c >= 0.5);
    leaks.then(|| {
        (
            Fix::UpgradeRuntime {
                runtime: "NEO".into(),
                from: version,
                to: format!("{fixed_in}.1"),
                source: "intel/compute-runtime commit 890724c562".into(),
            },
            Some("the newer runtime is not installed beside this one: diagnose it on this machine and pass its diagnose.json with --compare".into()),
        )
    })
}

fn not_refuted(c: &Candidate) -> bool {
    !matches!(c.test, CandidateTest::Refuted { .. })
}

/// The soft limits the shared case meets: its candidates' (unless refuted), and the
/// open-file limit whenever descriptors grow per buffer (the seed's suspect).
fn soft_limits_in_question(shared: &Report) -> Vec<Rlimit> {
    let mut limits: Vec<Rlimit> = shared
        .analysis
        .candidates
        .iter()
        .filter(|c| not_refuted(c))
        .filter_map(|c| c.limit.rlimit())
        .collect();
    if let Some(ahead) = shared
        .analysis
        .first_limit
        .as_ref()
        .and_then(|a| a.limit.rlimit())
    {
        limits.push(ahead);
    }
    let fds_grow = cost_of(shared, &Resource::OpenFds).is_some_and(|c| c >= 0.01);
    if fds_grow && shared.analysis.cause.is_some() {
        limits.push(Rlimit::NoFile);
    }
    limits.sort();
    limits.dedup();
    limits
}

/// Raising one soft limit to the hard one, or why it cannot be.
fn raise(shared: &Report, which: Rlimit) -> (Fix, Option<String>) {
    let values = shared.host_limits.values(which);
    let soft = values.soft.unwrap_or(u64::MAX);
    // The hard limit, or where the process may raise that too (root), the kernel's
    // ceiling: what root can do.
    let target = match shared.host_limits.raisable(which) {
        Some(ceiling) => ceiling,
        None if which.in_bytes() => soft.saturating_mul(16),
        None => MAX_RAISED_COUNT.max(soft.saturating_mul(2)),
    };
    let target = if which.in_bytes() {
        target
    } else {
        target.min(MAX_RAISED_COUNT.max(soft))
    };
    let why_not = if !shared.host_limits.enforced(which) {
        Some(format!(
            "the kernel does not enforce {} for root: run as an ordinary user",
            which.name()
        ))
    } else if target <= soft {
        Some(format!(
            "the soft limit ({soft}) is already the hard limit, and raising the hard one needs CAP_SYS_RESOURCE, which this process does not have{}",
            if shared.host_limits.root {
                " (it runs as root, in a container or sandbox that dropped the capability)"
            } else {
                " (root has it)"
            }
        ))
    } else {
        None
    };
    // Where it cannot be raised here, the fix names a value past the hard limit: what
    // a process that may raise it (root with CAP_SYS_RESOURCE) would set.
    let to = if target <= soft && !which.in_bytes() {
        soft.saturating_mul(2)
    } else {
        target
    };
    (Fix::RaiseSoftLimit { limit: which, to }, why_not)
}

/// For a fix whose run failed too: the same limit reached again (at its raised value,
/// or in each context of its own) or another one, judged by the fix run's own readings
/// and by what the shared case's cause and shape predict for it.
pub(crate) fn fix_claim(fix: &Fix, run: &Report, shared: &Report) -> Option<crate::claim::Claim> {
    use crate::claim::{Alternative, Claim, Topic};
    use crate::report::StopReason;
    if !matches!(run.stop, StopReason::Failed { .. }) {
        return None;
    }
    let mut same = Alternative::new(
        "same-limit",
        "the limit the shared context met, reached again",
    );
    let mut other = Alternative::new("other-limit", "another limit");
    let cause = cause_resource(shared);
    let met = crate::verdict::LimitMet::of(run);
    match (&met, &cause) {
        (Some(m), Some((resource, _))) if &m.resource == resource => {
            let by = format!("the fix run's own readings show {}", m.words());
            same = same.supported(by.clone());
            other = other.excluded(by);
        }
        (Some(m), _) => {
            other = other.supported(format!("the fix run's own readings show {}", m.words()));
            if let Some((resource, _)) = &cause {
                same = same.excluded(format!(
                    "{} was not at its limit in the fix run",
                    resource.label()
                ));
            }
        }
        (None, Some((resource, limit))) => {
            let room = run
                .costs
                .iter()
                .find(|c| &c.resource == resource)
                .and_then(|c| c.limit.as_ref().map(|l| (c.last, l.value)));
            match room {
                Some((reading, value))
                    if value - reading > 2.0 * cost_of(run, resource).unwrap_or(1.0).max(1.0) =>
                {
                    let unit = resource.unit();
                    same = same.excluded(format!(
                        "{} read {} of {} when the fix run failed: room left",
                        resource.label(),
                        unit.format(reading),
                        unit.format(value)
                    ));
                    other = other.supported("no other explanation is left".to_owned());
                }
                _ => {
                    let why = format!("the fix run's readings do not show whether {limit} was met");
                    same = same.open(why.clone());
                    other = other.open(why);
                }
            }
        }
        (None, None) => match predicted_by_shape(fix, shared) {
            Some((predicted, why)) if crate::analysis::counts_match(predicted, run.buffers) => {
                let by = format!(
                    "{why} predicts about {predicted} buffers; the fix run failed at {}",
                    run.buffers
                );
                same = same.supported(by.clone());
                other = other.open(format!(
                    "{by}: another limit at the same place would read the same"
                ));
            }
            _ => {
                let why = "neither the fix run's readings nor what the experiments found of the limit say which";
                same = same.open(why);
                other = other.open(why);
            }
        },
    }
    Some(Claim::new(
        Topic::Fix,
        format!("what stopped the run with {}", fix.label()),
        vec![same, other],
    ))
}

/// The resource the shared case's cause names, confirmed or settled by its failing call.
fn cause_resource(shared: &Report) -> Option<(Resource, String)> {
    use crate::verdict::Cause;
    match &shared.analysis.cause {
        Some(
            Cause::Resource {
                resource, limit, ..
            }
            | Cause::OneSided {
                resource, limit, ..
            },
        ) => Some((resource.clone(), limit.name.clone())),
        _ => None,
    }
}

/// Where a fix run fails if the shared case's unseen limit is what its shape
/// experiments settled on: one of its own per context, or the same bytes in pools.
fn predicted_by_shape(fix: &Fix, shared: &Report) -> Option<(u64, String)> {
    use crate::verdict::ShapeQuestion;
    let settled = |q: ShapeQuestion, key: &str| {
        shared
            .analysis
            .shape
            .iter()
            .any(|f| f.question == q && f.settles_on(key))
    };
    let n = shared.buffers;
    let devices = shared.devices.len().max(shared.scenario.devices.set.len()) as u64;
    match fix {
        Fix::PerDeviceContexts if settled(ShapeQuestion::PerContextOrProcess, "context") => Some((
            n * devices,
            "a limit each context has of its own (the experiments found it per context)".into(),
        )),
        Fix::PerDeviceContexts
            if ["process", "user", "cgroup", "system"]
                .iter()
                .any(|k| settled(ShapeQuestion::PerContextOrProcess, k)) =>
        {
            Some((
                n,
                "a limit shared by every context (the experiments found it so)".into(),
            ))
        }
        Fix::Pool if settled(ShapeQuestion::CountOrBytes, "bytes") => Some((
            n,
            "a limit on bytes (the experiments found it counts bytes)".into(),
        )),
        _ => None,
    }
}
