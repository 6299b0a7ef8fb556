//! NEO's allocation log, parsed from real output (tests/fixtures/neo/README.md says how
//! each file was produced).

use clmulti_probe::neo::AllocationLog;
use std::path::Path;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/neo")
            .join(name),
    )
    .unwrap()
}

fn counts(log: &AllocationLog) -> Vec<(&str, u64)> {
    log.created.iter().map(|(k, v)| (k.as_str(), *v)).collect()
}

#[test]
fn the_release_log_counts_types_and_leaves_the_report_line_alone() {
    let one = AllocationLog::parse(&fixture("22.43-1dev-3buffers.stdout"));
    let shared = AllocationLog::parse(&fixture("22.43-2dev-shared-3buffers.stdout"));
    let per_device = AllocationLog::parse(&fixture("22.43-2dev-per-device-3buffers.stdout"));
    // Three buffers: two lines each per root device of the buffer's context.
    assert_eq!(counts(&one), [("BUFFER", 6), ("TAG_BUFFER", 6)]);
    assert_eq!(
        counts(&shared),
        [("BUFFER", 6), ("BUFFER_HOST_MEMORY", 6), ("TAG_BUFFER", 24)]
    );
    assert_eq!(counts(&per_device), [("BUFFER", 6), ("TAG_BUFFER", 24)]);
    for log in [&one, &shared, &per_device] {
        // The report line is the one other line; release builds print no detailed line.
        assert_eq!(log.other_lines, 1);
        assert!(log.detailed.is_empty());
    }
    // The report is intact: NEO flushes each of its lines.
    let text = fixture("22.43-2dev-shared-3buffers.stdout");
    let report = text.lines().find(|l| l.starts_with('{')).unwrap();
    let json: serde_json::Value = serde_json::from_str(report).unwrap();
    assert_eq!(json["buffers"], 3);
}
