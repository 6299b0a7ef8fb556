//! The libc entry points the tracer wraps when preloaded: each calls the next
//! definition (`dlsym(RTLD_NEXT)`: libc's, or another preloaded library's, such as
//! clmulti's emulated i915 driver), counts the call, and records it when it fails.
//! Allocation functions are not counted (they are the hottest calls of any program);
//! their failures are recorded.
//!
//! Variadic entry points (`open`, `openat`, `ioctl`, `fcntl`, `mremap`) take their
//! optional argument as a plain parameter: on x86_64 and aarch64 Linux the caller
//! passes it in the same register either way.

use crate::names::{self, Driver, Kind, Region};
use crate::record::{failed, COUNTS};
use libc::{c_char, c_int, c_uint, c_ulong, c_void, off_t, size_t, FILE};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Looks up the next definition of a libc function once.
macro_rules! next {
    ($name:literal as $ty:ty) => {{
        static ADDRESS: AtomicUsize = AtomicUsize::new(0);
        let mut address = ADDRESS.load(Ordering::Relaxed);
        if address == 0 {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
            address = unsafe { libc::dlsym(libc::RTLD_NEXT, concat!($name, "\0").as_ptr().cast()) }
                as usize;
            ADDRESS.store(address, Ordering::Relaxed);
        }
        // SAFETY: the symbol is libc's function of this signature (or null: a libc
        // without it, which the caller turns into ENOSYS).
        (address != 0).then(|| unsafe { std::mem::transmute::<usize, $ty>(address) })
    }};
}

fn errno() -> c_int {
    // SAFETY: the thread's errno location.
    unsafe { *libc::__errno_location() }
}

fn enosys<T>(value: T) -> T {
    // SAFETY: the thread's errno location.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    value
}

/// Counts a call returning a descriptor (or 0) and records it when it failed.
fn fd_call(result: c_int, kind: Kind, call: &'static str, args: impl FnOnce() -> String) -> c_int {
    let e = errno();
    COUNTS.add(kind.key());
    if result < 0 {
        failed(call, args, e);
    }
    result
}

type OpenAt = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int;

/// # Safety
/// libc's `openat`'s contract.
unsafe fn open_at(
    call: &'static str,
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let Some(real) = next!("openat" as OpenAt) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let fd = unsafe { real(dirfd, path, flags, mode) };
    fd_call(fd, Kind::Open, call, || {
        // SAFETY: the caller's path, NUL-terminated.
        let path = unsafe { names::c_string(path) };
        format!(
            "{}, {path}, {}",
            names::dirfd(dirfd),
            names::open_flags(flags)
        )
    })
}

/// # Safety
/// libc's `open`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: the same call through openat.
    unsafe { open_at("openat", libc::AT_FDCWD, path, flags, mode) }
}

/// # Safety
/// libc's `open64`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: the same call.
    unsafe { open(path, flags, mode) }
}

/// # Safety
/// libc's `__open_2`.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the same call.
    unsafe { open(path, flags, 0) }
}

/// # Safety
/// libc's `__open64_2`.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the same call.
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
    // SAFETY: the caller's contract.
    unsafe { open_at("openat", dirfd, path, flags, mode) }
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
    unsafe { open_at("openat", dirfd, path, flags, mode) }
}

/// # Safety
/// libc's `__openat_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { open_at("openat", dirfd, path, flags, 0) }
}

/// # Safety
/// libc's `__openat64_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { open_at("openat", dirfd, path, flags, 0) }
}

type Fopen = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE;

/// # Safety
/// `fopen`'s contract.
unsafe fn fopen_with(real: Option<Fopen>, path: *const c_char, mode: *const c_char) -> *mut FILE {
    let Some(real) = real else {
        return enosys(std::ptr::null_mut());
    };
    // SAFETY: passing the caller's arguments on.
    let file = unsafe { real(path, mode) };
    let e = errno();
    COUNTS.add(Kind::Open.key());
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

/// # Safety
/// libc's `fopen`.
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real = next!("fopen" as Fopen);
    // SAFETY: the caller's contract.
    unsafe { fopen_with(real, path, mode) }
}

/// # Safety
/// libc's `fopen64`.
#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real = next!("fopen64" as Fopen);
    // SAFETY: the caller's contract.
    unsafe { fopen_with(real, path, mode) }
}

/// Each descriptor's DRM driver, once asked (`0`: not asked; else the code + 1).
const DRIVER_FDS: usize = 1 << 16;
static DRIVERS: [AtomicU8; DRIVER_FDS] = [const { AtomicU8::new(0) }; DRIVER_FDS];

type Ioctl = unsafe extern "C" fn(c_int, u64, *mut c_void) -> c_int;

/// The DRM driver behind `fd`, asked once with `DRM_IOCTL_VERSION`.
fn driver_of(fd: c_int, real: Ioctl) -> Driver {
    let slot = usize::try_from(fd).ok().filter(|&f| f < DRIVER_FDS);
    if let Some(code) = slot
        .map(|s| DRIVERS[s].load(Ordering::Relaxed))
        .filter(|&c| c != 0)
    {
        return match code - 1 {
            1 => Driver::I915,
            2 => Driver::Xe,
            3 => Driver::Amdgpu,
            4 => Driver::Other,
            _ => Driver::NotDrm,
        };
    }
    let mut name = [0u8; 16];
    let mut version = clmulti_drm_uapi::DrmVersion {
        version_major: 0,
        version_minor: 0,
        version_patchlevel: 0,
        name_len: name.len(),
        name: name.as_mut_ptr(),
        date_len: 0,
        date: std::ptr::null_mut(),
        desc_len: 0,
        desc: std::ptr::null_mut(),
    };
    let saved = errno();
    // SAFETY: DRM_IOCTL_VERSION with a valid structure and a buffer of its length.
    let ok = unsafe {
        real(
            fd,
            clmulti_drm_uapi::DRM_IOCTL_VERSION,
            (&mut version as *mut clmulti_drm_uapi::DrmVersion).cast(),
        )
    } == 0;
    // SAFETY: restoring the caller's errno.
    unsafe { *libc::__errno_location() = saved };
    let driver = if ok {
        Driver::from_name(&name[..version.name_len.min(name.len())])
    } else {
        Driver::NotDrm
    };
    if let Some(s) = slot {
        DRIVERS[s].store(driver as u8 + 1, Ordering::Relaxed);
    }
    driver
}

/// The first memory region an i915 `GEM_CREATE_EXT` asks for.
///
/// # Safety
/// `arg` is the request's structure, its extension chain valid.
unsafe fn create_region(arg: *mut c_void) -> Region {
    use clmulti_drm_uapi::{
        CreateExtMemoryRegions, GemCreateExt, MemoryClassInstance, UserExtension,
    };
    if arg.is_null() {
        return Region::Unknown;
    }
    // SAFETY: the caller's contract.
    let mut next = unsafe { (*arg.cast::<GemCreateExt>()).extensions };
    for _ in 0..8 {
        if next == 0 {
            break;
        }
        // SAFETY: the caller's contract.
        let base = unsafe { *(next as *const UserExtension) };
        if base.name == clmulti_drm_uapi::I915_GEM_CREATE_EXT_MEMORY_REGIONS {
            // SAFETY: the extension's name says what it is.
            let ext = unsafe { *(next as *const CreateExtMemoryRegions) };
            if ext.num_regions == 0 || ext.regions == 0 {
                return Region::Unknown;
            }
            // SAFETY: `regions` holds `num_regions` entries.
            let first = unsafe { *(ext.regions as *const MemoryClassInstance) };
            return match first.memory_class {
                clmulti_drm_uapi::I915_MEMORY_CLASS_SYSTEM => Region::System,
                clmulti_drm_uapi::I915_MEMORY_CLASS_DEVICE => Region::Local,
                _ => Region::Unknown,
            };
        }
        next = base.next_extension;
    }
    // No region named: i915 puts it in system memory.
    Region::System
}

/// # Safety
/// libc's `ioctl`.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: u64, arg: *mut c_void) -> c_int {
    let Some(real) = next!("ioctl" as Ioctl) else {
        return enosys(-1);
    };
    let request64 = request;
    let drm = (request64 >> 8) & 0xff == u64::from(b'd');
    let driver = if drm {
        driver_of(fd, real)
    } else {
        Driver::NotDrm
    };
    let region =
        if driver == Driver::I915 && request64 == clmulti_drm_uapi::DRM_IOCTL_I915_GEM_CREATE_EXT {
            // SAFETY: the caller passed the request's structure.
            unsafe { create_region(arg) }
        } else {
            Region::Unknown
        };
    COUNTS.add(names::ioctl_key(request64, driver, region));
    // SAFETY: passing the caller's arguments on.
    let result = unsafe { real(fd, request, arg) };
    if result < 0 {
        let e = errno();
        failed(
            "ioctl",
            || format!("{fd}, {}", names::request_name(request64, driver)),
            e,
        );
    }
    result
}

/// # Safety
/// libc's `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if let Some(s) = usize::try_from(fd).ok().filter(|&f| f < DRIVER_FDS) {
        DRIVERS[s].store(0, Ordering::Relaxed);
    }
    let Some(real) = next!("close" as unsafe extern "C" fn(c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's argument on.
    unsafe { real(fd) }
}

type Mmap = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;

/// # Safety
/// `mmap`'s contract.
unsafe fn mmap_with(
    real: Option<Mmap>,
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let Some(real) = real else {
        return enosys(libc::MAP_FAILED);
    };
    // SAFETY: passing the caller's arguments on.
    let p = unsafe { real(addr, len, prot, flags, fd, off) };
    let e = errno();
    COUNTS.add(Kind::Mmap.key());
    if p == libc::MAP_FAILED {
        failed(
            "mmap",
            || {
                format!(
                    "{addr:?}, {len}, {}, {fd}, {off:#x}",
                    names::mmap_words(prot, flags)
                )
            },
            e,
        );
    }
    p
}

/// # Safety
/// libc's `mmap`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let real = next!("mmap" as Mmap);
    // SAFETY: the caller's contract.
    unsafe { mmap_with(real, addr, len, prot, flags, fd, off) }
}

/// # Safety
/// libc's `mmap64`.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let real = next!("mmap64" as Mmap);
    // SAFETY: the caller's contract.
    unsafe { mmap_with(real, addr, len, prot, flags, fd, off) }
}

/// # Safety
/// libc's `munmap`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let Some(real) = next!("munmap" as unsafe extern "C" fn(*mut c_void, size_t) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(addr, len) };
    fd_call(r, Kind::Munmap, "munmap", || format!("{addr:?}, {len}"))
}

/// # Safety
/// libc's `mremap` (its fifth argument, when there is one, in the same register).
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    let Some(real) = next!(
        "mremap"
            as unsafe extern "C" fn(*mut c_void, size_t, size_t, c_int, *mut c_void) -> *mut c_void
    ) else {
        return enosys(libc::MAP_FAILED);
    };
    // SAFETY: passing the caller's arguments on.
    let p = unsafe { real(old, old_len, new_len, flags, new_addr) };
    let e = errno();
    COUNTS.add(Kind::Mremap.key());
    if p == libc::MAP_FAILED {
        failed(
            "mremap",
            || format!("{old:?}, {old_len}, {new_len}, {flags:#x}"),
            e,
        );
    }
    p
}

/// # Safety
/// libc's `mprotect`.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    let Some(real) = next!("mprotect" as unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int)
    else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(addr, len, prot) };
    fd_call(r, Kind::Mprotect, "mprotect", || {
        format!("{addr:?}, {len}, {prot:#x}")
    })
}

/// # Safety
/// libc's `memfd_create`.
#[no_mangle]
pub unsafe extern "C" fn memfd_create(name: *const c_char, flags: c_uint) -> c_int {
    let Some(real) = next!("memfd_create" as unsafe extern "C" fn(*const c_char, c_uint) -> c_int)
    else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let fd = unsafe { real(name, flags) };
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
    let Some(real) = next!("pipe" as unsafe extern "C" fn(*mut c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's argument on.
    let r = unsafe { real(fds) };
    fd_call(r, Kind::Pipe, "pipe", String::new)
}

/// # Safety
/// libc's `pipe2`.
#[no_mangle]
pub unsafe extern "C" fn pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    let Some(real) = next!("pipe2" as unsafe extern "C" fn(*mut c_int, c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let r = unsafe { real(fds, flags) };
    fd_call(r, Kind::Pipe, "pipe2", || names::open_flags(flags))
}

/// # Safety
/// libc's `socket`.
#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    let Some(real) = next!("socket" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let fd = unsafe { real(domain, ty, protocol) };
    fd_call(fd, Kind::Socket, "socket", || {
        format!("{domain}, {ty:#x}, {protocol}")
    })
}

/// # Safety
/// libc's `dup`.
#[no_mangle]
pub unsafe extern "C" fn dup(old: c_int) -> c_int {
    let Some(real) = next!("dup" as unsafe extern "C" fn(c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's argument on.
    let fd = unsafe { real(old) };
    fd_call(fd, Kind::Dup, "dup", || old.to_string())
}

/// # Safety
/// libc's `dup2`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let Some(real) = next!("dup2" as unsafe extern "C" fn(c_int, c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let fd = unsafe { real(old, new) };
    fd_call(fd, Kind::Dup, "dup2", || format!("{old}, {new}"))
}

/// # Safety
/// libc's `dup3`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let Some(real) = next!("dup3" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let fd = unsafe { real(old, new, flags) };
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
    let real = next!("fcntl" as Fcntl);
    // SAFETY: the caller's contract.
    unsafe { fcntl_with(real, fd, cmd, arg) }
}

/// # Safety
/// libc's `fcntl64`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let real = next!("fcntl64" as Fcntl);
    // SAFETY: the caller's contract.
    unsafe { fcntl_with(real, fd, cmd, arg) }
}

/// # Safety
/// libc's `eventfd`.
#[no_mangle]
pub unsafe extern "C" fn eventfd(initval: c_uint, flags: c_int) -> c_int {
    let Some(real) = next!("eventfd" as unsafe extern "C" fn(c_uint, c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let fd = unsafe { real(initval, flags) };
    fd_call(fd, Kind::Eventfd, "eventfd", || {
        format!("{initval}, {flags:#x}")
    })
}

/// # Safety
/// libc's `epoll_create1`.
#[no_mangle]
pub unsafe extern "C" fn epoll_create1(flags: c_int) -> c_int {
    let Some(real) = next!("epoll_create1" as unsafe extern "C" fn(c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's argument on.
    let fd = unsafe { real(flags) };
    fd_call(fd, Kind::Epoll, "epoll_create1", || format!("{flags:#x}"))
}

/// # Safety
/// libc's `timerfd_create`.
#[no_mangle]
pub unsafe extern "C" fn timerfd_create(clock: c_int, flags: c_int) -> c_int {
    let Some(real) = next!("timerfd_create" as unsafe extern "C" fn(c_int, c_int) -> c_int) else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let fd = unsafe { real(clock, flags) };
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
    COUNTS.add(Kind::PthreadCreate.key());
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
