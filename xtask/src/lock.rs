//! One sweep per output folder at a time: a second one says who holds it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// Held while a sweep writes a folder; released when dropped or when the process dies
/// (`flock` locks go with their descriptor).
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
}

/// Takes the folder's lock, or says who holds it.
pub fn lock(dir: &Path) -> Result<FolderLock, String> {
    let path = dir.join(".sweep.lock");
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        return Err(format!(
            "{} is in use by another sweep ({}); wait for it, or use another --out",
            dir.display(),
            holder.trim()
        ));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(
        file,
        "pid {} on {}, started {}",
        std::process::id(),
        host.trim(),
        unix_time()
    );
    Ok(FolderLock { _file: file })
}

/// Seconds since the epoch, as text.
pub fn unix_time() -> String {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or_else(|_| "?".into(), |d| format!("unix time {}", d.as_secs()))
}
