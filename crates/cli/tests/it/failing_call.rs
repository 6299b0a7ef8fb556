//! The call behind every error: each fault class, injected by clmulti's emulation layer
//! or the test fault layer (`hostile/layer/faults.c`) over PoCL, and NEO's own on its
//! kernel-driver path, named by the tracer with its errno; a refusal with no call
//! failing said as such; the runtime's debug output kept apart from the report; a
//! reproducer that fails where clmulti did; and the bundle a maintainer gets.

use crate::common;
use clmulti_explain::{Report, StopReason};
use common::*;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// A shared context over two PoCL devices under `env` lines (and `rest`), run once.
fn shared_run(name: &str, env: &str, rest: &str, as_nobody: bool) -> Report {
    let path = scenario_file(
        name,
        &format!(
            "[devices]\ntype = \"cpu\"\ncount = 2\n[context]\nmode = \"shared\"\n[allocation]\nsize = \"64KiB\"\ncount = 3000\n[sampling]\nevery = 100\n[env]\n{env}\n{rest}"
        ),
    );
    // The fault layer and its knobs are the test's own: trusted, as read.
    trust(&path);
    let mut cmd = clmulti(2);
    cmd.arg("run").arg(&path).args(["--format", "json"]);
    if as_nobody {
        // RLIMIT_NPROC and RLIMIT_MEMLOCK do not bind root: drop to nobody.
        // SAFETY: setgroups, setgid and setuid are async-signal-safe; between fork
        // and exec.
        unsafe {
            cmd.env("HOME", "/tmp").pre_exec(|| {
                if libc::geteuid() == 0
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(65534) != 0
                        || libc::setuid(65534) != 0)
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    reports(&out).remove(0)
}

/// The last call that failed inside the failing OpenCL call: (call, errno name, innermost module).
fn failing_call(r: &Report) -> (String, String, String) {
    assert!(
        matches!(r.stop, StopReason::Failed { .. }),
        "{}: {:?}",
        r.run_name,
        r.stop
    );
    let traced = r.traced.as_ref().expect("traced");
    let last = traced
        .failing_calls
        .last()
        .unwrap_or_else(|| panic!("no failing call: {}", statements(r)));
    (
        last.call.clone(),
        last.errno_name.clone(),
        last.stack
            .first()
            .map(|f| f.module.clone())
            .unwrap_or_default(),
    )
}

fn layer_env(policy: &str, knobs: &str) -> String {
    format!(
        "OPENCL_LAYERS = \"{}\"\nCLMULTI_LAYER_POLICY = \"{policy}\"\n{knobs}",
        layer().display()
    )
}

fn faults(fault: &str, knobs: &str) -> String {
    format!(
        "OPENCL_LAYERS = \"{}\"\nCLMULTI_FAULT = \"{fault}\"\n{knobs}",
        fault_layer().display()
    )
}

#[test]
fn each_fault_class_is_named_by_its_call_and_errno() {
    // Descriptors: the emulation layer's fd per peer.
    let r = shared_run(
        "fds.toml",
        &layer_env("fd-per-peer", ""),
        "[limits]\nnofile = 512\n",
        false,
    );
    assert_eq!(
        failing_call(&r),
        (
            "openat".into(),
            "EMFILE".into(),
            "libclmulti_layer.so".into()
        )
    );
    let text = statements(&r);
    assert!(
        text.contains(
            "after openat(AT_FDCWD, \"/dev/null\", O_RDONLY|O_CLOEXEC) failed with EMFILE"
        ),
        "{text}"
    );
    assert!(text.contains("inside clmulti's emulation layer"), "{text}");
    // Mappings: 128 VMAs a buffer meet vm.max_map_count.
    let (call, errno, module) =
        failing_call(&shared_run("maps.toml", &faults("maps", ""), "", false));
    assert!(matches!(call.as_str(), "mmap" | "mprotect"), "{call}");
    assert_eq!(errno, "ENOMEM");
    assert!(module.starts_with("clmulti-faults"), "{module}");
    // Address space: 1 MiB reserved a buffer under RLIMIT_AS. One malloc arena: a
    // PoCL thread's first malloc would otherwise reserve an arena of its own (64 MiB
    // of address space) whenever it comes, and PoCL aborts when that fails.
    let r = shared_run(
        "as.toml",
        &faults("as", "MALLOC_ARENA_MAX = \"1\"\n"),
        "[limits]\nas = \"3GiB\"\n",
        false,
    );
    assert_eq!(failing_call(&r).0, "mmap");
    assert_eq!(failing_call(&r).1, "ENOMEM");
    // Locked memory and threads, as an ordinary user (root is exempt from both).
    let r = shared_run(
        "memlock.toml",
        &layer_env("lock-per-buffer", ""),
        "[limits]\nmemlock = \"8MiB\"\n",
        true,
    );
    let (call, errno, _) = failing_call(&r);
    assert_eq!(call, "mlock");
    assert!(
        matches!(errno.as_str(), "ENOMEM" | "EAGAIN" | "EPERM"),
        "{errno}"
    );
    let r = shared_run(
        "threads.toml",
        &layer_env("thread-per-buffer", ""),
        "[limits]\nnproc = 300\n",
        true,
    );
    assert_eq!(failing_call(&r).0, "pthread_create");
    assert_eq!(failing_call(&r).1, "EAGAIN");
    // A counter: the runtime refuses with no call failing.
    let r = shared_run(
        "counter.toml",
        &layer_env("fail-after", "CLMULTI_LAYER_FAIL_AFTER = \"300\"\n"),
        "",
        false,
    );
    assert!(r.traced.as_ref().unwrap().failing_calls.is_empty());
    // No observer watched this run: the refusal and a call the tracer does not see
    // stay open side by side.
    assert!(statements(&r).contains(
        "no system call failed: the runtime refused by itself or a call the libc tracer does not see failed"
    ));
}

/// Builds a reproducer for `r` and runs it with its environment; returns what it said.
fn reproduce(r: &Report, runs: &Path) -> String {
    let dir = runs.parent().unwrap();
    let out = run(Command::new(bin())
        .args(["reproduce"])
        .arg(runs)
        .args(["--run", &r.run_name, "--out"])
        .arg(dir.join("reproduce.c")));
    assert!(out.status.success(), "{}", stderr(&out));
    let program = std::fs::read_to_string(dir.join("reproduce.c")).unwrap();
    assert!(
        program.lines().count() < 100,
        "{} lines",
        program.lines().count()
    );
    let built = Command::new("cc")
        .args(["-O2", "-o", "reproduce", "reproduce.c", "-lOpenCL"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(built.success());
    let mut cmd = Command::new(dir.join("reproduce"));
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    for (k, v) in &r.environment.as_ref().expect("environment").kept {
        if k != "LD_PRELOAD" || !v.contains("libclmulti_trace") {
            cmd.env(k, v);
        }
    }
    let out = cmd.output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failed_at(said: &str) -> u64 {
    said.strip_prefix("failed at buffer ")
        .and_then(|s| s.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"))
}

#[test]
fn a_reproducer_fails_within_one_buffer_of_clmultis_count() {
    let path = scenario_file(
        "repro.toml",
        &format!(
            "[devices]\ntype = \"cpu\"\ncount = 2\n[context]\nmode = \"shared\"\n[allocation]\nsize = \"64KiB\"\ncount = 3000\n[env]\n{}\n[limits]\nnofile = 600\n",
            layer_env("fd-per-peer", "")
        ),
    );
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = path.with_file_name("runs.jsonl");
    std::fs::write(&runs, &out.stdout).unwrap();
    let r = &reports(&out)[0];
    let StopReason::Failed { index, .. } = r.stop else {
        panic!("{:?}", r.stop)
    };
    let said = reproduce(r, &runs);
    assert!(
        said.contains("CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer"),
        "{said}"
    );
    assert!(
        failed_at(&said).abs_diff(index) <= 1,
        "clmulti {index}, reproducer: {said}"
    );
}

#[test]
fn clmultis_own_readings_are_never_counted_as_the_runtimes_calls() {
    // Under the emulated i915 driver, every read of its counts file is answered
    // through a memfd, and clmulti reads it at the first and last sample and after
    // release; it walks the mappings with PROCMAP_QUERY ioctls. None of that is the
    // runtime's: PoCL makes no memfd and no ioctl of its own here.
    kmd_emu();
    let r = shared_run("own.toml", "LD_PRELOAD = \"{clmulti-kmd-emu}\"", "", false);
    assert_eq!(r.stop, StopReason::Completed, "{}", statements(&r));
    let last = r.samples.last().expect("samples");
    assert!(
        last.kernel_counts.is_some(),
        "the emulation's counts were read (each through a memfd)"
    );
    let counts = last.traced_counts.as_ref().expect("traced counts");
    assert!(
        counts.get("open").copied().unwrap_or(0) > 0,
        "the runtime's own calls are counted: {counts:?}"
    );
    let own: Vec<_> = counts
        .iter()
        .filter(|(k, v)| (k.starts_with("memfd_create") || k.starts_with("ioctl")) && **v > 0)
        .collect();
    assert!(own.is_empty(), "clmulti's own calls counted: {own:?}");
    let after = r.leak_check.after_release_sample.as_ref().expect("after");
    let first = r.samples.first().expect("first");
    assert_eq!(
        after
            .traced_counts
            .as_ref()
            .and_then(|c| c.get("memfd_create")),
        first
            .traced_counts
            .as_ref()
            .and_then(|c| c.get("memfd_create")),
    );
}
