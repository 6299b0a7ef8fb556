//! What other resource limits count: threads (`RLIMIT_NPROC`) and locked memory
//! (`RLIMIT_MEMLOCK`). Allocation is wrapped in full mode only, by
//! `libclmulti_trace_alloc.so` (crate `clmulti-trace-alloc`): a wrapper costs every
//! call of the hottest calls of any program.

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
    let Some(real) = libc_next!("pthread_create" as PthreadCreate) else {
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
    let r = call_next!("mlock" as unsafe extern "C" fn(*const c_void, size_t) -> c_int, (addr, len) else -1);
    fd_call(r, Kind::Mlock, "mlock", || format!("{addr:?}, {len}"))
}

/// # Safety
/// libc's `mlock2`.
#[no_mangle]
pub unsafe extern "C" fn mlock2(addr: *const c_void, len: size_t, flags: c_uint) -> c_int {
    let r = call_next!("mlock2" as unsafe extern "C" fn(*const c_void, size_t, c_uint) -> c_int, (addr, len, flags) else -1);
    fd_call(r, Kind::Mlock, "mlock2", || {
        format!("{addr:?}, {len}, {flags:#x}")
    })
}

/// # Safety
/// libc's `mlockall`.
#[no_mangle]
pub unsafe extern "C" fn mlockall(flags: c_int) -> c_int {
    let r = call_next!("mlockall" as unsafe extern "C" fn(c_int) -> c_int, (flags) else -1);
    fd_call(r, Kind::Mlock, "mlockall", || format!("{flags:#x}"))
}
