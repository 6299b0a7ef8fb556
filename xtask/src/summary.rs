//! Summaries of a sweep, rewritten after every run so a crash keeps them:
//! Markdown, CSV, SVG plots and an `index.html` that opens without a server.
//! Each format is an [`Exporter`].

use crate::records::SweepRecord;
use clmulti_alloc::{Resource, StopReason};
use plotters::prelude::*;
use std::path::Path;

/// One table row: what a reader compares across runs.
#[derive(Debug, Clone)]
pub struct Row {
    pub run: String,
    pub group: String,
    pub devices: String,
    pub device_count: usize,
    pub context_mode: String,
    pub strategy: String,
    pub buffers: u64,
    pub gib: f64,
    pub stop: String,
    pub rss_per_buffer: Option<f64>,
    pub fds_per_buffer: Option<f64>,
    pub maps_per_buffer: Option<f64>,
    pub device_mem_per_buffer: Option<f64>,
    pub predicted: String,
}

fn cost(record: &SweepRecord, wanted: impl Fn(Resource) -> bool) -> Option<f64> {
    let matching: Vec<f64> = record
        .report
        .costs
        .iter()
        .filter(|c| wanted(c.resource))
        .map(|c| c.per_buffer)
        .collect();
    (!matching.is_empty()).then(|| matching.iter().sum())
}

/// The group a run belongs to: its scenario file's stem.
pub fn group_of(record: &SweepRecord) -> String {
    Path::new(&record.file)
        .file_stem()
        .map_or_else(|| record.file.clone(), |s| s.to_string_lossy().into_owned())
}

impl Row {
    pub fn from(record: &SweepRecord) -> Self {
        let r = &record.report;
        let s = &r.scenario;
        let device_names: Vec<&str> = r.devices.iter().map(|d| d.display_name()).collect();
        let stop = match &r.stop {
            StopReason::Failed { error, call, .. } => {
                format!("failed: {error} in {}", call.c_name())
            }
            other => other.summary(),
        };
        Row {
            run: r.run_name.clone(),
            group: group_of(record),
            devices: if device_names.is_empty() {
                "-".into()
            } else {
                format!("{} x {}", device_names.len(), dedup(&device_names))
            },
            device_count: r.devices.len(),
            context_mode: s["context_mode"].as_str().unwrap_or("?").to_owned(),
            strategy: s["allocation"]["strategy"]
                .as_str()
                .unwrap_or("?")
                .to_owned(),
            buffers: r.buffers,
            gib: r.bytes_requested as f64 / (1u64 << 30) as f64,
            stop,
            rss_per_buffer: cost(record, |c| c == Resource::HostRss),
            fds_per_buffer: cost(record, |c| c == Resource::OpenFds),
            maps_per_buffer: cost(record, |c| c == Resource::MemoryMaps),
            device_mem_per_buffer: cost(record, |c| matches!(c, Resource::DeviceMemory(_))),
            predicted: r.prediction.as_ref().map_or_else(
                || "-".into(),
                |p| format!("{} at ~{}", p.resource.label(), p.count),
            ),
        }
    }
}

fn dedup(names: &[&str]) -> String {
    let mut unique: Vec<&str> = names.to_vec();
    unique.dedup();
    unique.join(" + ")
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// One output format of the summary.
pub trait Exporter {
    /// The file it writes, relative to the results folder.
    fn file_name(&self) -> String;
    /// Its content.
    fn render(&self, rows: &[Row], records: &[SweepRecord]) -> Result<String, String>;
}

const HEADERS: [&str; 14] = [
    "run",
    "group",
    "devices",
    "context mode",
    "strategy",
    "buffers reached",
    "GiB requested",
    "stop reason",
    "host RSS B/buffer",
    "fds/buffer",
    "maps/buffer",
    "device mem B/buffer",
    "predicted limit",
    "device count",
];

fn cells(row: &Row) -> [String; 14] {
    [
        row.run.clone(),
        row.group.clone(),
        row.devices.clone(),
        row.context_mode.clone(),
        row.strategy.clone(),
        row.buffers.to_string(),
        format!("{:.2}", row.gib),
        row.stop.clone(),
        opt(row.rss_per_buffer, 0),
        opt(row.fds_per_buffer, 3),
        opt(row.maps_per_buffer, 3),
        opt(row.device_mem_per_buffer, 0),
        row.predicted.clone(),
        row.device_count.to_string(),
    ]
}

/// `summary.md`
pub struct Markdown;

impl Exporter for Markdown {
    fn file_name(&self) -> String {
        "summary.md".into()
    }

    fn render(&self, rows: &[Row], _: &[SweepRecord]) -> Result<String, String> {
        let escape = |s: &str| s.replace('|', "\\|");
        let mut out = String::from("| ");
        out.push_str(&HEADERS.join(" | "));
        out.push_str(" |\n|");
        out.push_str(&"---|".repeat(HEADERS.len()));
        out.push('\n');
        for row in rows {
            let cells: Vec<String> = cells(row).iter().map(|c| escape(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        Ok(out)
    }
}

/// `summary.csv` (RFC 4180 quoting).
pub struct Csv;

impl Exporter for Csv {
    fn file_name(&self) -> String {
        "summary.csv".into()
    }

    fn render(&self, rows: &[Row], _: &[SweepRecord]) -> Result<String, String> {
        let quote = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_owned()
            }
        };
        let mut out = HEADERS
            .iter()
            .map(|h| quote(h))
            .collect::<Vec<_>>()
            .join(",");
        out.push('\n');
        for row in rows {
            out.push_str(
                &cells(row)
                    .iter()
                    .map(|c| quote(c))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
        }
        Ok(out)
    }
}

/// `group-<name>.svg`: each resource against allocations, a line per run of the group.
pub struct GroupPlot {
    pub group: String,
}

/// A file-name-safe version of a group name.
pub fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

type Reading = fn(&clmulti_alloc::Sample) -> Option<f64>;

const PLOTTED: [(&str, &str, Reading); 5] = [
    ("host RSS", "MiB", |s| {
        Some(s.host.rss_bytes as f64 / 1048576.0)
    }),
    ("virtual size", "GiB", |s| {
        Some(s.host.virtual_bytes as f64 / 1073741824.0)
    }),
    ("open fds", "count", |s| Some(s.host.open_fds as f64)),
    ("memory maps", "count", |s| Some(s.host.memory_maps as f64)),
    ("device memory, all devices", "GiB", |s| {
        let known: Vec<u64> = s.device_used_bytes.iter().flatten().copied().collect();
        (!known.is_empty()).then(|| known.iter().sum::<u64>() as f64 / 1073741824.0)
    }),
];

fn plot_err<E: std::fmt::Debug>(e: E) -> String {
    format!("plotting: {e:?}")
}

impl Exporter for GroupPlot {
    fn file_name(&self) -> String {
        format!("group-{}.svg", slug(&self.group))
    }

    fn render(&self, _: &[Row], records: &[SweepRecord]) -> Result<String, String> {
        let runs: Vec<&SweepRecord> = records
            .iter()
            .filter(|r| group_of(r) == self.group)
            .collect();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (1500, 900)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let root = root
                .titled(
                    &format!("{}: resources against allocations", self.group),
                    ("sans-serif", 22),
                )
                .map_err(plot_err)?;
            let areas = root.split_evenly((2, 3));
            for (area, (label, unit, read)) in areas.iter().zip(PLOTTED) {
                let series: Vec<(String, Vec<(f64, f64)>)> = runs
                    .iter()
                    .map(|r| {
                        let points = r
                            .report
                            .samples
                            .iter()
                            .filter_map(|s| Some((s.allocations as f64, read(s)?)))
                            .collect();
                        (r.report.run_name.clone(), points)
                    })
                    .collect();
                let all = series.iter().flat_map(|(_, p)| p.iter());
                let (mut x_max, mut y_min, mut y_max) = (1f64, f64::MAX, f64::MIN);
                for (x, y) in all {
                    x_max = x_max.max(*x);
                    y_min = y_min.min(*y);
                    y_max = y_max.max(*y);
                }
                if y_min > y_max {
                    (y_min, y_max) = (0.0, 1.0);
                }
                let pad = ((y_max - y_min) * 0.05).max(y_max.abs() * 0.01).max(1e-6);
                let mut chart = ChartBuilder::on(area)
                    .caption(format!("{label} ({unit})"), ("sans-serif", 16))
                    .margin(12)
                    .x_label_area_size(32)
                    .y_label_area_size(64)
                    .build_cartesian_2d(0f64..x_max, (y_min - pad)..(y_max + pad))
                    .map_err(plot_err)?;
                chart
                    .configure_mesh()
                    .x_desc("allocations")
                    .x_labels(6)
                    .x_label_formatter(&|x| format!("{x:.0}"))
                    .draw()
                    .map_err(plot_err)?;
                for (i, (name, points)) in series.into_iter().enumerate() {
                    if points.is_empty() {
                        continue;
                    }
                    let color = Palette99::pick(i).to_rgba();
                    chart
                        .draw_series(LineSeries::new(points, color.stroke_width(2)))
                        .map_err(plot_err)?
                        .label(name)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                        });
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .label_font(("sans-serif", 11))
                    .draw()
                    .map_err(plot_err)?;
            }
            root.present().map_err(plot_err)?;
        }
        Ok(svg)
    }
}

/// `buffers-by-context-mode.svg`: buffers reached per run, coloured by context mode.
pub struct BuffersPlot;

impl Exporter for BuffersPlot {
    fn file_name(&self) -> String {
        "buffers-by-context-mode.svg".into()
    }

    fn render(&self, rows: &[Row], _: &[SweepRecord]) -> Result<String, String> {
        let mut svg = String::new();
        {
            let height = 160 + 28 * rows.len().max(1) as u32;
            let root = SVGBackend::with_string(&mut svg, (1300, height)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let max = rows.iter().map(|r| r.buffers).max().unwrap_or(1).max(1) as f64 * 1.1;
            let n = rows.len().max(1) as i32;
            // Row 0 at the top: segment n-1-i holds row i.
            let mut chart = ChartBuilder::on(&root)
                .caption("buffers reached, by context mode", ("sans-serif", 20))
                .margin(16)
                .x_label_area_size(36)
                .y_label_area_size(560)
                .build_cartesian_2d(0f64..max, (0..n).into_segmented())
                .map_err(plot_err)?;
            let labels: Vec<String> = rows
                .iter()
                .map(|r| format!("{} [{}]", r.run, r.devices))
                .collect();
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(n as usize)
                .y_label_formatter(&|y| match y {
                    SegmentValue::CenterOf(i) | SegmentValue::Exact(i) if (0..n).contains(i) => {
                        labels
                            .get((n - 1 - *i) as usize)
                            .cloned()
                            .unwrap_or_default()
                    }
                    SegmentValue::CenterOf(_) | SegmentValue::Exact(_) => String::new(),
                    SegmentValue::Last => String::new(),
                })
                .x_labels(6)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .x_desc("buffers")
                .draw()
                .map_err(plot_err)?;
            let modes = ["shared", "per-device"];
            for (m, mode) in modes.iter().enumerate() {
                let color = Palette99::pick(m).to_rgba();
                chart
                    .draw_series(
                        rows.iter()
                            .enumerate()
                            .filter(|(_, r)| r.context_mode == *mode)
                            .map(|(i, r)| {
                                let segment = n - 1 - i as i32;
                                let mut bar = Rectangle::new(
                                    [
                                        (0.0, SegmentValue::Exact(segment)),
                                        (r.buffers as f64, SegmentValue::Exact(segment + 1)),
                                    ],
                                    color.filled(),
                                );
                                bar.set_margin(3, 3, 0, 0);
                                bar
                            }),
                    )
                    .map_err(plot_err)?
                    .label(*mode)
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                    });
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .border_style(BLACK)
                .background_style(WHITE)
                .draw()
                .map_err(plot_err)?;
            root.present().map_err(plot_err)?;
        }
        Ok(svg)
    }
}

/// `index.html`: the table and every plot, self-contained apart from the SVG files
/// beside it (relative links work from `file://`).
pub struct Html {
    pub plots: Vec<String>,
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Exporter for Html {
    fn file_name(&self) -> String {
        "index.html".into()
    }

    fn render(&self, rows: &[Row], records: &[SweepRecord]) -> Result<String, String> {
        let mut out = String::from(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>clmulti sweep</title>\n<style>\
             body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}\
             td,th{border:1px solid #bbb;padding:3px 6px;text-align:left}th{background:#eee}\
             img{max-width:100%;border:1px solid #ddd;margin:1em 0}</style></head><body>\n<h1>clmulti sweep</h1>\n",
        );
        out.push_str(&format!("<p>{} run(s). Files: <a href=\"results.jsonl\">results.jsonl</a>, <a href=\"summary.csv\">summary.csv</a>, <a href=\"summary.md\">summary.md</a>.</p>\n", records.len()));
        out.push_str("<table>\n<tr>");
        for h in HEADERS {
            out.push_str(&format!("<th>{}</th>", html_escape(h)));
        }
        out.push_str("</tr>\n");
        for row in rows {
            out.push_str("<tr>");
            for c in cells(row) {
                out.push_str(&format!("<td>{}</td>", html_escape(&c)));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n<h2>Predictions</h2>\n<ul>\n");
        for r in records {
            if let Some(p) = &r.report.prediction {
                out.push_str(&format!(
                    "<li><b>{}</b>: {}</li>\n",
                    html_escape(&r.report.run_name),
                    html_escape(&p.explanation)
                ));
            }
        }
        out.push_str("</ul>\n<h2>Plots</h2>\n");
        for plot in &self.plots {
            out.push_str(&format!(
                "<img src=\"{}\" alt=\"{}\">\n",
                html_escape(plot),
                html_escape(plot)
            ));
        }
        out.push_str("</body></html>\n");
        Ok(out)
    }
}

/// Writes every summary file, each through a temporary file and a rename. With
/// `only_group`, plots of other groups are left as they are (they did not change).
pub fn write_all(
    dir: &Path,
    records: &[SweepRecord],
    only_group: Option<&str>,
) -> Result<(), String> {
    let rows: Vec<Row> = records.iter().map(Row::from).collect();
    let mut groups: Vec<String> = records.iter().map(group_of).collect();
    groups.sort();
    groups.dedup();
    let mut exporters: Vec<Box<dyn Exporter>> =
        vec![Box::new(Markdown), Box::new(Csv), Box::new(BuffersPlot)];
    let group_plots: Vec<GroupPlot> = groups
        .into_iter()
        .map(|group| GroupPlot { group })
        .collect();
    let mut plots = vec![BuffersPlot.file_name()];
    plots.extend(group_plots.iter().map(Exporter::file_name));
    exporters.extend(
        group_plots
            .into_iter()
            .filter(|g| only_group.is_none_or(|only| only == g.group))
            .map(|g| Box::new(g) as Box<dyn Exporter>),
    );
    exporters.push(Box::new(Html { plots }));
    for exporter in &exporters {
        let name = exporter.file_name();
        let text = exporter.render(&rows, records)?;
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, &text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(&name)).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}
