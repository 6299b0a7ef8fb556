//! The ioctl table: each DRM and i915 request NEO issues, decoded from the caller's
//! memory, answered as i915 answers it on the model presented (an Arc A770 unless
//! chosen), against [`Driver`].
//!
//! Requests not in the table fail with `ENOTTY` for a DRM file (the kernel's answer to
//! an ioctl a driver does not have) and are counted.

mod query;

use query::{getparam, query_answer};

use crate::batch::{Memory, View};
use crate::config::Config;
use crate::model::{Driver, Errno};
use clmulti_drm_uapi::*;
use std::ffi::c_void;

/// What the ioctls need from the process around them.
pub trait Host {
    /// A new descriptor for a dma-buf: a real one, so that it counts against
    /// `RLIMIT_NOFILE` and fails with `EMFILE` where the kernel's would.
    fn new_dmabuf_fd(&self, cloexec: bool) -> Result<i32, Errno>;
    /// Monotonic nanoseconds.
    fn now_ns(&self) -> u64;
    /// Reads 8 bytes of the process's memory at `address` as the kernel's
    /// `copy_from_user` does: `EFAULT` where nothing is mapped, never a crash.
    fn read_user(&self, address: u64) -> Result<u64, Errno> {
        let mut value = 0u64;
        let local = libc::iovec {
            iov_base: (&mut value as *mut u64).cast(),
            iov_len: 8,
        };
        let remote = libc::iovec {
            iov_base: address as *mut c_void,
            iov_len: 8,
        };
        // SAFETY: one local buffer of 8 bytes; the remote range is checked by the
        // kernel, which fails with EFAULT instead of faulting.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        (n == 8).then_some(value).ok_or(libc::EFAULT)
    }
    /// Writes 8 bytes of the process's memory at `address` as `copy_to_user` does.
    fn write_user(&self, address: u64, value: u64) -> Result<(), Errno> {
        let local = libc::iovec {
            iov_base: (&value as *const u64).cast_mut().cast(),
            iov_len: 8,
        };
        let remote = libc::iovec {
            iov_base: address as *mut c_void,
            iov_len: 8,
        };
        // SAFETY: as in `read_user`; the kernel checks the remote range.
        let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
        (n == 8).then_some(()).ok_or(libc::EFAULT)
    }
    /// Faults in the process's `size` bytes at `address` (writable or for reading), as
    /// the kernel does when it pins a userptr object's pages.
    fn pin_pages(&self, address: u64, size: u64, writable: bool);
}

/// Answers `request` on the emulated render-node descriptor `fd`.
///
/// # Safety
/// `arg` is what the caller passed to `ioctl`: for every request in the table, a
/// pointer to the request's structure, valid for reads and writes, whose embedded
/// pointers (query items, extension chains, exec objects, version strings) are valid
/// as the uAPI defines them. Unknown requests do not touch `arg`.
// long: a flat table: the driver's ioctls, one arm per request
pub unsafe fn render_ioctl(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    request: u64,
    arg: *mut c_void,
) -> Result<i32, Errno> {
    if arg.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: every dereference below is of the request's own structure, which the
    // caller's contract makes valid.
    unsafe {
        match request {
            DRM_IOCTL_VERSION => version(&mut *arg.cast::<DrmVersion>()),
            DRM_IOCTL_GET_CAP => get_cap(&mut *arg.cast::<DrmGetCap>()),
            DRM_IOCTL_SET_CLIENT_CAP => Ok(0),
            DRM_IOCTL_I915_GETPARAM => getparam(driver.config.hardware, &*arg.cast::<GetParam>()),
            DRM_IOCTL_I915_QUERY => query(&driver.config, &*arg.cast::<Query>()),
            DRM_IOCTL_I915_GEM_CREATE => {
                let create = &mut *arg.cast::<GemCreate>();
                let (handle, size) = driver.create(fd, create.size, &[])?;
                create.handle = handle;
                create.size = size;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_CREATE_EXT => gem_create_ext(driver, fd, &mut *arg.cast()),
            DRM_IOCTL_I915_GEM_USERPTR => userptr(driver, fd, &mut *arg.cast()),
            DRM_IOCTL_GEM_CLOSE => {
                driver.close_handle(fd, (*arg.cast::<DrmGemClose>()).handle)?;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_MMAP_OFFSET => {
                let mmap = &mut *arg.cast::<GemMmapOffset>();
                if mmap.flags > I915_MMAP_OFFSET_FIXED {
                    return Err(libc::EINVAL);
                }
                mmap.offset = driver.mmap_offset(fd, mmap.handle)?;
                Ok(0)
            }
            DRM_IOCTL_PRIME_HANDLE_TO_FD => prime_export(driver, host, fd, &mut *arg.cast()),
            DRM_IOCTL_PRIME_FD_TO_HANDLE => {
                let prime = &mut *arg.cast::<DrmPrimeHandle>();
                prime.handle = driver.import(fd, prime.fd)?;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_VM_CREATE => {
                let vm = &mut *arg.cast::<GemVmControl>();
                if vm.flags != 0 {
                    return Err(libc::EINVAL);
                }
                vm.vm_id = driver.vm_create(fd)?;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_VM_DESTROY => {
                driver.vm_destroy(fd, (*arg.cast::<GemVmControl>()).vm_id)?;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT => context_create(driver, fd, &mut *arg.cast()),
            DRM_IOCTL_I915_GEM_CONTEXT_CREATE => context_create_old(driver, fd, &mut *arg.cast()),
            DRM_IOCTL_I915_GEM_CONTEXT_DESTROY => {
                driver.context_destroy(fd, (*arg.cast::<GemContextDestroy>()).ctx_id)?;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM => context_getparam(driver, fd, &mut *arg.cast()),
            DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM => {
                let param = *arg.cast::<GemContextParam>();
                context_setparam(driver, fd, param.ctx_id, &param)
            }
            DRM_IOCTL_I915_REG_READ => reg_read(driver, host, &mut *arg.cast()),
            DRM_IOCTL_I915_GET_RESET_STATS => {
                let stats = &mut *arg.cast::<ResetStats>();
                if !driver.has_context(fd, stats.ctx_id)? {
                    return Err(libc::ENOENT);
                }
                (stats.reset_count, stats.batch_active, stats.batch_pending) = (0, 0, 0);
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_EXECBUFFER2 | DRM_IOCTL_I915_GEM_EXECBUFFER2_WR => {
                execbuffer(driver, host, fd, &*arg.cast())
            }
            DRM_IOCTL_I915_GEM_WAIT => {
                let wait = &*arg.cast::<GemWait>();
                // Work completes at submission: nothing to wait for, but the handle
                // must exist.
                driver.check_handle(fd, wait.bo_handle)?;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_BUSY => {
                let busy = &mut *arg.cast::<GemBusy>();
                driver.check_handle(fd, busy.handle)?;
                busy.busy = 0;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_SET_DOMAIN => {
                driver.touch(fd, (*arg.cast::<GemSetDomain>()).handle)?;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_MADVISE => {
                let madvise = &mut *arg.cast::<GemMadvise>();
                driver.check_handle(fd, madvise.handle)?;
                madvise.retained = 1;
                Ok(0)
            }
            // DG2 has no fence registers: i915 refuses tiling through them.
            DRM_IOCTL_I915_GEM_SET_TILING | DRM_IOCTL_I915_GEM_GET_TILING
                if driver.config.hardware.discrete() =>
            {
                Err(libc::EOPNOTSUPP)
            }
            DRM_IOCTL_I915_GEM_SET_TILING => {
                let tiling = &mut *arg.cast::<GemSetTiling>();
                tiling.stride =
                    driver.set_tiling(fd, tiling.handle, tiling.tiling_mode, tiling.stride)?;
                // Bit-6 swizzling: none on Gen12.
                tiling.swizzle_mode = 0;
                Ok(0)
            }
            DRM_IOCTL_I915_GEM_GET_TILING => {
                let tiling = &mut *arg.cast::<GemGetTiling>();
                tiling.tiling_mode = driver.tiling(fd, tiling.handle)?;
                (tiling.swizzle_mode, tiling.phys_swizzle_mode) = (0, 0);
                Ok(0)
            }
            _ => Err(libc::ENOTTY),
        }
    }
}

fn userptr(driver: &mut Driver, fd: i32, userptr: &mut GemUserptr) -> Result<i32, Errno> {
    if userptr.flags & !(I915_USERPTR_PROBE | 1) != 0 {
        // UNSYNCHRONIZED needs CAP_SYS_ADMIN and is gone from i915.
        return Err(libc::ENODEV);
    }
    userptr.handle = driver.userptr(
        fd,
        userptr.user_ptr,
        userptr.user_size,
        userptr.flags & 1 != 0,
    )?;
    Ok(0)
}

/// A handle exported as a dma-buf descriptor of the host's.
fn prime_export(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    prime: &mut DrmPrimeHandle,
) -> Result<i32, Errno> {
    let object = driver.export(fd, prime.handle)?;
    let dmabuf = host.new_dmabuf_fd(prime.flags & DRM_CLOEXEC != 0)?;
    driver.exported(object, dmabuf);
    prime.fd = dmabuf;
    Ok(0)
}

/// The older context creation: the kernel reads its structure as the newer one,
/// zero-extended (its pad is the newer one's flags, with no extension chain).
fn context_create_old(
    driver: &mut Driver,
    fd: i32,
    create: &mut GemContextCreate,
) -> Result<i32, Errno> {
    if create.pad & !I915_CONTEXT_CREATE_FLAGS_USE_EXTENSIONS != 0 {
        return Err(libc::EINVAL);
    }
    create.ctx_id = driver.context_create(fd, 0)?;
    Ok(0)
}

/// i915 lets userspace read one register: the render ring's timestamp (bit 0 asks
/// for the 8-byte read).
fn reg_read(driver: &Driver, host: &dyn Host, read: &mut RegRead) -> Result<i32, Errno> {
    if read.offset & !1 != 0x2358 {
        return Err(libc::EINVAL);
    }
    read.val = driver.config.hardware.timestamp(host.now_ns());
    Ok(0)
}

/// Copies `text` into a user buffer of `len` bytes the way the kernel's
/// `drm_copy_field` does, and returns the full length.
///
/// # Safety
/// `dst` is null or valid for `len` bytes of writes.
pub(crate) unsafe fn copy_field(dst: *mut u8, len: usize, text: &str) -> usize {
    if !dst.is_null() {
        let n = len.min(text.len());
        // SAFETY: the caller's contract; `n` <= both lengths.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), dst, n) };
    }
    text.len()
}

/// # Safety
/// The version's string pointers are null or valid for their lengths.
unsafe fn version(v: &mut DrmVersion) -> Result<i32, Errno> {
    (v.version_major, v.version_minor, v.version_patchlevel) = (1, 6, 0);
    // SAFETY: the caller's contract.
    unsafe {
        v.name_len = copy_field(v.name, v.name_len, "i915");
        v.date_len = copy_field(v.date, v.date_len, "20201103");
        v.desc_len = copy_field(v.desc, v.desc_len, "Intel Graphics");
    }
    Ok(0)
}

pub(crate) fn get_cap(cap: &mut DrmGetCap) -> Result<i32, Errno> {
    cap.value = match cap.capability {
        // DRM_CAP_PRIME: import and export.
        0x5 => 3,
        // DRM_CAP_TIMESTAMP_MONOTONIC, DRM_CAP_SYNCOBJ, DRM_CAP_SYNCOBJ_TIMELINE.
        0x6 | 0x13 | 0x14 => 1,
        _ => return Err(libc::EINVAL),
    };
    Ok(0)
}

/// # Safety
/// `q.items_ptr` points to `q.num_items` items whose data pointers are valid for the
/// lengths they give.
unsafe fn query(config: &Config, q: &Query) -> Result<i32, Errno> {
    if q.flags != 0 {
        return Err(libc::EINVAL);
    }
    let items = q.items_ptr as *mut QueryItem;
    for i in 0..q.num_items as usize {
        // SAFETY: the caller's contract.
        let item = unsafe { &mut *items.add(i) };
        match query_answer(config, item.query_id, item.flags) {
            Err(errno) => item.length = -errno,
            Ok(data) if item.length == 0 => item.length = data.len() as i32,
            Ok(data) if (item.length as usize) < data.len() => item.length = -libc::EINVAL,
            Ok(data) => {
                // SAFETY: the item's buffer holds `item.length` >= `data.len()` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        data.as_ptr(),
                        item.data_ptr as *mut u8,
                        data.len(),
                    )
                };
                item.length = data.len() as i32;
            }
        }
    }
    Ok(0)
}

/// # Safety
/// The extension chain is valid as the uAPI defines it.
unsafe fn gem_create_ext(
    driver: &mut Driver,
    fd: i32,
    create: &mut GemCreateExt,
) -> Result<i32, Errno> {
    if create.flags != 0 {
        return Err(libc::EINVAL);
    }
    let mut placements = Vec::new();
    let mut next = create.extensions;
    while next != 0 {
        // SAFETY: the caller's contract.
        let base = unsafe { *(next as *const UserExtension) };
        match base.name {
            I915_GEM_CREATE_EXT_MEMORY_REGIONS => {
                // SAFETY: the extension's name says what it is.
                let ext = unsafe { *(next as *const CreateExtMemoryRegions) };
                if ext.num_regions == 0 || ext.pad != 0 {
                    return Err(libc::EINVAL);
                }
                for i in 0..ext.num_regions as usize {
                    // SAFETY: `regions` holds `num_regions` entries.
                    let r = unsafe { *(ext.regions as *const MemoryClassInstance).add(i) };
                    placements.push((r.memory_class, r.memory_instance));
                }
            }
            // Protected content and cache settings change nothing the model keeps.
            I915_GEM_CREATE_EXT_PROTECTED_CONTENT | I915_GEM_CREATE_EXT_SET_PAT => {}
            _ => return Err(libc::EINVAL),
        }
        next = base.next_extension;
    }
    let (handle, size) = driver.create(fd, create.size, &placements)?;
    create.handle = handle;
    create.size = size;
    Ok(0)
}

/// # Safety
/// The extension chain is valid as the uAPI defines it.
unsafe fn context_create(
    driver: &mut Driver,
    fd: i32,
    create: &mut GemContextCreateExt,
) -> Result<i32, Errno> {
    if create.flags & !I915_CONTEXT_CREATE_FLAGS_USE_EXTENSIONS != 0 {
        return Err(libc::EINVAL);
    }
    let mut params = Vec::new();
    if create.flags & I915_CONTEXT_CREATE_FLAGS_USE_EXTENSIONS != 0 {
        let mut next = create.extensions;
        while next != 0 {
            // SAFETY: the caller's contract.
            let ext = unsafe { *(next as *const ContextCreateExtSetparam) };
            if ext.base.name != I915_CONTEXT_CREATE_EXT_SETPARAM || ext.param.ctx_id != 0 {
                return Err(libc::EINVAL);
            }
            params.push(ext.param);
            next = ext.base.next_extension;
        }
    }
    let vm = params
        .iter()
        .find(|p| p.param == I915_CONTEXT_PARAM_VM)
        .map_or(0, |p| p.value as u32);
    let context = driver.context_create(fd, vm)?;
    for param in params.iter().filter(|p| p.param != I915_CONTEXT_PARAM_VM) {
        if let Err(errno) = context_setparam(driver, fd, context, param) {
            let _ = driver.context_destroy(fd, context);
            return Err(errno);
        }
    }
    create.ctx_id = context;
    Ok(0)
}

fn context_setparam(
    driver: &mut Driver,
    fd: i32,
    context: u32,
    p: &GemContextParam,
) -> Result<i32, Errno> {
    if !driver.has_context(fd, context)? {
        return Err(libc::ENOENT);
    }
    match p.param {
        I915_CONTEXT_PARAM_VM => driver
            .set_context_vm(fd, context, p.value as u32)
            .map(|()| 0),
        // An engine map: a header of 8 bytes, then 4 bytes an engine.
        I915_CONTEXT_PARAM_ENGINES if p.size == 0 || (p.size >= 8 && (p.size - 8) % 4 == 0) => {
            Ok(0)
        }
        I915_CONTEXT_PARAM_PERSISTENCE
        | I915_CONTEXT_PARAM_PRIORITY
        | I915_CONTEXT_PARAM_RECOVERABLE
        | I915_CONTEXT_PARAM_NO_ERROR_CAPTURE
        | I915_CONTEXT_PARAM_BANNABLE
        | I915_CONTEXT_PARAM_RINGSIZE => Ok(0),
        // Per-context SSEU exists only on Gen11's render engine.
        I915_CONTEXT_PARAM_SSEU => Err(libc::ENODEV),
        _ => Err(libc::EINVAL),
    }
}

fn context_getparam(driver: &mut Driver, fd: i32, p: &mut GemContextParam) -> Result<i32, Errno> {
    if !driver.has_context(fd, p.ctx_id)? {
        return Err(libc::ENOENT);
    }
    p.value = match p.param {
        // Full 48-bit PPGTT.
        I915_CONTEXT_PARAM_GTT_SIZE => 1 << 48,
        I915_CONTEXT_PARAM_PERSISTENCE | I915_CONTEXT_PARAM_RECOVERABLE => 1,
        I915_CONTEXT_PARAM_BANNABLE => 1,
        I915_CONTEXT_PARAM_PRIORITY | I915_CONTEXT_PARAM_NO_ERROR_CAPTURE => 0,
        I915_CONTEXT_PARAM_RINGSIZE => 16 << 10,
        I915_CONTEXT_PARAM_VM => {
            let vm = driver.context_vm(fd, p.ctx_id)?;
            if vm == 0 {
                // The default context's own address space gets an id on request.
                u64::from(driver.vm_create(fd)?)
            } else {
                u64::from(vm)
            }
        }
        I915_CONTEXT_PARAM_SSEU => return Err(libc::ENODEV),
        I915_CONTEXT_PARAM_BAN_PERIOD => return Err(libc::EINVAL),
        _ => return Err(libc::EINVAL),
    };
    if p.param != I915_CONTEXT_PARAM_ENGINES {
        p.size = 0;
    }
    Ok(0)
}

/// # Safety
/// `exec.buffers_ptr` points to `exec.buffer_count` exec objects.
unsafe fn execbuffer(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    exec: &Execbuffer2,
) -> Result<i32, Errno> {
    if exec.buffer_count == 0 {
        return Err(libc::EINVAL);
    }
    if !driver.has_context(fd, exec.rsvd1 as u32)? {
        return Err(libc::ENOENT);
    }
    // SAFETY: the caller's contract.
    let objects = unsafe {
        std::slice::from_raw_parts(
            exec.buffers_ptr as *const ExecObject2,
            exec.buffer_count as usize,
        )
    };
    let named: Vec<(u32, u64)> = objects.iter().map(|o| (o.handle, o.offset)).collect();
    let bound = driver.execute(fd, &named)?;
    for (address, size, writable) in driver.pin_userptrs(&bound) {
        host.pin_pages(address, size, writable);
    }
    let views: Vec<View> = bound
        .iter()
        .map(|b| View {
            gpu_address: b.gpu_address,
            size: b.size,
            cpu: driver.cpu_view(b.object),
        })
        .collect();
    let batch = if exec.flags & I915_EXEC_BATCH_FIRST != 0 {
        &views[0]
    } else {
        &views[views.len() - 1]
    };
    let start = batch.gpu_address + u64::from(exec.batch_start_offset);
    let outcome = Memory::new(&views, driver.config.hardware.timestamp(host.now_ns())).run(start);
    for _ in 0..outcome.writes {
        driver.post_sync_written();
    }
    if let Some(why) = outcome.stopped {
        if driver.config.trace {
            eprintln!("clmulti-kmd-emu: execbuffer on fd {fd}: batch read stopped: {why}");
        }
    }
    Ok(0)
}

/// Answers `request` on a dma-buf this driver exported.
pub fn dmabuf_ioctl(request: u64) -> Result<i32, Errno> {
    match request {
        DMA_BUF_IOCTL_SYNC => Ok(0),
        _ => Err(libc::ENOTTY),
    }
}

#[cfg(test)]
mod tests;
