//! Per-buffer cost against device count, for grids over `devices.count`.

use super::*;
use clmulti_explain::Resource;
use clmulti_scenario::ContextMode;
use plotters::coord::types::RangedCoordf64;

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
    let Some(figure) = Scaling::of(runs) else {
        return Ok(None);
    };
    let svg = figure.draw()?;
    Ok(Some(Plot {
        svg,
        data: vec![figure.data()],
    }))
}

/// (context mode, strategy, buffer size): one line of the figure.
type Key = (ContextMode, String, u64);
/// A line's mean cost at each device count.
type Line = (Key, Vec<(usize, f64)>);
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The figure's lines and its vertical axis.
struct Scaling {
    lines: Vec<Line>,
    counts: std::collections::BTreeSet<usize>,
    sizes: std::collections::BTreeSet<u64>,
    log: bool,
    /// Zero or negative costs, left off a log axis.
    dropped: bool,
    y_range: (f64, f64),
    div: f64,
    unit: &'static str,
}

impl Scaling {
    /// The lines of runs that differ in device count; `None` when none do.
    fn of(runs: &[&RunView]) -> Option<Self> {
        let lines = mean_lines(runs);
        let counts: std::collections::BTreeSet<usize> = lines
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.0))
            .collect();
        if counts.len() < 2 {
            return None;
        }
        let sizes = lines.iter().map(|((_, _, s), _)| *s).collect();
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
        let y_range = if log {
            (
                (y_min_positive.log2() - 0.5).floor(),
                (y_max.log2() + 0.5).ceil(),
            )
        } else {
            (0.0, y_max / div * 1.15)
        };
        Some(Self {
            dropped: log && values.iter().any(|v| *v <= 0.0),
            lines,
            counts,
            sizes,
            log,
            y_range,
            div,
            unit,
        })
    }

    fn name(&self, (mode, strategy, size): &Key) -> String {
        if self.sizes.len() > 1 {
            format!("{} {strategy} {}", mode.name(), format_bytes(*size as f64))
        } else {
            format!("{} {strategy}", mode.name())
        }
    }

    fn to_y(&self, v: f64) -> f64 {
        if self.log {
            v.max(1.0).log2()
        } else {
            v / self.div
        }
    }

    fn draw(&self) -> Result<String, String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (1100, 520)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let (plot_area, legend) = root.split_horizontally(780);
            let mut chart = self.axes(&plot_area)?;
            for i in 0..self.lines.len() {
                self.draw_line(&mut chart, &legend, i)?;
            }
            self.notes(&legend)?;
            root.present().map_err(plot_err)?;
        }
        Ok(svg)
    }

    /// The chart, its caption and its axes: a tick at every whole count, labelled
    /// only where a run is.
    fn axes<'a, 'b>(&self, area: &'a Area<'b>) -> Result<Chart<'a, 'b>, String> {
        let caption = if self.log {
            "host RSS per buffer against device count (log scale)".to_owned()
        } else {
            format!("host RSS per buffer ({}) against device count", self.unit)
        };
        let max_n = *self.counts.iter().max().unwrap_or(&1);
        let (y_lo, y_hi) = self.y_range;
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(70)
            .build_cartesian_2d(0.5f64..max_n as f64 + 0.5, y_lo..y_hi)
            .map_err(plot_err)?;
        let log = self.log;
        chart
            .configure_mesh()
            .x_desc("devices")
            .x_labels(max_n)
            .x_label_formatter(&|x| {
                let n = x.round();
                if (x - n).abs() < 1e-6 && self.counts.contains(&(n as usize)) {
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
        Ok(chart)
    }

    /// Line `i`: per-device contexts dashed, its strategy's markers, and its legend
    /// entry naming the lines that hide it.
    fn draw_line(
        &self,
        chart: &mut Chart<'_, '_>,
        legend: &Area<'_>,
        i: usize,
    ) -> Result<(), String> {
        let (key, points) = &self.lines[i];
        let color = series_color(i);
        let pts: Vec<(f64, f64)> = points
            .iter()
            .filter(|(_, v)| !self.log || *v > 0.0)
            .map(|&(n, v)| (n as f64, self.to_y(v)))
            .collect();
        if key.0 == ContextMode::PerDevice {
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
        let hidden_by: Vec<String> = self.lines[..i]
            .iter()
            .filter(|(_, other)| same(points, other))
            .map(|(k, _)| self.name(k))
            .collect();
        let mut label = self.name(key);
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
        Ok(())
    }

    /// What line styles and markers mean, under the legend.
    fn notes(&self, legend: &Area<'_>) -> Result<(), String> {
        let mut below = vec![
            "solid: shared context; dashed: one per device".to_owned(),
            "marker: \u{25b2} fill, x migrate, o create and others".to_owned(),
        ];
        if self.dropped {
            below.push("zero or negative costs are not on the log axis".to_owned());
        }
        for (k, text) in below.into_iter().enumerate() {
            legend
                .draw(&Text::new(
                    text,
                    (8, 30 + 20 * self.lines.len() as i32 + 10 + 18 * k as i32),
                    ("sans-serif", 12).into_font(),
                ))
                .map_err(plot_err)?;
        }
        Ok(())
    }

    fn data(&self) -> PlotData {
        let mut columns = vec!["context, strategy".to_owned()];
        columns.extend(self.counts.iter().map(|n| format!("{n} device(s)")));
        PlotData {
            title: "host RSS per buffer against device count".into(),
            columns,
            rows: self
                .lines
                .iter()
                .map(|(key, points)| {
                    let mut row = vec![self.name(key)];
                    row.extend(self.counts.iter().map(|n| {
                        points
                            .iter()
                            .find(|p| p.0 == *n)
                            .map_or("-".into(), |p| Unit::Bytes.format(p.1))
                    }));
                    row
                })
                .collect(),
        }
    }
}

/// Each line's mean host RSS per buffer at each device count (runs of one line at
/// one count averaged).
fn mean_lines(runs: &[&RunView]) -> Vec<Line> {
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
                run.row.context_mode,
                run.row.strategy.clone(),
                run.row.size_bytes,
            ))
            .or_default()
            .entry(run.row.device_count)
            .or_insert((0.0, 0));
        at.0 += rss;
        at.1 += 1;
    }
    sums.into_iter()
        .map(|(key, at)| {
            let points = at
                .into_iter()
                .map(|(n, (sum, runs))| (n, sum / runs as f64))
                .collect();
            (key, points)
        })
        .collect()
}

/// Two lines within 3% at every count: one hides the other.
fn same(a: &[(usize, f64)], b: &[(usize, f64)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= 0.03 * p.1.abs().max(q.1.abs()))
}
