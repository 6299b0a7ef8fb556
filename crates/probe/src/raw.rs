//! The thin unsafe layer: the only place in clmulti that calls `cl-sys`.
//!
//! Each function wraps one call and turns its status into a [`ClCode`] error.
//! Callers pass handles obtained from the loader in this process. Platforms and root
//! devices stay valid for the life of the process (the spec gives them no release
//! call); sub-devices live until their last [`release_device`], which
//! [`Device`](crate::Device) does on drop.

use crate::ClCode;
use cl_sys::{cl_device_id, cl_device_type, cl_platform_id, cl_uint};
use std::ffi::c_void;
use std::ptr;

/// All platform handles the ICD loader reports, in its order.
///
/// `CL_PLATFORM_NOT_FOUND_KHR (-1001)` (ocl-icd with no ICD file) comes back as an
/// empty list so callers can treat both cases the same way.
pub fn platform_ids() -> Result<Vec<cl_platform_id>, ClCode> {
    let mut count: cl_uint = 0;
    // SAFETY: a null list with zero entries is the documented way to ask for the count.
    let status = unsafe { cl_sys::clGetPlatformIDs(0, ptr::null_mut(), &mut count) };
    if status == cl_sys::CL_PLATFORM_NOT_FOUND_KHR || (status == 0 && count == 0) {
        return Ok(Vec::new());
    }
    check(status)?;
    let mut ids = vec![ptr::null_mut(); count as usize];
    // SAFETY: `ids` holds `count` writable entries.
    check(unsafe { cl_sys::clGetPlatformIDs(count, ids.as_mut_ptr(), &mut count) })?;
    ids.truncate(count as usize);
    Ok(ids)
}

/// Device handles of one type on a platform; `CL_DEVICE_NOT_FOUND (-1)` is an empty list.
///
/// # Safety
/// `platform` must be a handle returned by [`platform_ids`] in this process.
pub unsafe fn device_ids(
    platform: cl_platform_id,
    device_type: cl_device_type,
) -> Result<Vec<cl_device_id>, ClCode> {
    let mut count: cl_uint = 0;
    // SAFETY: the caller guarantees `platform`; a null list asks for the count only.
    let status =
        unsafe { cl_sys::clGetDeviceIDs(platform, device_type, 0, ptr::null_mut(), &mut count) };
    if status == cl_sys::CL_DEVICE_NOT_FOUND || (status == 0 && count == 0) {
        return Ok(Vec::new());
    }
    check(status)?;
    let mut ids = vec![ptr::null_mut(); count as usize];
    // SAFETY: `ids` holds `count` writable entries.
    check(unsafe {
        cl_sys::clGetDeviceIDs(platform, device_type, count, ids.as_mut_ptr(), &mut count)
    })?;
    ids.truncate(count as usize);
    Ok(ids)
}

/// The raw bytes of one platform property.
///
/// # Safety
/// `platform` must be a handle returned by [`platform_ids`] in this process.
pub unsafe fn platform_info(platform: cl_platform_id, param: cl_uint) -> Result<Vec<u8>, ClCode> {
    // SAFETY: forwarded contract; the closure passes buffers of the sizes it names.
    query_bytes(|size, value, size_ret| unsafe {
        cl_sys::clGetPlatformInfo(platform, param, size, value, size_ret)
    })
}

/// The raw bytes of one device property.
///
/// # Safety
/// `device` must be a handle returned by [`device_ids`] in this process.
pub unsafe fn device_info(device: cl_device_id, param: cl_uint) -> Result<Vec<u8>, ClCode> {
    // SAFETY: forwarded contract; the closure passes buffers of the sizes it names.
    query_bytes(|size, value, size_ret| unsafe {
        cl_sys::clGetDeviceInfo(device, param, size, value, size_ret)
    })
}

/// Partitions `device` (`clCreateSubDevices`); `properties` is a zero-terminated
/// partition property list such as `[CL_DEVICE_PARTITION_EQUALLY, 1, 0]`.
/// The caller owns one reference to each returned sub-device.
///
/// # Safety
/// `device` must be a live device handle of this process, and `properties` must end
/// with a 0 entry.
pub unsafe fn create_sub_devices(
    device: cl_device_id,
    properties: &[isize],
) -> Result<Vec<cl_device_id>, ClCode> {
    let mut count: cl_uint = 0;
    // SAFETY: the caller guarantees `device` and the list's terminator; a null output
    // list asks for the count only.
    check(unsafe {
        cl_sys::clCreateSubDevices(device, properties.as_ptr(), 0, ptr::null_mut(), &mut count)
    })?;
    let mut ids = vec![ptr::null_mut(); count as usize];
    // SAFETY: `ids` holds `count` writable entries.
    check(unsafe {
        cl_sys::clCreateSubDevices(
            device,
            properties.as_ptr(),
            count,
            ids.as_mut_ptr(),
            ptr::null_mut(),
        )
    })?;
    Ok(ids)
}

/// Adds a reference to a device (a no-op for root devices).
///
/// # Safety
/// `device` must be a live device handle of this process.
pub unsafe fn retain_device(device: cl_device_id) -> Result<(), ClCode> {
    // SAFETY: forwarded contract.
    check(unsafe { cl_sys::clRetainDevice(device) })
}

/// Drops a reference to a device (a no-op for root devices).
///
/// # Safety
/// `device` must be a live device handle of this process whose reference the
/// caller owns; it must not be used after its last release.
pub unsafe fn release_device(device: cl_device_id) -> Result<(), ClCode> {
    // SAFETY: forwarded contract.
    check(unsafe { cl_sys::clReleaseDevice(device) })
}

/// `clCreateBuffer` without a host pointer, called as a C program calls it (straight
/// into the ICD loader): the allocation loop's one call per buffer, where a wrapper's
/// every instruction shows in the rate of a runtime that creates a buffer in 400 ns.
///
/// # Safety
/// `context` must be a live context of this process.
#[inline]
pub unsafe fn create_buffer(
    context: cl_sys::cl_context,
    flags: cl_sys::cl_mem_flags,
    size: usize,
) -> Result<cl_sys::cl_mem, ClCode> {
    let mut status = cl_sys::CL_SUCCESS;
    // SAFETY: forwarded contract; no host pointer, a writable status.
    let mem = unsafe { cl_sys::clCreateBuffer(context, flags, size, ptr::null_mut(), &mut status) };
    check(status).map(|()| mem)
}

/// `clReleaseMemObject`, as a C program calls it.
///
/// # Safety
/// `mem` must be a live memory object whose reference the caller owns; it must not be
/// used after its last release.
#[inline]
pub unsafe fn release_mem_object(mem: cl_sys::cl_mem) -> Result<(), ClCode> {
    // SAFETY: forwarded contract.
    check(unsafe { cl_sys::clReleaseMemObject(mem) })
}

/// `clRetainMemObject`: one more reference, for the caller to release.
///
/// # Safety
/// `mem` must be a live memory object.
#[inline]
pub unsafe fn retain_mem_object(mem: cl_sys::cl_mem) -> Result<(), ClCode> {
    // SAFETY: forwarded contract.
    check(unsafe { cl_sys::clRetainMemObject(mem) })
}

/// `clWaitForEvents` on events of one context.
///
/// # Safety
/// Every event must be live, and all of one context.
pub unsafe fn wait_for_events(events: &[cl_sys::cl_event]) -> Result<(), ClCode> {
    let count = cl_uint::try_from(events.len()).map_err(|_| ClCode(cl_sys::CL_INVALID_VALUE))?;
    // SAFETY: forwarded contract; `count` events at the slice's start.
    check(unsafe { cl_sys::clWaitForEvents(count, events.as_ptr()) })
}

/// `clCreateBuffer` with a host pointer (`CL_MEM_USE_HOST_PTR`, `CL_MEM_COPY_HOST_PTR`)
/// or without one (null).
///
/// # Safety
/// `context` must be a live context of this process; `host_ptr` null or valid for
/// `size` bytes as `flags` ask (for `CL_MEM_USE_HOST_PTR`, for the buffer's life).
#[inline]
pub unsafe fn create_buffer_from(
    context: cl_sys::cl_context,
    flags: cl_sys::cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
) -> Result<cl_sys::cl_mem, ClCode> {
    let mut status = cl_sys::CL_SUCCESS;
    // SAFETY: forwarded contract; a writable status.
    let mem = unsafe { cl_sys::clCreateBuffer(context, flags, size, host_ptr, &mut status) };
    check(status).map(|()| mem)
}

/// `cl_mem_properties` (OpenCL 3.0).
pub type MemProperties = cl_sys::cl_ulong;

extern "system" {
    // OpenCL 3.0, which cl-sys does not declare; the ICD loader clmulti links exports it.
    fn clCreateBufferWithProperties(
        context: cl_sys::cl_context,
        properties: *const MemProperties,
        flags: cl_sys::cl_mem_flags,
        size: usize,
        host_ptr: *mut c_void,
        errcode_ret: *mut cl_sys::cl_int,
    ) -> cl_sys::cl_mem;
}

/// `clCreateBufferWithProperties` (OpenCL 3.0): `properties` zero-terminated.
///
/// # Safety
/// As [`create_buffer_from`]; `properties` ends with 0.
#[inline]
pub unsafe fn create_buffer_with_properties(
    context: cl_sys::cl_context,
    properties: &[MemProperties],
    flags: cl_sys::cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
) -> Result<cl_sys::cl_mem, ClCode> {
    debug_assert_eq!(properties.last(), Some(&0));
    let mut status = cl_sys::CL_SUCCESS;
    // SAFETY: forwarded contract; zero-terminated properties, a writable status.
    let mem = unsafe {
        clCreateBufferWithProperties(
            context,
            properties.as_ptr(),
            flags,
            size,
            host_ptr,
            &mut status,
        )
    };
    check(status).map(|()| mem)
}

/// `clCreateSubBuffer` of the region `origin..origin + size` of `buffer`, with its
/// parent's flags.
///
/// # Safety
/// `buffer` must be a live buffer (not a sub-buffer) that holds the region, `origin`
/// aligned to the device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN`.
#[inline]
pub unsafe fn create_sub_buffer(
    buffer: cl_sys::cl_mem,
    origin: usize,
    size: usize,
) -> Result<cl_sys::cl_mem, ClCode> {
    let region = cl_sys::cl_buffer_region { origin, size };
    let mut status = cl_sys::CL_SUCCESS;
    // SAFETY: forwarded contract; the region outlives the call.
    let mem = unsafe {
        cl_sys::clCreateSubBuffer(
            buffer,
            0,
            cl_sys::CL_BUFFER_CREATE_TYPE_REGION,
            (&region as *const cl_sys::cl_buffer_region).cast(),
            &mut status,
        )
    };
    check(status).map(|()| mem)
}

/// `clEnqueueFillBuffer` of `size` bytes of `buffer` with `pattern`; the event, for
/// the caller to release.
///
/// # Safety
/// `queue` and `buffer` must be live and of one context; `pattern` must stay valid
/// until the fill completes.
#[inline]
pub unsafe fn enqueue_fill_buffer(
    queue: cl_sys::cl_command_queue,
    buffer: cl_sys::cl_mem,
    pattern: &[u8],
    size: usize,
) -> Result<cl_sys::cl_event, ClCode> {
    let mut event = ptr::null_mut();
    // SAFETY: forwarded contract; no wait list, a writable event.
    check(unsafe {
        cl_sys::clEnqueueFillBuffer(
            queue,
            buffer,
            pattern.as_ptr().cast(),
            pattern.len(),
            0,
            size,
            0,
            ptr::null(),
            &mut event,
        )
    })
    .map(|()| event)
}

/// `clEnqueueMigrateMemObjects` of one buffer to `queue`'s device; the event, for the
/// caller to release.
///
/// # Safety
/// `queue` and `buffer` must be live and of one context.
#[inline]
pub unsafe fn enqueue_migrate_mem_object(
    queue: cl_sys::cl_command_queue,
    buffer: cl_sys::cl_mem,
) -> Result<cl_sys::cl_event, ClCode> {
    let mut event = ptr::null_mut();
    // SAFETY: forwarded contract; one object, no wait list, a writable event.
    check(unsafe {
        cl_sys::clEnqueueMigrateMemObjects(queue, 1, &buffer, 0, 0, ptr::null(), &mut event)
    })
    .map(|()| event)
}

/// The two-call size-then-value pattern shared by every `clGet*Info`.
fn query_bytes(
    mut call: impl FnMut(usize, *mut c_void, *mut usize) -> i32,
) -> Result<Vec<u8>, ClCode> {
    let mut size = 0usize;
    check(call(0, ptr::null_mut(), &mut size))?;
    let mut bytes = vec![0u8; size];
    if size > 0 {
        check(call(size, bytes.as_mut_ptr().cast(), ptr::null_mut()))?;
    }
    Ok(bytes)
}

fn check(status: i32) -> Result<(), ClCode> {
    if status == cl_sys::CL_SUCCESS {
        Ok(())
    } else {
        Err(ClCode(status))
    }
}

/// Enqueues a one-dimensional kernel launch of `global` work-items in groups of
/// `local` without asking for an event: nothing to wait on but the queue
/// (`clFinish`), and no event object for the runtime to make (OpenCL 3.0,
/// clEnqueueNDRangeKernel: "event ... can be NULL"). What the dAxpy runner's untimed
/// launches use.
///
/// # Safety
/// `queue` and `kernel` must be live handles of one context, the kernel's arguments
/// set and valid until the launch completes.
pub unsafe fn enqueue_kernel_1d_without_event(
    queue: cl_sys::cl_command_queue,
    kernel: cl_sys::cl_kernel,
    global: usize,
    local: usize,
) -> Result<(), ClCode> {
    // SAFETY: the caller's handles; the sizes point at locals that outlive the call,
    // and a null event list with no events asks for no event.
    check(unsafe {
        cl_sys::clEnqueueNDRangeKernel(
            queue,
            kernel,
            1,
            ptr::null(),
            &global,
            &local,
            0,
            ptr::null(),
            ptr::null_mut(),
        )
    })
}
