//! Faults reported as what they are: crashes, hangs, limits that stop the runtime
//! from loading, runs the machine cannot do, and bad arguments.

mod common;
use clmulti_explain::{Call, StopReason};
use common::*;

#[test]
fn a_single_run_that_aborts_under_its_limits_is_reported_as_a_crash() {
    // A runtime that aborts (SIGABRT) at its 21st clCreateBuffer (PoCL did under
    // RLIMIT_AS, which the guards now keep runs short of); the run is alone in the
    // invocation, and still gets a report.
    let path = scenario_file(
        "abort.toml",
        &format!(
            "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64KiB\"\ncount = 100\nstrategy = \"fill\"\n[env]\nOPENCL_LAYERS = \"{}\"\nCLMULTI_ABORT_AFTER = \"20\"\n[limits]\nas = \"1GiB\"\n[sampling]\nevery = 1\n",
            abort_after_layer().display()
        ),
    );
    // The crashing layer and its knob are the test's own: trusted, as read.
    trust(&path);
    let out = run(clmulti(1).arg("run").arg(&path).args(["--format", "json"]));
    assert!(
        out.status.success(),
        "a crash is a measurement: {}",
        stderr(&out)
    );
    let r = &reports(&out)[0];
    match &r.stop {
        StopReason::Crashed { signal_name, .. } => assert_eq!(signal_name, "SIGABRT"),
        other => panic!("{other:?}"),
    }
    assert!(
        r.buffers > 0 && r.samples.len() > 1,
        "progress kept: {} buffers",
        r.buffers
    );
    assert_eq!(r.host_limits.address_space_soft, Some(1 << 30));
    assert!(!r.stderr_tail.is_empty());
    assert!(
        !r.devices.is_empty(),
        "the setup the child reported is kept"
    );
}

#[test]
fn a_limit_too_low_for_the_runtime_to_load_is_named() {
    let path = scenario_file(
        "nofile.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 10\n[limits]\nnofile = 3\n",
    );
    let out = run(clmulti(1).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    match &r.stop {
        StopReason::Failed { error, call, .. } => {
            assert_eq!(*call, Call::GetPlatformIds);
            assert_eq!(error.name, "CL_PLATFORM_NOT_FOUND_KHR");
        }
        other => panic!("{other:?}"),
    }
    let text = statements(r);
    assert!(
        text.contains("did not load under [limits] nofile = 3 (RLIMIT_NOFILE)"),
        "{text}"
    );
    assert!(!text.contains("install an OpenCL runtime"), "{text}");
}

#[test]
fn the_lowest_nofile_limits_that_load_pocl_are_the_documented_ones() {
    // configs/README.md: 5 with OCL_ICD_VENDORS naming pocl.icd, 6 with the vendors
    // folder (the loader keeps the folder open while it reads it).
    for (vendors, nofile, loads) in [
        ("/etc/OpenCL/vendors/pocl.icd", 4, false),
        ("/etc/OpenCL/vendors/pocl.icd", 5, true),
        ("/etc/OpenCL/vendors", 5, false),
        ("/etc/OpenCL/vendors", 6, true),
    ] {
        let path = scenario_file(
            &format!("nofile{nofile}.toml"),
            &format!("[devices]\ntype = \"cpu\"\n[allocation]\ncount = 10\n[limits]\nnofile = {nofile}\n"),
        );
        let out = run(clmulti(1)
            .env("OCL_ICD_VENDORS", vendors)
            .arg("run")
            .arg(&path)
            .args(["--format", "json"]));
        let r = &reports(&out)[0];
        assert_eq!(
            matches!(r.stop, StopReason::Completed),
            loads,
            "{vendors}, nofile = {nofile}: {:?}",
            r.stop
        );
    }
}

#[test]
fn an_environment_whose_loader_finds_no_runtime_says_so() {
    let empty = temp_root().join(format!("clmulti-novendors-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let path = scenario_file(
        "novendors.toml",
        &format!(
            "[allocation]\ncount = 10\n[env]\nOCL_ICD_VENDORS = \"{}\"\n",
            empty.display()
        ),
    );
    let out = run(clmulti(1).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    let text = statements(r);
    assert!(
        text.contains("found no OpenCL platform through the scenario's OCL_ICD_VENDORS"),
        "{text}"
    );
}

#[test]
fn a_buffer_above_the_devices_largest_allocation_is_explained() {
    let path = scenario_file(
        "huge-buffer.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"8GiB\"\ncount = 1\n",
    );
    let out = run(clmulti(1).arg("run").arg(&path).args(["--format", "json"]));
    let r = &reports(&out)[0];
    assert!(
        matches!(&r.stop, StopReason::Failed { error, .. } if error.code == -61),
        "{:?}",
        r.stop
    );
    let text = statements(r);
    assert!(
        text.contains("allocation.size (8.00 GiB) is above CL_DEVICE_MAX_MEM_ALLOC_SIZE"),
        "{text}"
    );
}

/// oclgrind through the ICD loader never returns from clCreateCommandQueueWithProperties.
fn oclgrind() -> std::process::Command {
    let lib = "/usr/lib/oclgrind/liboclgrind-rt-icd.so";
    assert!(
        std::path::Path::new(lib).exists(),
        "oclgrind is not installed: run scripts/setup-tests.sh"
    );
    let icd = scenario_file("oclgrind.icd", &format!("{lib}\n"));
    let mut cmd = std::process::Command::new(bin());
    cmd.env("OCL_ICD_VENDORS", icd);
    cmd
}

#[test]
fn a_hung_runtime_call_ends_by_the_time_limit_and_is_named() {
    let path = scenario_file(
        "hang.toml",
        "[devices]\ntype = \"all\"\n[allocation]\nsize = \"4KiB\"\ncount = 10\nstrategy = \"fill\"\n[guards]\nmax_seconds = 20\n",
    );
    // The limit covers loading the runtime too: oclgrind's (LLVM) took over 6 s on
    // this 2-core machine beside a build, a fault-space run and a busy loop.
    let limit = 20.0 + clmulti_alloc::hang_margin(20.0).as_secs_f64();
    // In this process (a single run without [env]) and in a child (--isolate).
    for isolate in [false, true] {
        let mut cmd = oclgrind();
        cmd.arg("run").arg(&path).args(["--format", "json"]);
        if isolate {
            cmd.arg("--isolate");
        }
        let out = run(&mut cmd);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = &reports(&out)[0];
        assert_eq!(
            r.stop,
            StopReason::TimedOut {
                seconds: limit,
                call: Some(Call::CreateCommandQueue)
            },
            "isolate {isolate}"
        );
        assert_eq!(r.platform, "Oclgrind");
    }
}

#[test]
fn a_run_asking_for_more_devices_than_exist_is_refused_and_said() {
    let path = scenario_file(
        "four.toml",
        "[devices]\ntype = \"gpu\"\ncount = 4\n[allocation]\ncount = 10\n",
    );
    // Bad input for this machine: exit 2, the report still printed, the reason said.
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("this machine cannot run it, so nothing was measured"),
        "{err}"
    );
    // At the key of the file that asked, as check says it; nothing counted as run.
    assert!(
        err.contains("four.toml:3:9: key `devices.count`: asked for 4 devices"),
        "{err}"
    );
    assert!(
        err.contains("1 scenario problem(s); nothing was measured"),
        "{err}"
    );
    // An index beyond the list: the entry that names it.
    let indices = scenario_file(
        "index-five.toml",
        "[devices]\ntype = \"gpu\"\nindices = [0, 5]\n[allocation]\ncount = 10\n",
    );
    let beyond = run(clmulti(2).arg("run").arg(&indices));
    assert_eq!(beyond.status.code(), Some(2), "{}", stderr(&beyond));
    assert!(
        stderr(&beyond).contains(
            "index-five.toml:3:15: key `devices.indices[1]`: device index 5 is out of range"
        ),
        "{}",
        stderr(&beyond)
    );
    // check says it before a run, at the key.
    let checked = run(clmulti(2).arg("check").arg(&path));
    assert_eq!(checked.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&checked.stdout)
            .contains("four.toml:3:9: key `devices.count`: asked for 4 devices")
            || stderr(&checked).contains("four.toml:3:9: key `devices.count`: asked for 4 devices"),
        "{}",
        stderr(&checked)
    );
    match &reports(&out)[0].stop {
        StopReason::Skipped { reason, .. } => assert!(
            reason.contains("asked for 4 devices of type gpu on platform 0 (Portable Computing Language), found 2"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    let table = run(clmulti(2).arg("run").arg(&path));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("skipped: asked for 4 devices"), "{text}");
}

#[test]
fn bad_arguments_are_refused_not_panicked() {
    for args in [
        vec!["bench", "--rounds", "0"],
        vec!["bench", "--count", "0"],
        vec!["axpy", "--repeat", "0"],
        vec!["axpy", "--n", "0"],
        vec!["run", "--timeout", "-3", "x.toml"],
    ] {
        let out = run(clmulti(1).args(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
    // A negative number is a value the flag refuses, said by the flag with why: not
    // an unknown flag (`-1` read as one), nor "invalid digit found in string".
    for (args, why) in [
        (["bench", "--jobs", "-1"], "-1 is not in 1..=64"),
        (["axpy", "--repeat", "-2"], "-2 is not in 1..="),
        (["bench", "--count", "-1"], "-1 is not in 1.."),
        (["axpy", "--n", "-5"], "-5 is not in 1..="),
        (["diagnose", "--count", "-3"], "-3 is not in 10..="),
        (["run", "--index", "-1"], "-1 is not in 0.."),
        (["bench", "--min-seconds", "-1"], "expected seconds above 0"),
        (["devices", "--timeout", "-1"], "expected seconds above 0"),
        (["emulate", "--local-memory", "-1"], "is not a number"),
        (
            ["axpy", "--weights", "-1,2"],
            "a device's share is a number above 0",
        ),
    ] {
        let out = run(clmulti(1).args(args));
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        // A list's first bad element is the value said.
        let value = args[2].split(',').next().unwrap();
        let flag = format!("invalid value '{value}' for '{}", args[1]);
        assert!(
            said.contains(&flag) && said.contains(why),
            "{args:?}: {said}"
        );
    }
}

#[test]
fn run_list_names_each_run_or_why_it_is_invalid_in_either_format() {
    let path = scenario_file(
        "listed.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 10\n[grid]\n\"devices.count\" = [1, 0]\n",
    );
    let json = run(clmulti(1)
        .arg("run")
        .arg("--list")
        .arg(&path)
        .args(["--format", "json"]));
    assert_eq!(json.status.code(), Some(2), "{}", stderr(&json));
    let lines: Vec<serde_json::Value> = stdout(&json)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document a line"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&json));
    assert_eq!(lines[0]["index"], 0);
    assert_eq!(lines[0]["name"], "listed[devices.count=1]");
    assert!(lines[0]["error"].is_null());
    assert!(lines[1]["name"].is_null());
    let error = lines[1]["error"].as_str().unwrap();
    assert!(
        error.contains("listed.toml:6:") && error.contains("devices.count"),
        "{error}"
    );
    let text = run(clmulti(1).arg("run").arg("--list").arg(&path));
    assert_eq!(text.status.code(), Some(2));
    assert!(
        stdout(&text).contains("--index 1      invalid: "),
        "{}",
        stdout(&text)
    );
    // A file that does not load has its line too; --index lists that run alone.
    let missing = path.with_file_name("missing.toml");
    let out = run(clmulti(1)
        .args(["run", "--list", "--format", "json", "--index", "0"])
        .args([&path, &missing]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&out));
    assert_eq!(lines[0]["name"], "listed[devices.count=1]");
    assert!(lines[1]["index"].is_null() && lines[1]["name"].is_null());
    let error = lines[1]["error"].as_str().unwrap();
    assert!(error.contains("missing.toml: cannot read"), "{error}");
}

#[test]
fn several_runs_each_get_a_fresh_process() {
    let path = scenario_file(
        "two.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64KiB\"\ncount = 200\nstrategy = \"fill\"\n[sampling]\nevery = 50\n[grid]\n\"name\" = [\"first\", \"second\"]\n",
    );
    let out = run(clmulti(1).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = reports(&out);
    assert_eq!(runs.len(), 2);
    // In one process the second run would reuse the first's freed memory and read
    // near 0 per buffer; in its own it pays the full 64 KiB again.
    for r in &runs {
        assert!(r.fresh_process);
        let rss = cost(r, clmulti_explain::Resource::HostRss).per_buffer;
        assert!(rss > 48.0 * 1024.0, "{}: {rss} B per buffer", r.run_name);
    }
}

#[test]
fn a_run_whose_process_ends_without_a_report_fails_the_command() {
    // A broken libOpenCL.so.1 first on the run's library path: its process cannot
    // start (the dynamic linker exits 127), so nothing was measured.
    let dir = temp_root().join(format!("clmulti-broken-loader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("libOpenCL.so.1"), "not a library").unwrap();
    let path = scenario_file(
        "broken-loader.toml",
        &format!(
            "[allocation]\ncount = 5\n[env]\nLD_LIBRARY_PATH = \"{}\"\n",
            dir.display()
        ),
    );
    let out = run(clmulti(1)
        .arg("run")
        .arg(&path)
        .args(["--format", "json", "--allow"])
        .arg(&dir));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = &reports(&out)[0];
    assert!(
        matches!(
            report.stop,
            StopReason::NoReport {
                exit_code: Some(127),
                ..
            }
        ),
        "{:?}",
        report.stop
    );
    assert!(
        stderr(&out).contains("no report (exit 127)"),
        "{}",
        stderr(&out)
    );
}
