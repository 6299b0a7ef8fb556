//! `clmulti axpy` on two real PoCL devices.

use crate::common;
use common::*;

#[test]
fn both_kernels_verify_on_each_device_and_across_devices() {
    let out = run(clmulti(2).args(["axpy", "--n", "262147", "--repeat", "3", "--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let json = json(&out);
    let devices = json["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    for d in devices {
        assert!(
            d["errors"].as_array().unwrap().is_empty(),
            "{}",
            d["errors"]
        );
        let verified = d["verified"].as_array().unwrap();
        // Five cases per kernel; the fast choice falls back to the seed kernel for strided ones.
        assert_eq!(verified.len(), 10);
        assert!(verified
            .iter()
            .any(|v| v["kernel"] == "seed" && v["case"]["inc_x"] == 3));
        assert!(verified
            .iter()
            .any(|v| v["kernel"] == "fast" && v["case"]["n"] == 1));
        assert!(verified.iter().any(|v| v["case"]["n"] == 0));
        let bw = d["bandwidth"].as_array().unwrap();
        assert_eq!(bw.len(), 2);
        assert_eq!(bw[0]["axpy"]["kernel"], "dAxpy");
        assert_eq!(bw[1]["axpy"]["kernel"], "axpy_fast");
        for b in bw {
            assert!(b["axpy"]["gb_per_s_best"].as_f64().unwrap() > 0.1);
            assert!(b["copy"]["gb_per_s_best"].as_f64().unwrap() > 0.1);
            assert_eq!(b["axpy"]["bytes"], 3 * 4 * 262147u64);
            let t = &b["axpy"];
            let (min, median, max) = (
                t["min_s"].as_f64().unwrap(),
                t["median_s"].as_f64().unwrap(),
                t["max_s"].as_f64().unwrap(),
            );
            assert!(0.0 < min && min <= median && median <= max, "{t}");
        }
    }
    let cross = &json["cross_device"];
    let error = cross["max_error_ulps"].as_f64();
    assert!(error.is_some_and(|e| e <= 2.0), "{}", json["cross_device"]);
    for time in ["first_kernel_s", "second_kernel_s", "migration_wall_s"] {
        assert!(cross[time].as_f64().unwrap() > 0.0, "{time}: {cross}");
    }
}

#[test]
fn the_same_device_twice_is_refused() {
    let out = run(clmulti(2).args(["axpy", "--n", "4096", "--device", "0:0", "--device", "0:0"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("named twice"), "{}", stderr(&out));
}

#[test]
fn seed_kernel_only_is_selectable_by_device() {
    let out = run(clmulti(2).args([
        "axpy",
        "--n",
        "4096",
        "--repeat",
        "2",
        "--kernel",
        "seed",
        "--device",
        "portable:1",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("device 0:1") && text.contains("dAxpy") && !text.contains("axpy_fast"),
        "{text}"
    );
}

#[test]
fn broken_profiling_events_fall_back_to_the_host_clock() {
    // Mesa rusticl's events read ~0 (timer resolution 0): bandwidth from them read
    // 10^7 too high. The host clock is used instead, and the report says so.
    let icd = "/etc/OpenCL/vendors/rusticl.icd";
    assert!(
        std::path::Path::new(icd).exists(),
        "rusticl is not installed: run scripts/setup-tests.sh"
    );
    let out = run(std::process::Command::new(bin())
        .args([
            "axpy", "--n", "262144", "--repeat", "2", "--kernel", "fast", "--format", "json",
        ])
        .env("OCL_ICD_VENDORS", icd)
        .env("RUSTICL_ENABLE", "llvmpipe"));
    assert!(out.status.success(), "{}", stderr(&out));
    let json = json(&out);
    let device = &json["devices"][0];
    let bw = &device["bandwidth"][0];
    assert_eq!(bw["axpy"]["clock"], "host", "{bw}");
    let gbps = bw["axpy"]["gb_per_s_best"].as_f64().unwrap();
    assert!(
        gbps > 0.01 && gbps < 1000.0,
        "a CPU's bandwidth, not 10^7 GB/s: {gbps}"
    );
    assert!(device["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("disagree with the host clock")));
}

fn split_json(cmd: &mut std::process::Command) -> serde_json::Value {
    let out = run(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)["split"].clone()
}

#[test]
fn a_split_verifies_in_both_context_modes_with_unequal_parts() {
    // n divisible neither by the device count nor by 4; weights 1:3.
    let split = split_json(clmulti(2).args([
        "axpy",
        "--split",
        "--n",
        "100003",
        "--repeat",
        "2",
        "--weights",
        "1,3",
        "--include-transfers",
        "--format",
        "json",
    ]));
    let parts: Vec<u64> = split["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(parts.iter().sum::<u64>(), 100_003);
    assert!(parts[1] > 2 * parts[0], "{parts:?}");
    let runs = split["runs"].as_array().unwrap();
    // shared: buffers and sub-buffers; per-device: buffers; each with both kernels.
    assert_eq!(runs.len(), 6, "{split}");
    for r in runs {
        assert!(r["max_error_ulps"].as_f64().unwrap() <= 2.0, "{r}");
        assert!(r["aggregate_gb_per_s_best"].as_f64().unwrap() > 0.0);
        assert!(r["one_device_gb_per_s"].as_f64().unwrap() > 0.0);
        assert_eq!(r["parts"].as_array().unwrap().len(), 2);
    }
    assert!(runs.iter().any(|r| r["layout"] == "sub-buffers"));
    assert!(runs.iter().any(|r| r["context"] == "per-device"));
    let transfers = split["transfers"].as_array().unwrap();
    assert_eq!(transfers.len(), 2);
    assert!(transfers
        .iter()
        .any(|t| t["device_to_device_s"].as_f64().is_some_and(|s| s > 0.0)));
}

#[test]
fn one_device_is_a_split_of_one_part_and_a_device_twice_is_refused() {
    let split = split_json(clmulti(2).args([
        "axpy", "--split", "--device", "0:1", "--n", "4099", "--repeat", "2", "--kernel", "seed",
        "--format", "json",
    ]));
    assert_eq!(split["parts"], serde_json::json!([4099]));
    assert_eq!(
        split["runs"].as_array().unwrap().len(),
        2,
        "shared and per-device, seed kernel"
    );
    let out = run(clmulti(2).args(["axpy", "--split", "--device", "0:0", "--device", "0:0"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("named twice"), "{}", stderr(&out));
}

#[test]
fn a_scenario_records_split_throughput_beside_its_allocations() {
    let path = scenario_file(
        "split.toml",
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"64KiB\"\ncount = 100\n[axpy]\nsplit = true\n[grid]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    for r in reports(&out) {
        let split = r
            .axpy_split
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no split", r.run_name));
        let clmulti_explain::AxpySplit::Ran { runs, .. } = split else {
            panic!("{split:?}")
        };
        assert!(!runs.is_empty());
        assert!(
            runs.iter()
                .all(|run| run.context == r.scenario.context_mode),
            "{split:?}"
        );
        assert!(
            runs.iter().all(|run| run.max_error_ulps <= 2.0),
            "{split:?}"
        );
    }
}

#[test]
fn a_split_over_four_and_eight_devices_reports_its_efficiency_per_device_count() {
    for (devices, smaller) in [(4usize, vec![2u64]), (8, vec![2, 4])] {
        let split = split_json(clmulti(devices).args([
            "axpy",
            "--split",
            "--n",
            "100003",
            "--repeat",
            "2",
            "--kernel",
            "fast",
            "--context",
            "shared",
            "--format",
            "json",
        ]));
        let parts = split["parts"].as_array().unwrap();
        assert_eq!(parts.len(), devices, "{split}");
        assert_eq!(
            parts.iter().map(|p| p.as_u64().unwrap()).sum::<u64>(),
            100_003
        );
        let runs = split["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "buffers and sub-buffers: {split}");
        for r in runs {
            assert_eq!(r["devices"], devices as u64);
            assert_eq!(r["parts"].as_array().unwrap().len(), devices);
            assert!(r["max_error_ulps"].as_f64().unwrap() <= 2.0, "{r}");
            assert_eq!(r["strategies"].as_array().unwrap().len(), 18, "{r}");
            assert!(r["launched_by"]["launcher"].is_string(), "{r}");
        }
        // The default counts: 2, 4... below the device count, each verified.
        let scaling = split["scaling"].as_array().unwrap();
        let counts: Vec<u64> = scaling
            .iter()
            .map(|r| r["devices"].as_u64().unwrap())
            .collect();
        assert_eq!(counts, smaller, "{split}");
        for r in scaling {
            assert!(r["scaling_efficiency"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["max_error_ulps"].as_f64().unwrap() <= 2.0, "{r}");
            assert_eq!(r["layout"], "buffers");
        }
    }
}

#[test]
fn the_text_split_shows_the_launch_and_verbose_shows_every_way_tried() {
    let out = run(clmulti(4).args([
        "-v",
        "axpy",
        "--split",
        "--n",
        "65536",
        "--repeat",
        "2",
        "--kernel",
        "seed",
        "--context",
        "per-device",
        "--device-counts",
        "3",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("launched by"), "{text}");
    assert!(text.contains("efficiency per device count"), "{text}");
    let err = stderr(&out);
    assert!(
        err.contains("launch strategies, 3 device(s), per-device buffers dAxpy")
            && err.contains("a thread per device, polling, no profiling")
            && err.contains("(chosen)"),
        "{err}"
    );
    let bad = run(clmulti(2).args(["axpy", "--split", "--device-counts", "3"]));
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("device count 3"), "{}", stderr(&bad));
}

#[test]
fn a_signal_reports_what_finished_and_names_what_did_not_run() {
    // Ctrl-C (the group) during the first device's seed-kernel timing: the
    // repetitions done are its figures; the rest is named, not lost.
    let repeat = "100000";
    for (signal, code, to_group, format) in [
        (libc::SIGINT, 130, true, "json"),
        (libc::SIGTERM, 143, false, "text"),
    ] {
        let started = start_until(
            clmulti(2).args([
                "-v", "axpy", "--n", "65536", "--repeat", repeat, "--format", format,
            ]),
            "seed kernel: timing",
        );
        let pid = started.pid();
        // SAFETY: signalling the process (group) this test started.
        unsafe { libc::kill(if to_group { -pid } else { pid }, signal) };
        let out = started.finish();
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        if format == "json" {
            let json = json(&out);
            assert_eq!(json["schema_version"], 4);
            assert_eq!(json["stopped_by"], "SIGINT");
            let devices = json["devices"].as_array().unwrap();
            assert_eq!(devices.len(), 1, "the second device never started");
            let bandwidth = devices[0]["bandwidth"].as_array().unwrap();
            assert_eq!(bandwidth.len(), 1, "{bandwidth:?}");
            let done = bandwidth[0]["repeat"].as_u64().unwrap();
            assert!((1..100_000).contains(&done), "{done} repetitions");
            assert!(
                devices[0]["notes"].to_string().contains(&format!(
                    "stopped after {done} of {repeat} timed repetitions"
                )),
                "{}",
                devices[0]["notes"]
            );
            assert!(bandwidth[0]["axpy"]["gb_per_s_best"].as_f64().unwrap() > 0.0);
            let not_run: Vec<&str> = json["not_run"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let first = devices[0]["selector"].as_str().unwrap();
            assert_eq!(
                not_run.len(),
                3,
                "the rest of the first device, the second device, the cross-device run: {not_run:?}"
            );
            assert_eq!(
                not_run[0],
                format!(
                    "device {first}: the seed kernel's timed repetitions {} to {repeat}, then the fast kernel",
                    done + 1
                )
            );
            assert!(not_run[1].starts_with("device ") && !not_run[1].contains(first));
            assert_eq!(not_run[2], "the cross-device run");
            assert!(json["cross_device"].is_null());
        } else {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains(
                    "stopped by SIGTERM: the figures above are what finished before it; not run:"
                ),
                "{text}"
            );
            assert!(text.contains("  the cross-device run"), "{text}");
            assert!(!text.contains("needs two devices"), "{text}");
            assert!(
                text.contains("verified 5 case(s) against the CPU reference: 5 by dAxpy\n"),
                "{text}"
            );
        }
        // Said on stderr at once, before anything in flight finishes.
        let said = stderr(&out);
        assert!(
            said.contains("clmulti axpy: stopping on SIG")
                && said.contains("a second signal ends it at once, without a report"),
            "{said}"
        );
    }
}

#[test]
fn a_signal_inherited_ignored_stays_ignored_as_under_nohup() {
    use std::os::unix::process::CommandExt;
    let mut cmd = clmulti(1);
    cmd.args([
        "-v", "axpy", "--n", "65536", "--repeat", "100000", "--kernel", "seed",
    ])
    .args(["--format", "json"]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let started = start_until(&mut cmd, "seed kernel: timing");
    let pid = started.pid();
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(pid, libc::SIGHUP) };
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let out = started.finish();
    // Had the hangup stopped it: 129 and SIGHUP.
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert_eq!(json(&out)["stopped_by"], "SIGTERM");
}

#[test]
fn timeout_stops_it_and_keeps_what_finished() {
    let out = run(clmulti(1)
        .args(["--timeout", "2", "axpy", "--n", "65536"])
        .args(["--repeat", "100000", "--kernel", "seed", "--format", "json"]));
    // The command did not end in time: 1, with what finished reported.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "did not end within 2.0 s (--timeout): it was stopped with SIGTERM, and what had finished by then, if anything, is reported above"
        ),
        "{}",
        stderr(&out)
    );
    let json = json(&out);
    assert_eq!(json["stopped_by"], "SIGTERM");
    let done = json["devices"][0]["bandwidth"][0]["repeat"]
        .as_u64()
        .unwrap();
    assert!((1..100_000).contains(&done), "{done}");
}
