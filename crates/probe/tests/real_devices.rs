//! Probing real PoCL devices through the real ICD loader.

use clmulti_probe::{
    raw, select, DeviceChoice, DeviceRequest, DeviceTypeFilter, PlatformSelector, Queried,
};

fn pocl() -> Vec<clmulti_probe::Platform> {
    // Before the first OpenCL call, so the loader sees it: PoCL alone, one CPU device.
    std::env::set_var("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd");
    std::env::remove_var("POCL_DEVICES");
    clmulti_probe::platforms().expect("PoCL is installed (scripts/setup-opencl.sh)")
}

#[test]
fn probing_selection_and_a_failing_query() {
    let platforms = pocl();
    assert_eq!(platforms.len(), 1);
    let devices = &platforms[0].devices;
    assert_eq!(devices.len(), 1, "{devices:#?}");

    // A query the runtime rejects comes back by name, not as a panic.
    let id = devices[0].id();
    // SAFETY: `id` came from the loader in this process.
    let err = unsafe { raw::device_info(id, 0xFFFF) }.unwrap_err();
    assert_eq!(err.to_string(), "CL_INVALID_VALUE (-30)");
    let shown = serde_json::to_value(Queried::<u32>::Error {
        error: err.to_string(),
    })
    .unwrap();
    assert_eq!(
        shown,
        serde_json::json!({ "error": "CL_INVALID_VALUE (-30)" })
    );

    // Selection by name, with the fallback from GPUs to any type.
    let request = DeviceRequest {
        platform: PlatformSelector::Name("portable".into()),
        device_type: DeviceTypeFilter::Gpu,
        devices: DeviceChoice::Count(1),
        fallback_to_any_type: true,
        partition: None,
    };
    let selection = select(&platforms, &request).unwrap();
    assert!(selection.fell_back_to_any_type);
    assert_eq!(selection.devices.len(), 1);
    assert_eq!(selection.devices[0].info().selector, "0:0");
    let strict = DeviceRequest {
        fallback_to_any_type: false,
        ..request.clone()
    };
    assert!(select(&platforms, &strict)
        .unwrap_err()
        .to_string()
        .contains("no device of type gpu"));
    let too_many = DeviceRequest {
        devices: DeviceChoice::Count(3),
        ..request.clone()
    };
    assert!(select(&platforms, &too_many)
        .unwrap_err()
        .to_string()
        .contains("found 1"));
    let bad_index = DeviceRequest {
        devices: DeviceChoice::Indices(vec![4]),
        ..request
    };
    assert!(select(&platforms, &bad_index)
        .unwrap_err()
        .to_string()
        .contains("device index 4 is out of range"));
}
