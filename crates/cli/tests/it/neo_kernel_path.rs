//! Intel's GPU runtime NEO 22.43 (Debian's `intel-opencl-icd`) on its real
//! kernel-driver path, over clmulti's emulated i915 driver (`clmulti emulate`): the
//! seed's own program fails as it did for its author, clmulti names why from both
//! sides of the limit, counts what each buffer asks of the kernel driver, and
//! measures the fixes.

use crate::common;
use clmulti_explain::diagnosis::{Diagnosis, Fix, Outcome, Role};
use clmulti_explain::verdict::CandidateTest;
use clmulti_explain::Resource;
use clmulti_scenario::Strategy;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `clmulti emulate --devices N -- ...`, on NEO alone, with `soft` as the soft
/// descriptor limit ([`with_soft_nofile`]).
fn emulate(devices: usize, soft: u64) -> Command {
    kmd_emu();
    let mut cmd = Command::new(bin());
    cmd.args(["emulate", "--devices", &devices.to_string(), "--"])
        .env("OCL_ICD_VENDORS", neo_vendors())
        .env_remove("POCL_DEVICES")
        .env_remove("LD_PRELOAD");
    with_soft_nofile(&mut cmd, soft);
    cmd
}

/// The seed's program (bench/seed), built as its author built it, in a fresh folder.
fn seed_dir() -> PathBuf {
    seed_program(&temp_root().join(format!("clmulti-seed-{}", std::process::id())))
}

/// The last index the seed's program printed as allocated before it failed (what its
/// author read: "998: Allocated 1 MB successfully"), and its last line.
fn seed_failure(dir: &Path, soft: u64) -> (u64, String) {
    let out = run(emulate(2, soft)
        .arg("./OpenCLMulti")
        .args(["--gpus", "2"])
        .current_dir(dir));
    let err = stderr(&out);
    let (allocated, last) = seed_outcome(&err);
    (
        allocated.unwrap_or_else(|| panic!("no allocation: {err}")),
        last,
    )
}

#[test]
fn the_seeds_own_program_fails_with_minus_6_near_1000_and_moves_with_the_descriptor_limit() {
    let dir = seed_dir();
    let (at_1024, said) = seed_failure(&dir, 1024);
    assert!(said.contains("Could not create memory, err -6"), "{said}");
    // 1024 descriptors: 3 standard streams, 2 render nodes, 18 dma-bufs NEO exports at
    // start (its command streamers' tags), then one per buffer.
    assert!(
        (990..=1000).contains(&at_1024),
        "last allocated index {at_1024}"
    );
    let (at_2048, said) = seed_failure(&dir, 2048);
    assert!(said.contains("err -6"), "{said}");
    assert_eq!(
        at_2048 - at_1024,
        1024,
        "one descriptor per buffer, nothing else moves"
    );
}

fn diagnose(devices: usize, count: u64, extra: &[&str]) -> Diagnosis {
    diagnose_at(devices, 1024, count, extra)
}

fn diagnose_at(devices: usize, soft: u64, count: u64, extra: &[&str]) -> Diagnosis {
    let out = run(emulate(devices, soft)
        .arg(bin())
        .args([
            "diagnose",
            "--count",
            &count.to_string(),
            "--format",
            "json",
        ])
        .args(extra));
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn diagnose_confirms_dmabuf_descriptors_from_both_sides_and_measures_the_fixes() {
    let bundle = temp_root().join(format!("clmulti-bundle-{}.tar.gz", std::process::id()));
    let d = diagnose(
        2,
        1500,
        &["--runtime-log", "--bundle", bundle.to_str().unwrap()],
    );
    let verdict: String = d.verdict.iter().map(|s| format!("{s}\n")).collect();
    // The label: NEO's own path, the driver emulated, said where it is read.
    let neo = d.neo_emulation.as_ref().expect("the label");
    assert_eq!(neo.kernel_driver.map(|k| k.devices), Some(2));
    assert!(
        verdict.contains("NEO's real kernel-driver path; the kernel driver is emulated (no GPU work runs; kernel accounting as modelled)"),
        "{verdict}"
    );
    // The seed's case: the shared context fails near 1000, the others complete.
    let run = |role: Role| {
        d.runs
            .iter()
            .find(|r| r.role == role && r.strategy == Strategy::Create)
            .unwrap()
    };
    assert!(
        (985..=1000).contains(&run(Role::Shared).buffers),
        "{verdict}"
    );
    assert_eq!(run(Role::OneDevice).buffers, 1500);
    assert_eq!(run(Role::PerDevice).buffers, 1500);
    // The cause, confirmed by lowering and raising the soft limit.
    let investigation = d.investigation.as_ref().expect("an investigation");
    let fds = investigation
        .candidates
        .iter()
        .find(|c| c.resource == Resource::OpenFds)
        .expect("open fds a candidate");
    assert!(
        matches!(fds.test, CandidateTest::Confirmed { .. }),
        "{:?}",
        fds.test
    );
    let experiments = fds.test.experiments();
    assert_eq!(experiments.len(), 2, "lowered and raised: {experiments:?}");
    assert!(experiments.iter().any(|e| e.change.to > e.change.from));
    assert!(
        verdict.contains("dma-buf fds (exported by i915)"),
        "{verdict}"
    );
    // What each buffer asked of the driver, per case.
    let counts = |role: Role| {
        d.kernel_counts
            .iter()
            .find(|k| k.role == role && k.strategy == Strategy::Create)
            .unwrap_or_else(|| panic!("no kernel counts for {role:?}"))
            .per_buffer
            .clone()
    };
    let near = |v: Option<&f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 0.02);
    let shared = counts(Role::Shared);
    for (key, want) in [
        ("exports", 1.0),
        ("imports", 1.0),
        ("maps", 1.0),
        ("objects-0-system0", 1.0),
    ] {
        assert!(near(shared.get(key), want), "shared {key}: {shared:?}");
    }
    assert!(!shared.contains_key("objects-0-local0"), "{shared:?}");
    let one = counts(Role::OneDevice);
    assert!(
        near(one.get("objects-0-local0"), 1.0) && !one.contains_key("exports"),
        "{one:?}"
    );
    let per = counts(Role::PerDevice);
    assert!(
        near(per.get("objects-0-local0"), 0.5) && near(per.get("objects-1-local0"), 0.5),
        "{per:?}"
    );
    // The fixes, measured: one context per device and a raised limit work.
    let fix = |pick: fn(&Fix) -> bool| {
        d.fixes
            .iter()
            .find(|f| pick(&f.fix))
            .map(|f| f.outcome.clone())
    };
    assert!(matches!(
        fix(|f| matches!(f, Fix::PerDeviceContexts)),
        Some(Outcome::Worked { .. })
    ));
    assert!(
        matches!(
            fix(|f| matches!(f, Fix::RaiseSoftLimit { .. })),
            Some(Outcome::Worked { .. })
        ),
        "{:?}",
        d.fixes
    );
    assert!(matches!(
        fix(|f| matches!(f, Fix::Pool)),
        Some(Outcome::Worked { .. })
    ));
    // The call behind the -6, named; NEO's own log, kept apart from the report.
    assert!(
        verdict.contains("clCreateBuffer returned CL_OUT_OF_HOST_MEMORY (-6) after ioctl(")
            && verdict.contains("DRM_IOCTL_PRIME_HANDLE_TO_FD) failed with EMFILE"),
        "{verdict}"
    );
    // Where, in the statement's evidence: NEO's stack.
    assert!(
        d.verdict.iter().any(|s| s
            .detail
            .as_deref()
            .is_some_and(|e| e.starts_with("in libigdrcl.so+"))),
        "{verdict}"
    );
    assert!(
        verdict.contains("the failing call agrees with the readings: EMFILE"),
        "{verdict}"
    );
    assert!(verdict.contains("the runtime's own log just before the failure: \"IOCTL DRM_IOCTL_PRIME_HANDLE_TO_FD returns -1, errno 24"), "{verdict}");
    // The bundle a maintainer gets.
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(&bundle)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    for file in [
        "README.txt",
        "libraries.txt",
        "runs-summary.txt",
        "machine.txt",
        "opencl.txt",
        "emulated.txt",
        "environment.json",
        "failing-calls.json",
        "runtime-log.txt",
        "diagnose.json",
        "runs.jsonl",
        "reproduce.c",
        "index.html",
    ] {
        assert!(
            listing.contains(&format!("clmulti-bundle/{file}")),
            "{file} missing: {listing}"
        );
    }
    let calls = Command::new("tar")
        .arg("xzOf")
        .arg(&bundle)
        .arg("clmulti-bundle/failing-calls.json")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&calls.stdout).contains("\"errno_name\": \"EMFILE\""));
    let emulated = Command::new("tar")
        .arg("xzOf")
        .arg(&bundle)
        .arg("clmulti-bundle/emulated.txt")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&emulated.stdout).contains("the kernel driver is emulated"));
    bundle_names_no_one_and_every_library(&bundle);
    let _ = std::fs::remove_file(&bundle);
    // The versioned fact applies to 22.43; the GTT-mirror reports do not.
    assert!(verdict.contains("first in tag 26.18.38308.1"), "{verdict}");
    assert!(verdict.contains("reported for Arc Pro B70/B60 (Battlemage, Xe2) on xe through Level Zero (SYCL, PyTorch XPU), not this machine"), "{verdict}");
}

#[test]
fn neo_debug_output_leaves_the_report_whole_and_a_reproducer_fails_where_clmulti_did() {
    let path = scenario_file(
        "neo-repro.toml",
        "[devices]\nplatform = \"Graphics\"\ntype = \"gpu\"\ncount = 2\n[context]\nmode = \"shared\"\n\
         [allocation]\nsize = \"1MiB\"\ncount = 1500\n[sampling]\nevery = 100\n",
    );
    let out = run(emulate(2, 1024)
        .env("NEOReadDebugKeys", "1")
        .env("PrintDebugMessages", "1")
        .env("PrintIoctlEntries", "1")
        .arg(bin())
        .args(["run", "--format", "json"])
        .arg(&path));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    let clmulti_explain::StopReason::Failed { index, .. } = r.stop else {
        panic!("{:?}", r.stop)
    };
    let last = r
        .traced
        .as_ref()
        .and_then(|t| t.failing_calls.last())
        .expect("a failing call");
    assert_eq!(
        (last.call.as_str(), last.errno_name.as_str()),
        ("ioctl", "EMFILE")
    );
    assert!(
        last.args.ends_with("DRM_IOCTL_PRIME_HANDLE_TO_FD"),
        "{}",
        last.args
    );
    assert!(r
        .stdout_tail
        .contains("IOCTL DRM_IOCTL_PRIME_HANDLE_TO_FD returns -1, errno 24"));
    // The reproducer, built and run under the same emulation.
    let dir = path.parent().unwrap();
    std::fs::write(dir.join("runs.jsonl"), &out.stdout).unwrap();
    let made = run(Command::new(bin())
        .arg("reproduce")
        .arg(dir.join("runs.jsonl"))
        .arg("--out")
        .arg(dir.join("reproduce.c")));
    assert!(made.status.success(), "{}", stderr(&made));
    assert!(Command::new("cc")
        .args(["-O2", "-o", "reproduce", "reproduce.c", "-lOpenCL"])
        .current_dir(dir)
        .status()
        .unwrap()
        .success());
    let said = run(emulate(2, 1024).arg(dir.join("reproduce")).current_dir(dir));
    let said = String::from_utf8_lossy(&said.stdout);
    let at: u64 = said
        .strip_prefix("failed at buffer ")
        .and_then(|s| s.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        at.abs_diff(index) <= 1,
        "clmulti {index}, reproducer {said}"
    );
}

#[test]
fn four_devices_one_export_and_three_imports_per_shared_buffer() {
    let path = scenario_file(
        "neo-i915-4.toml",
        "[devices]\nplatform = \"Graphics\"\ntype = \"gpu\"\ncount = 4\n[context]\nmode = \"shared\"\n\
         [allocation]\nsize = \"1MiB\"\ncount = 300\n[sampling]\nevery = 50\n",
    );
    let out = run(emulate(4, 1024)
        .arg(bin())
        .args(["run", "--format", "json"])
        .arg(&path));
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert!(
        matches!(r.stop, clmulti_explain::StopReason::Completed),
        "{:?}",
        r.stop
    );
    let counts = clmulti_explain::diagnosis::KernelCounts::of(r, Role::Shared).expect("counts");
    let get = |k: &str| counts.per_buffer.get(k).copied().unwrap_or(0.0);
    assert_eq!(
        (
            get("exports"),
            get("imports"),
            get("maps"),
            get("objects-0-system0")
        ),
        (1.0, 3.0, 1.0, 1.0),
        "{:?}",
        counts.per_buffer
    );
    assert!((cost(r, Resource::DmabufFds).per_buffer - 1.0).abs() < 0.01);
    assert_eq!(
        clmulti_explain::Sample::exporters(&r.samples).as_deref(),
        Some("i915")
    );
    let label = r.neo_emulation.as_ref().expect("label").label();
    assert!(
        label.contains("on 4 emulated i915 Arc A770 devices: NEO's real kernel-driver path"),
        "{label}"
    );
}

/// At a low limit the fd cause is met as at 1024 (clmulti's own descriptors counted:
/// no headroom that does not exist), confirmed from both sides, and the one-more-
/// device run says the descriptor is per buffer, not per peer (one export each).
#[test]
fn at_nofile_256_the_descriptor_cause_is_confirmed_and_not_per_peer() {
    let d = diagnose_at(2, 256, 600, &["--size", "64KiB"]);
    let verdict: String = d.verdict.iter().map(|s| format!("{s}\n")).collect();
    let investigation = d.investigation.as_ref().expect("an investigation");
    let fds = investigation
        .candidates
        .iter()
        .find(|c| c.resource == Resource::OpenFds)
        .unwrap_or_else(|| panic!("open fds not a candidate: {verdict}"));
    assert!(
        matches!(fds.test, CandidateTest::Confirmed { .. }),
        "{:?}\n{verdict}",
        fds.test
    );
    assert!(
        fds.reading >= 255.0 && fds.reading <= 256.0,
        "{}",
        fds.reading
    );
    let replicates = investigation.replicates.as_ref().expect("replicates");
    assert!(replicates.agree(), "{replicates:?}");
    let per_peer = investigation
        .shape
        .iter()
        .find(|f| f.question == clmulti_explain::verdict::ShapeQuestion::PerPeer)
        .expect("the per-peer run");
    // One descriptor a buffer at 2, 3 and 4 devices: the same whatever the devices.
    assert!(per_peer.settles_on("none"), "{verdict}");
    assert!(!verdict.contains("not explained"), "{verdict}");
}

/// The bundle as a maintainer gets it: no host name, no user name (root names no
/// one), no checkout path in any file; a build ID for every library it lists.
fn bundle_names_no_one_and_every_library(bundle: &std::path::Path) {
    let dir = bundle.with_extension("d");
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("tar")
        .arg("xzf")
        .arg(bundle)
        .arg("-C")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let user = std::env::var("USER").unwrap_or_default();
    // A name standing alone: `vm` in `vm.max_map_count` is not the host `vm`.
    let alone = |text: &str, name: &str| {
        let inside = |c: char| c.is_alphanumeric() || "_-.".contains(c);
        text.match_indices(name).any(|(at, _)| {
            !text[..at].chars().next_back().is_some_and(inside)
                && !text[at + name.len()..].chars().next().is_some_and(inside)
        })
    };
    let mut libraries = String::new();
    for entry in std::fs::read_dir(dir.join("clmulti-bundle")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display();
        assert!(
            !text.contains(checkout.to_str().unwrap()),
            "{name} holds the checkout"
        );
        assert!(!alone(&text, &host), "{name} holds the host name {host}");
        if !user.is_empty() && user != "root" {
            assert!(!alone(&text, &user), "{name} holds the user name");
        }
        if path.ends_with("libraries.txt") {
            libraries = text;
        }
    }
    let listed: Vec<&str> = libraries
        .split("\n\n")
        .skip(1)
        .filter(|b| !b.trim().is_empty())
        .collect();
    assert!(listed.len() >= 10, "{libraries}");
    assert!(libraries.contains("intel-opencl-icd 22.43"), "{libraries}");
    for block in listed {
        let id = block
            .lines()
            .find_map(|l| l.trim().strip_prefix("build ID "))
            .unwrap_or("");
        assert!(
            id.len() >= 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "no build ID: {block}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
