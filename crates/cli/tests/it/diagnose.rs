//! `clmulti diagnose` on two PoCL devices, and under each emulation policy: the
//! verdict names the right cause (or says it cannot), and the fixes that worked.

use crate::common;
use clmulti_explain::diagnosis::{Diagnosis, Fix, Outcome};
use clmulti_explain::verdict::{Basis, Candidate, CandidateTest, ShapeQuestion};
use clmulti_explain::Resource;
use clmulti_scenario::Rlimit;
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
    let d = diagnose(&mut clmulti(2), 10_000);
    assert_eq!(d.runs.len(), 6, "3 cases x create, fill");
    assert!(
        d.runs
            .iter()
            .all(|r| r.outcome == clmulti_explain::StopKind::Completed),
        "{:?}",
        d.runs
    );
    assert!(says(&d, "measured", "no run failed"), "{}", verdict(&d));
    assert!(
        says(&d, "measured", "adds no measurable cost per buffer"),
        "{}",
        verdict(&d)
    );
    // Host RSS meets RAM only millions of buffers away: past the horizon.
    assert!(
        says(
            &d,
            "inferred",
            "no limit within 10 times the shared context's 10000 buffers"
        ),
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

/// A soft RLIMIT_NOFILE of `soft` under a higher hard one, set in the child before
/// it starts: diagnose can then lower it and raise it.
fn with_nofile(cmd: &mut Command, soft: u64) -> &mut Command {
    // SAFETY: setrlimit in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            lim.rlim_cur = soft;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        })
    }
}

/// What a shape question's claim left: the keys of the alternatives no experiment
/// ruled out, in order (`None` when it was not asked).
fn shape(d: &Diagnosis, question: ShapeQuestion) -> Option<Vec<String>> {
    let claim = d
        .investigation
        .as_ref()?
        .shape
        .iter()
        .find(|f| f.question == question)?
        .claim
        .as_ref()?;
    let mut keys: Vec<String> = claim.remaining().iter().map(|a| a.key.clone()).collect();
    keys.dedup();
    Some(keys)
}

fn left(keys: &[&str]) -> Option<Vec<String>> {
    Some(keys.iter().map(|k| (*k).to_owned()).collect())
}

fn first_candidate(d: &Diagnosis) -> &Candidate {
    d.investigation
        .as_ref()
        .and_then(|i| i.candidates.first())
        .unwrap_or_else(|| panic!("no candidate: {}", verdict(d)))
}

#[test]
fn fd_per_peer_is_confirmed_by_moving_the_descriptor_limit_and_both_fixes_work() {
    let d = diagnose(with_nofile(&mut under("fd-per-peer", &[]), 1024), 2000);
    let shared = d
        .runs
        .iter()
        .find(|r| r.run_name == "shared-create")
        .unwrap();
    assert!((900..1024).contains(&shared.buffers), "{shared:?}");
    let c = first_candidate(&d);
    assert_eq!(c.resource, Resource::OpenFds);
    let CandidateTest::Confirmed { experiments, .. } = &c.test else {
        panic!("{:?}\n{}", c.test, verdict(&d))
    };
    // Lowered to half way between the descriptors open before the first buffer and
    // the limit: the failure moved down to where the line says.
    let lowered = &experiments[0];
    assert!(
        lowered.change.to < 1024 && lowered.change.to > 400,
        "{lowered:?}"
    );
    let predicted = lowered.predicted_count.unwrap();
    assert!(
        lowered.observed_count.abs_diff(predicted) <= predicted / 20,
        "{lowered:?}"
    );
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
        says(&d, "measured", "confirmed: open fds"),
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
        outcome(&d, |f| matches!(
            f,
            Fix::RaiseSoftLimit {
                limit: Rlimit::NoFile,
                ..
            }
        )),
        Outcome::Worked { buffers: 2000, .. }
    ));
    assert!(
        matches!(outcome(&d, |f| *f == Fix::Pin), Outcome::Untested { .. }),
        "PoCL cannot pin"
    );
}

/// The case: a counter that fails at 1000 and holds a descriptor per
/// buffer, under a soft limit of 1100: 1006 descriptors of 1100 is a cost, not a
/// cause, and the shape runs say what the unseen limit is.
#[test]
fn a_counter_that_also_holds_descriptors_is_not_blamed_on_them_and_its_shape_is_measured() {
    let d = diagnose(
        with_nofile(
            &mut under(
                "fail-after,fd-per-peer",
                &[("CLMULTI_LAYER_FAIL_AFTER", "1000")],
            ),
            1100,
        ),
        2000,
    );
    assert!(!says(&d, "inferred", "failed because"), "{}", verdict(&d));
    assert!(!says(&d, "measured", "confirmed:"), "{}", verdict(&d));
    assert!(
        says(&d, "inferred", "not explained by what was measured"),
        "{}",
        verdict(&d)
    );
    assert!(
        says(&d, "measured", "open fds +1 per buffer"),
        "{}",
        verdict(&d)
    );
    assert_eq!(
        shape(&d, ShapeQuestion::CountOrBytes),
        left(&["buffers", "granules"]),
        "{}",
        verdict(&d)
    );
    assert_eq!(
        shape(&d, ShapeQuestion::LiveOrCumulative),
        left(&["given-back", "cumulative", "rate"]),
        "{}",
        verdict(&d)
    );
    assert_eq!(
        shape(&d, ShapeQuestion::PerContextOrProcess),
        left(&["process"]),
        "{}",
        verdict(&d)
    );
    // A third device holds a third descriptor per buffer: that re-run fails at the
    // descriptor limit, which says nothing of peers and the counter: no device model
    // is claimed, and the evidence says why.
    let peers = d
        .investigation
        .as_ref()
        .and_then(|i| {
            i.shape
                .iter()
                .find(|f| f.question == ShapeQuestion::PerPeer)
        })
        .and_then(|f| f.claim.as_ref())
        .expect("the per-peer question was asked");
    assert!(peers.settled().is_none(), "{}", peers.sentence());
    assert!(
        peers
            .evidence()
            .iter()
            .any(|e| e.contains("met open fds at RLIMIT_NOFILE")),
        "{:?}",
        peers.evidence()
    );
}

#[test]
fn host_mirror_is_confirmed_by_moving_the_mirror_cap_rss_does_not_show_it() {
    let d = diagnose(
        &mut under("host-mirror", &[("CLMULTI_LAYER_MIRROR_LIMIT", "128MiB")]),
        400,
    );
    let c = first_candidate(&d);
    assert_eq!(c.resource, Resource::SystemShmem, "{}", verdict(&d));
    assert!(
        matches!(c.test, CandidateTest::Confirmed { .. }),
        "{:?}",
        c.test
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
fn eager_residency_is_confirmed_by_moving_the_device_size() {
    let d = diagnose(
        &mut under("eager", &[("CLMULTI_LAYER_DEVICE_MEMORY", "64MiB")]),
        400,
    );
    let c = first_candidate(&d);
    assert!(matches!(c.resource, Resource::DeviceMemory { .. }), "{c:?}");
    assert!(
        matches!(c.test, CandidateTest::Confirmed { .. }),
        "{:?}\n{}",
        c.test,
        verdict(&d)
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
fn fail_after_is_not_explained_and_its_shape_is_a_per_process_counter_of_buffers() {
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
    assert_eq!(
        shape(&d, ShapeQuestion::CountOrBytes),
        left(&["buffers", "granules"])
    );
    assert_eq!(
        shape(&d, ShapeQuestion::LiveOrCumulative),
        left(&["given-back", "cumulative", "rate"])
    );
    assert_eq!(
        shape(&d, ShapeQuestion::PerContextOrProcess),
        left(&["process"])
    );
    assert_eq!(shape(&d, ShapeQuestion::PerPeer), left(&["none"]));
    assert!(matches!(
        outcome(&d, |f| *f == Fix::PerDeviceContexts),
        Outcome::Worked { .. }
    ));
}

#[test]
fn a_per_context_counter_is_found_per_context() {
    let d = diagnose(
        &mut under(
            "fail-after",
            &[
                ("CLMULTI_LAYER_FAIL_AFTER", "300"),
                ("CLMULTI_LAYER_FAIL_SCOPE", "context"),
            ],
        ),
        1000,
    );
    assert_eq!(
        shape(&d, ShapeQuestion::PerContextOrProcess),
        left(&["context"]),
        "{}",
        verdict(&d)
    );
}

#[test]
fn a_byte_budget_is_found_to_count_live_bytes() {
    let d = diagnose(
        &mut under("byte-budget", &[("CLMULTI_LAYER_BYTE_BUDGET", "256MiB")]),
        1000,
    );
    let shared = d
        .runs
        .iter()
        .find(|r| r.run_name == "shared-create")
        .unwrap();
    assert_eq!(shared.buffers, 256, "{shared:?}");
    assert!(
        says(&d, "inferred", "not explained by what was measured"),
        "{}",
        verdict(&d)
    );
    assert_eq!(
        shape(&d, ShapeQuestion::CountOrBytes),
        left(&["bytes"]),
        "{}",
        verdict(&d)
    );
    assert_eq!(
        shape(&d, ShapeQuestion::LiveOrCumulative),
        left(&["given-back"]),
        "{}",
        verdict(&d)
    );
    assert!(
        says(&d, "inferred", "what the limit counts: bytes"),
        "{}",
        verdict(&d)
    );
}

/// Release calls that succeed while the memory stays: the leak check reads every
/// resource after release, and two rounds tell a leak from a cache.
#[test]
fn memory_release_never_frees_is_found_and_told_from_a_cache() {
    let d = diagnose(&mut under("leak", &[]), 200);
    assert!(
        says(&d, "measured", "every release call succeeded, yet"),
        "{}",
        verdict(&d)
    );
    assert!(
        says(&d, "inferred", "grows every round (a leak)"),
        "{}",
        verdict(&d)
    );
    assert!(!d.release.is_empty());
    let round = d
        .release
        .iter()
        .find_map(|f| f.second_round.as_ref())
        .expect("two rounds ran");
    assert!(
        round
            .readings
            .iter()
            .any(|r| r.kept() == clmulti_explain::Kept::Leak),
        "{round:?}"
    );
}

#[test]
fn out_writes_markdown_json_and_a_page_that_leads_with_the_verdict() {
    let dir = temp_root().join(format!("clmulti-diagnose-out-{}", std::process::id()));
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
        clmulti_explain::diagnosis::DIAGNOSIS_SCHEMA_VERSION
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

#[test]
fn a_stopped_diagnose_reports_and_writes_the_cases_that_ran() {
    let out_dir = temp_root().join(format!("clmulti-stopped-{}", std::process::id()));
    // Once the first case has its result, SIGTERM (a scheduler's, `timeout`'s).
    let started = start_until(
        clmulti(2)
            .args(["diagnose", "--count", "100000", "--format", "json", "--out"])
            .arg(&out_dir),
        "diagnose:   completed",
    );
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(started.pid(), libc::SIGTERM) };
    let out = started.finish();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let d: Diagnosis = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let first = d.verdict[0].to_string();
    assert!(first.contains("stopped by SIGTERM after "), "{first}");
    assert!(first.contains(" of the 6 cases"), "{first}");
    assert!((1..6).contains(&d.runs.len()), "{} runs", d.runs.len());
    for file in ["diagnose.md", "diagnose.json", "runs.jsonl", "index.html"] {
        assert!(out_dir.join(file).exists(), "{file} not written");
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}
