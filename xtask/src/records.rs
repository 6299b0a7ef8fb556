//! The results file: one JSON line per finished run. The file is the truth: every
//! summary can be rebuilt from it. A record is one `write` of a whole line; before
//! appending, a torn tail (a crash mid-write) is cut off and kept aside, so no record
//! is glued onto another.

use clmulti_explain::Report;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// One run of a sweep, as stored in `results.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRecord {
    /// Identifies the run and the kind of machine: hash of the expanded scenario and
    /// the machine's kind. `--resume` skips keys already present.
    pub key: String,
    /// The scenario file.
    pub file: String,
    /// The run's index in the file's grid.
    pub index: usize,
    /// The kind of machine: platforms, device models and driver versions, hashed.
    pub machine: String,
    /// The machine's name, and its devices, in words.
    #[serde(default)]
    pub host: String,
    /// The operating system and kernel.
    #[serde(default)]
    pub os: String,
    /// `clmulti --version` of the binary that ran it.
    #[serde(default)]
    pub tool: String,
    /// When the run ended, seconds since the Unix epoch.
    #[serde(default)]
    pub finished_at: u64,
    /// Wall time of the child process.
    pub wall_seconds: f64,
    /// The child's exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// The run's report (built by the sweep when the child left none).
    pub report: Report,
}

/// Reads a record line (reports of older schemas are upgraded).
pub fn parse(line: &str) -> Result<SweepRecord, String> {
    let mut value: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let report = value
        .as_object_mut()
        .and_then(|o| o.remove("report"))
        .ok_or("no report")?;
    let report = Report::from_json(&report.to_string()).map_err(|e| e.to_string())?;
    value["report"] = serde_json::Value::Null;
    #[derive(Deserialize)]
    struct Head {
        key: String,
        file: String,
        index: usize,
        machine: String,
        #[serde(default)]
        host: String,
        #[serde(default)]
        os: String,
        #[serde(default)]
        tool: String,
        #[serde(default)]
        finished_at: u64,
        wall_seconds: f64,
        exit_code: Option<i32>,
        signal: Option<i32>,
    }
    let head: Head = serde_json::from_value(value).map_err(|e| e.to_string())?;
    Ok(SweepRecord {
        key: head.key,
        file: head.file,
        index: head.index,
        machine: head.machine,
        host: head.host,
        os: head.os,
        tool: head.tool,
        finished_at: head.finished_at,
        wall_seconds: head.wall_seconds,
        exit_code: head.exit_code,
        signal: head.signal,
        report,
    })
}

/// Moves a results file aside as the next free `results.<n>.jsonl` beside it, so
/// starting over never destroys a generation, and says where it went.
pub fn keep_generation(results: &Path) -> Result<PathBuf, String> {
    let dir = results.parent().unwrap_or(Path::new("."));
    let kept = (1..)
        .map(|n| dir.join(format!("results.{n}.jsonl")))
        .find(|p| !p.exists())
        .ok_or("no free generation name")?;
    std::fs::rename(results, &kept).map_err(|e| format!("{}: {e}", results.display()))?;
    eprintln!("earlier results kept as {}", kept.display());
    Ok(kept)
}

/// What a repair did.
#[derive(Debug)]
pub struct Repair {
    /// Bytes cut off the end.
    pub bytes: u64,
    /// Where they were kept.
    pub kept_in: PathBuf,
}

/// Makes the file end at a record boundary: a last line without its newline (a crash
/// or a full disk mid-write) is moved to `<file>.torn-<n>` and cut off.
pub fn repair(path: &Path) -> std::io::Result<Option<Repair>> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    // Find the last newline, reading backwards in chunks.
    let mut end = len;
    let mut boundary = 0;
    let mut chunk = vec![0u8; 64 * 1024];
    'search: while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..n])?;
        if let Some(i) = chunk[..n].iter().rposition(|&b| b == b'\n') {
            boundary = start + i as u64 + 1;
            break 'search;
        }
        end = start;
    }
    if boundary == len {
        return Ok(None);
    }
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(boundary))?;
    file.read_to_end(&mut tail)?;
    let kept_in = (1..)
        .map(|n| path.with_extension(format!("jsonl.torn-{n}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.with_extension("torn"));
    std::fs::write(&kept_in, &tail)?;
    file.set_len(boundary)?;
    file.sync_all()?;
    Ok(Some(Repair {
        bytes: len - boundary,
        kept_in,
    }))
}

/// Appends one record as one write and fsyncs; on a failed or short write the file
/// is cut back to where it was, so it never holds half a record.
pub fn append(path: &Path, record: &SweepRecord) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    let before = file.metadata()?.len();
    let written = file.write(&line);
    match written {
        Ok(n) if n == line.len() => file.sync_all(),
        Ok(_) | Err(_) => {
            let _ = file.set_len(before);
            Err(written.err().unwrap_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::WriteZero, "short write (disk full?)")
            }))
        }
    }
}

/// Reads every record in one streaming pass, handing each to `each`; a line that does
/// not parse is skipped with a warning. Returns how many lines were skipped.
pub fn for_each(path: &Path, mut each: impl FnMut(SweepRecord)) -> std::io::Result<usize> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut skipped = 0;
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match parse(&line) {
            Ok(r) => each(r),
            Err(e) => {
                skipped += 1;
                eprintln!(
                    "warning: {}:{}: skipping unreadable record: {e}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
    Ok(skipped)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("clmulti-records-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("results.jsonl")
    }

    #[test]
    fn a_torn_tail_is_kept_aside_and_cut() {
        let path = temp("torn");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":2}\n{\"c\":").unwrap();
        let repair = repair(&path).unwrap().unwrap();
        assert_eq!(repair.bytes, 5);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        assert_eq!(std::fs::read_to_string(&repair.kept_in).unwrap(), "{\"c\":");
        assert!(
            super::repair(&path).unwrap().is_none(),
            "a whole file needs no repair"
        );
    }

    #[test]
    fn a_file_of_one_torn_line_is_emptied() {
        let path = temp("one");
        std::fs::write(&path, "{\"partial\": tr").unwrap();
        assert_eq!(repair(&path).unwrap().unwrap().bytes, 14);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}

/// What a sweep set out to do in its folder (`plan.json`, written before the first
/// run): `merge` compares it with the records to name shards that stopped early.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// `[K, N]` for `--shard K/N`.
    pub shard: Option<(usize, usize)>,
    /// The machine it ran on, in words.
    pub host: String,
    /// The key of every run planned in this folder, done before or not.
    pub keys: Vec<String>,
    /// Every start of a sweep on this plan, oldest first: a shard requeued onto
    /// another node has two, naming both hosts.
    #[serde(default)]
    pub starts: Vec<Start>,
}

/// One start of a sweep in a folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    /// The host name (the kernel's; a node's own on a cluster).
    pub host: String,
    /// The sweep's process id on that host.
    pub pid: u32,
    /// Unix seconds.
    pub at: u64,
    /// Planned runs already done when it started.
    pub done: usize,
}

impl Plan {
    pub const FILE_NAME: &'static str = "plan.json";

    pub fn write(&self, folder: &Path) -> std::io::Result<()> {
        let tmp = folder.join(".plan.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(self)?)?;
        std::fs::rename(tmp, folder.join(Self::FILE_NAME))
    }

    /// The folder's plan; `None` when it has none (a sweep older than plans).
    pub fn read(folder: &Path) -> Result<Option<Plan>, String> {
        let path = folder.join(Self::FILE_NAME);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
}
