//! Small helpers both emulated trees (i915's, xe's) and their fdinfo texts use.

use std::io;
use std::path::Path;

pub fn write_if_missing(path: &Path, text: &str) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(()),
        Err(_) => std::fs::write(path, text),
    }
}

pub fn link(target: &str, at: &Path) -> io::Result<()> {
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::os::unix::fs::symlink(target, at) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// A size as the kernel's `drm_print_memory_stats` prints it: divided by 1024 while
/// it divides evenly, up to MiB.
pub fn drm_size(bytes: u64) -> String {
    let units = ["", " KiB", " MiB"];
    let mut value = bytes;
    let mut unit = 0;
    while unit < units.len() - 1 && value != 0 && value % 1024 == 0 {
        value /= 1024;
        unit += 1;
    }
    format!("{value}{}", units[unit])
}
