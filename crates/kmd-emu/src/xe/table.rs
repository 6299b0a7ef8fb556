//! xe's own requests (`DRM_COMMAND_BASE` + `DRM_XE_*`), each to its handler.

use super::*;

/// Answers xe request number `nr` (`DRM_XE_DEVICE_QUERY`...).
///
/// # Safety
/// As [`render_ioctl`].
pub(super) unsafe fn xe_ioctl(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    nr: u8,
    request: u64,
    arg: *mut c_void,
) -> Result<Reply, Errno> {
    // SAFETY: the caller's contract, for each request's structure.
    unsafe {
        match nr {
            DRM_XE_DEVICE_QUERY => with_arg(arg, request, |q: &mut XeDeviceQuery| {
                query::device_query(driver, host, fd, q)
            }),
            DRM_XE_GEM_CREATE => with_arg(arg, request, |c| gem_create(driver, fd, c)),
            DRM_XE_GEM_MMAP_OFFSET => with_arg(arg, request, |m| mmap_offset(driver, fd, m)),
            DRM_XE_VM_CREATE => with_arg(arg, request, |c| vm::create(driver, fd, c)),
            DRM_XE_VM_DESTROY => with_arg(arg, request, |d: &mut XeVmDestroy| {
                if d.pad != 0 || d.reserved != [0; 2] {
                    return Err(libc::EINVAL);
                }
                driver.xe_vm_destroy(fd, d.vm_id).map(|()| 0)
            }),
            DRM_XE_VM_BIND => with_arg(arg, request, |b| vm::bind(driver, host, fd, b)),
            DRM_XE_EXEC_QUEUE_CREATE => with_arg(arg, request, |c| vm::queue_create(driver, fd, c)),
            DRM_XE_EXEC_QUEUE_DESTROY => with_arg(arg, request, |d: &mut XeExecQueueDestroy| {
                if d.pad != 0 || d.reserved != [0; 2] {
                    return Err(libc::EINVAL);
                }
                driver.xe_queue_destroy(fd, d.exec_queue_id).map(|()| 0)
            }),
            DRM_XE_EXEC_QUEUE_GET_PROPERTY => {
                with_arg(arg, request, |p: &mut XeExecQueueProperty| {
                    driver.xe_queue(fd, p.exec_queue_id)?;
                    match p.property {
                        // Never banned: nothing hangs without a GPU.
                        DRM_XE_EXEC_QUEUE_GET_PROPERTY_BAN => p.value = 0,
                        _ => return Err(libc::EINVAL),
                    }
                    Ok(0)
                })
            }
            DRM_XE_EXEC_QUEUE_SET_PROPERTY => {
                with_arg(arg, request, |p: &mut XeExecQueueProperty| {
                    driver.xe_queue(fd, p.exec_queue_id)?;
                    // Only queues of a multi-queue group take properties after
                    // creation; a B580 has none.
                    Err(libc::EINVAL)
                })
            }
            DRM_XE_EXEC => with_arg(arg, request, |e| exec::exec(driver, host, fd, e)),
            DRM_XE_WAIT_USER_FENCE => with_arg_reply(arg, request, |w| {
                exec::wait_user_fence(driver, host, fd, arg, w)
            }),
            DRM_XE_MADVISE => with_arg(arg, request, |m| vm::madvise(driver, fd, m)),
            // OA and EU-stall streams (perf): not modelled.
            DRM_XE_OBSERVATION => Err(libc::ENODEV),
            // Memory attributes of a fault-mode VM's ranges: none are kept.
            DRM_XE_VM_QUERY_MEM_RANGE_ATTRS | DRM_XE_VM_GET_PROPERTY => Err(libc::EINVAL),
            _ => Err(libc::ENOTTY),
        }
    }
}
