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
    fixes.push((
        Fix::Pin,
        (!shared.devices.iter().all(|d| d.pins_buffers())).then(|| {
            format!(
                "the devices do not list {} and are not NEO's, which takes the property without listing it",
                clmulti_probe::PIN_EXTENSION
            )
        }),
    ));
    fixes.push((
        Fix::Pool,
        (shared.scenario.allocation.strategy == Strategy::Pool)
            .then(|| "the run already pools".into()),
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
