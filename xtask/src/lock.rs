//! One sweep per output folder at a time: a second one says who holds it.
//!
//! The lock is `flock` on `.sweep.lock` in the folder, so it holds across the hosts of a
//! shared file system that supports locks (NFS, as byte-range locks), and it goes with
//! its holder: nothing here decides a lock is stale. The holder's pid names a process
//! on the holder's host (in its pid namespace), which another host cannot check.

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
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(".sweep.lock");
    // Without blocking on a FIFO; anything but a regular file is refused.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!(
            "{}: not a regular file; remove it (a sweep makes its own lock file)",
            path.display()
        ));
    }
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::WouldBlock {
            return Err(format!(
                "{}: cannot lock it ({error}): its file system takes no locks (Lustre: mount with -o flock), and without one two sweeps could write this folder at once; use an --out on a file system with locks",
                path.display()
            ));
        }
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let holder = holder.trim();
        let here = clmulti_probe::host_name();
        let elsewhere = holder
            .split_once(" on ")
            .and_then(|(_, rest)| rest.split(',').next())
            .filter(|host| !host.is_empty() && *host != here);
        return Err(match elsewhere {
            Some(host) => format!(
                "{} is in use by a sweep on another host ({holder}); wait for it, or use another --out (if {host} is down for good and its lock outlived it, as NFSv3 locks can, delete {} to take over)",
                dir.display(),
                path.display()
            ),
            None => format!(
                "{} is in use by another sweep ({holder}); wait for it, or use another --out",
                dir.display()
            ),
        });
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(
        file,
        "pid {} on {}, started {}",
        std::process::id(),
        clmulti_probe::host_name(),
        unix_time()
    );
    Ok(FolderLock { _file: file })
}

/// Whether a sweep holds the folder's lock now (a summary rebuilt meanwhile says the
/// sweep is still running). Takes and drops the lock when it is free.
pub fn is_locked(dir: &Path) -> bool {
    let Ok(file) = File::open(dir.join(".sweep.lock")) else {
        return false;
    };
    // SAFETY: flock on a descriptor this function owns; released when it closes.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    !taken
}

/// Seconds since the epoch, as text.
pub fn unix_time() -> String {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or_else(|_| "?".into(), |d| format!("unix time {}", d.as_secs()))
}
