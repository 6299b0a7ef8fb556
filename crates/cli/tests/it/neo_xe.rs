//! NEO 26.27 (Debian unstable's, in the root folder of `scripts/intel-gpu-next.sh`) on
//! clmulti's emulated xe driver (`clmulti emulate --driver xe`): it finds two Arc B580s,
//! and the seed's own program allocates all its buffers across two of them, each buffer
//! one GEM object in VRAM on each device, created with DEFER_BACKING (NEO 26.27's
//! default on Battlemage), and no descriptor kept.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `scripts/intel-gpu-next.sh run-kernel-path` (NEO 26.27, no AUB keys: Debian
/// unstable's root folder of scripts/intel-gpu-versions.sh), from `dir` inside the
/// repository.
fn next(dir: &Path) -> Command {
    let mut cmd = Command::new(repo().join("scripts/intel-gpu-next.sh"));
    cmd.arg("run-kernel-path")
        .current_dir(dir)
        .env_remove("LD_PRELOAD")
        .env_remove("POCL_DEVICES");
    default_signals(&mut cmd);
    cmd
}

/// Fails with what to run when the root folder is not set up.
fn set_up(out: &std::process::Output) {
    let said = stderr(out);
    assert!(
        !said.contains("not set up"),
        "{said}\n(scripts/setup-tests.sh builds unstable's root folder)"
    );
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
    set_up(&out);
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
    let dir = seed_program(
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("xe-seed-{}", std::process::id())),
    );
    let report = dir.join("counts.txt");
    let mut cmd = next(&dir);
    cmd.arg(bin())
        .args(["emulate", "--driver", "xe", "--devices", "2", "--report"])
        .arg(&report)
        .args(["--", "./OpenCLMulti", "--gpus", "2"]);
    with_soft_nofile(&mut cmd, 1024);
    let out = run(&mut cmd);
    // The program writes its progress on stderr, after emulate's note.
    let said = stderr(&out);
    assert!(
        said.trim_end()
            .ends_with("99999: Allocated 1 MB successfully"),
        "{}",
        said.lines().rev().take(5).collect::<Vec<_>>().join("\n")
    );
    let counts = clmulti_probe::kmd_emu::parse_counts(&std::fs::read_to_string(&report).unwrap());
    assert_eq!(
        counts["pci-id"], 0xe20b,
        "the B580 is xe's model: {counts:?}"
    );
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

#[test]
fn a_model_of_the_other_driver_is_refused_with_the_driver_it_needs() {
    let out = run(Command::new(bin()).args(["emulate", "--model", "b580", "--", "true"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the Arc B580 is an xe device, not an i915 one (i915's models: a770, adl-s): pass --driver xe"),
        "{}",
        stderr(&out)
    );
    let out =
        run(Command::new(bin())
            .args(["emulate", "--driver", "xe", "--model", "a770", "--", "true"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pass --driver i915"),
        "{}",
        stderr(&out)
    );
}
