//! Reading scenario files: TOML syntax, grid expansion, and errors that name the
//! file, line, column and key.

use crate::model::Scenario;
use crate::raw::RawScenario;
use crate::validate::{validate, Problem};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

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

/// Reads a scenario file and expands its grid into runs.
pub fn load_file(path: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: None,
        column: None,
        key: None,
        message: format!("cannot read: {e}"),
    })?;
    load_str(&text, &file)
}

/// Parses scenario text (`file` names it in errors and in the runs).
pub fn load_str(text: &str, file: &str) -> Result<Vec<Scenario>, ScenarioError> {
    let source = Source { text, file };
    let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        source.error(e.span(), None, message)
    })?;
    let mut table: toml::Table =
        toml::from_str(text).map_err(|e| source.error(e.span(), None, e.message().to_owned()))?;

    let grid = match table.remove("grid") {
        None => Vec::new(),
        Some(toml::Value::Table(grid)) => grid.into_iter().collect(),
        Some(_) => {
            return Err(source.at_key(&doc, &["grid".into()], "must be a table of key = [values]"))
        }
    };
    let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
    for (key, values) in grid {
        let path = vec!["grid".to_owned(), key.clone()];
        let values = match values {
            toml::Value::Array(v) if !v.is_empty() => v,
            toml::Value::Array(_) => {
                return Err(source.at_key(&doc, &path, "a grid axis needs at least one value"))
            }
            _ => return Err(source.at_key(&doc, &path, "a grid axis must be a list of values")),
        };
        let segments: Vec<&str> = key.split('.').collect();
        if segments.iter().any(|s| s.is_empty()) || segments.len() > 2 {
            return Err(source.at_key(
                &doc,
                &path,
                "a grid key is a dotted path like \"allocation.size\" or \"name\"",
            ));
        }
        if segments.first() == Some(&"grid") {
            return Err(source.at_key(&doc, &path, "the grid cannot vary itself"));
        }
        axes.push((key, values));
    }

    let fallback_name = Path::new(file).file_stem().map_or_else(
        || "scenario".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut runs = Vec::new();
    for point in cartesian(&axes) {
        let mut run_table = table.clone();
        let mut labels = BTreeMap::new();
        for &(axis, index) in &point {
            let (key, values) = &axes[axis];
            set_path(&mut run_table, key, values[index].clone())
                .map_err(|message| source.at_key(&doc, &["grid".into(), key.clone()], &message))?;
            labels.insert(key.clone(), label(&values[index]));
        }
        // Where a problem sits: a grid-set key points at its grid entry.
        let locate = |problem_key: &str| -> Vec<String> {
            for &(axis, index) in &point {
                let key = &axes[axis].0;
                if problem_key == key
                    || problem_key.starts_with(&format!("{key}."))
                    || problem_key.starts_with(&format!("{key}["))
                {
                    return vec!["grid".into(), key.clone(), index.to_string()];
                }
            }
            split_key(problem_key)
        };
        let raw: RawScenario = serde_path_to_error::deserialize(toml::Value::Table(run_table))
            .map_err(|e| {
                let key = e.path().to_string();
                let message = e.inner().message().to_owned();
                let key = if key == "." { String::new() } else { key };
                let mut err = source.at_key(&doc, &locate(&key), &friendly(&message));
                err.key = (!key.is_empty()).then_some(key);
                err
            })?;
        let scenario =
            validate(raw, file, &fallback_name, labels).map_err(|Problem { key, message }| {
                let mut err = source.at_key(&doc, &locate(&key), &message);
                err.key = Some(key);
                err
            })?;
        runs.push(scenario);
    }
    Ok(runs)
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
    message.replace("invalid type: ", "wrong type: found ")
}

fn label(value: &toml::Value) -> String {
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

/// Every combination of one index per axis, first axis slowest.
fn cartesian(axes: &[(String, Vec<toml::Value>)]) -> Vec<Vec<(usize, usize)>> {
    let mut points = vec![Vec::new()];
    for (axis, (_, values)) in axes.iter().enumerate() {
        points = points
            .into_iter()
            .flat_map(|p| {
                (0..values.len()).map(move |i| {
                    let mut next = p.clone();
                    next.push((axis, i));
                    next
                })
            })
            .collect();
    }
    points
}

struct Source<'a> {
    text: &'a str,
    file: &'a str,
}

impl Source<'_> {
    fn error(
        &self,
        span: Option<Range<usize>>,
        key: Option<String>,
        message: String,
    ) -> ScenarioError {
        let (line, column) = match span {
            Some(span) => {
                let (l, c) = line_column(self.text, span.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        ScenarioError {
            file: self.file.to_owned(),
            line,
            column,
            key,
            message,
        }
    }

    /// An error at the deepest part of `path` present in the document.
    fn at_key(
        &self,
        doc: &toml_edit::ImDocument<&str>,
        path: &[String],
        message: &str,
    ) -> ScenarioError {
        let key = path.join(".");
        self.error(
            span_of(doc, path),
            (!key.is_empty()).then_some(key),
            message.to_owned(),
        )
    }
}

fn span_of(doc: &toml_edit::ImDocument<&str>, path: &[String]) -> Option<Range<usize>> {
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
