//! Before the first buffer: loading the runtime under the scenario's limits and
//! choosing its devices, or saying why the run ends there.

use super::*;

/// Loads the runtime and picks the scenario's devices, filling in the report's
/// setup; `None` when the run ends here (no runtime under its limits, too few
/// devices, a refused partition, a layer not in the call path), with the report
/// saying why.
pub(super) fn select_devices(
    scenario: &Scenario,
    tracker: &CallTracker,
    report: &mut Report,
) -> Result<Option<Vec<clmulti_probe::Device>>, EngineError> {
    // Learnt while the process has few mappings, before the runtime brings its own.
    clmulti_probe::UsageReader::learn_mapping_count();
    tracker.enter(Call::GetPlatformIds);
    let platforms = match clmulti_probe::platforms() {
        Ok(p) => p,
        Err(e) if scenario.limits.any() || loader_env(scenario).is_some() => {
            no_platform_under_limits(scenario, e, report);
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    tracker.enter(Call::CreateSubDevices);
    let request = DeviceRequest::from(&scenario.devices);
    let selection = match clmulti_probe::select(&platforms, &request) {
        Ok(s) => s,
        Err(e) if e.is_too_few_devices() => {
            report.stop = too_few_devices(&e, &request);
            return Ok(None);
        }
        Err(e @ clmulti_probe::SelectError::Partition { .. }) => {
            report.stop = StopReason::Unsupported {
                reason: e.to_string(),
            };
            return Ok(None);
        }
        Err(source) => {
            return Err(EngineError::Devices {
                file: scenario.file.clone(),
                source,
            })
        }
    };
    drop(platforms);
    if let Some(reason) = emulation_layer_missing(scenario, selection.platform_index) {
        report.stop = StopReason::Unsupported { reason };
        return Ok(None);
    }
    report.platform = selection.platform_name;
    report.platform_version = selection.platform_version;
    report.devices = selection.devices.iter().map(|d| d.info().clone()).collect();
    report.driver_limits = DriverLimits::read(
        std::path::Path::new("/sys"),
        report.host_limits.page_size_bytes,
    );
    let driver = report
        .devices
        .first()
        .and_then(|d| d.driver_version.value().cloned())
        .unwrap_or_default();
    report.neo_emulation =
        clmulti_probe::neo::emulation_for_run(&report.platform, &driver, &scenario.env);
    if selection.fell_back_to_any_type {
        report.warnings.push(Warning {
            kind: WarningKind::FellBackToAnyType,
            message: format!(
                "no device of type {} found; ran on {} instead",
                DeviceTypeFilter::from(scenario.devices.device_type),
                report
                    .devices
                    .iter()
                    .map(|d| d.display_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            advice: "set devices.fallback = \"none\" to fail instead".into(),
        });
    }
    Ok(Some(selection.devices))
}

/// The stop of a run that asks for more devices than this machine has: skipped, at
/// the key that asked, with PoCL's way to a second device.
fn too_few_devices(e: &clmulti_probe::SelectError, request: &DeviceRequest) -> StopReason {
    let mut reason = e.to_string();
    if clmulti_probe::is_pocl(&reason) {
        reason.push_str(
            "; PoCL makes one CPU device per word of POCL_DEVICES (e.g. \"pthread pthread\"; \"cpu cpu\" on PoCL >= 4)",
        );
    }
    StopReason::Skipped {
        reason,
        key: Some(e.key_in(request)),
    }
}

/// The parent found a runtime; under the scenario's limits, or through its [env]'s
/// loader settings, the loader found none.
fn no_platform_under_limits(
    scenario: &Scenario,
    e: clmulti_probe::ProbeError,
    report: &mut Report,
) {
    let code = match e {
        clmulti_probe::ProbeError::Loader(code) => code,
        clmulti_probe::ProbeError::NoPlatform => ClCode::PLATFORM_NOT_FOUND_KHR,
    };
    report.stop = StopReason::Failed {
        error: code.into(),
        call: Call::GetPlatformIds,
        index: 0,
    };
    report.analysis.statements.push(match loader_env(scenario) {
        Some((key, value)) if !scenario.limits.any() => Statement::inferred(
            "the scenario's [env] and the loader finding no platform",
            format!("the ICD loader found no OpenCL platform through the scenario's {key} = {value}: it names no runtime that loads here"),
        ),
        _ => Statement::inferred(
            "the scenario's [limits] and the loader finding no platform",
            format!(
                "the OpenCL runtime did not load under {}: the limit is too low for the ICD loader to open the runtime (PoCL 3 on Debian 12 needed nofile >= 5 through pocl.icd alone, >= 6 through the vendors folder, and as >= 384MiB)",
                describe_limits(scenario)
            ),
        ),
    });
}

fn describe_limits(scenario: &Scenario) -> String {
    scenario
        .limits
        .soft
        .iter()
        .map(|(which, value)| {
            let value = if which.in_bytes() {
                clmulti_scenario::format_size(*value)
            } else {
                value.to_string()
            };
            format!("[limits] {} = {value} ({})", which.key(), which.name())
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The scenario's `[env]` entry that tells the ICD loader where runtimes are.
fn loader_env(scenario: &Scenario) -> Option<(&str, &str)> {
    ["OCL_ICD_VENDORS", "OCL_ICD_FILENAMES"]
        .into_iter()
        .find_map(|k| scenario.env.get(k).map(|v| (k, v.as_str())))
}

/// When the scenario names clmulti's emulation layer in `OPENCL_LAYERS` and the layer
/// does not answer its query, why: the run would measure the bare runtime while
/// calling it the emulation. Loaders without layer support ignore the variable.
fn emulation_layer_missing(scenario: &Scenario, platform_index: usize) -> Option<String> {
    // The process's own (a run's [env] is applied before the runtime loads).
    let layers = std::env::var("OPENCL_LAYERS")
        .ok()
        .or_else(|| scenario.env.get("OPENCL_LAYERS").cloned())?;
    if !layers.contains(clmulti_contract::LAYER.file_name) {
        return None;
    }
    let query = clmulti_probe::platform_text(platform_index, clmulti_contract::layer::ACTIVE_QUERY);
    if query.is_ok() {
        return None;
    }
    let loader = clmulti_probe::loaded_library("libOpenCL.so")
        .unwrap_or_else(|| "an unknown libOpenCL.so".into());
    let ocl_icd = "/usr/lib/x86_64-linux-gnu/libOpenCL.so.1";
    let fix = if loader != ocl_icd && std::path::Path::new(ocl_icd).exists() {
        format!("load ocl-icd's loader first: LD_PRELOAD={ocl_icd}")
    } else {
        "use an ICD loader with layer support (ocl-icd >= 2.3, Debian/Ubuntu package ocl-icd-libopencl1)".into()
    };
    let why = if super::names_variable(&loader, "OPENCL_LAYERS") {
        "reads OPENCL_LAYERS and opened what it names (its code ran), but found no layer it could put in the path"
    } else {
        "does not read OPENCL_LAYERS and did not load it"
    };
    Some(format!(
        "the emulation layer in OPENCL_LAYERS ({layers}) is not in the call path: the ICD loader {loader} {why}; {fix}"
    ))
}
