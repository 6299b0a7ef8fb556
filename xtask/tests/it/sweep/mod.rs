//! `cargo xtask sweep` end to end: real child processes on real PoCL devices.

use crate::common;

use common::{
    abort_after_layer, browser_dom, clmulti_bin, first_records, keys, processes_with, record_lines,
    results, stderr, temp_dir, visible_text, wait_for_lines, xtask_bare,
};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod report;

use report::long_numbers;

fn xtask(args: &[&str]) -> Command {
    let mut cmd = xtask_bare();
    cmd.arg("sweep").args(args).arg("--bin").arg(clmulti_bin());
    cmd
}

const GRID: &str = r#"
name = "grid"
[devices]
type = "cpu"
count = 2
[allocation]
size = "64KiB"
count = 3000
[sampling]
every = 500
[grid]
"context.mode" = ["shared", "per-device"]
"allocation.strategy" = ["create", "migrate", "pool"]
"#;

#[test]
fn a_crashing_run_keeps_its_progress_and_last_words() {
    let dir = temp_dir("crash");
    // A runtime that aborts (SIGABRT) at its 21st clCreateBuffer, under a 1 GiB
    // address-space limit the run keeps well within.
    std::fs::write(
        dir.join("abort.toml"),
        format!(
            "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64KiB\"\ncount = 100\nstrategy = \"fill\"\n[env]\nOPENCL_LAYERS = \"{}\"\nCLMULTI_ABORT_AFTER = \"20\"\n[limits]\nas = \"1GiB\"\n[sampling]\nevery = 1\n",
            abort_after_layer().display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("ok.toml"),
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 50\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    // The crashing layer and its knob are the test's own: trusted, as read.
    common::trust(&dir.join("abort.toml"));
    let out = xtask(&[dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let records = results(&out_dir);
    assert_eq!(records.len(), 2, "{}", stderr(&out));
    let crashed = &records[0]["report"];
    assert_eq!(crashed["stop"]["kind"], "crashed", "{}", crashed["stop"]);
    assert_eq!(crashed["stop"]["signal_name"], "SIGABRT");
    assert_eq!(records[0]["signal"], 6);
    assert!(
        crashed["buffers"].as_u64().unwrap() > 0,
        "progress before the crash is kept"
    );
    assert!(crashed["samples"].as_array().unwrap().len() > 1);
    assert!(
        !crashed["stderr_tail"].as_str().unwrap().is_empty(),
        "the runtime's last words"
    );
    assert_eq!(
        crashed["host_limits"]["address_space_soft"],
        1u64 << 30,
        "the child's limits"
    );
    assert_eq!(records[1]["report"]["stop"]["kind"], "completed");
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("crashed: SIGABRT"), "{md}");
    assert!(
        out.status.success(),
        "a crash is a measurement: {}",
        stderr(&out)
    );

    // --resume leaves it; --retry-failed runs it again.
    let out = xtask(&[
        dir.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--resume",
    ])
    .output()
    .unwrap();
    assert!(
        stderr(&out).contains("2 run(s) already done, 0 to go"),
        "{}",
        stderr(&out)
    );
    let out = xtask(&[
        dir.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--resume",
        "--retry-failed",
    ])
    .output()
    .unwrap();
    assert!(stderr(&out).contains("1 to go"), "{}", stderr(&out));
    assert_eq!(results(&out_dir).len(), 3);
}

#[test]
fn a_killed_sweep_leaves_no_child_and_resumes_to_the_same_results() {
    let dir = temp_dir("resume");
    std::fs::write(dir.join("grid.toml"), GRID).unwrap();
    let whole = dir.join("whole");
    let out = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        whole.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&whole).len(), 6);

    // Kill a second sweep once two runs are on disk, then resume it.
    let part = dir.join("part");
    let mut child = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        part.to_str().unwrap(),
    ])
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_for_lines(&part.join("results.jsonl"), 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let marker = part.join("grid.toml");
    let _ = marker; // the children run `clmulti run <dir>/grid.toml`
    let deadline = Instant::now() + Duration::from_secs(10);
    let needle = dir.join("grid.toml").display().to_string();
    while !processes_with(&needle).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        processes_with(&needle).is_empty(),
        "a run outlived its sweep: {:?}",
        processes_with(&needle)
    );
    let partial = results(&part).len();
    assert!((2..6).contains(&partial), "killed after {partial} runs");

    // A fresh sweep into a folder with results is refused; --resume continues.
    let out = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        part.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("already holds results"),
        "{}",
        stderr(&out)
    );
    let out = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        part.to_str().unwrap(),
        "--resume",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("{partial} run(s) already done")),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        keys(&part),
        keys(&whole),
        "resumed sweep has exactly the uninterrupted sweep's runs"
    );

    // --force starts over and keeps the earlier generation.
    let out = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        part.to_str().unwrap(),
        "--force",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let kept = std::fs::read_to_string(part.join("results.1.jsonl")).unwrap();
    assert_eq!(record_lines(&kept), 6);
    assert_eq!(results(&part).len(), 6);
}

#[test]
fn a_torn_last_record_is_repaired_before_resuming() {
    let dir = temp_dir("torn");
    std::fs::write(
        dir.join("grid.toml"),
        GRID.replace("\"create\", \"migrate\", \"pool\"", "\"create\""),
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = xtask(&[dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let file = out_dir.join("results.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(record_lines(&text), 2);
    // A crash mid-write: the second record cut in half, no final newline.
    let cut = text.len() - text.lines().last().unwrap().len() / 2;
    std::fs::write(&file, &text[..cut]).unwrap();
    let out = xtask(&[
        dir.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--resume",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("torn record"), "{}", stderr(&out));
    let records = results(&out_dir);
    assert_eq!(
        records.len(),
        2,
        "the torn run ran again; nothing was glued or lost"
    );
    assert!(out_dir.join("results.jsonl.torn-1").exists());
}

#[test]
fn two_sweeps_on_one_folder_do_not_mix() {
    let dir = temp_dir("lock");
    std::fs::write(
        dir.join("slow.toml"),
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = \"until-failure\"\n[guards]\nmax_seconds = 3\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let mut first = xtask(&[dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !out_dir.join(".sweep.lock").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let second = xtask(&[
        dir.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--resume",
    ])
    .output()
    .unwrap();
    first.wait().unwrap();
    assert_ne!(second.status.code(), Some(0));
    assert!(
        stderr(&second).contains("in use by another sweep (pid"),
        "{}",
        stderr(&second)
    );
}

#[test]
fn runs_the_machine_cannot_do_are_skipped_not_failed() {
    let dir = temp_dir("skip");
    std::fs::write(
        dir.join("scaling.toml"),
        "[devices]\ntype = \"gpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 20\n[grid]\n\"devices.count\" = [1, 4]\n",
    )
    .unwrap();
    // From a sub-folder of the workspace, without cargo's environment: found at run time.
    let out_dir = dir.join("out");
    let out = xtask(&[dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "a run this machine cannot do is no failure: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out)
            .contains("sweep: 1 run(s) skipped: they ask for more devices than this machine has"),
        "{}",
        stderr(&out)
    );
    let records = results(&out_dir);
    assert_eq!(records[0]["report"]["stop"]["kind"], "completed");
    let skipped = &records[1]["report"]["stop"];
    assert_eq!(skipped["kind"], "skipped");
    assert!(
        skipped["reason"]
            .as_str()
            .unwrap()
            .contains("asked for 4 devices of type gpu on platform"),
        "{skipped}"
    );
}

#[test]
fn a_missing_scenario_path_is_bad_input_like_clmulti_runs() {
    let out = xtask_bare()
        .args(["sweep", "/nonexistent.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/nonexistent.toml: no such file or folder"),
        "{}",
        stderr(&out)
    );
}

/// A sweep of files that are all invalid says every problem of each, as `clmulti
/// check` does, runs nothing and writes no page.
#[test]
fn a_sweep_of_invalid_files_says_every_problem_and_writes_nothing() {
    let dir = temp_dir("invalid");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[devices]\ntype = \"gpux\"\n[allocation]\nstrategy = \"crate\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = xtask(&[file.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml:2:8: key `devices.type`"), "{err}");
    assert!(
        err.contains("bad.toml:4:12: key `allocation.strategy`"),
        "{err}"
    );
    assert!(
        err.contains("1 invalid or refused scenario file(s) of 1; nothing was run"),
        "{err}"
    );
    assert!(!out_dir.join("index.html").exists(), "{err}");
}

#[test]
fn summary_files_are_valid_and_shards_merge() {
    let dir = temp_dir("summary");
    std::fs::write(dir.join("grid.toml"), GRID).unwrap();
    std::fs::write(
        dir.join("broken.toml"),
        "[allocation]\nsize = \"12 parsecs\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = xtask(&[dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a malformed scenario makes the exit code say so"
    );
    assert!(
        stderr(&out).contains("broken.toml:2:8: key `allocation.size`"),
        "{}",
        stderr(&out)
    );
    let records = results(&out_dir);
    assert_eq!(records.len(), 6, "the valid runs still ran");

    // CSV: a header and one row per run, every row as wide as the header.
    let csv = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let width = reader.headers().unwrap().len();
    let rows: Vec<csv::StringRecord> = reader
        .records()
        .map(|r| r.expect("CSV row parses"))
        .collect();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.len() == width));
    assert!(rows.iter().any(|r| r.iter().any(|c| c == "per-device")));

    // The summaries are rebuilt from the JSONL alone.
    std::fs::remove_file(out_dir.join("summary.csv")).unwrap();
    let out = xtask_bare()
        .args(["summary", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("summary.csv")).unwrap(),
        csv
    );

    // Two shards and a merge give the same runs as the whole sweep.
    let grid = dir.join("grid.toml");
    for k in ["1/2", "2/2"] {
        let shard_dir = dir.join(format!("shard{}", &k[..1]));
        let out = xtask(&[
            grid.to_str().unwrap(),
            "--shard",
            k,
            "--out",
            shard_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(results(&shard_dir).len(), 3);
    }
    let merged = dir.join("merged");
    let out = xtask_bare()
        .args([
            "merge",
            dir.join("shard1").to_str().unwrap(),
            dir.join("shard2").to_str().unwrap(),
        ])
        .args(["--out", merged.to_str().unwrap(), "--expect", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&merged), keys(&out_dir));
    assert!(merged.join("index.html").exists());
    assert!(
        stderr(&out).contains("6 run(s) from 2 shard(s)"),
        "{}",
        stderr(&out)
    );
    // A missing shard is reported, and fails the merge.
    let out = xtask_bare()
        .args([
            "merge",
            dir.join("shard1").to_str().unwrap(),
            dir.join("shard3").to_str().unwrap(),
        ])
        .args(["--out", dir.join("merged2").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("missing shard(s)"),
        "{}",
        stderr(&out)
    );
    // A shard named by its plan but not given is named by its number.
    let out = xtask_bare()
        .args([
            "merge",
            dir.join("shard1").to_str().unwrap(),
            "--expect",
            "2",
        ])
        .args(["--out", dir.join("merged4").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("missing shard(s): shard 2/2 (1 of 2 found)"),
        "{}",
        stderr(&out)
    );
    // A merge never overwrites results: refused, or with --force kept aside.
    let again = |force: bool| {
        let mut cmd = xtask_bare();
        cmd.args(["merge", dir.join("shard1").to_str().unwrap()])
            .args(["--out", merged.to_str().unwrap()]);
        if force {
            cmd.arg("--force");
        }
        cmd.output().unwrap()
    };
    let out = again(false);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already holds results"),
        "{}",
        stderr(&out)
    );
    assert_eq!(keys(&merged), keys(&out_dir), "untouched");
    let out = again(true);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(results(&merged).len(), 3);
    assert!(merged.join("results.1.jsonl").exists());
    // A shard that stopped early (its last run lost) is named, and fails the merge.
    let partial = dir.join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::copy(dir.join("shard1/plan.json"), partial.join("plan.json")).unwrap();
    let lines = std::fs::read_to_string(dir.join("shard1/results.jsonl")).unwrap();
    let kept = first_records(&lines, 2);
    std::fs::write(partial.join("results.jsonl"), kept).unwrap();
    let out = xtask_bare()
        .args(["merge", partial.to_str().unwrap()])
        .args(["--out", dir.join("merged3").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("(shard 1/2) on ") && stderr(&out).contains(": 2 of 3 run(s)"),
        "{}",
        stderr(&out)
    );

    // Comparing a run with its earlier self: same buffers, nothing flagged; runs in
    // one sweep only are listed apart.
    let out = xtask_bare()
        .args([
            "compare",
            out_dir.to_str().unwrap(),
            dir.join("shard1").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Run names are Markdown-escaped: brackets read as brackets, not a link.
    assert!(text.contains("| grid\\[allocation.strategy=create,context.mode=shared\\] | buffers reached | 3000 | 3000 | +0.0% |  |"), "{text}");
    assert!(text.contains("Only in old (3)"), "{text}");
    // Every figure a person reads is rounded and carries its unit.
    assert!(long_numbers(&text).is_empty(), "{:?}", long_numbers(&text));
    assert!(text.contains(" B |") || text.contains("iB |"), "{text}");
    assert!(!text.contains("**changed**"), "{text}");
}
