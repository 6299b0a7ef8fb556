//! The results file: one JSON line per finished run, appended and fsynced at once,
//! so killing the sweep loses no finished run.

use clmulti_alloc::Report;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

/// One run of a sweep, as stored in `results.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRecord {
    /// Identifies the run on this machine: hash of the expanded scenario and the
    /// machine's devices. `--resume` skips keys already present.
    pub key: String,
    /// The scenario file.
    pub file: String,
    /// The run's index in the file's grid.
    pub index: usize,
    /// Fingerprint of the machine's platforms and devices.
    pub machine: String,
    /// Wall time of the child process.
    pub wall_seconds: f64,
    /// The child's exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// The run's report (built by the sweep when the child left none).
    pub report: Report,
}

/// Appends one record and fsyncs the file.
pub fn append(path: &Path, record: &SweepRecord) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(&line)?;
    file.sync_all()
}

/// Reads every complete record; a torn last line (a crash mid-write) is skipped,
/// and so is any line that does not parse, with a warning.
pub fn read(path: &Path) -> std::io::Result<Vec<SweepRecord>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut records = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(r) => records.push(r),
            Err(e) => eprintln!(
                "warning: {}:{}: skipping unreadable record: {e}",
                path.display(),
                n + 1
            ),
        }
    }
    Ok(records)
}

/// FNV-1a, 64 bits, as hex: a stable key that needs no dependency.
pub fn fnv64(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}
