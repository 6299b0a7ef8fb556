//! Runs the real `clmulti` binary against real PoCL CPU devices.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

mod native;
#[allow(unused_imports)] // each test binary uses some
pub use native::{
    abort_after_layer, ended, fault_layer, fault_space_layer, marking_library, shared_library,
    temp_root, HANG,
};

/// The PoCL ICD file the tests pin the loader to.
pub const POCL_ICD: &str = "/etc/OpenCL/vendors/pocl.icd";

/// The `POCL_DEVICES` value that gives `n` CPU devices on the installed PoCL:
/// `cpu` on PoCL >= 4, `pthread` on PoCL 3 (Debian 12).
pub fn pocl_devices(n: usize) -> String {
    static DRIVER: OnceLock<&'static str> = OnceLock::new();
    let driver = DRIVER.get_or_init(|| {
        assert!(
            std::path::Path::new(POCL_ICD).exists(),
            "PoCL is not installed ({POCL_ICD} missing): run scripts/setup-opencl.sh"
        );
        for driver in ["cpu", "pthread"] {
            let out = Command::new(bin())
                .args(["devices", "--format", "json"])
                .env("OCL_ICD_VENDORS", POCL_ICD)
                .env("POCL_DEVICES", format!("{driver} {driver}"))
                .output()
                .expect("run clmulti devices");
            if out.status.success() {
                let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                if json["platforms"][0]["devices"]
                    .as_array()
                    .map_or(0, Vec::len)
                    == 2
                {
                    return driver;
                }
            }
        }
        panic!("PoCL gives no two CPU devices with POCL_DEVICES=cpu or pthread");
    });
    vec![*driver; n].join(" ")
}

/// The binary under test.
pub fn bin() -> PathBuf {
    // Every run child is traced by the tracer beside the binary (cargo test builds no
    // cdylib of its own accord): build it first, once per test binary.
    library(&clmulti_contract::TRACE);
    PathBuf::from(env!("CARGO_BIN_EXE_clmulti"))
}

/// A trust record of the test process's own, so that no test reads or writes the
/// user's (`clmulti trust`).
pub fn trust_record() -> PathBuf {
    temp_root().join(format!("clmulti-test-trusted-{}", std::process::id()))
}

/// Trusts a scenario file in the test's own trust record (`clmulti trust`), as a
/// user does who has read it.
pub fn trust(path: &std::path::Path) {
    let out = run(clmulti(1).arg("trust").arg(path));
    assert!(
        out.status.success(),
        "clmulti trust {}: {}",
        path.display(),
        stderr(&out)
    );
}

/// Gives the command the default disposition of the signals tests send: a test
/// suite started in the background or under nohup inherits SIGINT (and SIGQUIT)
/// ignored, which clmulti rightly keeps. A test's own `pre_exec` runs after this.
pub fn default_signals(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal() is async-signal-safe; between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}

/// `clmulti` on `n` PoCL devices with a fixed memory size (2 GiB, max alloc 512 MiB).
pub fn clmulti(n: usize) -> Command {
    let mut cmd = Command::new(bin());
    default_signals(&mut cmd);
    cmd.env("CLMULTI_TRUST_FILE", trust_record())
        .env("OCL_ICD_VENDORS", POCL_ICD)
        .env("POCL_DEVICES", pocl_devices(n))
        .env("POCL_MEMORY_LIMIT", "2");
    cmd
}

/// Runs and returns the output.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("spawn clmulti")
}

/// Parses stdout as JSON, panicking with stderr when it is not.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); status {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes a scenario into a fresh temp folder and returns its path.
pub fn scenario_file(name: &str, text: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = temp_root().join(format!("clmulti-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Parses JSON Lines output into reports.
pub fn reports(out: &Output) -> Vec<clmulti_explain::Report> {
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<clmulti_explain::Report> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            clmulti_explain::Report::from_json(l)
                .unwrap_or_else(|e| panic!("bad report line ({e}): {l}\nstderr: {}", stderr(out)))
        })
        .collect();
    assert!(!lines.is_empty(), "no reports; stderr: {}", stderr(out));
    lines
}

/// Every statement of a report's analysis, as one text to search.
pub fn statements(r: &clmulti_explain::Report) -> String {
    r.analysis
        .statements
        .iter()
        .map(|s| s.to_string())
        .collect()
}

pub fn cost(
    r: &clmulti_explain::Report,
    resource: clmulti_explain::Resource,
) -> &clmulti_explain::Cost {
    r.costs
        .iter()
        .find(|c| c.resource == resource)
        .unwrap_or_else(|| panic!("{}: no cost of {resource:?}", r.run_name))
}

/// Builds one of the project's libraries beside the binary under test (a no-op when
/// fresh) and returns its path: what its placeholder in a scenario names.
pub fn library(library: &clmulti_contract::ProjectLibrary) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<std::collections::BTreeMap<&'static str, PathBuf>>> =
        OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    built
        .entry(library.package)
        .or_insert_with(|| {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let binary = PathBuf::from(env!("CARGO_BIN_EXE_clmulti"));
            // The profile the binary under test was built in (its folder's name), so
            // `cargo test --release` finds the library beside it too.
            let profile = match binary.parent().and_then(|p| p.file_name()) {
                Some(name) if name != "debug" => name.to_string_lossy().into_owned(),
                _ => "dev".to_string(),
            };
            let status = Command::new(cargo)
                .args(["build", "--profile", &profile, "-p", library.package])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo");
            assert!(status.success(), "building {} failed", library.package);
            let path = binary.with_file_name(library.file_name);
            assert!(path.exists(), "{} missing after the build", path.display());
            path
        })
        .clone()
}

/// The emulation layer beside the binary under test: what `{clmulti-layer}` names.
pub fn layer() -> PathBuf {
    library(&clmulti_contract::LAYER)
}

/// The emulated i915 driver beside the binary under test: what `{clmulti-kmd-emu}`
/// names, and what `clmulti emulate` preloads.
pub fn kmd_emu() -> PathBuf {
    library(&clmulti_contract::KMD_EMU)
}

/// The folder of ICD files that selects Intel's OpenCL CPU runtime, installed by
/// `scripts/setup-intel-opencl.sh` (the README's test setup runs it).
pub fn intel_vendors() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.intel-opencl/vendors");
    assert!(
        dir.join("intel-cpu.icd").exists(),
        "Intel's OpenCL CPU runtime is not installed: run scripts/setup-intel-opencl.sh"
    );
    dir.canonicalize().unwrap()
}

/// `clmulti` on Intel's OpenCL CPU runtime only.
pub fn clmulti_intel() -> Command {
    let mut cmd = Command::new(bin());
    default_signals(&mut cmd);
    cmd.env("CLMULTI_TRUST_FILE", trust_record())
        .env("OCL_ICD_VENDORS", intel_vendors())
        .env_remove("POCL_DEVICES");
    cmd
}

/// The folder of ICD files that selects Intel's GPU runtime NEO, written by
/// `scripts/setup-intel-gpu.sh` (the README's test setup runs it).
pub fn neo_vendors() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.intel-gpu/vendors");
    assert!(
        dir.join("intel-neo.icd").exists(),
        "Intel's GPU runtime NEO is not set up: run scripts/setup-intel-gpu.sh"
    );
    dir.canonicalize().unwrap()
}

/// NEO's AUB mode with `devices` emulated Arc (DG2) devices, as `[env]` lines and as
/// variables: what `.intel-gpu/env.sh` sets.
pub fn neo_aub_env(devices: usize) -> Vec<(&'static str, String)> {
    vec![
        ("NEOReadDebugKeys", "1".into()),
        ("SetCommandStreamReceiver", "1".into()),
        ("ProductFamilyOverride", "dg2".into()),
        ("CreateMultipleRootDevices", devices.to_string()),
        ("AUBDumpCaptureFileName", "/dev/null".into()),
    ]
}

/// `clmulti` on NEO only, in AUB mode with `devices` emulated devices.
pub fn clmulti_neo(devices: usize) -> Command {
    let mut cmd = Command::new(bin());
    default_signals(&mut cmd);
    cmd.env("CLMULTI_TRUST_FILE", trust_record())
        .env("OCL_ICD_VENDORS", neo_vendors())
        .env_remove("POCL_DEVICES")
        .envs(neo_aub_env(devices));
    cmd
}

/// A command started in its own process group, its stderr read up to a line.
pub struct Started {
    child: std::process::Child,
    /// Stderr up to and with the line waited for.
    pub said: String,
    rest: std::thread::JoinHandle<String>,
}

/// Starts `cmd` (piped, in its own process group) and reads its stderr until a line
/// holds `needle`; the rest is read on a thread, so the child never blocks on a full
/// pipe.
pub fn start_until(cmd: &mut Command, needle: &str) -> Started {
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn clmulti");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains(needle) {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "stderr ended before {needle:?}: {said}"
        );
        said.push_str(&line);
    }
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    Started { child, said, rest }
}

impl Started {
    /// Its process id, which is also its process group's.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits for it; the output's stderr is all of it.
    pub fn finish(self) -> Output {
        let mut out = self.child.wait_with_output().unwrap();
        let rest = self.rest.join().unwrap_or_default();
        out.stderr = format!("{}{rest}", self.said).into_bytes();
        out
    }
}

/// The seed's program (bench/seed), built as its author built it, in `dir` (made).
pub fn seed_program(dir: &std::path::Path) -> PathBuf {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/seed");
    std::fs::create_dir_all(dir).unwrap();
    for file in ["OpenCLMulti.cpp", "OpenCLKernels.cl"] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    let status = Command::new("gcc")
        .args([
            "-D",
            "CL_TARGET_OPENCL_VERSION=220",
            "-g",
            "-Wall",
            "-o",
            "OpenCLMulti",
        ])
        .args(["OpenCLMulti.cpp", "-lOpenCL", "-lm"])
        .current_dir(dir)
        .status()
        .expect("gcc (and g++'s cc1plus: the seed is a .cpp)");
    assert!(status.success(), "the seed's program did not build");
    dir.to_path_buf()
}

/// The last index the seed's program printed as allocated ("998: Allocated 1 MB
/// successfully"), if any, and its last line.
pub fn seed_outcome(output: &str) -> (Option<u64>, String) {
    let allocated = output
        .lines()
        .filter_map(|l| l.split_once(": Allocated 1 MB successfully"))
        .filter_map(|(i, _)| i.trim().parse::<u64>().ok())
        .next_back();
    let last = output.lines().last().unwrap_or_default().to_owned();
    (allocated, last)
}

/// Runs `cmd` with `soft` as its soft descriptor limit (the hard one as it is; a test
/// that needs more says so) and no descriptor inherited from the harness (cargo's
/// jobserver would take a number below one limit and not another).
pub fn with_soft_nofile(cmd: &mut Command, soft: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    let hard = clmulti_probe::rlimit(clmulti_scenario::Rlimit::NoFile).hard;
    assert!(
        hard.is_none_or(|h| h >= soft),
        "this test needs a hard RLIMIT_NOFILE of at least {soft}, not {hard:?}"
    );
    // SAFETY: close_range and setrlimit are async-signal-safe; this runs between fork
    // and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            lim.rlim_cur = soft;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}
