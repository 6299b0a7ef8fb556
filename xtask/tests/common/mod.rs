//! Helpers shared by the xtask integration tests (each test binary uses some).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

#[path = "../../../crates/cli/tests/common/native.rs"]
mod native;
#[allow(unused_imports)] // each test binary uses some
pub use native::{abort_after_layer, ended, shared_library, temp_root, HANG};

/// The debug `clmulti` (and its layer), built once per test binary.
pub fn clmulti_bin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_clmulti).clone()
}

fn build_clmulti() -> PathBuf {
    // target/debug/deps/<test>-<hash> -> target/debug/clmulti
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "-p",
            "clmulti",
            "-p",
            "clmulti-layer",
            "-p",
            "clmulti-trace",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(
        status.success(),
        "building clmulti for the sweep tests failed"
    );
    dir.join("clmulti")
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = temp_root().join(format!("clmulti-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn xtask_bare() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    // The default disposition of the signals tests send: a suite started in the
    // background or under nohup inherits SIGINT ignored, which the sweep keeps.
    use std::os::unix::process::CommandExt;
    // SAFETY: signal() is async-signal-safe; between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    // A trust record of the test process's own, never the user's.
    cmd.env("CLMULTI_TRUST_FILE", trust_record())
        .env("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd")
        .env("POCL_MEMORY_LIMIT", "2")
        .env_remove("POCL_DEVICES");
    cmd
}

/// The trust record of this test process (`clmulti trust`), never the user's.
pub fn trust_record() -> PathBuf {
    temp_root().join(format!("clmulti-test-trusted-{}", std::process::id()))
}

/// `clmulti trust FILE` in this test process's record, as a user does who has read
/// the file.
pub fn trust(file: &Path) {
    let out = Command::new(clmulti_bin())
        .env("CLMULTI_TRUST_FILE", trust_record())
        .arg("trust")
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The record lines of a folder's results.jsonl, as JSON (scenario base lines, which
/// records name instead of embedding their scenario, left out).
pub fn results(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("every JSONL line parses"))
        .filter(|r| r.get("key").is_some())
        .collect()
}

/// The first `n` records of a results file's text, with the scenario bases they need.
pub fn first_records(text: &str, n: usize) -> String {
    let mut kept = String::new();
    let mut records = 0;
    for line in text.lines() {
        let is_record = line.contains("\"key\":");
        if is_record {
            if records == n {
                break;
            }
            records += 1;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

pub fn keys(dir: &Path) -> Vec<String> {
    let mut keys: Vec<String> = results(dir)
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_owned())
        .collect();
    keys.sort();
    keys
}

/// Waits until `file` holds `records` records (scenario base lines not counted).
pub fn wait_for_lines(file: &Path, records: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if std::fs::read_to_string(file).map_or(0, |t| record_lines(&t)) >= records {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("{} never reached {records} records", file.display());
}

/// Whole record lines in a results file's text.
pub fn record_lines(text: &str) -> usize {
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n') && l.contains("\"key\":"))
        .count()
}

/// Processes whose command line mentions `needle`.
pub fn processes_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

/// Loads a page in Debian's headless chromium and returns the DOM after load.
pub fn browser_dom(page: &Path) -> String {
    let chromium = Path::new("/usr/bin/chromium");
    assert!(
        chromium.exists(),
        "chromium is not installed: run scripts/setup-tests.sh"
    );
    let profile = temp_dir(&format!("chromium-{}", page.display().to_string().len()));
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a reader sees of a page: the DOM without scripts, styles and tags.
pub fn visible_text(dom: &str) -> String {
    let mut text = dom.to_owned();
    for element in ["script", "style"] {
        while let Some(start) = text.find(&format!("<{element}")) {
            let end = text[start..]
                .find(&format!("</{element}>"))
                .map_or(text.len(), |e| start + e + element.len() + 3);
            text.replace_range(start..end, " ");
        }
    }
    let mut out = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    // Whitespace as a reader sees it: one space.
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}
