use crate::common;
use clmulti_probe::{DeviceKind, DevicesReport};
use common::*;

#[test]
fn lists_two_pocl_devices_with_distinct_ids_and_memory() {
    let out = run(clmulti(2).args(["devices", "--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let report: DevicesReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.schema_version, clmulti_probe::DEVICES_SCHEMA_VERSION);
    assert_eq!(report.platforms.len(), 1, "pinned to PoCL");
    let platform = &report.platforms[0];
    assert!(platform.display_name().contains("Portable"));
    let devices = &platform.devices;
    assert_eq!(devices.len(), 2);
    assert_ne!(devices[0].selector, devices[1].selector);
    assert_ne!(
        devices[0].vendor_id, devices[1].vendor_id,
        "PoCL gives each device its own id"
    );
    for d in devices {
        let global = *d.global_mem_bytes.value().unwrap();
        let max_alloc = *d.max_alloc_bytes.value().unwrap();
        assert!(
            max_alloc > 0 && global >= max_alloc,
            "{global} / {max_alloc}"
        );
        assert_eq!(d.kind.value(), Some(&DeviceKind::Cpu));
        assert!(!d.extensions.value().unwrap().is_empty());
    }
    // POCL_MEMORY_LIMIT=2 pins the size: 2 GiB global memory, a quarter of it per allocation.
    assert_eq!(devices[0].global_mem_bytes.value(), Some(&(2 << 30)));
    assert_eq!(devices[0].max_alloc_bytes.value(), Some(&(512 << 20)));
    assert!(report.host.ram_bytes.unwrap() > 0);
    assert!(report.host.max_map_count.unwrap() > 0);
}

#[test]
fn table_shows_selectors_and_host_limits() {
    let out = run(clmulti(2).args(["devices"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--device 0:0") && text.contains("--device 0:1"),
        "{text}"
    );
    assert!(text.contains("RLIMIT_NOFILE"), "{text}");
    assert!(text.contains("global memory     2.00 GiB"), "{text}");
}

#[test]
fn no_platform_names_the_fix_and_fails() {
    let empty = temp_root().join(format!("clmulti-no-icd-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(std::process::Command::new(bin())
        .args(["devices"])
        .env("OCL_ICD_VENDORS", &empty));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("no OpenCL platform found"), "{err}");
    // The folder the environment named is where the loader looked: say so.
    assert!(
        err.contains(&format!(
            "OCL_ICD_VENDORS={} names no runtime",
            empty.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("pocl-opencl-icd") && err.contains("setup-opencl.sh"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unknown_subcommand_is_bad_input() {
    let out = run(std::process::Command::new(bin()).args(["frobnicate"]));
    assert_eq!(out.status.code(), Some(2));
}

/// PoCL with a `POCL_DEVICES` that names no driver lists a platform without devices:
/// both `devices` and `diagnose` say how to name them.
#[test]
fn a_pocl_devices_naming_no_driver_is_explained() {
    let hint = "POCL_DEVICES (\"bogus\") names no driver it has";
    let out = run(clmulti(1).env("POCL_DEVICES", "bogus").args(["devices"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("lists no device"), "{}", stderr(&out));
    assert!(stderr(&out).contains(hint), "{}", stderr(&out));
    let out = run(clmulti(1)
        .env("POCL_DEVICES", "bogus")
        .args(["diagnose", "--count", "10"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no platform has a device"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains(hint), "{}", stderr(&out));
}
