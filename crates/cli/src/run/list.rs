//! `run --list`: each file's runs with their `--index`, as text or JSON Lines.

use super::Args;
use crate::format::Format;
use crate::{say, Failure};
use std::fmt::Write as _;
use std::path::Path;

/// `--list`: each file's runs with their `--index` (only that run with `--index`),
/// or why a run, or a whole file, is invalid; in JSON, one line per run and one per
/// file that does not load (`docs/json.md`). Listing runs nothing: no file needs
/// trust.
pub(super) fn list(args: &Args) -> Result<(), Failure> {
    let mut bad = 0;
    for path in &args.files {
        let mut text = String::new();
        let file = match crate::check::load(path) {
            Ok(file) => file,
            Err(e) => {
                bad += 1;
                say!("error: {e}");
                if args.format == Format::Json {
                    listed(&mut text, path, None, Err(e.to_string()));
                    crate::format::write_stdout(&text)?;
                }
                continue;
            }
        };
        if args.format == Format::Text {
            text = format!("{}: {} run(s)\n", path.display(), file.len());
        }
        let indices: Box<dyn Iterator<Item = usize>> = match args.index {
            Some(i) => Box::new(std::iter::once(i)),
            None => Box::new(0..file.len()),
        };
        for index in indices {
            let run = file.run(index).map(|s| s.name).map_err(|e| e.to_string());
            bad += usize::from(run.is_err());
            match args.format {
                Format::Text => {
                    let what = run.unwrap_or_else(|e| format!("invalid: {e}"));
                    let _ = writeln!(text, "  --index {index:<6} {what}");
                }
                Format::Json => listed(&mut text, path, Some(index), run),
            }
            // Written as it goes: a large grid is never held whole.
            if text.len() > 1 << 16 {
                crate::format::write_stdout(&text)?;
                text.clear();
            }
        }
        crate::format::write_stdout(&text)?;
    }
    if bad > 0 {
        return Err(Failure::Input(format!("{bad} invalid file(s) or run(s)")));
    }
    Ok(())
}

/// One line of `run --list --format json` onto `text`.
fn listed(text: &mut String, path: &Path, index: Option<usize>, run: Result<String, String>) {
    let (name, error) = match &run {
        Ok(name) => (Some(name.as_str()), None),
        Err(e) => (None, Some(e.as_str())),
    };
    let line = Listed {
        schema_version: LIST_SCHEMA_VERSION,
        file: &path.display().to_string(),
        index,
        name,
        error,
    };
    let _ = writeln!(text, "{}", serde_json::to_string(&line).unwrap_or_default());
}

/// The version of `run --list --format json`'s lines.
const LIST_SCHEMA_VERSION: u32 = 1;

/// A line of `run --list --format json`: a run of a file, or why it is invalid.
#[derive(serde::Serialize)]
struct Listed<'a> {
    schema_version: u32,
    file: &'a str,
    /// What `--index` runs it; `None` for a file that does not load.
    index: Option<usize>,
    /// Its name, with its grid point; `None` when it is invalid.
    name: Option<&'a str>,
    /// Why it is invalid, at its file, line, column and key; `None` when valid.
    error: Option<&'a str>,
}
