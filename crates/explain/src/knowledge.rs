//! What is known about runtimes from their sources and documentation, each fact with
//! where it comes from. clmulti prints these tagged `[known: source]`, apart from what
//! it measured; none is presented as measured.

/// One documented fact about a runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownFact {
    /// The fact, in a sentence.
    pub text: &'static str,
    /// Where it is documented: a source file, a document or an issue.
    pub source: &'static str,
}

/// A runtime and what is known of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runtime {
    /// Its name in messages.
    pub name: &'static str,
    /// Substrings of `CL_PLATFORM_NAME` that identify it (case-insensitive).
    pub platform_names: &'static [&'static str],
    /// Whether it makes a buffer resident at creation (`true`), at first use
    /// (`false`), as documented.
    pub eager: Option<bool>,
    /// The facts.
    pub facts: &'static [KnownFact],
}

const NEO: &str = "intel/compute-runtime";

/// The table. Order matters: the first runtime whose name matches wins, so Intel's
/// GPU runtime ("Intel(R) OpenCL Graphics") comes before its CPU runtime ("Intel(R)
/// OpenCL").
pub const RUNTIMES: &[Runtime] = &[
    Runtime {
        name: "Intel compute-runtime (NEO, GPUs)",
        platform_names: &["Intel(R) OpenCL Graphics", "Intel(R) OpenCL HD Graphics"],
        eager: Some(true),
        facts: &[
            KnownFact {
                text: "a buffer in a context with several GPUs gets one allocation on each GPU (MultiGraphicsAllocation)",
                source: "intel/compute-runtime opencl/source/mem_obj/buffer.cpp, Buffer::create",
            },
            KnownFact {
                text: "when a multi-GPU buffer's first allocation is not in system memory, it also gets a host copy of its size, allocated up front; data moves between GPUs through it",
                source: "intel/compute-runtime shared/source/memory_manager/migration_sync_data.cpp",
            },
            KnownFact {
                text: "buffers of at most 1 MiB are carved from 2 MiB pools only in single-device contexts",
                source: "intel/compute-runtime Context::BufferPoolAllocator::isAggregatedSmallBuffersEnabled",
            },
            KnownFact {
                text: "any failed allocation is reported as CL_OUT_OF_HOST_MEMORY (-6), whatever ran out",
                source: NEO,
            },
            KnownFact {
                text: "with two GPUs in one context every device allocation gets a host mirror accounted in the kernel driver's GTT (drm-total-gtt of the peer's DRM client), not in VmRSS",
                source: "intel/compute-runtime#980, ggml-org/llama.cpp#22116, intel/llvm#22873",
            },
            KnownFact {
                text: "buffers shared between GPUs are exported as dma-buf file descriptors that stay open for the buffer's life",
                source: "intel/compute-runtime shared/source/os_interface/linux/drm_memory_manager.cpp, obtainFdFromHandle",
            },
            KnownFact {
                text: "debug keys are read only with NEOReadDebugKeys=1; ForceZeDeviceCanAccessPerReturnValue=0 or EnableDeferBacking=0 removed the host mirror in one report",
                source: "intel/compute-runtime#980",
            },
        ],
    },
    Runtime {
        name: "Intel OpenCL CPU runtime",
        platform_names: &["Intel(R) OpenCL"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "a buffer reserves its size of virtual address space at creation and takes RSS at first touch; under RLIMIT_AS clCreateBuffer returns CL_OUT_OF_HOST_MEMORY (-6)",
            source: "measured by clmulti on intel-opencl-rt 2026.2.0 (results/intel-cpu/)",
        }],
    },
    Runtime {
        name: "NVIDIA",
        platform_names: &["NVIDIA"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "a created buffer takes no device memory until first use, and then only on the GPU that uses it",
            source: "measured by clmulti on 2 x H200, driver 580.159.04 (results/nvidia-h200x2/)",
        }],
    },
    Runtime {
        name: "AMD ROCclr",
        platform_names: &["AMD Accelerated Parallel Processing"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "allocation is deferred to first use unless the context has one device or DISABLE_DEFERRED_ALLOC=1; COPY/ALLOC_HOST_PTR buffers keep a host backing copy",
            source: "ROCm/clr rocclr/platform/memory.cpp",
        }],
    },
    Runtime {
        name: "PoCL",
        platform_names: &["Portable Computing Language"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "buffers are allocated only on devices that run commands using them",
            source: "pocl doc/sphinx/source/driver_design.rst",
        }],
    },
    Runtime {
        name: "Mesa rusticl",
        platform_names: &["rusticl"],
        eager: Some(true),
        facts: &[KnownFact {
            text: "creating a buffer creates a resource on every device of its context",
            source: "mesa src/gallium/frontends/rusticl/core/context.rs",
        }],
    },
];

/// Corrections to the answer the seed's author was given.
pub const SEED_ANSWER_CORRECTIONS: &[KnownFact] = &[
    KnownFact {
        text: "CL_MEM_DEVICE_LOCAL does not exist: no Khronos or Intel header defines it",
        source: "KhronosGroup/OpenCL-Headers CL/cl.h, CL/cl_ext.h",
    },
    KnownFact {
        text: "IGC_EnableUnifiedMemory is not a key of Intel's graphics compiler; allocation policy lives in the runtime (NEO), whose debug keys need NEOReadDebugKeys=1",
        source: "intel/intel-graphics-compiler IGC/common/igc_flags.h; intel/compute-runtime debug_variables_base.inl",
    },
];

/// The runtime a platform name belongs to, if the table knows it.
pub fn runtime_of(platform: &str) -> Option<&'static Runtime> {
    let platform = platform.to_lowercase();
    RUNTIMES.iter().find(|r| {
        r.platform_names
            .iter()
            .any(|n| platform.contains(&n.to_lowercase()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_map_to_their_runtimes() {
        let name = |p| runtime_of(p).map(|r| r.name);
        assert_eq!(
            name("Intel(R) OpenCL Graphics"),
            Some("Intel compute-runtime (NEO, GPUs)")
        );
        assert_eq!(name("Intel(R) OpenCL"), Some("Intel OpenCL CPU runtime"));
        assert_eq!(name("NVIDIA CUDA"), Some("NVIDIA"));
        assert_eq!(name("Portable Computing Language"), Some("PoCL"));
        assert_eq!(name("rusticl"), Some("Mesa rusticl"));
        assert_eq!(name("Oclgrind"), None);
        assert!(RUNTIMES
            .iter()
            .all(|r| r.facts.iter().all(|f| !f.source.is_empty())));
    }
}
