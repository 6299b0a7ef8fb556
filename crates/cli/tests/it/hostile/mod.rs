//! The hostile corpus: inputs and runtimes chosen to break clmulti, each with the
//! exit code and message it must get. Scenario files live in `tests/hostile/scenarios`
//! (first line `# expect: CODE: TEXT`), ICDs whose loading hangs, crashes or exits in
//! `tests/hostile/icd` (built here with `cc`). No input may panic, crash, hang, grow
//! memory past its guard, or exit outside 0, 1, 2 (130 and 143 after SIGINT/SIGTERM).

use crate::common;

use common::*;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

mod signals;

fn hostile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile")
}

/// The folder of ICD files naming the fixture ICD `kind` (hang, crash, exit0), built
/// once with `cc`.
fn icd_vendors(kind: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let dir = temp_root().join(format!("clmulti-hostile-icd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for kind in ["hang", "crash", "exit0"] {
            let lib = dir.join(format!("lib{kind}.so"));
            shared_library(&hostile().join(format!("icd/{kind}.c")), &lib);
            let vendors = dir.join(kind);
            std::fs::create_dir_all(&vendors).unwrap();
            std::fs::write(
                vendors.join(format!("{kind}.icd")),
                format!("{}\n", lib.display()),
            )
            .unwrap();
        }
        dir
    });
    dir.join(kind)
}

/// `clmulti` whose ICD loader finds only the fixture ICD `kind`.
fn clmulti_with_icd(kind: &str) -> Command {
    let mut cmd = Command::new(bin());
    default_signals(&mut cmd);
    cmd.env("OCL_ICD_VENDORS", icd_vendors(kind))
        .env_remove("OCL_ICD_FILENAMES")
        .env_remove("CLMULTI_PLATFORM");
    cmd
}

/// Asserts what every hostile input must get: no panic, no signal, a known code.
fn assert_sane(what: &str, out: &Output) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{what}: panicked: {err}");
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "{what}: exit {:?} (a signal or a code outside 0/1/2): {err}",
        out.status
    );
}

fn expectation(path: &Path) -> (i32, String) {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    let line = text.lines().next().unwrap_or_default();
    let rest = line
        .strip_prefix("# expect: ")
        .unwrap_or_else(|| panic!("{}: no `# expect: CODE: TEXT` line", path.display()));
    let (code, message) = rest.split_once(": ").unwrap();
    (code.parse().unwrap(), message.to_owned())
}

#[test]
fn every_scenario_of_the_corpus_gets_its_exit_code_and_message() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(hostile().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 25, "{} scenario files", files.len());
    for file in &files {
        let (code, message) = expectation(file);
        let out = run(Command::new(bin()).arg("check").arg(file));
        assert_sane(&file.display().to_string(), &out);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}: {}",
            file.display(),
            stderr(&out)
        );
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(said.contains(&message), "{}: {said}", file.display());
        if code == 2 {
            // Located: file, line and column.
            let name = file.display().to_string();
            assert!(said.contains(&format!("{name}:")), "{said}");
        }
    }
}

#[test]
fn large_hostile_scenarios_are_refused_briefly() {
    let dir = scenario_file("x", "").parent().unwrap().to_path_buf();
    // 150000 device indices: quadratic validation took 158 s (debug) for one run.
    let indices: Vec<String> = (0..150_000).map(|i| i.to_string()).collect();
    let big = dir.join("indices.toml");
    std::fs::write(
        &big,
        format!(
            "[devices]\nindices = [{}]\n[grid]\n\"allocation.count\" = [1, 2, 3]\n",
            indices.join(",")
        ),
    )
    .unwrap();
    // A 900 KB platform name, echoed in full before.
    let platform = dir.join("platform.toml");
    std::fs::write(
        &platform,
        format!("[devices]\nplatform = \"{}\"\n", "p".repeat(900_000)),
    )
    .unwrap();
    // A 1 MiB description, carried by every record of every run before.
    let description = dir.join("description.toml");
    std::fs::write(
        &description,
        format!("description = \"{}\"\n", "d".repeat(1_000_000)),
    )
    .unwrap();
    // How fast is a benchmark's to say; here: refused, in a few words.
    for (file, message) in [
        (&big, "names 150000 devices; at most 4096 are allowed"),
        (
            &platform,
            "a platform name or vendor substring is one line of at most 256 bytes",
        ),
        (&description, "a description is at most 64 KiB"),
    ] {
        let out = run(Command::new(bin()).arg("check").arg(file));
        assert_sane("large", &out);
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(err.contains(message), "{err}");
        assert!(err.len() < 2000, "{} bytes of error", err.len());
    }
    // Not files: a FIFO and a device.
    let fifo = dir.join("fifo.toml");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    for file in [fifo.as_path(), Path::new("/dev/zero")] {
        let out = run(Command::new(bin()).arg("run").arg(file));
        assert_sane("not a file", &out);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("not a regular file"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn hostile_command_lines_get_exit_2_and_a_reason() {
    let s = scenario_file(
        "ok.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 1\n",
    );
    let s = s.to_str().unwrap();
    for (args, message) in [
        (vec!["--timeout", "1e300", "run", s], "at most 604800"),
        (vec!["--timeout", "nan", "devices"], "expected seconds"),
        (vec!["--timeout", "inf", "devices"], "expected seconds"),
        (vec!["--timeout", "0", "devices"], "expected seconds"),
        (vec!["--timeout=-1", "devices"], "expected seconds"),
        (
            vec!["bench", "--count", "18446744073709551615"],
            "--count 18446744073709551615",
        ),
        (vec!["bench", "--rounds", "1000000000"], "not in 1..=1000"),
        (vec!["bench", "--min-seconds", "1e300"], "at most 600"),
        (vec!["bench", "--size", "0"], "at least 1 byte"),
        (vec!["axpy", "--repeat", "4294967295"], "not in 1..=100000"),
        (
            vec!["axpy", "--n", "18446744073709551615"],
            "not in 1..=1099511627776",
        ),
        (
            vec!["axpy", "--split", "--n", "805306368000"],
            "needs about",
        ),
        (vec!["axpy", "--weights", "1,nan", "--split"], "weights"),
        (
            vec!["diagnose", "--count", "18446744073709551615"],
            "not in 10..=",
        ),
        (
            vec!["diagnose", "--size", "18446744073709551615"],
            "a buffer has 1 byte to",
        ),
        (vec!["run", "--index", "99", s], "out of range"),
        // Selectors that name no platform, refused before anything loads.
        (
            vec!["axpy", "--device", ""],
            "an empty selector names no platform",
        ),
        (
            vec!["axpy", "--device", ":0"],
            "names no platform before the `:`",
        ),
        (
            vec!["diagnose", "--device", " :1"],
            "names no platform before the `:`",
        ),
        (
            vec!["bench", "--device", ""],
            "an empty selector names no platform",
        ),
        // A device part that is a number but no index.
        (
            vec!["diagnose", "--device", "pocl:-1"],
            "-1 is not a device index",
        ),
        (
            vec!["bench", "--device", "pocl:99999999999999999999"],
            "99999999999999999999 is not a device index",
        ),
        // An output folder nothing can be written to, said before any case runs.
        (
            vec!["diagnose", "--out", "/proc/self", "--count", "10"],
            "--out /proc/self: cannot write there",
        ),
        (
            vec![
                "diagnose",
                "--bundle",
                "/nonexistent/b.tar.gz",
                "--count",
                "10",
            ],
            "its folder /nonexistent does not exist",
        ),
    ] {
        let out = run(clmulti(2).args(&args));
        let what = args.join(" ");
        assert_sane(&what, &out);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{what}: {}", stderr(&out));
    }
}

/// A pipe whose reading end is closed: writing to it fails with EPIPE.
fn closed_pipe() -> Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe fills two descriptors; the reading one is closed at once.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        Stdio::from_raw_fd(fds[1])
    }
}

#[test]
fn a_full_or_closed_stdout_is_exit_1_not_a_panic() {
    let s = scenario_file(
        "ok.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 10\n",
    );
    let s = s.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["devices"],
        vec!["devices", "--format", "json"],
        vec!["check", s],
        vec!["run", "--list", s],
        vec!["run", s],
        vec!["run", s, "--format", "json"],
        vec!["axpy", "--n", "4096", "--repeat", "1", "--kernel", "fast"],
        vec![
            "bench",
            "--count",
            "200",
            "--rounds",
            "1",
            "--min-seconds",
            "0.001",
        ],
        vec![
            "diagnose",
            "--count",
            "10",
            "--no-experiments",
            "--format",
            "json",
        ],
    ];
    for args in &commands {
        for (name, stdout) in [
            (
                "/dev/full",
                Stdio::from(std::fs::File::create("/dev/full").unwrap()),
            ),
            ("a closed pipe", closed_pipe()),
        ] {
            let out = clmulti(2).args(args).stdout(stdout).output().unwrap();
            let what = format!("{} > {name}", args.join(" "));
            assert_sane(&what, &out);
            assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
            if name == "/dev/full" {
                assert!(
                    stderr(&out).contains("cannot write to stdout: No space left on device"),
                    "{what}: {}",
                    stderr(&out)
                );
            }
        }
    }
}

/// Spawns `commands` all at once and returns each one's output; one still running
/// after [`HANG`] is killed (and fails its test's checks: it hung).
fn race(commands: Vec<Command>) -> Vec<Output> {
    let mut running: Vec<(Child, Instant)> = commands
        .into_iter()
        .map(|mut c| {
            let child = c
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .unwrap();
            (child, Instant::now())
        })
        .collect();
    let mut ended: Vec<Option<Duration>> = vec![None; running.len()];
    let deadline = Instant::now() + HANG;
    while ended.iter().any(Option::is_none) && Instant::now() < deadline {
        for (i, (child, start)) in running.iter_mut().enumerate() {
            if ended[i].is_none() && child.try_wait().unwrap().is_some() {
                ended[i] = Some(start.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    running
        .into_iter()
        .zip(ended)
        .map(|((child, _), took)| {
            if took.is_none() {
                // SAFETY: killing the process group this test started.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            }
            child.wait_with_output().unwrap()
        })
        .collect()
}

/// Each command ends by its time limit: what ended it is said (the call that never
/// returned, the limit), exit 1; a loaded machine takes longer to get there, and how
/// long past the limit is a benchmark's to measure.
#[test]
fn a_runtime_whose_loading_hangs_ends_every_command_by_its_time_limit() {
    let s = scenario_file(
        "hang.toml",
        "[allocation]\ncount = 10\n[guards]\nmax_seconds = 1\n",
    );
    let s = s.to_str().unwrap();
    const TRIES: usize = 20;
    let t = "2";
    let commands: Vec<Vec<&str>> = vec![
        vec!["--timeout", t, "devices"],
        vec!["--timeout", t, "run", s, "--format", "json"],
        vec!["--timeout", t, "run", "--isolate", s, "--format", "json"],
        vec!["--timeout", t, "axpy", "--n", "1024"],
        vec!["--timeout", t, "bench", "--count", "10"],
        vec!["--timeout", t, "diagnose", "--count", "10"],
    ];
    for args in &commands {
        let what = args.join(" ");
        let outcomes = race(
            (0..TRIES)
                .map(|_| {
                    let mut cmd = clmulti_with_icd("hang");
                    cmd.args(args);
                    cmd
                })
                .collect(),
        );
        for out in &outcomes {
            assert_sane(&what, out);
            assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(out));
            let err = stderr(out);
            assert!(err.contains("clGetPlatformIDs"), "{what}: {err}");
            assert!(
                err.contains("within 2.0 s"),
                "{what}: the limit that ended it is said: {err}"
            );
        }
    }
    // Without --timeout, a run ends by its guard plus the watchdog's margin, with a
    // report that names the call and the limit.
    let limit = 1.0 + clmulti_alloc::hang_margin(1.0).as_secs_f64();
    let outcomes = race(
        (0..TRIES)
            .map(|_| {
                let mut cmd = clmulti_with_icd("hang");
                cmd.args(["run", s, "--format", "json"]);
                cmd
            })
            .collect(),
    );
    for out in &outcomes {
        assert_sane("run", out);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
        let r = &reports(out)[0];
        assert_eq!(
            r.stop,
            clmulti_explain::StopReason::TimedOut {
                seconds: limit,
                call: Some(clmulti_explain::Call::GetPlatformIds)
            }
        );
    }
}

#[test]
fn a_runtime_whose_loading_crashes_or_exits_is_said_and_fails() {
    let s = scenario_file("crash.toml", "[allocation]\ncount = 10\n");
    let s = s.to_str().unwrap();
    for (kind, said) in [("crash", "SIGSEGV"), ("exit0", "(exit 0)")] {
        for args in [
            vec!["devices"],
            vec!["run", s, "--format", "json"],
            vec!["run", "--isolate", s, "--format", "json"],
            vec!["axpy", "--n", "1024"],
            vec!["bench", "--count", "10"],
            vec!["diagnose", "--count", "10"],
        ] {
            let what = format!("{kind}: {}", args.join(" "));
            let out = run(clmulti_with_icd(kind).args(&args));
            assert_sane(&what, &out);
            assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
            let err = stderr(&out);
            assert!(
                err.contains("loading the OpenCL runtime") && err.contains(said),
                "{what}: {err}"
            );
        }
    }
}

/// `check` lists the platforms in a child: a runtime that crashes or exits while
/// loading leaves the platform unchecked, said, and the file valid.
#[test]
fn check_outlives_a_runtime_that_crashes_while_listing_platforms() {
    let s = scenario_file("platform.toml", "[devices]\nplatform = 3\n");
    for (kind, said) in [("crash", "SIGSEGV"), ("exit0", "(exit 0)")] {
        let out = run(clmulti_with_icd(kind).arg("check").arg(&s));
        assert_sane(kind, &out);
        assert_eq!(out.status.code(), Some(0), "{kind}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!(
                "check: {}: devices.platform was not checked against this machine's OpenCL platforms: loading the OpenCL runtime",
                s.display()
            )) && err.contains(said),
            "{kind}: {err}"
        );
    }
}
