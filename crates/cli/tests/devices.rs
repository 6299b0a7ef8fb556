mod common;
use common::*;

#[test]
fn lists_two_pocl_devices_with_distinct_ids_and_memory() {
    let out = run(clmulti(2).args(["devices", "--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let json = json(&out);
    let platforms = json["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 1, "pinned to PoCL");
    assert!(platforms[0]["name"].as_str().unwrap().contains("Portable"));
    let devices = platforms[0]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    assert_ne!(devices[0]["selector"], devices[1]["selector"]);
    assert_ne!(
        devices[0]["vendor_id"], devices[1]["vendor_id"],
        "PoCL gives each device its own id"
    );
    for d in devices {
        assert!(d["global_mem_bytes"].as_u64().unwrap() > 0);
        assert!(d["max_alloc_bytes"].as_u64().unwrap() > 0);
        assert!(d["global_mem_bytes"].as_u64() >= d["max_alloc_bytes"].as_u64());
        assert_eq!(d["kind"], "cpu");
        assert!(!d["extensions"].as_array().unwrap().is_empty());
    }
    // POCL_MEMORY_LIMIT=2 pins the size: 2 GiB global memory, a quarter of it per allocation.
    assert_eq!(devices[0]["global_mem_bytes"].as_u64().unwrap(), 2 << 30);
    assert_eq!(devices[0]["max_alloc_bytes"].as_u64().unwrap(), 512 << 20);
    let host = &json["host"];
    assert!(host["ram_bytes"].as_u64().unwrap() > 0);
    assert!(host["max_map_count"].as_u64().unwrap() > 0);
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
    let empty = std::env::temp_dir().join(format!("clmulti-no-icd-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(std::process::Command::new(bin())
        .args(["devices"])
        .env("OCL_ICD_VENDORS", &empty));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("no OpenCL platform found"), "{err}");
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
