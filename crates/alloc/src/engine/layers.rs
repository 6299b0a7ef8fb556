//! The OpenCL layers a run's `[env]` names: which the loader put in the call path
//! (part of what was measured) and which it left out.

use clmulti_explain::{Report, Warning, WarningKind};
use clmulti_scenario::Scenario;

/// Warnings for the layers `OPENCL_LAYERS` names: loaded, or left out and why.
pub(super) fn warn(scenario: &Scenario, report: &mut Report) {
    if let Some(layers) = scenario.env.get("OPENCL_LAYERS") {
        let (loaded, ignored): (Vec<&str>, Vec<&str>) = layers
            .split(':')
            .filter(|l| !l.is_empty())
            .partition(|l| clmulti_probe::is_mapped(std::path::Path::new(l)));
        // By file name: a page never carries the folder it was built in (the
        // report's env has the path).
        let names: Vec<&str> = loaded
            .iter()
            .map(|l| l.rsplit('/').next().unwrap_or(l))
            .collect();
        if !loaded.is_empty() {
            report.warnings.push(Warning {
                kind: WarningKind::EmulationLayer,
                message: format!(
                    "ran under the OpenCL layer {}: what it models is part of what was measured",
                    names.join(":")
                ),
                advice: "compare with the same scenario without OPENCL_LAYERS".into(),
            });
        }
        if !ignored.is_empty() {
            let loader =
                clmulti_probe::loaded_library("libOpenCL.so").unwrap_or_else(|| "unknown".into());
            // A loader that reads OPENCL_LAYERS (ocl-icd >= 2.3) opens each library
            // named (its constructor runs) and closes one that is no layer: never
            // say such a library did not load.
            let what = if names_variable(&loader, "OPENCL_LAYERS") {
                format!(
                    "which the ICD loader ({loader}), reading OPENCL_LAYERS, opened (its code ran) and left out of the call path: it is no OpenCL layer (no clInitLayer), or its clInitLayer refused"
                )
            } else {
                format!(
                    "which the ICD loader ({loader}) did not load: it does not read OPENCL_LAYERS"
                )
            };
            report.warnings.push(Warning {
                kind: WarningKind::LayerNotLoaded,
                message: format!(
                    "OPENCL_LAYERS names {}, {what}: the run measured the runtime without it",
                    ignored.join(":"),
                ),
                advice: "name a library that exports clGetLayerInfo and clInitLayer, and use a loader that reads OPENCL_LAYERS (ocl-icd >= 2.3)".into(),
            });
        }
    }
}

/// Whether the library's file holds the name of an environment variable (a loader
/// that reads it).
pub(crate) fn names_variable(library: &str, variable: &str) -> bool {
    std::fs::read(library).is_ok_and(|bytes| {
        bytes
            .windows(variable.len())
            .any(|w| w == variable.as_bytes())
    })
}
