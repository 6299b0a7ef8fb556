//! Runs ended from outside (SIGINT, SIGTERM, a killed parent, time limits) and the guards that end them from inside: each stops with its partial report and leaves nothing behind.

use super::*;

/// A run that goes on until stopped: lazy 4 KiB buffers released at once.
const ENDLESS: &str = "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = \"until-failure\"\nkeep = false\n[guards]\nmax_seconds = 60\n[sampling]\nevery = 100000\n";

#[test]
fn sigint_and_sigterm_end_a_run_with_its_partial_report() {
    let s = scenario_file("endless.toml", ENDLESS);
    // To the group (a terminal's Ctrl-C, `kill -- -PGID`) or to the process alone
    // (`kill PID`, a scheduler): the run stops once, releases and reports.
    let cases = [false, true].into_iter().flat_map(|isolate| {
        [true, false].into_iter().flat_map(move |to_group| {
            [(libc::SIGINT, 130), (libc::SIGTERM, 143)]
                .map(|(signal, code)| (isolate, to_group, signal, code))
        })
    });
    for (isolate, to_group, signal, code) in cases {
        let what = format!("isolate {isolate}, signal {signal}, to the group {to_group}");
        let r = interrupted_under_way(&s, isolate, to_group, signal, code, &what);
        assert_eq!(
            r.stop,
            clmulti_explain::StopReason::interrupted(signal),
            "{what}"
        );
        assert!(
            r.leak_check.after_release_sample.is_some(),
            "{what}: released"
        );
    }
    second_signal_ends_a_hung_run(&s);
    one_signal_sent_twice_is_one_request(&s);
}

/// Starts `clmulti [ARGS] run SCENARIO` over the fixture ICD that hangs in loading,
/// and returns once the run is hung there (the ICD made the file `HANG_READY` names).
fn hung_run(s: &Path, args: &[&str]) -> std::process::Child {
    let ready = s.with_extension("hung");
    let _ = std::fs::remove_file(&ready);
    let child = clmulti_with_icd("hang")
        .env("HANG_READY", &ready)
        .args(args)
        .arg("run")
        .arg(s)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !ready.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the run never reached the hanging ICD"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// `timeout` sends its signal to the command and then to the whole group: clmulti
/// gets two, its worker one. That is one request to stop, not a second Ctrl-C: the
/// hung run is not ended at once, without a report, but stops as asked (by its time
/// limit here, as it cannot stop in loading).
fn one_signal_sent_twice_is_one_request(s: &Path) {
    let child = hung_run(s, &["--timeout", "3"]);
    let pid = child.id() as i32;
    for target in [pid, -pid] {
        // SAFETY: signalling the process (group) this test started.
        unsafe { libc::kill(target, libc::SIGINT) };
        // Apart enough that each is taken, not merged while pending.
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("stopping on SIGINT"), "{err}");
    assert!(!err.contains("ended at once"), "{err}");
}

/// A second Ctrl-C ends at once a run whose first cannot (hung in loading). The
/// first is sent once the run is hung (the fixture ICD's constructor made its file),
/// each next one once the one before is seen, however loaded the machine: two sent
/// together would arrive as one, and one sent while the run still starts ends it.
fn second_signal_ends_a_hung_run(s: &Path) {
    use std::io::BufRead;
    let mut child = hung_run(s, &[]);
    let pid = child.id() as i32;
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    for wait_for in ["(child process)", "stopping on SIGINT"] {
        while !said.contains(wait_for) {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap() == 0 {
                panic!("stderr ended: {said} ({:?})", child.wait().unwrap());
            }
            said.push_str(&line);
        }
        // SAFETY: signalling the process group this test started.
        unsafe { libc::kill(-pid, libc::SIGINT) };
    }
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    let status = child.wait().unwrap();
    // Ended by the second signal (130): the hung run alone would end by its watchdog,
    // exit 1.
    assert_eq!(status.code(), Some(130), "{said}{rest}");
}

/// An endless run stopped by `signal` once under way: its report, interrupted. A run
/// signalled before its loop began (a loaded machine starts it late) has made no
/// buffer yet: it is signalled again after a longer wait, so that what is checked is
/// a run stopped part way, however slow the machine.
fn interrupted_under_way(
    scenario: &Path,
    isolate: bool,
    to_group: bool,
    signal: i32,
    code: i32,
    what: &str,
) -> clmulti_explain::Report {
    for wait in [1, 2, 4, 8, 16, 32] {
        let mut cmd = clmulti(1);
        cmd.arg("run").arg(scenario).args(["--format", "json"]);
        if isolate {
            cmd.arg("--isolate");
        }
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(wait));
        let pid = child.id() as i32;
        // SAFETY: signalling the process (group) this test started.
        unsafe { libc::kill(if to_group { -pid } else { pid }, signal) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{what}: {}", stderr(&out));
        let r = reports(&out).remove(0);
        if r.buffers > 0 {
            return r;
        }
    }
    panic!("{what}: no run made a buffer within 32 s of its start")
}

#[test]
fn timeout_and_max_seconds_bound_a_run_past_its_loop() {
    // --timeout in process: the run ends by it, with what it measured. The run is
    // endless: ending at all is the timeout's doing, and the report says which
    // limit ended it.
    let s = scenario_file("endless.toml", ENDLESS);
    let out = run(clmulti(1)
        .arg("--timeout")
        .arg("1")
        .arg("run")
        .arg(&s)
        .args(["--format", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert!(
        matches!(r.stop, clmulti_explain::StopReason::TimedOut { seconds, .. } if seconds == 1.0),
        "{:?}",
        r.stop
    );
    // The checks after the loop stop at max_seconds (100000 pairs under 1 s took
    // 28 s): pairs are left unchecked, and said.
    let s = scenario_file(
        "check.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"8B\"\ncount = 200000\n[axpy]\ncheck = \"all\"\n[guards]\nmax_seconds = 1\n[sampling]\nevery = 100000\n",
    );
    let out = run(clmulti(1).arg("run").arg(&s).args(["--format", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &reports(&out)[0];
    let check = r.axpy_check.as_ref().unwrap();
    assert!(check.pairs_not_checked > 0, "{check:?}");
    assert_eq!(check.pairs_checked + check.pairs_not_checked, 100_000);
}

#[test]
fn guards_see_the_shmem_a_run_grows_and_rlimit_as() {
    // The host-mirror layer's memfd grows Shmem, not RSS: 3 GiB under max_rss 200MiB
    // before. The guard counts what the run adds to Shmem.
    let layer = layer();
    let s = scenario_file(
        "mirror.toml",
        &format!(
            "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"16MiB\"\ncount = 100\n[env]\nOPENCL_LAYERS = \"{}\"\nCLMULTI_LAYER_POLICY = \"host-mirror\"\nCLMULTI_LAYER_MIRROR_LIMIT = \"100%\"\n[guards]\nmax_rss = \"200MiB\"\n[sampling]\nevery = 4\n",
            layer.display()
        ),
    );
    let out = run(clmulti(2).arg("run").arg(&s).args(["--format", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &reports(&out)[0];
    assert!(
        matches!(
            r.stop,
            clmulti_explain::StopReason::Guard {
                guard: clmulti_explain::GuardKind::MaxRss,
                ..
            }
        ),
        "{:?}",
        r.stop
    );
    let shmem = |s: &clmulti_explain::Sample| s.system.as_ref().map_or(0, |m| m.shmem_bytes);
    let first = &r.samples[0];
    let peak = r
        .samples
        .iter()
        .map(|s| s.host.rss_bytes + shmem(s).saturating_sub(shmem(first)))
        .max()
        .unwrap();
    assert!(
        peak <= 200 << 20,
        "RSS and Shmem reached {} MiB",
        peak >> 20
    );
    assert!(r.buffers >= 2, "{} buffers", r.buffers);

    // RLIMIT_AS and RLIMIT_DATA inherited from the shell (`ulimit -v`): PoCL asserted
    // (exit 134, no report) when migrate passed them. The run stops a tenth short.
    let s = scenario_file(
        "as.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"1MiB\"\ncount = 100000\nstrategy = \"migrate\"\n[sampling]\nevery = 100\n",
    );
    for (resource, guard) in [
        (libc::RLIMIT_AS, clmulti_explain::GuardKind::AddressSpace),
        (libc::RLIMIT_DATA, clmulti_explain::GuardKind::DataSegment),
    ] {
        let mut cmd = clmulti(1);
        cmd.arg("run").arg(&s).args(["--format", "json"]);
        // SAFETY: setrlimit between fork and exec, as `ulimit` does.
        unsafe {
            cmd.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: 1 << 30,
                    rlim_max: libc::RLIM_INFINITY,
                };
                libc::setrlimit(resource, &limit);
                Ok(())
            });
        }
        let out = run(&mut cmd);
        assert_eq!(out.status.code(), Some(0), "{guard:?}: {}", stderr(&out));
        let r = &reports(&out)[0];
        assert!(
            matches!(&r.stop, clmulti_explain::StopReason::Guard { guard: g, .. } if *g == guard),
            "{:?}",
            r.stop
        );
        assert!(r.buffers > 100, "{} buffers", r.buffers);
        if guard == clmulti_explain::GuardKind::AddressSpace {
            assert!(r.samples.iter().all(|s| s.host.virtual_bytes < 1 << 30));
        }
    }
    // Set by the scenario, the limit is what the run studies: the runtime meets it.
    let s = scenario_file(
        "as-studied.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"32MiB\"\ncount = \"until-failure\"\nflags = [\"READ_WRITE\", \"USE_HOST_PTR\"]\n[limits]\nas = \"1GiB\"\n[sampling]\nevery = 2\n",
    );
    let out = run(clmulti(1).arg("run").arg(&s).args(["--format", "json"]));
    let r = &reports(&out)[0];
    assert!(
        matches!(&r.stop, clmulti_explain::StopReason::Failed { error, .. } if error.code == -6),
        "{:?}",
        r.stop
    );
}

#[test]
fn a_slurm_memory_of_zero_or_past_u64_is_no_limit() {
    let s = scenario_file(
        "tiny.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 10\n",
    );
    for value in ["0", "18446744073709551615", "99999999999999999999999"] {
        let out = run(clmulti(1)
            .env("SLURM_MEM_PER_NODE", value)
            .args(["devices", "--format", "json"]));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            json(&out)["host"]["slurm_memory_bytes"].is_null(),
            "{value}"
        );
        let out = run(clmulti(1)
            .env("SLURM_MEM_PER_NODE", value)
            .arg("run")
            .arg(&s)
            .args(["--format", "json"]));
        let r = &reports(&out)[0];
        assert_eq!(r.stop, clmulti_explain::StopReason::Completed, "{value}");
        assert!(
            r.effective_guards.as_ref().unwrap().max_rss_bytes > 1 << 30,
            "{value}"
        );
    }
}

/// Processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

#[test]
fn a_killed_parent_leaves_no_process_and_no_temporary_file() {
    let s = scenario_file("killed.toml", ENDLESS);
    let needle = s.to_str().unwrap().to_owned();
    let temp_files = || -> Vec<String> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("clmulti-progress-") || n.starts_with("clmulti-scenario-"))
            .collect()
    };
    let before = temp_files();
    let mut child = clmulti(1)
        .arg("run")
        .arg("--isolate")
        .arg(&s)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Under way: its run's own process started (however long a loaded machine takes).
    let deadline = Instant::now() + HANG;
    while processes_with(&needle).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(processes_with(&needle).len() >= 2, "the run is under way");
    child.kill().unwrap();
    child.wait().unwrap();
    // Each dies with its parent (PR_SET_PDEATHSIG), once the kernel gets to it.
    let deadline = Instant::now() + HANG;
    while !processes_with(&needle).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        processes_with(&needle).is_empty(),
        "{:?}",
        processes_with(&needle)
    );
    let left: Vec<String> = temp_files()
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A command that reports only at its end (diagnose), stopped by Ctrl-C, reports the
/// cases that ran and says it was stopped, not silence.
#[test]
fn sigint_to_diagnose_is_said() {
    // Signalled once its first case runs (however late a loaded machine starts it).
    let started = start_until(
        clmulti(2).args(["diagnose", "--count", "200000", "--no-experiments"]),
        "(child process)",
    );
    // SAFETY: signalling the process group this test started.
    unsafe { libc::kill(-started.pid(), libc::SIGINT) };
    let out = started.finish();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("[measured] stopped by SIGINT after "),
        "{report}\n{}",
        stderr(&out)
    );
    assert!(report.contains("\nfixes\n"), "{report}");
}
