//! The tables: Markdown, CSV and HTML.

use super::{Exporter, Row};

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

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

fn cells(row: &Row) -> [String; 16] {
    [
        row.run.clone(),
        row.group.clone(),
        row.headline.clone(),
        row.devices.clone(),
        row.device_count.to_string(),
        row.context_mode.clone(),
        row.strategy.clone(),
        row.buffers.to_string(),
        row.outcome.clone(),
        row.stop.clone(),
        opt(row.rss_per_buffer, 0),
        opt(row.fds_per_buffer, 3),
        opt(row.maps_per_buffer, 3),
        opt(row.device_mem_per_buffer, 0),
        row.bytes_requested.to_string(),
        row.host.clone(),
    ]
}

/// `summary.md`
#[derive(Debug)]
pub struct Markdown;

/// A Markdown table cell: pipes escaped, line breaks as `<br>`.
pub fn markdown_cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', "<br>")
}

impl Exporter for Markdown {
    fn file_name(&self) -> String {
        "summary.md".into()
    }

    fn render(&self, rows: &[Row]) -> Result<String, String> {
        let mut out = format!(
            "| {} |\n|{}\n",
            HEADERS.join(" | "),
            "---|".repeat(HEADERS.len())
        );
        for row in rows {
            let cells: Vec<String> = cells(row).iter().map(|c| markdown_cell(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        Ok(out)
    }
}

/// `summary.csv`
#[derive(Debug)]
pub struct Csv;

impl Exporter for Csv {
    fn file_name(&self) -> String {
        "summary.csv".into()
    }

    fn render(&self, rows: &[Row]) -> Result<String, String> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(HEADERS).map_err(|e| e.to_string())?;
        for row in rows {
            writer.write_record(cells(row)).map_err(|e| e.to_string())?;
        }
        let bytes = writer.into_inner().map_err(|e| e.to_string())?;
        String::from_utf8(bytes).map_err(|e| e.to_string())
    }
}

/// `index.html`
#[derive(Debug)]
pub struct Html;

pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Exporter for Html {
    fn file_name(&self) -> String {
        "index.html".into()
    }

    fn render(&self, rows: &[Row]) -> Result<String, String> {
        let mut out = String::from(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>clmulti sweep</title></head><body>\n<h1>clmulti sweep</h1>\n<table>\n<tr>",
        );
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
        out.push_str("</table>\n</body></html>\n");
        Ok(out)
    }
}
