//! The plots: buffers reached per run (coloured by outcome), each group's resources
//! against allocations (a line per run, or median and range when a group has many),
//! and per-buffer cost against device count for grids over `devices.count`.

use super::model::RunView;
use clmulti_explain::{Resource, StopKind, Unit};
use clmulti_scenario::{format_bytes, format_count, format_size};
use plotters::prelude::*;
use std::collections::BTreeMap;

/// What a plot shows, as a table: the page puts it beside the plot, for readers who
/// cannot see the picture and for those who want the figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotData {
    /// What the table holds.
    pub title: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows of cells, as people read them.
    pub rows: Vec<Vec<String>>,
}

/// A plot: its SVG and its data.
#[derive(Debug, Clone)]
pub struct Plot {
    pub svg: String,
    pub data: Vec<PlotData>,
}

/// A tick label on a count axis: whole values only, so that ticks plotters puts at
/// halves never read as a repeated integer ("0 0 1 1 2").
fn count_tick(value: f64) -> String {
    if (value - value.round()).abs() < 1e-6 {
        format_count(value.round())
    } else {
        String::new()
    }
}

/// Text cut to what fits `width` pixels at `font` px sans-serif (about 0.55 em a
/// character), with an ellipsis when cut: no caption runs past its panel.
fn fit(text: &str, width: u32, font: u32) -> String {
    let room = ((f64::from(width) / (f64::from(font) * 0.55)) as usize).max(4);
    if text.chars().count() <= room {
        return text.to_owned();
    }
    let kept: String = text.chars().take(room - 1).collect();
    format!("{}…", kept.trim_end())
}

/// Beyond this many runs a group's plot shows median and range per context mode.
pub const LINES_PER_PLOT: usize = 12;
/// Beyond this many runs the buffers plot counts outcomes per group.
pub const BARS_PER_PLOT: usize = 60;

fn plot_err<E: std::fmt::Debug>(e: E) -> String {
    format!("plotting: {e:?}")
}

/// The colour of an outcome, the same in every plot and table.
pub fn outcome_color(outcome: StopKind) -> RGBColor {
    match outcome {
        StopKind::Completed => RGBColor(46, 125, 50),
        StopKind::Failed => RGBColor(198, 40, 40),
        // Dark enough for white text at WCAG AA (4.5:1): the table's badges.
        StopKind::Guard => RGBColor(184, 77, 0),
        StopKind::Crashed => RGBColor(106, 27, 154),
        StopKind::TimedOut => RGBColor(121, 85, 72),
        StopKind::Skipped | StopKind::Unsupported => RGBColor(110, 110, 110),
        StopKind::NoReport | StopKind::Interrupted => RGBColor(33, 33, 33),
    }
}

/// CSS hex of an outcome's colour.
pub fn outcome_css(outcome: StopKind) -> String {
    let RGBColor(r, g, b) = outcome_color(outcome);
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn series_color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    COLORS[i % COLORS.len()]
}

/// The buffers each run reached, on a log scale so a failure at 278 shows beside a
/// run of 100000; the count and why it stopped written on each bar, a run that
/// reached none marked at the axis.
pub fn buffers(runs: &[&RunView]) -> Result<Plot, String> {
    if runs.len() > BARS_PER_PLOT {
        return outcomes_by_group(runs);
    }
    let data = PlotData {
        title: "buffers reached per run".into(),
        columns: vec!["run".into(), "buffers".into(), "outcome".into()],
        rows: runs
            .iter()
            .map(|r| {
                vec![
                    r.row.run.clone(),
                    format_count(r.row.buffers as f64),
                    r.row.headline.clone(),
                ]
            })
            .collect(),
    };
    let mut svg = String::new();
    {
        let n = runs.len().max(1) as i32;
        let height = 110 + 30 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (1300, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let max = runs
            .iter()
            .map(|r| r.row.buffers)
            .max()
            .unwrap_or(1)
            .max(10) as f64
            * 6.0;
        let names: Vec<String> = runs.iter().map(|r| plot_label(&r.row.run, 56)).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "buffers reached (log scale), coloured by outcome",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(400)
            .build_cartesian_2d((1f64..max).log_scale(), (0..n).into_segmented())
            .map_err(plot_err)?;
        // Row 0 at the top: segment n-1-i holds run i.
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n as usize)
            .y_label_formatter(&|y| match y {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) if (0..n).contains(i) => names
                    .get((n - 1 - *i) as usize)
                    .cloned()
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .x_desc("buffers")
            .x_label_formatter(&|x| format_count(x.round()))
            .draw()
            .map_err(plot_err)?;
        for (i, run) in runs.iter().enumerate() {
            let segment = n - 1 - i as i32;
            let color = outcome_color(run.row.outcome);
            let label = match run.row.outcome {
                StopKind::Completed => format_count(run.row.buffers as f64),
                _ => format!("{}: {}", format_count(run.row.buffers as f64), run.row.stop),
            };
            if run.row.buffers == 0 {
                chart
                    .draw_series([TriangleMarker::new(
                        (1.0, SegmentValue::CenterOf(segment)),
                        7,
                        color.filled(),
                    )])
                    .map_err(plot_err)?;
            } else {
                let mut bar = Rectangle::new(
                    [
                        (1.0, SegmentValue::Exact(segment)),
                        (run.row.buffers as f64, SegmentValue::Exact(segment + 1)),
                    ],
                    color.filled(),
                );
                bar.set_margin(4, 4, 0, 0);
                chart.draw_series([bar]).map_err(plot_err)?;
            }
            // What fits between the bar's end and the plot's right edge (the plot is
            // 1300 - 400 - 2 x 12 px wide; 12 px sans averages ~6.5 px a character).
            let at = (run.row.buffers.max(1) as f64) * 1.2;
            let room = ((1.0 - at.ln() / max.ln()) * 876.0 / 6.5) as usize;
            let label = if label.chars().count() > room.max(8) {
                let kept: String = label.chars().take(room.max(8) - 1).collect();
                format!("{kept}…")
            } else {
                label
            };
            chart
                .draw_series([Text::new(
                    label,
                    (at, SegmentValue::CenterOf(segment)),
                    ("sans-serif", 12).into_font().color(&BLACK).pos(
                        plotters::style::text_anchor::Pos::new(
                            plotters::style::text_anchor::HPos::Left,
                            plotters::style::text_anchor::VPos::Center,
                        ),
                    ),
                )])
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(Plot {
        svg,
        data: vec![data],
    })
}

/// For large sweeps: runs per outcome, per group, as stacked bars.
fn outcomes_by_group(runs: &[&RunView]) -> Result<Plot, String> {
    let mut counts: BTreeMap<(u8, String), BTreeMap<StopKind, usize>> = BTreeMap::new();
    for run in runs {
        *counts
            .entry(super::model::group_rank(&run.row.group))
            .or_default()
            .entry(run.row.outcome)
            .or_default() += 1;
    }
    let mut svg = String::new();
    {
        let height = 120 + 30 * counts.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (1200, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let max = counts
            .values()
            .map(|c| c.values().sum::<usize>())
            .max()
            .unwrap_or(1) as f64;
        let n = counts.len().max(1) as f64;
        let (labels_area, plot_area) = root.split_horizontally(300);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(
                format!(
                    "{} runs: runs per outcome in each group (too many for a bar each)",
                    runs.len()
                ),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(36)
            .build_cartesian_2d(0f64..max * 1.05, 0f64..n)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc("runs")
            .x_label_formatter(&|x| count_tick(*x))
            .draw()
            .map_err(plot_err)?;
        for (i, ((_, group), outcomes)) in counts.iter().enumerate() {
            let y = n - i as f64 - 0.5;
            let mut start = 0.0;
            for (outcome, count) in outcomes {
                let end = start + *count as f64;
                chart
                    .draw_series([Rectangle::new(
                        [(start, y - 0.35), (end, y + 0.35)],
                        outcome_color(*outcome).filled(),
                    )])
                    .map_err(plot_err)?;
                chart
                    .draw_series([Text::new(
                        format!("{count} {outcome}"),
                        (start + 0.5, y + 0.1),
                        ("sans-serif", 11).into_font().color(&WHITE),
                    )])
                    .map_err(plot_err)?;
                start = end;
            }
            labels_area
                .draw(&Text::new(
                    group.clone(),
                    (
                        6,
                        48 + (i as i32) * ((height as i32 - 84) / counts.len().max(1) as i32),
                    ),
                    ("sans-serif", 12).into_font(),
                ))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    let data = PlotData {
        title: "runs per outcome in each group".into(),
        columns: vec!["group".into(), "runs per outcome".into()],
        rows: counts
            .iter()
            .map(|((_, group), outcomes)| {
                vec![
                    group.clone(),
                    outcomes
                        .iter()
                        .map(|(o, n)| format!("{n} {o}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ]
            })
            .collect(),
    };
    Ok(Plot {
        svg,
        data: vec![data],
    })
}

fn scale(unit: Unit, max: f64) -> (f64, &'static str) {
    match unit {
        Unit::Count => (1.0, "count"),
        Unit::Bytes if max >= (1u64 << 30) as f64 => ((1u64 << 30) as f64, "GiB"),
        Unit::Bytes if max >= (1u64 << 20) as f64 => ((1u64 << 20) as f64, "MiB"),
        Unit::Bytes => (1024.0, "KiB"),
    }
}

/// A run's name short enough for a plot, keeping what tells grid runs apart: each
/// grid key by its last part (`scaling[allocation.strategy=fill,devices.count=4]`
/// becomes `scaling: strategy=fill count=4`), then cut to `max` characters.
pub fn plot_label(run: &str, max: usize) -> String {
    let label = match run.strip_suffix(']').and_then(|r| r.split_once('[')) {
        Some((name, grid)) => {
            let values: Vec<&str> = grid
                .split(',')
                .map(|kv| match kv.split_once('=') {
                    Some((key, _)) => &kv[key.rfind('.').map_or(0, |i| i + 1)..],
                    None => kv,
                })
                .collect();
            format!("{name}: {}", values.join(" "))
        }
        None => run.to_owned(),
    };
    label.chars().take(max).collect()
}

/// A group's plot: one panel per resource whose readings move, each limit as a
/// labelled line where it fits, failures marked; `svg` is `None` when no resource
/// moves. The notes say what was left out (flat resources, limits far above).
#[derive(Debug)]
pub struct GroupPlot {
    pub svg: Option<String>,
    pub notes: Vec<String>,
    pub data: Vec<PlotData>,
}

/// A group's resources against allocations.
pub fn group(name: &str, runs: &[&RunView]) -> Result<GroupPlot, String> {
    let mut resources: Vec<Resource> = Vec::new();
    for run in runs {
        for s in &run.series {
            if !resources.contains(&s.resource) {
                resources.push(s.resource.clone());
            }
        }
    }
    let read_device = resources
        .iter()
        .any(|r| matches!(r, Resource::DeviceMemory { .. } | Resource::Drm { .. }));
    // System-wide figures move with every other process: shown only when they grow
    // beyond RSS in some run (memory outside the process).
    resources.retain(|r| {
        !matches!(r, Resource::SystemMemoryUsed | Resource::SystemShmem)
            || runs.iter().any(|run| {
                run.cost(r).unwrap_or(0.0)
                    > 2.0 * run.cost(&Resource::HostRss).unwrap_or(0.0).max(2048.0)
            })
    });
    // A resource that stays put in every run gets a note, not a panel.
    let mut notes = Vec::new();
    let (moving, flat): (Vec<Resource>, Vec<Resource>) = resources.into_iter().partition(|r| {
        runs.iter().any(|run| {
            run.series.iter().filter(|s| &s.resource == r).any(|s| {
                let (lo, hi) = s.points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
                    (lo.min(p.1), hi.max(p.1))
                });
                match r.unit() {
                    Unit::Count => hi - lo >= 1.0,
                    Unit::Bytes => hi - lo >= 4096.0,
                }
            })
        })
    });
    let resources = moving;
    if !flat.is_empty() {
        notes.push(format!(
            "flat in every run: {}",
            flat.iter()
                .map(|r| r.label())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Said only when no run read device memory or DRM at all (readings that stayed
    // flat are readings, and are named above).
    if !read_device {
        notes.push(
            "no device-memory or DRM readings in this group (see each run's warnings)".to_owned(),
        );
    }
    if resources.is_empty() {
        return Ok(GroupPlot {
            svg: None,
            notes,
            data: Vec::new(),
        });
    }
    let aggregate = runs.len() > LINES_PER_PLOT;
    let columns = 3usize.min(resources.len());
    let rows = resources.len().div_ceil(columns);
    let legend_width = if aggregate { 220 } else { 360 };
    let panel_width = (1500 - legend_width) / columns as u32;
    let mut svg = String::new();
    let mut data = Vec::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (1500, 60 + 320 * rows as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let title = if aggregate {
            format!("{name}: resources against allocations, {} runs shown as median (line) and range (band) per context mode", runs.len())
        } else {
            format!("{name}: resources against allocations")
        };
        let root = root
            .titled(&fit(&title, 1500, 20), ("sans-serif", 20))
            .map_err(plot_err)?;
        let (panels, legend) = root.split_horizontally(1500 - legend_width);
        let areas = panels.split_evenly((rows, columns));
        for (area, resource) in areas.iter().zip(&resources) {
            let drawn = panel(area, panel_width, resource, runs, aggregate)?;
            notes.extend(drawn.note);
            data.push(drawn.data);
        }
        // The legend sits beside the panels, never over data.
        let entries: Vec<(String, RGBColor)> = if aggregate {
            vec![
                ("shared".to_owned(), series_color(0)),
                ("per-device".to_owned(), series_color(1)),
                ("failed (x)".to_owned(), outcome_color(StopKind::Failed)),
            ]
        } else {
            let mut e: Vec<(String, RGBColor)> = runs
                .iter()
                .enumerate()
                .map(|(i, r)| (plot_label(&r.row.run, 48), series_color(i)))
                .collect();
            e.push(("failed here (x)".into(), outcome_color(StopKind::Failed)));
            e.push(("limit (dashed)".into(), RGBColor(120, 120, 120)));
            e
        };
        for (i, (label, color)) in entries.iter().enumerate() {
            let y = 30 + 20 * i as i32;
            legend
                .draw(&Rectangle::new([(8, y - 5), (24, y + 5)], color.filled()))
                .map_err(plot_err)?;
            legend
                .draw(&Text::new(
                    fit(label, legend_width - 34, 12),
                    (30, y - 6),
                    ("sans-serif", 12).into_font(),
                ))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(GroupPlot {
        svg: Some(svg),
        notes,
        data,
    })
}

/// One panel as drawn: its data, and a note when its limit was too far to draw.
struct Panel {
    data: PlotData,
    note: Option<String>,
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    width: u32,
    resource: &Resource,
    runs: &[&RunView],
    aggregate: bool,
) -> Result<Panel, String> {
    let unit = resource.unit();
    let series: Vec<(usize, &RunView, &super::model::Series)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, run)| {
            Some((
                i,
                *run,
                run.series.iter().find(|s| &s.resource == resource)?,
            ))
        })
        .collect();
    let x_max = series
        .iter()
        .flat_map(|(_, _, s)| s.points.iter().map(|p| p.0))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let y_max_data = series
        .iter()
        .flat_map(|(_, _, s)| s.points.iter().map(|p| p.1))
        .fold(0f64, f64::max);
    let y_min_data = series
        .iter()
        .flat_map(|(_, _, s)| s.points.iter().map(|p| p.1))
        .fold(f64::MAX, f64::min);
    // A limit far above the data would flatten it: drawn only within 4x of the data.
    let limit = series.iter().find_map(|(_, _, s)| s.limit.clone());
    let shown_limit = limit
        .as_ref()
        .filter(|l| l.value <= 4.0 * y_max_data.max(1.0));
    let note = match (&limit, shown_limit) {
        (Some(l), None) => Some(format!(
            "{}: {} ({}) is far above the readings, so it is not drawn",
            resource.label(),
            l.name,
            unit.format(l.value)
        )),
        _ => None,
    };
    let top = shown_limit.map_or(y_max_data, |l| l.value.max(y_max_data));
    let (div, unit_name) = scale(unit, top);
    let (y_lo, y_hi) = {
        let lo = (y_min_data / div).min(top / div);
        let hi = top / div;
        let pad = ((hi - lo) * 0.08)
            .max(hi.abs() * 0.01)
            .max(if unit == Unit::Count { 1.0 } else { 1e-3 });
        ((lo - pad).max(0.0f64.min(lo)), hi + pad)
    };
    let caption = fit(
        &format!("{} ({unit_name})", resource.label()),
        width.saturating_sub(16),
        14,
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 14))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max * 1.02, y_lo..y_hi)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("buffers allocated")
        .x_labels(5)
        .x_label_formatter(&|x| count_tick(*x))
        .y_labels(6)
        .y_label_formatter(&|y| {
            if unit == Unit::Count {
                count_tick(*y)
            } else {
                format!("{y:.1}")
            }
        })
        .draw()
        .map_err(plot_err)?;
    if let Some(l) = shown_limit {
        let y = l.value / div;
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, y), (x_max * 1.02, y)],
                6,
                4,
                RGBColor(120, 120, 120).stroke_width(2),
            ))
            .map_err(plot_err)?;
        chart
            .draw_series([Text::new(
                l.name.clone(),
                (x_max * 0.02, y),
                ("sans-serif", 11).into_font().color(&RGBColor(90, 90, 90)),
            )])
            .map_err(plot_err)?;
    }
    let reading = |y: f64| unit.format(y);
    let mut data = PlotData {
        title: format!(
            "{}{}",
            resource.label(),
            shown_limit.map_or(String::new(), |l| format!(
                " (limit: {} {})",
                l.name,
                unit.format(l.value)
            ))
        ),
        columns: Vec::new(),
        rows: Vec::new(),
    };
    if aggregate {
        data.columns = vec![
            "context mode".into(),
            "buffers allocated: median (lowest to highest) over the runs".into(),
        ];
        for (m, mode) in ["shared", "per-device"].iter().enumerate() {
            let points: Vec<(u64, f64)> = series
                .iter()
                .filter(|(_, run, _)| run.row.context_mode == *mode)
                .flat_map(|(_, _, s)| s.points.iter().copied())
                .collect();
            if points.is_empty() {
                continue;
            }
            // 16 buckets of allocations: median, min, max of the readings in each.
            let mut buckets: Vec<Vec<f64>> = vec![Vec::new(); 16];
            for (x, y) in points {
                let b = ((x as f64 / x_max * 15.0).round() as usize).min(15);
                buckets[b].push(y);
            }
            let color = series_color(m);
            let mut line = Vec::new();
            let mut band_low = Vec::new();
            let mut band_high = Vec::new();
            let mut cells = Vec::new();
            for (b, mut values) in buckets.into_iter().enumerate() {
                if values.is_empty() {
                    continue;
                }
                values.sort_by(f64::total_cmp);
                let x = b as f64 / 15.0 * x_max;
                let (median, low, high) = (
                    values[values.len() / 2],
                    values[0],
                    values[values.len() - 1],
                );
                line.push((x, median / div));
                band_low.push((x, low / div));
                band_high.push((x, high / div));
                cells.push(format!(
                    "{}: {} ({} to {})",
                    format_count(x.round()),
                    reading(median),
                    reading(low),
                    reading(high)
                ));
            }
            data.rows.push(vec![(*mode).to_owned(), cells.join("; ")]);
            band_high.reverse();
            band_low.extend(band_high);
            chart
                .draw_series([Polygon::new(band_low, color.mix(0.2).filled())])
                .map_err(plot_err)?;
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))
                .map_err(plot_err)?;
        }
    } else {
        data.columns = vec!["run".into(), "buffers allocated: reading".into()];
        for (i, run, s) in &series {
            let color = series_color(*i);
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|&(x, y)| (x as f64, y / div)),
                    color.stroke_width(2),
                ))
                .map_err(plot_err)?;
            data.rows.push(vec![
                run.row.run.clone(),
                s.points
                    .iter()
                    .map(|&(x, y)| format!("{}: {}", format_count(x as f64), reading(y)))
                    .collect::<Vec<_>>()
                    .join("; "),
            ]);
        }
    }
    for (_, run, s) in &series {
        if let (Some(at), Some(last)) = (run.failed_at, s.points.last()) {
            chart
                .draw_series([Cross::new(
                    (at as f64, last.1 / div),
                    7,
                    outcome_color(StopKind::Failed).stroke_width(3),
                )])
                .map_err(plot_err)?;
        }
    }
    Ok(Panel { data, note })
}

/// Costs spread wider than this (highest over lowest) go on a log axis, so that one
/// large cost (1 GiB buffers filled) does not flatten the others to zero.
const LOG_SPREAD: f64 = 20.0;

/// Per-buffer cost against device count, one line per context mode, strategy and
/// buffer size: for groups whose runs differ in device count. `None` when no group
/// does. Runs of one line at one count (two files sharing a case) are averaged;
/// shared contexts are solid, per-device dashed; each strategy has its marker, and a
/// line that another one hides (within 3% at every count) says so in the legend.
/// Costs that spread over more than [`LOG_SPREAD`]x go on a log axis.
pub fn scaling(runs: &[&RunView]) -> Result<Option<Plot>, String> {
    // (context mode, strategy, buffer size) -> device count -> (sum, runs)
    type Key = (String, String, u64);
    let mut sums: BTreeMap<Key, BTreeMap<usize, (f64, usize)>> = BTreeMap::new();
    for run in runs {
        if run.row.device_count == 0 {
            continue;
        }
        let Some(rss) = run.cost(&Resource::HostRss) else {
            continue;
        };
        let at = sums
            .entry((
                run.row.context_mode.clone(),
                run.row.strategy.clone(),
                run.row.size_bytes,
            ))
            .or_default()
            .entry(run.row.device_count)
            .or_insert((0.0, 0));
        at.0 += rss;
        at.1 += 1;
    }
    type Line = (Key, Vec<(usize, f64)>);
    let lines: Vec<Line> = sums
        .into_iter()
        .map(|(key, at)| {
            let points = at
                .into_iter()
                .map(|(n, (sum, runs))| (n, sum / runs as f64))
                .collect();
            (key, points)
        })
        .collect();
    let counts: std::collections::BTreeSet<usize> = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.0))
        .collect();
    if counts.len() < 2 {
        return Ok(None);
    }
    let sizes: std::collections::BTreeSet<u64> = lines.iter().map(|((_, _, s), _)| *s).collect();
    let name = |(mode, strategy, size): &Key| {
        if sizes.len() > 1 {
            format!("{mode} {strategy} {}", format_bytes(*size as f64))
        } else {
            format!("{mode} {strategy}")
        }
    };
    let max_n = *counts.iter().max().unwrap_or(&1);
    let values: Vec<f64> = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.1))
        .collect();
    let y_max = values.iter().copied().fold(1.0, f64::max);
    let y_min_positive = values
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::MAX, f64::min);
    let log = y_min_positive < f64::MAX && y_max / y_min_positive > LOG_SPREAD;
    // On the log axis a value is drawn at log2(bytes); ticks at whole powers of two.
    let (div, unit) = scale(Unit::Bytes, y_max);
    let to_y = |v: f64| if log { v.max(1.0).log2() } else { v / div };
    let (y_lo, y_hi) = if log {
        (
            (y_min_positive.log2() - 0.5).floor(),
            (y_max.log2() + 0.5).ceil(),
        )
    } else {
        (0.0, y_max / div * 1.15)
    };
    let same = |a: &[(usize, f64)], b: &[(usize, f64)]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= 0.03 * p.1.abs().max(q.1.abs()))
    };
    let dropped = log && values.iter().any(|v| *v <= 0.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (plot_area, legend) = root.split_horizontally(780);
        let caption = if log {
            "host RSS per buffer against device count (log scale)".to_owned()
        } else {
            format!("host RSS per buffer ({unit}) against device count")
        };
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(70)
            .build_cartesian_2d(0.5f64..max_n as f64 + 0.5, y_lo..y_hi)
            .map_err(plot_err)?;
        // A tick at every whole count, labelled only where a run is.
        let labelled = counts.clone();
        chart
            .configure_mesh()
            .x_desc("devices")
            .x_labels(max_n)
            .x_label_formatter(&|x| {
                let n = x.round();
                if (x - n).abs() < 1e-6 && labelled.contains(&(n as usize)) {
                    format!("{n}")
                } else {
                    String::new()
                }
            })
            .y_labels(if log { (y_hi - y_lo) as usize + 1 } else { 10 })
            .y_label_formatter(&|y| {
                if log {
                    let k = y.round();
                    if (y - k).abs() < 1e-6 && (0.0..63.0).contains(&k) {
                        format_size(1u64 << k as u32)
                    } else {
                        String::new()
                    }
                } else {
                    format!("{y:.2}")
                }
            })
            .draw()
            .map_err(plot_err)?;
        for (i, (key, points)) in lines.iter().enumerate() {
            let color = series_color(i);
            let pts: Vec<(f64, f64)> = points
                .iter()
                .filter(|(_, v)| !log || *v > 0.0)
                .map(|&(n, v)| (n as f64, to_y(v)))
                .collect();
            if key.0 == "per-device" {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.clone(),
                        8,
                        5,
                        color.stroke_width(2),
                    ))
                    .map_err(plot_err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(plot_err)?;
            }
            // Crosses drawn over filled markers: a line hidden by another still shows.
            for &p in &pts {
                match key.1.as_str() {
                    "fill" => chart
                        .draw_series([TriangleMarker::new(p, 7, color.filled())])
                        .map(|_| ()),
                    "migrate" => chart
                        .draw_series([Cross::new(p, 6, color.stroke_width(2))])
                        .map(|_| ()),
                    _ => chart
                        .draw_series([Circle::new(p, 6, color.filled())])
                        .map(|_| ()),
                }
                .map_err(plot_err)?;
            }
            let hidden_by: Vec<String> = lines[..i]
                .iter()
                .filter(|(_, other)| same(points, other))
                .map(|(k, _)| name(k))
                .collect();
            let mut label = name(key);
            if !hidden_by.is_empty() {
                label.push_str(&format!(" (= {})", hidden_by.join(", ")));
            }
            let y = 30 + 20 * i as i32;
            legend
                .draw(&Rectangle::new([(8, y - 5), (24, y + 5)], color.filled()))
                .map_err(plot_err)?;
            legend
                .draw(&Text::new(
                    fit(&label, 280, 12),
                    (30, y - 6),
                    ("sans-serif", 12).into_font(),
                ))
                .map_err(plot_err)?;
        }
        let mut below = vec![
            "solid: shared context; dashed: one per device".to_owned(),
            "marker: \u{25b2} fill, x migrate, o create and others".to_owned(),
        ];
        if dropped {
            below.push("zero or negative costs are not on the log axis".to_owned());
        }
        for (k, text) in below.into_iter().enumerate() {
            legend
                .draw(&Text::new(
                    text,
                    (8, 30 + 20 * lines.len() as i32 + 10 + 18 * k as i32),
                    ("sans-serif", 12).into_font(),
                ))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    let mut columns = vec!["context, strategy".to_owned()];
    columns.extend(counts.iter().map(|n| format!("{n} device(s)")));
    let data = PlotData {
        title: "host RSS per buffer against device count".into(),
        columns,
        rows: lines
            .iter()
            .map(|(key, points)| {
                let mut row = vec![name(key)];
                row.extend(counts.iter().map(|n| {
                    points
                        .iter()
                        .find(|p| p.0 == *n)
                        .map_or("-".into(), |p| Unit::Bytes.format(p.1))
                }));
                row
            })
            .collect(),
    };
    Ok(Some(Plot {
        svg,
        data: vec![data],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_labels_keep_the_grid_values_that_tell_runs_apart() {
        assert_eq!(
            plot_label(
                "scaling[allocation.strategy=create,context.mode=shared,devices.count=8]",
                56
            ),
            "scaling: strategy=create mode=shared count=8"
        );
        assert_eq!(plot_label("tiny[env.RUN=7]", 56), "tiny: RUN=7");
        assert_eq!(plot_label("seed-1gpu", 4), "seed");
    }
}
