//! NEO 26.27 (Debian unstable's, in the root folder of `scripts/intel-gpu-next.sh`) on
//! clmulti's emulated xe driver (`clmulti emulate --driver xe`): it finds two Arc B580s,
//! and the seed's own program allocates all its buffers across two of them, each buffer
//! one GEM object in VRAM on each device, created with DEFER_BACKING (NEO 26.27's
//! default on Battlemage), and no descriptor kept.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `scripts/intel-gpu-next.sh run-kernel-path` (NEO 26.27, no AUB keys), from `dir`
/// inside the repository.
fn next(dir: &Path) -> Command {
    let folder = std::env::var_os("CLMULTI_INTEL_GPU_NEXT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".intel-gpu-next"));
    let library = folder.join("root/usr/lib/x86_64-linux-gnu/intel-opencl/libigdrcl.so");
    assert!(
        library.exists(),
        "NEO 26.27's root folder is not set up ({} missing): run scripts/intel-gpu-next.sh setup (scripts/setup-tests.sh does)",
        library.display()
    );
    let mut cmd = Command::new(repo().join("scripts/intel-gpu-next.sh"));
    cmd.arg("run-kernel-path")
        .current_dir(dir)
        .env_remove("LD_PRELOAD")
        .env_remove("POCL_DEVICES");
    default_signals(&mut cmd);
    cmd
}

#[test]
fn neo_26_27_finds_two_b580s_on_xe_and_runs_the_seeds_program_with_deferred_vram() {
    kmd_emu();
    let out = run(next(&repo()).args([
        bin().to_str().unwrap(),
        "emulate",
        "--driver",
        "xe",
        "--devices",
        "2",
        "--",
        "clinfo",
        "-l",
    ]));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        listed.matches("Intel(R) Arc(TM) B580 Graphics").count(),
        2,
        "{listed}\n{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("2 emulated xe Arc B580 device(s)"));

    // The seed's program, as its author ran it (soft nofile 1024), in a folder inside
    // the repository (the root folder sees the repository only).
    let dir = repo().join(format!("target/xe-seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["OpenCLMulti.cpp", "OpenCLKernels.cl"] {
        std::fs::copy(repo().join("bench/seed").join(file), dir.join(file)).unwrap();
    }
    let built = Command::new("gcc")
        .args([
            "-D",
            "CL_TARGET_OPENCL_VERSION=220",
            "-O2",
            "-o",
            "OpenCLMulti",
        ])
        .args(["OpenCLMulti.cpp", "-lOpenCL", "-lm"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(built.success());
    let report = dir.join("counts.txt");
    let script = format!(
        "ulimit -Sn 1024 && exec '{}' emulate --driver xe --devices 2 --report '{}' -- ./OpenCLMulti --gpus 2",
        bin().display(),
        report.display()
    );
    let out = run(next(&dir).args(["bash", "-c", &script]));
    // The program writes its progress on stderr, after emulate's note.
    let said = stderr(&out);
    assert!(
        said.trim_end()
            .ends_with("99999: Allocated 1 MB successfully"),
        "{}",
        said.lines().rev().take(5).collect::<Vec<_>>().join("\n")
    );
    let counts = clmulti_probe::kmd_emu::parse_counts(&std::fs::read_to_string(&report).unwrap());
    for device in 0..2 {
        let deferred = counts[&format!("deferred-objects-{device}-vram0")];
        assert!(
            deferred >= 100_000,
            "device {device}: {deferred} deferred VRAM objects"
        );
    }
    assert_eq!(counts["exports"], 0, "no dma-buf kept open: {counts:?}");
    let _ = std::fs::remove_dir_all(dir);
}
