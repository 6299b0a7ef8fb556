//! Reading, writing, merging and repairing records.

use super::*;

/// A `results.jsonl` in a fresh folder of its own, removed with the folder when the
/// test ends.
fn temp(name: &str) -> Temp {
    let dir = std::env::temp_dir().join(format!("clmulti-records-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Temp(dir.join("results.jsonl"))
}

struct Temp(PathBuf);

impl std::ops::Deref for Temp {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for Temp {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn a_torn_tail_is_kept_aside_and_cut() {
    let path = temp("torn");
    std::fs::write(&path, "{\"a\":1}\n{\"b\":2}\n{\"c\":").unwrap();
    let repair = repair(&path).unwrap().unwrap();
    assert_eq!(repair.bytes, 5);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"a\":1}\n{\"b\":2}\n"
    );
    assert_eq!(std::fs::read_to_string(&repair.kept_in).unwrap(), "{\"c\":");
    assert!(
        super::repair(&path).unwrap().is_none(),
        "a whole file needs no repair"
    );
}

#[test]
fn a_merge_patch_turns_its_base_into_the_target() {
    let base = serde_json::json!({"name": "g[a=1]", "allocation": {"size": 1, "count": 5}, "env": {"X": "1"}});
    let target =
        serde_json::json!({"name": "g[a=2]", "allocation": {"size": 2, "count": 5}, "env": {}});
    let patch = merge_diff(&base, &target);
    assert_eq!(
        patch,
        serde_json::json!({"name": "g[a=2]", "allocation": {"size": 2}, "env": {"X": null}})
    );
    assert_eq!(merge_patch(base, &patch), target);
}

/// A record as a sweep writes it, for `scenario` (a JSON scenario) of `file`.
fn record(
    key: &str,
    file: &str,
    finished_at: u64,
    scenario: &clmulti_scenario::Scenario,
) -> SweepRecord {
    let mut report = clmulti_explain::Report::new(
        scenario,
        clmulti_explain::StopReason::Completed,
        clmulti_probe::HostLimits::read(),
        None,
    );
    report.buffers = finished_at;
    SweepRecord {
        key: key.into(),
        file: file.into(),
        index: 0,
        machine: "m".into(),
        host: String::new(),
        os: String::new(),
        tool: String::new(),
        finished_at,
        wall_seconds: 0.0,
        exit_code: Some(0),
        signal: None,
        report,
    }
}

#[test]
fn a_scenario_is_written_once_per_file_and_each_run_read_once() {
    let path = temp("bases");
    let runs = clmulti_scenario::load_str(
        &format!(
            "description = \"{}\"\n[grid]\n\"allocation.count\" = [1, 2, 3]\n",
            "d".repeat(10_000)
        ),
        "g.toml",
    )
    .unwrap();
    let mut writer = Writer::open(&path).unwrap();
    for (i, run) in runs.iter().enumerate() {
        writer
            .append(&record(&format!("k{i}"), "g.toml", 10, run))
            .unwrap();
    }
    // A retry of run 1, from a writer that opened the file again (a resume).
    let mut writer = Writer::open(&path).unwrap();
    writer
        .append(&record("k1", "g.toml", 20, &runs[1]))
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.matches(&"d".repeat(10_000)).count(),
        1,
        "the description once"
    );
    let mut all = Vec::new();
    for_each(&path, |r| all.push(r)).unwrap();
    assert_eq!(all.len(), 4);
    for (r, run) in all.iter().zip(runs.iter().chain([&runs[1]])) {
        assert_eq!(
            serde_json::to_value(&r.report.scenario).unwrap(),
            serde_json::to_value(run).unwrap()
        );
    }
    let mut latest = Vec::new();
    for_each_latest(&path, |r| latest.push((r.key, r.finished_at))).unwrap();
    assert_eq!(
        latest,
        [
            ("k0".to_owned(), 10),
            ("k2".to_owned(), 10),
            ("k1".to_owned(), 20)
        ]
    );
}

#[test]
fn a_line_longer_than_a_record_can_be_is_an_error_not_an_allocation() {
    let mut reader = std::io::Cursor::new(vec![b'x'; 1000]);
    let mut line = Vec::new();
    let err = next_line(&mut reader, &mut line, 100).unwrap_err();
    assert!(err.to_string().contains("longer than"), "{err}");
    assert!(line.len() <= 101);
}

#[test]
fn a_file_of_one_torn_line_is_emptied() {
    let path = temp("one");
    std::fs::write(&path, "{\"partial\": tr").unwrap();
    assert_eq!(repair(&path).unwrap().unwrap().bytes, 14);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn a_corrupt_line_carrying_a_runs_key_does_not_hide_its_good_record() {
    let path = temp("corrupt-newer");
    let run = clmulti_scenario::load_str("[allocation]\ncount = 3\n", "c.toml")
        .unwrap()
        .remove(0);
    Writer::open(&path)
        .unwrap()
        .append(&record("k0", "c.toml", 10, &run))
        .unwrap();
    // A newer line with the run's key whose report does not read.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    use std::io::Write as _;
    writeln!(
        file,
        "{{\"key\":\"k0\",\"finished_at\":99999999999,\"file\":\"c.toml\",\"index\":0,\"report\":\"garbage\"}}"
    )
    .unwrap();
    let mut latest = Vec::new();
    for_each_latest(&path, |r| latest.push((r.key, r.finished_at))).unwrap();
    assert_eq!(latest, [("k0".to_owned(), 10)]);
}
