//! The xe driver (Linux's driver for Intel GPUs since Lunar Lake and Battlemage), as
//! it answers on N Arc B580s (Battlemage G21, PCI id 0xe20b, 12 GiB of VRAM each; what
//! the device is comes from its entry in the model table, [`crate::config::B580`]):
//! the ioctl table of `xe_drm.h` and the DRM core's syncobjs, the device queries, the
//! sysfs files and fdinfo xe lays out.
//!
//! NEO 26 picks its xe code path (`IoctlHelperXe`) when the render node's
//! `DRM_IOCTL_VERSION` says "xe" (shared/source/os_interface/linux/drm_neo.cpp). What
//! xe does that i915 does not, and this module keeps: GEM objects are created with a
//! placement mask and backed at creation unless `DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING`
//! asks for backing at the first bind; the GPU sees memory only through mappings the
//! process binds in a VM (`VM_BIND`); work goes to exec queues with the batch's GPU
//! address, and completes by writing user fences (a value at an address) the process
//! waits on (`WAIT_USER_FENCE`).
//!
//! As the kernel does, a request is found by its number alone: its size decides how
//! many bytes are copied in and out, the rest read as zero ([`with_arg`]).

mod exec;
mod query;
mod syncobj;
pub mod sysfs;
mod table;
mod vm;

use crate::ioctl::{copy_field, get_cap, Host};
use crate::model::{Driver, Errno, XeCreate};
use clmulti_drm_uapi::*;
use std::ffi::c_void;

/// Graphics IP (GMD_ID): Xe2_HPG 20.01; the revision is invented.
pub const GRAPHICS_IP: (u16, u16, u16) = (20, 1, 4);
/// Media IP (GMD_ID): Xe2_HPM 13.01.
pub const MEDIA_IP: (u16, u16, u16) = (13, 1, 0);

/// What an xe ioctl asks of its caller after the driver answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Done: the ioctl's return value.
    Done(i32),
    /// `WAIT_USER_FENCE` whose condition did not hold: wait (without the driver's
    /// lock) as [`FenceWait::wait`] does.
    Wait(exec::FenceWait),
}

pub use exec::FenceWait;

/// Answers `request` on an xe render-node descriptor.
///
/// # Safety
/// `arg` is what the caller passed to `ioctl`: for every request in the table, a
/// pointer to as many bytes of the request's structure as the request's size says,
/// valid for reads and writes, whose embedded pointers are valid as the uAPI defines
/// them. Unknown requests do not touch `arg`.
pub unsafe fn render_ioctl(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    request: u64,
    arg: *mut c_void,
) -> Result<Reply, Errno> {
    if arg.is_null() {
        return Err(libc::EFAULT);
    }
    let Some(nr) = drm_nr(request) else {
        return Err(libc::ENOTTY);
    };
    // SAFETY: the caller's contract, for each request's structure.
    unsafe {
        if let Some(xe) = xe_nr(request) {
            return table::xe_ioctl(driver, host, fd, xe, request, arg);
        }
        match nr {
            0x00 => with_arg(arg, request, |v: &mut DrmVersionArg| version(v)),
            0x09 => with_arg(arg, request, |c: &mut DrmGemClose| {
                driver.close_handle(fd, c.handle).map(|()| 0)
            }),
            0x0c => with_arg(arg, request, |c: &mut DrmGetCap| get_cap(c)),
            0x0d => Ok(Reply::Done(0)),
            0x2d => with_arg(arg, request, |p: &mut DrmPrimeHandle| {
                export(driver, host, fd, p)
            }),
            0x2e => with_arg(arg, request, |p: &mut DrmPrimeHandle| {
                p.handle = driver.import(fd, p.fd)?;
                Ok(0)
            }),
            0xbf..=0xcd => syncobj::ioctl(driver, fd, nr, request, arg),
            _ => Err(libc::ENOTTY),
        }
    }
}

/// `DRM_IOCTL_VERSION`'s structure (the same as [`DrmVersion`], `Default` for the copy).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct DrmVersionArg(DrmVersion);

impl Default for DrmVersionArg {
    fn default() -> Self {
        Self(DrmVersion {
            version_major: 0,
            version_minor: 0,
            version_patchlevel: 0,
            name_len: 0,
            name: std::ptr::null_mut(),
            date_len: 0,
            date: std::ptr::null_mut(),
            desc_len: 0,
            desc: std::ptr::null_mut(),
        })
    }
}

/// xe's version: 1.1.0, "xe", "Intel Xe Graphics" (xe_drv.h); the date is "0" since
/// drivers lost theirs (Linux 6.14).
fn version(v: &mut DrmVersionArg) -> Result<i32, Errno> {
    let v = &mut v.0;
    (v.version_major, v.version_minor, v.version_patchlevel) = (1, 1, 0);
    // SAFETY: the version's string pointers are null or valid for their lengths (the
    // ioctl's contract).
    unsafe {
        v.name_len = copy_field(v.name, v.name_len, "xe");
        v.date_len = copy_field(v.date, v.date_len, "0");
        v.desc_len = copy_field(v.desc, v.desc_len, "Intel Xe Graphics");
    }
    Ok(0)
}

fn export(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    p: &mut DrmPrimeHandle,
) -> Result<i32, Errno> {
    if p.flags & !(DRM_CLOEXEC | DRM_RDWR) != 0 {
        return Err(libc::EINVAL);
    }
    // xe_gem_prime_export: an object private to a VM is never shared.
    if !driver.xe_exportable(fd, p.handle)? {
        return Err(libc::EPERM);
    }
    let object = driver.export(fd, p.handle)?;
    let dmabuf = host.new_dmabuf_fd(p.flags & DRM_CLOEXEC != 0)?;
    driver.exported(object, dmabuf);
    p.fd = dmabuf;
    Ok(0)
}

/// `DRM_RDWR` (`O_RDWR`), the other flag `PRIME_HANDLE_TO_FD` takes.
const DRM_RDWR: u32 = libc::O_RDWR as u32;

/// Copies the request's structure in as the kernel's `drm_ioctl` does (as many bytes
/// as the request's size, at most the structure's, zeros after), runs `f` on it, and
/// copies it back for requests that return data.
///
/// # Safety
/// `arg` is valid for reads and writes of the request's size.
unsafe fn with_arg<T: Copy + Default>(
    arg: *mut c_void,
    request: u64,
    f: impl FnOnce(&mut T) -> Result<i32, Errno>,
) -> Result<Reply, Errno> {
    // SAFETY: the caller's contract.
    unsafe { with_arg_reply(arg, request, |t: &mut T| f(t).map(Reply::Done)) }
}

/// [`with_arg`] for handlers that may ask for a wait.
///
/// # Safety
/// As [`with_arg`].
unsafe fn with_arg_reply<T: Copy + Default>(
    arg: *mut c_void,
    request: u64,
    f: impl FnOnce(&mut T) -> Result<Reply, Errno>,
) -> Result<Reply, Errno> {
    let user_size = ((request >> 16) & 0x3fff) as usize;
    let n = user_size.min(size_of::<T>());
    let mut value = T::default();
    // IOC_WRITE: the caller passes data in.
    if request & (1 << 30) != 0 {
        // SAFETY: `n` bytes of the caller's structure into a `T` of at least `n`.
        unsafe {
            std::ptr::copy_nonoverlapping(arg as *const u8, (&mut value as *mut T).cast(), n)
        };
    }
    let reply = f(&mut value);
    // IOC_READ: the caller reads data back (the kernel copies even after an error).
    if request & (1 << 31) != 0 {
        // SAFETY: as above, the other way.
        unsafe { std::ptr::copy_nonoverlapping((&value as *const T).cast(), arg as *mut u8, n) };
    }
    reply
}

/// The GEM object `DRM_IOCTL_XE_GEM_CREATE` asks for, checked as
/// `xe_gem_create_ioctl` checks it.
fn gem_create(driver: &mut Driver, fd: i32, c: &mut XeGemCreate) -> Result<i32, Errno> {
    let known = DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING
        | DRM_XE_GEM_CREATE_FLAG_SCANOUT
        | DRM_XE_GEM_CREATE_FLAG_NEEDS_VISIBLE_VRAM
        | DRM_XE_GEM_CREATE_FLAG_NO_COMPRESSION;
    // Xe2 has no protected content on a B580: no extension applies.
    if c.extensions != 0 || c.flags & !known != 0 || c.pad != [0; 3] || c.reserved != [0; 2] {
        return Err(libc::EINVAL);
    }
    // Bit 0: system memory; bit 1: VRAM (query_mem_regions' instances).
    if c.placement == 0 || c.placement & !0b11 != 0 {
        return Err(libc::EINVAL);
    }
    let vram = c.placement & 0b10 != 0;
    if c.flags & DRM_XE_GEM_CREATE_FLAG_NEEDS_VISIBLE_VRAM != 0 && !vram {
        return Err(libc::EINVAL);
    }
    // Write-back caching only for system memory on a discrete GPU.
    match c.cpu_caching {
        DRM_XE_GEM_CPU_CACHING_WC => {}
        DRM_XE_GEM_CPU_CACHING_WB if !vram => {}
        _ => return Err(libc::EINVAL),
    }
    // Both regions' pages are 4 KiB on Xe2 (no XE_VRAM_FLAGS_NEED64K).
    if c.size == 0 || c.size % 4096 != 0 {
        return Err(libc::EINVAL);
    }
    c.handle = driver.xe_create(
        fd,
        XeCreate {
            size: c.size,
            placement: c.placement,
            flags: c.flags,
            vm_id: c.vm_id,
        },
    )?;
    Ok(0)
}

fn mmap_offset(driver: &mut Driver, fd: i32, m: &mut XeGemMmapOffset) -> Result<i32, Errno> {
    if m.extensions != 0
        || m.reserved != [0; 2]
        || m.flags & !DRM_XE_MMAP_OFFSET_FLAG_PCI_BARRIER != 0
    {
        return Err(libc::EINVAL);
    }
    if m.flags & DRM_XE_MMAP_OFFSET_FLAG_PCI_BARRIER != 0 {
        // A page of the BAR that orders writes: nothing in this model to map.
        return Err(libc::EINVAL);
    }
    m.offset = driver.mmap_offset(fd, m.handle)?;
    Ok(0)
}

#[cfg(test)]
mod tests;
