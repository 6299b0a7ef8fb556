//! The `[env]` keys a scenario may set without anyone's word: each loads nothing and
//! writes nothing outside the run, and says why here. Every other key is a load
//! (`LD_PRELOAD`, a vendors folder, a cache, `HOME`, `PATH`, a compiler setting, a
//! key nobody listed: deny by default). Keys are matched exactly, as the dynamic
//! linker and the runtimes read them (`ld_preload` is not `LD_PRELOAD` to the
//! linker, and is a key nobody listed here).

use clmulti_contract::{kmd_emu, layer};

/// A key that is inert, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InertKey {
    /// The variable, exactly as its reader spells it.
    pub key: &'static str,
    /// Why setting it loads and writes nothing outside the run.
    pub why: &'static str,
    /// The values that are inert, when only some are (else any plain value).
    pub values: Option<&'static [&'static str]>,
}

const fn key(key: &'static str, why: &'static str) -> InertKey {
    InertKey {
        key,
        why,
        values: None,
    }
}

const LAYER_KNOB: &str = "a knob of clmulti's emulation layer: a word or a size it checks";

/// Every inert key. The README's "A scenario file is code" lists them (a test keeps
/// the two alike).
pub const INERT_KEYS: [InertKey; 32] = [
    // The C library.
    key(
        "MALLOC_ARENA_MAX",
        "how many arenas glibc's malloc keeps: a number",
    ),
    // The ICD loader (ocl-icd).
    key("OCL_ICD_PLATFORM_SORT", "the order ocl-icd lists platforms in (`devices`, `none`)"),
    key("OCL_ICD_DEFAULT_PLATFORM", "the index of ocl-icd's default platform"),
    key("OCL_ICD_DEBUG", "ocl-icd's debug messages, on stderr"),
    // PoCL.
    key("POCL_DEVICES", "which of PoCL's device drivers, and how many (`pthread pthread`): names without a `/`, so each driver is one of PoCL's own"),
    key("POCL_MEMORY_LIMIT", "the memory PoCL's devices report, GiB"),
    key("POCL_DEBUG", "PoCL's debug messages, on stderr"),
    key("POCL_CPU_MAX_CU_NUM", "the compute units of PoCL's CPU devices"),
    key("POCL_MAX_PTHREAD_COUNT", "PoCL's worker threads"),
    key("POCL_AFFINITY", "whether PoCL pins its worker threads to cores"),
    key("POCL_KERNEL_CACHE", "whether PoCL keeps compiled kernels (0: it writes and loads less)"),
    // Intel's GPU runtime NEO: its debug keys are read only with NEOReadDebugKeys=1.
    key("NEOReadDebugKeys", "lets NEO read its debug keys from the environment, each checked here on its own; NEO also reads igdrcl.config from its working folder, and a run's is a fresh empty one"),
    key("CreateMultipleRootDevices", "how many devices NEO presents"),
    key("ProductFamilyOverride", "which GPU NEO models (`dg2`)"),
    InertKey {
        key: "SetCommandStreamReceiver",
        why: "NEO on the hardware (0) or recording for its AUB model (1, 3), whose capture goes where AUBDumpCaptureFileName says (a write checked on its own) or into the run's fresh working folder; TBX (2, 4) talks to a server over the network and is no inert value",
        values: Some(&["0", "1", "3"]),
    },
    key("PrintDebugMessages", "NEO's debug messages, on stdout"),
    key("PrintIoctlEntries", "each ioctl NEO makes, on stdout"),
    key("PrintDebugSettings", "the debug keys NEO read, on stdout"),
    key("LogAllocationType", "NEO's allocation log, on stdout"),
    // clmulti's emulation layer and emulated i915 driver.
    key(layer::POLICY, LAYER_KNOB),
    key(layer::MIRROR_LIMIT, LAYER_KNOB),
    key(layer::DEVICE_MEMORY, LAYER_KNOB),
    key(layer::FAIL_AFTER, LAYER_KNOB),
    key(layer::FAIL_ERROR, LAYER_KNOB),
    key(layer::FAIL_SCOPE, LAYER_KNOB),
    key(layer::BYTE_BUDGET, LAYER_KNOB),
    key(kmd_emu::DEVICES, "how many Arc A770s clmulti's emulated i915 driver presents"),
    key(kmd_emu::LOCAL_MEMORY, "the local memory of clmulti's emulated devices"),
    key(kmd_emu::TRACE, "the emulated driver's ioctls, on stderr"),
    // Device selection in other runtimes.
    key("CUDA_VISIBLE_DEVICES", "which NVIDIA GPUs the CUDA driver shows (indices or UUIDs)"),
    key("ZE_AFFINITY_MASK", "which devices Intel's Level Zero runtime shows"),
    key("ROCR_VISIBLE_DEVICES", "which AMD GPUs ROCm shows"),
];

/// Whether `key = value` in a scenario's `[env]` loads and writes nothing: the key is
/// listed and its value is one it lists, or a plain value (letters, digits, spaces
/// and `_ - . , : + % =`: never a path, a `$` the dynamic linker expands, or a `~`).
pub fn inert(key: &str, value: &str) -> bool {
    INERT_KEYS.iter().any(|k| {
        k.key == key
            && match k.values {
                Some(values) => values.contains(&value),
                None => plain(value),
            }
    })
}

/// Whether `key` is on the list (whatever its value).
pub fn listed(key: &str) -> bool {
    INERT_KEYS.iter().any(|k| k.key == key)
}

/// The list as the README writes it, one `- \`KEY\`: why` line per key (values
/// named where only some are inert).
#[cfg(test)]
fn markdown() -> String {
    INERT_KEYS
        .iter()
        .map(|k| match k.values {
            Some(values) => format!("- `{}` ({}): {}\n", k.key, values.join(", "), k.why),
            None => format!("- `{}`: {}\n", k.key, k.why),
        })
        .collect()
}

fn plain(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " _-.,:+%=".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_keys_with_plain_values_are_inert() {
        assert!(inert("POCL_DEVICES", "pthread pthread"));
        assert!(inert("CreateMultipleRootDevices", "2"));
        assert!(inert("CLMULTI_LAYER_MIRROR_LIMIT", "100%"));
        // Case matters, as it does to the dynamic linker.
        assert!(!inert("pocl_devices", "pthread"));
        assert!(!inert("LD_PRELOAD", "libm.so.6"));
        assert!(!inert("HOME", "x"));
        // A path in a listed key is not a plain value.
        assert!(!inert("POCL_DEVICES", "../../tmp/x"));
        assert!(!inert("POCL_DEBUG", "$ORIGIN"));
        assert!(inert("SetCommandStreamReceiver", "1"));
        assert!(!inert("SetCommandStreamReceiver", "2"));
    }

    #[test]
    fn the_readme_lists_the_inert_keys_as_they_are_here() {
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
        )
        .unwrap();
        let (start, end) = ("<!-- inert keys -->\n", "<!-- end of inert keys -->");
        let listed = readme
            .split_once(start)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(list, _)| list)
            .expect("README.md: the list of inert keys between its markers");
        assert_eq!(
            listed,
            markdown(),
            "README.md's list of inert keys is not crates/cli/src/trust/inert.rs's: write this between the markers:\n{}",
            markdown()
        );
    }

    #[test]
    fn each_key_is_listed_once_with_a_reason() {
        for (i, k) in INERT_KEYS.iter().enumerate() {
            assert!(k.why.len() > 10, "{}", k.key);
            assert!(
                INERT_KEYS[i + 1..].iter().all(|o| o.key != k.key),
                "{} twice",
                k.key
            );
        }
    }
}
