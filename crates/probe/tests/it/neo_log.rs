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

#[test]
fn detailed_lines_give_pool_and_root_device_and_count_once_per_allocation() {
    let log = AllocationLog::parse(&fixture("26.27-2dev-shared-3buffers-detailed.stdout"));
    assert_eq!(counts(&log), [("BUFFER", 6), ("TAG_BUFFER", 20)]);
    let detailed: Vec<(&str, Option<&str>, Option<u32>, u64)> = log
        .detailed
        .iter()
        .map(|(k, n)| {
            (
                k.allocation_type.as_str(),
                k.pool.as_deref(),
                k.root_device,
                *n,
            )
        })
        .collect();
    assert_eq!(
        detailed,
        [
            ("BUFFER", Some("LocalMemory"), Some(0), 3),
            ("BUFFER", Some("LocalMemory"), Some(1), 3),
            ("TAG_BUFFER", Some("System4KBPages"), Some(0), 10),
            ("TAG_BUFFER", Some("System4KBPages"), Some(1), 10),
        ]
    );
    // Each allocation printed in both forms counts once by type.
    let none = AllocationLog::default();
    let per = AllocationLog::per_buffer(&none, 0, &log, 3).unwrap();
    assert_eq!(per.by_type["BUFFER"], 2.0);
    assert_eq!(per.by_root_device["0"], 13.0 / 3.0);
    assert_eq!(per.by_pool["LocalMemory"], 2.0);
    // The unflushed last detailed line came out after the report line, which is intact.
    let text = fixture("26.27-2dev-shared-3buffers-detailed.stdout");
    let lines: Vec<&str> = text.lines().collect();
    let report = lines.iter().position(|l| l.starts_with('{')).unwrap();
    assert!(
        lines[report + 1].contains("Type: BUFFER"),
        "{}",
        lines[report + 1]
    );
    let json: serde_json::Value = serde_json::from_str(lines[report]).unwrap();
    assert_eq!(json["buffers"], 3);
}
