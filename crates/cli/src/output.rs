//! Output files written so that a link planted in an output folder redirects
//! nothing: a whole file goes to a new temporary beside it (created exclusively) and
//! is renamed over the name, which replaces a link rather than writing through it; a
//! file appended to or opened in place is opened without following a link, and must
//! be a regular file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Writes `bytes` as the whole of `path`.
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (tmp, mut file) = temporary_beside(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

/// A new temporary file beside `path` (`.<name>.<pid>.tmp`), created exclusively; a
/// leftover of that name (a dead process's, or a planted link) is removed first.
pub fn temporary_beside(path: &Path) -> std::io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)?;
    Ok((tmp, file))
}

/// Makes `dir` a folder outputs can be written to, before anything long runs: it is
/// created, it is a folder, and a file can be made in it and renamed (what
/// [`write_file`] does). `/proc/self`, a file, a read-only folder: said, with why.
pub fn writable_folder(dir: &Path) -> Result<(), String> {
    let fail = |why: String| format!("{}: {why}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    if !dir.is_dir() {
        return Err(fail("not a folder".into()));
    }
    let probe = dir.join(".clmulti-writable");
    let (tmp, _) =
        temporary_beside(&probe).map_err(|e| fail(format!("cannot write there: {e}")))?;
    let renamed = std::fs::rename(&tmp, &probe);
    let _ = std::fs::remove_file(&tmp);
    let _ = std::fs::remove_file(&probe);
    renamed.map_err(|e| fail(format!("cannot write there: {e}")))
}

/// Opens `path` to append to, creating it; a link or anything but a regular file is
/// refused.
pub fn open_append(path: &Path) -> std::io::Result<File> {
    regular(
        OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path),
    )
}

/// Opens an existing `path` to read and write in place; a link or anything but a
/// regular file is refused.
pub fn open_in_place(path: &Path) -> std::io::Result<File> {
    regular(
        OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path),
    )
}

fn regular(opened: std::io::Result<File>) -> std::io::Result<File> {
    let file = opened.map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a symbolic link: clmulti writes no output through a link (remove it)",
            )
        } else {
            e
        }
    })?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device or a folder)",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_replaced_or_refused_never_written_through() {
        let dir = std::env::temp_dir().join(format!("clmulti-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let out = dir.join("summary.csv");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_file(&out, b"a,b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "a,b\n");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
        let log = dir.join("results.jsonl");
        std::os::unix::fs::symlink(&victim, &log).unwrap();
        assert!(open_append(&log).is_err());
        assert!(open_in_place(&log).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
