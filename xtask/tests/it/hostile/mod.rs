//! The sweep's hostile corpus: its own inputs (results, plans, comparisons that are
//! FIFOs, devices or garbage), resumes on a machine whose PoCL memory size drifts,
//! a scenario edited mid-sweep, merges of shards named twice, without plans, retried
//! or duplicated, and options no sweep can take. Every record must stay attributed
//! to the run that made it: its key is the hash of its own scenario and machine.

use crate::common;

#[path = "../../../src/records.rs"]
#[allow(dead_code, unused_imports)]
mod records;

use common::{
    clmulti_bin, ended, results, shared_library, stderr, temp_dir, trust, xtask_bare, HANG,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod loads;

mod merges;

use merges::merge;

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
