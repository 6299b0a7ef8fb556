//! `clmulti bench` on a real PoCL device: short arms, the statistics' shape.

use crate::common;
use common::*;

#[test]
fn the_bench_gives_a_median_an_interval_and_one_of_three_verdicts() {
    let out = run(clmulti(1).args([
        "bench",
        "--device",
        "0:0",
        "--count",
        "200",
        "--size",
        "4KiB",
        "--rounds",
        "6",
        "--min-seconds",
        "0.005",
        "--format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema_version"], 3);
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 6);
    for r in rounds {
        assert!(r["plain"].as_f64().unwrap() > 0.0 && r["engine"].as_f64().unwrap() > 0.0);
        assert!(r["plain_seconds"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Calibration starts at --count and only raises it.
    let calibration = report["calibration"].as_array().unwrap();
    assert_eq!(calibration[0][0], 200);
    assert!(report["count"].as_u64().unwrap() >= 200);
    // Six rounds: the extremes are the 95% interval (96.9%), around the median.
    let (low, high) = (
        report["ratio_interval"][0].as_f64().unwrap(),
        report["ratio_interval"][1].as_f64().unwrap(),
    );
    let median = report["ratio_median"].as_f64().unwrap();
    assert_eq!(low, report["ratio_min"].as_f64().unwrap());
    assert_eq!(high, report["ratio_max"].as_f64().unwrap());
    assert!(low <= median && median <= high);
    let target = report["target"].as_f64().unwrap();
    let expected = if low >= target {
        "met"
    } else if high < target {
        "not_met"
    } else {
        "not_resolved"
    };
    assert_eq!(report["verdict"], expected, "{report}");
}

#[test]
fn jobs_play_rounds_at_once_and_report_them_in_order() {
    let out = run(clmulti(1).args([
        "-v",
        "bench",
        "--device",
        "0:0",
        "--count",
        "100",
        "--size",
        "4KiB",
        "--rounds",
        "6",
        "--jobs",
        "3",
        "--min-seconds",
        "0.001",
        "--format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(
        (
            report["jobs"].as_u64(),
            report["rounds"].as_array().map(Vec::len)
        ),
        (Some(3), Some(6))
    );
    assert!(report["rounds_seconds"].as_f64().unwrap() > 0.0, "{report}");
    // Arms overlap: a child starts before the one before it has exited.
    let (mut in_flight, mut most) = (0i32, 0);
    for line in stderr(&out).lines() {
        if line.starts_with("bench: child: ") {
            in_flight += 1;
            most = most.max(in_flight);
        } else if line.contains(" arm exited with ") {
            in_flight -= 1;
        }
    }
    assert!(most >= 2, "arms never overlapped:\n{}", stderr(&out));
    // Calibration ran alone, before the rounds.
    assert!(
        stderr(&out).contains("3 rounds at a time"),
        "{}",
        stderr(&out)
    );
    // No more at a time than there are rounds: 2, not 5.
    let out = run(clmulti(1).args([
        "bench",
        "--device",
        "0:0",
        "--count",
        "100",
        "--size",
        "4KiB",
        "--rounds",
        "2",
        "--jobs",
        "5",
        "--min-seconds",
        "0.001",
        "--format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["jobs"], 2);
}

#[test]
fn five_rounds_give_no_interval_and_no_verdict() {
    let out = run(clmulti(1).args([
        "bench",
        "--device",
        "0:0",
        "--count",
        "100",
        "--size",
        "4KiB",
        "--rounds",
        "5",
        "--min-seconds",
        "0.001",
        "--require",
        "0.001",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no 95% interval from 5 rounds") && text.contains("not resolved"),
        "{text}"
    );
    // Far above a target of 0.001, a few more rounds would resolve it (6 at least: an
    // interval takes 6; more where a round stood out), and the wait is said at this
    // run's pace.
    let rounds: u32 = text
        .split("to resolve it: about ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no rounds to resolve it: {text}"));
    assert!(
        rounds >= 6
            && text.contains(&format!("(--rounds {rounds})"))
            && text.contains("at this run's pace (")
            && text.contains("s a round, --jobs 1)"),
        "{text}"
    );
}

#[test]
fn a_stopped_bench_reports_the_rounds_that_finished() {
    // SIGTERM to the process (`timeout`, a scheduler) or SIGINT to the group (Ctrl-C),
    // once two rounds of 1000 have finished: those two are reported, exit 128 + signal.
    for (signal, code, to_group, format) in [
        (libc::SIGTERM, 143, false, "json"),
        (libc::SIGINT, 130, true, "text"),
    ] {
        let started = start_until(
            clmulti(1)
                .args([
                    "-v", "bench", "--device", "0:0", "--count", "200", "--size", "4KiB",
                ])
                .args([
                    "--rounds",
                    "1000",
                    "--min-seconds",
                    "0.005",
                    "--format",
                    format,
                ]),
            "bench: round 2 of 1000",
        );
        let pid = started.pid();
        // SAFETY: signalling the process (group) this test started.
        unsafe { libc::kill(if to_group { -pid } else { pid }, signal) };
        let out = started.finish();
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        if format == "json" {
            let report = json(&out);
            assert_eq!(report["schema_version"], 3);
            assert_eq!(report["stopped_by"], "SIGTERM");
            assert_eq!(report["rounds_asked"], 1000);
            let rounds = report["rounds"].as_array().unwrap().len();
            assert!((2..1000).contains(&rounds), "{rounds} rounds");
            // The verdict of what ran: none without an interval (under 6 rounds).
            let verdict = report["verdict"].as_str().unwrap();
            assert!(
                ["met", "not_met", "not_resolved"].contains(&verdict)
                    && (rounds >= 6 || verdict == "not_resolved"),
                "{report}"
            );
        } else {
            assert!(stdout.contains("stopped by SIGINT after "), "{stdout}");
            assert!(stdout.contains(" of 1000 rounds"), "{stdout}");
            assert!(stdout.contains("verdict [measured]"), "{stdout}");
        }
    }
}
