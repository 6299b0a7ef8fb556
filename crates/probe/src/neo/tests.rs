use super::*;

fn aub_env(k: &str) -> Option<String> {
    match k {
        "NEOReadDebugKeys" | "SetCommandStreamReceiver" => Some("1".into()),
        "ProductFamilyOverride" => Some("dg2".into()),
        "AUBDumpCaptureFileName" => Some("/dev/null".into()),
        _ => None,
    }
}

#[test]
fn aub_mode_needs_both_keys_and_a_neo_platform() {
    let neo = "Intel(R) OpenCL HD Graphics";
    let one = emulation(neo, "22.43.24595", 1, aub_env).unwrap();
    assert_eq!(
        one.label(),
        "Intel GPU runtime NEO 22.43.24595 with 1 emulated DG2 device, AUB mode: host-side allocation only, no kernel driver, kernels not executed"
    );
    assert_eq!(one.capture_file.as_deref(), Some("/dev/null"));
    assert!(one.statement().contains("[inferred from the environment"));
    // A real GPU: no AUB keys, or the hardware receiver.
    assert!(emulation(neo, "22.43", 2, |_| None).is_none());
    let hardware = |k: &str| match k {
        "SetCommandStreamReceiver" => Some("0".into()),
        other => aub_env(other),
    };
    assert!(emulation(neo, "22.43", 2, hardware).is_none());
    // Keys are read only with NEOReadDebugKeys=1.
    let unread = |k: &str| match k {
        "NEOReadDebugKeys" => None,
        other => aub_env(other),
    };
    assert!(emulation(neo, "22.43", 2, unread).is_none());
    for other in ["Intel(R) OpenCL", "Portable Computing Language", "rusticl"] {
        assert!(emulation(other, "x", 2, aub_env).is_none(), "{other}");
    }
    assert!(is_neo("Intel(R) OpenCL Graphics"));
    let no_product = |k: &str| match k {
        "ProductFamilyOverride" => None,
        other => aub_env(other),
    };
    assert_eq!(
        emulation(neo, "1.2", 4, no_product).unwrap().label(),
        format!("Intel GPU runtime NEO 1.2 with 4 emulated devices, {AUB_MODE_LIMITS}")
    );
}

#[test]
fn runs_over_device_counts_share_one_label() {
    let at = |devices| {
        emulation(
            "Intel(R) OpenCL HD Graphics",
            "22.43.24595",
            devices,
            aub_env,
        )
        .unwrap()
    };
    assert_eq!(
        combined_labels(&[at(8), at(1), at(2), at(2), at(4)]),
        [format!("Intel GPU runtime NEO 22.43.24595 with 1, 2, 4 or 8 emulated DG2 devices, {AUB_MODE_LIMITS}")]
    );
    assert_eq!(combined_labels(&[at(1)]), [at(1).label()]);
    assert!(combined_labels(&[]).is_empty());
}

#[test]
fn a_scenario_env_comes_before_the_process_env() {
    let env: BTreeMap<String, String> = [
        ("NEOReadDebugKeys", "1"),
        ("SetCommandStreamReceiver", "1"),
        ("ProductFamilyOverride", "dg2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let e = emulation_for_run("Intel(R) OpenCL HD Graphics", "22.43.24595", &env).unwrap();
    assert_eq!((e.devices, e.product.as_deref()), (1, Some("DG2")));
    let mut eight = env.clone();
    eight.insert("CreateMultipleRootDevices".into(), "8".into());
    let e = emulation_for_run("Intel(R) OpenCL HD Graphics", "22.43.24595", &eight).unwrap();
    assert_eq!(e.devices, 8);
}

#[test]
fn detailed_lines_of_both_generations_give_type_pool_and_root_device() {
    // The forms NEO's source prints (shared/source/utilities/logger.cpp in 22.43,
    // logger_neo_only.h in 26.27); the release lines are real, in tests/fixtures/neo.
    let text = " ThreadID: 140 AllocationType: BUFFER_HOST_MEMORY MemoryPool: System4KBPages Root device index: 1 GPU address: 0x1000 - 0x1fff\n\
                ThreadID: 140 Type: buffer Pool: LocalMemory Root index: 0 Size: 1048576 CPU VA: NULL GPU VA: 0x1000 - 0x100fff\n\
                {\"schema_version\": 2}\n";
    let log = AllocationLog::parse(text);
    assert_eq!(log.other_lines, 1);
    assert_eq!(log.allocation_lines(), 2);
    let keys: Vec<&AllocationKey> = log.detailed.keys().collect();
    assert_eq!(
        keys,
        [
            &AllocationKey {
                allocation_type: "BUFFER_HOST_MEMORY".into(),
                pool: Some("System4KBPages".into()),
                root_device: Some(1)
            },
            &AllocationKey {
                allocation_type: "buffer".into(),
                pool: Some("LocalMemory".into()),
                root_device: Some(0)
            },
        ]
    );
    let json = serde_json::to_string(&log).unwrap();
    assert_eq!(serde_json::from_str::<AllocationLog>(&json).unwrap(), log);
}

#[test]
fn per_buffer_cancels_the_setup() {
    let at = |buffers: u64| {
        let mut text = String::from("Created Graphics Allocation of type TAG_BUFFER\n");
        for _ in 0..buffers {
            text.push_str("Created Graphics Allocation of type BUFFER\nCreated Graphics Allocation of type BUFFER_HOST_MEMORY\n");
        }
        AllocationLog::parse(&text)
    };
    let p = AllocationLog::per_buffer(&at(10), 10, &at(20), 20).unwrap();
    assert_eq!(p.by_type["BUFFER"], 1.0);
    assert_eq!(p.by_type["BUFFER_HOST_MEMORY"], 1.0);
    assert_eq!(p.by_type["TAG_BUFFER"], 0.0);
    assert_eq!(p.total(), 2.0);
    assert_eq!(p.summary(), "BUFFER 1.00, BUFFER_HOST_MEMORY 1.00");
    let only_buffer = |buffers: u64| {
        AllocationLog::parse(
            &"Created Graphics Allocation of type BUFFER\n".repeat(buffers as usize),
        )
    };
    let per_device = AllocationLog::per_buffer(&only_buffer(10), 10, &only_buffer(20), 20).unwrap();
    let extra = p.minus(&per_device);
    assert_eq!((extra["BUFFER"], extra["BUFFER_HOST_MEMORY"]), (0.0, 1.0));
    assert!(p.by_pool.is_empty() && p.by_root_device.is_empty());
    assert!(AllocationLog::per_buffer(&at(10), 10, &at(10), 10).is_none());
}
