//! Every problem of a scenario file at once, for `clmulti check`: each run checked,
//! and checked again with each problem's key left out to find the next.

use super::*;

impl ScenarioFile {
    /// Read and checked as [`load`](Self::load) does; only TOML syntax, or a key that
    /// must be a table, stops it at one problem. At most [`MAX_PROBLEMS`].
    ///
    /// After each problem the run is checked again as if its key were not written, so
    /// that the next is found; a problem at a key whose checks read a key left out so
    /// far is not reported (the default standing in for it may be what is wrong). A
    /// grid value with a problem is reported once, and its axis is left out of the
    /// runs that take it.
    ///
    /// ```
    /// let keys: Vec<String> = clmulti_scenario::ScenarioFile::problems_in_text(
    ///     "[allocation]\nsize = \"1 parsec\"\ncount = -3\n[sampling]\nevery = 0\n",
    ///     "two.toml",
    /// )
    /// .into_iter()
    /// .map(|e| e.key.unwrap())
    /// .collect();
    /// assert_eq!(keys, ["allocation.size", "allocation.count", "sampling.every"]);
    /// ```
    pub fn problems_in(path: &Path) -> Vec<ScenarioError> {
        let file = path.display().to_string();
        let real = real_path(path);
        match read_text(&real, &file) {
            Ok(text) => Self::problems_with(text, &file, Self::machine_context(&real)),
            Err(e) => vec![e],
        }
    }

    /// [`problems_in`](Self::problems_in) for scenario text; `file` names it.
    pub fn problems_in_text(text: &str, file: &str) -> Vec<ScenarioError> {
        Self::problems_with(text.to_owned(), file, Context::default())
    }

    fn problems_with(text: String, file: &str, context: Context) -> Vec<ScenarioError> {
        let (parsed, mut found) = match Self::parse_lenient(text, file, context) {
            Ok(parsed) => parsed,
            Err(e) => return vec![e],
        };
        for problem in parsed.run_problems() {
            if !found.contains(&problem) {
                found.push(problem);
            }
        }
        // All found, then the first in the file.
        found.sort_by_key(|e| (e.line, e.column));
        found.truncate(MAX_PROBLEMS);
        found
    }

    /// The problems of the runs, as [`problems_in`](Self::problems_in) finds them.
    fn run_problems(&self) -> Vec<ScenarioError> {
        let mut base = self.base.clone();
        // The file's keys left out so far, and the grid values with a problem.
        let mut left_out: Vec<String> = Vec::new();
        let mut bad_values: std::collections::HashSet<(usize, usize)> =
            self.repeats.iter().copied().collect();
        // Points with an axis left out, checked over the current base: runs that
        // differ only in a bad value become one (a whole point is checked once anyway).
        let mut checked = std::collections::HashSet::new();
        let mut found: Vec<ScenarioError> = Vec::new();
        'runs: for index in 0..self.runs {
            // A bad value's axis is left out of the run: the rest is still checked.
            let mut point = self.point(index);
            for (axis, i) in point.iter_mut().enumerate() {
                if i.is_some_and(|i| bad_values.contains(&(axis, i))) {
                    *i = None;
                }
            }
            // Each pass leaves a key or an axis out, so a run takes at most as many
            // passes as it has keys.
            loop {
                if point.contains(&None) && !checked.insert(point.clone()) {
                    continue 'runs;
                }
                let Err(problem) = self.run_from(&base, &point) else {
                    continue 'runs;
                };
                let RunProblem { key, error } = *problem;
                let message = error.message.clone();
                let own = key_of(&key);
                let omitted = point
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| i.is_none())
                    .map(|(axis, _)| self.axes[axis].0.as_str());
                let maybe_a_default = left_out
                    .iter()
                    .map(String::as_str)
                    .chain(omitted)
                    .any(|other| reads(own, other));
                if !maybe_a_default && !found.contains(&error) {
                    found.push(error);
                    // Enough to sort the first MAX_PROBLEMS of the file from.
                    if found.len() >= SEARCHED_PROBLEMS {
                        break 'runs;
                    }
                }
                if let Some((axis, i)) = self.axis_setting(&point, &key) {
                    bad_values.insert((axis, i));
                    point[axis] = None;
                    continue;
                }
                // Its unknown siblings at once: one pass each would make the search
                // quadratic in a file of many unknown tables.
                for (sibling, error) in self.unknown_siblings(&base, &key, &message) {
                    if let Some(error) = error.filter(|e| !found.contains(e)) {
                        found.push(error);
                    }
                    leave_out(&mut base, &sibling);
                }
                if !leave_out(&mut base, &key) {
                    // A problem with no key of its own to leave out: the file's, not a run's.
                    break 'runs;
                }
                left_out.push(own.to_owned());
                // Points checked over the old base may fail over the new one.
                checked.clear();
            }
        }
        found
    }
}

impl ScenarioFile {
    /// For a problem `unknown field `x`, expected one of `a`, `b``: the other keys
    /// of `x`'s table that are not expected either, each with its own error.
    fn unknown_siblings(
        &self,
        base: &toml::Table,
        key: &str,
        message: &str,
    ) -> Vec<(String, Option<ScenarioError>)> {
        let Some((own, expected)) = crate::locate::unknown_field(message) else {
            return Vec::new();
        };
        // The message without its hint: each sibling gets its own.
        let message = message.split("; did you mean").next().unwrap_or(message);
        let mut path = split_key(key);
        if path.last().map(String::as_str) != Some(own) {
            return Vec::new();
        }
        path.pop();
        let mut table = base;
        for segment in &path {
            match table.get(segment) {
                Some(toml::Value::Table(inner)) => table = inner,
                _ => return Vec::new(),
            }
        }
        // Placed by offset first (cheap), and only the first in the file as errors
        // (a line and column cost a scan of the text before them).
        let mut unknown: Vec<(usize, Vec<String>)> = table
            .keys()
            .filter(|k| k.as_str() != own && !expected.contains(&k.as_str()))
            .map(|k| {
                let mut at = path.clone();
                at.push(k.clone());
                let offset = crate::locate::walk(&self.doc, &at)
                    .0
                    .map_or(usize::MAX, |s| s.start);
                (offset, at)
            })
            .collect();
        unknown.sort();
        unknown
            .into_iter()
            .enumerate()
            .map(|(i, (_, at))| {
                let sibling = at.join(".");
                let error = (i < SEARCHED_PROBLEMS).then(|| {
                    let name = at.last().map_or("", String::as_str);
                    let text = format!(
                        "{}{}",
                        message.replacen(&format!("`{own}`"), &format!("`{name}`"), 1),
                        crate::suggest::hint(name, expected.iter().copied())
                    );
                    let mut error = crate::locate::at_key(&self.doc, &self.file, &at, &text);
                    error.key = Some(crate::locate::short(&sibling));
                    error
                });
                (sibling, error)
            })
            .collect()
    }
}

/// The most problems [`ScenarioFile::problems_in`] reports.
pub const MAX_PROBLEMS: usize = 100;
/// The most problems of runs it looks for before sorting them by place.
const SEARCHED_PROBLEMS: usize = 10 * MAX_PROBLEMS;

/// `allocation.flags` for `allocation.flags[1]`: the key a list's item belongs to.
fn key_of(key: &str) -> &str {
    key.split('[').next().unwrap_or(key)
}

/// Whether the checks of `key` read `other` (`allocation.placement` reads
/// `devices.count`): with `other` left out, a problem at `key` may be its default's.
fn reads(key: &str, other: &str) -> bool {
    // The layer and its policy are checked together: one left out is not the other's problem.
    let layer = [
        "env.OPENCL_LAYERS".to_owned(),
        format!("env.{}", clmulti_contract::layer::POLICY),
    ];
    crate::defs::reads(key, other)
        || (layer.iter().any(|k| k == key) && layer.iter().any(|k| k == other))
}

/// Takes `key` (`allocation.size`; a list's item takes its whole list) out of
/// `table`; false when the table does not hold it.
fn leave_out(table: &mut toml::Table, key: &str) -> bool {
    let path: Vec<String> = split_key(key)
        .into_iter()
        .take_while(|segment| segment.parse::<usize>().is_err())
        .collect();
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut table = table;
    for parent in parents {
        match table.get_mut(parent) {
            Some(toml::Value::Table(inner)) => table = inner,
            _ => return false,
        }
    }
    table.remove(last).is_some()
}
