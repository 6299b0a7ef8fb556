//! What a file's runs set in `[env]`, read once per distinct `[env]`, and what the
//! file is: its text, its real path and folder, where clmulti's libraries are.

use super::*;

impl ScenarioFile {
    /// Every distinct `[env]` the file's runs set, each once, with the first run
    /// that sets it, in run order: what a run may make its process load. A run's
    /// `[env]` (paths resolved, placeholders filled) depends only on the grid's
    /// `env.` and `devices.` axes, so the runs are read in one pass: a combination
    /// of those axes' values counts once the `[env]` of one of its runs reads (that
    /// of a run invalid for another reason counts too: it is never less than what
    /// runs). Linear in the runs: 100 000 values of an `env.` axis are read in one
    /// pass.
    pub fn envs(&self) -> Vec<(usize, BTreeMap<String, String>)> {
        let varying: Vec<usize> = (0..self.axes.len())
            .filter(|&a| {
                let key = &self.axes[a].0;
                key.starts_with("env.") || key.starts_with("devices.")
            })
            .collect();
        let mut read: std::collections::HashSet<Vec<usize>> = std::collections::HashSet::new();
        let mut seen: std::collections::HashSet<BTreeMap<String, String>> =
            std::collections::HashSet::new();
        let mut envs = Vec::new();
        for index in 0..self.runs {
            let point = self.point(index);
            let combination: Vec<usize> = varying.iter().map(|&a| point[a].unwrap_or(0)).collect();
            if read.contains(&combination) {
                continue;
            }
            let Some(env) = self.env_at(&point) else {
                continue;
            };
            read.insert(combination);
            if seen.insert(env.clone()) {
                envs.push((index, env));
            }
        }
        envs
    }

    /// The `[env]` of the run at `point`, when its `[devices]` and `[env]` read.
    fn env_at(&self, point: &[Option<usize>]) -> Option<BTreeMap<String, String>> {
        let (table, _) = self.table_at(&self.base, point).ok()?;
        let raw: RawScenario = toml::Value::Table(table).try_into().ok()?;
        crate::validate::env_only(raw, &self.context).ok()
    }

    /// The file's text, as read and parsed: what a run runs (and what trust hashes).
    pub fn text(&self) -> &str {
        self.doc.raw()
    }

    /// The file read, links resolved: what trust is given to (`None` for text
    /// parsed without a file).
    pub fn real_path(&self) -> Option<&Path> {
        self.real.as_deref()
    }

    /// The folder the file's relative paths resolve against: its own, links
    /// resolved (`None` for text parsed without a file).
    pub fn folder(&self) -> Option<&Path> {
        self.context.base_dir.as_deref()
    }

    /// The folder of the project's libraries (`{clmulti-layer}` and the others).
    pub fn libraries(&self) -> Option<&Path> {
        self.context.libraries.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_distinct_env_is_read_once_placeholders_included() {
        let dir = std::env::temp_dir().join(format!("clmulti-envs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in [1, 2] {
            std::fs::write(dir.join(format!("p{n}.so")), "").unwrap();
        }
        let file = dir.join("grid.toml");
        // The device count a grid over indices gives names a library of its own.
        std::fs::write(
            &file,
            "[env]\nLD_PRELOAD = \"./p{devices.count}.so\"\n[grid]\n\"devices.indices\" = [[0], [0, 1]]\n\"allocation.count\" = [1, 2, 3]\n",
        )
        .unwrap();
        let parsed = ScenarioFile::load(&file).unwrap();
        let preloads: Vec<(usize, String)> = parsed
            .envs()
            .into_iter()
            .map(|(i, env)| (i, env["LD_PRELOAD"].clone()))
            .collect();
        let real = std::fs::canonicalize(&dir).unwrap();
        let p = |n: u32| real.join(format!("./p{n}.so")).display().to_string();
        // Axes in key order: allocation.count first.
        assert_eq!(preloads, [(0, p(1)), (1, p(2))]);
        // The runs of a combination count once its [env] reads, even past a run
        // invalid for another reason.
        std::fs::write(
            &file,
            "[allocation]\ncount = \"x\"\n[grid]\n\"allocation.count\" = [\"bad\", 2]\n\"env.A\" = [\"1\", \"2\"]\n",
        )
        .unwrap();
        let parsed = ScenarioFile::parse(&std::fs::read_to_string(&file).unwrap(), "g.toml");
        let values: Vec<String> = parsed
            .unwrap()
            .envs()
            .into_iter()
            .map(|(_, env)| env["A"].clone())
            .collect();
        assert_eq!(values, ["1", "2"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
