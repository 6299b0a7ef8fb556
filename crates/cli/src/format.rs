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
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| crate::Failure::Tool(format!("cannot encode JSON: {e}")))?;
    text.push('\n');
    write_stdout(&text)
}

/// Writes `text` to stdout and flushes it: a closed stdout (its reader left) ends
/// the command quietly with exit 1, any other failure (a full disk) with its error.
pub fn write_stdout(text: &str) -> Result<(), crate::Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => crate::Failure::ClosedOutput,
            _ => crate::Failure::Tool(format!("cannot write to stdout: {e}")),
        })
}

/// Whether stdout's reader has gone (the reading end of a pipe closed: `run A B |
/// head -1`): `poll` says so before a write fails, so the next run is not started
/// for nobody.
pub fn stdout_closed() -> bool {
    let mut out = libc::pollfd {
        fd: 1,
        events: 0,
        revents: 0,
    };
    // SAFETY: one pollfd, no wait.
    let ready = unsafe { libc::poll(&mut out, 1, 0) };
    ready == 1 && out.revents & libc::POLLERR != 0
}

/// Shows a progress line on a terminal's stderr, over the previous one.
pub fn progress_line(text: &str) {
    use std::io::Write;
    let _ = write!(std::io::stderr(), "\r{text}   ");
}

/// Clears the progress line.
pub fn clear_progress_line() {
    progress_line(&" ".repeat(60));
    use std::io::Write;
    let _ = write!(std::io::stderr(), "\r");
}

/// Writes a line to stderr, ignoring failure (a full or closed stderr must not
/// turn a message into a panic).
pub fn say(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{args}");
}

/// An optional limit: its value, or `unlimited`.
pub fn limit(n: Option<u64>) -> String {
    n.map_or_else(|| "unlimited".to_owned(), |v| v.to_string())
}

/// Lines of text padded into aligned columns (the first row is the header). A
/// column of numbers aligns right, header included (a sign or `~` before the digits
/// and a unit after them count as a number, `-` an absent one); a column with any
/// words (letters beyond a unit, a note in parentheses), left.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let number = |cell: &str| {
        let digits = cell.trim_start_matches(['+', '-', '~']);
        digits.starts_with(|ch: char| ch.is_ascii_digit())
            && !cell.contains('(')
            && cell
                .split_whitespace()
                .skip(1)
                .all(|w| w.chars().count() <= 3 || w == "buffers")
    };
    let right: Vec<bool> = (0..columns)
        .map(|c| {
            let cells = || rows.iter().skip(1).filter_map(|r| r.get(c));
            cells().any(|cell| number(cell)) && cells().all(|cell| cell == "-" || number(cell))
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                let pad = " ".repeat(widths[c].saturating_sub(cell.chars().count()));
                if right[c] {
                    format!("{pad}{cell}")
                } else {
                    format!("{cell}{pad}")
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
            $crate::format::say(format_args!($($arg)*));
        }
    };
}

/// Details on stderr with `-v`: what a user debugging a run wants (every sample,
/// the setup's timings, the child processes' command lines).
#[macro_export]
macro_rules! verbose {
    ($($arg:tt)*) => {
        if $crate::format::shows($crate::format::Verbosity::Verbose) {
            $crate::format::say(format_args!($($arg)*));
        }
    };
}

/// A line on stderr whatever the verbosity (errors, warnings).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::format::say(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn a_column_of_numbers_aligns_right_and_one_with_words_left() {
        let rows: Vec<Vec<String>> = [
            ["resource", "per buffer", "now", "reached at"],
            [
                "host RSS",
                "+522 B ± 2 B",
                "75.73 MiB",
                "beyond 10x this run",
            ],
            ["open fds", "0", "11", "-"],
            [
                "maps",
                "+518 B (3 samples: too few to measure)",
                "162",
                "~40 buffers",
            ],
        ]
        .iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect();
        let text = table(&rows);
        let lines: Vec<&str> = text.lines().collect();
        // Words in a column: every cell starts where the column does.
        // In characters: `±` is two bytes.
        let at = |line: &str, cell: &str| line[..line.find(cell).unwrap()].chars().count();
        assert_eq!(at(lines[1], "+522"), at(lines[2], "0 "), "{text}");
        assert_eq!(at(lines[1], "beyond"), at(lines[3], "~40"), "{text}");
        // Numbers: every cell (the header too) ends where the column does.
        let end = |line: &str, cell: &str| at(line, cell) + cell.chars().count();
        assert_eq!(end(lines[0], "now"), end(lines[1], "75.73 MiB"), "{text}");
        assert_eq!(end(lines[2], "11"), end(lines[3], "162"), "{text}");
    }
}
