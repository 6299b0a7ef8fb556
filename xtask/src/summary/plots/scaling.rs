//! Per-buffer cost against device count, for grids over `devices.count`.

use super::*;
use clmulti_explain::Resource;
use clmulti_scenario::ContextMode;

/// Costs spread wider than this (highest over lowest) go on a log axis, so that one
/// large cost (1 GiB buffers filled) does not flatten the others to zero.
const LOG_SPREAD: f64 = 20.0;

/// Per-buffer cost against device count, one line per context mode, strategy and
/// buffer size: for groups whose runs differ in device count. `None` when no group
/// does. Runs of one line at one count (two files sharing a case) are averaged;
/// shared contexts are solid, per-device dashed; each strategy has its marker, and a
/// line that another one hides (within 3% at every count) says so in the legend.
/// Costs that spread over more than [`LOG_SPREAD`]x go on a log axis.
// long: one figure's drawing: panels, axes, series and labels in drawing order
pub fn scaling(runs: &[&RunView]) -> Result<Option<Plot>, String> {
    // (context mode, strategy, buffer size) -> device count -> (sum, runs)
    type Key = (ContextMode, String, u64);
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
            format!("{} {strategy} {}", mode.name(), format_bytes(*size as f64))
        } else {
            format!("{} {strategy}", mode.name())
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
