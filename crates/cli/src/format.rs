//! Output formats and the small helpers the table views share.

use clap::ValueEnum;

/// How a subcommand prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Human-readable text.
    #[default]
    Table,
    /// One JSON document on stdout (stable field names).
    Json,
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), crate::Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| crate::Failure::Tool(format!("cannot encode JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

/// Bytes in binary units: `1.00 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// An optional limit: its value, or `unlimited`.
pub fn limit(n: Option<u64>) -> String {
    n.map_or_else(|| "unlimited".to_owned(), |v| v.to_string())
}
