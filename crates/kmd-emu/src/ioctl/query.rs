//! What i915 tells a client about the device: GETPARAM values and the QUERY items
//! (topology, engines, memory regions) of the model presented ([`Hardware`]).

use super::*;
use crate::config::Hardware;

/// The GETPARAM answers of i915 on `hw` (i915_getparam_ioctl).
fn param_value(hw: &Hardware, param: i32) -> Option<i32> {
    let eus = (hw.subslices * hw.eus_per_subslice) as i32;
    Some(match param {
        I915_PARAM_CHIPSET_ID => i32::from(hw.model.pci_id),
        I915_PARAM_REVISION => i32::from(hw.revision),
        I915_PARAM_SUBSLICE_TOTAL => hw.subslices as i32,
        I915_PARAM_EU_TOTAL => eus,
        I915_PARAM_HAS_EXEC_SOFTPIN => 1,
        I915_PARAM_HAS_POOLED_EU | I915_PARAM_MIN_EU_IN_POOL => 0,
        I915_PARAM_HAS_SCHEDULER => SCHEDULER_CAPS,
        I915_PARAM_CS_TIMESTAMP_FREQUENCY => hw.cs_timestamp_hz as i32,
        I915_PARAM_HAS_ALIASING_PPGTT => 3,
        I915_PARAM_MMAP_VERSION => 5,
        I915_PARAM_MMAP_GTT_VERSION => 4,
        I915_PARAM_SLICE_MASK => 1,
        I915_PARAM_SUBSLICE_MASK => (1i64 << hw.subslices) as i32 - 1,
        // HAS_LLC: integrated parts share the CPU's last-level cache.
        14 => i32::from(hw.has_llc),
        // Render, copy, video, video enhance, compute: each isolated.
        I915_PARAM_HAS_CONTEXT_ISOLATION => 0x1f,
        I915_PARAM_HAS_EXEC_CAPTURE | I915_PARAM_HAS_EXEC_TIMELINE_FENCES => 1,
        I915_PARAM_HAS_USERPTR_PROBE => 1,
        // HAS_GEM, HAS_EXECBUF2, HAS_BSD, HAS_BLT, ..., HAS_EXEC_BATCH_FIRST,
        // HAS_EXEC_FENCE_ARRAY, HAS_EXEC_SUBMIT_FENCE: the features every current
        // i915 reports as present.
        5 | 9..=13 | 15 | 16 | 19 | 21 | 22 | 24..=26 | 29 | 31 | 43 | 44 | 48 | 49 | 53 => 1,
        // HAS_SEMAPHORES, HAS_WT, HAS_EXEC_CONSTANTS, MMAP_GTT_COHERENT.
        17 | 20 | 27 | 52 => 0,
        _ => return None,
    })
}

/// # Safety
/// `get.value` is valid for a write of one `int`.
pub(super) unsafe fn getparam(hw: &Hardware, get: &GetParam) -> Result<i32, Errno> {
    let value = param_value(hw, get.param).ok_or(libc::EINVAL)?;
    if get.value.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller's contract.
    unsafe { *get.value = value };
    Ok(0)
}

/// The bytes of one query's answer, or the errno the kernel puts in its length.
pub(super) fn query_answer(config: &Config, id: u64, flags: u32) -> Result<Vec<u8>, Errno> {
    if flags != 0 && id != DRM_I915_QUERY_GEOMETRY_SUBSLICES {
        return Err(libc::EINVAL);
    }
    match id {
        // Geometry subslices exist from Xe-HP on (of the models, the A770's DG2).
        DRM_I915_QUERY_GEOMETRY_SUBSLICES if !config.hardware.discrete() => Err(libc::ENODEV),
        DRM_I915_QUERY_TOPOLOGY_INFO | DRM_I915_QUERY_GEOMETRY_SUBSLICES => {
            Ok(topology(config.hardware))
        }
        DRM_I915_QUERY_ENGINE_INFO => Ok(engines(config.hardware)),
        DRM_I915_QUERY_MEMORY_REGIONS => Ok(memory_regions(config)),
        // Shown only with GuC firmware that carries the table; NEO does without it.
        DRM_I915_QUERY_HWCONFIG_BLOB => Err(libc::ENODEV),
        _ => Err(libc::EINVAL),
    }
}

/// `drm_i915_query_topology_info`: one slice of `max_subslices` (the first
/// `subslices` enabled, each with all its EUs).
fn topology(hw: &Hardware) -> Vec<u8> {
    let subslices = hw.max_subslices as usize;
    let enabled = hw.subslices as usize;
    let eus = hw.eus_per_subslice as usize;
    let subslice_stride = subslices.div_ceil(8);
    let eu_stride = eus.div_ceil(8);
    let subslice_offset = 1;
    let eu_offset = subslice_offset + subslice_stride;
    let header = [
        0u16,
        1,
        subslices as u16,
        eus as u16,
        subslice_offset as u16,
        subslice_stride as u16,
        eu_offset as u16,
        eu_stride as u16,
    ];
    let mut out: Vec<u8> = header.iter().flat_map(|v| v.to_ne_bytes()).collect();
    out.push(1);
    out.extend((0..subslice_stride).map(|byte| mask_byte(enabled, byte)));
    for subslice in 0..subslices {
        let all = if subslice < enabled { eus } else { 0 };
        out.extend((0..eu_stride).map(|byte| mask_byte(all, byte)));
    }
    out
}

/// Byte `byte` of a mask whose first `bits` bits are set.
fn mask_byte(bits: usize, byte: usize) -> u8 {
    match bits.saturating_sub(byte * 8) {
        0 => 0,
        n if n >= 8 => 0xff,
        n => (1u8 << n) - 1,
    }
}

/// `drm_i915_query_engine_info`: the model's engines.
fn engines(hw: &Hardware) -> Vec<u8> {
    let list = hw.engines;
    let mut out = Vec::with_capacity(16 + 56 * list.len());
    out.extend((list.len() as u32).to_ne_bytes());
    out.extend([0u8; 12]);
    for &(class, instance) in list {
        out.extend(class.to_ne_bytes());
        out.extend(instance.to_ne_bytes());
        out.extend([0u8; 4]);
        out.extend(I915_ENGINE_INFO_HAS_LOGICAL_INSTANCE.to_ne_bytes());
        out.extend(0u64.to_ne_bytes()); // capabilities
        out.extend(instance.to_ne_bytes()); // logical instance
        out.extend([0u8; 6 + 24]);
    }
    out
}

/// `drm_i915_query_memory_regions`: system memory, and the device's own (16 GiB on an
/// A770) where it has any.
fn memory_regions(config: &Config) -> Vec<u8> {
    let local = config.devices.first().map_or(0, |d| d.local_bytes);
    let mut regions = vec![(I915_MEMORY_CLASS_SYSTEM, config.system_bytes)];
    if config.hardware.discrete() {
        regions.push((I915_MEMORY_CLASS_DEVICE, local));
    }
    let mut out = Vec::with_capacity(16 + 88 * regions.len());
    out.extend((regions.len() as u32).to_ne_bytes());
    out.extend([0u8; 12]);
    for (class, size) in regions {
        out.extend(class.to_ne_bytes());
        out.extend(0u16.to_ne_bytes());
        out.extend([0u8; 4]);
        out.extend(size.to_ne_bytes()); // probed
        out.extend(size.to_ne_bytes()); // unallocated (i915 reports what is free)
        out.extend(size.to_ne_bytes()); // probed CPU-visible (resizable BAR)
        out.extend(size.to_ne_bytes()); // unallocated CPU-visible
        out.extend([0u8; 48]);
    }
    out
}
