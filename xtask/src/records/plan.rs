//! A sweep's plan (`plan.json`): the runs it means to make, so that a merge or a
//! summary can say which are missing.

use super::*;

/// What a sweep set out to do in its folder (`plan.json`, written before the first
/// run): `merge` compares it with the records to name shards that stopped early.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// The whole plan's identity: [`plan_identity`] of [`runs`](Self::runs), which
    /// a merge computes again. `None` in plans written before it was kept.
    #[serde(default)]
    pub plan_id: Option<String>,
    /// Every run of the whole plan before sharding, in order, by [`run_identity`]
    /// (a run that does not expand: [`INVALID`] and its problem's hash). Empty in
    /// plans written before they listed it: such a plan cannot be checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// `[K, N]` for `--shard K/N`.
    pub shard: Option<(usize, usize)>,
    /// The machine it ran on, in words.
    pub host: String,
    /// The key of every run planned in this folder, done before or not.
    pub keys: Vec<String>,
    /// Every start of a sweep on this plan, oldest first: a shard requeued onto
    /// another node has two, naming both hosts.
    #[serde(default)]
    pub starts: Vec<Start>,
}

/// What marks a planned run that does not expand (its problem's hash follows).
pub const INVALID: &str = "invalid:";

/// A run's identity: the hash of its scenario as a record stores it, on any machine.
pub fn run_identity(scenario: &clmulti_scenario::Scenario) -> String {
    fnv64(&serde_json::to_string(scenario).unwrap_or_default())
}

/// A plan's identity: the hash of its runs' identities, in order. Shards of one plan
/// share it; a merge computes it again from the runs the plan lists.
pub fn plan_identity(runs: &[String]) -> String {
    fnv64(&runs.join("\n"))
}

/// One start of a sweep in a folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    /// The host name (the kernel's; a node's own on a cluster).
    pub host: String,
    /// The sweep's process id on that host.
    pub pid: u32,
    /// Unix seconds.
    pub at: u64,
    /// Planned runs already done when it started.
    pub done: usize,
}

impl Plan {
    pub const FILE_NAME: &'static str = "plan.json";

    pub fn write(&self, folder: &Path) -> std::io::Result<()> {
        clmulti::output::write_file(&folder.join(Self::FILE_NAME), &serde_json::to_vec(self)?)
    }

    /// The folder's plan; `None` when it has none (a sweep older than plans). A plan
    /// that does not read is an error naming the file, line and column.
    pub fn read(folder: &Path) -> Result<Option<Plan>, String> {
        let path = folder.join(Self::FILE_NAME);
        let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let Some(file) = open_regular(&path).map_err(|e| fail(&e))? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.take(MAX_PLAN_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(&e))?;
        if bytes.len() as u64 > MAX_PLAN_BYTES {
            return Err(fail(&format!(
                "larger than {} MiB: not a plan",
                MAX_PLAN_BYTES >> 20
            )));
        }
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            fail(&format!(
                "line {} column {}: not a plan: {e}",
                e.line(),
                e.column()
            ))
        })
    }
}
