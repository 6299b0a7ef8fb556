//! Two diagnoses of the same question side by side: another runtime (a newer release,
//! say) on the same machine, as measured by its own `clmulti diagnose`. What each
//! shared context reached, what a buffer cost there, what the driver counted, and
//! whether the other runtime is the upgrade the fixes name.

use super::{Diagnosis, Fix, Outcome, Role};
use crate::resource::Resource;
use crate::verdict::Statement;
use crate::words;
use clmulti_scenario::Strategy;

/// The resources the side-by-side names, in order.
const COMPARED: [Resource; 6] = [
    Resource::OpenFds,
    Resource::DmabufFds,
    Resource::MemoryMaps,
    Resource::HostRss,
    Resource::VirtualSize,
    Resource::DataSize,
];

impl Diagnosis {
    /// The runtime and version in words: "NEO 22.43.24595" or the platform's name.
    fn runtime_words(&self) -> String {
        match &self.neo_emulation {
            Some(neo) => format!("NEO {}", neo.version),
            None => self.platform.clone(),
        }
    }

    fn shared_outcome(&self, strategy: Strategy) -> Option<String> {
        let run = self
            .runs
            .iter()
            .find(|r| r.role == Role::Shared && r.strategy == strategy)?;
        Some(if run.outcome.ended_early() {
            format!(
                "{} after {} buffers",
                run.outcome.name().to_uppercase(),
                run.buffers
            )
        } else {
            format!("completed {} buffers", run.buffers)
        })
    }

    /// What a buffer cost the shared context; a resource without a row grew by
    /// nothing measurable where the strategy ran (rows keep only what grows).
    fn shared_cost(&self, strategy: Strategy, resource: &Resource) -> Option<f64> {
        let ran = self.sharing_costs.iter().any(|c| c.strategy == strategy);
        self.sharing_costs
            .iter()
            .find(|c| c.strategy == strategy && &c.resource == resource)
            .map_or(ran.then_some(0.0), |c| c.shared)
    }

    fn shared_counts(&self, strategy: Strategy) -> Option<String> {
        self.kernel_counts
            .iter()
            .find(|k| {
                k.role == Role::Shared
                    && k.strategy == strategy
                    && super::is_kernel_counts(&k.source)
            })
            .map(|k| words::kernel_counts_list(&k.per_buffer))
    }

    /// Adds `other` (read from `source`) beside this diagnosis: one measured statement
    /// per strategy both ran, and the upgrade fix judged by it when `other` is that
    /// runtime at or past the version the fix names.
    pub fn compare(&mut self, other: &Diagnosis, source: &str) {
        let (this, that) = (self.runtime_words(), other.runtime_words());
        let mut statements = Vec::new();
        for strategy in [Strategy::Create, Strategy::Fill] {
            let (Some(a), Some(b)) = (
                self.shared_outcome(strategy),
                other.shared_outcome(strategy),
            ) else {
                continue;
            };
            let costs: Vec<String> = COMPARED
                .iter()
                .filter_map(|r| {
                    let (x, y) = (
                        self.shared_cost(strategy, r),
                        other.shared_cost(strategy, r),
                    );
                    (x.is_some() || y.is_some()).then(|| {
                        let show = |v: Option<f64>| v.map_or("-".into(), |v| r.unit().format(v));
                        format!("{} {} vs {}", r.label(), show(x), show(y))
                    })
                })
                .collect();
            let counts = match (self.shared_counts(strategy), other.shared_counts(strategy)) {
                (Some(x), Some(y)) => format!("; the kernel driver counted {x} against {y}"),
                _ => String::new(),
            };
            let instead_of = (strategy == Strategy::Create)
                .then(|| instead(self, other, &this, &that))
                .flatten();
            statements.push(Statement::measured(format!(
                "side by side with {} ({source}), strategy {}: the shared context {} with {this} and {} with {that}; per buffer there, {this} vs {that}: {}{counts}",
                other.neo_emulation.as_ref().map_or_else(|| other.platform.clone(), |n| n.label()),
                strategy.name(),
                a,
                b,
                if costs.is_empty() { "no reading in both".into() } else { costs.join(", ") },
            )));
            statements.extend(instead_of);
        }
        let at = self
            .verdict
            .iter()
            .position(|s| s.tag() == "known")
            .unwrap_or(self.verdict.len());
        self.verdict.splice(at..at, statements);
        self.judge_upgrade(other, source);
    }

    /// The upgrade fix, judged by the other runtime's shared case when it is that
    /// runtime at or past the version the fix names.
    fn judge_upgrade(&mut self, other: &Diagnosis, source: &str) {
        let Some(version) = other.neo_emulation.as_ref().map(|n| n.version.clone()) else {
            return;
        };
        let Some(run) = other
            .runs
            .iter()
            .find(|r| r.role == Role::Shared && r.strategy == Strategy::Create)
        else {
            return;
        };
        for fix in &mut self.fixes {
            let Fix::UpgradeRuntime { to, .. } = &fix.fix else {
                continue;
            };
            if crate::knowledge::version_before(&version, to) {
                continue;
            }
            let stop = format!("NEO {version}: {} (measured: {source})", run.headline);
            fix.outcome = if run.outcome.ended_early() {
                Outcome::DidNotWork {
                    buffers: run.buffers,
                    stop,
                }
            } else {
                Outcome::Worked {
                    buffers: run.buffers,
                    stop,
                }
            };
        }
    }
}

/// What the other runtime's shared context costs per buffer that this one's does not:
/// the readings that grow more there, and the GEM objects its driver made instead.
fn instead(this: &Diagnosis, other: &Diagnosis, a: &str, b: &str) -> Option<Statement> {
    let strategy = Strategy::Create;
    let more: Vec<String> = COMPARED
        .iter()
        .filter_map(|r| {
            let (x, y) = (
                this.shared_cost(strategy, r)?,
                other.shared_cost(strategy, r)?,
            );
            super::differs(r, x, y)
                .then_some(y - x)
                .filter(|d| *d > 0.0)
                .map(|d| format!("{} +{}", r.label(), r.unit().format(d)))
        })
        .collect();
    let local: f64 = other
        .kernel_counts
        .iter()
        .find(|k| {
            k.role == Role::Shared && k.strategy == strategy && super::is_kernel_counts(&k.source)
        })?
        .per_buffer
        .iter()
        // Device memory: i915's local0, xe's vram0.
        .filter(|(k, _)| {
            k.starts_with("objects-") && (k.ends_with("-local0") || k.ends_with("-vram0"))
        })
        .map(|(_, v)| v)
        .sum();
    if more.is_empty() && local < 0.5 {
        return None;
    }
    let objects = if local >= 0.5 {
        format!(
            "; the driver made {} GEM objects in device memory per buffer (one on each GPU): each takes its size of that GPU's memory once used, a kernel-side cost modelled here, not measured",
            words::figure(local)
        )
    } else {
        String::new()
    };
    Some(Statement::inferred(
        format!(
            "the shared contexts' readings and kernel counts of the two diagnoses ({a} and {b})"
        ),
        format!(
            "what {b} costs per shared buffer instead: {}{objects}",
            if more.is_empty() {
                "no host reading grows more".to_owned()
            } else {
                more.join(", ")
            }
        ),
    ))
}
