//! Where a problem sits in a scenario file: its line and column, and its key as the
//! file writes it (`grid."allocation.count"[1]`), also for a value TOML itself
//! refuses (an integer beyond 64 bits), and serde's words turned into the file's.

use crate::error::ScenarioError;
use crate::keys::takes;
use std::ops::Range;
use toml_edit::{ImDocument, Item, Value};

/// A key cut to a readable length: a 1 MB key must not make a 2 MB error.
pub(crate) fn short(key: &str) -> String {
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

pub(crate) fn error_at(
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

/// An error at the deepest part of `path` present in the document, naming the key
/// as the file writes it.
pub(crate) fn at_key(
    doc: &ImDocument<String>,
    file: &str,
    path: &[String],
    message: &str,
) -> ScenarioError {
    let (span, key) = walk(doc, path);
    error_at(
        doc.raw(),
        file,
        span,
        (!key.is_empty()).then_some(key),
        message.to_owned(),
    )
}

/// `allocation.flags[2]` as a path: `allocation`, `flags`, `2`.
pub(crate) fn split_key(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in key.split('.') {
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            if open > 0 {
                out.push(rest[..open].to_owned());
            }
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

/// Where `path` is in the document (the deepest span found: a key's for tables, a
/// value's otherwise) and the path as the file writes it: each key as written
/// (`"allocation.count"` quoted, `devices` bare), each list index as `[i]`, and
/// what the document lacks spelled as TOML would.
pub(crate) fn walk(doc: &ImDocument<String>, path: &[String]) -> (Option<Range<usize>>, String) {
    let raw = doc.raw();
    let mut best: Option<Range<usize>> = None;
    let mut written = String::new();
    let mut item: Option<&Item> = Some(doc.as_item());
    let mut value: Option<&Value> = None;
    for segment in path {
        let as_key = |key: Option<&toml_edit::Key>| {
            key.and_then(|k| k.span())
                .and_then(|s| raw.get(s))
                .map(str::to_owned)
                .unwrap_or_else(|| toml_edit::Key::new(segment.as_str()).display_repr().into())
        };
        let (next_item, next_value) = match (item, value) {
            (Some(Item::Table(t)), _) => {
                let key = t.key(segment);
                best = key.and_then(toml_edit::Key::span).or(best.take());
                push_key(&mut written, &as_key(key));
                match t.get(segment) {
                    Some(Item::Value(v)) => (None, Some(v)),
                    other => (other, None),
                }
            }
            (Some(Item::Value(v)), _) | (None, Some(v)) => match v {
                Value::InlineTable(t) => {
                    let key = t.key(segment);
                    best = key.and_then(toml_edit::Key::span).or(best.take());
                    push_key(&mut written, &as_key(key));
                    (None, t.get(segment))
                }
                Value::Array(a) => {
                    written.push_str(&format!("[{segment}]"));
                    (None, segment.parse::<usize>().ok().and_then(|i| a.get(i)))
                }
                _ => {
                    push_key(&mut written, &as_key(None));
                    (None, None)
                }
            },
            _ if segment.parse::<usize>().is_ok() => {
                written.push_str(&format!("[{segment}]"));
                (None, None)
            }
            _ => {
                push_key(&mut written, &as_key(None));
                (None, None)
            }
        };
        if let Some(v) = next_value {
            // A list or table is placed by its key, unless it is a list's item: it has
            // none, and its own place beats the list's.
            let item_of_a_list = matches!(value, Some(Value::Array(_)));
            if item_of_a_list || !matches!(v, Value::Array(_) | Value::InlineTable(_)) {
                best = v.span().or(best.take());
            }
        }
        item = next_item;
        value = next_value;
    }
    (best, written)
}

fn push_key(written: &mut String, key: &str) {
    if !written.is_empty() {
        written.push('.');
    }
    written.push_str(key);
}

pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, column)
}

/// A value TOML refused, placed: the key it is given to, as written, and the
/// value's text.
#[derive(Debug)]
pub(crate) struct RefusedValue {
    /// The key path (`grid`, `allocation.count`, `0`).
    pub path: Vec<String>,
    /// The path as the file writes it (`grid."allocation.count"[0]`).
    pub written: String,
    /// The value as written (`99999999999999999999`).
    pub text: String,
}

impl RefusedValue {
    /// The scenario key whose value it is (`allocation.count` for a grid's value of
    /// it), whatever list it is an item of.
    pub fn scenario_key(&self) -> String {
        match &self.path[..] {
            [grid, key, ..] if grid == "grid" => key.clone(),
            path => path
                .iter()
                .filter(|s| s.parse::<usize>().is_err())
                .cloned()
                .collect::<Vec<_>>()
                .join("."),
        }
    }

    /// An integer beyond TOML's 64 bits (what else could refuse an integer).
    pub fn is_integer(&self) -> bool {
        let body = self.text.trim_start_matches(['+', '-']);
        let (digits, radix) = match body.get(..2) {
            Some("0x") => (&body[2..], 16),
            Some("0o") => (&body[2..], 8),
            Some("0b") => (&body[2..], 2),
            _ => (body, 10),
        };
        digits.chars().any(|c| c.is_digit(radix))
            && digits.chars().all(|c| c == '_' || c.is_digit(radix))
    }
}

/// The value a TOML syntax error at `offset` sits in, when it sits in one: the
/// value's text is replaced by `0` and spaces (every offset kept), the text parsed
/// again, and the deepest value around `offset` named. `None` for an error outside
/// a value (a header, a key) or one that the replacement does not mend.
pub(crate) fn refused_value(text: &str, offset: usize) -> Option<RefusedValue> {
    let end = token_end(text, offset)?;
    let mut mended = String::with_capacity(text.len());
    mended.push_str(&text[..offset]);
    mended.push('0');
    mended.push_str(&" ".repeat(end - offset - 1));
    mended.push_str(&text[end..]);
    let doc = ImDocument::parse(mended).ok()?;
    let mut path = Vec::new();
    if !find_in_item(doc.as_item(), offset, &mut path) || path.is_empty() {
        return None;
    }
    let (_, written) = walk(&doc, &path);
    Some(RefusedValue {
        path,
        written,
        text: text[offset..end].to_owned(),
    })
}

/// Where the value starting at `start` ends: a one-line string, or a run of the
/// characters numbers, booleans and dates are made of.
fn token_end(text: &str, start: usize) -> Option<usize> {
    let rest = text.get(start..)?;
    let end = if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
        return None;
    } else if let Some(body) = rest.strip_prefix('"') {
        let mut escaped = false;
        let close = body.char_indices().find(|&(_, c)| {
            let closes = c == '"' && !escaped;
            escaped = c == '\\' && !escaped;
            closes || c == '\n'
        })?;
        (close.1 == '"').then_some(close.0 + 2)?
    } else if let Some(body) = rest.strip_prefix('\'') {
        let close = body.find(['\'', '\n'])?;
        (body.as_bytes()[close] == b'\'').then_some(close + 2)?
    } else {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || "_+-.:".contains(c)))
            .unwrap_or(rest.len())
    };
    (end > 0).then_some(start + end)
}

fn find_in_item(item: &Item, offset: usize, path: &mut Vec<String>) -> bool {
    let in_table = |table: &toml_edit::Table, path: &mut Vec<String>| {
        for (key, item) in table.iter() {
            path.push(key.to_owned());
            if find_in_item(item, offset, path) {
                return true;
            }
            path.pop();
        }
        false
    };
    match item {
        Item::Table(t) => in_table(t, path),
        Item::ArrayOfTables(tables) => tables.iter().enumerate().any(|(i, t)| {
            path.push(i.to_string());
            let found = in_table(t, path);
            if !found {
                path.pop();
            }
            found
        }),
        Item::Value(v) => find_in_value(v, offset, path),
        Item::None => false,
    }
}

fn find_in_value(value: &Value, offset: usize, path: &mut Vec<String>) -> bool {
    if !value.span().is_some_and(|s| s.contains(&offset)) {
        return false;
    }
    let deeper = |segment: String, v: &Value, path: &mut Vec<String>| {
        path.push(segment);
        let found = find_in_value(v, offset, path);
        if !found {
            path.pop();
        }
        found
    };
    match value {
        Value::Array(a) => {
            let _ = a
                .iter()
                .enumerate()
                .any(|(i, v)| deeper(i.to_string(), v, path));
        }
        Value::InlineTable(t) => {
            let _ = t.iter().any(|(k, v)| deeper(k.to_owned(), v, path));
        }
        _ => {}
    }
    true
}

/// serde's message about the value at `key` (`found`, as the run's table holds it),
/// in the words of a scenario file: what was found and what the key takes.
pub(crate) fn friendly(message: &str, key: &str, found: Option<&toml::Value>) -> String {
    let message = message.trim();
    if let Some((own, expected)) = unknown_field(message) {
        return format!("{message}{}", crate::suggest::hint(own, expected));
    }
    let wrong_type = message.starts_with("data did not match any variant of untagged enum")
        || message.starts_with("invalid type: ");
    let Some(takes) = takes(key).filter(|_| wrong_type) else {
        return message.replace("invalid type: ", "wrong type: found ");
    };
    match found {
        Some(value) => format!(
            "wrong type: found {} `{}`; {key} takes {takes}",
            value.type_str(),
            cut(&value.to_string(), 60)
        ),
        None => format!("wrong type; {key} takes {takes}"),
    }
}

/// The value at `path` in a run's table.
pub(crate) fn value_at<'a>(table: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(table.get(first)?, |value, segment| match value {
            toml::Value::Table(t) => t.get(segment),
            toml::Value::Array(a) => a.get(segment.parse::<usize>().ok()?),
            _ => None,
        })
}

/// serde's `unknown field `x`, expected one of `a`, `b`` (`expected `a` or `b``,
/// `expected `a``), read
/// back: the unknown key and the keys expected (a hint after them left out).
pub(crate) fn unknown_field(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (own, expected) = rest.split_once("`, expected ")?;
    let expected = expected.split("; did you mean").next().unwrap_or(expected);
    let expected = expected
        .trim_start_matches("one of ")
        .split(", ")
        .flat_map(|e| e.split(" or "))
        .map(|e| e.trim_matches('`'))
        .collect();
    Some((own, expected))
}
