//! The user's word for scenario files (after direnv's `allow`): one record per
//! trusted file, one JSON object a line, in `$CLMULTI_TRUST_FILE`, else
//! `$XDG_CONFIG_HOME/clmulti/trusted`, else `~/.config/clmulti/trusted`. A record
//! holds the scenario's real path and the SHA-256 of its text, and for every file it
//! names that needs a word, the file's real path and SHA-256 (a folder, or a file
//! written, by its real path): a changed scenario, a scenario elsewhere (its relative
//! paths name other files) or a changed library needs the word again. Paths are JSON
//! strings, so no path (a newline in it included) can make a second record; a line
//! that does not read as a record (one of an earlier clmulti: `HASH PATH`) is not one.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The environment variable naming the trust record instead of the default.
pub const TRUST_FILE_ENV: &str = "CLMULTI_TRUST_FILE";
/// The largest record file read.
const MAX_STORE_BYTES: u64 = 16 << 20;

/// The user's word for one scenario file as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The scenario file's real path.
    pub scenario: PathBuf,
    /// The SHA-256 of its text.
    pub sha256: String,
    /// Each library it loads that needs a word: its real path and SHA-256.
    #[serde(default)]
    pub files: Vec<Hashed>,
    /// Each folder it names, or file it writes, that needs a word: its real path.
    #[serde(default)]
    pub places: Vec<PathBuf>,
}

/// A file by its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hashed {
    /// Its real path.
    pub path: PathBuf,
    /// The SHA-256 of its content.
    pub sha256: String,
}

/// Where the trust record is.
pub fn record_path() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os(TRUST_FILE_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(file));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))?;
    Some(config.join("clmulti").join("trusted"))
}

/// The SHA-256 of some bytes, in hex.
pub fn digest(content: &[u8]) -> String {
    hex(&Sha256::digest(content))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of what `file` reads, in hex.
pub fn digest_of(file: &mut impl Read) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut chunk)?;
        if n == 0 {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(&chunk[..n]);
    }
}

/// Every record the store holds, oldest first. A store that is not a regular file
/// (a FIFO, a device) or is larger than 16 MiB is an error, never waited on.
pub fn recorded() -> std::io::Result<Vec<Record>> {
    let Some(path) = record_path() else {
        return Ok(Vec::new());
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MAX_STORE_BYTES {
        return Err(std::io::Error::other(format!(
            "{}: not a trust record (not a regular file, or over 16 MiB)",
            path.display()
        )));
    }
    let mut text = String::new();
    file.take(MAX_STORE_BYTES).read_to_string(&mut text)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .collect())
}

/// The newest record of this scenario (its real path) with this text's digest.
pub fn find(scenario: &Path, sha256: &str) -> Option<Record> {
    recorded()
        .ok()?
        .into_iter()
        .rev()
        .find(|r| r.scenario == scenario && r.sha256 == sha256)
}

/// Adds a record: one line, one write.
pub fn add(record: &Record) -> std::io::Result<()> {
    let store = record_path().ok_or_else(|| {
        std::io::Error::other("no place for the trust record: set HOME or CLMULTI_TRUST_FILE")
    })?;
    if let Some(folder) = store.parent().filter(|f| !f.as_os_str().is_empty()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)?;
    }
    let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
    line.push('\n');
    // Appended without following a link planted where the store goes.
    let mut out = crate::output::open_append(&store)?;
    out.write_all(line.as_bytes())
}

/// Takes back every record of this scenario (its real path) or of this text;
/// returns how many went.
pub fn revoke(scenario: &Path, sha256: Option<&str>) -> std::io::Result<usize> {
    let Some(store) = record_path() else {
        return Ok(0);
    };
    let all = recorded()?;
    let kept: Vec<&Record> = all
        .iter()
        .filter(|r| r.scenario != scenario && Some(r.sha256.as_str()) != sha256)
        .collect();
    let gone = all.len() - kept.len();
    if gone > 0 {
        let mut text = String::new();
        for record in kept {
            text.push_str(&serde_json::to_string(record).map_err(std::io::Error::other)?);
            text.push('\n');
        }
        // A new file renamed over the old: a link planted there is replaced.
        crate::output::write_file(&store, text.as_bytes())?;
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_cannot_forge_a_second_record() {
        let dir = std::env::temp_dir().join(format!("clmulti-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = dir.join("trusted");
        // Only this test of the crate reads the variable.
        std::env::set_var(TRUST_FILE_ENV, &store);
        let forged = format!(
            "x.toml\n{{\"scenario\":\"{}\",\"sha256\":\"{}\"}}",
            dir.join("evil.toml").display(),
            digest(b"evil")
        );
        let record = Record {
            scenario: dir.join(forged),
            sha256: digest(b"text"),
            files: Vec::new(),
            places: Vec::new(),
        };
        add(&record).unwrap();
        assert_eq!(recorded().unwrap(), std::slice::from_ref(&record));
        assert_eq!(std::fs::read_to_string(&store).unwrap().lines().count(), 1);
        assert!(find(&dir.join("evil.toml"), &digest(b"evil")).is_none());
        assert!(find(&record.scenario, &record.sha256).is_some());
        // An earlier clmulti's line is no record.
        let mut old = std::fs::OpenOptions::new()
            .append(true)
            .open(&store)
            .unwrap();
        writeln!(
            old,
            "{} {}",
            digest(b"evil"),
            dir.join("evil.toml").display()
        )
        .unwrap();
        assert_eq!(recorded().unwrap().len(), 1);
        assert_eq!(revoke(&record.scenario, None).unwrap(), 1);
        assert!(recorded().unwrap().is_empty());
        // A link planted where the store goes is not followed.
        std::fs::remove_file(&store).unwrap();
        std::os::unix::fs::symlink(dir.join("victim"), &store).unwrap();
        assert!(add(&record).is_err());
        assert!(!dir.join("victim").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
