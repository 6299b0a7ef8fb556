//! Native fixtures built with `cc` (gcc is part of the test setup), and how a test
//! waits for a command: shared by the clmulti and xtask tests, which include this file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longer than anything a test waits for takes, on a machine at load 16 on two
/// cores: what is still running past it hangs. A hang detector, never a measure.
pub const HANG: Duration = Duration::from_secs(300);

/// This test process's own folder under the system's temp folder, made on first use
/// and removed when the process exits (the harness ends through `exit`, which runs
/// `atexit` handlers, pass or fail), so that runs leave no litter behind: a full disk
/// failed a CI run. `CLMULTI_KEEP_TEST_FILES=1` keeps it for a look after a failure.
pub fn temp_root() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    extern "C" fn remove_root() {
        if let Some(dir) = ROOT.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("clmulti-tests-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir); // an earlier process of the same id
        std::fs::create_dir_all(&dir).unwrap();
        if std::env::var_os("CLMULTI_KEEP_TEST_FILES").is_none() {
            // SAFETY: registers a plain function; it runs once, at exit.
            unsafe { libc::atexit(remove_root) };
        }
        dir
    })
    .clone()
}

/// Runs `cmd` to its end, its output piped; one still running past [`HANG`] is
/// killed and fails the test (`what` names it).
pub fn ended(cmd: &mut Command, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > HANG {
            let _ = child.kill();
            panic!("{what}: still running after {HANG:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `crates/cli/tests/hostile`, found from either package's manifest folder.
pub fn hostile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|p| p.join("crates/cli/tests/hostile"))
        .find(|p| p.is_dir())
        .expect("crates/cli/tests/hostile in the workspace")
}

/// Builds `source` into the shared library `lib`.
pub fn shared_library(source: &Path, lib: &Path) {
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(lib)
        .arg(source)
        .output()
        .expect("run cc (gcc is part of the test setup)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An OpenCL layer (`hostile/layer/abort_after.c`) that aborts the process on the
/// clCreateBuffer call after the first `CLMULTI_ABORT_AFTER`: a runtime crashing
/// mid-run. Built once.
pub fn abort_after_layer() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let lib = temp_root().join(format!("clmulti-abort-after-{}.so", std::process::id()));
            shared_library(&hostile().join("layer/abort_after.c"), &lib);
            lib
        })
        .clone()
}

/// The fault layer (`hostile/layer/faults.c`): `CLMULTI_FAULT` picks what each
/// buffer of a multi-device context takes (maps, address space, a random or timed
/// failure, two limits close together, a cache, a leak, a limit kept in a file).
/// Built once.
pub fn fault_layer() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let lib = temp_root().join(format!("clmulti-faults-{}.so", std::process::id()));
            shared_library(&hostile().join("layer/faults.c"), &lib);
            lib
        })
        .clone()
}

/// The fault space's layer (`fault_space/layer.c`): every dimension of a fault an
/// environment variable (`clmulti_explain::testing::fault_space` writes them). Built
/// once.
pub fn fault_space_layer() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let source = hostile().with_file_name("fault_space").join("layer.c");
            let lib = temp_root().join(format!("clmulti-fault-space-{}.so", std::process::id()));
            let out = Command::new("cc")
                .args(["-O2", "-shared", "-fPIC", "-o"])
                .arg(&lib)
                .arg(&source)
                .args(["-lm", "-lpthread"])
                .output()
                .expect("run cc (gcc is part of the test setup)");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            lib
        })
        .clone()
}

/// A library named `name` in `dir` whose constructor leaves `marker` behind: proof that
/// its code ran.
pub fn marking_library(dir: &Path, name: &str, marker: &Path) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(
        &source,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void mark(void) {{ FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let lib = dir.join(name);
    shared_library(&source, &lib);
    lib
}
