//! The C entry points: the two the loader calls (`clGetLayerInfo`, `clInitLayer`)
//! and the calls the layer intercepts. Everything else goes straight to the runtime.

use crate::state::{Layer, Refused};
use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::cl_layer::{
    cl_layer_api_version, cl_layer_info, CL_LAYER_API_VERSION, CL_LAYER_API_VERSION_100,
};
use opencl_sys::*;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The table the layer hands the loader: the runtime's, with its overrides.
static DISPATCH: OnceLock<cl_icd_dispatch> = OnceLock::new();
static LAYER: Mutex<Option<Layer>> = Mutex::new(None);

fn layer() -> MutexGuard<'static, Option<Layer>> {
    LAYER.lock().unwrap_or_else(|e| e.into_inner())
}

/// # Safety
/// `ret`, when not null, points to writable memory for one `cl_int`.
unsafe fn set(ret: *mut cl_int, value: cl_int) {
    if !ret.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *ret = value };
    }
}

/// Reports the layer API version the layer implements.
///
/// # Safety
/// The loader's contract: `param_value` holds `param_value_size` writable bytes,
/// `param_value_size_ret` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn clGetLayerInfo(
    param_name: cl_layer_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    if param_name != CL_LAYER_API_VERSION {
        return CL_INVALID_VALUE;
    }
    let version: cl_layer_api_version = CL_LAYER_API_VERSION_100;
    let size = std::mem::size_of::<cl_layer_api_version>();
    if !param_value.is_null() {
        if param_value_size < size {
            return CL_INVALID_VALUE;
        }
        // SAFETY: the loader gave `param_value_size` >= `size` writable bytes.
        unsafe { *(param_value as *mut cl_layer_api_version) = version };
    }
    if !param_value_size_ret.is_null() {
        // SAFETY: the loader's contract.
        unsafe { *param_value_size_ret = size };
    }
    CL_SUCCESS
}

/// Takes the runtime's dispatch table and returns the layer's.
///
/// # Safety
/// The loader's contract: `target_dispatch` points to a table of `num_entries`
/// function pointers that lives as long as the process; the out-pointers are writable.
#[no_mangle]
pub unsafe extern "C" fn clInitLayer(
    num_entries: cl_uint,
    target_dispatch: *const cl_icd_dispatch,
    num_entries_ret: *mut cl_uint,
    layer_dispatch_ret: *mut *const cl_icd_dispatch,
) -> cl_int {
    if target_dispatch.is_null() || num_entries_ret.is_null() || layer_dispatch_ret.is_null() {
        return CL_INVALID_VALUE;
    }
    // The loader's table may be older (shorter) than these headers' table: copy the
    // entries both know, leave the rest empty, and say how many there are.
    let ours = std::mem::size_of::<cl_icd_dispatch>() / std::mem::size_of::<usize>();
    let entries = (num_entries as usize).min(ours);
    let needed = 1 + std::mem::offset_of!(cl_icd_dispatch, clCreateBufferWithProperties)
        / std::mem::size_of::<usize>();
    if entries < needed {
        return CL_INVALID_VALUE;
    }
    // SAFETY: the loader's table lives as long as the process.
    let next: &'static cl_icd_dispatch = unsafe { &*target_dispatch };
    let table = DISPATCH.get_or_init(|| {
        // SAFETY: every field is an `Option` of a function pointer, for which all
        // zeroes is `None`.
        let mut table: cl_icd_dispatch = unsafe { std::mem::zeroed() };
        // SAFETY: `entries` pointer-sized words, copied from a table that holds at
        // least that many into one that holds at least that many.
        unsafe {
            std::ptr::copy_nonoverlapping(
                target_dispatch as *const usize,
                (&mut table as *mut cl_icd_dispatch).cast::<usize>(),
                entries,
            );
        }
        table.clCreateBuffer = Some(create_buffer);
        table.clCreateBufferWithProperties = Some(create_buffer_with_properties);
        table.clReleaseMemObject = Some(release_mem_object);
        table.clReleaseContext = Some(release_context);
        table.clGetDeviceInfo = Some(get_device_info);
        table.clGetPlatformInfo = Some(get_platform_info);
        table
    });
    *layer() = Some(Layer::new(next));
    // SAFETY: the loader's out-pointers.
    unsafe {
        *num_entries_ret = entries as cl_uint;
        *layer_dispatch_ret = table;
    }
    CL_SUCCESS
}

/// Hands a just-created buffer to the policy, or releases it and fails.
///
/// # Safety
/// `mem` is a live buffer of `context`; `errcode_ret` as for `clCreateBuffer`.
unsafe fn adopt(
    layer: &mut Layer,
    context: cl_context,
    mem: cl_mem,
    size: usize,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    match layer.adopt(context, mem, size as u64) {
        Ok(()) => {
            // SAFETY: the caller's contract.
            unsafe { set(errcode_ret, CL_SUCCESS) };
            mem
        }
        Err(Refused(code)) => {
            // SAFETY: the buffer was just created by the runtime; released once.
            unsafe { layer.next.clReleaseMemObject.map(|f| f(mem)) };
            // SAFETY: the caller's contract.
            unsafe { set(errcode_ret, code) };
            std::ptr::null_mut()
        }
    }
}

/// Creates a buffer through the runtime with `create`, then hands it to the policy.
///
/// # Safety
/// `create` makes a buffer of `size` bytes in `context` from the application's
/// arguments; `errcode_ret` as for `clCreateBuffer`.
unsafe fn create_and_adopt(
    context: cl_context,
    size: usize,
    errcode_ret: *mut cl_int,
    create: impl FnOnce(&cl_icd_dispatch, &mut cl_int) -> cl_mem,
) -> cl_mem {
    let mut guard = layer();
    let Some(layer) = guard.as_mut() else {
        // SAFETY: the application's out-pointer.
        unsafe { set(errcode_ret, CL_INVALID_OPERATION) };
        return std::ptr::null_mut();
    };
    let mut status = CL_SUCCESS;
    let mem = create(layer.next, &mut status);
    if mem.is_null() {
        // SAFETY: the application's out-pointer.
        unsafe { set(errcode_ret, status) };
        return mem;
    }
    // SAFETY: `mem` was just created in `context`.
    unsafe { adopt(layer, context, mem, size, errcode_ret) }
}

unsafe extern "C" fn create_buffer(
    context: cl_context,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the application's arguments, forwarded unchanged.
    unsafe {
        create_and_adopt(context, size, errcode_ret, |next, status| {
            next.clCreateBuffer.map_or(std::ptr::null_mut(), |f| {
                f(context, flags, size, host_ptr, status)
            })
        })
    }
}

unsafe extern "C" fn create_buffer_with_properties(
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: the application's arguments, forwarded unchanged.
    unsafe {
        create_and_adopt(context, size, errcode_ret, |next, status| {
            next.clCreateBufferWithProperties
                .map_or(std::ptr::null_mut(), |f| {
                    f(context, properties, flags, size, host_ptr, status)
                })
        })
    }
}

unsafe extern "C" fn release_mem_object(mem: cl_mem) -> cl_int {
    let mut guard = layer();
    let Some(layer) = guard.as_mut() else {
        return CL_INVALID_OPERATION;
    };
    layer.forget(mem);
    // SAFETY: the application's release, forwarded.
    unsafe {
        layer
            .next
            .clReleaseMemObject
            .map_or(CL_INVALID_OPERATION, |f| f(mem))
    }
}

unsafe extern "C" fn release_context(context: cl_context) -> cl_int {
    let mut guard = layer();
    let Some(layer) = guard.as_mut() else {
        return CL_INVALID_OPERATION;
    };
    layer.forget_context(context);
    // SAFETY: the application's release, forwarded.
    unsafe {
        layer
            .next
            .clReleaseContext
            .map_or(CL_INVALID_OPERATION, |f| f(context))
    }
}

/// Answers [`ACTIVE_QUERY`](clmulti_contract::layer::ACTIVE_QUERY) with the policy's
/// name; forwards every other query.
unsafe extern "C" fn get_platform_info(
    platform: cl_platform_id,
    param_name: cl_platform_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    let (next, policy) = {
        let guard = layer();
        match guard.as_ref() {
            Some(l) => (
                l.next,
                l.settings.as_ref().map_or("none".to_owned(), |s| s.names()),
            ),
            None => return CL_INVALID_OPERATION,
        }
    };
    if param_name != clmulti_contract::layer::ACTIVE_QUERY {
        // SAFETY: the application's arguments, forwarded unchanged.
        return unsafe {
            next.clGetPlatformInfo.map_or(CL_INVALID_OPERATION, |f| {
                f(
                    platform,
                    param_name,
                    param_value_size,
                    param_value,
                    param_value_size_ret,
                )
            })
        };
    }
    let answer = [policy.as_bytes(), b"\0"].concat();
    if !param_value.is_null() {
        if param_value_size < answer.len() {
            return CL_INVALID_VALUE;
        }
        // SAFETY: the caller gave `param_value_size` >= `answer.len()` writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(answer.as_ptr(), param_value.cast(), answer.len()) };
    }
    if !param_value_size_ret.is_null() {
        // SAFETY: the application's out-pointer.
        unsafe { *param_value_size_ret = answer.len() };
    }
    CL_SUCCESS
}

unsafe extern "C" fn get_device_info(
    device: cl_device_id,
    param_name: cl_device_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    let (next, memory) = {
        let guard = layer();
        match guard.as_ref() {
            Some(l) => (l.next, l.device_memory()),
            None => return CL_INVALID_OPERATION,
        }
    };
    // SAFETY: the application's arguments, forwarded unchanged.
    let status = unsafe {
        next.clGetDeviceInfo.map_or(CL_INVALID_OPERATION, |f| {
            f(
                device,
                param_name,
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        })
    };
    let sized = matches!(
        param_name,
        CL_DEVICE_GLOBAL_MEM_SIZE | CL_DEVICE_MAX_MEM_ALLOC_SIZE
    );
    if let (Some(memory), true, CL_SUCCESS, false) = (memory, sized, status, param_value.is_null())
    {
        if param_value_size >= std::mem::size_of::<cl_ulong>() {
            let value = param_value as *mut cl_ulong;
            // SAFETY: the runtime just wrote a cl_ulong there.
            unsafe {
                *value = if param_name == CL_DEVICE_GLOBAL_MEM_SIZE {
                    memory
                } else {
                    (*value).min(memory)
                };
            }
        }
    }
    status
}
