//! Opening: every `open`, `openat` and `fopen` variant, through one place that
//! answers for the emulated paths and their virtual files.

use super::*;

/// # Safety
/// libc's `open`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let Some(real) = real_openat() else {
        enosys!(-1)
    };
    // SAFETY: the caller's contract.
    unsafe { open_at(libc::AT_FDCWD, path, flags, mode, real) }
}

/// # Safety
/// libc's `open64`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: the same function on 64-bit Linux.
    unsafe { open(path, flags, mode) }
}

/// # Safety
/// libc's `__open_2` (fortified `open`).
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { open(path, flags, 0) }
}

/// # Safety
/// libc's `__open64_2`.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { open(path, flags, 0) }
}

/// # Safety
/// libc's `openat`.
#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let Some(real) = real_openat() else {
        enosys!(-1)
    };
    // SAFETY: the caller's contract.
    unsafe { open_at(dirfd, path, flags, mode, real) }
}

/// # Safety
/// libc's `openat64`.
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { openat(dirfd, path, flags, mode) }
}

/// # Safety
/// libc's `__openat_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { openat(dirfd, path, flags, 0) }
}

/// # Safety
/// libc's `__openat64_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { openat(dirfd, path, flags, 0) }
}

/// # Safety
/// libc's `fopen` (its own open is internal, so the path is rewritten here).
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real = next!("fopen" as unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE);
    // SAFETY: the caller's contract.
    unsafe { fopen_with(path, mode, real) }
}

/// # Safety
/// libc's `fopen64`.
#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real = next!("fopen64" as unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE);
    // SAFETY: the caller's contract.
    unsafe { fopen_with(path, mode, real) }
}

/// # Safety
/// `path` and `mode` are NUL-terminated; `real` is libc's fopen.
unsafe fn fopen_with(
    path: *const c_char,
    mode: *const c_char,
    real: Option<unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE>,
) -> *mut FILE {
    let Some(real) = real else {
        enosys!(std::ptr::null_mut())
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
