use super::*;
use clmulti_explain::testing::run;
use clmulti_explain::Resource;
use clmulti_scenario::ContextMode;

fn record(report: clmulti_explain::Report, file: &str) -> SweepRecord {
    let mut report = report;
    report.scenario.file = file.to_owned();
    SweepRecord {
        key: format!("{file}:{}", report.run_name),
        file: file.to_owned(),
        index: 0,
        machine: String::new(),
        host: String::new(),
        os: String::new(),
        tool: String::new(),
        finished_at: 0,
        wall_seconds: 0.0,
        exit_code: Some(0),
        signal: None,
        report,
    }
}

/// A run named with markup and a right-to-left override reads as written on
/// every page: no tag, no emphasis, no reordered text.
#[test]
fn names_with_markup_and_bidi_controls_are_shown_not_obeyed() {
    let dir = std::env::temp_dir().join(format!("clmulti-names-{}", std::process::id()));
    let mut summary = Summary::new(&dir);
    let mut report = run(2, ContextMode::Shared).completed(100);
    report.run_name = "<img src=x>*bold* [a](b) \u{202e}fdp.exe".into();
    summary.add(record(report, "evil.toml"));
    let (view, _) = summary.view().unwrap();
    let md = tables::Markdown.render(&view).unwrap();
    let html = html::Html.render(&view).unwrap();
    for page in [&md, &html] {
        assert!(!page.contains('\u{202e}'), "{page}");
        assert!(
            page.contains(r"\<U+202E\>") || page.contains("&lt;U+202E&gt;"),
            "{page}"
        );
        assert!(!page.contains("<img src=x>"), "{page}");
    }
    assert!(md.contains(r"\<img src=x\>\*bold\* \[a\](b)"), "{md}");
}

/// The Machine line and the CSV's host column name the platform and devices the
/// runs used, from their own reports: a sweep of NEO's emulated devices, started
/// where `clmulti devices` (without the runs' [env]) saw PoCL, names NEO's.
#[test]
fn a_reading_left_out_of_some_samples_makes_a_series_of_points_not_a_line() {
    let mut report = run(2, ContextMode::Shared).completed(100);
    let mut middle = report.samples[0].clone();
    middle.allocations = 50;
    report.samples.insert(1, middle);
    let last = report.samples.len() - 1;
    for (i, s) in report.samples.iter_mut().enumerate() {
        s.host.memory_maps = (i == 0 || i == last).then_some(100 + i as u64);
        s.host.open_fds = 5;
    }
    let view = RunView::from(&record(report, "seed.toml"));
    let series = |r: Resource| view.series.iter().find(|s| s.resource == r);
    let maps = series(Resource::MemoryMaps).expect("a maps series");
    assert!(!maps.continuous);
    assert_eq!(maps.points.len(), 2);
    assert!(series(Resource::OpenFds).expect("an fds series").continuous);
}

#[test]
fn the_machine_line_names_the_devices_the_runs_used() {
    let dir = std::env::temp_dir().join(format!("clmulti-machine-{}", std::process::id()));
    let mut summary = Summary::new(&dir);
    let neo = |devices: usize, host: &str| {
        let mut report = run(devices, ContextMode::Shared).completed(100);
        report.run_name = format!("{host}-{devices}");
        report.platform = "Intel(R) OpenCL HD Graphics".into();
        for d in &mut report.devices {
            d.name = clmulti_probe::Queried::Value("Intel(R) Graphics [0x0000]".into());
        }
        let mut record = record(report, "seed.toml");
        record.host = format!("{host}: pthread-haswell-AMD EPYC (Portable Computing Language)");
        record
    };
    summary.add(neo(1, "vm"));
    summary.add(neo(2, "vm"));
    // A run that reached no device adds nothing but its host.
    summary.add(neo(0, "vm"));
    summary.add(neo(0, "node2"));
    let (view, _) = summary.view().unwrap();
    assert_eq!(
        html::header_lines(&view)[0],
        "**Machine:** node2; vm: Intel(R) Graphics [0x0000] (Intel(R) OpenCL HD Graphics)"
    );
    let csv = tables::Csv.render(&view).unwrap();
    let hosts: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap())
        .collect();
    assert_eq!(
        hosts,
        [
            "vm: Intel(R) Graphics [0x0000] (Intel(R) OpenCL HD Graphics)",
            "vm: Intel(R) Graphics [0x0000] (Intel(R) OpenCL HD Graphics)",
            "vm",
            "node2"
        ],
        "{csv}"
    );
}

/// The diagnosis's wording the summary rewrites: if it changed, a page with a
/// failed run outside the matrix would say "no run failed" again.
#[test]
fn a_verdict_never_says_no_run_failed_over_a_failed_run_it_did_not_compare() {
    let dir = std::env::temp_dir().join(format!("clmulti-cover-{}", std::process::id()));
    let mut summary = Summary::new(&dir);
    summary.add(record(
        run(1, ContextMode::Shared).completed(10000),
        "seed-1gpu.toml",
    ));
    summary.add(record(
        run(2, ContextMode::Shared).completed(10000),
        "seed-2gpu-shared.toml",
    ));
    let whole = summary.verdicts(None);
    assert!(
        whole[0].1.verdict.iter().any(|s| s.text == NO_RUN_FAILED),
        "{:?}",
        whole[0].1.verdict
    );
    let mut failing = run(2, ContextMode::Shared).failed_at(300);
    failing.run_name = "big-buffers".into();
    failing.scenario.allocation.size_bytes = 1 << 30;
    summary.add(record(failing, "big.toml"));
    let verdicts = summary.verdicts(None);
    let text: Vec<String> = verdicts[0]
        .1
        .verdict
        .iter()
        .map(|s| s.to_string())
        .collect();
    let text = text.join("\n");
    assert!(!text.contains(NO_RUN_FAILED), "{text}");
    assert!(
        text.contains("this verdict compares 2 of the 3 runs on this page"),
        "{text}"
    );
    assert!(
        text.contains("not compared, and did not complete: big-buffers: FAILED after 300 buffers"),
        "{text}"
    );
}
