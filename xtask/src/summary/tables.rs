//! The tables: Markdown (a person's), CSV (raw numbers for tools).

use super::model::{human, Row};
use super::{Exporter, View};
use clmulti_explain::render::markdown_escape;
use clmulti_explain::Unit;

/// A Markdown table cell: text escaped (no markup from a name, see
/// [`markdown_escape`]), line breaks as `<br>`.
pub fn markdown_cell(s: &str) -> String {
    markdown_escape(s).replace('\n', "<br>")
}

/// `summary.md`: the verdict, then one table per group.
#[derive(Debug)]
pub struct Markdown;

impl Exporter for Markdown {
    fn file_name(&self) -> String {
        "summary.md".into()
    }

    fn render(&self, view: &View<'_>) -> Result<String, String> {
        let mut out = String::from("# clmulti sweep\n\n");
        let header: Vec<String> = super::html::header_lines(view)
            .iter()
            .map(
                |line| match line.strip_prefix("**").and_then(|l| l.split_once("**")) {
                    Some((label, rest)) => format!("**{label}**{}", markdown_escape(rest)),
                    None => markdown_escape(line),
                },
            )
            .collect();
        out.push_str(&header.join("\n\n"));
        out.push_str("\n\n");
        if let Some(c) = view.completeness.as_ref().filter(|c| c.missing() > 0) {
            out.push_str(&format!(
                "> **Incomplete:** {}. Planned {}, done {}, missing {}: what follows covers only the runs that ran.\n\n",
                markdown_escape(&c.line()),
                c.planned,
                c.done,
                c.missing()
            ));
        }
        for (title, d) in &view.verdicts {
            out.push_str(&format!("## Verdict: {}\n\n", markdown_cell(title)));
            for line in d.answer() {
                out.push_str(&format!("> {}\n>\n", markdown_cell(&line)));
            }
            out.push('\n');
            for s in d.headline() {
                out.push_str(&format!("- {}\n", markdown_cell(&s.to_string())));
            }
            for line in d.fix_lines() {
                // "[measured] worked: ..." reads "[measured] fix worked: ...".
                let line = match line.split_once("] ") {
                    Some((tag, rest)) if line.starts_with('[') => format!("{tag}] fix {rest}"),
                    _ => format!("fix {line}"),
                };
                out.push_str(&format!("- {}\n", markdown_cell(&line)));
            }
            out.push('\n');
        }
        let uncovered = super::html::uncovered_lines(view);
        if !uncovered.is_empty() {
            out.push_str("## Runs without a verdict\n\n");
            for line in uncovered {
                out.push_str(&format!("- {}\n", markdown_cell(&line)));
            }
            out.push('\n');
        }
        for group in &view.groups {
            out.push_str(&format!(
                "## {}\n\n| run | result | devices | context | strategy | buffers | RSS/buffer | fds/buffer | device memory/buffer |\n|---|---|---|---|---|---|---|---|---|\n",
                markdown_cell(&group.name)
            ));
            for run in &group.runs {
                let r = &run.row;
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                    markdown_cell(&r.run),
                    markdown_cell(&r.headline),
                    markdown_cell(&r.devices),
                    r.context_mode.name(),
                    r.strategy,
                    clmulti_scenario::format_count(r.buffers as f64),
                    human(Unit::Bytes, r.rss_per_buffer),
                    human(Unit::Count, r.fds_per_buffer),
                    human(Unit::Bytes, r.device_mem_per_buffer),
                ));
            }
            out.push('\n');
        }
        Ok(out)
    }
}

const HEADERS: [&str; 16] = [
    "run",
    "group",
    "result",
    "devices",
    "device count",
    "context mode",
    "strategy",
    "buffers reached",
    "outcome",
    "stop reason",
    "host RSS B/buffer",
    "fds/buffer",
    "maps/buffer",
    "device mem B/buffer",
    "bytes requested",
    "host",
];

fn cells(row: &Row) -> [String; 16] {
    let opt =
        |v: Option<f64>, digits: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"));
    [
        inert(&row.run),
        inert(&row.group),
        inert(&row.headline),
        inert(&row.devices),
        row.device_count.to_string(),
        row.context_mode.name().to_owned(),
        inert(&row.strategy),
        row.buffers.to_string(),
        row.outcome.to_string(),
        inert(&row.stop),
        opt(row.rss_per_buffer, 0),
        opt(row.fds_per_buffer, 3),
        opt(row.maps_per_buffer, 3),
        opt(row.device_mem_per_buffer, 0),
        row.bytes_requested.to_string(),
        inert(&row.host),
    ]
}

/// Text a spreadsheet would not evaluate: a cell that starts as a formula does (`=`,
/// `+`, `-`, `@`, a tab or a carriage return) gets a leading `'` (OWASP's rule for
/// CSV injection); a lone `-`, clmulti's "none", is no formula. Numbers are written
/// by clmulti, never taken from names.
fn inert(text: &str) -> String {
    if text.len() > 1 && text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

/// `summary.csv`: one row per run, raw numbers.
#[derive(Debug)]
pub struct Csv;

impl Exporter for Csv {
    fn file_name(&self) -> String {
        "summary.csv".into()
    }

    fn render(&self, view: &View<'_>) -> Result<String, String> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(HEADERS).map_err(|e| e.to_string())?;
        for run in &view.runs {
            writer
                .write_record(cells(&run.row))
                .map_err(|e| e.to_string())?;
        }
        let bytes = writer.into_inner().map_err(|e| e.to_string())?;
        String::from_utf8(bytes).map_err(|e| e.to_string())
    }
}
