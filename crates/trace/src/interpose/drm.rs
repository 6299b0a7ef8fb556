//! `ioctl`: counted by request, and for DRM descriptors by the driver behind them and
//! (for i915's GEM_CREATE_EXT) the memory region asked for.

use super::*;

/// Each descriptor's DRM driver, once asked (`0`: not asked; else the code + 1).
pub(super) static DRIVERS: [AtomicU8; DRIVER_FDS] = [const { AtomicU8::new(0) }; DRIVER_FDS];

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
    let mut version = clmulti_drm_uapi::DrmVersion::asking_name(&mut name);
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
    let Some(real) = libc_next!("ioctl" as Ioctl) else {
        return enosys(-1);
    };
    if crate::count::own() {
        // SAFETY: passing the caller's arguments on.
        return unsafe { real(fd, request, arg) };
    }
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
    count(names::ioctl_key(request64, driver, region));
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
