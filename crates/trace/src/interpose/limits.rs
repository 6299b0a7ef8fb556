//! What other resource limits count: threads (`RLIMIT_NPROC`), locked memory
//! (`RLIMIT_MEMLOCK`), and allocation, whose failures are recorded (not counted: the
//! hottest calls of any program).

use super::*;

/// # Safety
/// libc's `pthread_create`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    let Some(real) = next!("pthread_create" as PthreadCreate) else {
        return libc::ENOSYS;
    };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(thread, attr, start, arg) };
    count(Kind::PthreadCreate.key());
    if r != 0 {
        failed("pthread_create", String::new, r);
    }
    r
}

/// # Safety
/// libc's `mlock`.
#[no_mangle]
pub unsafe extern "C" fn mlock(addr: *const c_void, len: size_t) -> c_int {
    let Some(real) = next!("mlock" as unsafe extern "C" fn(*const c_void, size_t) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(addr, len) };
    fd_call(r, Kind::Mlock, "mlock", || format!("{addr:?}, {len}"))
}

/// # Safety
/// libc's `mlock2`.
#[no_mangle]
pub unsafe extern "C" fn mlock2(addr: *const c_void, len: size_t, flags: c_uint) -> c_int {
    let Some(real) =
        next!("mlock2" as unsafe extern "C" fn(*const c_void, size_t, c_uint) -> c_int)
    else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(addr, len, flags) };
    fd_call(r, Kind::Mlock, "mlock2", || {
        format!("{addr:?}, {len}, {flags:#x}")
    })
}

/// # Safety
/// libc's `mlockall`.
#[no_mangle]
pub unsafe extern "C" fn mlockall(flags: c_int) -> c_int {
    let Some(real) = next!("mlockall" as unsafe extern "C" fn(c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's argument on.
    let r = unsafe { real(flags) };
    fd_call(r, Kind::Mlock, "mlockall", || format!("{flags:#x}"))
}

// Allocation: glibc's own entry points, so that no lookup (which may allocate)
// stands between a program and its memory.
extern "C" {
    fn __libc_malloc(size: size_t) -> *mut c_void;
    fn __libc_calloc(n: size_t, size: size_t) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: size_t) -> *mut c_void;
    fn __libc_memalign(align: size_t, size: size_t) -> *mut c_void;
}

fn allocation_failed(call: &'static str, args: impl FnOnce() -> String) {
    failed(call, args, libc::ENOMEM);
}

/// # Safety
/// libc's `malloc`.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: size_t) -> *mut c_void {
    // SAFETY: glibc's malloc.
    let p = unsafe { __libc_malloc(size) };
    if p.is_null() && size != 0 {
        allocation_failed("malloc", || size.to_string());
    }
    p
}

/// # Safety
/// libc's `calloc`.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, size: size_t) -> *mut c_void {
    // SAFETY: glibc's calloc.
    let p = unsafe { __libc_calloc(n, size) };
    if p.is_null() && n != 0 && size != 0 {
        allocation_failed("calloc", || format!("{n}, {size}"));
    }
    p
}

/// # Safety
/// libc's `realloc`.
#[no_mangle]
pub unsafe extern "C" fn realloc(old: *mut c_void, size: size_t) -> *mut c_void {
    // SAFETY: glibc's realloc.
    let p = unsafe { __libc_realloc(old, size) };
    if p.is_null() && size != 0 {
        allocation_failed("realloc", || format!("{old:?}, {size}"));
    }
    p
}

/// # Safety
/// libc's `memalign`.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: size_t, size: size_t) -> *mut c_void {
    // SAFETY: glibc's memalign.
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() && size != 0 {
        allocation_failed("memalign", || format!("{align}, {size}"));
    }
    p
}

/// # Safety
/// libc's `aligned_alloc`.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void {
    // SAFETY: glibc's memalign (aligned_alloc's own checks are ISO C's: the size a
    // multiple of the alignment, which glibc does not enforce either).
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() && size != 0 {
        allocation_failed("aligned_alloc", || format!("{align}, {size}"));
    }
    p
}

/// # Safety
/// libc's `posix_memalign`.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
) -> c_int {
    let word = std::mem::size_of::<*mut c_void>();
    if !align.is_power_of_two() || align % word != 0 {
        return libc::EINVAL;
    }
    // SAFETY: glibc's memalign with a valid alignment.
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() && size != 0 {
        allocation_failed("posix_memalign", || format!("{align}, {size}"));
        return libc::ENOMEM;
    }
    // SAFETY: the caller's out-pointer.
    unsafe { *out = p };
    0
}
