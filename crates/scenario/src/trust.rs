//! The user's word for scenario files that load code (after direnv's `allow`): a
//! trusted file is recorded by the SHA-256 of its content, so a file that changes
//! needs trust again. The record is one line per file, `HASH PATH`, in
//! `$CLMULTI_TRUST_FILE`, else `$XDG_CONFIG_HOME/clmulti/trusted`, else
//! `~/.config/clmulti/trusted`.

use crate::loads::Load;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable naming the trust record instead of the default.
pub const TRUST_FILE_ENV: &str = "CLMULTI_TRUST_FILE";

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

/// The SHA-256 of a file's content, in hex.
pub fn digest(content: &[u8]) -> String {
    Sha256::digest(content)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every `(hash, path)` the record holds.
pub fn recorded() -> Vec<(String, String)> {
    let Some(path) = record_path() else {
        return Vec::new();
    };
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (hash, file) = l.split_once(' ')?;
            (hash.len() == 64).then(|| (hash.to_owned(), file.to_owned()))
        })
        .collect()
}

/// Whether this file, with content of this digest, was trusted: both must match, for
/// the same text elsewhere can load other files (its relative paths resolve from
/// its own folder).
pub fn is_trusted(digest: &str, file: &Path) -> bool {
    let shown = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    recorded()
        .iter()
        .any(|(h, p)| h == digest && Path::new(p) == shown)
}

/// Records `file` (its current content) as trusted; returns its digest.
pub fn trust(file: &Path) -> std::io::Result<String> {
    let content = std::fs::read(file)?;
    let hash = digest(&content);
    if is_trusted(&hash, file) {
        return Ok(hash);
    }
    let record = record_path().ok_or_else(|| {
        std::io::Error::other("no place for the trust record: set HOME or CLMULTI_TRUST_FILE")
    })?;
    if let Some(folder) = record.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let shown = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let mut out = open_no_follow(&record, true)?;
    writeln!(out, "{hash} {}", shown.display())?;
    Ok(hash)
}

/// Takes `file`'s trust back (every record of its path or of its current content);
/// returns how many records went.
pub fn revoke(file: &Path) -> std::io::Result<usize> {
    let Some(record) = record_path() else {
        return Ok(0);
    };
    let shown = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let hash = std::fs::read(file).ok().map(|c| digest(&c));
    let all = recorded();
    let kept: Vec<&(String, String)> = all
        .iter()
        .filter(|(h, p)| Path::new(p) != shown && Some(h) != hash.as_ref())
        .collect();
    let gone = all.len() - kept.len();
    if gone > 0 {
        let mut out = open_no_follow(&record, false)?;
        for (h, p) in kept {
            writeln!(out, "{h} {p}")?;
        }
    }
    Ok(gone)
}

/// Opens the record for writing without following a symlink planted in its place.
fn open_no_follow(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options
        .write(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600);
    if append {
        options.append(true);
    } else {
        options.truncate(true);
    }
    options.open(path)
}

/// Why a file may not run as it is: the loads it makes that nothing trusts (its
/// content not trusted, the library not allowed for this run). Empty: it may run.
pub fn untrusted_loads(
    loads: &[Load],
    content_digest: &str,
    file: &Path,
    allowed: &[PathBuf],
) -> Vec<Load> {
    if is_trusted(content_digest, file) {
        return Vec::new();
    }
    let allowed: Vec<PathBuf> = allowed
        .iter()
        .map(|a| std::fs::canonicalize(a).unwrap_or_else(|_| a.clone()))
        .collect();
    loads
        .iter()
        .filter(|l| l.trusted.is_none())
        .filter(|l| {
            let path = std::fs::canonicalize(&l.path).unwrap_or_else(|_| PathBuf::from(&l.path));
            !allowed.iter().any(|a| path.starts_with(a))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_file_stays_trusted_until_it_changes() {
        let dir = std::env::temp_dir().join(format!("clmulti-trust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record = dir.join("trusted");
        // Only this test of the crate reads the variable.
        std::env::set_var(TRUST_FILE_ENV, &record);
        let file = dir.join("s.toml");
        std::fs::write(&file, "[env]\nLD_PRELOAD = \"/tmp/x.so\"\n").unwrap();
        let hash = trust(&file).unwrap();
        assert!(is_trusted(&hash, &file));
        // The same text elsewhere is another file: its relative paths load others.
        let copy = dir.join("copy.toml");
        std::fs::copy(&file, &copy).unwrap();
        assert!(!is_trusted(&hash, &copy));
        std::fs::write(&file, "[env]\nLD_PRELOAD = \"/tmp/y.so\"\n").unwrap();
        assert!(!is_trusted(&digest(&std::fs::read(&file).unwrap()), &file));
        assert_eq!(revoke(&file).unwrap(), 1);
        assert!(!is_trusted(&hash, &file));
        // A symlink planted where the record goes is not followed.
        std::fs::remove_file(&record).unwrap();
        std::os::unix::fs::symlink(dir.join("victim"), &record).unwrap();
        assert!(trust(&file).is_err());
        assert!(!dir.join("victim").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
