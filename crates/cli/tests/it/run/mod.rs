//! `clmulti run` and `clmulti check` against two real PoCL devices.

use crate::common;
use clmulti_explain::{Call, GuardKind, Resource, StopReason};
use clmulti_scenario::{ContextMode, Strategy};
use common::*;

mod check;

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
    // A report passed on as its child wrote it is the report read and written again
    // (its numbers as written: reading one back may move its last digit).
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let read = clmulti_explain::Report::from_json(line).unwrap();
        let again: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&read).unwrap()).unwrap();
        let written: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(same_json(&written, &again), "{line}");
    }
    for r in &reports {
        let name = &r.run_name;
        assert_eq!(r.stop, StopReason::Completed, "{name}");
        assert_eq!(r.buffers, 200, "{name}");
        assert_eq!(r.bytes_requested, 200 * 65536, "{name}");
        assert_eq!(r.devices.len(), 2, "{name}");
        assert!(r.fresh_process, "{name}: several runs each get a process");
        let leak = &r.leak_check;
        assert!(leak.objects_released(), "{name}: {leak:?}");
        // PoCL keeps small freed blocks in its heap: readings may stay up, and then
        // the check is not clean and says which.
        assert_eq!(leak.clean, leak.not_returned.is_empty(), "{name}: {leak:?}");
        assert_eq!(
            (leak.buffers_created, leak.buffers_released),
            (200, 200),
            "{name}"
        );
        let contexts = match r.scenario.context_mode {
            ContextMode::PerDevice => 2,
            ContextMode::Shared => 1,
        };
        assert_eq!(leak.contexts_created, contexts, "{name}");
        assert_eq!(leak.contexts_released, contexts, "{name}");
        // 200 buffers sampled every 50: the baseline plus four.
        assert_eq!(r.samples.len(), 5, "{name}");
        assert!(r.samples[4].host.rss_bytes > 0);
        assert!(
            r.samples[4].system.is_some(),
            "{name}: system memory is sampled"
        );
        let bk = r.bookkeeping.bytes_per_buffer;
        assert!(bk > 0.0 && bk < 64.0, "{name}: bookkeeping {bk} B/buffer");
        match r.scenario.allocation.strategy {
            Strategy::Pool => {
                // 100 x 64 KiB per device fit one default (256 MiB) pool each.
                assert_eq!((leak.pools_created, leak.pools_released), (2, 2), "{name}");
            }
            Strategy::Fill | Strategy::Migrate => assert_eq!(leak.queues_created, 2, "{name}"),
            _ => assert_eq!(leak.queues_created, 0, "{name}"),
        }
    }
    // Filling makes PoCL touch the memory: RSS grows by about the buffer size.
    let fill = reports
        .iter()
        .find(|r| r.scenario.allocation.strategy == Strategy::Fill)
        .unwrap();
    let per_buffer = cost(fill, Resource::HostRss).per_buffer;
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
    assert_eq!(r.buffers, 200, "{:?}", r.stop);
    assert_eq!(r.leak_check.pools_created, 14);
    assert!(r.leak_check.clean);
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
    match &r.stop {
        StopReason::Unsupported { reason } => {
            assert!(
                reason.contains("cl_intel_create_mem_object_properties"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.buffers, 0);
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
    match &r.stop {
        StopReason::Failed { error, call, index } => {
            assert_eq!(
                (error.code, error.name.as_str()),
                (-61, "CL_INVALID_BUFFER_SIZE")
            );
            assert_eq!((*call, *index), (Call::CreateBuffer, 0));
        }
        other => panic!("{other:?}"),
    }
    let table = run(clmulti(2).arg("run").arg(&path));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("CL_INVALID_BUFFER_SIZE (-61) in clCreateBuffer"),
        "{text}"
    );
}

#[test]
fn the_rss_guard_stops_a_run_before_it_passes_the_guard() {
    // Filled 64 MiB buffers until failure would take all RAM on PoCL; the guard stops
    // them before RSS passes 1 GiB.
    let path = scenario_file(
        "hog.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64MiB\"\ncount = \"until-failure\"\nstrategy = \"fill\"\n[guards]\nmax_rss = \"1GiB\"\n[sampling]\nevery = 4\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert!(
        matches!(
            r.stop,
            StopReason::Guard {
                guard: GuardKind::MaxRss,
                ..
            }
        ),
        "{:?}",
        r.stop
    );
    let peak = r.samples.iter().map(|s| s.host.rss_bytes).max().unwrap();
    assert!(peak <= 1 << 30, "peak RSS {peak} passed the 1 GiB guard");
    assert!(
        (12..=16).contains(&r.buffers),
        "stopped after {} x 64 MiB",
        r.buffers
    );
    assert!(r.leak_check.clean);
    assert!(r.leak_check.after_release.rss_bytes < peak);
}

#[test]
fn sampling_maps_every_sample_counts_the_mappings_in_every_sample() {
    // 20000 lazy PoCL buffers sampled every 10: 2001 walks of ~1 us per mapping are
    // far past the budget, so the default leaves most out and every-sample none.
    let text = |maps: &str| {
        format!("[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"1KiB\"\ncount = 20000\n[sampling]\nevery = 10\nmaps = \"{maps}\"\n")
    };
    let walked = |maps: &str| {
        let path = scenario_file("maps.toml", &text(maps));
        let out = run(clmulti(1).arg("run").arg(&path).args(["--format", "json"]));
        let r = &reports(&out)[0];
        assert_eq!(r.samples.len(), 2001);
        assert_eq!(
            r.scenario
                .sample_maps
                .eq(&clmulti_scenario::MapsSampling::Budgeted),
            maps == "budgeted"
        );
        // `status`'s and `meminfo`'s figures: at every walk, and at the first 8 and
        // the 16th, 32nd...; every sample has the threads and the free memory, and
        // the reading after release has every figure.
        let accounted = |s: &clmulti_explain::Sample| {
            s.host.locked_bytes.is_some()
                && s.host.data_bytes.is_some()
                && s.system.is_some_and(|m| m.available_bytes.is_some())
        };
        for (nth, s) in r.samples.iter().enumerate() {
            let detailed = nth < 8 || (nth + 1).is_power_of_two();
            assert!(!detailed || accounted(s), "sample {nth}: {s:?}");
            assert!(s.host.memory_maps.is_none() || accounted(s), "sample {nth}");
            assert!(s.host.threads >= 1 && s.system.is_some_and(|m| m.free_bytes > 0));
        }
        let after = r
            .leak_check
            .after_release_sample
            .as_ref()
            .expect("after release");
        assert!(accounted(after), "{after:?}");
        (
            r.samples
                .iter()
                .filter(|s| s.host.memory_maps.is_some())
                .count(),
            r.samples.iter().filter(|s| accounted(s)).count(),
        )
    };
    assert_eq!(walked("every-sample"), (2001, 2001));
    let (budgeted, accounted) = walked("budgeted");
    assert!(budgeted < 2001, "{budgeted} of 2001 samples walked");
    assert!(accounted < 2001, "{accounted} of 2001 samples read status");
}

#[test]
fn total_and_time_guards_stop_runs_and_say_which() {
    let path = scenario_file(
        "guards.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"1MiB\"\ncount = 1000\n[guards]\nmax_total = \"10MiB\"\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    let r = &reports(&out)[0];
    assert!(matches!(
        r.stop,
        StopReason::Guard {
            guard: GuardKind::MaxTotalBytes,
            ..
        }
    ));
    assert_eq!(r.buffers, 10);
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
        assert_eq!(r.devices.len(), 3);
        assert_eq!(r.host_limits.nofile_soft, Some(512));
        assert_eq!(r.buffers, 30);
    }
}

#[test]
fn axpy_check_runs_over_allocated_buffers() {
    let path = scenario_file(
        "axpy.toml",
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"256KiB\"\ncount = 40\nstrategy = \"create\"\n[axpy]\ncheck = \"sample\"\nsamples = 4\n[grid]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    for r in reports(&out) {
        let check = r.axpy_check.as_ref().unwrap();
        assert_eq!(
            (check.pairs_checked, check.pairs_ok),
            (4, 4),
            "{}: {check:?}",
            r.run_name
        );
    }
}

#[test]
fn the_analysis_names_the_limit_that_stopped_the_run() {
    // USE_HOST_PTR buffers cost their size in host memory; under RLIMIT_AS = 1 GiB
    // allocation stops near 1 GiB, and the analysis must name RLIMIT_AS as the cause.
    let path = scenario_file(
        "as.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"32MiB\"\ncount = \"until-failure\"\nflags = [\"READ_WRITE\", \"USE_HOST_PTR\"]\n[limits]\nas = \"1GiB\"\n[sampling]\nevery = 2\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert_eq!(r.host_limits.address_space_soft, Some(1 << 30));
    match &r.stop {
        StopReason::Failed { error, call, .. } => {
            assert_eq!(error.name, "CL_OUT_OF_HOST_MEMORY");
            assert_eq!(
                *call,
                Call::HostAlloc,
                "the engine says the host allocation failed, not OpenCL"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        (8..32).contains(&r.buffers),
        "{} x 32 MiB under 1 GiB",
        r.buffers
    );
    // Without experiments the resource at its limit is a candidate, not the cause.
    assert!(
        matches!(&r.analysis.cause, Some(clmulti_explain::verdict::Cause::Untested { resources }) if resources == &[Resource::VirtualSize]),
        "{:?}",
        r.analysis.cause
    );
    let candidate = &r.analysis.candidates[0];
    assert!(candidate.limit.name.contains("RLIMIT_AS"), "{candidate:?}");
    let error = candidate.prediction_error();
    assert!(
        error <= 0.05,
        "predicted vs observed off by {:.1}%",
        error * 100.0
    );
    assert!(r.leak_check.clean);
}

/// A reader that left (`run A B | head -1`): no run is started for nobody, and the
/// exit says the output was lost (1).
#[test]
fn a_closed_stdout_starts_no_run() {
    let good = scenario_file(
        "closed-stdout.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64KiB\"\ncount = 10\n",
    );
    for format in ["text", "json"] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = run(clmulti(2)
            .arg("run")
            .arg(&good)
            .arg(&good)
            .args(["--format", format])
            .stdout(writer));
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(!stderr(&out).contains("child process"), "{}", stderr(&out));
    }
}

/// The reader leaves while a run runs: the run ends then, not at its end (100 s of
/// 1 ms pauses here), and no further run starts.
#[test]
fn a_reader_that_leaves_mid_run_ends_the_run() {
    let slow = scenario_file(
        "slow-for-no-one.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 100000\npause_us = 1000\n",
    );
    let (reader, writer) = std::io::pipe().unwrap();
    let child = clmulti(2)
        .arg("run")
        .arg(&slow)
        .arg(&slow)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    drop(reader);
    let left = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        left.elapsed() < std::time::Duration::from_secs(40),
        "{:?} after the reader left",
        left.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).matches("child process").count(),
        1,
        "{}",
        stderr(&out)
    );
}

/// A bad file beside a good one: the good one runs, and the closing error says so.
#[test]
fn a_bad_file_beside_a_good_one_says_what_ran() {
    let good = scenario_file(
        "good-beside-bad.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64KiB\"\ncount = 10\n",
    );
    let dir = temp_root().join(format!("clmulti-a-folder-{}.toml", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = run(clmulti(2).arg("run").arg(&dir).arg(&good));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("1 scenario problem(s); 1 run(s) measured (above)"),
        "{err}"
    );
    assert!(!err.contains("nothing was measured"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("completed"));
}

/// `a` and `b` hold the same keys and values, numbers within
/// a part in 10^12.
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.keys().eq(y.keys()) && x.values().zip(y.values()).all(|(x, y)| same_json(x, y))
        }
        _ => a == b,
    }
}
