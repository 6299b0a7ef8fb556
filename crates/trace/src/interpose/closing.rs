//! Every way a program's libc frees a descriptor number (`close`, and here the
//! calls that close inside libc: `fclose`, `closedir`, `pclose`, `freopen`,
//! `fcloseall`, `close_range`, `closefrom`; `dup2` and `dup3` onto an open one),
//! counted in one generation: while it stands still, a number names the file it named
//! at the last look, so a reader of `/proc/self/fd` need not ask again what each is.

use super::*;
use std::sync::atomic::AtomicU64;

/// Bumped after each call that may have freed a descriptor number; exported as
/// `clmulti_trace_fd_gen`.
#[cfg_attr(not(test), export_name = "clmulti_trace_fd_gen")]
pub static FD_GENERATION: AtomicU64 = AtomicU64::new(0);

/// After a call that may have freed a descriptor (after: a reader that looked in
/// between sees the number gone, or the generation moved).
#[inline]
pub(super) fn closed() {
    FD_GENERATION.fetch_add(1, Ordering::Release);
}

/// # Safety
/// libc's `fclose`.
#[no_mangle]
pub unsafe extern "C" fn fclose(file: *mut FILE) -> c_int {
    let r = call_next!("fclose" as unsafe extern "C" fn(*mut FILE) -> c_int, (file) else libc::EOF);
    closed();
    r
}

/// # Safety
/// libc's `fcloseall`.
#[no_mangle]
pub unsafe extern "C" fn fcloseall() -> c_int {
    let Some(real) = libc_next!("fcloseall" as unsafe extern "C" fn() -> c_int) else {
        return enosys(libc::EOF);
    };
    // SAFETY: no arguments.
    let r = unsafe { real() };
    closed();
    r
}

/// # Safety
/// libc's `pclose`.
#[no_mangle]
pub unsafe extern "C" fn pclose(file: *mut FILE) -> c_int {
    let r = call_next!("pclose" as unsafe extern "C" fn(*mut FILE) -> c_int, (file) else -1);
    closed();
    r
}

type Freopen = unsafe extern "C" fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE;

/// # Safety
/// `freopen`'s contract.
unsafe fn freopen_with(
    real: Option<Freopen>,
    path: *const c_char,
    mode: *const c_char,
    file: *mut FILE,
) -> *mut FILE {
    let Some(real) = real else {
        return enosys(std::ptr::null_mut());
    };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(path, mode, file) };
    closed();
    r
}

/// # Safety
/// libc's `freopen`.
#[no_mangle]
pub unsafe extern "C" fn freopen(
    path: *const c_char,
    mode: *const c_char,
    file: *mut FILE,
) -> *mut FILE {
    let real = libc_next!("freopen" as Freopen);
    // SAFETY: the caller's contract.
    unsafe { freopen_with(real, path, mode, file) }
}

/// # Safety
/// libc's `freopen64`.
#[no_mangle]
pub unsafe extern "C" fn freopen64(
    path: *const c_char,
    mode: *const c_char,
    file: *mut FILE,
) -> *mut FILE {
    let real = libc_next!("freopen64" as Freopen);
    // SAFETY: the caller's contract.
    unsafe { freopen_with(real, path, mode, file) }
}

/// # Safety
/// libc's `closedir`.
#[no_mangle]
pub unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    let r = call_next!("closedir" as unsafe extern "C" fn(*mut libc::DIR) -> c_int, (dir) else -1);
    closed();
    r
}

/// # Safety
/// libc's `close_range`.
#[no_mangle]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let r = call_next!("close_range" as unsafe extern "C" fn(c_uint, c_uint, c_int) -> c_int, (first, last, flags) else -1);
    closed();
    r
}

/// # Safety
/// libc's `closefrom`.
#[no_mangle]
pub unsafe extern "C" fn closefrom(low: c_int) {
    if let Some(real) = libc_next!("closefrom" as unsafe extern "C" fn(c_int)) {
        // SAFETY: passing the caller's argument on.
        unsafe { real(low) };
    }
    closed();
}
