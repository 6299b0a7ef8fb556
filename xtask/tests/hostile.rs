//! The sweep's hostile corpus: its own inputs (results, plans, comparisons that are
//! FIFOs, devices or garbage), resumes on a machine whose PoCL memory size drifts,
//! a scenario edited mid-sweep, merges of shards named twice, without plans, retried
//! or duplicated, and options no sweep can take. Every record must stay attributed
//! to the run that made it: its key is the hash of its own scenario and machine.

mod common;

#[path = "../src/records.rs"]
#[allow(dead_code, unused_imports)]
mod records;

use common::{
    clmulti_bin, ended, results, shared_library, stderr, temp_dir, trust, xtask_bare, HANG,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn sweep(args: &[&str]) -> Command {
    let mut cmd = xtask_bare();
    cmd.arg("sweep").args(args).arg("--bin").arg(clmulti_bin());
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

fn assert_sane(what: &str, out: &Output) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{what}: panicked: {err}");
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "{what}: {:?}: {err}",
        out.status
    );
}

/// Four tiny runs.
const GRID: &str = "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 10\n[grid]\n\"allocation.size\" = [\"4KiB\", \"8KiB\", \"16KiB\", \"32KiB\"]\n";

/// Every record of a results file, read as the sweep reads it.
fn records_of(dir: &Path) -> Vec<records::SweepRecord> {
    let mut all = Vec::new();
    records::for_each(&dir.join("results.jsonl"), |r| all.push(r)).unwrap();
    all
}

/// Records whose key is not the hash of their own scenario and machine: stored under
/// another run's name.
fn misattributed(records: &[records::SweepRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|r| {
            let json = serde_json::to_string(&r.report.scenario).unwrap();
            records::fnv64(&format!("{json}\n{}", r.machine)) != r.key
        })
        .map(|r| format!("{} #{}", r.file, r.index))
        .collect()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn inputs_that_are_not_files_are_refused_not_read_for_ever() {
    let dir = temp_dir("hostile-inputs");
    let grid = dir.join("grid.toml");
    std::fs::write(&grid, GRID).unwrap();
    let grid = grid.to_str().unwrap();
    let zero_dir = dir.join("zero");
    std::fs::create_dir_all(&zero_dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero_dir.join("results.jsonl")).unwrap();
    let fifo_dir = dir.join("fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    mkfifo(&fifo_dir.join("results.jsonl"));
    let lock_dir = dir.join("lock");
    std::fs::create_dir_all(&lock_dir).unwrap();
    mkfifo(&lock_dir.join(".sweep.lock"));
    let zero = zero_dir.to_str().unwrap();
    let fifo = fifo_dir.to_str().unwrap();
    let cases: Vec<(Command, &str)> = vec![
        (
            sweep(&[grid, "--out", zero, "--resume"]),
            "not a regular file",
        ),
        (
            sweep(&[grid, "--out", fifo, "--resume"]),
            "not a regular file",
        ),
        (
            sweep(&[grid, "--out", lock_dir.to_str().unwrap()]),
            "not a regular file",
        ),
        (
            sweep(&[
                grid,
                "--out",
                dir.join("x").to_str().unwrap(),
                "--compare",
                "/dev/zero",
            ]),
            "not a regular file",
        ),
        (
            {
                let mut c = xtask_bare();
                c.args(["merge", zero, "--out", dir.join("m1").to_str().unwrap()]);
                c
            },
            "not a regular file",
        ),
        (
            {
                let mut c = xtask_bare();
                c.args(["compare", "/dev/zero", fifo]);
                c
            },
            "not a regular file",
        ),
        (
            {
                let mut c = xtask_bare();
                c.args(["summary", fifo]);
                c
            },
            "not a regular file",
        ),
    ];
    for (mut cmd, message) in cases {
        let what = format!("{cmd:?}");
        let out = ended(&mut cmd, &what);
        assert_sane(&what, &out);
        assert_ne!(out.status.code(), Some(0), "{what}");
        assert!(stderr(&out).contains(message), "{what}: {}", stderr(&out));
    }
}

#[test]
fn a_resume_finds_its_runs_when_pocl_memory_drifts() {
    // PoCL derives its devices' global memory from free memory: 6.96 to 15.26 GB in
    // an hour on an idle host. POCL_MEMORY_LIMIT moves it here on purpose.
    let dir = temp_dir("hostile-drift");
    std::fs::write(dir.join("grid.toml"), GRID).unwrap();
    let out_dir = dir.join("out");
    let args = [dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
    let out = run(sweep(&args).env("POCL_MEMORY_LIMIT", "2"));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(sweep(&[&args[..], &["--resume"]].concat()).env("POCL_MEMORY_LIMIT", "3"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("4 run(s) already done, 0 to go"),
        "{}",
        stderr(&out)
    );
    let records = records_of(&out_dir);
    assert_eq!(records.len(), 4, "no run twice");
    assert!(misattributed(&records).is_empty());
}

#[test]
fn a_scenario_edited_mid_sweep_is_never_misattributed() {
    let dir = temp_dir("hostile-edit");
    let file = dir.join("grid.toml");
    let slow = "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = \"until-failure\"\nkeep = false\n[guards]\nmax_seconds = 0.3\n[sampling]\nevery = 100000\n";
    std::fs::write(
        &file,
        format!("name = \"before\"\n{slow}[grid]\n\"allocation.size\" = [\"4KiB\", \"8KiB\", \"16KiB\", \"32KiB\"]\n"),
    )
    .unwrap();
    let out_dir = dir.join("out");
    let args = [dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
    let child = sweep(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for_lines(&out_dir.join("results.jsonl"), 1);
    // Edited while the sweep runs: another name, other sizes.
    std::fs::write(
        &file,
        format!("name = \"after\"\n{slow}[grid]\n\"allocation.size\" = [\"1KiB\", \"2KiB\", \"3KiB\", \"5KiB\"]\n"),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let records = records_of(&out_dir);
    assert_eq!(records.len(), 4);
    assert!(
        misattributed(&records).is_empty(),
        "{:?}",
        misattributed(&records)
    );
    // The sweep measured the file it planned, whatever happened to it meanwhile.
    for r in &records {
        assert!(
            r.report.run_name.starts_with("before["),
            "{}",
            r.report.run_name
        );
        assert!([4096, 8192, 16384, 32768].contains(&r.report.scenario.allocation.size_bytes));
    }
    // Resumed, the edited file's runs are new runs: none counts as done.
    let out = run(&mut sweep(&[&args[..], &["--resume"]].concat()));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0 run(s) already done, 4 to go"),
        "{}",
        stderr(&out)
    );
    let records = records_of(&out_dir);
    assert_eq!(records.len(), 8);
    assert!(
        misattributed(&records).is_empty(),
        "{:?}",
        misattributed(&records)
    );
    assert_eq!(
        records
            .iter()
            .filter(|r| r.report.run_name.starts_with("after["))
            .count(),
        4
    );
}

fn merge(args: &[&str]) -> Output {
    run(xtask_bare().arg("merge").args(args))
}

/// Two shards of the grid, in `dir/shard1` and `dir/shard2`.
fn two_shards(dir: &Path) -> (PathBuf, PathBuf) {
    let grid = dir.join("grid.toml");
    std::fs::write(&grid, GRID).unwrap();
    let shards: Vec<PathBuf> = ["1/2", "2/2"]
        .iter()
        .map(|k| {
            let shard = dir.join(format!("shard{}", &k[..1]));
            let out = run(&mut sweep(&[
                grid.to_str().unwrap(),
                "--shard",
                k,
                "--out",
                shard.to_str().unwrap(),
            ]));
            assert!(out.status.success(), "{}", stderr(&out));
            shard
        })
        .collect();
    (shards[0].clone(), shards[1].clone())
}

fn csv_rows(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("summary.csv"))
        .unwrap()
        .lines()
        .count()
        - 1
}

#[test]
fn merges_name_what_is_missing_and_keep_each_runs_newest_record() {
    let dir = temp_dir("hostile-merge");
    let (s1, s2) = two_shards(&dir);
    let (s1s, s2s) = (s1.to_str().unwrap(), s2.to_str().unwrap());

    // One shard named twice is one shard: shard 2 is missing.
    let out = merge(&[
        s1s,
        s1s,
        "--expect",
        "2",
        "--out",
        dir.join("m1").to_str().unwrap(),
    ]);
    assert_sane("twice", &out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("shard 2/2"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("named more than once"),
        "{}",
        stderr(&out)
    );

    // A shard without plan.json cannot say it finished.
    let bare = dir.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let lines = std::fs::read_to_string(s2.join("results.jsonl")).unwrap();
    std::fs::write(bare.join("results.jsonl"), common::first_records(&lines, 1)).unwrap();
    let out = merge(&[
        s1s,
        bare.to_str().unwrap(),
        "--out",
        dir.join("m2").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no plan.json"), "{}", stderr(&out));

    // A garbage plan: located, the merge goes on, no temporary file left.
    let garbage = dir.join("garbage");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::copy(s2.join("results.jsonl"), garbage.join("results.jsonl")).unwrap();
    std::fs::write(
        garbage.join("plan.json"),
        "{\"shard\": [2, 2],\n \"keys\": [1, 2, \x01",
    )
    .unwrap();
    let m3 = dir.join("m3");
    let out = merge(&[
        s1s,
        garbage.to_str().unwrap(),
        "--out",
        m3.to_str().unwrap(),
    ]);
    assert_sane("garbage plan", &out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("plan.json: line 2 column"),
        "{}",
        stderr(&out)
    );
    assert_eq!(results(&m3).len(), 4);
    let left: Vec<_> = std::fs::read_dir(&m3)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains("merging"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // A retried run (a newer record of the same key) and a duplicated line: the
    // newest is taken once, and the summary counts four runs, not five or six.
    let retried = dir.join("retried");
    std::fs::create_dir_all(&retried).unwrap();
    std::fs::copy(s1.join("plan.json"), retried.join("plan.json")).unwrap();
    let text = std::fs::read_to_string(s1.join("results.jsonl")).unwrap();
    let record = text.lines().find(|l| l.contains("\"key\":")).unwrap();
    let mut newer: serde_json::Value = serde_json::from_str(record).unwrap();
    newer["finished_at"] = (newer["finished_at"].as_u64().unwrap() + 10).into();
    newer["report"]["buffers"] = 7.into();
    let mut crashed: serde_json::Value = serde_json::from_str(record).unwrap();
    crashed["report"]["stop"] =
        serde_json::json!({"kind": "crashed", "signal": 6, "signal_name": "SIGABRT"});
    std::fs::write(
        retried.join("results.jsonl"),
        format!(
            "{}{record}\n{newer}\n",
            text.replace(record, &crashed.to_string())
        ),
    )
    .unwrap();
    let m4 = dir.join("m4");
    let out = merge(&[
        retried.to_str().unwrap(),
        s2s,
        "--expect",
        "2",
        "--out",
        m4.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let merged = records_of(&m4);
    assert_eq!(merged.len(), 4);
    let key = newer["key"].as_str().unwrap();
    let kept: Vec<_> = merged.iter().filter(|r| r.key == key).collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].report.buffers, 7, "the newest record of the run");
    assert_eq!(csv_rows(&m4), 4);
    // The summary of the shard itself also counts each run once.
    let out = run(xtask_bare().args(["summary", retried.to_str().unwrap()]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(csv_rows(&retried), 2);

    // A folder merged into itself is refused, and left as it was.
    let before = std::fs::read(s1.join("results.jsonl")).unwrap();
    let out = merge(&[s1s, s2s, "--out", s1s, "--force"]);
    assert_sane("into itself", &out);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is the output folder"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(s1.join("results.jsonl")).unwrap(), before);
    assert!(s1.join("plan.json").exists());
}

#[test]
fn long_names_and_long_descriptions_cost_what_they_should() {
    let dir = temp_dir("hostile-long");
    // A 245-character file name: its plot's name was too long for the file system,
    // which stopped every summary and every resume after it.
    let long = dir.join(format!("{}.toml", "n".repeat(240)));
    // A 60 KiB description in a 20-run grid: carried once, not by every record.
    let description = "d".repeat(60 << 10);
    let counts: Vec<String> = (1..=20).map(|c| c.to_string()).collect();
    std::fs::write(
        &long,
        format!(
            "description = \"{description}\"\n[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\n[grid]\n\"allocation.count\" = [{}]\n",
            counts.join(", ")
        ),
    )
    .unwrap();
    let out_dir = dir.join("out");
    let args = [long.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
    let out = run(&mut sweep(&args));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out_dir.join("index.html").exists());
    let out = run(&mut sweep(&[&args[..], &["--resume"]].concat()));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("20 run(s) already done"),
        "{}",
        stderr(&out)
    );
    let size = std::fs::metadata(out_dir.join("results.jsonl"))
        .unwrap()
        .len();
    assert!(
        size < 20 * (60 << 10),
        "{size} bytes: the description is stored per record"
    );
    let records = records_of(&out_dir);
    assert_eq!(records.len(), 20);
    assert!(records
        .iter()
        .all(|r| r.report.scenario.description == description));
    assert!(misattributed(&records).is_empty());
}

#[test]
fn results_written_before_scenario_bases_still_read() {
    let dir = temp_dir("hostile-old");
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/pocl-8cpu/scaling");
    std::fs::copy(old.join("results.jsonl"), dir.join("results.jsonl")).unwrap();
    let count = records_of(&dir).len();
    assert!(count > 0);
    let out = run(xtask_bare().args(["summary", dir.to_str().unwrap()]));
    assert!(out.status.success(), "{}", stderr(&out));
    // Merged into the new format, the same runs with the same scenarios.
    let merged = dir.join("merged");
    let out = merge(&[dir.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert_sane("old", &out);
    let before = records_of(&dir);
    let after = records_of(&merged);
    assert_eq!(after.len(), before.len());
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a.key, b.key);
        assert_eq!(
            serde_json::to_value(&a.report.scenario).unwrap(),
            serde_json::to_value(&b.report.scenario).unwrap()
        );
    }
}

#[test]
fn options_no_sweep_can_take_are_refused() {
    let dir = temp_dir("hostile-options");
    std::fs::write(dir.join("grid.toml"), GRID).unwrap();
    let grid = dir.join("grid.toml");
    let grid = grid.to_str().unwrap();
    for (args, message) in [
        (vec![grid, "--timeout", "nan"], "expected seconds"),
        (vec![grid, "--timeout", "inf"], "expected seconds"),
        (vec![grid, "--timeout=-1"], "expected seconds"),
        (vec![grid, "--timeout", "0"], "expected seconds"),
        (vec![grid, "--timeout", "1e300"], "expected seconds"),
        (vec![grid, "--render-every", "inf"], "expected seconds"),
        (vec![grid, "--render-every=-1"], "expected seconds"),
        (vec![grid, "--threshold", "nan"], "relative change"),
        (vec![grid, "--shard", "0/2"], "K/N"),
    ] {
        let out = run(&mut sweep(&args));
        let what = args.join(" ");
        assert_sane(&what, &out);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{what}: {}", stderr(&out));
    }
    let out = merge(&[grid, "--expect", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// Every committed sweep page is what today's summary makes of its records: records
/// of every earlier format still read, and read the same (the NEO runtime line of
/// records from before the engine recorded it included).
#[test]
fn committed_pages_are_what_their_records_say_today() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut folders = Vec::new();
    let mut pending = vec![root];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().unwrap() == "results.jsonl" {
                folders.push(dir.clone());
            }
        }
    }
    assert!(folders.len() >= 5, "{folders:?}");
    for folder in folders {
        let copy = temp_dir(&format!(
            "pages-{}",
            folder.to_string_lossy().replace('/', "_")
        ));
        for name in ["results.jsonl", "plan.json"] {
            if folder.join(name).exists() {
                std::fs::copy(folder.join(name), copy.join(name)).unwrap();
            }
        }
        let out = run(xtask_bare().args(["summary", copy.to_str().unwrap()]));
        assert!(out.status.success(), "{}", stderr(&out));
        let committed = std::fs::read_to_string(folder.join("summary.md")).unwrap();
        let today = std::fs::read_to_string(copy.join("summary.md")).unwrap();
        assert!(
            committed == today,
            "{}: summary.md differs from what `cargo xtask summary` writes today",
            folder.display()
        );
    }
}

#[test]
fn hostile_names_stay_text_in_every_exporter_and_links_redirect_nothing() {
    let dir = temp_dir("hostile-names");
    let name = "=HYPERLINK(\\\"http://x\\\",\\\"<script>alert(1)</script>|[a](b)\\\")";
    std::fs::write(
        dir.join("evil.toml"),
        format!("name = \"{name}\"\n[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 3\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("calc.toml"),
        "name = \"+cmd|' /C calc'!A0\"\n[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 3\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    // Links planted where the sweep writes: its lock, its summary.
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, out_dir.join("summary.csv")).unwrap();
    let out = run(&mut sweep(&[
        dir.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    let csv = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let mut cells = 0;
    for record in reader.records() {
        for cell in record.unwrap().iter() {
            if cell.contains("HYPERLINK(") || cell.contains("cmd|") {
                cells += 1;
                assert!(cell.starts_with('\''), "a formula left live: {cell}");
            }
        }
    }
    assert!(cells >= 2, "{csv}");
    let html = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    assert!(!html.contains("<script>alert"), "HTML left a script live");
    let markdown = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(
        !markdown.contains("[a](b)"),
        "Markdown left a link live:\n{markdown}"
    );

    // A lock planted as a link is refused, and the file it names left alone.
    std::fs::remove_file(out_dir.join(".sweep.lock")).ok();
    std::os::unix::fs::symlink(&victim, out_dir.join(".sweep.lock")).unwrap();
    let out = run(&mut sweep(&[
        dir.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--force",
    ]));
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(".sweep.lock"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn a_merge_takes_the_shards_of_one_plan_only() {
    let dir = temp_dir("hostile-plans");
    let (s1, s2) = two_shards(&dir);
    let other_grid = dir.join("other.toml");
    std::fs::write(&other_grid, GRID.replace("count = 10", "count = 11")).unwrap();
    let shard_of = |grid: &Path, k: &str, name: &str| {
        let folder = dir.join(name);
        let out = run(&mut sweep(&[
            grid.to_str().unwrap(),
            "--shard",
            k,
            "--out",
            folder.to_str().unwrap(),
        ]));
        assert!(out.status.success(), "{}", stderr(&out));
        folder
    };
    let other_2 = shard_of(&other_grid, "2/2", "other2");
    let third_1 = shard_of(&dir.join("grid.toml"), "1/3", "third1");
    let cases: [(&[&Path], Option<&str>, &str); 3] = [
        (&[&s1, &other_2], Some("2"), "different plans"),
        (&[&s1, &third_1], None, "mixed shard counts"),
        (&[&s1, &s2], Some("3"), "not shards of --expect 3"),
    ];
    for (i, (inputs, expect, said)) in cases.into_iter().enumerate() {
        let out_dir = dir.join(format!("m{i}"));
        let mut args: Vec<&str> = inputs.iter().map(|p| p.to_str().unwrap()).collect();
        if let Some(n) = expect {
            args.extend(["--expect", n]);
        }
        args.extend(["--out", out_dir.to_str().unwrap()]);
        let out = merge(&args);
        assert_sane(said, &out);
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
        assert!(
            !out_dir.join("results.jsonl").exists(),
            "{said}: merged anyway"
        );
    }
    // A shard resumed with another plan's files, or as another shard, is refused:
    // its folder would hold two plans' records.
    for (grid, k) in [(&other_grid, "2/2"), (&dir.join("grid.toml"), "1/2")] {
        let out = run(&mut sweep(&[
            grid.to_str().unwrap(),
            "--shard",
            k,
            "--out",
            s2.to_str().unwrap(),
            "--resume",
        ]));
        assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--resume of another plan"),
            "{}",
            stderr(&out)
        );
    }
    // A plan_id edited to another plan's is computed again from the runs the plan
    // lists; that plan's runs copied in too, its records are not the plan's; shards
    // of two clmulti versions are named. Each is refused, and nothing merged.
    let copy = |from: &Path, name: &str| {
        let to = dir.join(name);
        std::fs::create_dir_all(&to).unwrap();
        for file in ["results.jsonl", "plan.json"] {
            std::fs::copy(from.join(file), to.join(file)).unwrap();
        }
        to
    };
    let plan = |folder: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(folder.join("plan.json")).unwrap()).unwrap()
    };
    let edited = copy(&other_2, "edited");
    let mut forged = plan(&edited);
    forged["plan_id"] = plan(&s1)["plan_id"].clone();
    std::fs::write(edited.join("plan.json"), forged.to_string()).unwrap();
    let copied = copy(&other_2, "copied");
    std::fs::copy(s2.join("plan.json"), copied.join("plan.json")).unwrap();
    let older = copy(&s2, "older");
    let text = std::fs::read_to_string(older.join("results.jsonl")).unwrap();
    let rewritten: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v.get("tool").is_some() {
                v["tool"] = "0.0.1 (commit 0000000, features: )".into();
            }
            format!("{v}\n")
        })
        .collect();
    std::fs::write(older.join("results.jsonl"), rewritten).unwrap();
    for (i, (shard, said)) in [
        (&edited, "edited by hand"),
        (&copied, "2 recorded run(s) that plan"),
        (&older, "recorded by 2 clmulti versions"),
    ]
    .into_iter()
    .enumerate()
    {
        let out_dir = dir.join(format!("checked{i}"));
        let args = [
            s1.to_str().unwrap(),
            shard.to_str().unwrap(),
            "--expect",
            "2",
        ];
        let out = merge(&[&args[..], &["--out", out_dir.to_str().unwrap()]].concat());
        assert_sane(said, &out);
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
        assert!(!out_dir.join("results.jsonl").exists(), "{said}: merged");
    }
    let out = merge(&[
        s1.to_str().unwrap(),
        older.to_str().unwrap(),
        "--allow-mixed-versions",
        "--out",
        dir.join("mixed").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("merged as --allow-mixed-versions asks"),
        "{}",
        stderr(&out)
    );
    // The shards of one plan still merge.
    let out = merge(&[
        s1.to_str().unwrap(),
        s2.to_str().unwrap(),
        "--expect",
        "2",
        "--out",
        dir.join("ok").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A shared library built from C `body` (a constructor's statements) at `lib`,
/// written in place as the linker does when it relinks.
fn library_with_constructor(lib: &Path, body: &str) {
    let source = lib.with_extension("c");
    std::fs::write(
        &source,
        format!("#include <stdio.h>\n#include <unistd.h>\n__attribute__((constructor)) static void start(void) {{ {body} }}\n"),
    )
    .unwrap();
    shared_library(&source, lib);
}

/// A sweep checks what each run loads right before the run: a trusted library
/// relinked after the sweep planned is refused in every later run (7 of 20 runs
/// loaded it before), and a file that loads what nothing trusts, through a grid's
/// placeholder or a vendors folder holding a FIFO, runs nothing.
#[test]
fn a_sweep_checks_what_each_run_loads_right_before_it() {
    let dir = temp_dir("hostile-swapped");
    let lib = dir.join("libswap.so");
    let (waiting, go, relinked) = (
        dir.join("waiting"),
        dir.join("go"),
        dir.join("relinked-ran"),
    );
    // The first run waits in its library's constructor until the library is relinked.
    library_with_constructor(
        &lib,
        &format!(
            "FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); while (access(\"{}\", F_OK) != 0) usleep(10000);",
            waiting.display(),
            go.display()
        ),
    );
    let grid = dir.join("swap.toml");
    std::fs::write(
        &grid,
        format!(
            "{}[env]\nLD_PRELOAD = \"./libswap.so\"\n",
            GRID.replace("\"16KiB\", \"32KiB\"", "\"16KiB\"")
        ),
    )
    .unwrap();
    trust(&grid);
    let out_dir = dir.join("out");
    let sweeping = sweep(&[grid.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !waiting.exists() {
        assert!(start.elapsed() < HANG, "the first run never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    library_with_constructor(
        &lib,
        &format!(
            "FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f);",
            relinked.display()
        ),
    );
    std::fs::write(&go, "").unwrap();
    let out = sweeping.wait_with_output().unwrap();
    assert_sane("swapped", &out);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!relinked.exists(), "a run loaded the relinked library");
    assert!(
        stderr(&out).contains("changed since it was trusted"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        results(&out_dir).len(),
        1,
        "the run planned before the relink"
    );

    // A placeholder that names another library in another run; a FIFO in a vendors
    // folder: refused at planning, nothing run, nothing waited on.
    let marker = dir.join("constructor-ran");
    std::fs::create_dir_all(dir.join("helpers")).unwrap();
    library_with_constructor(
        &dir.join("helpers/p2.so"),
        &format!(
            "FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f);",
            marker.display()
        ),
    );
    std::os::unix::fs::symlink("/lib/x86_64-linux-gnu/libm.so.6", dir.join("helpers/p1.so"))
        .unwrap();
    let placeholder = dir.join("placeholder.toml");
    std::fs::write(
        &placeholder,
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 3\n[env]\nLD_PRELOAD = \"helpers/p{devices.count}.so\"\n[grid]\n\"devices.indices\" = [[0], [0, 1]]\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("vendors")).unwrap();
    mkfifo(&dir.join("vendors/x.icd"));
    let fifo = dir.join("fifo.toml");
    std::fs::write(
        &fifo,
        "[allocation]\ncount = 3\n[env]\nOCL_ICD_VENDORS = \"vendors\"\n",
    )
    .unwrap();
    for (file, said) in [(&placeholder, "helpers/p2.so"), (&fifo, "a FIFO")] {
        let out_dir = dir.join(format!(
            "out-{}",
            file.file_stem().unwrap().to_string_lossy()
        ));
        let out = ended(
            &mut sweep(&[file.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]),
            said,
        );
        assert_sane(said, &out);
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
        assert!(results(&out_dir).is_empty(), "{said}: ran");
        // The check submit.sh runs says it before anything is submitted.
        let out = ended(
            xtask_bare()
                .args(["sweep", "--check", "--bin"])
                .arg(clmulti_bin())
                .arg(file),
            said,
        );
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
    }
    assert!(!marker.exists(), "a refused file's library ran");
}

/// 300 000 unreadable result lines: the first few named, the rest counted (25.7 MB
/// of warnings before).
#[test]
fn many_unreadable_lines_are_counted_not_each_said() {
    let dir = temp_dir("hostile-empty-lines");
    std::fs::write(dir.join("results.jsonl"), "{}\n".repeat(300_000)).unwrap();
    let out = ended(xtask_bare().arg("summary").arg(&dir), "summary");
    assert_sane("empty lines", &out);
    let err = stderr(&out);
    assert!(err.len() < 4000, "{} bytes of warnings", err.len());
    assert!(
        err.contains("299995 more unreadable record(s) skipped"),
        "{err}"
    );
}

/// `submit.sh` checks the files and their trust as the shards will, and submits
/// nothing (no `sbatch`) when one is refused, saying why.
#[test]
fn submit_stops_before_sbatch_on_a_file_nothing_trusts() {
    let dir = temp_dir("hostile-submit");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let called = dir.join("sbatch-called");
    let sbatch = bin.join("sbatch");
    std::fs::write(
        &sbatch,
        format!("#!/bin/sh\ntouch {}\necho 1\n", called.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.join("preload.toml");
    std::fs::write(&file, "[allocation]\ncount = 3\n[env]\nHOME = \"/tmp\"\n").unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = ended(
        Command::new(root.join("scripts/slurm/submit.sh"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("CLMULTI_BIN", clmulti_bin())
            .env("CLMULTI_XTASK", env!("CARGO_BIN_EXE_xtask"))
            .env("CLMULTI_TRUST_FILE", common::trust_record())
            .args(["--out", dir.join("out").to_str().unwrap()])
            .arg(&file),
        "submit",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("nothing was submitted") && err.contains("HOME keeps compiled code"),
        "{err}"
    );
    assert!(!called.exists(), "sbatch was called");
}
