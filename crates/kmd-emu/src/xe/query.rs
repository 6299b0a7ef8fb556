//! `DRM_IOCTL_XE_DEVICE_QUERY`: what xe tells a client about a B580, each answer laid
//! out as xe_query.c lays it out. A query with `size` 0 learns the size; one with
//! another size than the answer's is refused (`EINVAL`), as xe refuses it.

use super::*;
use crate::config::{Config, Hardware};

/// The engines xe exposes (class, instance, GT): the model's, video and video-enhance
/// engines on the media GT (1), the others (render, copy, compute; the paging copy
/// engine is xe's own) on the main GT (0).
pub fn engines_of(hw: &Hardware) -> impl Iterator<Item = (u16, u16, u16)> + '_ {
    hw.engines.iter().map(|&(class, instance)| {
        let media = matches!(
            class,
            DRM_XE_ENGINE_CLASS_VIDEO_DECODE | DRM_XE_ENGINE_CLASS_VIDEO_ENHANCE
        );
        (class, instance, u16::from(media))
    })
}

/// Whether `eci` names one of the engines of `hw`.
pub fn engine_exists(hw: &Hardware, eci: &XeEngineClassInstance) -> bool {
    engines_of(hw).any(|e| e == (eci.engine_class, eci.engine_instance, eci.gt_id))
}

/// Answers one device query.
pub(super) fn device_query(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    q: &mut XeDeviceQuery,
) -> Result<i32, Errno> {
    if q.extensions != 0 || q.reserved != [0; 2] {
        return Err(libc::EINVAL);
    }
    let config = &driver.config;
    let hw = config.hardware;
    let data = match q.query {
        DRM_XE_DEVICE_QUERY_ENGINES => engines(hw),
        DRM_XE_DEVICE_QUERY_MEM_REGIONS => {
            let device = driver.device_of(fd).ok_or(libc::EBADF)?;
            mem_regions(config, driver.counts(), device)
        }
        DRM_XE_DEVICE_QUERY_CONFIG => device_config(hw),
        DRM_XE_DEVICE_QUERY_GT_LIST => gt_list(hw),
        DRM_XE_DEVICE_QUERY_HWCONFIG => hwconfig(hw),
        DRM_XE_DEVICE_QUERY_GT_TOPOLOGY => topology(hw),
        DRM_XE_DEVICE_QUERY_ENGINE_CYCLES => return engine_cycles(hw, host, q),
        DRM_XE_DEVICE_QUERY_UC_FW_VERSION => return uc_fw_version(q),
        // No OA unit is modelled: an empty list.
        DRM_XE_DEVICE_QUERY_OA_UNITS => [0u8; 16].to_vec(),
        // No protected content, no EU-stall sampling here.
        DRM_XE_DEVICE_QUERY_PXP_STATUS | DRM_XE_DEVICE_QUERY_EU_STALL => return Err(libc::ENODEV),
        _ => return Err(libc::EINVAL),
    };
    answer(q, &data)
}

/// The two-pass protocol: the size first, then the data into a buffer of that size.
fn answer(q: &mut XeDeviceQuery, data: &[u8]) -> Result<i32, Errno> {
    if q.size == 0 {
        q.size = data.len() as u32;
        return Ok(0);
    }
    if q.size as usize != data.len() {
        return Err(libc::EINVAL);
    }
    if q.data == 0 {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller gave a buffer of `size` bytes at `data` (the ioctl's contract).
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), q.data as *mut u8, data.len()) };
    Ok(0)
}

/// The GuC's hardware table (KLV: key, length in dwords, value), with the keys NEO
/// reads (shared/source/os_interface/linux/system_info.h). Values from a B580's public
/// specifications; which keys a real GuC table adds, and its CSR size, are invented.
fn hwconfig(hw: &Hardware) -> Vec<u8> {
    let entries: [(u32, u32); 9] = [
        (1, 5),                // max slices (render slices)
        (2, hw.max_subslices), // max dual-subslices (Xe2 cores)
        (3, hw.eus_per_subslice),
        (11, 4),   // memory type: GDDR6
        (15, 8),   // threads per EU
        (23, 1),   // render engines
        (24, 4),   // compute engines
        (62, 8),   // CSR size, MiB (invented)
        (65, 128), // SLM per Xe2 core, KiB
    ];
    entries
        .iter()
        .flat_map(|&(key, value)| [key, 1, value])
        .flat_map(u32::to_ne_bytes)
        .collect()
}

fn engines(hw: &Hardware) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 32 * hw.engines.len());
    out.extend((hw.engines.len() as u32).to_ne_bytes());
    out.extend([0u8; 4]);
    for (class, instance, gt) in engines_of(hw) {
        for v in [class, instance, gt, 0] {
            out.extend(v.to_ne_bytes());
        }
        out.extend([0u8; 24]);
    }
    out
}

/// System memory (TTM's GTT: half the RAM, xe_ttm_sys_mgr) and the device's VRAM;
/// `used` as root sees it (perfmon_capable), from the model's resident bytes.
fn mem_regions(config: &Config, counts: &crate::model::Counts, device: usize) -> Vec<u8> {
    use crate::model::Region;
    let used = |region| {
        counts
            .regions
            .get(&(device, region))
            .map_or(0, |c| c.resident_bytes)
    };
    // SAFETY: geteuid has no preconditions.
    let perfmon = unsafe { libc::geteuid() } == 0;
    let vram = config.devices.get(device).map_or(0, |d| d.local_bytes);
    let regions = [
        (
            DRM_XE_MEM_REGION_CLASS_SYSMEM,
            config.system_bytes / 2,
            used(Region::System),
            0,
        ),
        (
            DRM_XE_MEM_REGION_CLASS_VRAM,
            vram,
            used(Region::Local),
            vram,
        ),
    ];
    let mut out = Vec::with_capacity(8 + 88 * regions.len());
    out.extend((regions.len() as u32).to_ne_bytes());
    out.extend([0u8; 4]);
    for (instance, (class, total, used, visible)) in regions.into_iter().enumerate() {
        let used = if perfmon { used } else { 0 };
        out.extend(class.to_ne_bytes());
        out.extend((instance as u16).to_ne_bytes());
        out.extend(4096u32.to_ne_bytes()); // min_page_size: 4 KiB on Xe2
        out.extend(total.to_ne_bytes());
        out.extend(used.to_ne_bytes());
        out.extend(visible.to_ne_bytes()); // full BAR: all of VRAM CPU-visible
        out.extend(if visible > 0 { used } else { 0 }.to_ne_bytes());
        out.extend([0u8; 48]);
    }
    out
}

fn device_config(hw: &Hardware) -> Vec<u8> {
    // SAFETY: geteuid has no preconditions.
    let nice = unsafe { libc::geteuid() } == 0;
    let mut info = [0u64; 5];
    info[DRM_XE_QUERY_CONFIG_REV_AND_DEVICE_ID] =
        u64::from(hw.model.pci_id) | u64::from(hw.revision) << 16;
    info[DRM_XE_QUERY_CONFIG_FLAGS] = DRM_XE_QUERY_CONFIG_FLAG_HAS_VRAM;
    info[DRM_XE_QUERY_CONFIG_MIN_ALIGNMENT] = 4096;
    info[DRM_XE_QUERY_CONFIG_VA_BITS] = 48;
    // High priority needs CAP_SYS_NICE (root here); normal otherwise.
    info[DRM_XE_QUERY_CONFIG_MAX_EXEC_QUEUE_PRIORITY] = if nice { 2 } else { 1 };
    let mut out = Vec::with_capacity(8 + 8 * info.len());
    out.extend((info.len() as u32).to_ne_bytes());
    out.extend([0u8; 4]);
    for v in info {
        out.extend(v.to_ne_bytes());
    }
    out
}

/// The main GT (graphics) and the media GT of tile 0; VRAM (bit 1) is near both.
fn gt_list(hw: &Hardware) -> Vec<u8> {
    let gts = [
        (DRM_XE_QUERY_GT_TYPE_MAIN, 0u16, GRAPHICS_IP),
        (DRM_XE_QUERY_GT_TYPE_MEDIA, 1, MEDIA_IP),
    ];
    let mut out = Vec::with_capacity(8 + 96 * gts.len());
    out.extend((gts.len() as u32).to_ne_bytes());
    out.extend([0u8; 4]);
    for (kind, id, (major, minor, rev)) in gts {
        for v in [kind, 0, id, 0, 0, 0] {
            out.extend(v.to_ne_bytes());
        }
        out.extend((hw.cs_timestamp_hz as u32).to_ne_bytes());
        out.extend(0b10u64.to_ne_bytes()); // near: VRAM
        out.extend(0b01u64.to_ne_bytes()); // far: system memory
        for v in [major, minor, rev, 0] {
            out.extend(v.to_ne_bytes());
        }
        out.extend([0u8; 56]);
    }
    out
}

/// Per GT: DSS masks (geometry and compute), the L3 banks (main GT only) and the
/// SIMD16 EUs of each DSS.
fn topology(hw: &Hardware) -> Vec<u8> {
    let dss_mask = ((1u128 << hw.subslices) - 1).to_le_bytes();
    let eu_mask = ((1u64 << hw.eus_per_subslice) - 1).to_le_bytes();
    // Invented: twelve L3 banks (xe reads the fuses).
    let l3_mask = 0xfffu64.to_le_bytes();
    let mut out = Vec::new();
    let mut item = |gt: u16, kind: u16, mask: &[u8]| {
        out.extend(gt.to_ne_bytes());
        out.extend(kind.to_ne_bytes());
        out.extend((mask.len() as u32).to_ne_bytes());
        out.extend(mask);
    };
    item(0, DRM_XE_TOPO_DSS_GEOMETRY, &dss_mask);
    item(0, DRM_XE_TOPO_DSS_COMPUTE, &dss_mask);
    item(0, DRM_XE_TOPO_L3_BANK, &l3_mask);
    item(0, DRM_XE_TOPO_SIMD16_EU_PER_DSS, &eu_mask);
    item(1, DRM_XE_TOPO_DSS_GEOMETRY, &[0; 16]);
    item(1, DRM_XE_TOPO_DSS_COMPUTE, &[0; 16]);
    item(1, DRM_XE_TOPO_SIMD16_EU_PER_DSS, &[0; 8]);
    out
}

/// The engine's timestamp beside the CPU's clock: the caller names the engine and the
/// clock; the counter is 64 bits wide on Xe2.
fn engine_cycles(hw: &Hardware, host: &dyn Host, q: &mut XeDeviceQuery) -> Result<i32, Errno> {
    let size = size_of::<XeQueryEngineCycles>() as u32;
    if q.size == 0 {
        q.size = size;
        return Ok(0);
    }
    if q.size != size || q.data == 0 {
        return Err(libc::EINVAL);
    }
    let at = q.data as *mut XeQueryEngineCycles;
    // SAFETY: the caller's buffer of `size` bytes (the ioctl's contract).
    let mut cycles = unsafe { std::ptr::read_unaligned(at) };
    let clock = match cycles.clockid {
        libc::CLOCK_MONOTONIC
        | libc::CLOCK_MONOTONIC_RAW
        | libc::CLOCK_REALTIME
        | libc::CLOCK_BOOTTIME
        | libc::CLOCK_TAI => cycles.clockid,
        _ => return Err(libc::EINVAL),
    };
    if !engine_exists(hw, &cycles.eci) {
        return Err(libc::EINVAL);
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is writable.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    cycles.cpu_timestamp = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    cycles.cpu_delta = 0;
    cycles.width = 64;
    cycles.engine_cycles = hw.timestamp(host.now_ns());
    // SAFETY: as above.
    unsafe { std::ptr::write_unaligned(at, cycles) };
    Ok(0)
}

/// Firmware versions (invented: what a recent linux-firmware's BMG GuC and HuC say).
fn uc_fw_version(q: &mut XeDeviceQuery) -> Result<i32, Errno> {
    let size = size_of::<XeQueryUcFwVersion>() as u32;
    if q.size == 0 {
        q.size = size;
        return Ok(0);
    }
    if q.size != size || q.data == 0 {
        return Err(libc::EINVAL);
    }
    let at = q.data as *mut XeQueryUcFwVersion;
    // SAFETY: the caller's buffer of `size` bytes (the ioctl's contract).
    let mut v = unsafe { std::ptr::read_unaligned(at) };
    if v.pad != 0 || v.pad2 != 0 || v.reserved != 0 {
        return Err(libc::EINVAL);
    }
    (v.major_ver, v.minor_ver, v.patch_ver) = match v.uc_type {
        0 => (70, 44, 1),
        1 => (8, 5, 4),
        _ => return Err(libc::EINVAL),
    };
    v.branch_ver = 0;
    // SAFETY: as above.
    unsafe { std::ptr::write_unaligned(at, v) };
    Ok(0)
}
