//! Intel's own OpenCL runtime (the CPU one, from PyPI): two sub-devices of its one
//! device make a real multi-device context on Intel's code, and RLIMIT_AS gives a
//! real CL_OUT_OF_HOST_MEMORY (-6) far below RAM.

use crate::common;
use clmulti_explain::verdict::{CandidateTest, Cause};
use clmulti_explain::{Call, Resource, StopReason};
use clmulti_scenario::ContextMode;
use common::*;

const SUB_DEVICES: &str = "[devices]\nplatform = \"Intel(R) OpenCL\"\ntype = \"cpu\"\npartition = \"equally\"\nfallback = \"none\"\n";

#[test]
fn the_seed_runs_on_two_intel_sub_devices() {
    let path = scenario_file(
        "intel-seed.toml",
        &format!(
            "{SUB_DEVICES}[allocation]\nsize = \"1MiB\"\ncount = 1000\n[sampling]\nevery = 100\n\
             [grid]\n\"devices.count\" = [1, 2]\n\"context.mode\" = [\"shared\", \"per-device\"]\n"
        ),
    );
    let out = run(clmulti_intel()
        .arg("run")
        .arg(&path)
        .args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = reports(&out);
    assert_eq!(runs.len(), 4);
    for r in &runs {
        assert_eq!(
            (r.stop.clone(), r.buffers),
            (StopReason::Completed, 1000),
            "{}",
            r.run_name
        );
        assert_eq!(r.platform, "Intel(R) OpenCL");
        for d in &r.devices {
            assert!(d.parent.is_some() && d.partition.is_some(), "{d:?}");
            assert!(d.selector.starts_with("0:0."), "{}", d.selector);
        }
        // Intel reserves each buffer's size of address space at creation.
        let virt = cost(r, Resource::VirtualSize).per_buffer;
        assert!(
            (virt / 1048576.0 - 1.0).abs() < 0.05,
            "{}: {virt} B",
            r.run_name
        );
        assert!(r.leak_check.clean);
    }
    let shared = runs
        .iter()
        .find(|r| r.devices.len() == 2 && r.scenario.context_mode == ContextMode::Shared)
        .unwrap();
    assert_ne!(shared.devices[0].selector, shared.devices[1].selector);
}

/// The cause is named only once moving the limit moved the failure: the run is
/// repeated under a lower RLIMIT_AS (and a higher one, within the hard limit).
#[test]
fn intel_returns_minus_6_at_the_address_space_limit_and_lowering_it_confirms_the_cause() {
    // Two malloc arenas, as in the inherited-limit test below: per-thread arenas
    // (64 MiB of address space each) made the runtime abort (SIGABRT) before its -6
    // once on a loaded machine.
    let path = scenario_file(
        "intel-as.toml",
        &format!(
            "{SUB_DEVICES}count = 2\n[allocation]\nsize = \"1MiB\"\ncount = \"until-failure\"\n[limits]\nas = \"1GB\"\n[sampling]\nevery = 50\n[env]\nMALLOC_ARENA_MAX = \"2\"\n"
        ),
    );
    let out = run(clmulti_intel()
        .arg("run")
        .arg(&path)
        .args(["--format", "json", "--experiment"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    match &r.stop {
        StopReason::Failed { error, call, .. } => {
            assert_eq!(
                (error.name.as_str(), *call),
                ("CL_OUT_OF_HOST_MEMORY", Call::CreateBuffer)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(r.buffers > 100, "{} buffers", r.buffers);
    assert!(
        matches!(&r.analysis.cause, Some(Cause::Resource { resource: Resource::VirtualSize, limit, .. }) if limit.name.contains("RLIMIT_AS")),
        "{:?}\n{}",
        r.analysis.cause,
        statements(r)
    );
    let candidate = &r.analysis.candidates[0];
    assert!(candidate.prediction_error() <= 0.05, "{candidate:?}");
    let CandidateTest::Confirmed { experiments, .. } = &candidate.test else {
        panic!("{:?}", candidate.test)
    };
    let lowered = &experiments[0];
    assert!(lowered.change.to < lowered.change.from, "{lowered:?}");
    let predicted = lowered.predicted_count.unwrap();
    assert!(
        lowered.observed_count.abs_diff(predicted) as f64 <= 0.05 * predicted as f64,
        "{lowered:?}"
    );
    assert!(
        lowered.observed_count < r.buffers * 9 / 10,
        "the failure moved down: {lowered:?}"
    );
    assert!(statements(r).contains("confirmed:"), "{}", statements(r));
}

#[test]
fn daxpy_verifies_on_intel_sub_devices_and_across_two() {
    let out = run(clmulti_intel().args([
        "axpy",
        "--partition",
        "equally",
        "--n",
        "65539",
        "--repeat",
        "2",
        "--format",
        "json",
    ]));
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
        let kernels: Vec<&str> = d["verified"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["kernel"].as_str().unwrap())
            .collect();
        assert!(
            kernels.contains(&"seed") && kernels.contains(&"fast"),
            "{kernels:?}"
        );
    }
    assert!(
        json["cross_device"]["max_error_ulps"].as_f64().unwrap() <= 2.0,
        "{}",
        json["cross_device"]
    );
}

#[test]
fn a_partition_the_runtime_refuses_is_unsupported_not_a_crash() {
    let path = scenario_file(
        "three.toml",
        "[devices]\ntype = \"cpu\"\npartition = [1, 1, 1]\n[allocation]\ncount = 10\n",
    );
    let out = run(clmulti(1).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    match &reports(&out)[0].stop {
        StopReason::Unsupported { reason } => {
            assert!(
                reason.contains("by counts [1, 1, 1]") && reason.contains("CL_"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

/// `ulimit -v` in the shell that runs diagnose: every case meets the limit the
/// process inherited (a failure the runtime returns, not a guard that stops short of
/// it), and moving it confirms it.
#[test]
fn diagnose_under_an_inherited_address_space_limit_studies_it() {
    use clmulti_explain::diagnosis::Diagnosis;
    use std::os::unix::process::CommandExt;
    let mut cmd = clmulti_intel();
    // Each thread that allocates may get a malloc arena of its own, 64 MiB of address
    // space reserved at once: how many the runtime's threads make depends on how the
    // machine schedules them, and once the run crashed (SIGABRT, at 880 buffers, not
    // 958) on a loaded machine. Two arenas make the limit the buffers' alone.
    cmd.env("MALLOC_ARENA_MAX", "2");
    // SAFETY: setrlimit in the child between fork and exec, as `ulimit -v` does.
    unsafe {
        cmd.pre_exec(|| {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_AS, &mut lim);
            lim.rlim_cur = 1_500_000_000;
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let out = run(cmd.args([
        "-q",
        "diagnose",
        "--partition",
        "equally",
        "--count",
        "4000",
        "--format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let d: Diagnosis = serde_json::from_slice(&out.stdout).unwrap();
    // Fill runs fill what they create (fewer buffers, each written): they may end first.
    for r in &d.runs {
        assert_ne!(r.outcome, clmulti_explain::StopKind::Guard, "{r:?}");
    }
    for r in d
        .runs
        .iter()
        .filter(|r| r.strategy == clmulti_scenario::Strategy::Create)
    {
        assert_eq!(r.outcome, clmulti_explain::StopKind::Failed, "{r:?}");
        assert!(r.headline.contains("CL_OUT_OF_HOST_MEMORY (-6)"), "{r:?}");
    }
    let candidate = d
        .investigation
        .as_ref()
        .and_then(|i| i.candidates.first())
        .expect("a candidate");
    assert_eq!(candidate.resource, Resource::VirtualSize);
    assert!(
        matches!(candidate.test, CandidateTest::Confirmed { .. }),
        "{:?}",
        candidate.test
    );
}
