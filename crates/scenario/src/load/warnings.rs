//! What is valid but likely a mistake, each at its place in the file: a run goes
//! ahead, and `clmulti check` says it first.

use super::*;

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
        found.sort_by_key(|e| (e.line, e.column));
        found
    }
}
