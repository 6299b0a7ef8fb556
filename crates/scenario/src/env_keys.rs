//! The `[env]` names clmulti knows: its own (the paths it resolves, the emulation
//! layer's and the emulated driver's knobs) and the runtimes' it documents. Linux's
//! variables are case-sensitive: one of these in another case (`ld_preload`) is read
//! by nothing, and a near miss (`POCL_DEVICE`) is likely a typo.

/// The runtimes' variables clmulti's pages and configs name: the ICD loader's,
/// PoCL's, Intel's NEO debug keys, NVIDIA's and the dynamic linker's.
const RUNTIME_KEYS: [&str; 16] = [
    "LD_LIBRARY_PATH",
    "OCL_ICD_ENABLE_TRACE",
    "OCL_ICD_PLATFORM_SORT",
    "POCL_DEVICES",
    "POCL_MEMORY_LIMIT",
    "POCL_DEBUG",
    "POCL_MAX_PTHREAD_COUNT",
    "POCL_CACHE_DIR",
    "NEOReadDebugKeys",
    "PrintDebugMessages",
    "PrintIoctlEntries",
    "LogAllocationType",
    "CreateMultipleRootDevices",
    "ExperimentalSmallBufferPoolAllocator",
    "CUDA_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
];

/// Every `[env]` name clmulti knows.
pub(crate) fn known() -> impl Iterator<Item = &'static str> {
    crate::PATH_ENV_KEYS
        .into_iter()
        .chain(clmulti_contract::layer::KNOBS)
        .chain(clmulti_contract::kmd_emu::KNOBS)
        .chain(RUNTIME_KEYS)
}

/// The known name `key` is in another case (`LD_PRELOAD` for `ld_preload`); `None`
/// when it is one exactly, or none.
pub(crate) fn other_case(key: &str) -> Option<&'static str> {
    known().find(|k| *k != key && k.eq_ignore_ascii_case(key))
}

/// The known name `key` is a near miss of (`POCL_DEVICES` for `POCL_DEVICE`), for a
/// warning: any name may be set, so this is not an error.
pub(crate) fn near_miss(key: &str) -> Option<&'static str> {
    if known().any(|k| k == key) {
        return None;
    }
    crate::suggest::closest(key, known())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_name_in_another_case_or_a_typo_is_told_apart_from_the_name() {
        assert_eq!(other_case("ld_preload"), Some("LD_PRELOAD"));
        assert_eq!(other_case("pocl_devices"), Some("POCL_DEVICES"));
        assert_eq!(other_case("LD_PRELOAD"), None);
        assert_eq!(other_case("MY_OWN"), None);
        assert_eq!(near_miss("POCL_DEVICE"), Some("POCL_DEVICES"));
        assert_eq!(near_miss("OPENCL_LAYER"), Some("OPENCL_LAYERS"));
        assert_eq!(near_miss("POCL_DEVICES"), None);
        assert_eq!(near_miss("MY_OWN_SETTING"), None);
    }
}
