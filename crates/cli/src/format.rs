//! Output formats and the helpers every view shares.

use clap::ValueEnum;

/// How a subcommand prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Human-readable text (`table` is accepted too).
    #[default]
    #[value(alias = "table")]
    Text,
    /// JSON with a `schema_version` (field names in docs/json.md).
    Json,
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), crate::Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| crate::Failure::Tool(format!("cannot encode JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

/// An optional limit: its value, or `unlimited`.
pub fn limit(n: Option<u64>) -> String {
    n.map_or_else(|| "unlimited".to_owned(), |v| v.to_string())
}

/// Lines of text padded into aligned columns (the first row is the header).
pub fn table(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows.iter().map(Vec::len).max().unwrap_or(0))
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                let pad = widths[c].saturating_sub(cell.chars().count());
                // Numbers align right, text left.
                if cell.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-') && c > 0 {
                    format!("{}{cell}", " ".repeat(pad))
                } else {
                    format!("{cell}{}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str("  ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// How much to say on stderr (`-q`, `-v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Errors only.
    Quiet,
    /// Progress and notes.
    Normal,
    /// Everything.
    Verbose,
}

static VERBOSITY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);

/// Sets how much the tool says on stderr.
pub fn set_verbosity(v: Verbosity) {
    VERBOSITY.store(v as u8, std::sync::atomic::Ordering::Relaxed);
}

/// Whether messages of this level are shown.
pub fn shows(v: Verbosity) -> bool {
    VERBOSITY.load(std::sync::atomic::Ordering::Relaxed) >= v as u8
}

/// A note on stderr unless `-q`.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        if $crate::format::shows($crate::format::Verbosity::Normal) {
            eprintln!($($arg)*);
        }
    };
}

/// Details on stderr with `-v`: what a user debugging a run wants (every sample,
/// the setup's timings, the child processes' command lines).
#[macro_export]
macro_rules! verbose {
    ($($arg:tt)*) => {
        if $crate::format::shows($crate::format::Verbosity::Verbose) {
            eprintln!($($arg)*);
        }
    };
}
