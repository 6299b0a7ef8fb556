//! What is known about runtimes from their sources and documentation, each fact with
//! where it comes from. clmulti prints these tagged `[known: source]`, apart from what
//! it measured; none is presented as measured.

/// One documented fact about a runtime, with where it was reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownFact {
    /// The fact, in a sentence.
    pub text: &'static str,
    /// Where it is documented: a source file, a document or an issue.
    pub source: &'static str,
    /// What it was reported for: it is said as a fact only where it applies.
    pub scope: Scope,
}

/// The hardware, kernel driver, API and versions a fact was reported for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    /// The hardware in words; `None`: any device of the runtime.
    pub hardware: Option<&'static str>,
    /// Case-insensitive substrings of a device's name (or its PCI id as NEO names
    /// devices it has no name for, `[0xe20b]`) that identify that hardware.
    pub hardware_names: &'static [&'static str],
    /// The kernel driver (`i915`, `xe`); `None`: any.
    pub kernel_driver: Option<&'static str>,
    /// The API it was seen through; `None`: any (what the runtime's source does for
    /// all of them).
    pub api: Option<&'static str>,
    /// The runtime versions.
    pub versions: Versions,
}

/// Runtime versions a fact holds for, compared number by number (`22.43.24595`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    /// Every version.
    Any,
    /// Versions before this one (the first that changed it).
    Before(&'static str),
    /// Versions from the first (the first that has it) to before the second.
    Between(&'static str, &'static str),
}

/// Anything: a fact of the runtime's own source, for every device and version.
pub const ANYWHERE: Scope = Scope {
    hardware: None,
    hardware_names: &[],
    kernel_driver: None,
    api: None,
    versions: Versions::Any,
};

/// What a machine showed, to set each fact's scope against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// Device names.
    pub devices: Vec<String>,
    /// The kernel driver of the devices' DRM clients (`i915`), when one was read.
    pub kernel_driver: Option<String>,
    /// The API clmulti used: always OpenCL.
    pub api: &'static str,
    /// The runtime's version (`CL_DRIVER_VERSION`).
    pub version: Option<String>,
}

/// Whether a fact applies to what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applies {
    /// It does.
    Yes,
    /// It does not: what differs.
    No(String),
    /// The runs did not read what would tell (no device named): what is missing.
    Unread(String),
}

impl Scope {
    /// "Arc Pro B70/B60 (Battlemage) on xe through Level Zero (SYCL, PyTorch XPU)", or
    /// "every device" for a fact of the runtime's own code.
    pub fn describe(&self) -> String {
        if *self == ANYWHERE {
            return "every device, driver, API and version (the runtime's own code)".into();
        }
        let mut parts = vec![self.hardware.unwrap_or("any device").to_owned()];
        if let Some(driver) = self.kernel_driver {
            parts.push(format!("on {driver}"));
        }
        if let Some(api) = self.api {
            parts.push(format!("through {api}"));
        }
        match self.versions {
            Versions::Any => {}
            Versions::Before(v) => parts.push(format!("versions before {v}")),
            Versions::Between(from, v) => parts.push(format!("versions from {from}, before {v}")),
        }
        parts.join(" ")
    }

    /// Whether the fact applies to `seen`.
    pub fn applies(&self, seen: &Seen) -> Applies {
        let mut differs = Vec::new();
        if let Some(hardware) = self.hardware.filter(|_| seen.devices.is_empty()) {
            return Applies::Unread(format!("no run read a device to compare with {hardware}"));
        }
        if let Some(hardware) = self.hardware {
            let matches = seen.devices.iter().any(|d| {
                let d = d.to_lowercase();
                self.hardware_names
                    .iter()
                    .any(|n| d.contains(&n.to_lowercase()))
            });
            if !matches {
                differs.push(format!("not {hardware}: {}", seen.devices.join(", ")));
            }
        }
        if let (Some(want), Some(driver)) = (self.kernel_driver, &seen.kernel_driver) {
            if !driver.starts_with(want) {
                differs.push(format!("kernel driver {driver}, not {want}"));
            }
        }
        if let Some(api) = self.api {
            if !api.contains(seen.api) {
                differs.push(format!("{}, not {api}", seen.api));
            }
        }
        let (first_with, first_without) = match self.versions {
            Versions::Any => (None, None),
            Versions::Before(v) => (None, Some(v)),
            Versions::Between(from, v) => (Some(from), Some(v)),
        };
        if let Some(version) = &seen.version {
            if first_with.is_some_and(|from| version_before(version, from)) {
                differs.push(format!(
                    "version {version}, before {}",
                    first_with.unwrap_or_default()
                ));
            }
            if first_without.is_some_and(|v| !version_before(version, v)) {
                differs.push(format!(
                    "version {version}, not before {}",
                    first_without.unwrap_or_default()
                ));
            }
        }
        if differs.is_empty() {
            Applies::Yes
        } else {
            Applies::No(differs.join("; "))
        }
    }
}

/// Whether dotted version `a` comes before `b`, number by number (`22.43` < `26.18`).
pub fn version_before(a: &str, b: &str) -> bool {
    let numbers = |v: &str| -> Vec<u64> {
        v.split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    numbers(a) < numbers(b)
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
    /// Environment that turns the runtime's own debug log on (what `clmulti diagnose
    /// --runtime-log` sets), with where the keys are documented.
    pub debug_log: (&'static [(&'static str, &'static str)], &'static str),
}

const NEO: &str = "intel/compute-runtime";

/// The first NEO release that closes the dma-buf descriptor it exported for a buffer
/// shared across root devices: the first tag holding commit 890724c562.
pub const NEO_FD_LEAK_FIXED_IN: &str = "26.18.38308";

/// The first NEO release that makes a context over several root devices (GPUs) without
/// a debug key: the first tag holding commit 54b4b18fa0. Before it, clCreateContext
/// over two GPUs returns CL_OUT_OF_HOST_MEMORY (measured for 20.44:
/// results/intel-neo-versions).
pub const NEO_MULTI_ROOT_CONTEXTS_SINCE: &str = "21.30.20482";

/// The NEO fact behind the seed: one dma-buf descriptor per shared buffer, kept open.
pub const NEO_FD_PER_SHARED_BUFFER: KnownFact = KnownFact {
    text: "a buffer in a context over several GPUs (root devices) is made in system memory on the first GPU, exported as a dma-buf and imported on the others; the exported descriptor stays open for the buffer's life (obtainFdFromHandle in createGraphicsAllocationFromExistingStorage), so RLIMIT_NOFILE bounds the buffers; closed since commit 890724c562 (2026-04-03, \"fix: close leaked PRIME FD in createGraphicsAllocationFromExistingStorage\"), first in tag 26.18.38308.1; a buffer shares its storage this way since commit 0607118f15 (first in 21.17.19709), in contexts made by default since commit 54b4b18fa0 (first in 21.30.20482): the bounds are known from the commits' tags; on clmulti's emulated i915, NEO 22.43 kept one descriptor per shared buffer (Arc A770 and Alder Lake-S), 26.27 none, and 20.44 refused the context (results/intel-neo-versions)",
    source: "intel/compute-runtime shared/source/os_interface/linux/drm_memory_manager.cpp; commit 890724c562",
    scope: Scope {
        hardware: Some("Intel GPUs on Linux (NEO's DRM memory manager)"),
        hardware_names: &["intel", "arc", "graphics"],
        kernel_driver: None,
        api: None,
        versions: Versions::Between(NEO_MULTI_ROOT_CONTEXTS_SINCE, NEO_FD_LEAK_FIXED_IN),
    },
};

/// Before contexts over several GPUs were the default: the seed's context fails at once.
pub const NEO_NO_MULTI_ROOT_CONTEXTS: KnownFact = KnownFact {
    text: "a context over several GPUs (root devices) is refused: clCreateContext returns CL_OUT_OF_HOST_MEMORY (-6) unless NEOReadDebugKeys=1 EnableMultiRootDeviceContexts=1; one context per GPU works",
    source: "intel/compute-runtime opencl/source/context/context.cpp; commit 54b4b18fa0 (first in tag 21.30.20482)",
    scope: Scope {
        versions: Versions::Before(NEO_MULTI_ROOT_CONTEXTS_SINCE),
        ..ANYWHERE
    },
};

/// The GTT-mirror reports: Battlemage on xe through Level Zero, another case than the
/// seed's.
const BATTLEMAGE_ON_XE: Scope = Scope {
    hardware: Some("Arc Pro B70/B60 (Battlemage, Xe2)"),
    hardware_names: &["b70", "b60", "b580", "b570", "battlemage", "[0xe2"],
    kernel_driver: Some("xe"),
    api: Some("Level Zero (SYCL, PyTorch XPU)"),
    versions: Versions::Any,
};

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
                scope: ANYWHERE,
            },
            KnownFact {
                text: "when a multi-GPU buffer's first allocation is not in system memory, it also gets a host copy of its size, allocated up front; data moves between GPUs through it",
                source: "intel/compute-runtime shared/source/memory_manager/migration_sync_data.cpp",
                scope: ANYWHERE,
            },
            KnownFact {
                text: "buffers of at most 1 MiB are carved from 2 MiB pools only in single-device contexts",
                source: "intel/compute-runtime Context::BufferPoolAllocator::isAggregatedSmallBuffersEnabled",
                scope: ANYWHERE,
            },
            KnownFact {
                text: "any failed allocation is reported as CL_OUT_OF_HOST_MEMORY (-6), whatever ran out",
                source: NEO,
                scope: ANYWHERE,
            },
            NEO_FD_PER_SHARED_BUFFER,
            NEO_NO_MULTI_ROOT_CONTEXTS,
            KnownFact {
                text: "with two GPUs in one context every device allocation gets a host mirror accounted in the kernel driver's GTT (drm-total-gtt of the peer's DRM client), not in VmRSS",
                source: "intel/compute-runtime#980, ggml-org/llama.cpp#22116, intel/llvm#22873",
                scope: BATTLEMAGE_ON_XE,
            },
            KnownFact {
                text: "debug keys are read only with NEOReadDebugKeys=1; ForceZeDeviceCanAccessPerReturnValue=0 or EnableDeferBacking=0 removed the host mirror in one report",
                source: "intel/compute-runtime#980",
                scope: BATTLEMAGE_ON_XE,
            },
        ],
        debug_log: (&[("NEOReadDebugKeys", "1"), ("PrintDebugMessages", "1"), ("PrintIoctlEntries", "1")], "intel/compute-runtime shared/source/debug_settings/debug_variables_base.inl"),
    },
    Runtime {
        name: "Intel OpenCL CPU runtime",
        platform_names: &["Intel(R) OpenCL"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "a buffer reserves its size of virtual address space at creation and takes RSS at first touch; under RLIMIT_AS clCreateBuffer returns CL_OUT_OF_HOST_MEMORY (-6)",
            source: "measured by clmulti on intel-opencl-rt 2026.2.0 (results/intel-cpu/)",
            scope: ANYWHERE,
        }],
        debug_log: (&[], ""),
    },
    Runtime {
        name: "NVIDIA",
        platform_names: &["NVIDIA"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "a created buffer takes no device memory until first use, and then only on the GPU that uses it",
            source: "measured by clmulti on 2 x H200, driver 580.159.04 (results/nvidia-h200x2/)",
            scope: Scope {
                hardware: Some("H200"),
                hardware_names: &["h200"],
                kernel_driver: None,
                api: Some("OpenCL"),
                versions: Versions::Any,
            },
        }],
        debug_log: (&[], ""),
    },
    Runtime {
        name: "AMD ROCclr",
        platform_names: &["AMD Accelerated Parallel Processing"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "allocation is deferred to first use unless the context has one device or DISABLE_DEFERRED_ALLOC=1; COPY/ALLOC_HOST_PTR buffers keep a host backing copy",
            source: "ROCm/clr rocclr/platform/memory.cpp",
            scope: ANYWHERE,
        }],
        debug_log: (&[], ""),
    },
    Runtime {
        name: "PoCL",
        platform_names: &["Portable Computing Language"],
        eager: Some(false),
        facts: &[KnownFact {
            text: "buffers are allocated only on devices that run commands using them",
            source: "pocl doc/sphinx/source/driver_design.rst",
            scope: ANYWHERE,
        }],
        debug_log: (&[("POCL_DEBUG", "error,warning,memory")], "pocl doc/sphinx/source/using.rst, POCL_DEBUG"),
    },
    Runtime {
        name: "Mesa rusticl",
        platform_names: &["rusticl"],
        eager: Some(true),
        facts: &[KnownFact {
            text: "creating a buffer creates a resource on every device of its context",
            source: "mesa src/gallium/frontends/rusticl/core/context.rs",
            scope: ANYWHERE,
        }],
        debug_log: (&[], ""),
    },
];

/// Corrections to the answer the seed's author was given.
pub const SEED_ANSWER_CORRECTIONS: &[KnownFact] = &[
    KnownFact {
        text: "CL_MEM_DEVICE_LOCAL does not exist: no Khronos or Intel header defines it",
        source: "KhronosGroup/OpenCL-Headers CL/cl.h, CL/cl_ext.h",
        scope: ANYWHERE,
    },
    KnownFact {
        text: "IGC_EnableUnifiedMemory is not a key of Intel's graphics compiler; allocation policy lives in the runtime (NEO), whose debug keys need NEOReadDebugKeys=1",
        source: "intel/intel-graphics-compiler IGC/common/igc_flags.h; intel/compute-runtime debug_variables_base.inl",
        scope: ANYWHERE,
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

    fn seen(device: &str, driver: Option<&str>, version: &str) -> Seen {
        Seen {
            devices: vec![device.into()],
            kernel_driver: driver.map(Into::into),
            api: "OpenCL",
            version: Some(version.into()),
        }
    }

    #[test]
    fn facts_apply_only_where_they_were_reported() {
        let a770 = seen(
            "Intel(R) Arc(TM) A770 Graphics",
            Some("i915"),
            "22.43.24595",
        );
        let emulated = seen("Intel(R) Graphics [0x56a0]", Some("i915"), "22.43.24595");
        let b60 = seen(
            "Intel(R) Arc(TM) Pro B60 Graphics",
            Some("xe"),
            "25.18.33578",
        );
        assert_eq!(NEO_FD_PER_SHARED_BUFFER.scope.applies(&a770), Applies::Yes);
        assert_eq!(
            NEO_FD_PER_SHARED_BUFFER.scope.applies(&emulated),
            Applies::Yes
        );
        let newer = seen(
            "Intel(R) Arc(TM) A770 Graphics",
            Some("i915"),
            "26.27.39122",
        );
        assert!(
            matches!(NEO_FD_PER_SHARED_BUFFER.scope.applies(&newer), Applies::No(why) if why.contains("not before 26.18.38308"))
        );
        // Runs that read no device (a shared case skipped on one GPU) tell nothing of
        // the hardware: never "not this machine" with an empty name.
        let unread = Seen {
            devices: Vec::new(),
            ..a770.clone()
        };
        assert!(matches!(
            BATTLEMAGE_ON_XE.applies(&unread),
            Applies::Unread(why) if why.contains("no run read a device")
        ));
        // The GTT mirror reports are Battlemage on xe through Level Zero.
        let Applies::No(why) = BATTLEMAGE_ON_XE.applies(&a770) else {
            panic!()
        };
        assert!(
            why.contains("not Arc Pro B70/B60")
                && why.contains("kernel driver i915, not xe")
                && why.contains("OpenCL, not Level Zero"),
            "{why}"
        );
        let Applies::No(why) = BATTLEMAGE_ON_XE.applies(&b60) else {
            panic!()
        };
        assert_eq!(why, "OpenCL, not Level Zero (SYCL, PyTorch XPU)");
        assert_eq!(
            BATTLEMAGE_ON_XE.describe(),
            "Arc Pro B70/B60 (Battlemage, Xe2) on xe through Level Zero (SYCL, PyTorch XPU)"
        );
        assert_eq!(ANYWHERE.applies(&a770), Applies::Yes);
        assert!(version_before("22.43.24595", "26.18.38308"));
        assert!(!version_before("26.18.38308.1", "26.18.38308"));
        assert!(version_before("26.9.1", "26.18.38308"));
    }
}
