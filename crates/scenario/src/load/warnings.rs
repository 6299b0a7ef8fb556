//! What is valid but likely a mistake, each at its place in the file: a run goes
//! ahead, and `clmulti check` says it first.

use super::*;
use crate::defs::{ALLOCATION_COUNT, SAMPLING_EVERY};

impl ScenarioFile {
    /// Whether a grid axis sets a key starting with `prefix` (`"devices."`).
    pub fn varies_under(&self, prefix: &str) -> bool {
        self.axes.iter().any(|(k, _)| k.starts_with(prefix))
    }

    /// Likely mistakes in a valid file, each once, in file order: an `[env]` name one
    /// edit from a name clmulti knows (`POCL_DEVICE`), which the runtime would not
    /// read. What the machine decides (a size above a device's largest buffer, too
    /// few devices) `clmulti check` adds from the runtime itself.
    pub fn warnings(&self) -> Vec<ScenarioError> {
        let mut found: Vec<ScenarioError> = Vec::new();
        for (index, env) in self.envs() {
            for key in env.keys() {
                let Some(known) = crate::env_keys::near_miss(key) else {
                    continue;
                };
                let warning = self.error_in_run(
                    index,
                    &format!("env.{key}"),
                    &format!(
                        "clmulti knows no variable {key}, and the runtime may read none by that name: did you mean {known}?"
                    ),
                );
                if !found.contains(&warning) {
                    found.push(warning);
                }
            }
        }
        found.extend(self.sampling_warnings());
        found.sort_by_key(|e| (e.line, e.column));
        found
    }

    /// A `sampling.every` written at or above a fixed count: no reading between the first and
    /// the last, so no cost per buffer can be fitted (the first run says it for all
    /// unless the grid varies either key).
    fn sampling_warnings(&self) -> Vec<ScenarioError> {
        // The default (1000) above a small count is no one's mistake.
        let written = value_at(&self.base, &split_key(SAMPLING_EVERY.name)).is_some()
            || self.varies(SAMPLING_EVERY.name);
        if !written {
            return Vec::new();
        }
        let varies = self.varies(SAMPLING_EVERY.name) || self.varies(ALLOCATION_COUNT.name);
        let runs = if varies {
            self.runs.min(10_000)
        } else {
            self.runs.min(1)
        };
        let mut found: Vec<ScenarioError> = Vec::new();
        for index in 0..runs {
            let Ok(run) = self.run(index) else { continue };
            let crate::Count::Fixed(count) = run.allocation.count else {
                continue;
            };
            if run.sample_every < count {
                continue;
            }
            let warning = self.error_in_run(
                index,
                SAMPLING_EVERY.name,
                &format!(
                    "{} is not below allocation.count ({count}): no reading between the first and the last, so no cost per buffer can be measured; sample at most every {} (a tenth of the count)",
                    run.sample_every,
                    (count / 10).max(1)
                ),
            );
            if !found.contains(&warning) {
                found.push(warning);
            }
        }
        found
    }
}
