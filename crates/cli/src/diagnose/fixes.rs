//! The fixes of a failing shared case, each re-run as the shared case with the fix
//! applied (or not run, with why: a system setting, another runtime, a failure that
//! does not hold still).

use super::*;

/// A fix and its run, or why it was not run.
pub(super) type FixRun = (Fix, Result<Report, String>);

/// Runs each fix that applies on the shared case (the per-device case is the
/// matrix's own run; system settings are never changed).
pub(super) fn run_fixes(
    shared: &Report,
    per_device: Option<&Report>,
) -> Result<Vec<FixRun>, Failure> {
    let mut out = Vec::new();
    // A failure that does not hold still gives no fix a fair test.
    let void = match &shared.analysis.cause {
        Some(Cause::Persistent { counts }) => Some(format!(
            "void: the limit persists across processes (re-runs failed at {}), so no later run can show a fix",
            counts.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        )),
        Some(Cause::NotReproducible { counts }) => Some(format!(
            "void: the failure is not reproducible (re-runs failed at {}), so one run of a fix shows nothing",
            counts.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        )),
        _ => None,
    };
    for (i, (fix, untested)) in fixes_for(shared).into_iter().enumerate() {
        if let Some(reason) = untested.or_else(|| void.clone()) {
            out.push((fix, Err(reason)));
            continue;
        }
        if let Some(signal) = stop_signal() {
            out.push((fix, Err(stopped_words(signal))));
            continue;
        }
        let mut scenario = shared.scenario.clone();
        scenario.name = format!("fix-{}", i + 1);
        match &fix {
            Fix::PerDeviceContexts => {
                let per = per_device
                    .cloned()
                    .ok_or_else(|| "no per-device run".to_owned());
                out.push((fix, per));
                continue;
            }
            Fix::SystemSetting { .. } => {
                out.push((
                    fix,
                    Err("clmulti never changes a system-wide setting".into()),
                ));
                continue;
            }
            Fix::UpgradeRuntime { .. } => {
                out.push((
                    fix,
                    Err("another runtime is diagnosed on its own (--compare)".into()),
                ));
                continue;
            }
            Fix::RaiseSoftLimit { limit, to } => {
                scenario.limits.soft.insert(*limit, *to);
            }
            Fix::Pin => scenario.allocation.strategy = Strategy::Pin,
            Fix::Pool => {
                scenario.allocation.strategy = Strategy::Pool;
                scenario.allocation.pool_size_bytes =
                    Some(scenario.allocation.size_bytes.max(256 << 20));
            }
            Fix::RuntimeKnob { env, .. } => scenario.env.extend(env.iter().cloned()),
        }
        let report = run_case(&scenario)?;
        // A fix stopped part way shows nothing about the fix.
        let judged = match report.stop {
            StopReason::Interrupted { signal, .. } => Err(stopped_words(signal)),
            _ => Ok(report),
        };
        out.push((fix, judged));
    }
    Ok(out)
}
