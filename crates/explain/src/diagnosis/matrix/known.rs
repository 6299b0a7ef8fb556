//! The documented facts of the platform's runtime, scoped by what the runs read of
//! the machine (its devices, kernel driver and runtime version).

use crate::knowledge::{runtime_of, Applies, Seen, SEED_ANSWER_CORRECTIONS};
use crate::report::Report;
use crate::verdict::Statement;

/// What the runs showed of the machine, for the facts' scopes.
pub(super) fn seen_in(report: &Report) -> Seen {
    let kernel_driver = report
        .neo_emulation
        .as_ref()
        .and_then(|n| n.kernel_driver)
        .map(|d| format!("{} (emulated)", d.kernel().name()))
        .or_else(|| {
            report
                .samples
                .iter()
                .flat_map(|s| &s.drm)
                .map(|d| d.driver.clone())
                .next()
        });
    Seen {
        devices: report
            .devices
            .iter()
            .map(|d| d.display_name().to_owned())
            .collect(),
        kernel_driver,
        api: "OpenCL",
        version: report
            .devices
            .first()
            .and_then(|d| d.driver_version.value().cloned()),
    }
}

/// The documented facts of the platform's runtime, each said as a fact where its
/// scope covers what the runs saw, and as "reported for X, not this machine" where not.
pub(super) fn known(platform: &str, seen: Option<Seen>) -> Vec<Statement> {
    let mut out = Vec::new();
    let seen = seen.unwrap_or_default();
    if let Some(runtime) = runtime_of(platform) {
        for fact in runtime.facts {
            let text = match fact.scope.applies(&seen) {
                Applies::Yes => format!(
                    "{}: {} (reported for {})",
                    runtime.name,
                    fact.text,
                    fact.scope.describe()
                ),
                Applies::No(why) => format!(
                    "{}: reported for {}, not this machine ({why}): {}",
                    runtime.name,
                    fact.scope.describe(),
                    fact.text
                ),
                Applies::Unread(why) => format!(
                    "{}: reported for {}; whether this machine is one was not read ({why}): {}",
                    runtime.name,
                    fact.scope.describe(),
                    fact.text
                ),
            };
            out.push(Statement::known(fact.source, text));
        }
    }
    for fact in SEED_ANSWER_CORRECTIONS {
        out.push(Statement::known(fact.source, fact.text));
    }
    out
}
