//! Reading scenario files: TOML syntax, grid expansion, and errors that name the
//! file, line, column and key.

use crate::model::{Rlimit, Scenario};
use crate::raw::RawScenario;
use crate::validate::{validate, Context, Problem};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A scenario file that could not be turned into runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file, as given.
    pub file: String,
    /// 1-based line, when the problem has a place in the file.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// Dotted key path (`allocation.size`), when the problem belongs to a key.
    pub key: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{k}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The largest scenario file read, bytes: a scenario is a page of TOML.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most runs one file's grid may expand to.
pub const MAX_RUNS: u64 = 100_000;
/// Tables of the schema: a key among these must hold a table, not a value or a list.
const TABLES: [&str; 9] = [
    "devices",
    "context",
    "allocation",
    "env",
    "limits",
    "guards",
    "sampling",
    "axpy",
    "grid",
];

/// One scenario file, parsed and checked as a whole, whose runs are validated one at a
/// time on demand: a large grid is never held in memory.
#[derive(Debug)]
pub struct ScenarioFile {
    file: String,
    doc: toml_edit::ImDocument<String>,
    base: toml::Table,
    axes: Vec<(String, Vec<toml::Value>)>,
    fallback_name: String,
    context: Context,
    runs: usize,
}

impl ScenarioFile {
    /// Reads a scenario file (a regular file of at most [`MAX_FILE_BYTES`]) and
    /// checks its runs as a run on this machine would: relative paths in its `[env]`
    /// resolved against its folder, `{clmulti-layer}` as [`default_layer`], and
    /// `[limits]` against this process's hard limits ([`hard_limits`]). `clmulti
    /// check` and [`load_file`] read files this way, so they accept and refuse the
    /// same ones; [`with_layer`](Self::with_layer) and
    /// [`with_hard_limits`](Self::with_hard_limits) change either.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let file = path.display().to_string();
        let text = read_text(path, &file)?;
        let context = Context {
            base_dir: Some(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            ),
            hard_limits: hard_limits(),
            layer: default_layer(),
        };
        Self::parse_with(text, &file, context)
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

    /// Where the emulation layer is, for `{clmulti-layer}` in `[env]` paths.
    pub fn with_layer(mut self, layer: PathBuf) -> Self {
        self.context.layer = Some(layer);
        self
    }

    fn parse_with(text: String, file: &str, context: Context) -> Result<Self, ScenarioError> {
        let doc = match toml_edit::ImDocument::parse(text.clone()) {
            Ok(doc) => doc,
            Err(e) => {
                let message = e
                    .message()
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(error_at(&text, file, e.span(), None, message));
            }
        };
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
        for (key, values) in grid {
            let path = vec!["grid".to_owned(), key.clone()];
            let values = match values {
                toml::Value::Array(v) if !v.is_empty() => v,
                toml::Value::Array(_) => {
                    return Err(located(&path, "a grid axis needs at least one value"))
                }
                _ => return Err(located(&path, "a grid axis must be a list of values")),
            };
            let segments: Vec<&str> = key.split('.').collect();
            if segments.iter().any(|s| s.is_empty()) || segments.len() > 2 {
                return Err(located(
                    &path,
                    "a grid key is a dotted path like \"allocation.size\" or \"name\"",
                ));
            }
            if segments.first() == Some(&"grid") {
                return Err(located(&path, "the grid cannot vary itself"));
            }
            axes.push((key, values));
        }
        let runs = axes
            .iter()
            .try_fold(1u64, |n, (_, values)| n.checked_mul(values.len() as u64))
            .filter(|n| *n <= MAX_RUNS)
            .ok_or_else(|| {
                let sizes: Vec<String> = axes.iter().map(|(_, v)| v.len().to_string()).collect();
                located(
                    &["grid".to_owned()],
                    &format!(
                        "expands to {} runs; at most {MAX_RUNS} are allowed: shorten an axis or split the file",
                        sizes.join(" x ")
                    ),
                )
            })? as usize;
        let fallback_name = Path::new(file).file_stem().map_or_else(
            || "scenario".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        );
        Ok(ScenarioFile {
            file: file.to_owned(),
            doc,
            base,
            axes,
            fallback_name,
            context,
            runs,
        })
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

    /// Validates every run; the first problem is the error.
    pub fn check(&self) -> Result<usize, ScenarioError> {
        for run in self.runs() {
            run?;
        }
        Ok(self.runs)
    }

    /// An error at a key of this file (`allocation.size`, `grid."devices.count"`).
    pub fn error_at_key(&self, key: &str, message: &str) -> ScenarioError {
        let mut err = at_key(&self.doc, &self.file, &split_key(key), message);
        err.key = Some(short(key));
        err
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
        // Mixed radix, first axis slowest.
        let mut point = vec![0usize; self.axes.len()];
        let mut rest = index;
        for (axis, (_, values)) in self.axes.iter().enumerate().rev() {
            point[axis] = rest % values.len();
            rest /= values.len();
        }
        let mut run_table = self.base.clone();
        let mut labels = BTreeMap::new();
        for (axis, &i) in point.iter().enumerate() {
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
        if let Some(table) = misplaced_table(&run_table) {
            let axis = self.axes.iter().position(|(k, _)| k == table).unwrap_or(0);
            return Err(at_key(
                &self.doc,
                &self.file,
                &[
                    "grid".into(),
                    table.into(),
                    point.get(axis).copied().unwrap_or(0).to_string(),
                ],
                &format!("`{table}` must be a table; vary its keys instead (\"{table}.<key>\")"),
            ));
        }
        // Where a problem sits: a grid-set key points at its grid entry.
        let locate = |problem_key: &str| -> Vec<String> {
            for (axis, &i) in point.iter().enumerate() {
                let key = &self.axes[axis].0;
                if problem_key == key
                    || problem_key.starts_with(&format!("{key}."))
                    || problem_key.starts_with(&format!("{key}["))
                {
                    return vec!["grid".into(), key.clone(), i.to_string()];
                }
            }
            split_key(problem_key)
        };
        let raw: RawScenario = serde_path_to_error::deserialize(toml::Value::Table(run_table))
            .map_err(|e| {
                let key = e.path().to_string();
                let message = e.inner().message().to_owned();
                let key = if key == "." { String::new() } else { key };
                let mut err = at_key(&self.doc, &self.file, &locate(&key), &friendly(&message));
                err.key = (!key.is_empty()).then(|| short(&key));
                err
            })?;
        validate(raw, &self.file, &self.fallback_name, labels, &self.context).map_err(
            |Problem { key, message }| {
                let mut err = at_key(&self.doc, &self.file, &locate(&key), &message);
                err.key = Some(short(&key));
                err
            },
        )
    }
}

/// Where `{clmulti-layer}` points unless told otherwise: the layer beside the
/// running executable (`clmulti`, built with `cargo build -p clmulti-layer` beside
/// it), or one folder up, where cargo puts it for test and example binaries (which
/// live in `target/<profile>/deps` and `examples`).
pub fn default_layer() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let beside = dir.join(crate::LAYER_FILE_NAME);
    let above = dir.parent().map(|d| d.join(crate::LAYER_FILE_NAME));
    match above {
        Some(above) if !beside.exists() && above.exists() => Some(above),
        _ => Some(beside),
    }
}

/// This process's hard resource limits (a limit that is unlimited is absent): the
/// most a run's `[limits]` may ask for.
pub fn hard_limits() -> BTreeMap<Rlimit, u64> {
    let resource = |which: Rlimit| match which {
        Rlimit::NoFile => libc::RLIMIT_NOFILE,
        Rlimit::AddressSpace => libc::RLIMIT_AS,
        Rlimit::MemLock => libc::RLIMIT_MEMLOCK,
        Rlimit::NProc => libc::RLIMIT_NPROC,
        Rlimit::Data => libc::RLIMIT_DATA,
    };
    Rlimit::ALL
        .into_iter()
        .filter_map(|which| {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `lim` is a valid, writable rlimit struct.
            let ok = unsafe { libc::getrlimit(resource(which), &mut lim) } == 0;
            (ok && lim.rlim_max != libc::RLIM_INFINITY).then_some((which, lim.rlim_max))
        })
        .collect()
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

/// The file's text: only a regular file, at most [`MAX_FILE_BYTES`], UTF-8.
fn read_text(path: &Path, file: &str) -> Result<String, ScenarioError> {
    let fail = |message: String| ScenarioError {
        file: file.to_owned(),
        line: None,
        column: None,
        key: None,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read: {e}")))?;
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
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
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

/// A key cut to a readable length: a 1 MB key must not make a 2 MB error.
fn short(key: &str) -> String {
    cut(key, 120)
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = (0..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}... ({} bytes)", &text[..end], text.len())
}

fn error_at(
    text: &str,
    file: &str,
    span: Option<Range<usize>>,
    key: Option<String>,
    message: String,
) -> ScenarioError {
    let (line, column) = match span {
        Some(span) => {
            let (l, c) = line_column(text, span.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    ScenarioError {
        file: file.to_owned(),
        line,
        column,
        key: key.map(|k| short(&k)),
        // Messages can quote a key (serde's "unknown field `...`").
        message: cut(&message, 600),
    }
}

/// The first schema table that holds something other than a table.
fn misplaced_table(table: &toml::Table) -> Option<&'static str> {
    TABLES
        .into_iter()
        .find(|key| table.get(*key).is_some_and(|v| !v.is_table()))
}

/// An error at the deepest part of `path` present in the document.
fn at_key(
    doc: &toml_edit::ImDocument<String>,
    file: &str,
    path: &[String],
    message: &str,
) -> ScenarioError {
    let key = path.join(".");
    error_at(
        doc.raw(),
        file,
        span_of(doc, path),
        (!key.is_empty()).then_some(key),
        message.to_owned(),
    )
}

/// serde's messages, in the words of a scenario file.
fn friendly(message: &str) -> String {
    let message = message.trim();
    if message.starts_with("data did not match any variant of untagged enum RawSize") {
        return "expected a size: an integer number of bytes or a string like \"1MiB\"".into();
    }
    if message.starts_with("data did not match any variant of untagged enum RawNumberOrWord") {
        return "expected an integer or a string".into();
    }
    if message.starts_with("data did not match any variant of untagged enum RawPartition") {
        return "expected \"equally\" or a list of compute-unit counts like [1, 1]".into();
    }
    message.replace("invalid type: ", "wrong type: found ")
}

/// A grid value as a run's name shows it: strings without quotes.
pub(crate) fn label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn split_key(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in key.split('.') {
        // `flags[2]` -> `flags`, `2`
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            out.push(rest[..open].to_owned());
            rest = &rest[open..];
            while let Some(close) = rest.find(']') {
                out.push(rest[1..close].to_owned());
                rest = &rest[close + 1..];
            }
        } else if !rest.is_empty() {
            out.push(rest.to_owned());
        }
    }
    out
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

fn span_of(doc: &toml_edit::ImDocument<String>, path: &[String]) -> Option<Range<usize>> {
    use toml_edit::{Item, Value};
    // The deepest span found so far: a key's span for tables, a value's otherwise.
    let mut best: Option<Range<usize>> = None;
    let mut item: Option<&Item> = Some(doc.as_item());
    let mut value: Option<&Value> = None;
    for segment in path {
        let (next_item, next_value) = match (item, value) {
            (Some(Item::Table(t)), _) => {
                if let Some(k) = t.key(segment) {
                    best = k.span().or(best.take());
                }
                match t.get(segment) {
                    Some(Item::Value(v)) => (None, Some(v)),
                    other => (other, None),
                }
            }
            (Some(Item::Value(v)), _) | (None, Some(v)) => match v {
                Value::InlineTable(t) => {
                    if let Some(k) = t.key(segment) {
                        best = k.span().or(best.take());
                    }
                    (None, t.get(segment))
                }
                Value::Array(a) => (None, segment.parse::<usize>().ok().and_then(|i| a.get(i))),
                _ => (None, None),
            },
            (Some(Item::ArrayOfTables(_)) | Some(Item::None), _) | (None, None) => (None, None),
        };
        if next_item.is_none() && next_value.is_none() {
            break;
        }
        if let Some(v) = next_value {
            if !matches!(v, Value::Array(_) | Value::InlineTable(_)) {
                best = v.span().or(best.take());
            }
        }
        item = next_item;
        value = next_value;
    }
    best
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, column)
}
