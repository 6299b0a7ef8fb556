//! The results file: one JSON line per finished run. The file is the truth: every
//! summary can be rebuilt from it. A record is one `write` of a whole line; before
//! appending, a torn tail (a crash mid-write) is cut off and kept aside, so no record
//! is glued onto another.
//!
//! A scenario is stored once per scenario file, not once per run: a `scenario_base`
//! line holds a whole scenario, and each record after it names that base and holds
//! only what its own scenario changes (a JSON merge patch: the grid point, the name).
//! A 1 MiB description in a 100-run grid is then 1 MiB, not 100. Records that embed
//! their scenario (files written before, or a run whose scenario shares nothing with
//! its file's base) read as they are.
//!
//! Every file read here is opened as a regular file of bounded lines: a results file
//! that is a FIFO, a device or a symbolic link to `/dev/zero` is refused with its
//! name, never read for ever.

use clmulti_explain::Report;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The longest line read from a results file, bytes: a report with every sample
/// of a long run is a few MB; past this it is not a record.
pub const MAX_LINE_BYTES: usize = 256 << 20;
/// The largest `plan.json` read, bytes (100000 keys take 2 MB).
const MAX_PLAN_BYTES: u64 = 64 << 20;

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

impl SweepRecord {
    /// The host the run ran on: what [`machine_words`] put before `: ` in `host`
    /// (empty in records of an earlier clmulti).
    pub fn host_name(&self) -> &str {
        self.host
            .split_once(": ")
            .map_or(&self.host, |(name, _)| name)
    }

    /// The devices the run used, in words (`NVIDIA H200 (NVIDIA CUDA)`), each once,
    /// from its own report: the `host` the sweep recorded names the devices
    /// `clmulti devices` saw without the run's `[env]` (PoCL's, for a sweep of
    /// NEO's emulated devices).
    pub fn devices_used(&self) -> Vec<String> {
        let mut words: Vec<String> = Vec::new();
        for device in &self.report.devices {
            let said = device_words(device.display_name(), &self.report.platform);
            if !words.contains(&said) {
                words.push(said);
            }
        }
        words
    }
}

/// A device as a machine's description names it: `NVIDIA H200 (NVIDIA CUDA)`.
pub fn device_words(device: &str, platform: &str) -> String {
    format!("{device} ({platform})")
}

/// A host and its devices in words (`vm: NVIDIA H200 (NVIDIA CUDA)`): the host
/// alone without devices, the devices alone without a host (records of an earlier
/// clmulti).
pub fn machine_words(host: &str, devices: &[String]) -> String {
    match (host.is_empty(), devices.is_empty()) {
        (_, true) => host.to_owned(),
        (true, false) => format!("{} (host not recorded)", devices.join(", ")),
        (false, false) => format!("{host}: {}", devices.join(", ")),
    }
}

/// Opens `path` for reading only if it is a regular file (without blocking on a
/// FIFO); `None` when there is none.
pub fn open_regular(path: &Path) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device or a folder): results, plans and comparisons are read only from files",
        ));
    }
    Ok(Some(file))
}

/// Reads the next line (without its newline) into `line`, at most `max` bytes;
/// `false` at the end.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> std::io::Result<bool> {
    line.clear();
    let read = reader.take(max as u64 + 1).read_until(b'\n', line)?;
    if read == 0 {
        return Ok(false);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a line longer than {} MiB: not a results file", max >> 20),
        ));
    }
    Ok(true)
}

/// What one line of a results file holds.
enum Line {
    /// A scenario later records name as their base.
    Base,
    /// A record.
    Record(Box<SweepRecord>),
}

/// The scenario bases seen so far in one file, by hash.
type Bases = HashMap<String, serde_json::Value>;

/// Reads a line: a scenario base (remembered in `bases`) or a record (its scenario
/// rebuilt from its base; reports of older schemas are upgraded).
fn parse_line(line: &str, bases: &mut Bases) -> Result<Line, String> {
    let mut value: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let object = value.as_object_mut().ok_or("not a JSON object")?;
    if !object.contains_key("key") {
        if let (Some(serde_json::Value::String(hash)), Some(scenario)) =
            (object.remove("scenario_base"), object.remove("scenario"))
        {
            bases.insert(hash, scenario);
            return Ok(Line::Base);
        }
    }
    let mut report = object.remove("report").ok_or("no report")?;
    if let Some(base) = object.remove("scenario_base") {
        let hash = base.as_str().ok_or("scenario_base is not a string")?;
        let base = bases
            .get(hash)
            .ok_or_else(|| format!("its scenario base {hash} is not in the file before it"))?;
        let patch = object
            .remove("scenario_patch")
            .unwrap_or(serde_json::Value::Null);
        let scenario = merge_patch(base.clone(), &patch);
        report
            .as_object_mut()
            .ok_or("the report is not an object")?
            .insert("scenario".into(), scenario);
    }
    let report = Report::from_json(&report.to_string()).map_err(|e| e.to_string())?;
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
    Ok(Line::Record(Box::new(SweepRecord {
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
    })))
}

/// The JSON merge patch (RFC 7386) that turns `from` into `to`.
fn merge_diff(from: &serde_json::Value, to: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let mut patch = serde_json::Map::new();
            for (key, new) in b {
                match a.get(key) {
                    Some(old) if old == new => {}
                    Some(old) if old.is_object() && new.is_object() => {
                        patch.insert(key.clone(), merge_diff(old, new));
                    }
                    _ => {
                        patch.insert(key.clone(), new.clone());
                    }
                }
            }
            for key in a.keys().filter(|k| !b.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => to.clone(),
    }
}

/// Applies a JSON merge patch (RFC 7386).
fn merge_patch(mut target: serde_json::Value, patch: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let Value::Object(changes) = patch else {
        return patch.clone();
    };
    if !target.is_object() {
        target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(fields) = &mut target {
        for (key, change) in changes {
            if change.is_null() {
                fields.remove(key);
            } else {
                let old = fields.remove(key).unwrap_or(Value::Null);
                fields.insert(key.clone(), merge_patch(old, change));
            }
        }
    }
    target
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
    if open_regular(path)?.is_none() {
        return Ok(None);
    }
    let mut file = clmulti::output::open_in_place(path)?;
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
    clmulti::output::write_file(&kept_in, &tail)?;
    file.set_len(boundary)?;
    file.sync_all()?;
    Ok(Some(Repair {
        bytes: len - boundary,
        kept_in,
    }))
}

/// Appends records to a results file, each as one write (with the scenario base it
/// needs, when the file lacks it) followed by an fsync; on a failed or short write
/// the file is cut back to where it was, so it never holds half a record.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    /// Per scenario file, the base its records patch: hash and scenario.
    bases: HashMap<String, (String, serde_json::Value)>,
    /// Every base hash the file holds.
    written: HashSet<String>,
}

/// A patch past this many bytes, and past half its scenario, starts a new base.
const PATCH_REBASE_BYTES: usize = 4096;

impl Writer {
    /// A writer for `path`, which may hold records already (their bases are reused).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let mut writer = Writer {
            path: path.to_path_buf(),
            bases: HashMap::new(),
            written: HashSet::new(),
        };
        let Some(file) = open_regular(path)? else {
            return Ok(writer);
        };
        #[derive(Deserialize)]
        struct BaseLine {
            key: Option<String>,
            scenario_base: Option<String>,
            file: Option<String>,
            scenario: Option<serde_json::Value>,
        }
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        while next_line(&mut reader, &mut line, MAX_LINE_BYTES)? {
            // Records skip their report unread: only base lines are kept.
            if let Ok(BaseLine {
                key: None,
                scenario_base: Some(hash),
                file,
                scenario: Some(scenario),
            }) = serde_json::from_slice(&line)
            {
                if let Some(file) = file {
                    writer.bases.insert(file, (hash.clone(), scenario));
                }
                writer.written.insert(hash);
            }
        }
        Ok(writer)
    }

    /// Appends one record.
    pub fn append(&mut self, record: &SweepRecord) -> std::io::Result<()> {
        let mut value = serde_json::to_value(record).map_err(std::io::Error::other)?;
        let scenario = value["report"]
            .as_object_mut()
            .and_then(|r| r.remove("scenario"))
            .unwrap_or(serde_json::Value::Null);
        let mut bytes = Vec::new();
        let patch = self.bases.get(&record.file).and_then(|(hash, base)| {
            let patch = merge_diff(base, &scenario);
            let size = serde_json::to_string(&patch).map_or(usize::MAX, |t| t.len());
            let small = size <= PATCH_REBASE_BYTES
                || size * 2 <= serde_json::to_string(&scenario).map_or(0, |t| t.len());
            (small && merge_patch(base.clone(), &patch) == scenario).then(|| (hash.clone(), patch))
        });
        let (hash, patch) = match patch {
            Some(found) => found,
            None => {
                let text = serde_json::to_string(&scenario).map_err(std::io::Error::other)?;
                let hash = fnv64(&text);
                if !self.written.contains(&hash) {
                    let line = serde_json::json!({
                        "scenario_base": hash,
                        "file": record.file,
                        "scenario": scenario,
                    });
                    serde_json::to_writer(&mut bytes, &line).map_err(std::io::Error::other)?;
                    bytes.push(b'\n');
                }
                self.bases
                    .insert(record.file.clone(), (hash.clone(), scenario.clone()));
                (hash, serde_json::Value::Object(serde_json::Map::new()))
            }
        };
        let object = value.as_object_mut().expect("a record is an object");
        object.insert("scenario_base".into(), hash.clone().into());
        object.insert("scenario_patch".into(), patch);
        serde_json::to_writer(&mut bytes, &value).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        append_bytes(&self.path, &bytes)?;
        self.written.insert(hash);
        Ok(())
    }
}

/// One write of whole lines, then fsync; cut back on a failed or short write.
fn append_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = clmulti::output::open_append(path)?;
    let before = file.metadata()?.len();
    let written = file.write(bytes);
    match written {
        Ok(n) if n == bytes.len() => file.sync_all(),
        Ok(_) | Err(_) => {
            let _ = file.set_len(before);
            Err(written.err().unwrap_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::WriteZero, "short write (disk full?)")
            }))
        }
    }
}

/// The unreadable lines of one file named one by one; the rest are counted.
const WARNINGS_NAMED: usize = 5;

/// Reads every record in one streaming pass, in file order, handing each to `each`
/// with its line number; a line that does not parse is skipped, with a warning
/// unless `quiet` (the first few named, the rest counted: 300 000 bad lines are one
/// more line, not 25 MB). Returns how many lines were skipped.
fn each_line(
    path: &Path,
    quiet: bool,
    mut each: impl FnMut(usize, SweepRecord),
) -> std::io::Result<usize> {
    let mut bases = Bases::new();
    let mut named = 0;
    let skipped = each_text(path, |n, text| match parse_line(text, &mut bases) {
        Ok(Line::Record(r)) => {
            each(n, *r);
            true
        }
        Ok(Line::Base) => true,
        Err(e) => {
            if !quiet && named < WARNINGS_NAMED {
                named += 1;
                eprintln!(
                    "warning: {}:{n}: skipping unreadable record: {e}",
                    path.display()
                );
            }
            false
        }
    })?;
    if !quiet && skipped > named {
        eprintln!(
            "warning: {}: {} more unreadable record(s) skipped",
            path.display(),
            skipped - named
        );
    }
    Ok(skipped)
}

/// Hands each non-empty line of a results file to `each` (which says whether it
/// read), with its 1-based number; returns how many did not read.
fn each_text(path: &Path, mut each: impl FnMut(usize, &str) -> bool) -> std::io::Result<usize> {
    let Some(file) = open_regular(path)? else {
        return Ok(0);
    };
    let mut reader = BufReader::new(file);
    let mut skipped = 0;
    let mut line = Vec::new();
    let mut n = 0;
    while next_line(&mut reader, &mut line, MAX_LINE_BYTES)
        .map_err(|e| std::io::Error::new(e.kind(), format!("line {}: {e}", n + 1)))?
    {
        n += 1;
        let text = String::from_utf8_lossy(&line);
        if !text.trim().is_empty() && !each(n, &text) {
            skipped += 1;
        }
    }
    Ok(skipped)
}

/// Every record, duplicates included, in file order.
pub fn for_each(path: &Path, mut each: impl FnMut(SweepRecord)) -> std::io::Result<usize> {
    each_line(path, false, |_, r| each(r))
}

/// Each run once: of the records sharing a key (a line duplicated, a run retried
/// with `--retry-failed`), the newest (the latest `finished_at`, then the last in
/// the file). Two streaming passes; the first reads only keys and times.
pub fn for_each_latest(path: &Path, mut each: impl FnMut(SweepRecord)) -> std::io::Result<usize> {
    // Only records that read count: a corrupt line carrying a run's key must not
    // hide that run's good record.
    let mut newest: HashMap<String, (u64, usize)> = HashMap::new();
    each_line(path, true, |n, r| {
        let entry = newest.entry(r.key).or_insert((r.finished_at, n));
        if (r.finished_at, n) >= *entry {
            *entry = (r.finished_at, n);
        }
    })?;
    each_line(path, false, |n, r| {
        if newest.get(&r.key).is_some_and(|(_, line)| *line == n) {
            each(r);
        }
    })
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
#[path = "records/tests.rs"]
mod tests;

#[path = "records/plan.rs"]
mod plan;
pub use plan::{plan_identity, run_identity, Plan, Start, INVALID};
