//! Calls and their arguments in words, as `strace` prints them: flags by name, errno
//! by name, DRM ioctls by the driver's request name; and the keys calls are counted
//! under.

use std::fmt::Write as _;

/// What a counted call is, for the count's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Open = 1,
    Mmap,
    Munmap,
    Mremap,
    Mprotect,
    MemfdCreate,
    Pipe,
    Socket,
    Dup,
    Eventfd,
    Epoll,
    Timerfd,
    PthreadCreate,
    Mlock,
}

impl Kind {
    const ALL: [Kind; 14] = [
        Kind::Open,
        Kind::Mmap,
        Kind::Munmap,
        Kind::Mremap,
        Kind::Mprotect,
        Kind::MemfdCreate,
        Kind::Pipe,
        Kind::Socket,
        Kind::Dup,
        Kind::Eventfd,
        Kind::Epoll,
        Kind::Timerfd,
        Kind::PthreadCreate,
        Kind::Mlock,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Open => "open",
            Kind::Mmap => "mmap",
            Kind::Munmap => "munmap",
            Kind::Mremap => "mremap",
            Kind::Mprotect => "mprotect",
            Kind::MemfdCreate => "memfd_create",
            Kind::Pipe => "pipe",
            Kind::Socket => "socket",
            Kind::Dup => "dup",
            Kind::Eventfd => "eventfd",
            Kind::Epoll => "epoll_create",
            Kind::Timerfd => "timerfd_create",
            Kind::PthreadCreate => "pthread_create",
            Kind::Mlock => "mlock",
        }
    }

    /// The count key of a plain call.
    pub fn key(self) -> u64 {
        1 << 56 | self as u64
    }
}

/// The DRM drivers whose requests the tracer tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Driver {
    NotDrm = 0,
    I915,
    Xe,
    Amdgpu,
    Other,
}

impl Driver {
    /// From `DRM_IOCTL_VERSION`'s name.
    pub fn from_name(name: &[u8]) -> Self {
        match name {
            b"i915" => Driver::I915,
            b"xe" => Driver::Xe,
            b"amdgpu" => Driver::Amdgpu,
            _ => Driver::Other,
        }
    }

    fn from_code(code: u8) -> Self {
        match code {
            1 => Driver::I915,
            2 => Driver::Xe,
            3 => Driver::Amdgpu,
            4 => Driver::Other,
            _ => Driver::NotDrm,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Driver::NotDrm => "",
            Driver::I915 => "i915",
            Driver::Xe => "xe",
            Driver::Amdgpu => "amdgpu",
            Driver::Other => "drm",
        }
    }
}

/// The memory region an i915 object is created in, as far as the request says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Region {
    Unknown = 0,
    System,
    Local,
}

/// The count key of an ioctl: its request, the file's driver, and for i915's
/// `GEM_CREATE_EXT` the object's first region.
pub fn ioctl_key(request: u64, driver: Driver, region: Region) -> u64 {
    2 << 56 | (region as u64) << 40 | (driver as u64) << 32 | (request & 0xffff_ffff)
}

/// A DRM request's name: the core's and i915's by the uAPI crate; other drivers'
/// requests by number, with the driver.
pub fn request_name(request: u64, driver: Driver) -> String {
    let nr = request & 0xff;
    let ty = (request >> 8) & 0xff;
    let driver_specific = ty == u64::from(b'd') && nr >= 0x40;
    if !driver_specific || driver == Driver::I915 {
        if let Some(name) = clmulti_drm_uapi::request_name(request) {
            return name.to_owned();
        }
    }
    if ty == u64::from(b'd') {
        let owner = if driver_specific {
            driver.word()
        } else {
            "drm"
        };
        return format!("DRM_IOCTL ({owner} request {nr:#x})");
    }
    format!("{request:#x}")
}

/// A count key in words: `mmap`, `ioctl:DRM_IOCTL_PRIME_HANDLE_TO_FD`,
/// `ioctl:DRM_IOCTL_I915_GEM_CREATE_EXT:local`.
pub fn key_name(key: u64) -> String {
    match key >> 56 {
        1 => Kind::ALL
            .iter()
            .find(|k| **k as u64 == key & 0xff)
            .map_or_else(|| format!("call {}", key & 0xff), |k| k.name().to_owned()),
        _ => {
            let request = key & 0xffff_ffff;
            let driver = Driver::from_code(((key >> 32) & 0xff) as u8);
            let region = match (key >> 40) & 0xff {
                1 => ":system",
                2 => ":local",
                _ => "",
            };
            format!("ioctl:{}{region}", request_name(request, driver))
        }
    }
}

extern "C" {
    /// glibc 2.32 and later: `EMFILE` for 24.
    fn strerrorname_np(errnum: libc::c_int) -> *const libc::c_char;
}

/// errno by name: `EMFILE`.
pub fn errno_name(errno: i32) -> String {
    // SAFETY: strerrorname_np returns null or a static NUL-terminated string.
    let name = unsafe { strerrorname_np(errno) };
    if name.is_null() {
        return format!("errno {errno}");
    }
    // SAFETY: checked not null above; static storage.
    unsafe { std::ffi::CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

fn flag_words(value: i64, table: &[(i64, &str)], rest_hex: bool) -> String {
    let mut words = Vec::new();
    let mut left = value;
    for &(bit, name) in table {
        if bit != 0 && left & bit == bit {
            words.push(name.to_owned());
            left &= !bit;
        }
    }
    if left != 0 && rest_hex {
        words.push(format!("{left:#x}"));
    }
    if words.is_empty() {
        "0".into()
    } else {
        words.join("|")
    }
}

/// `open` flags: `O_RDWR|O_CLOEXEC`.
pub fn open_flags(flags: i32) -> String {
    let access = match flags & libc::O_ACCMODE {
        libc::O_WRONLY => "O_WRONLY",
        libc::O_RDWR => "O_RDWR",
        _ => "O_RDONLY",
    };
    let rest = flag_words(
        i64::from(flags & !libc::O_ACCMODE),
        &[
            (libc::O_CREAT as i64, "O_CREAT"),
            (libc::O_EXCL as i64, "O_EXCL"),
            (libc::O_TRUNC as i64, "O_TRUNC"),
            (libc::O_APPEND as i64, "O_APPEND"),
            (libc::O_NONBLOCK as i64, "O_NONBLOCK"),
            (libc::O_DIRECTORY as i64, "O_DIRECTORY"),
            (libc::O_NOFOLLOW as i64, "O_NOFOLLOW"),
            (libc::O_CLOEXEC as i64, "O_CLOEXEC"),
            (libc::O_LARGEFILE as i64, "O_LARGEFILE"),
            (libc::O_PATH as i64, "O_PATH"),
        ],
        true,
    );
    if rest == "0" {
        access.into()
    } else {
        format!("{access}|{rest}")
    }
}

/// `mmap` protection and flags.
pub fn mmap_words(prot: i32, flags: i32) -> String {
    let prot = flag_words(
        i64::from(prot),
        &[
            (libc::PROT_READ as i64, "PROT_READ"),
            (libc::PROT_WRITE as i64, "PROT_WRITE"),
            (libc::PROT_EXEC as i64, "PROT_EXEC"),
        ],
        true,
    );
    let flags = flag_words(
        i64::from(flags),
        &[
            (libc::MAP_SHARED as i64, "MAP_SHARED"),
            (libc::MAP_PRIVATE as i64, "MAP_PRIVATE"),
            (libc::MAP_FIXED as i64, "MAP_FIXED"),
            (libc::MAP_ANONYMOUS as i64, "MAP_ANONYMOUS"),
            (libc::MAP_NORESERVE as i64, "MAP_NORESERVE"),
            (libc::MAP_POPULATE as i64, "MAP_POPULATE"),
            (libc::MAP_FIXED_NOREPLACE as i64, "MAP_FIXED_NOREPLACE"),
        ],
        true,
    );
    let prot = if prot == "0" {
        "PROT_NONE".into()
    } else {
        prot
    };
    format!("{prot}, {flags}")
}

/// A directory descriptor argument: `AT_FDCWD` or its number.
pub fn dirfd(fd: i32) -> String {
    if fd == libc::AT_FDCWD {
        "AT_FDCWD".into()
    } else {
        fd.to_string()
    }
}

/// A C string argument, quoted; `NULL` for null.
///
/// # Safety
/// `s` is null or NUL-terminated.
pub unsafe fn c_string(s: *const libc::c_char) -> String {
    if s.is_null() {
        return "NULL".into();
    }
    // SAFETY: the caller's contract.
    let text = unsafe { std::ffi::CStr::from_ptr(s) }.to_string_lossy();
    let mut out = String::from("\"");
    for c in text.chars().take(256) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        if c.is_control() {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_read_as_strace_prints_them() {
        assert_eq!(
            open_flags(libc::O_RDONLY | libc::O_CLOEXEC),
            "O_RDONLY|O_CLOEXEC"
        );
        assert_eq!(open_flags(libc::O_RDWR), "O_RDWR");
        assert_eq!(
            mmap_words(
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED
            ),
            "PROT_READ|PROT_WRITE, MAP_SHARED|MAP_FIXED"
        );
        assert_eq!(errno_name(libc::EMFILE), "EMFILE");
        assert_eq!(errno_name(libc::ENOMEM), "ENOMEM");
        let prime = clmulti_drm_uapi::DRM_IOCTL_PRIME_HANDLE_TO_FD;
        assert_eq!(
            request_name(prime, Driver::I915),
            "DRM_IOCTL_PRIME_HANDLE_TO_FD"
        );
        assert_eq!(
            request_name(prime, Driver::Xe),
            "DRM_IOCTL_PRIME_HANDLE_TO_FD",
            "a core request"
        );
        let create_ext = clmulti_drm_uapi::DRM_IOCTL_I915_GEM_CREATE_EXT;
        assert_eq!(
            request_name(create_ext, Driver::Xe),
            "DRM_IOCTL (xe request 0x7c)"
        );
        assert_eq!(
            key_name(ioctl_key(create_ext, Driver::I915, Region::Local)),
            "ioctl:DRM_IOCTL_I915_GEM_CREATE_EXT:local"
        );
        assert_eq!(key_name(Kind::Mmap.key()), "mmap");
    }
}
