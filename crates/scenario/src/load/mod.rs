//! Reading scenario files: TOML syntax, grid expansion, and errors that name the
//! file, line, column and key.

mod envs;
mod problems;
mod warnings;

use crate::defs::{DEVICES_PLATFORM, TABLES};
use crate::error::Problem;
pub use crate::error::ScenarioError;
use crate::keys::{label, not_a_grid_key, takes};
use crate::locate::{
    at_key, error_at, friendly, line_column, refused_value, short, split_key, value_at, walk,
};
use crate::machine::{default_libraries, hard_limits};
use crate::model::{Rlimit, Scenario};
use crate::raw::RawScenario;
use crate::validate::{validate, Context};
pub use problems::MAX_PROBLEMS;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest scenario file read, bytes: a scenario is a page of TOML.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most runs one file's grid may expand to.
pub const MAX_RUNS: u64 = 100_000;

/// One scenario file, parsed and checked as a whole, whose runs are validated one at a
/// time on demand: a large grid is never held in memory.
#[derive(Debug)]
pub struct ScenarioFile {
    file: String,
    doc: toml_edit::ImDocument<String>,
    base: toml::Table,
    axes: Vec<(String, Vec<toml::Value>)>,
    /// Grid values that repeat an earlier one of their axis: `(axis, index)`.
    repeats: Vec<(usize, usize)>,
    fallback_name: String,
    context: Context,
    runs: usize,
    /// The file read, links resolved (`None` for text parsed without a file).
    real: Option<PathBuf>,
}

impl ScenarioFile {
    /// Reads a scenario file (a regular file of at most [`MAX_FILE_BYTES`]) and
    /// checks its runs as a run on this machine would: relative paths in its `[env]`
    /// resolved against its folder, `{clmulti-layer}` and `{clmulti-kmd-emu}` in
    /// [`default_libraries`], and
    /// `[limits]` against this process's hard limits ([`hard_limits`]). `clmulti
    /// check` and [`load_file`] read files this way, so they accept and refuse the
    /// same ones; [`with_libraries`](Self::with_libraries) and
    /// [`with_hard_limits`](Self::with_hard_limits) change either.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let file = path.display().to_string();
        let real = real_path(path);
        let text = read_text(&real, &file)?;
        let mut parsed = Self::parse_with(text, &file, Self::machine_context(&real))?;
        parsed.real = Some(real);
        Ok(parsed)
    }

    /// How a file at `path` (links resolved: [`real_path`]) is checked on this
    /// machine: relative paths from its folder, this process's hard limits, the
    /// layer beside clmulti.
    fn machine_context(path: &Path) -> Context {
        Context {
            base_dir: Some(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            ),
            hard_limits: hard_limits(),
            libraries: default_libraries(),
        }
    }

    /// Parses scenario text; `file` names it in errors and in the runs.
    pub fn parse(text: &str, file: &str) -> Result<Self, ScenarioError> {
        Self::parse_with(text.to_owned(), file, Context::default())
    }

    /// Checks runs against this machine's hard resource limits too (a limit absent
    /// from `hard` is unlimited).
    pub fn with_hard_limits(mut self, hard: BTreeMap<Rlimit, u64>) -> Self {
        self.context.hard_limits = hard;
        self
    }

    /// Whether a grid axis sets `key` (`guards.max_rss`): the runs can differ in it.
    pub fn varies(&self, key: &str) -> bool {
        self.axes.iter().any(|(k, _)| k == key)
    }

    /// The folder of the project's libraries, for `{clmulti-layer}` and
    /// `{clmulti-kmd-emu}` in `[env]` paths (a relative folder is this process's
    /// working folder's, never the scenario's).
    pub fn with_libraries(mut self, folder: PathBuf) -> Self {
        self.context.libraries = Some(std::path::absolute(&folder).unwrap_or(folder));
        self
    }

    fn parse_with(text: String, file: &str, context: Context) -> Result<Self, ScenarioError> {
        let (parsed, problems) = Self::parse_lenient(text, file, context)?;
        match problems.into_iter().min_by_key(|e| (e.line, e.column)) {
            Some(first) => Err(first),
            None => Ok(parsed),
        }
    }

    /// The file parsed as far as it can be, and the problems of its `[grid]`: an axis
    /// with a problem is left out (a repeated value only itself), a grid too large
    /// leaves every axis out, so that the rest can still be checked. An error only for
    /// what leaves nothing to check (TOML syntax, a key that must be a table).
    fn parse_lenient(
        text: String,
        file: &str,
        context: Context,
    ) -> Result<(Self, Vec<ScenarioError>), ScenarioError> {
        let mut problems = Vec::new();
        let doc = document(&text, file)?;
        let mut base: toml::Table = toml::from_str(&text)
            .map_err(|e| error_at(&text, file, e.span(), None, e.message().to_owned()))?;
        let located = |path: &[String], message: &str| at_key(&doc, file, path, message);
        if let Some(key) = misplaced_table(&base) {
            return Err(located(
                &[key.to_owned()],
                &format!("must be a table: write [{key}] and its keys below it"),
            ));
        }
        let grid = match base.remove("grid") {
            Some(toml::Value::Table(grid)) => grid.into_iter().collect(),
            _ => Vec::new(),
        };
        let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
        let mut repeats = Vec::new();
        for (key, values) in grid {
            let path = vec!["grid".to_owned(), key.clone()];
            let values = match axis_values(&key, values) {
                Ok(values) => values,
                Err(message) => {
                    problems.push(located(&path, &message));
                    continue;
                }
            };
            if let Some(why) = not_a_grid_key(&key) {
                problems.push(located(&path, &why));
                continue;
            }
            for (first, later) in repeated(&values) {
                let entry = vec!["grid".to_owned(), key.clone(), later.to_string()];
                problems.push(located(
                    &entry,
                    &format!(
                        "the same value as [{first}] of this axis ({}): two runs would have one name; remove one (to run one twice, vary the name: \"name\" = [\"first\", \"second\"])",
                        label(&values[later])
                    ),
                ));
                repeats.push((axes.len(), later));
            }
            axes.push((key, values));
        }
        let runs = match capped_runs(&axes) {
            Ok(runs) => runs,
            Err(message) => {
                problems.push(located(&["grid".to_owned()], &message));
                // The rest of the file is still checked, as one run without the grid.
                axes.clear();
                repeats.clear();
                1
            }
        };
        let fallback_name = Path::new(file).file_stem().map_or_else(
            || "scenario".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        );
        let parsed = ScenarioFile {
            file: file.to_owned(),
            doc,
            base,
            axes,
            repeats,
            fallback_name,
            context,
            runs,
            real: None,
        };
        Ok((parsed, problems))
    }

    /// The file, as given.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// How many runs the grid expands to (1 without a grid).
    pub fn len(&self) -> usize {
        self.runs
    }

    /// Always false: every file has at least one run.
    pub fn is_empty(&self) -> bool {
        self.runs == 0
    }

    /// Every run, validated one at a time, in grid order (first axis slowest).
    pub fn runs(&self) -> impl Iterator<Item = Result<Scenario, ScenarioError>> + '_ {
        (0..self.runs).map(|i| self.run(i))
    }

    /// Whether a run may name a platform: `devices.platform` other than "auto", in
    /// the file or its grid (what `clmulti check` looks up on this machine).
    pub fn names_a_platform(&self) -> bool {
        let in_file = value_at(&self.base, &split_key(DEVICES_PLATFORM.name))
            .is_some_and(|v| !v.as_str().is_some_and(|w| w.eq_ignore_ascii_case("auto")));
        in_file
            || self
                .axes
                .iter()
                .any(|(key, _)| key == DEVICES_PLATFORM.name)
    }

    /// Validates every run; the first problem is the error.
    pub fn check(&self) -> Result<usize, ScenarioError> {
        for run in self.runs() {
            run?;
        }
        Ok(self.runs)
    }

    /// An error about `key` (`devices.platform`) in run `index`: at the grid entry
    /// that set it in that run, else where the file sets it.
    pub fn error_in_run(&self, index: usize, key: &str, message: &str) -> ScenarioError {
        let (path, written) = self.place(&self.point(index), key);
        let mut err = at_key(&self.doc, &self.file, &path, message);
        err.key = Some(short(&written));
        err
    }

    /// Which value of each axis run `index` takes (mixed radix, first axis slowest).
    /// (`None` marks an axis left out, when looking past a problem.)
    fn point(&self, index: usize) -> Vec<Option<usize>> {
        let mut point = vec![None; self.axes.len()];
        let mut rest = index;
        for (axis, (_, values)) in self.axes.iter().enumerate().rev() {
            point[axis] = Some(rest % values.len());
            rest /= values.len();
        }
        point
    }

    /// Where a problem at `problem_key` sits in a run at `point`, and its key as
    /// the file writes it: a key the grid sets is at its grid entry
    /// (`grid."allocation.flags"[0][1]` for `allocation.flags[1]`).
    fn place(&self, point: &[Option<usize>], problem_key: &str) -> (Vec<String>, String) {
        if let Some((axis, i)) = self.axis_setting(point, problem_key) {
            let key = &self.axes[axis].0;
            let rest = &problem_key[key.len()..];
            let entry = vec!["grid".into(), key.clone(), i.to_string()];
            let (_, written) = walk(&self.doc, &entry);
            let path = [entry, split_key(rest)].concat();
            return (path, format!("{written}{rest}"));
        }
        (split_key(problem_key), problem_key.to_owned())
    }

    /// The grid axis that sets `problem_key` (or a table or list holding it) at
    /// `point`, and the value it takes there.
    fn axis_setting(&self, point: &[Option<usize>], problem_key: &str) -> Option<(usize, usize)> {
        point.iter().enumerate().find_map(|(axis, &i)| {
            let sets = problem_key
                .strip_prefix(self.axes[axis].0.as_str())
                .is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')
                });
            Some((axis, i?)).filter(|_| sets)
        })
    }

    /// The run's table at `point`: the file's with each axis's value set, and the
    /// values set (`allocation.size` -> `"1MiB"`), which name the run.
    fn table_at(
        &self,
        base: &toml::Table,
        point: &[Option<usize>],
    ) -> Result<(toml::Table, BTreeMap<String, toml::Value>), ScenarioError> {
        let mut run_table = base.clone();
        let mut labels = BTreeMap::new();
        for (axis, i) in point.iter().enumerate() {
            let Some(i) = *i else { continue };
            let (key, values) = &self.axes[axis];
            set_path(&mut run_table, key, values[i].clone()).map_err(|message| {
                at_key(
                    &self.doc,
                    &self.file,
                    &["grid".into(), key.clone()],
                    &message,
                )
            })?;
            labels.insert(key.clone(), values[i].clone());
        }
        Ok((run_table, labels))
    }

    /// Run `index` of the grid, validated.
    pub fn run(&self, index: usize) -> Result<Scenario, ScenarioError> {
        if index >= self.runs {
            return Err(ScenarioError {
                file: self.file.clone(),
                line: None,
                column: None,
                key: Some("grid".into()),
                message: format!(
                    "run index {index} is out of range: the file expands to {} run(s)",
                    self.runs
                ),
            });
        }
        self.run_from(&self.base, &self.point(index))
            .map_err(|problem| problem.error)
    }

    /// The run at `point` over `base` (the file's table, or one with keys left out);
    /// a problem comes with its key in the run (`allocation.flags[1]`, empty for none).
    fn run_from(
        &self,
        base: &toml::Table,
        point: &[Option<usize>],
    ) -> Result<Scenario, Box<RunProblem>> {
        let (run_table, labels) = self.table_at(base, point).map_err(|error| {
            Box::new(RunProblem {
                key: "grid".to_owned(),
                error,
            })
        })?;
        let located = |key: String, message: &str| {
            let (path, written) = self.place(point, &key);
            let mut err = at_key(&self.doc, &self.file, &path, message);
            err.key = (!key.is_empty()).then(|| short(&written));
            Box::new(RunProblem { key, error: err })
        };
        let raw: RawScenario = serde_path_to_error::deserialize(toml::Value::Table(run_table))
            .map_err(|e| {
                let key = e.path().to_string();
                let key = if key == "." { String::new() } else { key };
                // Built again to say what was found: only when there is an error.
                let table = self
                    .table_at(base, point)
                    .map(|(t, _)| t)
                    .unwrap_or_default();
                let found = value_at(&table, &split_key(&key));
                let message = friendly(e.inner().message(), &key, found);
                located(key, &message)
            })?;
        validate(raw, &self.file, &self.fallback_name, labels, &self.context)
            .map_err(|Problem { key, message }| located(key, &message))
    }
}

/// A run's problem and its key in the run (`allocation.flags[1]`; empty for none),
/// which [`ScenarioFile::problems`] leaves out to look past it.
struct RunProblem {
    key: String,
    error: ScenarioError,
}

/// A TOML syntax error, at its key when it is in a value: an integer beyond TOML's
/// 64 bits says so and what its key takes.
fn syntax_error(
    text: &str,
    file: &str,
    span: Option<std::ops::Range<usize>>,
    message: String,
) -> ScenarioError {
    let Some(value) = span.as_ref().and_then(|s| refused_value(text, s.start)) else {
        return error_at(text, file, span, None, message);
    };
    let key = value.scenario_key();
    let what = if value.is_integer() {
        format!(
            "{} is beyond TOML's integers ({} to {})",
            value.text,
            i64::MIN,
            i64::MAX
        )
    } else {
        message
    };
    let takes = takes(&key).map_or_else(String::new, |t| format!("; {key} takes {t}"));
    error_at(
        text,
        file,
        span,
        Some(value.written),
        format!("{what}{takes}"),
    )
}

/// Reads a scenario file, checked as a run on this machine would be (see
/// [`ScenarioFile::load`]), and expands its grid into runs (all of them in memory;
/// use [`ScenarioFile`] for large grids).
pub fn load_file(path: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    ScenarioFile::load(path)?.runs().collect()
}

/// Parses scenario text (`file` names it in errors and in the runs) into its runs.
pub fn load_str(text: &str, file: &str) -> Result<Vec<Scenario>, ScenarioError> {
    ScenarioFile::parse(text, file)?.runs().collect()
}

/// The file a path names, links resolved: relative paths in it resolve against its
/// own folder, never a link's (a link placed elsewhere to a file keeps that file's
/// meaning). A path that does not resolve is kept, for its error.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The file's text: only a regular file, at most [`MAX_FILE_BYTES`], UTF-8.
fn read_text(path: &Path, file: &str) -> Result<String, ScenarioError> {
    let fail = |message: String| ScenarioError {
        file: file.to_owned(),
        line: None,
        column: None,
        key: None,
        message,
    };
    // Opened without waiting (a FIFO swapped in after a look would block for ever)
    // and looked at through the open file: what is checked is what is read.
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    let meta = opened
        .metadata()
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Err(fail(
            "a folder: name its *.toml files (`cargo xtask sweep` takes folders)".into(),
        ));
    }
    if !meta.is_file() {
        return Err(fail(
            "not a regular file (a scenario is a TOML file; FIFOs and devices are not read)".into(),
        ));
    }
    let too_big = || {
        fail(format!(
            "larger than {} KiB: not a scenario file",
            MAX_FILE_BYTES >> 10
        ))
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    opened
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..offset]).unwrap_or_default();
        let (line, column) = line_column(valid, offset);
        ScenarioError {
            file: file.to_owned(),
            line: Some(line),
            column: Some(column),
            key: None,
            message: format!(
                "not UTF-8 text: byte 0x{:02x} at offset {offset}; TOML files are UTF-8",
                e.as_bytes()[offset]
            ),
        }
    })
}

/// The first schema table that holds something other than a table.
fn misplaced_table(table: &toml::Table) -> Option<&'static str> {
    TABLES
        .into_iter()
        .map(|(key, _)| key)
        .find(|key| table.get(*key).is_some_and(|v| !v.is_table()))
}

fn set_path(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    match key.split_once('.') {
        None => {
            table.insert(key.to_owned(), value);
            Ok(())
        }
        Some((head, tail)) => {
            let entry = table
                .entry(head.to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            match entry {
                toml::Value::Table(t) => {
                    t.insert(tail.to_owned(), value);
                    Ok(())
                }
                _ => Err(format!("`{head}` is not a table, so `{key}` cannot be set")),
            }
        }
    }
}

/// A grid axis's values, or why it is not a list of them.
fn axis_values(key: &str, values: toml::Value) -> Result<Vec<toml::Value>, String> {
    match values {
        toml::Value::Array(v) if !v.is_empty() => Ok(v),
        toml::Value::Array(_) => Err("a grid axis needs at least one value".to_owned()),
        toml::Value::Table(inner) => {
            // `allocation.count = [...]` unquoted in [grid]: the dots made tables.
            let dotted = std::iter::successors(
                Some((key.to_owned(), toml::Value::Table(inner))),
                |(k, v)| match v {
                    toml::Value::Table(t) => t
                        .iter()
                        .next()
                        .map(|(inner, v)| (format!("{k}.{inner}"), v.clone())),
                    _ => None,
                },
            )
            .last()
            .map_or(key.to_owned(), |(k, _)| k);
            Err(format!(
                "a grid axis must be a list of values; to vary {dotted}, write its key in quotes: \"{dotted}\" = [...] (unquoted, the dots make tables)"
            ))
        }
        _ => Err("a grid axis must be a list of values".to_owned()),
    }
}

/// Each value equal to an earlier one, as (the earlier's index, its index): equal
/// values would give runs of one name, each overwriting the other's results. Equal
/// values print alike: their text finds the first in one pass.
fn repeated(values: &[toml::Value]) -> Vec<(usize, usize)> {
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(values.len());
    let mut found = Vec::new();
    for (later, value) in values.iter().enumerate() {
        if let Some(&first) = seen.get(&value.to_string()) {
            found.push((first, later));
        } else {
            seen.insert(value.to_string(), later);
        }
    }
    found
}

/// The file as TOML that keeps its spans, or its first syntax error, located.
fn document(text: &str, file: &str) -> Result<toml_edit::ImDocument<String>, ScenarioError> {
    toml_edit::ImDocument::parse(text.to_owned()).map_err(|e| {
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        syntax_error(text, file, e.span(), message)
    })
}

/// The runs the grid expands to, or why that is too many.
fn capped_runs(axes: &[(String, Vec<toml::Value>)]) -> Result<usize, String> {
    let runs = axes
        .iter()
        .try_fold(1u64, |n, (_, values)| n.checked_mul(values.len() as u64))
        .filter(|n| *n <= MAX_RUNS);
    match runs {
        Some(runs) => Ok(runs as usize),
        None => {
            let sizes: Vec<String> = axes.iter().map(|(_, v)| v.len().to_string()).collect();
            Err(format!(
                "expands to {} runs; at most {MAX_RUNS} are allowed: shorten an axis or split the file",
                sizes.join(" x ")
            ))
        }
    }
}
