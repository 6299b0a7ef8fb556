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

use crate::config::{self, Config, Kernel};
use crate::ioctl::{dmabuf_ioctl, render_ioctl, Host};
use crate::model::{Driver, Errno};
use crate::vfs::{self, Node, Tree, COUNTS_PATH};
use clmulti_contract::interpose::{enosys, errno, set_errno, Fopen, Mmap, MmapArgs, OpenAt};
use clmulti_contract::{call_next, libc_next};
use libc::{c_char, c_int, c_uint, c_ulong, c_void, off_t, size_t, ssize_t, FILE};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

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
    if config.kernel() == Kernel::Xe {
        warn_direct_submission();
    }
    // SAFETY: registering a plain extern "C" function.
    unsafe { libc::atexit(at_exit) };
    Some(Emulation {
        driver: Mutex::new(Driver::new(config)),
        tree,
        owned_root: owned.then_some(root),
        report,
    })
}

/// NEO 26 on Battlemage hands its work to a ring the GPU keeps running (direct
/// submission); no GPU runs it here, so NEO must submit each batch itself.
fn warn_direct_submission() {
    let set = |k: &str, v: &str| std::env::var(k).is_ok_and(|x| x.trim() == v);
    let keys = clmulti_contract::kmd_emu::XE_NEO_KEYS;
    if !keys.iter().all(|(k, v)| set(k, v)) {
        let keys: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
        eprintln!(
            "clmulti-kmd-emu: xe: set {} (clmulti emulate --driver xe does): NEO's direct submission waits on a GPU ring that nothing runs here",
            keys.join(" ")
        );
    }
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
        let open =
            libc_next!("open" as unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int)
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

    fn pin_pages(&self, address: u64, size: u64, writable: bool) {
        // MADV_POPULATE_WRITE / _READ (Linux 5.14): the faults pin_user_pages takes,
        // without touching the data; on an older kernel the pages stay as they are.
        let advice = if writable { 23 } else { 22 };
        // SAFETY: the range is the process's own memory, which a userptr object
        // names; populating changes no content.
        unsafe { libc::madvise(address as *mut libc::c_void, size as usize, advice) };
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
    let Some(readlink) = libc_next!(
        "readlink" as unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ssize_t
    ) else {
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
        let kernel = driver.config.kernel();
        if let (Kernel::Xe, Some(usage)) = (kernel, driver.xe_client_usage(fd)) {
            let bdf = driver
                .config
                .devices
                .get(usage.device)
                .map_or("", |d| &d.bdf);
            let hw = driver.config.hardware;
            crate::xe::sysfs::fdinfo(&header, &usage, hw, bdf, NeoHost.now_ns())
        } else if let Some(usage) = driver.client_usage(fd) {
            vfs::drm_fdinfo(&header, &usage, &driver.config)
        } else if let Some((_, size)) = driver.object_of_dmabuf(fd) {
            vfs::dmabuf_fdinfo(&header, size, kernel.name())
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

/// The one place every open variant goes through ([`clmulti_contract::libc_open_family!`]).
///
/// # Safety
/// `path` is null or NUL-terminated.
unsafe fn open_at(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let Some(real) = real_openat() else {
        return enosys(-1);
    };
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

fn real_openat() -> Option<OpenAt> {
    libc_next!("openat" as OpenAt)
}

mod descriptors;
mod open;
mod paths;
