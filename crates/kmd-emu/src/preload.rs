//! The libc entry points the emulation takes over when preloaded (`LD_PRELOAD`). Each
//! answers for the emulated files and descriptors and calls the next definition
//! (`dlsym(RTLD_NEXT)`: libc's) for everything else, so a process that never touches
//! `/dev/dri` runs as before.
//!
//! What it sees: calls through the dynamic symbol table (what NEO, ocl-icd, libstdc++
//! and Rust's std use). What it cannot see: raw `syscall()`, and libc's calls inside
//! itself (`fopen` opening its file: hence `fopen` is taken over too).
//!
//! Variadic entry points (`open`, `openat`, `ioctl`, `fcntl`) are defined with their
//! optional argument as a plain third (fourth) parameter: on x86_64 and aarch64 Linux
//! the caller passes it in the same register either way.

use crate::config::{self, Config};
use crate::ioctl::{dmabuf_ioctl, render_ioctl, Host};
use crate::model::{Driver, Errno};
use crate::vfs::{self, Node, Tree, COUNTS_PATH};
use libc::{c_char, c_int, c_uint, c_ulong, c_void, off_t, size_t, ssize_t, FILE};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Looks up the next definition of a libc function once.
macro_rules! next {
    (@ident $name:ident as $ty:ty) => {
        next!(@symbol concat!(stringify!($name), "\0"), $ty)
    };
    ($name:literal as $ty:ty) => {
        next!(@symbol concat!($name, "\0"), $ty)
    };
    (@symbol $symbol:expr, $ty:ty) => {{
        static ADDRESS: AtomicUsize = AtomicUsize::new(0);
        let mut address = ADDRESS.load(Ordering::Relaxed);
        if address == 0 {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
            address = unsafe { libc::dlsym(libc::RTLD_NEXT, $symbol.as_ptr().cast()) } as usize;
            ADDRESS.store(address, Ordering::Relaxed);
        }
        if address == 0 {
            // libc without this symbol: the caller gets ENOSYS instead of a crash.
            None
        } else {
            // SAFETY: the symbol is libc's function of this signature.
            Some(unsafe { std::mem::transmute::<usize, $ty>(address) })
        }
    }};
}

/// Descriptors below this are tracked in a bitmap (a lock-free test on every call).
const BITMAP_FDS: usize = 1 << 16;
static TRACKED: [AtomicU64; BITMAP_FDS / 64] = [const { AtomicU64::new(0) }; BITMAP_FDS / 64];
static TRACKED_HIGH: AtomicBool = AtomicBool::new(false);

struct Emulation {
    driver: Mutex<Driver>,
    tree: Tree,
    /// The folder this process made (and removes at exit), when it made it.
    owned_root: Option<std::path::PathBuf>,
    report: Option<CString>,
}

static EMULATION: OnceLock<Option<Emulation>> = OnceLock::new();

fn emulation() -> Option<&'static Emulation> {
    EMULATION.get_or_init(start).as_ref()
}

fn start() -> Option<Emulation> {
    let config = Config::from_env();
    let (root, owned) = match std::env::var_os(config::env::ROOT).filter(|v| !v.is_empty()) {
        Some(root) => (std::path::PathBuf::from(root), false),
        None => {
            let root = std::env::temp_dir().join(format!("clmulti-kmd-emu-{}", std::process::id()));
            (root, true)
        }
    };
    let tree = match Tree::build(&root, &config) {
        Ok(tree) => tree,
        Err(e) => {
            eprintln!(
                "clmulti-kmd-emu: cannot build the device tree in {}: {e}; no devices emulated",
                root.display()
            );
            return None;
        }
    };
    let report = std::env::var_os(config::env::REPORT)
        .filter(|v| !v.is_empty())
        .and_then(|v| CString::new(v.into_encoded_bytes()).ok());
    // SAFETY: registering a plain extern "C" function.
    unsafe { libc::atexit(at_exit) };
    Some(Emulation {
        driver: Mutex::new(Driver::new(config)),
        tree,
        owned_root: owned.then_some(root),
        report,
    })
}

extern "C" fn at_exit() {
    let Some(Some(emu)) = EMULATION.get() else {
        return;
    };
    if let Some(path) = &emu.report {
        let (text, spare) = {
            let driver = emu.lock();
            (
                vfs::counts_text(driver.counts(), &driver.config),
                driver.any_dmabuf(),
            )
        };
        let path: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(path.as_bytes());
        if let Err(e) = std::fs::write(path, &text) {
            // A process that ran out of descriptors (the seed's end) has none left to
            // write with: the counts are taken, so one of its dma-bufs can go.
            match (e.raw_os_error(), spare) {
                (Some(libc::EMFILE), Some(fd)) => {
                    // SAFETY: closing a descriptor of the exiting process (libc's close).
                    unsafe { libc::syscall(libc::SYS_close, fd) };
                    let _ = std::fs::write(path, &text);
                }
                _ => eprintln!(
                    "clmulti-kmd-emu: cannot write the counts to {}: {e}",
                    path.to_string_lossy()
                ),
            }
        }
    }
    if let Some(root) = &emu.owned_root {
        let _ = std::fs::remove_dir_all(root);
    }
}

impl Emulation {
    fn lock(&self) -> MutexGuard<'_, Driver> {
        self.driver.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn track(fd: c_int) {
    match usize::try_from(fd) {
        Ok(fd) if fd < BITMAP_FDS => {
            TRACKED[fd / 64].fetch_or(1 << (fd % 64), Ordering::Relaxed);
        }
        Ok(_) => TRACKED_HIGH.store(true, Ordering::Relaxed),
        Err(_) => {}
    }
}

fn untrack(fd: c_int) {
    if let Ok(fd) = usize::try_from(fd) {
        if fd < BITMAP_FDS {
            TRACKED[fd / 64].fetch_and(!(1 << (fd % 64)), Ordering::Relaxed);
        }
    }
}

/// Whether `fd` is an emulated render node or dma-buf (lock-free below 65536).
fn tracked(fd: c_int) -> bool {
    match usize::try_from(fd) {
        Ok(f) if f < BITMAP_FDS => TRACKED[f / 64].load(Ordering::Relaxed) & (1 << (f % 64)) != 0,
        Ok(_) if TRACKED_HIGH.load(Ordering::Relaxed) => emulation().is_some_and(|emu| {
            let driver = emu.lock();
            driver.device_of(fd).is_some() || driver.is_dmabuf(fd)
        }),
        _ => false,
    }
}

fn set_errno(errno: Errno) {
    // SAFETY: the thread's errno location.
    unsafe { *libc::__errno_location() = errno };
}

fn errno() -> Errno {
    // SAFETY: the thread's errno location.
    unsafe { *libc::__errno_location() }
}

/// # Safety
/// `path` is null or NUL-terminated.
unsafe fn bytes<'a>(path: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract.
    (!path.is_null()).then(|| unsafe { CStr::from_ptr(path) }.to_bytes())
}

/// The path inside the tree when `path` is an emulated one.
///
/// # Safety
/// `path` is null or NUL-terminated.
unsafe fn rewritten(path: *const c_char) -> Option<(CString, Node)> {
    // SAFETY: the caller's contract.
    let p = unsafe { bytes(path) }?;
    if !Tree::may_rewrite(p) {
        return None;
    }
    let emu = emulation()?;
    let inside = emu.tree.rewrite(p)?;
    let node = emu.tree.node(&inside);
    Some((CString::new(inside).ok()?, node))
}

struct NeoHost;

impl Host for NeoHost {
    fn new_dmabuf_fd(&self, cloexec: bool) -> Result<i32, Errno> {
        let emu = emulation().ok_or(libc::ENODEV)?;
        let path =
            CString::new([emu.tree.root(), b"/dmabuf:"].concat()).map_err(|_| libc::EINVAL)?;
        let flags = libc::O_RDWR | libc::O_CREAT | if cloexec { libc::O_CLOEXEC } else { 0 };
        let open = next!("open" as unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int)
            .ok_or(libc::ENOSYS)?;
        // SAFETY: a NUL-terminated path.
        let fd = unsafe { open(path.as_ptr(), flags, 0o600) };
        if fd < 0 {
            return Err(errno());
        }
        track(fd);
        Ok(fd)
    }

    fn now_ns(&self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is writable.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

// ---------------------------------------------------------------------------------
// Live files the emulation writes itself: fdinfo of its descriptors and its counts.

/// A descriptor reading `text`, made as an `open` of it would be.
fn virtual_file(text: &str, flags: c_int) -> c_int {
    let cloexec = if flags & libc::O_CLOEXEC != 0 {
        libc::MFD_CLOEXEC
    } else {
        0
    };
    // SAFETY: a NUL-terminated name.
    let fd = unsafe { libc::memfd_create(c"clmulti-kmd-emu".as_ptr(), cloexec) };
    if fd < 0 {
        return fd;
    }
    let mut written = 0;
    while written < text.len() {
        // SAFETY: `text[written..]` is readable.
        let n = unsafe { libc::write(fd, text.as_ptr().add(written).cast(), text.len() - written) };
        if n <= 0 {
            break;
        }
        written += n as usize;
    }
    // SAFETY: rewinding a descriptor just made.
    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    fd
}

/// The descriptor `/proc/self/fdinfo/N` or `/proc/<this pid>/fdinfo/N` names.
fn fdinfo_target(path: &[u8]) -> Option<c_int> {
    let rest = path.strip_prefix(b"/proc/")?;
    let (who, rest) = rest.split_at(rest.iter().position(|&b| b == b'/')?);
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() }.to_string();
    if who != b"self" && who != pid.as_bytes() && who != b"thread-self" {
        return None;
    }
    let number = rest.strip_prefix(b"/fdinfo/")?;
    std::str::from_utf8(number).ok()?.parse().ok()
}

/// Whether `dirfd` is this process's `/proc/<pid>/fdinfo` folder.
fn is_own_fdinfo_dir(dirfd: c_int) -> bool {
    let link = format!("/proc/self/fd/{dirfd}\0");
    let mut target = [0u8; 64];
    let Some(readlink) =
        next!("readlink" as unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ssize_t)
    else {
        return false;
    };
    // SAFETY: a NUL-terminated path and a buffer of its stated length.
    let n = unsafe {
        readlink(
            link.as_ptr().cast(),
            target.as_mut_ptr().cast(),
            target.len(),
        )
    };
    if n <= 0 {
        return false;
    }
    let mut path = target[..n as usize].to_vec();
    path.extend_from_slice(b"/0");
    fdinfo_target(&path).is_some()
}

/// The fdinfo text of an emulated descriptor: the kernel's own first lines (pos,
/// flags, mnt_id, ino), then what i915 or the dma-buf core adds.
fn fdinfo_file(fd: c_int, flags: c_int) -> c_int {
    let Some(emu) = emulation() else {
        set_errno(libc::ENOENT);
        return -1;
    };
    // Read the real lines first: this takes the slot the open would take, so a full
    // descriptor table fails here with EMFILE as the kernel's open would.
    let header = match read_real(&format!("/proc/self/fdinfo/{fd}")) {
        Ok(text) => text
            .lines()
            .take(4)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
        Err(errno) => {
            set_errno(errno);
            return -1;
        }
    };
    let text = {
        let driver = emu.lock();
        if let Some(usage) = driver.client_usage(fd) {
            vfs::drm_fdinfo(&header, &usage, &driver.config)
        } else if let Some((_, size)) = driver.object_of_dmabuf(fd) {
            vfs::dmabuf_fdinfo(&header, size)
        } else {
            header
        }
    };
    virtual_file(&text, flags)
}

/// A file's text, read with libc's own `openat` (never through this module).
fn read_real(path: &str) -> Result<String, Errno> {
    let path = CString::new(path).map_err(|_| libc::EINVAL)?;
    let open = real_openat().ok_or(libc::ENOSYS)?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe {
        open(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    let mut text = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        text.extend_from_slice(&buf[..n as usize]);
    }
    // SAFETY: closing the descriptor opened above (libc's close: it is not ours).
    unsafe { libc::syscall(libc::SYS_close, fd) };
    Ok(String::from_utf8_lossy(&text).into_owned())
}

fn counts_file(flags: c_int) -> c_int {
    let Some(emu) = emulation() else {
        set_errno(libc::ENOENT);
        return -1;
    };
    let text = {
        let driver = emu.lock();
        vfs::counts_text(driver.counts(), &driver.config)
    };
    virtual_file(&text, flags)
}

/// The one place every open variant goes through.
///
/// # Safety
/// `path` is null or NUL-terminated; `real` is libc's openat.
unsafe fn open_at(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
    real: unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(p) = unsafe { bytes(path) } {
        if p.first() == Some(&b'/') {
            if p == COUNTS_PATH.as_bytes() {
                return counts_file(flags);
            }
            if let Some(fd) = fdinfo_target(p).filter(|&fd| tracked(fd)) {
                return fdinfo_file(fd, flags);
            }
            // SAFETY: the caller's contract.
            if let Some((inside, node)) = unsafe { rewritten(path) } {
                // SAFETY: a NUL-terminated path.
                let fd = unsafe { real(dirfd, inside.as_ptr(), flags, mode) };
                if let (Node::Drm(device), true) = (node, fd >= 0) {
                    if let Some(emu) = emulation() {
                        emu.lock().open(fd, device);
                        track(fd);
                    }
                }
                return fd;
            }
        } else if dirfd >= 0 && !p.is_empty() && p.iter().all(u8::is_ascii_digit) {
            let target: c_int = std::str::from_utf8(p)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(-1);
            if tracked(target) && is_own_fdinfo_dir(dirfd) {
                return fdinfo_file(target, flags);
            }
        }
    }
    // SAFETY: passing the caller's arguments on.
    unsafe { real(dirfd, path, flags, mode) }
}

type OpenAt = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int;

fn real_openat() -> Option<OpenAt> {
    next!("openat" as OpenAt)
}

macro_rules! enosys {
    ($ret:expr) => {{
        set_errno(libc::ENOSYS);
        return $ret;
    }};
}

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

/// Defines an entry point whose first argument after `$pre` is a path to rewrite.
macro_rules! path_call {
    ($(#[$doc:meta])* $name:ident ( $($pre:ident : $pre_ty:ty,)* @path $(, $post:ident : $post_ty:ty)* ) -> $ret:ty, $fail:expr) => {
        $(#[$doc])*
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($pre: $pre_ty,)* path: *const c_char $(, $post: $post_ty)*) -> $ret {
            let Some(real) = next!(@ident $name as unsafe extern "C" fn($($pre_ty,)* *const c_char $(, $post_ty)*) -> $ret) else {
                enosys!($fail)
            };
            // SAFETY: the caller's contract.
            match unsafe { rewritten(path) } {
                Some((inside, node)) => {
                    // SAFETY: a NUL-terminated path and the caller's other arguments.
                    let result = unsafe { real($($pre,)* inside.as_ptr() $(, $post)*) };
                    path_result_hook(stringify!($name), node, &[$($post as usize),*]);
                    result
                }
                // SAFETY: passing the caller's arguments on.
                None => unsafe { real($($pre,)* path $(, $post)*) },
            }
        }
    };
}

/// After a stat of a DRM node of the tree (a plain file), make it a character device
/// as the kernel shows it.
fn path_result_hook(name: &str, node: Node, args: &[usize]) {
    let Node::Drm(device) = node else { return };
    let buffer = match name {
        "stat" | "stat64" | "lstat" | "lstat64" => args.first(),
        "fstatat" | "fstatat64" => args.first(),
        "__xstat" | "__xstat64" | "__lxstat" | "__lxstat64" => args.first(),
        _ => None,
    };
    if let Some(&buffer) = buffer {
        // SAFETY: the call just filled this stat buffer.
        unsafe { as_char_device(buffer as *mut libc::stat, device) };
    }
}

/// # Safety
/// `st` is a filled, writable stat buffer.
unsafe fn as_char_device(st: *mut libc::stat, device: usize) {
    if st.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        (*st).st_mode = libc::S_IFCHR | 0o666;
        (*st).st_rdev = libc::makedev(config::DRM_MAJOR, 128 + device as u32);
    }
}

path_call!(opendir(@path) -> *mut libc::DIR, std::ptr::null_mut());
path_call!(access(@path, mode: c_int) -> c_int, -1);
path_call!(faccessat(dirfd: c_int, @path, mode: c_int, flags: c_int) -> c_int, -1);
path_call!(stat(@path, buf: *mut libc::stat) -> c_int, -1);
path_call!(stat64(@path, buf: *mut libc::stat) -> c_int, -1);
path_call!(lstat(@path, buf: *mut libc::stat) -> c_int, -1);
path_call!(lstat64(@path, buf: *mut libc::stat) -> c_int, -1);
path_call!(fstatat(dirfd: c_int, @path, buf: *mut libc::stat, flags: c_int) -> c_int, -1);
path_call!(fstatat64(dirfd: c_int, @path, buf: *mut libc::stat, flags: c_int) -> c_int, -1);
path_call!(__xstat(ver: c_int, @path, buf: *mut libc::stat) -> c_int, -1);
path_call!(__xstat64(ver: c_int, @path, buf: *mut libc::stat) -> c_int, -1);
path_call!(__lxstat(ver: c_int, @path, buf: *mut libc::stat) -> c_int, -1);
path_call!(__lxstat64(ver: c_int, @path, buf: *mut libc::stat) -> c_int, -1);
path_call!(statx(dirfd: c_int, @path, flags: c_int, mask: c_uint, buf: *mut libc::statx) -> c_int, -1);
path_call!(scandir(@path, list: *mut c_void, filter: *mut c_void, compare: *mut c_void) -> c_int, -1);

/// # Safety
/// libc's `fstat`.
#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    let Some(real) = next!("fstat" as unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int) else {
        enosys!(-1)
    };
    // SAFETY: the caller's contract.
    let result = unsafe { real(fd, buf) };
    if result == 0 && tracked(fd) {
        if let Some(device) = emulation().and_then(|emu| emu.lock().device_of(fd)) {
            // SAFETY: `buf` was just filled.
            unsafe { as_char_device(buf, device) };
        }
    }
    result
}

/// # Safety
/// libc's `fstat64`.
#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: the same function on 64-bit Linux.
    unsafe { fstat(fd, buf) }
}

/// # Safety
/// libc's `__fxstat`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat(_ver: c_int, fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: the same call.
    unsafe { fstat(fd, buf) }
}

/// # Safety
/// libc's `__fxstat64`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat64(_ver: c_int, fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: the same call.
    unsafe { fstat(fd, buf) }
}

/// Removes the tree's folder from a path the kernel returned in `buf[..n]`.
fn strip_root(buf: *mut c_char, n: ssize_t) -> ssize_t {
    if n <= 0 {
        return n;
    }
    let Some(emu) = EMULATION.get().and_then(Option::as_ref) else {
        return n;
    };
    // SAFETY: the kernel wrote `n` bytes into `buf`.
    let result = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n as usize) };
    let Some(rest) = emu.tree.unrewrite(result) else {
        return n;
    };
    let (len, skip) = (rest.len(), n as usize - rest.len());
    result.copy_within(skip.., 0);
    len as ssize_t
}

/// # Safety
/// libc's `readlink`.
#[no_mangle]
pub unsafe extern "C" fn readlink(path: *const c_char, buf: *mut c_char, len: size_t) -> ssize_t {
    let Some(real) =
        next!("readlink" as unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ssize_t)
    else {
        enosys!(-1)
    };
    // SAFETY: the caller's contract.
    let n = match unsafe { rewritten(path) } {
        // SAFETY: a NUL-terminated path and the caller's buffer.
        Some((inside, _)) => unsafe { real(inside.as_ptr(), buf, len) },
        // SAFETY: passing the caller's arguments on.
        None => unsafe { real(path, buf, len) },
    };
    strip_root(buf, n)
}

/// # Safety
/// libc's `__readlink_chk`.
#[no_mangle]
pub unsafe extern "C" fn __readlink_chk(
    path: *const c_char,
    buf: *mut c_char,
    len: size_t,
    _buflen: size_t,
) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { readlink(path, buf, len) }
}

/// # Safety
/// libc's `readlinkat`.
#[no_mangle]
pub unsafe extern "C" fn readlinkat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut c_char,
    len: size_t,
) -> ssize_t {
    let Some(real) = next!(
        "readlinkat" as unsafe extern "C" fn(c_int, *const c_char, *mut c_char, size_t) -> ssize_t
    ) else {
        enosys!(-1)
    };
    // SAFETY: the caller's contract.
    let n = match unsafe { rewritten(path) } {
        // SAFETY: a NUL-terminated path and the caller's buffer.
        Some((inside, _)) => unsafe { real(dirfd, inside.as_ptr(), buf, len) },
        // SAFETY: passing the caller's arguments on.
        None => unsafe { real(dirfd, path, buf, len) },
    };
    strip_root(buf, n)
}

/// # Safety
/// libc's `__readlinkat_chk`.
#[no_mangle]
pub unsafe extern "C" fn __readlinkat_chk(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut c_char,
    len: size_t,
    _buflen: size_t,
) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { readlinkat(dirfd, path, buf, len) }
}

/// # Safety
/// libc's `realpath`.
#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char {
    let Some(real) =
        next!("realpath" as unsafe extern "C" fn(*const c_char, *mut c_char) -> *mut c_char)
    else {
        enosys!(std::ptr::null_mut())
    };
    // SAFETY: the caller's contract.
    let Some((inside, _)) = (unsafe { rewritten(path) }) else {
        // SAFETY: passing the caller's arguments on.
        return unsafe { real(path, resolved) };
    };
    // SAFETY: a NUL-terminated path; `resolved` is the caller's (PATH_MAX or null).
    let out = unsafe { real(inside.as_ptr(), resolved) };
    if !out.is_null() {
        // SAFETY: realpath returned a NUL-terminated string.
        let n = unsafe { libc::strlen(out) } as ssize_t;
        let n = strip_root(out, n);
        // SAFETY: `n` is within the string.
        unsafe { *out.add(n as usize) = 0 };
    }
    out
}

/// # Safety
/// libc's `__realpath_chk`.
#[no_mangle]
pub unsafe extern "C" fn __realpath_chk(
    path: *const c_char,
    resolved: *mut c_char,
    _len: size_t,
) -> *mut c_char {
    // SAFETY: the caller's contract.
    unsafe { realpath(path, resolved) }
}

/// # Safety
/// libc's `canonicalize_file_name`.
#[no_mangle]
pub unsafe extern "C" fn canonicalize_file_name(path: *const c_char) -> *mut c_char {
    // SAFETY: realpath with a null buffer allocates, as this function does.
    unsafe { realpath(path, std::ptr::null_mut()) }
}

// ---------------------------------------------------------------------------------
// Descriptors: ioctls, mappings, closing and duplicating.

/// # Safety
/// libc's `ioctl`.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: u64, arg: *mut c_void) -> c_int {
    if !tracked(fd) {
        let Some(real) = next!("ioctl" as unsafe extern "C" fn(c_int, u64, *mut c_void) -> c_int)
        else {
            enosys!(-1)
        };
        // SAFETY: passing the caller's arguments on.
        return unsafe { real(fd, request, arg) };
    }
    let Some(emu) = emulation() else {
        set_errno(libc::EBADF);
        return -1;
    };
    let mut driver = emu.lock();
    let result = if driver.device_of(fd).is_some() {
        // SAFETY: the caller passed the request's structure, as ioctl's contract says.
        unsafe { render_ioctl(&mut driver, &NeoHost, fd, request, arg) }
    } else {
        dmabuf_ioctl(request)
    };
    if result.is_err() {
        driver.failed();
    }
    if driver.config.trace {
        let name = clmulti_drm_uapi::request_name(request).unwrap_or("unknown request");
        match result {
            Ok(_) => eprintln!("clmulti-kmd-emu: ioctl({fd}, {name}) = 0"),
            Err(e) => eprintln!("clmulti-kmd-emu: ioctl({fd}, {name} {request:#x}) = -1 errno {e}"),
        }
    }
    drop(driver);
    match result {
        Ok(value) => value,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

type Mmap = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;

/// # Safety
/// libc's `mmap`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    let Some(real) = next!("mmap" as Mmap) else {
        enosys!(libc::MAP_FAILED)
    };
    if !tracked(fd) {
        // SAFETY: passing the caller's arguments on.
        return unsafe { real(addr, len, prot, flags, fd, offset) };
    }
    // SAFETY: the caller's contract.
    unsafe { map_object(addr, len, prot, flags, fd, offset, real) }
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
    offset: off_t,
) -> *mut c_void {
    // SAFETY: the same function on 64-bit Linux.
    unsafe { mmap(addr, len, prot, flags, fd, offset) }
}

/// Maps an object: shared anonymous memory (shmem, as i915's system objects are),
/// or a second view of the pages an earlier mapping of it has.
///
/// # Safety
/// `mmap`'s contract; `fd` is tracked.
unsafe fn map_object(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
    real: Mmap,
) -> *mut c_void {
    let Some(emu) = emulation() else {
        set_errno(libc::EBADF);
        return libc::MAP_FAILED;
    };
    let mut driver = emu.lock();
    let found = if driver.device_of(fd).is_some() {
        driver.object_at_offset(fd, offset as u64)
    } else {
        driver
            .object_of_dmabuf(fd)
            .filter(|_| offset == 0)
            .ok_or(libc::EINVAL)
    };
    let object = match found {
        Ok((object, size)) if len as u64 <= size.next_multiple_of(4096) => object,
        Ok(_) => {
            set_errno(libc::EINVAL);
            return libc::MAP_FAILED;
        }
        Err(e) => {
            set_errno(e);
            return libc::MAP_FAILED;
        }
    };
    let fixed = flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE);
    let pointer = match driver.mapping_of(object) {
        Some((start, _)) => {
            let mremap_flags =
                libc::MREMAP_MAYMOVE | if fixed != 0 { libc::MREMAP_FIXED } else { 0 };
            // SAFETY: a shared mapping of ours; a zero old size makes a second
            // mapping of the same pages (mremap(2)).
            unsafe { libc::mremap(start as *mut c_void, 0, len, mremap_flags, addr) }
        }
        None => {
            let anonymous =
                libc::MAP_SHARED | libc::MAP_ANONYMOUS | fixed | (flags & libc::MAP_POPULATE);
            // SAFETY: a new anonymous mapping at the caller's address (if fixed).
            unsafe { real(addr, len, prot, anonymous, -1, 0) }
        }
    };
    if pointer != libc::MAP_FAILED {
        driver.mapped(object, pointer as usize, len);
    }
    pointer
}

/// # Safety
/// libc's `munmap`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let Some(real) = next!("munmap" as unsafe extern "C" fn(*mut c_void, size_t) -> c_int) else {
        enosys!(-1)
    };
    // SAFETY: passing the caller's arguments on.
    let result = unsafe { real(addr, len) };
    if result == 0 {
        if let Some(Some(emu)) = EMULATION.get() {
            let mut driver = emu.lock();
            if driver.has_mappings() {
                driver.unmapped(addr as usize, len);
            }
        }
    }
    result
}

/// # Safety
/// libc's `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let Some(real) = next!("close" as unsafe extern "C" fn(c_int) -> c_int) else {
        enosys!(-1)
    };
    if tracked(fd) {
        untrack(fd);
        if let Some(emu) = emulation() {
            emu.lock().forget(fd);
        }
    }
    // SAFETY: passing the caller's argument on.
    unsafe { real(fd) }
}

/// After a successful duplication of `old` onto `new`.
fn duplicated(old: c_int, new: c_int) {
    if new < 0 {
        return;
    }
    let was_tracked = tracked(new);
    if !tracked(old) && !was_tracked {
        return;
    }
    let Some(emu) = emulation() else { return };
    let mut driver = emu.lock();
    if was_tracked {
        untrack(new);
        driver.forget(new);
    }
    if tracked(old) {
        driver.dup(old, new);
        track(new);
    }
}

/// # Safety
/// libc's `dup`.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    let Some(real) = next!("dup" as unsafe extern "C" fn(c_int) -> c_int) else {
        enosys!(-1)
    };
    // SAFETY: passing the caller's argument on.
    let new = unsafe { real(fd) };
    duplicated(fd, new);
    new
}

/// # Safety
/// libc's `dup2`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let Some(real) = next!("dup2" as unsafe extern "C" fn(c_int, c_int) -> c_int) else {
        enosys!(-1)
    };
    // SAFETY: passing the caller's arguments on.
    let result = unsafe { real(old, new) };
    if result >= 0 && old != new {
        duplicated(old, result);
    }
    result
}

/// # Safety
/// libc's `dup3`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let Some(real) = next!("dup3" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int) else {
        enosys!(-1)
    };
    // SAFETY: passing the caller's arguments on.
    let result = unsafe { real(old, new, flags) };
    if result >= 0 {
        duplicated(old, result);
    }
    result
}

/// # Safety
/// libc's `fcntl` (its third argument, when there is one, in the same register).
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let real = next!("fcntl" as unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int);
    // SAFETY: the caller's contract.
    unsafe { fcntl_with(fd, cmd, arg, real) }
}

/// # Safety
/// libc's `fcntl64`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let real = next!("fcntl64" as unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int);
    // SAFETY: the caller's contract.
    unsafe { fcntl_with(fd, cmd, arg, real) }
}

/// # Safety
/// `fcntl`'s contract.
unsafe fn fcntl_with(
    fd: c_int,
    cmd: c_int,
    arg: c_ulong,
    real: Option<unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int>,
) -> c_int {
    let Some(real) = real else { enosys!(-1) };
    // SAFETY: passing the caller's arguments on.
    let result = unsafe { real(fd, cmd, arg) };
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        duplicated(fd, result);
    }
    result
}
