//! `clmulti diagnose` on two PoCL devices, and under each emulation policy: the
//! verdict names the right cause (or says it cannot), and the fixes that worked.

mod common;
use clmulti_alloc::analysis::Basis;
use clmulti_alloc::diagnosis::{Diagnosis, Fix, Outcome};
use common::*;
use std::os::unix::process::CommandExt;
use std::process::Command;

fn diagnose(cmd: &mut Command, count: u64) -> Diagnosis {
    let out = run(cmd.args([
        "-q",
        "diagnose",
        "--format",
        "json",
        "--count",
        &count.to_string(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn under(policy: &str, knobs: &[(&str, &str)]) -> Command {
    let mut cmd = clmulti(2);
    cmd.env("OPENCL_LAYERS", layer())
        .env("CLMULTI_LAYER_POLICY", policy);
    for (k, v) in knobs {
        cmd.env(k, v);
    }
    cmd
}

fn says(d: &Diagnosis, tag: &str, fragment: &str) -> bool {
    d.verdict
        .iter()
        .any(|s| s.tag() == tag && s.text.contains(fragment))
}

fn outcome(d: &Diagnosis, fix: impl Fn(&Fix) -> bool) -> &Outcome {
    &d.fixes
        .iter()
        .find(|f| fix(&f.fix))
        .unwrap_or_else(|| panic!("{:?}", d.fixes))
        .outcome
}

fn verdict(d: &Diagnosis) -> String {
    d.verdict.iter().map(|s| format!("{s}\n")).collect()
}

#[test]
fn two_pocl_devices_have_no_multi_device_overhead_and_no_failure() {
    let start = std::time::Instant::now();
    let d = diagnose(&mut clmulti(2), 10_000);
    assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
    assert_eq!(d.runs.len(), 6, "3 cases x create, fill");
    assert!(
        d.runs.iter().all(|r| r.outcome == "completed"),
        "{:?}",
        d.runs
    );
    assert!(says(&d, "measured", "no run failed"), "{}", verdict(&d));
    assert!(
        says(&d, "measured", "adds no measurable cost per buffer"),
        "{}",
        verdict(&d)
    );
    assert!(
        says(&d, "inferred", "first limit ahead for the shared context"),
        "{}",
        verdict(&d)
    );
    assert!(says(&d, "known", "PoCL"), "{}", verdict(&d));
    assert!(d.fixes.is_empty());
    // Every statement says where it comes from.
    assert!(d.verdict.iter().all(|s| match &s.basis {
        Basis::Inferred(from) | Basis::Known(from) => !from.is_empty(),
        Basis::Measured => true,
    }));
}

#[test]
fn fd_per_peer_is_diagnosed_and_both_fixes_are_measured_to_work() {
    let mut cmd = under("fd-per-peer", &[]);
    // The usual soft limit, under a higher hard one: a raised soft limit can be tried.
    // SAFETY: setrlimit in the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            lim.rlim_cur = 1024;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
    let d = diagnose(&mut cmd, 2000);
    let shared = d
        .runs
        .iter()
        .find(|r| r.run_name == "shared-create")
        .unwrap();
    assert!((900..1024).contains(&shared.buffers), "{shared:?}");
    assert!(
        says(
            &d,
            "inferred",
            "failed because open fds reached RLIMIT_NOFILE"
        ),
        "{}",
        verdict(&d)
    );
    assert!(
        says(&d, "measured", "open fds +1 per buffer"),
        "{}",
        verdict(&d)
    );
    assert!(matches!(
        outcome(&d, |f| *f == Fix::PerDeviceContexts),
        Outcome::Worked { buffers: 2000, .. }
    ));
    assert!(matches!(
        outcome(&d, |f| matches!(f, Fix::RaiseNofile { .. })),
        Outcome::Worked { buffers: 2000, .. }
    ));
    assert!(
        matches!(outcome(&d, |f| *f == Fix::Pin), Outcome::Untested { .. }),
        "PoCL cannot pin"
    );
    assert!(
        d.fix_lines()
            .iter()
            .any(|l| l.starts_with("worked: soft open-file limit raised")),
        "{:?}",
        d.fix_lines()
    );
}

#[test]
fn host_mirror_is_diagnosed_from_kernel_memory_rss_does_not_show() {
    let d = diagnose(
        &mut under("host-mirror", &[("CLMULTI_LAYER_MIRROR_LIMIT", "128MiB")]),
        400,
    );
    assert!(
        says(
            &d,
            "inferred",
            "failed because system Shmem reached the emulation layer's host-mirror cap"
        ),
        "{}",
        verdict(&d)
    );
    assert!(matches!(
        outcome(&d, |f| *f == Fix::PerDeviceContexts),
        Outcome::Worked { .. }
    ));
}

#[test]
fn eager_residency_is_diagnosed_from_device_memory() {
    let d = diagnose(
        &mut under("eager", &[("CLMULTI_LAYER_DEVICE_MEMORY", "64MiB")]),
        400,
    );
    assert!(
        says(&d, "inferred", "failed because device"),
        "{}",
        verdict(&d)
    );
    // One context per device halves each device's share, but fails too: measured.
    assert!(
        matches!(
            outcome(&d, |f| *f == Fix::PerDeviceContexts),
            Outcome::DidNotWork { .. }
        ),
        "{:?}",
        d.fixes
    );
}

#[test]
fn fail_after_is_not_explained_and_nothing_unmeasured_is_claimed() {
    let d = diagnose(
        &mut under("fail-after", &[("CLMULTI_LAYER_FAIL_AFTER", "500")]),
        1000,
    );
    assert!(
        says(&d, "inferred", "not explained by what was measured"),
        "{}",
        verdict(&d)
    );
    assert!(!says(&d, "inferred", "failed because"), "{}", verdict(&d));
    assert!(matches!(
        outcome(&d, |f| *f == Fix::PerDeviceContexts),
        Outcome::Worked { .. }
    ));
}

#[test]
fn out_writes_markdown_json_and_a_page_that_leads_with_the_verdict() {
    let dir = std::env::temp_dir().join(format!("clmulti-diagnose-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = run(clmulti(2).args([
        "-q",
        "diagnose",
        "--count",
        "200",
        "--format",
        "markdown",
        "--out",
        dir.to_str().unwrap(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.starts_with("# clmulti diagnose") && md.contains("## Verdict"),
        "{md}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("diagnose.md")).unwrap(),
        md
    );
    let json: Diagnosis =
        serde_json::from_str(&std::fs::read_to_string(dir.join("diagnose.json")).unwrap()).unwrap();
    assert_eq!(
        json.schema_version,
        clmulti_alloc::diagnosis::DIAGNOSIS_SCHEMA_VERSION
    );
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let verdict_at = html.find("Verdict").unwrap();
    assert!(verdict_at < html.find("Cost per buffer").unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("runs.jsonl"))
            .unwrap()
            .lines()
            .count(),
        6
    );
}
