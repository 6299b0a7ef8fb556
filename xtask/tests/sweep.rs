//! `cargo xtask sweep` end to end: real child processes on real PoCL devices.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn clmulti_bin() -> PathBuf {
    // target/debug/deps/sweep-<hash> -> target/debug/clmulti
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("clmulti");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "clmulti"])
            .status()
            .unwrap();
        assert!(
            status.success(),
            "building clmulti for the sweep tests failed"
        );
    }
    bin
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clmulti-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn xtask(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("sweep")
        .args(args)
        .arg("--bin")
        .arg(clmulti_bin())
        .env("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd")
        .env("POCL_MEMORY_LIMIT", "2")
        .env_remove("POCL_DEVICES");
    cmd
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn results(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every JSONL line parses"))
        .collect()
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
fn a_crashing_run_is_recorded_with_its_signal_and_the_sweep_goes_on() {
    let dir = temp_dir("crash");
    // Under a 1 GiB address-space limit PoCL aborts (SIGABRT) instead of returning an error.
    std::fs::write(
        dir.join("abort.toml"),
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"64MiB\"\ncount = 100\nstrategy = \"fill\"\n[limits]\nas = \"1GiB\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("ok.toml"),
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 50\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = xtask(&[dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let records = results(&out_dir);
    assert_eq!(records.len(), 2, "{}", stderr(&out));
    let crashed = &records[0]["report"];
    assert_eq!(crashed["stop"]["kind"], "crashed", "{}", crashed["stop"]);
    assert_eq!(crashed["stop"]["signal_name"], "SIGABRT");
    assert_eq!(records[0]["signal"], 6);
    assert_eq!(records[1]["report"]["stop"]["kind"], "completed");
    assert_eq!(records[1]["report"]["buffers"], 50);
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("crashed: SIGABRT"), "{md}");
}

#[test]
fn a_killed_sweep_resumes_to_the_same_results() {
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
    let expected: Vec<String> = results(&whole)
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(expected.len(), 6);

    // Kill a second sweep once two runs are on disk, then resume it.
    let part = dir.join("part");
    let mut child = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        part.to_str().unwrap(),
    ])
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let lines =
            std::fs::read_to_string(part.join("results.jsonl")).map_or(0, |t| t.lines().count());
        if lines >= 2 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = results(&part).len();
    assert!((2..6).contains(&partial), "killed after {partial} runs");

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
    let mut got: Vec<String> = results(&part)
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_owned())
        .collect();
    let mut want = expected.clone();
    got.sort();
    want.sort();
    assert_eq!(
        got, want,
        "resumed sweep has exactly the uninterrupted sweep's runs"
    );
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

    // SVG and HTML: well-formed XML.
    let svgs: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    assert!(svgs.len() >= 2, "{svgs:?}");
    for svg in &svgs {
        let text = std::fs::read_to_string(svg).unwrap();
        let mut reader = quick_xml::Reader::from_str(&text);
        let mut elements = 0;
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(quick_xml::events::Event::Start(_) | quick_xml::events::Event::Empty(_)) => {
                    elements += 1
                }
                Ok(_) => {}
                Err(e) => panic!("{} is not well-formed: {e}", svg.display()),
            }
        }
        assert!(
            elements > 20,
            "{} has only {elements} elements",
            svg.display()
        );
    }
    let html = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    for svg in &svgs {
        assert!(html.contains(&format!(
            "src=\"{}\"",
            svg.file_name().unwrap().to_string_lossy()
        )));
    }

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
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "merge",
            dir.join("shard1").to_str().unwrap(),
            dir.join("shard2").to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut merged_keys: Vec<String> = results(&merged)
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_owned())
        .collect();
    let mut whole_keys: Vec<String> = records
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_owned())
        .collect();
    merged_keys.sort();
    whole_keys.sort();
    assert_eq!(merged_keys, whole_keys);
    assert!(merged.join("index.html").exists());

    // Comparing a run with its earlier self: same buffers, nothing flagged.
    let out = xtask(&[
        grid.to_str().unwrap(),
        "--shard",
        "1/2",
        "--out",
        dir.join("again").to_str().unwrap(),
        "--compare",
        out_dir.join("results.jsonl").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| grid[allocation.strategy=create,context.mode=shared] | buffers reached | 3000.00 | 3000.00 | +0.0% |  |"), "{text}");
}
