//! Every example of every library crate runs here, as its crate docs say to run it,
//! and prints what it is for (the tidy test holds each example to an entry below).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The debug build folder, the examples and libraries built there first (a no-op once
/// built).
fn built() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--workspace",
            // The preloaded libraries too: `--examples` alone builds no cdylib.
            "--lib",
            "--examples",
            "--exclude",
            "xtask",
        ])
        .current_dir(root())
        .status()
        .expect("cargo");
    assert!(status.success(), "the examples did not build");
    root().join("target/debug")
}

/// Two PoCL CPU devices: PoCL 3 names its CPU driver `pthread`, later ones `cpu`.
fn pocl_devices() -> String {
    let version = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", "pocl-opencl-icd"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let word = if version.starts_with('3') {
        "pthread"
    } else {
        "cpu"
    };
    format!("{word} {word}")
}

/// An example of `package`: (package, example, arguments, environment, what its
/// output must hold).
type Case = (
    &'static str,
    &'static str,
    Vec<String>,
    Vec<(&'static str, String)>,
    &'static str,
);

fn cases(target: &Path) -> Vec<Case> {
    let pocl = || {
        vec![
            ("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd".to_owned()),
            ("POCL_DEVICES", pocl_devices()),
            ("POCL_MEMORY_LIMIT", "2".to_owned()),
        ]
    };
    let lib = |name: &str| target.join(name).display().to_string();
    vec![
        ("clmulti-alloc", "seed", vec![], pocl(), "per buffer"),
        (
            "clmulti-alloc",
            "neo_allocation_log",
            vec![
                lib("clmulti"),
                "50".into(),
                root().join(".intel-gpu/vendors").display().to_string(),
            ],
            vec![],
            "BUFFER",
        ),
        ("clmulti-axpy", "bandwidth", vec![], pocl(), "GB/s"),
        (
            "clmulti-contract",
            "contract_names",
            vec![],
            vec![],
            "CLMULTI_PROGRESS_FILE",
        ),
        (
            "clmulti-drm-uapi",
            "names",
            vec!["0xc00c642d".into(), "0x40406469".into()],
            vec![],
            "DRM_IOCTL_",
        ),
        (
            "clmulti-explain",
            "explain_results",
            vec![root()
                .join("results/pocl-emulation/diagnose/fd-per-peer/runs.jsonl")
                .display()
                .to_string()],
            vec![],
            "FAILED after",
        ),
        (
            "clmulti-kmd-emu",
            "i915_client",
            vec![],
            vec![("LD_PRELOAD", lib("libclmulti_kmd_emu.so"))],
            "=",
        ),
        (
            "clmulti-layer",
            "is_active",
            vec![],
            {
                let mut env = pocl();
                env.push(("OPENCL_LAYERS", lib("libclmulti_layer.so")));
                env.push(("CLMULTI_LAYER_POLICY", "fd-per-peer".into()));
                env
            },
            "fd-per-peer",
        ),
        ("clmulti-probe", "list_devices", vec![], pocl(), "host"),
        (
            "clmulti-probe",
            "reading_cost",
            vec!["20".into()],
            pocl(),
            "us",
        ),
        (
            "clmulti-scenario",
            "check_scenario",
            vec![root()
                .join("configs/seed-2gpu-shared.toml")
                .display()
                .to_string()],
            vec![],
            "seed",
        ),
        (
            "clmulti-supervise",
            "crash",
            vec![],
            vec![],
            "signal Some(11)",
        ),
        (
            "clmulti-trace",
            "failing_call",
            vec![],
            vec![("LD_PRELOAD", lib("libclmulti_trace.so"))],
            "failed with ENOENT",
        ),
        (
            "clmulti-trace-alloc",
            "failing_malloc",
            vec![],
            vec![(
                "LD_PRELOAD",
                format!(
                    "{}:{}",
                    lib("libclmulti_trace.so"),
                    lib("libclmulti_trace_alloc.so")
                ),
            )],
            "the tracer names it",
        ),
    ]
}

#[test]
fn every_example_runs_and_says_what_it_is_for() {
    let target = built();
    for (package, example, args, env, expected) in cases(&target) {
        let out = Command::new(target.join("examples").join(example))
            .args(&args)
            .envs(env)
            .current_dir(root())
            .output()
            .unwrap_or_else(|e| panic!("{package} {example}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(expected),
            "{package} example {example} {args:?}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
