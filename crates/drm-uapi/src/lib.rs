//! # clmulti-drm-uapi: the DRM, i915 and xe ioctls clmulti speaks
//!
//! The slice of Linux's DRM uAPI that Intel's GPU runtime (NEO) uses on i915 and on xe:
//! request numbers and `#[repr(C)]` structures as in
//! `include/uapi/drm/{drm,i915_drm,xe_drm}.h`, and each request's name as the headers
//! spell it. Two parts of clmulti read it: the
//! emulated kernel drivers (`clmulti-kmd-emu`), which answer these requests, and the
//! tracer (`clmulti-trace`), which names them when one fails. The crate's tests
//! compile C programs against Debian's libdrm-dev headers and against `xe_drm.h` as
//! Debian's linux-libc-dev 7.2.13 ships it (kept in `tests/include/`, MIT-licensed, so
//! the check needs no network), and check every number and size here against the C
//! compiler's.
//!
//! ```
//! use clmulti_drm_uapi::{request_name, DRM_IOCTL_PRIME_HANDLE_TO_FD};
//! assert_eq!(request_name(DRM_IOCTL_PRIME_HANDLE_TO_FD), Some("DRM_IOCTL_PRIME_HANDLE_TO_FD"));
//! assert_eq!(request_name(0xdead), None);
//! ```

#![allow(missing_docs)]

mod xe;
mod xe_tables;
pub use xe::*;
pub use xe_tables::*;

// Request numbers (`_IOWR('d', ...)`).
pub const DRM_IOCTL_VERSION: u64 = 0xc040_6400;
pub const DRM_IOCTL_GET_UNIQUE: u64 = 0xc010_6401;
pub const DRM_IOCTL_GEM_CLOSE: u64 = 0x4008_6409;
pub const DRM_IOCTL_GET_CAP: u64 = 0xc010_640c;
pub const DRM_IOCTL_SET_CLIENT_CAP: u64 = 0x4010_640d;
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: u64 = 0xc00c_642d;
pub const DRM_IOCTL_PRIME_FD_TO_HANDLE: u64 = 0xc00c_642e;
pub const DRM_IOCTL_I915_GETPARAM: u64 = 0xc010_6446;
pub const DRM_IOCTL_I915_GEM_BUSY: u64 = 0xc008_6457;
pub const DRM_IOCTL_I915_GEM_CREATE: u64 = 0xc010_645b;
pub const DRM_IOCTL_I915_GEM_SET_DOMAIN: u64 = 0x400c_645f;
pub const DRM_IOCTL_I915_GEM_SET_TILING: u64 = 0xc010_6461;
pub const DRM_IOCTL_I915_GEM_GET_TILING: u64 = 0xc010_6462;
pub const DRM_IOCTL_I915_GEM_MMAP_OFFSET: u64 = 0xc020_6464;
pub const DRM_IOCTL_I915_GEM_MADVISE: u64 = 0xc00c_6466;
pub const DRM_IOCTL_I915_GEM_EXECBUFFER2: u64 = 0x4040_6469;
pub const DRM_IOCTL_I915_GEM_EXECBUFFER2_WR: u64 = 0xc040_6469;
pub const DRM_IOCTL_I915_GEM_WAIT: u64 = 0xc010_646c;
pub const DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT: u64 = 0xc010_646d;
/// The same request with the older 8-byte structure (NEO 20.44 issues it).
pub const DRM_IOCTL_I915_GEM_CONTEXT_CREATE: u64 = 0xc008_646d;
pub const DRM_IOCTL_I915_GEM_CONTEXT_DESTROY: u64 = 0x4008_646e;
pub const DRM_IOCTL_I915_REG_READ: u64 = 0xc010_6471;
pub const DRM_IOCTL_I915_GET_RESET_STATS: u64 = 0xc018_6472;
pub const DRM_IOCTL_I915_GEM_USERPTR: u64 = 0xc018_6473;
pub const DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM: u64 = 0xc018_6474;
pub const DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM: u64 = 0xc018_6475;
pub const DRM_IOCTL_I915_QUERY: u64 = 0xc010_6479;
pub const DRM_IOCTL_I915_GEM_VM_CREATE: u64 = 0xc010_647a;
pub const DRM_IOCTL_I915_GEM_VM_DESTROY: u64 = 0x4010_647b;
pub const DRM_IOCTL_I915_GEM_CREATE_EXT: u64 = 0xc018_647c;
/// `DMA_BUF_IOCTL_SYNC` (`_IOW('b', 0, struct dma_buf_sync)`), on exported fds.
pub const DMA_BUF_IOCTL_SYNC: u64 = 0x4008_6200;

/// The request's name, as the kernel's headers spell it.
pub fn request_name(request: u64) -> Option<&'static str> {
    Some(match request {
        DRM_IOCTL_VERSION => "DRM_IOCTL_VERSION",
        DRM_IOCTL_GET_UNIQUE => "DRM_IOCTL_GET_UNIQUE",
        DRM_IOCTL_GEM_CLOSE => "DRM_IOCTL_GEM_CLOSE",
        DRM_IOCTL_GET_CAP => "DRM_IOCTL_GET_CAP",
        DRM_IOCTL_SET_CLIENT_CAP => "DRM_IOCTL_SET_CLIENT_CAP",
        DRM_IOCTL_PRIME_HANDLE_TO_FD => "DRM_IOCTL_PRIME_HANDLE_TO_FD",
        DRM_IOCTL_PRIME_FD_TO_HANDLE => "DRM_IOCTL_PRIME_FD_TO_HANDLE",
        DRM_IOCTL_I915_GETPARAM => "DRM_IOCTL_I915_GETPARAM",
        DRM_IOCTL_I915_GEM_BUSY => "DRM_IOCTL_I915_GEM_BUSY",
        DRM_IOCTL_I915_GEM_CREATE => "DRM_IOCTL_I915_GEM_CREATE",
        DRM_IOCTL_I915_GEM_SET_DOMAIN => "DRM_IOCTL_I915_GEM_SET_DOMAIN",
        DRM_IOCTL_I915_GEM_SET_TILING => "DRM_IOCTL_I915_GEM_SET_TILING",
        DRM_IOCTL_I915_GEM_GET_TILING => "DRM_IOCTL_I915_GEM_GET_TILING",
        DRM_IOCTL_I915_GEM_MMAP_OFFSET => "DRM_IOCTL_I915_GEM_MMAP_OFFSET",
        DRM_IOCTL_I915_GEM_MADVISE => "DRM_IOCTL_I915_GEM_MADVISE",
        DRM_IOCTL_I915_GEM_EXECBUFFER2 => "DRM_IOCTL_I915_GEM_EXECBUFFER2",
        DRM_IOCTL_I915_GEM_EXECBUFFER2_WR => "DRM_IOCTL_I915_GEM_EXECBUFFER2_WR",
        DRM_IOCTL_I915_GEM_WAIT => "DRM_IOCTL_I915_GEM_WAIT",
        DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT => "DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT",
        DRM_IOCTL_I915_GEM_CONTEXT_CREATE => "DRM_IOCTL_I915_GEM_CONTEXT_CREATE",
        DRM_IOCTL_I915_GEM_CONTEXT_DESTROY => "DRM_IOCTL_I915_GEM_CONTEXT_DESTROY",
        DRM_IOCTL_I915_REG_READ => "DRM_IOCTL_I915_REG_READ",
        DRM_IOCTL_I915_GET_RESET_STATS => "DRM_IOCTL_I915_GET_RESET_STATS",
        DRM_IOCTL_I915_GEM_USERPTR => "DRM_IOCTL_I915_GEM_USERPTR",
        DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM => "DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM",
        DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM => "DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM",
        DRM_IOCTL_I915_QUERY => "DRM_IOCTL_I915_QUERY",
        DRM_IOCTL_I915_GEM_VM_CREATE => "DRM_IOCTL_I915_GEM_VM_CREATE",
        DRM_IOCTL_I915_GEM_VM_DESTROY => "DRM_IOCTL_I915_GEM_VM_DESTROY",
        DRM_IOCTL_I915_GEM_CREATE_EXT => "DRM_IOCTL_I915_GEM_CREATE_EXT",
        DMA_BUF_IOCTL_SYNC => "DMA_BUF_IOCTL_SYNC",
        // xe's and the syncobj requests at the sizes of Linux 7.2's headers (a driver
        // that knows the file is xe's names any size: `xe_request_name`).
        _ => {
            return XE_REQUESTS
                .iter()
                .find(|(_, r)| *r == request)
                .map(|(n, _)| *n)
        }
    })
}

// GETPARAM parameters.
pub const I915_PARAM_CHIPSET_ID: i32 = 4;
pub const I915_PARAM_HAS_ALIASING_PPGTT: i32 = 18;
pub const I915_PARAM_MMAP_VERSION: i32 = 30;
pub const I915_PARAM_REVISION: i32 = 32;
pub const I915_PARAM_SUBSLICE_TOTAL: i32 = 33;
pub const I915_PARAM_EU_TOTAL: i32 = 34;
pub const I915_PARAM_HAS_EXEC_SOFTPIN: i32 = 37;
pub const I915_PARAM_HAS_POOLED_EU: i32 = 38;
pub const I915_PARAM_MIN_EU_IN_POOL: i32 = 39;
pub const I915_PARAM_MMAP_GTT_VERSION: i32 = 40;
pub const I915_PARAM_HAS_SCHEDULER: i32 = 41;
pub const I915_PARAM_HAS_EXEC_CAPTURE: i32 = 45;
pub const I915_PARAM_SLICE_MASK: i32 = 46;
pub const I915_PARAM_SUBSLICE_MASK: i32 = 47;
pub const I915_PARAM_HAS_CONTEXT_ISOLATION: i32 = 50;
pub const I915_PARAM_CS_TIMESTAMP_FREQUENCY: i32 = 51;
pub const I915_PARAM_HAS_EXEC_TIMELINE_FENCES: i32 = 55;
pub const I915_PARAM_HAS_USERPTR_PROBE: i32 = 56;

/// `I915_SCHEDULER_CAP_ENABLED | PRIORITY | PREEMPTION | SEMAPHORES | ENGINE_BUSY_STATS`.
pub const SCHEDULER_CAPS: i32 = 0x1 | 0x2 | 0x4 | 0x8 | 0x10;

// Queries.
pub const DRM_I915_QUERY_TOPOLOGY_INFO: u64 = 1;
pub const DRM_I915_QUERY_ENGINE_INFO: u64 = 2;
pub const DRM_I915_QUERY_PERF_CONFIG: u64 = 3;
pub const DRM_I915_QUERY_MEMORY_REGIONS: u64 = 4;
pub const DRM_I915_QUERY_HWCONFIG_BLOB: u64 = 5;
pub const DRM_I915_QUERY_GEOMETRY_SUBSLICES: u64 = 6;

// Context parameters.
pub const I915_CONTEXT_PARAM_BAN_PERIOD: u64 = 0x1;
pub const I915_CONTEXT_PARAM_GTT_SIZE: u64 = 0x3;
pub const I915_CONTEXT_PARAM_NO_ERROR_CAPTURE: u64 = 0x4;
pub const I915_CONTEXT_PARAM_BANNABLE: u64 = 0x5;
pub const I915_CONTEXT_PARAM_PRIORITY: u64 = 0x6;
pub const I915_CONTEXT_PARAM_SSEU: u64 = 0x7;
pub const I915_CONTEXT_PARAM_RECOVERABLE: u64 = 0x8;
pub const I915_CONTEXT_PARAM_VM: u64 = 0x9;
pub const I915_CONTEXT_PARAM_ENGINES: u64 = 0xa;
pub const I915_CONTEXT_PARAM_PERSISTENCE: u64 = 0xb;
pub const I915_CONTEXT_PARAM_RINGSIZE: u64 = 0xc;
pub const I915_CONTEXT_PARAM_PROTECTED_CONTENT: u64 = 0xd;
pub const I915_CONTEXT_CREATE_FLAGS_USE_EXTENSIONS: u32 = 1;
pub const I915_CONTEXT_CREATE_EXT_SETPARAM: u32 = 0;

// Buffer objects.
pub const I915_GEM_CREATE_EXT_MEMORY_REGIONS: u32 = 0;
pub const I915_GEM_CREATE_EXT_PROTECTED_CONTENT: u32 = 1;
pub const I915_GEM_CREATE_EXT_SET_PAT: u32 = 2;
pub const I915_MEMORY_CLASS_SYSTEM: u16 = 0;
pub const I915_MEMORY_CLASS_DEVICE: u16 = 1;
pub const I915_MMAP_OFFSET_FIXED: u64 = 4;
pub const I915_USERPTR_PROBE: u32 = 0x2;
pub const DRM_CLOEXEC: u32 = libc::O_CLOEXEC as u32;

// Execution.
pub const I915_EXEC_BATCH_FIRST: u64 = 1 << 18;
pub const I915_EXEC_FENCE_OUT: u64 = 1 << 17;

// Engine classes.
pub const I915_ENGINE_CLASS_RENDER: u16 = 0;
pub const I915_ENGINE_CLASS_COPY: u16 = 1;
pub const I915_ENGINE_CLASS_VIDEO: u16 = 2;
pub const I915_ENGINE_CLASS_VIDEO_ENHANCE: u16 = 3;
pub const I915_ENGINE_CLASS_COMPUTE: u16 = 4;
pub const I915_ENGINE_INFO_HAS_LOGICAL_INSTANCE: u64 = 1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DrmVersion {
    pub version_major: i32,
    pub version_minor: i32,
    pub version_patchlevel: i32,
    pub name_len: usize,
    pub name: *mut u8,
    pub date_len: usize,
    pub date: *mut u8,
    pub desc_len: usize,
    pub desc: *mut u8,
}

impl DrmVersion {
    /// A `DRM_IOCTL_VERSION` request for the driver's name alone, written into `name`
    /// (the kernel fills at most its length; no date, no description).
    pub fn asking_name(name: &mut [u8]) -> Self {
        DrmVersion {
            version_major: 0,
            version_minor: 0,
            version_patchlevel: 0,
            name_len: name.len(),
            name: name.as_mut_ptr(),
            date_len: 0,
            date: std::ptr::null_mut(),
            desc_len: 0,
            desc: std::ptr::null_mut(),
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DrmGetCap {
    pub capability: u64,
    pub value: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DrmGemClose {
    pub handle: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DrmPrimeHandle {
    pub handle: u32,
    pub flags: u32,
    pub fd: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GetParam {
    pub param: i32,
    pub value: *mut i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemCreate {
    pub size: u64,
    pub handle: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemCreateExt {
    pub size: u64,
    pub handle: u32,
    pub flags: u32,
    pub extensions: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct UserExtension {
    pub next_extension: u64,
    pub name: u32,
    pub flags: u32,
    pub rsvd: [u32; 4],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CreateExtMemoryRegions {
    pub base: UserExtension,
    pub pad: u32,
    pub num_regions: u32,
    pub regions: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryClassInstance {
    pub memory_class: u16,
    pub memory_instance: u16,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemMmapOffset {
    pub handle: u32,
    pub pad: u32,
    pub offset: u64,
    pub flags: u64,
    pub extensions: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemUserptr {
    pub user_ptr: u64,
    pub user_size: u64,
    pub flags: u32,
    pub handle: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemVmControl {
    pub extensions: u64,
    pub flags: u32,
    pub vm_id: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemContextCreateExt {
    pub ctx_id: u32,
    pub flags: u32,
    pub extensions: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemContextCreate {
    pub ctx_id: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemContextParam {
    pub ctx_id: u32,
    pub size: u32,
    pub param: u64,
    pub value: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ContextCreateExtSetparam {
    pub base: UserExtension,
    pub param: GemContextParam,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemContextDestroy {
    pub ctx_id: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RegRead {
    pub offset: u64,
    pub val: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ResetStats {
    pub ctx_id: u32,
    pub flags: u32,
    pub reset_count: u32,
    pub batch_active: u32,
    pub batch_pending: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Query {
    pub num_items: u32,
    pub flags: u32,
    pub items_ptr: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct QueryItem {
    pub query_id: u64,
    pub length: i32,
    pub flags: u32,
    pub data_ptr: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemWait {
    pub bo_handle: u32,
    pub flags: u32,
    pub timeout_ns: i64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemBusy {
    pub handle: u32,
    pub busy: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemSetDomain {
    pub handle: u32,
    pub read_domains: u32,
    pub write_domain: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemSetTiling {
    pub handle: u32,
    pub tiling_mode: u32,
    pub stride: u32,
    pub swizzle_mode: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemGetTiling {
    pub handle: u32,
    pub tiling_mode: u32,
    pub swizzle_mode: u32,
    pub phys_swizzle_mode: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GemMadvise {
    pub handle: u32,
    pub madv: u32,
    pub retained: u32,
}

pub const I915_TILING_NONE: u32 = 0;
pub const I915_TILING_X: u32 = 1;
pub const I915_TILING_Y: u32 = 2;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Execbuffer2 {
    pub buffers_ptr: u64,
    pub buffer_count: u32,
    pub batch_start_offset: u32,
    pub batch_len: u32,
    pub dr1: u32,
    pub dr4: u32,
    pub num_cliprects: u32,
    pub cliprects_ptr: u64,
    pub flags: u64,
    pub rsvd1: u64,
    pub rsvd2: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ExecObject2 {
    pub handle: u32,
    pub relocation_count: u32,
    pub relocs_ptr: u64,
    pub alignment: u64,
    pub offset: u64,
    pub flags: u64,
    pub rsvd1: u64,
    pub rsvd2: u64,
}

/// The sizes a C compiler gives these structures on x86_64 (asserted in tests).
pub const SIZES: &[(&str, usize)] = &[
    ("drm_version", std::mem::size_of::<DrmVersion>()),
    ("drm_get_cap", std::mem::size_of::<DrmGetCap>()),
    ("drm_gem_close", std::mem::size_of::<DrmGemClose>()),
    ("drm_prime_handle", std::mem::size_of::<DrmPrimeHandle>()),
    ("drm_i915_getparam", std::mem::size_of::<GetParam>()),
    ("drm_i915_gem_create", std::mem::size_of::<GemCreate>()),
    (
        "drm_i915_gem_create_ext",
        std::mem::size_of::<GemCreateExt>(),
    ),
    ("i915_user_extension", std::mem::size_of::<UserExtension>()),
    (
        "drm_i915_gem_create_ext_memory_regions",
        std::mem::size_of::<CreateExtMemoryRegions>(),
    ),
    (
        "drm_i915_gem_memory_class_instance",
        std::mem::size_of::<MemoryClassInstance>(),
    ),
    (
        "drm_i915_gem_mmap_offset",
        std::mem::size_of::<GemMmapOffset>(),
    ),
    ("drm_i915_gem_userptr", std::mem::size_of::<GemUserptr>()),
    (
        "drm_i915_gem_set_tiling",
        std::mem::size_of::<GemSetTiling>(),
    ),
    (
        "drm_i915_gem_get_tiling",
        std::mem::size_of::<GemGetTiling>(),
    ),
    (
        "drm_i915_gem_vm_control",
        std::mem::size_of::<GemVmControl>(),
    ),
    (
        "drm_i915_gem_context_create_ext",
        std::mem::size_of::<GemContextCreateExt>(),
    ),
    (
        "drm_i915_gem_context_create",
        std::mem::size_of::<GemContextCreate>(),
    ),
    (
        "drm_i915_gem_context_param",
        std::mem::size_of::<GemContextParam>(),
    ),
    (
        "drm_i915_gem_context_create_ext_setparam",
        std::mem::size_of::<ContextCreateExtSetparam>(),
    ),
    (
        "drm_i915_gem_context_destroy",
        std::mem::size_of::<GemContextDestroy>(),
    ),
    ("drm_i915_reg_read", std::mem::size_of::<RegRead>()),
    ("drm_i915_reset_stats", std::mem::size_of::<ResetStats>()),
    ("drm_i915_query", std::mem::size_of::<Query>()),
    ("drm_i915_query_item", std::mem::size_of::<QueryItem>()),
    ("drm_i915_gem_wait", std::mem::size_of::<GemWait>()),
    ("drm_i915_gem_busy", std::mem::size_of::<GemBusy>()),
    (
        "drm_i915_gem_set_domain",
        std::mem::size_of::<GemSetDomain>(),
    ),
    ("drm_i915_gem_madvise", std::mem::size_of::<GemMadvise>()),
    (
        "drm_i915_gem_execbuffer2",
        std::mem::size_of::<Execbuffer2>(),
    ),
    (
        "drm_i915_gem_exec_object2",
        std::mem::size_of::<ExecObject2>(),
    ),
];
