//! What files are mapped into this process (`/proc/self/maps`), read a line at a time
//! through a buffer on the stack: a run asks after it has failed, when its address
//! space may be all taken and an allocation the size of the maps would abort it.

use std::io::Read;
use std::path::Path;

/// Calls `found` with the path of each mapping that has one (`/usr/lib/x.so`,
/// `/memfd:NAME`), in order, until it returns true; whether one did.
fn any_mapped_path(mut found: impl FnMut(&str) -> bool) -> bool {
    let Ok(mut maps) = std::fs::File::open("/proc/self/maps") else {
        return false;
    };
    let mut buf = [0u8; 16384];
    let mut len = 0;
    loop {
        let n = match maps.read(&mut buf[len..]) {
            Ok(n) => n,
            Err(_) => return false,
        };
        len += n;
        let mut start = 0;
        while let Some(end) = buf[start..len].iter().position(|&b| b == b'\n') {
            let line = std::str::from_utf8(&buf[start..start + end]).unwrap_or("");
            if line.split_whitespace().nth(5).is_some_and(&mut found) {
                return true;
            }
            start += end + 1;
        }
        // A line longer than the buffer is no path this asks after: dropped.
        if start == 0 && len == buf.len() {
            len = 0;
        } else {
            buf.copy_within(start..len, 0);
            len -= start;
        }
        if n == 0 {
            return false;
        }
    }
}

/// The path of the first library mapped into this process whose file name starts
/// with `prefix` (e.g. `libOpenCL.so`: which ICD loader the dynamic linker chose).
pub fn loaded_library(prefix: &str) -> Option<String> {
    let mut library = None;
    any_mapped_path(|path| {
        let matches = Path::new(path)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(prefix));
        if matches {
            library = Some(path.to_owned());
        }
        matches
    });
    library
}

/// Whether the file at `path` is mapped into this process (a library the dynamic
/// linker or the ICD loader opened). A library clmulti handed over by a sealed copy
/// (`clmulti trust`) is mapped from an anonymous file named by its path:
/// `/memfd:PATH (deleted)`.
pub fn is_mapped(path: &Path) -> bool {
    let Ok(wanted) = std::fs::canonicalize(path) else {
        return false;
    };
    any_mapped_path(|p| Path::new(p.strip_prefix("/memfd:").unwrap_or(p)) == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_is_mapped_and_named() {
        let libc = loaded_library("libc.so").expect("the C library is mapped");
        assert!(is_mapped(Path::new(&libc)), "{libc}");
        assert!(!is_mapped(Path::new("/nonexistent/lib.so")));
    }
}
