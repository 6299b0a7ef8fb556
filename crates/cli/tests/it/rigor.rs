//! Diagnoses that are not fooled, over PoCL with the test fault layer
//! (`hostile/layer/faults.c`): a random failure is not reproducible, a timed one is a
//! time limit, a limit kept in a file persists and voids the fixes, two limits close
//! together confirm the first and name the second, a limit that can only be lowered
//! is consistent, never confirmed, descriptors are named at nofile 128 and 256, and
//! rounds tell a cache from a leak in create and in fill.

use crate::common;
use clmulti_explain::diagnosis::{Diagnosis, Outcome};
use clmulti_explain::verdict::CandidateTest;
use clmulti_explain::{Kept, Resource};
use common::*;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// `clmulti diagnose` over two PoCL devices under the fault `fault` (with `knobs`),
/// `count` buffers of 64 KiB, under the soft (and, when given, hard) descriptor limit,
/// no descriptor inherited from the harness.
fn diagnose(
    fault: &str,
    knobs: &[(&str, &str)],
    count: u64,
    nofile: Option<(u64, bool)>,
) -> Diagnosis {
    let mut cmd = clmulti(2);
    cmd.env("OPENCL_LAYERS", fault_layer())
        .env("CLMULTI_FAULT", fault);
    for (k, v) in knobs {
        cmd.env(k, v);
    }
    limit_descriptors(&mut cmd, nofile);
    diagnose_with(&mut cmd, count)
}

fn diagnose_with(cmd: &mut Command, count: u64) -> Diagnosis {
    let out = run(cmd.args([
        "-q",
        "diagnose",
        "--format",
        "json",
        "--size",
        "64KiB",
        "--count",
        &count.to_string(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Soft RLIMIT_NOFILE `soft` (the hard one too when `hard_too`), descriptors beyond
/// stdio closed on exec.
fn limit_descriptors(cmd: &mut Command, nofile: Option<(u64, bool)>) {
    // SAFETY: close_range, getrlimit and setrlimit are async-signal-safe; between
    // fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if let Some((soft, hard_too)) = nofile {
                let mut lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
                lim.rlim_cur = soft;
                if hard_too {
                    lim.rlim_max = soft;
                }
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    };
}

fn verdict(d: &Diagnosis) -> String {
    d.verdict.iter().map(|s| format!("{s}\n")).collect()
}

fn fds_test(d: &Diagnosis) -> &CandidateTest {
    &d.investigation
        .as_ref()
        .unwrap_or_else(|| panic!("no investigation: {}", verdict(d)))
        .candidates
        .iter()
        .find(|c| c.resource == Resource::OpenFds)
        .unwrap_or_else(|| panic!("open fds not a candidate: {}", verdict(d)))
        .test
}

#[test]
fn a_failure_that_strikes_at_random_is_not_reproducible_and_voids_the_fixes() {
    let d = diagnose("random", &[("CLMULTI_FAULT_ONE_IN", "300")], 3000, None);
    let v = verdict(&d);
    assert!(
        v.contains("re-run unchanged: not reproducible: chance"),
        "{v}"
    );
    for shape in [
        "counts buffers",
        "per context",
        "cumulative",
        "is the cause",
    ] {
        assert!(!v.contains(shape), "{shape}: {v}");
    }
    assert!(
        d.fixes.iter().all(|f| !matches!(
            f.outcome,
            Outcome::Worked { .. } | Outcome::DidNotWork { .. }
        )),
        "{:?}",
        d.fixes
    );
}

#[test]
fn a_failure_after_a_time_is_a_time_limit_not_a_count() {
    let d = diagnose("timed", &[("CLMULTI_FAULT_SECONDS", "0.05")], 20000, None);
    let v = verdict(&d);
    assert!(
        v.contains("a time limit (after about ") && v.contains(" ms)"),
        "{v}"
    );
    for shape in ["counts buffers", "cumulative", "is the cause"] {
        assert!(!v.contains(shape), "{shape}: {v}");
    }
}

#[test]
fn a_limit_kept_outside_the_process_persists_and_no_fix_is_judged() {
    let file = temp_root().join(format!("clmulti-persistent-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let d = diagnose(
        "persistent",
        &[
            ("CLMULTI_FAULT_FILE", file.to_str().unwrap()),
            ("CLMULTI_FAULT_COUNT", "1500"),
        ],
        3000,
        None,
    );
    let _ = std::fs::remove_file(&file);
    let v = verdict(&d);
    assert!(v.contains("a limit that persists across processes"), "{v}");
    for f in &d.fixes {
        match &f.outcome {
            Outcome::Untested { reason } => {
                assert!(
                    reason.starts_with("void") || reason.contains("not"),
                    "{reason}"
                )
            }
            other => panic!("a fix judged after the limit persisted: {other:?}"),
        }
    }
    assert!(!v.contains("did not work"), "{v}");
}

#[test]
fn two_limits_close_together_confirm_the_first_and_name_the_second() {
    // Descriptors at the soft limit (1024, the hard one well above), a counter 29
    // buffers behind them.
    let d = diagnose(
        "two-limits",
        &[("CLMULTI_FAULT_COUNT", "1040")],
        3000,
        Some((1024, false)),
    );
    let CandidateTest::Confirmed {
        second_limit_after, ..
    } = fds_test(&d)
    else {
        panic!("{:?}\n{}", fds_test(&d), verdict(&d))
    };
    let after = second_limit_after.expect("a second limit");
    assert!((20..=40).contains(&after), "{after}");
    let v = verdict(&d);
    assert!(
        v.contains("short of its raised limit: a second limit (not explained)"),
        "{v}"
    );
    assert!(!v.contains("refuted"), "{v}");
}

#[test]
fn a_limit_that_cannot_be_raised_is_consistent_not_confirmed() {
    // Soft = hard: raising takes CAP_SYS_RESOURCE, which this process may lack.
    let d = diagnose_with(
        clmulti(2)
            .env("OPENCL_LAYERS", layer())
            .env("CLMULTI_LAYER_POLICY", "fd-per-peer")
            .pre_exec_limit(1024, true),
        3000,
    );
    let v = verdict(&d);
    if clmulti_scenario::may_raise_hard_limits() {
        // Root with the capability raises the hard limit: both sides.
        assert!(
            matches!(fds_test(&d), CandidateTest::Confirmed { .. }),
            "{v}"
        );
    } else {
        assert!(
            matches!(fds_test(&d), CandidateTest::Consistent { .. }),
            "{:?}\n{v}",
            fds_test(&d)
        );
        assert!(
            v.contains("open fds at RLIMIT_NOFILE (soft): lowering the limit moved the failure as its line predicts; raising it could not be tried"),
            "{v}"
        );
        // The failing call (openat, EMFILE) is what the limit gives: it settles it.
        assert!(
            v.contains("buffers: open fds at RLIMIT_NOFILE (soft)\n"),
            "{v}"
        );
        assert!(!v.contains("confirmed:"), "{v}");
    }
}

#[test]
fn descriptors_are_named_at_low_limits_counting_clmulti_s_own() {
    for soft in [128, 256] {
        let d = diagnose_with(
            clmulti(2)
                .env("OPENCL_LAYERS", layer())
                .env("CLMULTI_LAYER_POLICY", "fd-per-peer")
                .pre_exec_limit(soft, false),
            1000,
        );
        let v = verdict(&d);
        assert!(
            matches!(fds_test(&d), CandidateTest::Confirmed { .. }),
            "nofile {soft}: {v}"
        );
        assert!(
            v.contains(&format!("({soft} of {soft})")),
            "nofile {soft}: {v}"
        );
        assert!(!v.contains("not explained"), "nofile {soft}: {v}");
    }
}

#[test]
fn rounds_tell_a_cache_from_a_leak_in_create_and_fill() {
    let kept = |fault: &str| {
        let d = diagnose(fault, &[("CLMULTI_FAULT_BYTES", "32768")], 2000, None);
        let by_strategy = |strategy: &str| {
            d.release
                .iter()
                .find(|f| f.run_name.starts_with("shared") && f.run_name.ends_with(strategy))
                .and_then(|f| f.second_round.as_ref())
                .and_then(|r| {
                    r.readings
                        .iter()
                        .find(|r| r.resource == Resource::HeapInUse)
                })
                .map(|r| r.kept())
                .unwrap_or_else(|| panic!("{fault} {strategy}: no rounds\n{}", verdict(&d)))
        };
        (by_strategy("create"), by_strategy("fill"), verdict(&d))
    };
    let (create, fill, v) = kept("leak");
    assert_eq!((create, fill), (Kept::Leak, Kept::Leak), "{v}");
    assert!(v.contains("grows every round (a leak)"), "{v}");
    let (create, fill, v) = kept("cache");
    assert!(
        create == Kept::Reused && fill == Kept::Reused,
        "{create:?} {fill:?}\n{v}"
    );
    assert!(
        v.contains("kept once and reused by later rounds (a cache)"),
        "{v}"
    );
}

/// `pre_exec` setting the descriptor limit, on a `&mut Command`.
trait PreExecLimit {
    fn pre_exec_limit(&mut self, soft: u64, hard_too: bool) -> &mut Self;
}

impl PreExecLimit for Command {
    fn pre_exec_limit(&mut self, soft: u64, hard_too: bool) -> &mut Self {
        limit_descriptors(self, Some((soft, hard_too)));
        self
    }
}
