//! The xe and syncobj numbers, sizes and constants as tables, for the test that checks
//! them against `xe_drm.h` and for readers that list them.

use crate::xe::*;

/// Sizes of the xe and syncobj structures (asserted against the C header in tests).
pub const XE_SIZES: &[(&str, usize)] = &[
    ("drm_xe_user_extension", size_of::<XeUserExtension>()),
    ("drm_xe_ext_set_property", size_of::<XeExtSetProperty>()),
    (
        "drm_xe_engine_class_instance",
        size_of::<XeEngineClassInstance>(),
    ),
    ("drm_xe_device_query", size_of::<XeDeviceQuery>()),
    (
        "drm_xe_query_engine_cycles",
        size_of::<XeQueryEngineCycles>(),
    ),
    (
        "drm_xe_query_uc_fw_version",
        size_of::<XeQueryUcFwVersion>(),
    ),
    ("drm_xe_gem_create", size_of::<XeGemCreate>()),
    ("drm_xe_gem_mmap_offset", size_of::<XeGemMmapOffset>()),
    ("drm_xe_vm_create", size_of::<XeVmCreate>()),
    ("drm_xe_vm_destroy", size_of::<XeVmDestroy>()),
    ("drm_xe_vm_bind_op", size_of::<XeVmBindOp>()),
    ("drm_xe_vm_bind", size_of::<XeVmBind>()),
    ("drm_xe_exec_queue_create", size_of::<XeExecQueueCreate>()),
    ("drm_xe_exec_queue_destroy", size_of::<XeExecQueueDestroy>()),
    (
        "drm_xe_exec_queue_get_property",
        size_of::<XeExecQueueProperty>(),
    ),
    (
        "drm_xe_exec_queue_set_property",
        size_of::<XeExecQueueProperty>(),
    ),
    ("drm_xe_sync", size_of::<XeSync>()),
    ("drm_xe_exec", size_of::<XeExec>()),
    ("drm_xe_wait_user_fence", size_of::<XeWaitUserFence>()),
    ("drm_xe_madvise", size_of::<XeMadvise>()),
    ("drm_syncobj_create", size_of::<SyncobjCreate>()),
    ("drm_syncobj_destroy", size_of::<SyncobjDestroy>()),
    ("drm_syncobj_wait", size_of::<SyncobjWait>()),
    (
        "drm_syncobj_timeline_wait",
        size_of::<SyncobjTimelineWait>(),
    ),
    ("drm_syncobj_array", size_of::<SyncobjArray>()),
    (
        "drm_syncobj_timeline_array",
        size_of::<SyncobjTimelineArray>(),
    ),
];

/// The xe and syncobj request numbers (asserted against the C header in tests).
pub const XE_REQUESTS: &[(&str, u64)] = &[
    ("DRM_IOCTL_XE_DEVICE_QUERY", DRM_IOCTL_XE_DEVICE_QUERY),
    ("DRM_IOCTL_XE_GEM_CREATE", DRM_IOCTL_XE_GEM_CREATE),
    ("DRM_IOCTL_XE_GEM_MMAP_OFFSET", DRM_IOCTL_XE_GEM_MMAP_OFFSET),
    ("DRM_IOCTL_XE_VM_CREATE", DRM_IOCTL_XE_VM_CREATE),
    ("DRM_IOCTL_XE_VM_DESTROY", DRM_IOCTL_XE_VM_DESTROY),
    ("DRM_IOCTL_XE_VM_BIND", DRM_IOCTL_XE_VM_BIND),
    (
        "DRM_IOCTL_XE_EXEC_QUEUE_CREATE",
        DRM_IOCTL_XE_EXEC_QUEUE_CREATE,
    ),
    (
        "DRM_IOCTL_XE_EXEC_QUEUE_DESTROY",
        DRM_IOCTL_XE_EXEC_QUEUE_DESTROY,
    ),
    (
        "DRM_IOCTL_XE_EXEC_QUEUE_GET_PROPERTY",
        DRM_IOCTL_XE_EXEC_QUEUE_GET_PROPERTY,
    ),
    ("DRM_IOCTL_XE_EXEC", DRM_IOCTL_XE_EXEC),
    ("DRM_IOCTL_XE_WAIT_USER_FENCE", DRM_IOCTL_XE_WAIT_USER_FENCE),
    ("DRM_IOCTL_XE_OBSERVATION", DRM_IOCTL_XE_OBSERVATION),
    ("DRM_IOCTL_XE_MADVISE", DRM_IOCTL_XE_MADVISE),
    (
        "DRM_IOCTL_XE_VM_QUERY_MEM_RANGE_ATTRS",
        DRM_IOCTL_XE_VM_QUERY_MEM_RANGE_ATTRS,
    ),
    (
        "DRM_IOCTL_XE_EXEC_QUEUE_SET_PROPERTY",
        DRM_IOCTL_XE_EXEC_QUEUE_SET_PROPERTY,
    ),
    ("DRM_IOCTL_XE_VM_GET_PROPERTY", DRM_IOCTL_XE_VM_GET_PROPERTY),
    ("DRM_IOCTL_SYNCOBJ_CREATE", DRM_IOCTL_SYNCOBJ_CREATE),
    ("DRM_IOCTL_SYNCOBJ_DESTROY", DRM_IOCTL_SYNCOBJ_DESTROY),
    (
        "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD",
        DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD,
    ),
    (
        "DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE",
        DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE,
    ),
    ("DRM_IOCTL_SYNCOBJ_WAIT", DRM_IOCTL_SYNCOBJ_WAIT),
    ("DRM_IOCTL_SYNCOBJ_RESET", DRM_IOCTL_SYNCOBJ_RESET),
    ("DRM_IOCTL_SYNCOBJ_SIGNAL", DRM_IOCTL_SYNCOBJ_SIGNAL),
    (
        "DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT",
        DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT,
    ),
    ("DRM_IOCTL_SYNCOBJ_QUERY", DRM_IOCTL_SYNCOBJ_QUERY),
    (
        "DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL",
        DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL,
    ),
];

/// The C constants of `xe_drm.h` this crate gives (asserted against the header).
pub const XE_CONSTANTS: &[(&str, u64)] = &[
    (
        "DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING",
        DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING as u64,
    ),
    (
        "DRM_XE_GEM_CREATE_FLAG_NO_COMPRESSION",
        DRM_XE_GEM_CREATE_FLAG_NO_COMPRESSION as u64,
    ),
    (
        "DRM_XE_VM_CREATE_FLAG_NO_VM_OVERCOMMIT",
        DRM_XE_VM_CREATE_FLAG_NO_VM_OVERCOMMIT as u64,
    ),
    (
        "DRM_XE_VM_BIND_FLAG_DECOMPRESS",
        DRM_XE_VM_BIND_FLAG_DECOMPRESS as u64,
    ),
    (
        "DRM_XE_VM_BIND_OP_PREFETCH",
        DRM_XE_VM_BIND_OP_PREFETCH as u64,
    ),
    (
        "DRM_XE_DEVICE_QUERY_EU_STALL",
        DRM_XE_DEVICE_QUERY_EU_STALL as u64,
    ),
    (
        "DRM_XE_TOPO_SIMD16_EU_PER_DSS",
        DRM_XE_TOPO_SIMD16_EU_PER_DSS as u64,
    ),
    (
        "DRM_XE_UFENCE_WAIT_OP_LTE",
        DRM_XE_UFENCE_WAIT_OP_LTE as u64,
    ),
    (
        "DRM_XE_EXEC_QUEUE_SET_PROPERTY_MULTI_QUEUE_PRIORITY",
        DRM_XE_EXEC_QUEUE_SET_PROPERTY_MULTI_QUEUE_PRIORITY as u64,
    ),
    (
        "DRM_XE_SYNC_TYPE_USER_FENCE",
        DRM_XE_SYNC_TYPE_USER_FENCE as u64,
    ),
    (
        "DRM_XE_GEM_CPU_CACHING_WC",
        DRM_XE_GEM_CPU_CACHING_WC as u64,
    ),
];
