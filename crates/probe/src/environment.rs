//! The part of a process's environment that concerns OpenCL: the ICD loader, the
//! runtimes' own keys, preloads and layers, and clmulti's emulations. What a bug
//! report needs to rerun a case, and nothing else: every other variable is left out
//! by name (its value never read into a report), and the list of what was left out
//! says so.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Prefixes of variables that concern OpenCL runtimes and loaders.
const PREFIXES: [&str; 10] = [
    "OCL_ICD_", "OPENCL_", "POCL_", "RUSTICL_", "CLMULTI_", "CUDA_", "ZE_", "SYCL_", "ONEAPI_",
    "IGC_",
];
/// Words that mark a secret: never kept, whatever the prefix.
const SECRET_WORDS: [&str; 5] = ["SECRET", "TOKEN", "PASSWORD", "CREDENTIAL", "_KEY"];
/// Whole names that concern them.
const NAMES: [&str; 4] = [
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "MESA_LOADER_DRIVER_OVERRIDE",
    "CL_CONFIG_USE_VECTORIZER",
];

/// NEO reads a debug key from the environment under its own name when
/// `NEOReadDebugKeys=1`; these are the ones clmulti's findings use.
const NEO_KEYS: [&str; 17] = [
    "NEOReadDebugKeys",
    "SetCommandStreamReceiver",
    "ProductFamilyOverride",
    "CreateMultipleRootDevices",
    "AUBDumpCaptureFileName",
    "HardwareInfoOverride",
    "UseAubStream",
    "PrintDebugMessages",
    "PrintIoctlEntries",
    "LogAllocationType",
    "LogAllocationStdout",
    "ForceZeDeviceCanAccessPerReturnValue",
    "EnableDeferBacking",
    "EnableDirectSubmission",
    "ExperimentalSmallBufferPoolAllocator",
    "EnableMultiStorageResources",
    "UseKmdMigrationForBuffers",
];

/// The OpenCL-related environment, and the names of the variables left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Variable -> value.
    pub kept: BTreeMap<String, String>,
    /// Every other variable, by name only.
    pub left_out: Vec<String>,
}

/// Whether a variable concerns OpenCL (kept with its value).
pub fn concerns_opencl(name: &str) -> bool {
    let secret = SECRET_WORDS.iter().any(|w| name.to_uppercase().contains(w));
    NAMES.contains(&name)
        || NEO_KEYS.contains(&name)
        || (!secret && PREFIXES.iter().any(|p| name.starts_with(p)))
}

/// Splits `vars` into what concerns OpenCL and what is left out.
pub fn filter(vars: impl IntoIterator<Item = (String, String)>) -> Environment {
    let mut env = Environment::default();
    for (name, value) in vars {
        if concerns_opencl(&name) {
            env.kept.insert(name, value);
        } else {
            env.left_out.push(name);
        }
    }
    env.left_out.sort();
    env
}

/// This process's environment, filtered.
pub fn current() -> Environment {
    filter(std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_concerns_opencl_keeps_its_value() {
        let env = filter(
            [
                ("OCL_ICD_VENDORS", "/v"),
                ("POCL_DEVICES", "cpu cpu"),
                ("NEOReadDebugKeys", "1"),
                ("LD_PRELOAD", "/x.so"),
                ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
                ("CLMULTI_UPLOAD_TOKEN", "t0k3n"),
                ("HOME", "/root"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned())),
        );
        assert_eq!(env.kept.len(), 4);
        assert_eq!(
            env.left_out,
            ["AWS_SECRET_ACCESS_KEY", "CLMULTI_UPLOAD_TOKEN", "HOME"]
        );
        assert!(!format!("{env:?}").contains("s3cr3t"));
    }
}
