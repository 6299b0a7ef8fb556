//! The oldest and the newest Intel GPU runtime NEO Debian ships, each in its root folder
//! of scripts/intel-gpu-versions.sh (scripts/setup-tests.sh builds them), on the
//! emulated i915 driver: the seed's own program ends where the committed version table
//! (results/intel-neo-versions/versions.json) says it does. The full table is a script
//! (scripts/neo-versions-results.sh), not a test.

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

fn table() -> serde_json::Value {
    let path = repo().join("results/intel-neo-versions/versions.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The committed row of `suite`'s NEO on `model`.
fn row<'a>(table: &'a serde_json::Value, suite: &str, model: &str) -> &'a serde_json::Value {
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["suite"] == suite && r["model"] == model)
        .unwrap_or_else(|| panic!("no {suite} {model} row in versions.json"))
}

/// The seed's program at `gpus` GPUs in `suite`'s root folder on `model`, under a soft
/// descriptor limit of 1024 (the hard one as it is), with no descriptor inherited from
/// the harness: its last allocated index and last line.
fn seed_in(suite: &str, model: &str, gpus: u32, dir: &Path) -> (Option<u64>, String) {
    kmd_emu();
    let mut cmd = Command::new(repo().join("scripts/intel-gpu-versions.sh"));
    cmd.args(["run", suite])
        .arg(bin())
        .args(["emulate", "--model", model, "--devices", "2", "--"])
        .args(["./OpenCLMulti", "--gpus", &gpus.to_string()])
        .current_dir(dir)
        .env_remove("POCL_DEVICES")
        .env_remove("LD_PRELOAD")
        .env_remove("OCL_ICD_VENDORS");
    with_soft_nofile(&mut cmd, 1024);
    let out = run(&mut cmd);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        !text.contains("not set up"),
        "{text}\n(scripts/setup-tests.sh builds the root folders)"
    );
    seed_outcome(&text)
}

/// The committed row's answer at `gpus` GPUs.
fn committed(row: &serde_json::Value, gpus: u32) -> (Option<u64>, String) {
    let seed = row["seed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["gpus"] == gpus)
        .unwrap();
    (
        seed["last_index"].as_u64(),
        seed["last_line"].as_str().unwrap().to_owned(),
    )
}

/// A seed run that stops at a descriptor limit moves by a buffer or two with the
/// descriptors around it (clmulti's own, the loader's); one that completes does not.
fn assert_as_committed(
    live: &(Option<u64>, String),
    committed: &(Option<u64>, String),
    what: &str,
) {
    match (live.0, committed.0) {
        (Some(a), Some(b)) => assert!(
            a.abs_diff(b) <= 3,
            "{what}: {a} here, {b} in the table ({})",
            live.1
        ),
        other => assert_eq!(other.0, other.1, "{what}: {}", live.1),
    }
    assert_eq!(
        live.1.contains("err -6"),
        committed.1.contains("err -6"),
        "{what}: {} here, {} in the table",
        live.1,
        committed.1
    );
}

#[test]
fn the_oldest_and_newest_neo_end_the_seeds_program_where_the_version_table_says() {
    let table = table();
    // The suites setup-tests.sh builds are the table's oldest and newest versions.
    let versions: Vec<(&str, &str)> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["suite"].as_str().unwrap(), r["neo"].as_str().unwrap()))
        .collect();
    let key = |v: &str| {
        v.split('.')
            .map(|p| p.parse::<u64>().unwrap())
            .collect::<Vec<_>>()
    };
    let oldest = versions.iter().min_by_key(|(_, v)| key(v)).unwrap();
    let newest = versions.iter().max_by_key(|(_, v)| key(v)).unwrap();
    assert_eq!(
        (oldest.0, newest.0),
        ("bullseye", "sid"),
        "scripts/setup-tests.sh and this test build bullseye and sid"
    );
    let dir = seed_program(
        &Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("neo-versions-seed-{}", std::process::id())),
    );
    // The seed's case, two GPUs in one context: 20.44 refuses the context on the newest
    // GPU it lists and lists no A770; 26.27 allocates all it is asked for.
    for (suite, model) in [("bullseye", "adl-s"), ("bullseye", "a770"), ("sid", "a770")] {
        let row = row(&table, suite, model);
        let live = seed_in(suite, model, 2, &dir);
        assert_as_committed(
            &live,
            &committed(row, 2),
            &format!("NEO {} on {model}, 2 GPUs", row["neo"]),
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn emulate_names_its_models_and_refuses_device_memory_for_an_integrated_gpu() {
    let out = run(Command::new(bin()).args(["emulate", "--model", "b770", "--", "true"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("a770, adl-s"), "{}", stderr(&out));
    let out = run(Command::new(bin()).args([
        "emulate",
        "--model",
        "adl-s",
        "--local-memory",
        "1GiB",
        "--",
        "true",
    ]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--local-memory: the UHD Graphics 770 (Alder Lake-S) is integrated"),
        "{}",
        stderr(&out)
    );
}
