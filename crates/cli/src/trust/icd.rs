//! A vendors folder read as the ICD loader reads it, but safely. ocl-icd 2.3
//! (`ocl_icd_loader.c`, `__initClIcd` and `_open_driver`) takes `OCL_ICD_VENDORS` as a
//! folder when it is one, as one `.icd` file when its name ends in `.icd`, and as a
//! library it opens itself otherwise; in a folder it reads every entry whose name
//! ends in `.icd` (at least 5 bytes long), following links, and opens as a library
//! exactly the first line of each: up to the first newline or NUL, one trailing
//! newline removed, leading and trailing spaces kept (` /x.so` is a path relative to
//! its working folder). It opens whatever is there: a FIFO waits for a writer for
//! ever, `/dev/zero` reads without end. Here only regular files of at most
//! [`MAX_ICD_BYTES`] are read, opened without waiting and without following a link
//! (a link is read at the file it resolves to, as the loader reaches it), looked at
//! through the open file before a byte is read; anything else is a problem said
//! with the file's name.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most bytes of an `.icd` file read (a line naming a library is a few dozen).
pub const MAX_ICD_BYTES: u64 = 64 << 10;
/// The most `.icd` files read in one vendors folder.
pub const MAX_ICD_FILES: usize = 256;
/// The most entries of a vendors folder looked at.
const MAX_ENTRIES: usize = 1 << 16;

/// One `.icd` file, and the library it names as the loader reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icd {
    /// Its name in the folder (`pocl.icd`).
    pub name: String,
    /// What the loader opens: `Ok(None)` for an empty file (the loader skips it).
    pub library: Result<Option<String>, String>,
}

/// What a vendors value makes the ICD loader open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vendors {
    /// `.icd` files (a folder's, or one), each with its library or its problem; a
    /// problem of the folder itself (too many entries) too.
    Icds(Vec<Icd>, Option<String>),
    /// A library the loader opens itself (a file whose name does not end in `.icd`).
    Library(PathBuf),
}

/// Whether ocl-icd takes a name for an `.icd` file.
fn ends_in_icd(name: &[u8]) -> bool {
    name.len() >= 5 && name.ends_with(b".icd")
}

/// What `vendors` (an absolute path) makes the loader open.
pub fn read(vendors: &Path) -> Vendors {
    if vendors.is_dir() {
        return folder(vendors);
    }
    if ends_in_icd(vendors.as_os_str().as_bytes()) {
        let name = vendors
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let icds = match vendors.exists() {
            true => vec![Icd {
                name,
                library: first_line(vendors),
            }],
            // The loader finds nothing to open.
            false => Vec::new(),
        };
        return Vendors::Icds(icds, None);
    }
    Vendors::Library(vendors.to_path_buf())
}

fn folder(dir: &Path) -> Vendors {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vendors::Icds(
            Vec::new(),
            Some(format!("{} cannot be read", dir.display())),
        );
    };
    let mut icds = Vec::new();
    let mut problem = None;
    for (seen, entry) in entries.flatten().enumerate() {
        let name = entry.file_name();
        if !ends_in_icd(name.as_bytes()) && seen < MAX_ENTRIES {
            continue;
        }
        if seen >= MAX_ENTRIES || icds.len() == MAX_ICD_FILES {
            problem = Some(format!(
                "{} holds more than {MAX_ICD_FILES} .icd files or {MAX_ENTRIES} entries: not read further",
                dir.display()
            ));
            break;
        }
        icds.push(Icd {
            name: name.to_string_lossy().into_owned(),
            library: first_line(&entry.path()),
        });
    }
    icds.sort_by(|a, b| a.name.cmp(&b.name));
    Vendors::Icds(icds, problem)
}

/// The library an `.icd` file names, as ocl-icd reads it (see the module's words);
/// why it cannot be read safely, when it cannot.
pub fn first_line(path: &Path) -> Result<Option<String>, String> {
    // The loader follows links: read the file it reaches, through no link.
    let Ok(real) = std::fs::canonicalize(path) else {
        // A link to nothing: the loader's fopen fails and it opens nothing.
        return Ok(None);
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&real)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO (the ICD loader would wait on it for a writer for ever)"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device (the ICD loader would read it without end)"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a folder"
        };
        let shown = if real == path {
            String::new()
        } else {
            format!(" ({})", real.display())
        };
        return Err(format!("is {what}{shown}, not a regular file"));
    }
    if meta.len() > MAX_ICD_BYTES {
        return Err(format!(
            "is {} bytes, more than an .icd file holds ({} KiB at most are read)",
            meta.len(),
            MAX_ICD_BYTES >> 10
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_ICD_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.is_empty() {
        return Ok(None);
    }
    // fgets: up to the first newline, kept; strnlen: up to the first NUL; then the
    // one newline at the end removed.
    let mut line = match bytes.iter().position(|&b| b == b'\n') {
        Some(end) => &bytes[..=end],
        None => &bytes[..],
    };
    if let Some(nul) = line.iter().position(|&b| b == 0) {
        line = &line[..nul];
    }
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok("") => Err("names no library (its first line is empty)".into()),
        Ok(text) if text.chars().any(char::is_control) => Err(format!(
            "names {text:?}, a path with a control character in it"
        )),
        Ok(text) => Ok(Some(text.to_owned())),
        Err(_) => Err(format!(
            "names {:?}, a path that is not UTF-8 text",
            String::from_utf8_lossy(line)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library(dir: &Path, name: &str, content: &[u8]) -> Result<Option<String>, String> {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        first_line(&path)
    }

    #[test]
    fn each_line_reads_as_ocl_icd_reads_it() {
        let dir = std::env::temp_dir().join(format!("clmulti-icd-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let read = |content: &[u8]| library(&dir, "x.icd", content);
        assert_eq!(read(b"/usr/lib/x.so\n"), Ok(Some("/usr/lib/x.so".into())));
        // Leading and trailing spaces are part of the path.
        assert_eq!(read(b" /tmp/x.so\n"), Ok(Some(" /tmp/x.so".into())));
        assert_eq!(read(b"/tmp/x.so \n"), Ok(Some("/tmp/x.so ".into())));
        // Only the first line; a NUL ends it.
        assert_eq!(read(b"/a.so\n/b.so\n"), Ok(Some("/a.so".into())));
        assert_eq!(read(b"/a.so\0/b.so\n"), Ok(Some("/a.so".into())));
        assert_eq!(read(b"libx.so"), Ok(Some("libx.so".into())));
        // An empty file is skipped by the loader; an empty line is said.
        assert_eq!(read(b""), Ok(None));
        assert!(read(b"\n").is_err());
        assert!(read(b"/x.so\r\n")
            .unwrap_err()
            .contains("control character"));
        assert!(read(b"/\xff.so\n").unwrap_err().contains("not UTF-8"));
        assert!(read(&vec![b'x'; 70 << 10]).unwrap_err().contains("64 KiB"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_fifo_or_a_device_is_refused_without_waiting() {
        let dir = std::env::temp_dir().join(format!("clmulti-icd-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = std::ffi::CString::new(dir.join("x.icd").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.icd")).unwrap();
        std::fs::write(dir.join("ok.icd"), "/usr/lib/ok.so\n").unwrap();
        std::fs::write(dir.join(".icd"), "/not/read.so\n").unwrap();
        let Vendors::Icds(icds, None) = read(&dir) else {
            panic!("not a folder of .icd files")
        };
        let names: Vec<&str> = icds.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["ok.icd", "x.icd", "zero.icd"]);
        assert!(icds[1].library.as_ref().unwrap_err().contains("a FIFO"));
        assert!(icds[2].library.as_ref().unwrap_err().contains("a device"));
        assert_eq!(icds[0].library, Ok(Some("/usr/lib/ok.so".into())));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
