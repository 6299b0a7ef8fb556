//! The plots: buffers reached per run (coloured by outcome), each group's resources
//! against allocations (a line per run, or median and range when a group has many),
//! and per-buffer cost against device count for grids over `devices.count`.

use super::model::RunView;
use clmulti_explain::{StopKind, Unit};
use clmulti_scenario::{format_bytes, format_count, format_size};
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::prelude::*;
use std::collections::BTreeMap;

mod group;
mod scaling;
pub use group::group;
pub use scaling::scaling;

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
            draw_buffers_bar(&mut chart, run, n - 1 - i as i32, max)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(Plot {
        svg,
        data: vec![data],
    })
}

type BarChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<LogCoord<f64>, SegmentedCoord<plotters::coord::types::RangedCoordi32>>,
>;

/// A run's bar in its segment (a marker at the axis when it reached none), with its
/// count and why it stopped written after it.
fn draw_buffers_bar(
    chart: &mut BarChart<'_, '_>,
    run: &RunView,
    segment: i32,
    max: f64,
) -> Result<(), String> {
    let color = outcome_color(run.row.outcome);
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
    let at = (run.row.buffers.max(1) as f64) * 1.2;
    chart
        .draw_series([Text::new(
            bar_label(run, at, max),
            (at, SegmentValue::CenterOf(segment)),
            ("sans-serif", 12).into_font().color(&BLACK).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                ),
            ),
        )])
        .map_err(plot_err)?;
    Ok(())
}

/// A bar's count and why its run stopped, cut to what fits between the bar's end
/// (`at`) and the plot's right edge (the plot is 1300 - 400 - 2 x 12 px wide; 12 px
/// sans averages ~6.5 px a character).
fn bar_label(run: &RunView, at: f64, max: f64) -> String {
    let label = match run.row.outcome {
        StopKind::Completed => format_count(run.row.buffers as f64),
        _ => format!("{}: {}", format_count(run.row.buffers as f64), run.row.stop),
    };
    let room = ((1.0 - at.ln() / max.ln()) * 876.0 / 6.5) as usize;
    if label.chars().count() > room.max(8) {
        let kept: String = label.chars().take(room.max(8) - 1).collect();
        format!("{kept}…")
    } else {
        label
    }
}

/// Runs per outcome, per group (in the groups' order).
type OutcomeCounts = BTreeMap<(u8, String), BTreeMap<StopKind, usize>>;

/// For large sweeps: runs per outcome, per group, as stacked bars.
fn outcomes_by_group(runs: &[&RunView]) -> Result<Plot, String> {
    let mut counts: OutcomeCounts = BTreeMap::new();
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
            draw_stacked_bar(&mut chart, n - i as f64 - 0.5, outcomes)?;
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
    Ok(Plot {
        svg,
        data: vec![outcomes_data(&counts)],
    })
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// One group's runs per outcome, side by side at height `y`, each part named.
fn draw_stacked_bar(
    chart: &mut Chart<'_, '_>,
    y: f64,
    outcomes: &BTreeMap<StopKind, usize>,
) -> Result<(), String> {
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
    Ok(())
}

fn outcomes_data(counts: &OutcomeCounts) -> PlotData {
    PlotData {
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
    }
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
