//! Calls that take a path: stat, access, opendir, readlink and realpath, each given
//! the emulated tree's path and its answer made to look like the kernel's.

use super::*;

/// Defines an entry point whose first argument after `$pre` is a path to rewrite.
macro_rules! path_call {
    ($(#[$doc:meta])* $name:ident ( $($pre:ident : $pre_ty:ty,)* @path $(, $post:ident : $post_ty:ty)* ) -> $ret:ty, $fail:expr) => {
        $(#[$doc])*
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($pre: $pre_ty,)* path: *const c_char $(, $post: $post_ty)*) -> $ret {
            let Some(real) = libc_next!(@ident $name as unsafe extern "C" fn($($pre_ty,)* *const c_char $(, $post_ty)*) -> $ret) else {
                return enosys($fail);
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
    let Some(real) = libc_next!("fstat" as unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int)
    else {
        return enosys(-1);
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
    let Some(real) = libc_next!(
        "readlink" as unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ssize_t
    ) else {
        return enosys(-1);
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
    let Some(real) = libc_next!(
        "readlinkat" as unsafe extern "C" fn(c_int, *const c_char, *mut c_char, size_t) -> ssize_t
    ) else {
        return enosys(-1);
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
        libc_next!("realpath" as unsafe extern "C" fn(*const c_char, *mut c_char) -> *mut c_char)
    else {
        return enosys(std::ptr::null_mut());
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
