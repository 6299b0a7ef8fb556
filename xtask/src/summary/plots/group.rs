//! Each group's resources against allocations: a panel per resource that moves.

use super::*;
use clmulti_explain::Resource;
use clmulti_scenario::ContextMode;
use plotters::coord::types::RangedCoordf64;

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
    let (resources, mut notes) = moving_resources(runs);
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
        draw_legend(&legend, legend_width, &legend_entries(runs, aggregate))?;
        root.present().map_err(plot_err)?;
    }
    Ok(GroupPlot {
        svg: Some(svg),
        notes,
        data,
    })
}

/// The resources that move in some run, in the order first read, and notes on
/// those left out.
fn moving_resources(runs: &[&RunView]) -> (Vec<Resource>, Vec<String>) {
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
    let (moving, flat): (Vec<Resource>, Vec<Resource>) = resources
        .into_iter()
        .partition(|r| runs.iter().any(|run| moves(run, r)));
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
    (moving, notes)
}

/// Whether a run's readings of `r` move: a count by one, bytes by a page.
fn moves(run: &RunView, r: &Resource) -> bool {
    run.series.iter().filter(|s| &s.resource == r).any(|s| {
        let (lo, hi) = s.points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
        match r.unit() {
            Unit::Count => hi - lo >= 1.0,
            Unit::Bytes => hi - lo >= 4096.0,
        }
    })
}

/// The legend's entries: per context mode when aggregated, else per run.
fn legend_entries(runs: &[&RunView], aggregate: bool) -> Vec<(String, RGBColor)> {
    if aggregate {
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
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
/// A run's readings of one resource: (its index, the run, its series).
type RunSeries<'r> = (usize, &'r RunView, &'r crate::summary::model::Series);

/// The legend sits beside the panels, never over data.
fn draw_legend(
    legend: &Area<'_>,
    width: u32,
    entries: &[(String, RGBColor)],
) -> Result<(), String> {
    for (i, (label, color)) in entries.iter().enumerate() {
        let y = 30 + 20 * i as i32;
        legend
            .draw(&Rectangle::new([(8, y - 5), (24, y + 5)], color.filled()))
            .map_err(plot_err)?;
        legend
            .draw(&Text::new(
                fit(label, width - 34, 12),
                (30, y - 6),
                ("sans-serif", 12).into_font(),
            ))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// One panel as drawn: its data, and a note when its limit was too far to draw.
struct Panel {
    data: PlotData,
    note: Option<String>,
}

fn panel(
    area: &Area<'_>,
    width: u32,
    resource: &Resource,
    runs: &[&RunView],
    aggregate: bool,
) -> Result<Panel, String> {
    let series: Vec<RunSeries<'_>> = runs
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
    let axis = Axis::of(resource, &series);
    let mut chart = axis.chart(area, width, resource)?;
    if let Some(l) = &axis.shown_limit {
        draw_limit(&mut chart, l, &axis)?;
    }
    let unit = resource.unit();
    let mut data = PlotData {
        title: format!(
            "{}{}",
            resource.label(),
            axis.shown_limit.as_ref().map_or(String::new(), |l| format!(
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
        for (m, mode) in [ContextMode::Shared, ContextMode::PerDevice]
            .iter()
            .enumerate()
        {
            if let Some(row) = draw_mode(&mut chart, &axis, unit, &series, m, *mode)? {
                data.rows.push(row);
            }
        }
    } else {
        data.columns = vec!["run".into(), "buffers allocated: reading".into()];
        for one in &series {
            data.rows.push(draw_run(&mut chart, &axis, unit, one)?);
        }
    }
    for (_, run, s) in &series {
        if let (Some(at), Some(last)) = (run.failed_at, s.points.last()) {
            chart
                .draw_series([Cross::new(
                    (at as f64, last.1 / axis.div),
                    7,
                    outcome_color(StopKind::Failed).stroke_width(3),
                )])
                .map_err(plot_err)?;
        }
    }
    Ok(Panel {
        data,
        note: axis.note,
    })
}

/// A panel's axes: allocations across, readings up to the data or a limit near it.
struct Axis {
    x_max: f64,
    y_range: (f64, f64),
    div: f64,
    unit_name: &'static str,
    shown_limit: Option<clmulti_explain::Limit>,
    /// Why a limit is not drawn.
    note: Option<String>,
}

impl Axis {
    fn of(resource: &Resource, series: &[RunSeries<'_>]) -> Self {
        let unit = resource.unit();
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
            .clone()
            .filter(|l| l.value <= 4.0 * y_max_data.max(1.0));
        let note = match (&limit, &shown_limit) {
            (Some(l), None) => Some(format!(
                "{}: {} ({}) is far above the readings, so it is not drawn",
                resource.label(),
                l.name,
                unit.format(l.value)
            )),
            _ => None,
        };
        let top = shown_limit
            .as_ref()
            .map_or(y_max_data, |l| l.value.max(y_max_data));
        let (div, unit_name) = scale(unit, top);
        let lo = (y_min_data / div).min(top / div);
        let hi = top / div;
        let pad = ((hi - lo) * 0.08)
            .max(hi.abs() * 0.01)
            .max(if unit == Unit::Count { 1.0 } else { 1e-3 });
        Self {
            x_max,
            y_range: ((lo - pad).max(0.0f64.min(lo)), hi + pad),
            div,
            unit_name,
            shown_limit,
            note,
        }
    }

    fn chart<'a, 'b>(
        &self,
        area: &'a Area<'b>,
        width: u32,
        resource: &Resource,
    ) -> Result<Chart<'a, 'b>, String> {
        let unit = resource.unit();
        let caption = fit(
            &format!("{} ({})", resource.label(), self.unit_name),
            width.saturating_sub(16),
            14,
        );
        let (y_lo, y_hi) = self.y_range;
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..self.x_max * 1.02, y_lo..y_hi)
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
        Ok(chart)
    }
}

/// A limit as a dashed line, labelled at its left.
fn draw_limit(
    chart: &mut Chart<'_, '_>,
    l: &clmulti_explain::Limit,
    axis: &Axis,
) -> Result<(), String> {
    let y = l.value / axis.div;
    chart
        .draw_series(DashedLineSeries::new(
            [(0.0, y), (axis.x_max * 1.02, y)],
            6,
            4,
            RGBColor(120, 120, 120).stroke_width(2),
        ))
        .map_err(plot_err)?;
    chart
        .draw_series([Text::new(
            l.name.clone(),
            (axis.x_max * 0.02, y),
            ("sans-serif", 11).into_font().color(&RGBColor(90, 90, 90)),
        )])
        .map_err(plot_err)?;
    Ok(())
}

/// One context mode's runs as a median line in a min-max band (16 buckets of
/// allocations); its table row, `None` when no run has the mode.
fn draw_mode(
    chart: &mut Chart<'_, '_>,
    axis: &Axis,
    unit: Unit,
    series: &[RunSeries<'_>],
    m: usize,
    mode: ContextMode,
) -> Result<Option<Vec<String>>, String> {
    let (x_max, div) = (axis.x_max, axis.div);
    let points: Vec<(u64, f64)> = series
        .iter()
        .filter(|(_, run, _)| run.row.context_mode == mode)
        .flat_map(|(_, _, s)| s.points.iter().copied())
        .collect();
    if points.is_empty() {
        return Ok(None);
    }
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
            unit.format(median),
            unit.format(low),
            unit.format(high)
        ));
    }
    band_high.reverse();
    band_low.extend(band_high);
    chart
        .draw_series([Polygon::new(band_low, color.mix(0.2).filled())])
        .map_err(plot_err)?;
    let gaps = series
        .iter()
        .any(|(_, run, s)| run.row.context_mode == mode && !s.continuous);
    if gaps {
        chart
            .draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(plot_err)?;
    } else {
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(2)))
            .map_err(plot_err)?;
    }
    Ok(Some(vec![mode.name().to_owned(), cells.join("; ")]))
}

/// One run's readings as a line (dots where its readings have gaps); its table row.
fn draw_run(
    chart: &mut Chart<'_, '_>,
    axis: &Axis,
    unit: Unit,
    (i, run, s): &RunSeries<'_>,
) -> Result<Vec<String>, String> {
    let color = series_color(*i);
    let points = s.points.iter().map(|&(x, y)| (x as f64, y / axis.div));
    if s.continuous {
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(plot_err)?;
    } else {
        chart
            .draw_series(points.map(|p| Circle::new(p, 3, color.filled())))
            .map_err(plot_err)?;
    }
    Ok(vec![
        run.row.run.clone(),
        s.points
            .iter()
            .map(|&(x, y)| format!("{}: {}", format_count(x as f64), unit.format(y)))
            .collect::<Vec<_>>()
            .join("; "),
    ])
}
