//! `clmulti run` and `clmulti check` against two real PoCL devices.

mod common;
use common::*;
use serde_json::Value;

fn stop_kind(r: &Value) -> &str {
    r["stop"]["kind"].as_str().unwrap()
}

#[test]
fn every_strategy_in_both_context_modes_runs_and_releases_everything() {
    let path = scenario_file(
        "matrix.toml",
        r#"
name = "matrix"
[devices]
type = "cpu"
count = 2
[allocation]
size = "64KiB"
count = 200
placement = "round-robin"
[sampling]
every = 50
[grid]
"context.mode" = ["shared", "per-device"]
"allocation.strategy" = ["create", "fill", "migrate", "pool"]
"#,
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let reports = reports(&out);
    assert_eq!(reports.len(), 8);
    for r in &reports {
        let name = r["run_name"].as_str().unwrap();
        assert_eq!(stop_kind(r), "completed", "{name}: {}", r["stop"]);
        assert_eq!(r["buffers"], 200, "{name}");
        assert_eq!(r["bytes_requested"], 200 * 65536, "{name}");
        assert_eq!(r["devices"].as_array().unwrap().len(), 2, "{name}");
        let leak = &r["leak_check"];
        assert_eq!(leak["clean"], true, "{name}: {leak}");
        assert_eq!(leak["buffers_created"], 200, "{name}");
        assert_eq!(leak["buffers_released"], 200, "{name}");
        assert_eq!(
            leak["contexts_created"], leak["contexts_released"],
            "{name}"
        );
        let contexts = if name.contains("per-device") { 2 } else { 1 };
        assert_eq!(leak["contexts_created"], contexts, "{name}");
        // 200 buffers sampled every 50: the baseline plus four.
        assert_eq!(r["samples"].as_array().unwrap().len(), 5, "{name}");
        assert!(r["samples"][4]["rss_bytes"].as_u64().unwrap() > 0);
        assert!(!r["costs"].as_array().unwrap().is_empty(), "{name}");
        let bk = r["bookkeeping"]["bytes_per_buffer"].as_f64().unwrap();
        assert!(bk > 0.0 && bk < 64.0, "{name}: bookkeeping {bk} B/buffer");
        if name.contains("pool") {
            // 100 x 64 KiB per device fit one default (256 MiB) pool each.
            assert_eq!(leak["pools_created"], 2, "{name}: {leak}");
            assert_eq!(leak["pools_released"], 2, "{name}");
        }
        if name.contains("fill") || name.contains("migrate") {
            assert_eq!(leak["queues_created"], 2, "{name}");
        }
    }
    // Filling makes PoCL touch the memory: RSS grows by about the buffer size.
    let fill = reports
        .iter()
        .find(|r| r["run_name"].as_str().unwrap().contains("fill"))
        .unwrap();
    let rss = fill["costs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["resource"] == "host_rss")
        .unwrap();
    let per_buffer = rss["per_buffer"].as_f64().unwrap();
    assert!(
        per_buffer > 32.0 * 1024.0,
        "fill should cost ~64 KiB RSS per buffer, got {per_buffer}"
    );
}

#[test]
fn pools_are_carved_at_the_device_alignment_and_renewed_when_full() {
    // 200 x 64 KiB in 1 MiB pools, round-robin over 2 devices: 100 per device, 16 per
    // pool, so 7 pools per device.
    let path = scenario_file(
        "pool.toml",
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"64KiB\"\ncount = 200\nstrategy = \"pool\"\npool_size = \"1MiB\"\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    let r = &reports(&out)[0];
    assert_eq!(r["buffers"], 200, "{}", r["stop"]);
    assert_eq!(r["leak_check"]["pools_created"], 14);
    assert_eq!(r["leak_check"]["clean"], true);
}

#[test]
fn pin_is_reported_unsupported_without_the_intel_extension() {
    let path = scenario_file(
        "pin.toml",
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nstrategy = \"pin\"\ncount = 10\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert_eq!(stop_kind(r), "unsupported");
    assert!(r["stop"]["reason"]
        .as_str()
        .unwrap()
        .contains("cl_intel_create_mem_object_properties"));
    assert_eq!(r["buffers"], 0);
    assert_eq!(r["leak_check"]["clean"], true);
}

#[test]
fn a_buffer_over_max_alloc_size_fails_with_its_name() {
    // POCL_MEMORY_LIMIT=2 makes max alloc 512 MiB.
    let path = scenario_file(
        "big.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"1GiB\"\ncount = 3\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(
        out.status.success(),
        "an OpenCL error is a measurement, not a tool failure: {}",
        stderr(&out)
    );
    let r = &reports(&out)[0];
    assert_eq!(stop_kind(r), "failed");
    assert_eq!(r["stop"]["error"]["code"], -61);
    assert_eq!(r["stop"]["error"]["name"], "CL_INVALID_BUFFER_SIZE");
    assert_eq!(r["stop"]["call"], "create_buffer");
    assert_eq!(r["stop"]["index"], 0);
    let table = run(clmulti(2).arg("run").arg(&path));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("CL_INVALID_BUFFER_SIZE (-61) in clCreateBuffer"),
        "{text}"
    );
}

#[test]
fn the_rss_guard_stops_a_run_that_would_take_the_machine() {
    // Filled 64 MiB buffers until failure would take all RAM on PoCL; the guard stops it at 1 GiB.
    let path = scenario_file(
        "hog.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64MiB\"\ncount = \"until-failure\"\nstrategy = \"fill\"\n[guards]\nmax_rss = \"1GiB\"\n[sampling]\nevery = 4\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert_eq!(stop_kind(r), "guard", "{}", r["stop"]);
    assert_eq!(r["stop"]["guard"], "max_rss");
    let buffers = r["buffers"].as_u64().unwrap();
    assert!(
        (14..=20).contains(&buffers),
        "stopped after {buffers} x 64 MiB"
    );
    assert_eq!(r["leak_check"]["clean"], true);
    assert!(
        r["leak_check"]["after_release"]["rss_bytes"]
            .as_u64()
            .unwrap()
            < r["samples"].as_array().unwrap().last().unwrap()["rss_bytes"]
                .as_u64()
                .unwrap()
    );
}

#[test]
fn total_and_time_guards_stop_runs_and_say_which() {
    let path = scenario_file(
        "guards.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"1MiB\"\ncount = 1000\n[guards]\nmax_total = \"10MiB\"\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    let r = &reports(&out)[0];
    assert_eq!(r["stop"]["guard"], "max_total_bytes");
    assert_eq!(r["buffers"], 10);
}

#[test]
fn scenario_env_reaches_the_runtime_and_limits_apply() {
    // Three PoCL devices exist only if [env] is set before the runtime loads.
    let text = format!(
        "[devices]\ntype = \"cpu\"\ncount = 3\n[allocation]\ncount = 30\nsize = \"4KiB\"\n[env]\nPOCL_DEVICES = \"{}\"\n[limits]\nnofile = 512\n[grid]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
        pocl_devices(3)
    );
    let path = scenario_file("env.toml", &text);
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let reports = reports(&out);
    assert_eq!(reports.len(), 2);
    for r in &reports {
        assert_eq!(r["devices"].as_array().unwrap().len(), 3);
        assert_eq!(r["host_limits"]["nofile_soft"], 512);
        assert_eq!(r["buffers"], 30);
    }
}

#[test]
fn axpy_check_runs_over_allocated_buffers() {
    let path = scenario_file(
        "axpy.toml",
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"256KiB\"\ncount = 40\nstrategy = \"create\"\n[axpy]\ncheck = \"sample\"\nsamples = 4\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    let check = &r["axpy_check"];
    assert_eq!(check["pairs_checked"], 4, "{check}");
    assert_eq!(check["pairs_ok"], 4, "{check}");
}

#[test]
fn check_names_file_line_and_key_and_exits_2() {
    let good = scenario_file("good.toml", "[allocation]\nsize = \"1MiB\"\n");
    let bad = scenario_file(
        "bad.toml",
        "name = \"b\"\n[allocation]\nsize = \"1 MB/s\"\n",
    );
    let out = run(clmulti(2).arg("check").arg(&good).arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}:3:8: key `allocation.size`: unknown unit",
            bad.display()
        )),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ok "),
        "the good file is still checked"
    );
}

#[test]
fn run_with_a_bad_file_still_runs_the_good_one_and_exits_2() {
    let good = scenario_file(
        "good.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 5\nsize = \"4KiB\"\n",
    );
    let bad = scenario_file("bad.toml", "[allocation]\nstrategy = \"teleport\"\n");
    let out = run(clmulti(2)
        .arg("run")
        .arg(&bad)
        .arg(&good)
        .args(["--format", "json"]));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(reports(&out)[0]["buffers"], 5);
    assert!(stderr(&out).contains("allocation.strategy"));
}

#[test]
fn unknown_device_is_bad_input() {
    let path = scenario_file("nodev.toml", "[devices]\nplatform = \"NoSuchVendor\"\n");
    let out = run(clmulti(2).arg("run").arg(&path));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no OpenCL platform matches \"NoSuchVendor\"")
            && err.contains("Portable Computing Language"),
        "{err}"
    );
}

#[test]
fn shipped_configs_are_valid() {
    let configs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let files: Vec<_> = std::fs::read_dir(&configs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    assert!(files.len() >= 8);
    let out = run(clmulti(2).arg("check").args(&files));
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn the_prediction_names_the_limit_that_stopped_the_run() {
    // USE_HOST_PTR buffers cost their size in host memory; under RLIMIT_AS = 1 GiB
    // allocation stops near 1 GiB, and the prediction must name RLIMIT_AS as the cause.
    let path = scenario_file(
        "as.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"32MiB\"\ncount = \"until-failure\"\nflags = [\"READ_WRITE\", \"USE_HOST_PTR\"]\n[limits]\nas = \"1GiB\"\n[sampling]\nevery = 4\n",
    );
    let out = run(clmulti(2)
        .arg("run")
        .arg(&path)
        .args(["--format", "json", "--isolate"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert_eq!(r["host_limits"]["address_space_soft"], 1u64 << 30);
    assert_eq!(stop_kind(r), "failed", "{}", r["stop"]);
    assert_eq!(r["stop"]["error"]["name"], "CL_OUT_OF_HOST_MEMORY");
    assert_eq!(
        r["stop"]["call"], "host_alloc",
        "the engine says the host allocation failed, not OpenCL"
    );
    let buffers = r["buffers"].as_u64().unwrap();
    assert!((8..32).contains(&buffers), "{buffers} x 32 MiB under 1 GiB");
    let p = &r["prediction"];
    assert_eq!(p["resource"], "virtual_size", "{p}");
    assert_eq!(p["matches_failure"], true, "{p}");
    assert!(p["explanation"].as_str().unwrap().contains("RLIMIT_AS"));
    assert_eq!(r["leak_check"]["clean"], true);
}
