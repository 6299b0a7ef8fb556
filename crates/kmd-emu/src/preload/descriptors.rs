//! Calls on descriptors: ioctl (the emulated driver's), mmap and munmap of its
//! objects, and close, dup and fcntl, which must track emulated descriptors.

use super::*;

/// # Safety
/// libc's `ioctl`.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: u64, arg: *mut c_void) -> c_int {
    if !tracked(fd) {
        let Some(real) =
            libc_next!("ioctl" as unsafe extern "C" fn(c_int, u64, *mut c_void) -> c_int)
        else {
            return enosys(-1);
        };
        // SAFETY: passing the caller's arguments on.
        return unsafe { real(fd, request, arg) };
    }
    let Some(emu) = emulation() else {
        set_errno(libc::EBADF);
        return -1;
    };
    let mut driver = emu.lock();
    let xe = driver.config.kernel() == Kernel::Xe;
    let result = if driver.device_of(fd).is_none() {
        dmabuf_ioctl(request)
    } else if xe {
        // SAFETY: the caller passed the request's structure, as ioctl's contract says.
        match unsafe { crate::xe::render_ioctl(&mut driver, &NeoHost, fd, request, arg) } {
            Ok(crate::xe::Reply::Done(value)) => Ok(value),
            // A fence not yet written: wait without the lock, as the kernel sleeps.
            Ok(crate::xe::Reply::Wait(wait)) => {
                drop(driver);
                let waited = wait.wait(&NeoHost);
                driver = emu.lock();
                waited
            }
            Err(e) => Err(e),
        }
    } else {
        // SAFETY: the caller passed the request's structure, as ioctl's contract says.
        unsafe { render_ioctl(&mut driver, &NeoHost, fd, request, arg) }
    };
    if result.is_err() {
        driver.failed();
    }
    if driver.config.trace {
        let name = if xe {
            clmulti_drm_uapi::xe_request_name(request)
        } else {
            None
        }
        .or_else(|| clmulti_drm_uapi::request_name(request))
        .unwrap_or("unknown request");
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

clmulti_contract::libc_mmap_family!(mmap_with);

/// Maps a tracked descriptor's object here; passes any other mapping on.
///
/// # Safety
/// `mmap`'s contract.
unsafe fn mmap_with(real: Mmap, call: MmapArgs) -> *mut c_void {
    if !tracked(call.fd) {
        // SAFETY: passing the caller's arguments on.
        return unsafe { call.pass_on(real) };
    }
    let MmapArgs {
        addr,
        len,
        prot,
        flags,
        fd,
        offset,
    } = call;
    // SAFETY: the caller's contract.
    unsafe { map_object(addr, len, prot, flags, fd, offset, real) }
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
    let result = call_next!("munmap" as unsafe extern "C" fn(*mut c_void, size_t) -> c_int, (addr, len) else -1);
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
/// libc's `lseek`.
#[no_mangle]
pub unsafe extern "C" fn lseek(fd: c_int, offset: off_t, whence: c_int) -> off_t {
    if tracked(fd) {
        let size = emulation().and_then(|emu| emu.lock().object_of_dmabuf(fd));
        if let Some((_, size)) = size {
            return dmabuf_seek(size, offset, whence);
        }
    }
    let Some(real) = libc_next!("lseek" as unsafe extern "C" fn(c_int, off_t, c_int) -> off_t)
    else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    unsafe { real(fd, offset, whence) }
}

/// # Safety
/// libc's `lseek64`.
#[no_mangle]
pub unsafe extern "C" fn lseek64(fd: c_int, offset: off_t, whence: c_int) -> off_t {
    // SAFETY: the same function on 64-bit Linux.
    unsafe { lseek(fd, offset, whence) }
}

/// A dma-buf's seek (`dma_buf_llseek`): only to its start or its end, which is how a
/// runtime learns the size of a buffer it imports.
fn dmabuf_seek(size: u64, offset: off_t, whence: c_int) -> off_t {
    match (whence, offset) {
        (libc::SEEK_END, 0) => size as off_t,
        (libc::SEEK_SET, 0) => 0,
        _ => {
            set_errno(libc::EINVAL);
            -1
        }
    }
}

/// # Safety
/// libc's `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let Some(real) = libc_next!("close" as unsafe extern "C" fn(c_int) -> c_int) else {
        return enosys(-1);
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
    let new = call_next!("dup" as unsafe extern "C" fn(c_int) -> c_int, (fd) else -1);
    duplicated(fd, new);
    new
}

/// # Safety
/// libc's `dup2`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let result =
        call_next!("dup2" as unsafe extern "C" fn(c_int, c_int) -> c_int, (old, new) else -1);
    if result >= 0 && old != new {
        duplicated(old, result);
    }
    result
}

/// # Safety
/// libc's `dup3`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let result = call_next!("dup3" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int, (old, new, flags) else -1);
    if result >= 0 {
        duplicated(old, result);
    }
    result
}

/// # Safety
/// libc's `fcntl` (its third argument, when there is one, in the same register).
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let real = libc_next!("fcntl" as unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int);
    // SAFETY: the caller's contract.
    unsafe { fcntl_with(fd, cmd, arg, real) }
}

/// # Safety
/// libc's `fcntl64`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let real = libc_next!("fcntl64" as unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int);
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
    let Some(real) = real else {
        return enosys(-1);
    };
    // SAFETY: passing the caller's arguments on.
    let result = unsafe { real(fd, cmd, arg) };
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        duplicated(fd, result);
    }
    result
}
