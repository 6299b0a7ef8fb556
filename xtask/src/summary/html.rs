//! `index.html`: the verdict and the machine first, then the buffers each run
//! reached, then each group's runs and plots. Opens from disk (relative links), stays
//! small (at most [`ROWS_PER_GROUP`] rows per group; the CSV has every run).

use super::model::human;
use super::plots::{outcome_css, PlotData};
use super::{Exporter, Group, View};
use clmulti_explain::render::html_escape as esc;
use clmulti_explain::Unit;
use std::collections::BTreeSet;

/// Rows shown per group; the rest are in summary.csv.
pub const ROWS_PER_GROUP: usize = 50;

fn date(unix: u64) -> String {
    clmulti_explain::context::utc_date(unix)
}

/// Each host and the devices its runs used, from the runs' own reports: `vm:
/// NVIDIA H200 (NVIDIA CUDA)`; a host whose runs reached no device by its name.
fn machines(view: &View<'_>) -> String {
    let mut hosts: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for run in &view.runs {
        let devices = hosts.entry(run.host_name.as_str()).or_default();
        for device in &run.devices_used {
            if !devices.contains(&device.as_str()) {
                devices.push(device);
            }
        }
    }
    let said: Vec<String> = hosts
        .into_iter()
        .map(|(host, devices)| {
            let devices: Vec<String> = devices.into_iter().map(str::to_owned).collect();
            crate::records::machine_words(host, &devices)
        })
        .filter(|words| !words.is_empty())
        .collect();
    if said.is_empty() {
        "not recorded (records of an earlier clmulti)".into()
    } else {
        said.join("; ")
    }
}

/// The OpenCL layers the runs named, each once, in order.
fn run_layers<'a>(view: &'a View<'_>) -> Vec<&'a str> {
    let layers: BTreeSet<&str> = view
        .runs
        .iter()
        .filter_map(|r| r.layers.as_deref())
        .collect();
    layers.into_iter().collect()
}

/// The machine the runs ran on, in a few lines: hosts, OS, platforms and drivers,
/// devices, clmulti's version, dates, counts.
pub fn header_lines(view: &View<'_>) -> Vec<String> {
    let set = |f: &dyn Fn(&super::model::RunView) -> Vec<String>| -> String {
        let all: BTreeSet<String> = view
            .runs
            .iter()
            .flat_map(|r| f(r))
            .filter(|s| !s.is_empty())
            .collect();
        if all.is_empty() {
            "not recorded (records of an earlier clmulti)".into()
        } else {
            all.into_iter().collect::<Vec<_>>().join("; ")
        }
    };
    let first = view
        .runs
        .iter()
        .map(|r| r.finished_at)
        .filter(|t| *t > 0)
        .min();
    let last = view.runs.iter().map(|r| r.finished_at).max();
    let neo: Vec<clmulti_probe::neo::NeoEmulation> = view
        .runs
        .iter()
        .filter_map(|r| r.neo_emulation.clone())
        .collect();
    let mut lines = vec![
        format!("**Machine:** {}", machines(view)),
        format!("**OS:** {}", set(&|r| vec![r.os.clone()])),
        format!(
            "**OpenCL:** {} (drivers {})",
            set(&|r| vec![r.platform.clone()]),
            set(&|r| r.drivers.clone())
        ),
        format!("**Devices:** {}", set(&|r| r.device_names.clone())),
        format!("**clmulti:** {}", set(&|r| vec![r.tool.clone()])),
        format!(
            "**Runs:** {} ({})",
            view.runs.len(),
            match (first, last) {
                (Some(a), Some(b)) if b > a => format!("{} to {}", date(a), date(b)),
                (Some(a), _) => date(a),
                _ => "dates not recorded".into(),
            }
        ),
    ];
    if let Some(c) = &view.completeness {
        lines.push(format!("**Planned:** {}", c.line()));
    }
    // Every emulated part, in words a reader cannot miss: NEO's emulated devices,
    // OpenCL layers (clmulti's emulation layer with its policy and knobs).
    let mut emulated: Vec<String> = clmulti_probe::neo::combined_statement(&neo)
        .into_iter()
        .collect();
    let layers = run_layers(view);
    if !layers.is_empty() {
        emulated.push(format!(
            "OpenCL layers (what a layer models is part of what was measured): {}",
            layers.join("; ")
        ));
    }
    lines.insert(
        3,
        if emulated.is_empty() {
            "**Emulated:** nothing: the runtimes ran on this machine's own drivers".to_owned()
        } else {
            format!("**Emulated:** {}", emulated.join("; "))
        },
    );
    lines
}

/// A plot's figures as tables, folded under the plot.
fn data_tables(data: &[PlotData]) -> String {
    if data.is_empty() {
        return String::new();
    }
    let mut out = String::from("<details class=\"data\"><summary>The plot's figures</summary>");
    for table in data {
        out.push_str(&format!(
            "<table><caption>{}</caption><tr>",
            esc(&table.title)
        ));
        for c in &table.columns {
            out.push_str(&format!("<th scope=\"col\">{}</th>", esc(c)));
        }
        out.push_str("</tr>");
        for row in &table.rows {
            out.push_str("<tr>");
            for cell in row {
                out.push_str(&format!("<td>{}</td>", esc(cell)));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
    }
    out.push_str("</details>\n");
    out
}

/// Runs no verdict speaks for, and those of them that did not complete.
pub fn uncovered_lines(view: &View<'_>) -> Vec<String> {
    if view.uncovered.is_empty() {
        return Vec::new();
    }
    let mut files: Vec<&str> = view
        .uncovered
        .iter()
        .map(|r| r.row.group.as_str())
        .collect();
    files.dedup();
    let mut lines = vec![format!(
        "[measured] {} run(s) of {} have no verdict above (their files hold no shared case with one to compare it to)",
        view.uncovered.len(),
        files.join(", ")
    )];
    lines.extend(
        view.uncovered
            .iter()
            .filter(|r| r.row.outcome != clmulti_explain::StopKind::Completed)
            .map(|r| format!("[measured] {}: {}", r.row.run, r.row.headline)),
    );
    lines
}

fn markdown_bold_to_html(line: &str) -> String {
    let escaped = esc(line);
    match escaped.strip_prefix("**").and_then(|s| s.split_once("**")) {
        Some((label, rest)) => format!("<b>{label}</b>{rest}"),
        None => escaped,
    }
}

/// `index.html`
#[derive(Debug)]
pub struct Html;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em 2em;max-width:90em;line-height:1.4}\
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}\
th{background:#eee}caption{text-align:left;font-weight:bold;padding:.3em 0}.banner{background:#fff3cd;border:1px solid #e0c36a;padding:.6em 1em;margin:1em 0}\
.answer{font-size:1.1em;border:2px solid #05a;padding:.2em .8em;margin:1em 0}.answer p{margin:.3em 0}.machine p{margin:.1em 0}.machine p.emulated{background:#fff3cd;border-left:4px solid #92400e;padding:2px 6px}.outcome{color:#fff;font-weight:bold;padding:1px 5px;border-radius:3px}\
.verdict{border-left:5px solid #1565c0;padding-left:1em}.verdict li{margin:.3em 0}.tag{font-family:monospace;color:#555}\
li.measured .tag{color:#05a}li.inferred .tag{color:#a50}li.known .tag{color:#070}.notes{color:#555;font-size:12px}\
details.data{font-size:12px;margin:.2em 0 1em}details.data summary{cursor:pointer;color:#05a}\
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}";

impl Exporter for Html {
    fn file_name(&self) -> String {
        "index.html".into()
    }

    fn render(&self, view: &View<'_>) -> Result<String, String> {
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>clmulti sweep</title><style>{STYLE}</style></head><body>\n<main>\n<h1>clmulti sweep</h1>\n<div class=\"machine\" id=\"machine\">"
        );
        for line in header_lines(view) {
            // Emulated parts stand out: a result under them is not the runtime's own.
            let emulated = line.starts_with("**Emulated:**") && !line.contains("nothing:");
            let class = if emulated { " class=\"emulated\"" } else { "" };
            out.push_str(&format!("<p{class}>{}</p>", markdown_bold_to_html(&line)));
        }
        out.push_str("</div>\n");
        if let Some(c) = view.completeness.as_ref().filter(|c| c.missing() > 0) {
            out.push_str(&format!(
                "<div class=\"banner\" id=\"incomplete\"><b>Incomplete:</b> {}. Planned {}, done {}, missing {}: what follows covers only the runs that ran.</div>\n",
                esc(&c.line()),
                c.planned,
                c.done,
                c.missing()
            ));
        }
        let fell_back = view.runs.iter().filter(|r| r.fell_back).count();
        if fell_back > 0 {
            out.push_str(&format!(
                "<div class=\"banner\" id=\"fallback\"><b>No GPU here:</b> {fell_back} run(s) asked for GPUs and ran on CPU devices instead (see each run's warning). Their costs are those of the CPU runtime, not of a GPU.</div>\n"
            ));
        }
        let layers = run_layers(view);
        if !layers.is_empty() {
            out.push_str(&format!(
                "<div class=\"banner\" id=\"emulation\"><b>Emulation:</b> runs under the OpenCL layer(s) {}: what the layer models is part of what was measured.</div>\n",
                esc(&layers.join("; "))
            ));
        }
        if view.verdicts.is_empty() {
            out.push_str("<section class=\"verdict\"><h2>Verdict</h2><p>No run here puts several devices in one shared context, so there is nothing to compare: sweep configs/ (the seed's runs) for a verdict.</p></section>\n");
        }
        for (title, d) in &view.verdicts {
            out.push_str(&d.html().replacen(
                "<h2>Verdict</h2>",
                &format!("<h2>Verdict: {}</h2>", esc(title)),
                1,
            ));
        }
        out.push_str(&uncovered_section(view));
        out.push_str(&format!(
            "<h2>Buffers reached</h2><img src=\"{}\" alt=\"buffers reached per run, coloured by outcome; the figures are in the table below it\">\n{}",
            esc(&view.buffers_plot),
            data_tables(&view.buffers_data)
        ));
        for group in &view.groups {
            out.push_str(&group_section(group));
        }
        if let Some(plot) = &view.scaling_plot {
            out.push_str(&format!(
                "<h2>Cost per buffer against device count</h2><img src=\"{}\" alt=\"host RSS per buffer against device count; the figures are in the table below it\">\n{}",
                esc(plot),
                data_tables(&view.scaling_data)
            ));
        }
        out.push_str("<p>Files: <a href=\"results.jsonl\">results.jsonl</a> (every report), <a href=\"summary.csv\">summary.csv</a>, <a href=\"summary.md\">summary.md</a>.</p>\n");
        // Records, for tests and readers, how many plots loaded and how many did not.
        out.push_str("<script>window.addEventListener('load',()=>{const i=[...document.images];document.body.dataset.imagesLoaded=i.filter(x=>x.complete&&x.naturalWidth>0).length;document.body.dataset.imagesBroken=i.filter(x=>!x.complete||x.naturalWidth===0).length;});</script>\n");
        out.push_str("</main>\n</body></html>\n");
        Ok(out)
    }
}

/// The runs no verdict covers, as a list; empty when every run is covered.
fn uncovered_section(view: &View<'_>) -> String {
    let mut out = String::new();
    let uncovered = uncovered_lines(view);
    if !uncovered.is_empty() {
        out.push_str(
            "<section class=\"verdict\" id=\"uncovered\"><h2>Runs without a verdict</h2><ul>",
        );
        for line in uncovered {
            let (tag, text) = line.split_once("] ").unwrap_or(("", &line));
            out.push_str(&format!(
                "<li class=\"measured\"><span class=\"tag\">{}]</span> {}</li>",
                esc(tag),
                esc(text)
            ));
        }
        out.push_str("</ul></section>\n");
    }
    out
}

/// A group's table of runs, its notes and its plot.
fn group_section(group: &Group<'_>) -> String {
    let mut out = String::new();
    out.push_str(&format!("<h2 id=\"{}\">{}</h2>\n<p class=\"notes\">{}</p>\n<table><tr><th scope=\"col\">run</th><th scope=\"col\">result</th><th scope=\"col\">devices</th><th scope=\"col\">context</th><th scope=\"col\">strategy</th><th scope=\"col\">buffers</th><th scope=\"col\">RSS/buffer</th><th scope=\"col\">fds/buffer</th><th scope=\"col\">device memory/buffer</th></tr>\n",
            esc(&super::slug(&group.file)), esc(&group.name), esc(&group.file)));
    for run in group.runs.iter().take(ROWS_PER_GROUP) {
        let r = &run.row;
        out.push_str(&format!(
                "<tr><td>{}</td><td><span class=\"outcome\" style=\"background:{}\">{}</span> {}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                esc(&r.run),
                outcome_css(r.outcome),
                r.outcome,
                esc(&r.headline),
                if run.notes.is_empty() {
                    String::new()
                } else {
                    format!("<div class=\"notes\">{}</div>", run.notes.iter().map(|n| esc(n)).collect::<Vec<_>>().join("<br>"))
                },
                esc(&r.devices),
                esc(r.context_mode.name()),
                esc(&r.strategy),
                clmulti_scenario::format_count(r.buffers as f64),
                human(Unit::Bytes, r.rss_per_buffer),
                human(Unit::Count, r.fds_per_buffer),
                human(Unit::Bytes, r.device_mem_per_buffer),
            ));
    }
    out.push_str("</table>\n");
    if group.runs.len() > ROWS_PER_GROUP {
        out.push_str(&format!(
                "<p class=\"notes\">{} more run(s) of this group are in <a href=\"summary.csv\">summary.csv</a>.</p>\n",
                group.runs.len() - ROWS_PER_GROUP
            ));
    }
    for note in &group.plot_notes {
        out.push_str(&format!("<p class=\"notes\">{}</p>\n", esc(note)));
    }
    if let Some(plot) = &group.plot {
        out.push_str(&format!(
                "<img src=\"{}\" alt=\"{}: resources against allocations; the figures are in the table below it\">\n{}",
                esc(plot),
                esc(&group.name),
                data_tables(&group.plot_data)
            ));
    }
    out
}
