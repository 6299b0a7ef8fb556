//! The xe driver's uAPI (`include/uapi/drm/xe_drm.h`) as NEO 26.x uses it, and the
//! DRM core's syncobj requests (`drm.h`) it uses beside them.
//!
//! The kernel finds a DRM ioctl by its number alone and copies as many bytes as the
//! request's size says (zero-filling the rest), so a caller built against an older or
//! newer header works: [`xe_nr`] gives the number to dispatch on.

// Request numbers (`DRM_COMMAND_BASE` + the driver's own).
pub const DRM_XE_DEVICE_QUERY: u8 = 0x00;
pub const DRM_XE_GEM_CREATE: u8 = 0x01;
pub const DRM_XE_GEM_MMAP_OFFSET: u8 = 0x02;
pub const DRM_XE_VM_CREATE: u8 = 0x03;
pub const DRM_XE_VM_DESTROY: u8 = 0x04;
pub const DRM_XE_VM_BIND: u8 = 0x05;
pub const DRM_XE_EXEC_QUEUE_CREATE: u8 = 0x06;
pub const DRM_XE_EXEC_QUEUE_DESTROY: u8 = 0x07;
pub const DRM_XE_EXEC_QUEUE_GET_PROPERTY: u8 = 0x08;
pub const DRM_XE_EXEC: u8 = 0x09;
pub const DRM_XE_WAIT_USER_FENCE: u8 = 0x0a;
pub const DRM_XE_OBSERVATION: u8 = 0x0b;
pub const DRM_XE_MADVISE: u8 = 0x0c;
pub const DRM_XE_VM_QUERY_MEM_RANGE_ATTRS: u8 = 0x0d;
pub const DRM_XE_EXEC_QUEUE_SET_PROPERTY: u8 = 0x0e;
pub const DRM_XE_VM_GET_PROPERTY: u8 = 0x0f;

pub const DRM_IOCTL_XE_DEVICE_QUERY: u64 = 0xc028_6440;
pub const DRM_IOCTL_XE_GEM_CREATE: u64 = 0xc038_6441;
pub const DRM_IOCTL_XE_GEM_MMAP_OFFSET: u64 = 0xc028_6442;
pub const DRM_IOCTL_XE_VM_CREATE: u64 = 0xc020_6443;
pub const DRM_IOCTL_XE_VM_DESTROY: u64 = 0x4018_6444;
pub const DRM_IOCTL_XE_VM_BIND: u64 = 0x4088_6445;
pub const DRM_IOCTL_XE_EXEC_QUEUE_CREATE: u64 = 0xc030_6446;
pub const DRM_IOCTL_XE_EXEC_QUEUE_DESTROY: u64 = 0x4018_6447;
pub const DRM_IOCTL_XE_EXEC_QUEUE_GET_PROPERTY: u64 = 0xc028_6448;
pub const DRM_IOCTL_XE_EXEC: u64 = 0x4038_6449;
pub const DRM_IOCTL_XE_WAIT_USER_FENCE: u64 = 0xc048_644a;
pub const DRM_IOCTL_XE_OBSERVATION: u64 = 0x4020_644b;
pub const DRM_IOCTL_XE_MADVISE: u64 = 0x4040_644c;
pub const DRM_IOCTL_XE_VM_QUERY_MEM_RANGE_ATTRS: u64 = 0xc040_644d;
pub const DRM_IOCTL_XE_EXEC_QUEUE_SET_PROPERTY: u64 = 0x4028_644e;
pub const DRM_IOCTL_XE_VM_GET_PROPERTY: u64 = 0xc038_644f;

// The DRM core's syncobj requests.
pub const DRM_IOCTL_SYNCOBJ_CREATE: u64 = 0xc008_64bf;
pub const DRM_IOCTL_SYNCOBJ_DESTROY: u64 = 0xc008_64c0;
pub const DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD: u64 = 0xc018_64c1;
pub const DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE: u64 = 0xc018_64c2;
pub const DRM_IOCTL_SYNCOBJ_WAIT: u64 = 0xc028_64c3;
pub const DRM_IOCTL_SYNCOBJ_RESET: u64 = 0xc010_64c4;
pub const DRM_IOCTL_SYNCOBJ_SIGNAL: u64 = 0xc010_64c5;
pub const DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT: u64 = 0xc030_64ca;
pub const DRM_IOCTL_SYNCOBJ_QUERY: u64 = 0xc018_64cb;
pub const DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL: u64 = 0xc018_64cd;

/// The DRM core's number of a request (`_IOC_NR`), when it is a DRM request (type 'd').
pub fn drm_nr(request: u64) -> Option<u8> {
    ((request >> 8) & 0xff == 0x64).then_some((request & 0xff) as u8)
}

/// The xe driver's own number of a request (`DRM_XE_*`), when it is one.
pub fn xe_nr(request: u64) -> Option<u8> {
    drm_nr(request)
        .and_then(|nr| nr.checked_sub(0x40))
        .filter(|&nr| nr <= DRM_XE_VM_GET_PROPERTY)
}

/// The xe request's name, as `xe_drm.h` spells it (by number: any size).
pub fn xe_request_name(request: u64) -> Option<&'static str> {
    const NAMES: [&str; 16] = [
        "DRM_IOCTL_XE_DEVICE_QUERY",
        "DRM_IOCTL_XE_GEM_CREATE",
        "DRM_IOCTL_XE_GEM_MMAP_OFFSET",
        "DRM_IOCTL_XE_VM_CREATE",
        "DRM_IOCTL_XE_VM_DESTROY",
        "DRM_IOCTL_XE_VM_BIND",
        "DRM_IOCTL_XE_EXEC_QUEUE_CREATE",
        "DRM_IOCTL_XE_EXEC_QUEUE_DESTROY",
        "DRM_IOCTL_XE_EXEC_QUEUE_GET_PROPERTY",
        "DRM_IOCTL_XE_EXEC",
        "DRM_IOCTL_XE_WAIT_USER_FENCE",
        "DRM_IOCTL_XE_OBSERVATION",
        "DRM_IOCTL_XE_MADVISE",
        "DRM_IOCTL_XE_VM_QUERY_MEM_RANGE_ATTRS",
        "DRM_IOCTL_XE_EXEC_QUEUE_SET_PROPERTY",
        "DRM_IOCTL_XE_VM_GET_PROPERTY",
    ];
    let name = match drm_nr(request)? {
        0xbf => "DRM_IOCTL_SYNCOBJ_CREATE",
        0xc0 => "DRM_IOCTL_SYNCOBJ_DESTROY",
        0xc1 => "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD",
        0xc2 => "DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE",
        0xc3 => "DRM_IOCTL_SYNCOBJ_WAIT",
        0xc4 => "DRM_IOCTL_SYNCOBJ_RESET",
        0xc5 => "DRM_IOCTL_SYNCOBJ_SIGNAL",
        0xca => "DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT",
        0xcb => "DRM_IOCTL_SYNCOBJ_QUERY",
        0xcd => "DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL",
        _ => NAMES[usize::from(xe_nr(request)?)],
    };
    Some(name)
}

// Device queries.
pub const DRM_XE_DEVICE_QUERY_ENGINES: u32 = 0;
pub const DRM_XE_DEVICE_QUERY_MEM_REGIONS: u32 = 1;
pub const DRM_XE_DEVICE_QUERY_CONFIG: u32 = 2;
pub const DRM_XE_DEVICE_QUERY_GT_LIST: u32 = 3;
pub const DRM_XE_DEVICE_QUERY_HWCONFIG: u32 = 4;
pub const DRM_XE_DEVICE_QUERY_GT_TOPOLOGY: u32 = 5;
pub const DRM_XE_DEVICE_QUERY_ENGINE_CYCLES: u32 = 6;
pub const DRM_XE_DEVICE_QUERY_UC_FW_VERSION: u32 = 7;
pub const DRM_XE_DEVICE_QUERY_OA_UNITS: u32 = 8;
pub const DRM_XE_DEVICE_QUERY_PXP_STATUS: u32 = 9;
pub const DRM_XE_DEVICE_QUERY_EU_STALL: u32 = 10;

pub const DRM_XE_QUERY_CONFIG_REV_AND_DEVICE_ID: usize = 0;
pub const DRM_XE_QUERY_CONFIG_FLAGS: usize = 1;
pub const DRM_XE_QUERY_CONFIG_FLAG_HAS_VRAM: u64 = 1 << 0;
pub const DRM_XE_QUERY_CONFIG_MIN_ALIGNMENT: usize = 2;
pub const DRM_XE_QUERY_CONFIG_VA_BITS: usize = 3;
pub const DRM_XE_QUERY_CONFIG_MAX_EXEC_QUEUE_PRIORITY: usize = 4;

pub const DRM_XE_QUERY_GT_TYPE_MAIN: u16 = 0;
pub const DRM_XE_QUERY_GT_TYPE_MEDIA: u16 = 1;

pub const DRM_XE_TOPO_DSS_GEOMETRY: u16 = 1;
pub const DRM_XE_TOPO_DSS_COMPUTE: u16 = 2;
pub const DRM_XE_TOPO_L3_BANK: u16 = 3;
pub const DRM_XE_TOPO_EU_PER_DSS: u16 = 4;
pub const DRM_XE_TOPO_SIMD16_EU_PER_DSS: u16 = 5;

pub const DRM_XE_ENGINE_CLASS_RENDER: u16 = 0;
pub const DRM_XE_ENGINE_CLASS_COPY: u16 = 1;
pub const DRM_XE_ENGINE_CLASS_VIDEO_DECODE: u16 = 2;
pub const DRM_XE_ENGINE_CLASS_VIDEO_ENHANCE: u16 = 3;
pub const DRM_XE_ENGINE_CLASS_COMPUTE: u16 = 4;
pub const DRM_XE_ENGINE_CLASS_VM_BIND: u16 = 5;

pub const DRM_XE_MEM_REGION_CLASS_SYSMEM: u16 = 0;
pub const DRM_XE_MEM_REGION_CLASS_VRAM: u16 = 1;

// GEM objects.
pub const DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING: u32 = 1 << 0;
pub const DRM_XE_GEM_CREATE_FLAG_SCANOUT: u32 = 1 << 1;
pub const DRM_XE_GEM_CREATE_FLAG_NEEDS_VISIBLE_VRAM: u32 = 1 << 2;
pub const DRM_XE_GEM_CREATE_FLAG_NO_COMPRESSION: u32 = 1 << 3;
pub const DRM_XE_GEM_CPU_CACHING_WB: u16 = 1;
pub const DRM_XE_GEM_CPU_CACHING_WC: u16 = 2;
pub const DRM_XE_GEM_CREATE_EXTENSION_SET_PROPERTY: u32 = 0;
pub const DRM_XE_MMAP_OFFSET_FLAG_PCI_BARRIER: u32 = 1 << 0;

// VMs and binds.
pub const DRM_XE_VM_CREATE_FLAG_SCRATCH_PAGE: u32 = 1 << 0;
pub const DRM_XE_VM_CREATE_FLAG_LR_MODE: u32 = 1 << 1;
pub const DRM_XE_VM_CREATE_FLAG_FAULT_MODE: u32 = 1 << 2;
pub const DRM_XE_VM_CREATE_FLAG_NO_VM_OVERCOMMIT: u32 = 1 << 3;
pub const DRM_XE_VM_BIND_OP_MAP: u32 = 0x0;
pub const DRM_XE_VM_BIND_OP_UNMAP: u32 = 0x1;
pub const DRM_XE_VM_BIND_OP_MAP_USERPTR: u32 = 0x2;
pub const DRM_XE_VM_BIND_OP_UNMAP_ALL: u32 = 0x3;
pub const DRM_XE_VM_BIND_OP_PREFETCH: u32 = 0x4;
pub const DRM_XE_VM_BIND_FLAG_READONLY: u32 = 1 << 0;
pub const DRM_XE_VM_BIND_FLAG_IMMEDIATE: u32 = 1 << 1;
pub const DRM_XE_VM_BIND_FLAG_NULL: u32 = 1 << 2;
pub const DRM_XE_VM_BIND_FLAG_DUMPABLE: u32 = 1 << 3;
pub const DRM_XE_VM_BIND_FLAG_CHECK_PXP: u32 = 1 << 4;
pub const DRM_XE_VM_BIND_FLAG_CPU_ADDR_MIRROR: u32 = 1 << 5;
pub const DRM_XE_VM_BIND_FLAG_MADVISE_AUTORESET: u32 = 1 << 6;
pub const DRM_XE_VM_BIND_FLAG_DECOMPRESS: u32 = 1 << 7;

// Exec queues.
pub const DRM_XE_EXEC_QUEUE_EXTENSION_SET_PROPERTY: u32 = 0;
pub const DRM_XE_EXEC_QUEUE_SET_PROPERTY_PRIORITY: u32 = 0;
pub const DRM_XE_EXEC_QUEUE_SET_PROPERTY_TIMESLICE: u32 = 1;
pub const DRM_XE_EXEC_QUEUE_SET_PROPERTY_PXP_TYPE: u32 = 2;
pub const DRM_XE_EXEC_QUEUE_SET_PROPERTY_MULTI_GROUP: u32 = 4;
pub const DRM_XE_EXEC_QUEUE_SET_PROPERTY_MULTI_QUEUE_PRIORITY: u32 = 5;
pub const DRM_XE_EXEC_QUEUE_LOW_LATENCY_HINT: u32 = 1 << 0;
pub const DRM_XE_EXEC_QUEUE_GET_PROPERTY_BAN: u32 = 0;

// Synchronisation.
pub const DRM_XE_SYNC_TYPE_SYNCOBJ: u32 = 0x0;
pub const DRM_XE_SYNC_TYPE_TIMELINE_SYNCOBJ: u32 = 0x1;
pub const DRM_XE_SYNC_TYPE_USER_FENCE: u32 = 0x2;
pub const DRM_XE_SYNC_FLAG_SIGNAL: u32 = 1 << 0;
pub const DRM_XE_UFENCE_WAIT_OP_EQ: u16 = 0x0;
pub const DRM_XE_UFENCE_WAIT_OP_NEQ: u16 = 0x1;
pub const DRM_XE_UFENCE_WAIT_OP_GT: u16 = 0x2;
pub const DRM_XE_UFENCE_WAIT_OP_GTE: u16 = 0x3;
pub const DRM_XE_UFENCE_WAIT_OP_LT: u16 = 0x4;
pub const DRM_XE_UFENCE_WAIT_OP_LTE: u16 = 0x5;
pub const DRM_XE_UFENCE_WAIT_FLAG_ABSTIME: u16 = 1 << 0;
pub const DRM_SYNCOBJ_CREATE_SIGNALED: u32 = 1 << 0;
pub const DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL: u32 = 1 << 0;
pub const DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT: u32 = 1 << 1;

/// `struct drm_xe_user_extension`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeUserExtension {
    pub next_extension: u64,
    pub name: u32,
    pub pad: u32,
}

/// `struct drm_xe_ext_set_property`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeExtSetProperty {
    pub base: XeUserExtension,
    pub property: u32,
    pub pad: u32,
    pub value: u64,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_engine_class_instance`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XeEngineClassInstance {
    pub engine_class: u16,
    pub engine_instance: u16,
    pub gt_id: u16,
    pub pad: u16,
}

/// `struct drm_xe_device_query`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeDeviceQuery {
    pub extensions: u64,
    pub query: u32,
    pub size: u32,
    pub data: u64,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_query_engine_cycles`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeQueryEngineCycles {
    pub eci: XeEngineClassInstance,
    pub clockid: i32,
    pub width: u32,
    pub engine_cycles: u64,
    pub cpu_timestamp: u64,
    pub cpu_delta: u64,
}

/// `struct drm_xe_query_uc_fw_version`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeQueryUcFwVersion {
    pub uc_type: u16,
    pub pad: u16,
    pub branch_ver: u32,
    pub major_ver: u32,
    pub minor_ver: u32,
    pub patch_ver: u32,
    pub pad2: u32,
    pub reserved: u64,
}

/// `struct drm_xe_gem_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeGemCreate {
    pub extensions: u64,
    pub size: u64,
    pub placement: u32,
    pub flags: u32,
    pub vm_id: u32,
    pub handle: u32,
    pub cpu_caching: u16,
    pub pad: [u16; 3],
    pub reserved: [u64; 2],
}

/// `struct drm_xe_gem_mmap_offset`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeGemMmapOffset {
    pub extensions: u64,
    pub handle: u32,
    pub flags: u32,
    pub offset: u64,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_vm_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeVmCreate {
    pub extensions: u64,
    pub flags: u32,
    pub vm_id: u32,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_vm_destroy`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeVmDestroy {
    pub vm_id: u32,
    pub pad: u32,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_vm_bind_op` (`obj_offset` is also `userptr`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeVmBindOp {
    pub extensions: u64,
    pub obj: u32,
    pub pat_index: u16,
    pub pad: u16,
    pub obj_offset: u64,
    pub range: u64,
    pub addr: u64,
    pub op: u32,
    pub flags: u32,
    pub prefetch_mem_region_instance: u32,
    pub pad2: u32,
    pub reserved: [u64; 3],
}

/// `struct drm_xe_vm_bind`: with `num_binds` > 1 the array's address is in
/// `bind.extensions` (the union's `vector_of_binds`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeVmBind {
    pub extensions: u64,
    pub vm_id: u32,
    pub exec_queue_id: u32,
    pub pad: u32,
    pub num_binds: u32,
    pub bind: XeVmBindOp,
    pub pad2: u32,
    pub num_syncs: u32,
    pub syncs: u64,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_exec_queue_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeExecQueueCreate {
    pub extensions: u64,
    pub width: u16,
    pub num_placements: u16,
    pub vm_id: u32,
    pub flags: u32,
    pub exec_queue_id: u32,
    pub instances: u64,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_exec_queue_destroy`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeExecQueueDestroy {
    pub exec_queue_id: u32,
    pub pad: u32,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_exec_queue_get_property` (and `_set_property`: the same layout).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeExecQueueProperty {
    pub extensions: u64,
    pub exec_queue_id: u32,
    pub property: u32,
    pub value: u64,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_sync` (`addr` is also a syncobj `handle` in its low half).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeSync {
    pub extensions: u64,
    pub sync_type: u32,
    pub flags: u32,
    pub addr: u64,
    pub timeline_value: u64,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_exec`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeExec {
    pub extensions: u64,
    pub exec_queue_id: u32,
    pub num_syncs: u32,
    pub syncs: u64,
    pub address: u64,
    pub num_batch_buffer: u16,
    pub pad: [u16; 3],
    pub reserved: [u64; 2],
}

/// `struct drm_xe_wait_user_fence`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeWaitUserFence {
    pub extensions: u64,
    pub addr: u64,
    pub op: u16,
    pub flags: u16,
    pub pad: u32,
    pub value: u64,
    pub mask: u64,
    pub timeout: i64,
    pub exec_queue_id: u32,
    pub pad2: u32,
    pub reserved: [u64; 2],
}

/// `struct drm_xe_madvise` (its union as bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XeMadvise {
    pub extensions: u64,
    pub start: u64,
    pub range: u64,
    pub vm_id: u32,
    pub advice_type: u32,
    pub attribute: [u64; 2],
    pub reserved: [u64; 2],
}

/// `struct drm_syncobj_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncobjCreate {
    pub handle: u32,
    pub flags: u32,
}

/// `struct drm_syncobj_destroy`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncobjDestroy {
    pub handle: u32,
    pub pad: u32,
}

/// `struct drm_syncobj_wait` (and `_timeline_wait` without `points`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncobjWait {
    pub handles: u64,
    pub timeout_nsec: i64,
    pub count_handles: u32,
    pub flags: u32,
    pub first_signaled: u32,
    pub pad: u32,
    pub deadline_nsec: u64,
}

/// `struct drm_syncobj_timeline_wait`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncobjTimelineWait {
    pub handles: u64,
    pub points: u64,
    pub timeout_nsec: i64,
    pub count_handles: u32,
    pub flags: u32,
    pub first_signaled: u32,
    pub pad: u32,
    pub deadline_nsec: u64,
}

/// `struct drm_syncobj_array`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncobjArray {
    pub handles: u64,
    pub count_handles: u32,
    pub pad: u32,
}

/// `struct drm_syncobj_timeline_array`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncobjTimelineArray {
    pub handles: u64,
    pub points: u64,
    pub count_handles: u32,
    pub flags: u32,
}
