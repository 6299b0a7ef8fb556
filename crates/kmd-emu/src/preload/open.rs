//! Opening: every `open`, `openat` and `fopen` variant, through one place that
//! answers for the emulated paths and their virtual files.

use super::*;

clmulti_contract::libc_open_family!(open_at: open_at, fopen: fopen_with);

/// libc's `fopen` opens inside libc, where no preload sees it: the path is
/// rewritten here.
///
/// # Safety
/// `path` and `mode` are NUL-terminated; `real` is libc's fopen.
unsafe fn fopen_with(real: Option<Fopen>, path: *const c_char, mode: *const c_char) -> *mut FILE {
    let Some(real) = real else {
        return enosys(std::ptr::null_mut());
    };
    // SAFETY: the caller's contract.
    let p = unsafe { bytes(path) }.unwrap_or_default();
    let virtual_fd = if p == COUNTS_PATH.as_bytes() {
        Some(counts_file(libc::O_CLOEXEC))
    } else {
        fdinfo_target(p)
            .filter(|&fd| tracked(fd))
            .map(|fd| fdinfo_file(fd, libc::O_CLOEXEC))
    };
    if let Some(fd) = virtual_fd {
        if fd < 0 {
            return std::ptr::null_mut();
        }
        // SAFETY: a descriptor just made, and the caller's mode string.
        return unsafe { libc::fdopen(fd, mode) };
    }
    // SAFETY: the caller's contract.
    match unsafe { rewritten(path) } {
        // SAFETY: NUL-terminated strings.
        Some((inside, _)) => unsafe { real(inside.as_ptr(), mode) },
        // SAFETY: passing the caller's arguments on.
        None => unsafe { real(path, mode) },
    }
}
