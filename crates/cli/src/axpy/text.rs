//! `clmulti axpy`'s text output: the per-device table, the split, its strategies.

use super::*;

// long: a flat table: the devices' figures, column by column
pub(super) fn table_text(report: &AxpyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "platform {}", report.platform);
    for d in &report.devices {
        let _ = writeln!(out, "device {} {}", d.selector, d.device);
        // Per kernel that ran: the fast choice runs the seed kernel on strided cases.
        let by_kernel: Vec<String> = [clmulti_axpy::KernelRan::Seed, clmulti_axpy::KernelRan::Fast]
            .into_iter()
            .map(|k| (k, d.verified.iter().filter(|v| v.kernel == k).count()))
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{n} by {}", k.name()))
            .collect();
        let _ = writeln!(
            out,
            "  verified {} case(s) against the CPU reference{}",
            d.verified.len(),
            if by_kernel.is_empty() {
                String::new()
            } else {
                format!(": {}", by_kernel.join(", "))
            }
        );
        let mut rows = vec![vec![
            "kernel".to_owned(),
            "n".into(),
            "best GB/s".into(),
            "median GB/s".into(),
            "min/median/max ms".into(),
            "vs copy".into(),
            "clock".into(),
        ]];
        for b in &d.bandwidth {
            for (t, ratio) in [
                (&b.axpy, format!("{:.3}", b.ratio_to_copy)),
                (&b.copy, "1".into()),
            ] {
                rows.push(vec![
                    format!(
                        "{}{}",
                        t.kernel,
                        match (t.kernel.as_str(), b.per_item) {
                            ("axpy_fast", Some(p)) => format!(" ({p} float4/item)"),
                            _ => String::new(),
                        }
                    ),
                    b.n.to_string(),
                    format!("{:.1}", t.gb_per_s_best),
                    format!("{:.1}", t.gb_per_s_median),
                    format!(
                        "{:.3}/{:.3}/{:.3}",
                        t.min_s * 1e3,
                        t.median_s * 1e3,
                        t.max_s * 1e3
                    ),
                    ratio,
                    format!("{:?}", t.clock).to_lowercase(),
                ]);
            }
        }
        if rows.len() > 1 {
            let _ = write!(out, "{}", table(&rows));
        }
        for n in &d.notes {
            let _ = writeln!(out, "  note: {n}");
        }
        for e in &d.errors {
            let _ = writeln!(out, "  error: {e}");
        }
    }
    let _ = match &report.cross_device {
        Some(Cross::Ran(c)) => writeln!(
            out,
            "cross-device (shared context): kernel on device 0 {:.3} ms, migration {:.3} ms on the host clock ({:.3} ms by its event), kernel on device 1 {:.3} ms, verified",
            c.first_kernel_s * 1e3,
            c.migration_wall_s * 1e3,
            c.migration_s * 1e3,
            c.second_kernel_s * 1e3,
        ),
        Some(Cross::Failed { error }) => writeln!(out, "cross-device: error: {error}"),
        // Stopped: `stopped_text` says it was not run.
        None if report.stopped_by.is_some() => Ok(()),
        None => writeln!(out, "cross-device: needs two devices of one platform"),
    };
    out.push_str(&stopped_text(report));
    out
}

/// What a stop left out, when a signal stopped the command.
fn stopped_text(report: &AxpyReport) -> String {
    let mut out = String::new();
    if let Some(signal) = &report.stopped_by {
        let nothing = report
            .devices
            .iter()
            .all(|d| d.verified.is_empty() && d.bandwidth.is_empty())
            && report
                .split
                .as_ref()
                .is_none_or(|s| s.runs.is_empty() && s.scaling.is_empty());
        let _ = writeln!(
            out,
            "stopped by {signal}{}; not run:",
            if nothing {
                " before anything was measured"
            } else {
                ": the figures above are what finished before it"
            }
        );
        for n in &report.not_run {
            let _ = writeln!(out, "  {n}");
        }
    }
    out
}

pub(super) fn split_text(report: &AxpyReport, devices: &[Device]) -> String {
    let mut out = String::new();
    let Some(s) = &report.split else {
        return out;
    };
    let _ = writeln!(out, "platform {}", report.platform);
    let _ = writeln!(
        out,
        "split dAxpy over {} device(s): {}; n = {} in parts of {}; best and median of {} after a warm-up",
        devices.len(),
        devices.iter().map(|d| format!("{} {}", d.info().selector, d.info().display_name())).collect::<Vec<_>>().join(", "),
        s.n,
        s.parts.iter().map(u64::to_string).collect::<Vec<_>>().join(" + "),
        s.repeat
    );
    if s.runs.is_empty() {
        let _ = writeln!(
            out,
            "  no split over all {} device(s) finished",
            devices.len()
        );
    } else {
        out.push_str(&runs_text(s, devices.len()));
    }
    if !s.scaling.is_empty() {
        out.push_str(&scaling_text(s));
    }
    for t in &s.transfers {
        let _ = writeln!(
            out,
            "  transfers ({}): host to devices {:.3} ms, devices to host {:.3} ms{}",
            t.context.name(),
            t.host_to_devices_s * 1e3,
            t.devices_to_host_s * 1e3,
            t.device_to_device_s.map_or(String::new(), |d| format!(
                ", device 0 to device 1 {:.3} ms",
                d * 1e3
            ))
        );
    }
    for n in &s.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out.push_str(&stopped_text(report));
    out
}

/// The runs over every device: their table, their check and how they launched.
fn runs_text(s: &SplitReport, devices: usize) -> String {
    let mut out = String::new();
    let mut header = vec![
        "context".to_owned(),
        "layout".into(),
        "kernel".into(),
        "aggregate GB/s".into(),
        "median".into(),
        "1 device".into(),
        "efficiency".into(),
    ];
    header.extend((0..devices).map(|d| format!("device {d} GB/s")));
    let mut rows = vec![header];
    for r in &s.runs {
        let mut row = vec![
            r.context.name().to_owned(),
            r.layout.name().to_owned(),
            r.kernel.name().to_owned(),
            format!("{:.1}", r.aggregate_gb_per_s_best),
            format!("{:.1}", r.aggregate_gb_per_s_median),
            format!("{:.1}", r.one_device_gb_per_s),
            format!("{:.3}", r.scaling_efficiency),
        ];
        row.extend(r.parts.iter().map(|p| {
            format!(
                "{:.1}{}",
                p.gb_per_s_best,
                if p.clock == clmulti_axpy::Clock::Host {
                    " (host)"
                } else {
                    ""
                }
            )
        }));
        rows.push(row);
    }
    let _ = write!(out, "{}", table(&rows));
    let _ = writeln!(
        out,
        "  every part verified against the CPU reference (largest error {:.2} of the tolerance)",
        s.runs
            .iter()
            .map(|r| r.max_error_ulps / 2.0)
            .fold(0.0, f64::max)
    );
    let ways = s.runs.first().map_or(0, |r| r.strategies.len());
    let mut chosen: Vec<String> = s.runs.iter().map(|r| r.launched_by.describe()).collect();
    chosen.dedup();
    if chosen.len() == 1 {
        let _ = writeln!(
                out,
            "  launched by: {} (the fastest by median of {ways} ways tried in each run; -v shows each) [measured]",
            chosen[0]
        );
    } else {
        let _ = writeln!(
            out,
            "  launched by (the fastest by median of {ways} ways tried; -v shows each) [measured]:"
        );
        for r in &s.runs {
            let _ = writeln!(
                out,
                "    {} {} {}: {}",
                r.context.name(),
                r.layout.name(),
                r.kernel.name(),
                r.launched_by.describe()
            );
        }
    }
    out
}

/// The efficiency per device count (buffers per device; each against the same
/// kernel on device 0 alone).
fn scaling_text(s: &SplitReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  efficiency per device count (buffers per device; each against the same kernel on device 0 alone) [measured]:");
    let mut rows = vec![vec![
        "devices".to_owned(),
        "context".into(),
        "kernel".into(),
        "aggregate GB/s".into(),
        "1 device".into(),
        "efficiency".into(),
    ]];
    let mut all: Vec<&clmulti_axpy::SplitRun> = s
        .scaling
        .iter()
        .chain(
            s.runs
                .iter()
                .filter(|r| r.layout == clmulti_axpy::Layout::Buffers),
        )
        .collect();
    all.sort_by_key(|r| {
        (
            r.context == ContextMode::PerDevice,
            r.kernel.name(),
            r.devices,
        )
    });
    for r in all {
        rows.push(vec![
            r.devices.to_string(),
            r.context.name().to_owned(),
            r.kernel.name().to_owned(),
            format!("{:.1}", r.aggregate_gb_per_s_best),
            format!("{:.1}", r.one_device_gb_per_s),
            format!("{:.3}", r.scaling_efficiency),
        ]);
    }
    for line in table(&rows).lines() {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// `-v`: every launch strategy each split tried, and where its time went (stderr).
pub(super) fn print_strategies(s: &SplitReport) {
    let us = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
    for r in s.runs.iter().chain(&s.scaling) {
        crate::say!(
            "launch strategies, {} device(s), {} {} {} (median of each one's trials; skew, enqueue, flush and detection on the host clock, start lag on the device's; detection inferred from the device's queued-to-end time anchored at the enqueue call):",
            r.devices,
            r.context.name(),
            r.layout.name(),
            r.kernel.name()
        );
        let mut rows = vec![vec![
            "strategy".to_owned(),
            "trials".into(),
            "total us".into(),
            "best us".into(),
            "skew us".into(),
            "enqueue us".into(),
            "flush us".into(),
            "start lag us".into(),
            "detect us".into(),
            "overhead us".into(),
        ]];
        for f in &r.strategies {
            rows.push(vec![
                format!(
                    "{}{}",
                    f.strategy.describe(),
                    if f.strategy == r.launched_by {
                        " (chosen)"
                    } else {
                        ""
                    }
                ),
                f.reps.to_string(),
                format!("{:.1}", f.total_us),
                format!("{:.1}", f.total_us_best),
                format!("{:.1}", f.skew_us),
                format!("{:.1}", f.enqueue_us),
                format!("{:.1}", f.flush_us),
                us(f.start_lag_us),
                us(f.detect_us),
                format!("{:.1}", f.overhead_us),
            ]);
        }
        crate::format::say(format_args!("{}", table(&rows).trim_end()));
    }
}
