//! The libc entry points the tracer wraps when preloaded: each calls the next
//! definition (`dlsym(RTLD_NEXT)`: libc's, or another preloaded library's, such as
//! clmulti's emulated i915 driver), counts the call, and records it when it fails.
//! Allocation functions are not counted (they are the hottest calls of any program);
//! their failures are recorded. A thread marked as the program's own
//! ([`crate::count::set_own`]) is neither counted nor recorded.
//!
//! Variadic entry points (`open`, `openat`, `ioctl`, `fcntl`, `mremap`) take their
//! optional argument as a plain parameter: on x86_64 and aarch64 Linux the caller
//! passes it in the same register either way.

use crate::count::count;
use crate::names::{self, Driver, Kind, Region};
use crate::record::failed;
use clmulti_contract::interpose::{enosys, errno, Fopen, Mmap, MmapArgs, OpenAt};
use clmulti_contract::{call_next, libc_next};
use libc::{c_char, c_int, c_uint, c_ulong, c_void, size_t, FILE};
use std::sync::atomic::{AtomicU8, Ordering};

/// Counts a call returning a descriptor (or 0) and records it when it failed.
fn fd_call(result: c_int, kind: Kind, call: &'static str, args: impl FnOnce() -> String) -> c_int {
    let e = errno();
    count(kind.key());
    if result < 0 {
        failed(call, args, e);
    }
    result
}

/// # Safety
/// libc's `openat`'s contract.
unsafe fn open_at(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let fd = call_next!("openat" as OpenAt, (dirfd, path, flags, mode) else -1);
    fd_call(fd, Kind::Open, "openat", || {
        // SAFETY: the caller's path, NUL-terminated.
        let path = unsafe { names::c_string(path) };
        format!(
            "{}, {path}, {}",
            names::dirfd(dirfd),
            names::open_flags(flags)
        )
    })
}

clmulti_contract::libc_open_family!(open_at: open_at, fopen: fopen_with);

/// # Safety
/// `fopen`'s contract.
unsafe fn fopen_with(real: Option<Fopen>, path: *const c_char, mode: *const c_char) -> *mut FILE {
    let Some(real) = real else {
        return enosys(std::ptr::null_mut());
    };
    // SAFETY: passing the caller's arguments on.
    let file = unsafe { real(path, mode) };
    let e = errno();
    count(Kind::Open.key());
    if file.is_null() {
        // SAFETY: the caller's strings, NUL-terminated.
        failed(
            "fopen",
            || unsafe { format!("{}, {}", names::c_string(path), names::c_string(mode)) },
            e,
        );
    }
    file
}

/// The descriptors whose DRM driver is remembered ([`drm::DRIVERS`]).
const DRIVER_FDS: usize = 1 << 16;
/// # Safety
/// libc's `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if let Some(s) = usize::try_from(fd).ok().filter(|&f| f < DRIVER_FDS) {
        DRIVERS[s].store(0, Ordering::Relaxed);
    }
    let r = call_next!("close" as unsafe extern "C" fn(c_int) -> c_int, (fd) else -1);
    closing::closed();
    r
}

/// # Safety
/// libc's `memfd_create`.
#[no_mangle]
pub unsafe extern "C" fn memfd_create(name: *const c_char, flags: c_uint) -> c_int {
    let fd = call_next!("memfd_create" as unsafe extern "C" fn(*const c_char, c_uint) -> c_int, (name, flags) else -1);
    fd_call(fd, Kind::MemfdCreate, "memfd_create", || {
        // SAFETY: the caller's name, NUL-terminated.
        let name = unsafe { names::c_string(name) };
        format!("{name}, {flags:#x}")
    })
}

/// # Safety
/// libc's `pipe`.
#[no_mangle]
pub unsafe extern "C" fn pipe(fds: *mut c_int) -> c_int {
    let r = call_next!("pipe" as unsafe extern "C" fn(*mut c_int) -> c_int, (fds) else -1);
    fd_call(r, Kind::Pipe, "pipe", String::new)
}

/// # Safety
/// libc's `pipe2`.
#[no_mangle]
pub unsafe extern "C" fn pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    let r = call_next!("pipe2" as unsafe extern "C" fn(*mut c_int, c_int) -> c_int, (fds, flags) else -1);
    fd_call(r, Kind::Pipe, "pipe2", || names::open_flags(flags))
}

/// # Safety
/// libc's `socket`.
#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    let fd = call_next!("socket" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int, (domain, ty, protocol) else -1);
    fd_call(fd, Kind::Socket, "socket", || {
        format!("{domain}, {ty:#x}, {protocol}")
    })
}

/// # Safety
/// libc's `dup`.
#[no_mangle]
pub unsafe extern "C" fn dup(old: c_int) -> c_int {
    let fd = call_next!("dup" as unsafe extern "C" fn(c_int) -> c_int, (old) else -1);
    fd_call(fd, Kind::Dup, "dup", || old.to_string())
}

/// # Safety
/// libc's `dup2`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let fd = call_next!("dup2" as unsafe extern "C" fn(c_int, c_int) -> c_int, (old, new) else -1);
    closing::closed();
    fd_call(fd, Kind::Dup, "dup2", || format!("{old}, {new}"))
}

/// # Safety
/// libc's `dup3`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let fd = call_next!("dup3" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int, (old, new, flags) else -1);
    closing::closed();
    fd_call(fd, Kind::Dup, "dup3", || {
        format!("{old}, {new}, {}", names::open_flags(flags))
    })
}

type Fcntl = unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int;

/// # Safety
/// `fcntl`'s contract.
unsafe fn fcntl_with(real: Option<Fcntl>, fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let Some(real) = real else { return enosys(-1) };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(fd, cmd, arg) };
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        let name = if cmd == libc::F_DUPFD {
            "F_DUPFD"
        } else {
            "F_DUPFD_CLOEXEC"
        };
        return fd_call(r, Kind::Dup, "fcntl", || format!("{fd}, {name}, {arg}"));
    }
    r
}

/// # Safety
/// libc's `fcntl`.
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let real = libc_next!("fcntl" as Fcntl);
    // SAFETY: the caller's contract.
    unsafe { fcntl_with(real, fd, cmd, arg) }
}

/// # Safety
/// libc's `fcntl64`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let real = libc_next!("fcntl64" as Fcntl);
    // SAFETY: the caller's contract.
    unsafe { fcntl_with(real, fd, cmd, arg) }
}

/// # Safety
/// libc's `eventfd`.
#[no_mangle]
pub unsafe extern "C" fn eventfd(initval: c_uint, flags: c_int) -> c_int {
    let fd = call_next!("eventfd" as unsafe extern "C" fn(c_uint, c_int) -> c_int, (initval, flags) else -1);
    fd_call(fd, Kind::Eventfd, "eventfd", || {
        format!("{initval}, {flags:#x}")
    })
}

/// # Safety
/// libc's `epoll_create1`.
#[no_mangle]
pub unsafe extern "C" fn epoll_create1(flags: c_int) -> c_int {
    let fd = call_next!("epoll_create1" as unsafe extern "C" fn(c_int) -> c_int, (flags) else -1);
    fd_call(fd, Kind::Epoll, "epoll_create1", || format!("{flags:#x}"))
}

/// # Safety
/// libc's `timerfd_create`.
#[no_mangle]
pub unsafe extern "C" fn timerfd_create(clock: c_int, flags: c_int) -> c_int {
    let fd = call_next!("timerfd_create" as unsafe extern "C" fn(c_int, c_int) -> c_int, (clock, flags) else -1);
    fd_call(fd, Kind::Timerfd, "timerfd_create", || {
        format!("{clock}, {flags:#x}")
    })
}

type PthreadCreate = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    extern "C" fn(*mut c_void) -> *mut c_void,
    *mut c_void,
) -> c_int;

// After the macros above, which these use.
mod closing;
mod drm;
mod limits;
mod memory;

use drm::DRIVERS;
