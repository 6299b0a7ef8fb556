//! Summaries of a sweep, rebuilt from the records: Markdown, CSV and an `index.html`.
//! Each format is an [`Exporter`]; the sweep keeps the rows in memory and re-renders
//! at most every few seconds, so its cost per run does not grow with the sweep.

pub mod tables;

use crate::records::SweepRecord;
use clmulti_alloc::{Resource, StopReason};
use std::path::{Path, PathBuf};

pub use tables::{Csv, Html, Markdown};

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
    pub bytes_requested: u64,
    pub outcome: String,
    pub stop: String,
    pub headline: String,
    pub rss_per_buffer: Option<f64>,
    pub fds_per_buffer: Option<f64>,
    pub maps_per_buffer: Option<f64>,
    pub device_mem_per_buffer: Option<f64>,
    pub host: String,
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
        let cost = |wanted: &dyn Fn(&Resource) -> bool| {
            let matching: Vec<f64> = r
                .costs
                .iter()
                .filter(|c| !c.estimated && wanted(&c.resource))
                .map(|c| c.per_buffer)
                .collect();
            (!matching.is_empty()).then(|| matching.iter().sum())
        };
        let mut names: Vec<&str> = r.devices.iter().map(|d| d.display_name()).collect();
        let count = names.len();
        names.dedup();
        let stop = match &r.stop {
            StopReason::Failed { error, call, .. } => {
                format!("failed: {error} in {}", call.c_name())
            }
            other => other.summary(),
        };
        Row {
            run: r.run_name.clone(),
            group: group_of(record),
            devices: if count == 0 {
                "-".into()
            } else {
                format!("{count} x {}", names.join(" + "))
            },
            device_count: count,
            context_mode: r.scenario.context_mode.name().to_owned(),
            strategy: r.scenario.allocation.strategy.name().to_owned(),
            buffers: r.buffers,
            bytes_requested: r.bytes_requested,
            outcome: r.stop.kind().to_owned(),
            stop,
            headline: r.headline(),
            rss_per_buffer: cost(&|c| *c == Resource::HostRss),
            fds_per_buffer: cost(&|c| *c == Resource::OpenFds),
            maps_per_buffer: cost(&|c| *c == Resource::MemoryMaps),
            device_mem_per_buffer: cost(&|c| matches!(c, Resource::DeviceMemory { .. })),
            host: record.host.clone(),
        }
    }
}

/// One output format of the summary.
pub trait Exporter {
    /// The file it writes, relative to the results folder.
    fn file_name(&self) -> String;
    /// Its content.
    fn render(&self, rows: &[Row]) -> Result<String, String>;
}

/// The sweep's view of its results: rows kept as runs end, files written on demand.
#[derive(Debug)]
pub struct Summary {
    dir: PathBuf,
    rows: Vec<Row>,
}

impl Summary {
    pub fn new(dir: &Path) -> Self {
        Summary {
            dir: dir.to_path_buf(),
            rows: Vec::new(),
        }
    }

    pub fn add(&mut self, record: SweepRecord) {
        self.rows.push(Row::from(&record));
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Writes every summary file, each through a temporary file and a rename.
    pub fn write(&self) -> Result<(), String> {
        let exporters: [&dyn Exporter; 3] = [&Markdown, &Csv, &Html];
        for exporter in exporters {
            let name = exporter.file_name();
            let text = exporter.render(&self.rows)?;
            let tmp = self.dir.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, &text).map_err(|e| format!("{}: {e}", tmp.display()))?;
            std::fs::rename(&tmp, self.dir.join(&name)).map_err(|e| format!("{name}: {e}"))?;
        }
        Ok(())
    }
}

/// `cargo xtask summary DIR`: rebuilds the summaries from `DIR/results.jsonl` alone.
pub fn rebuild(dir: &Path) -> Result<usize, String> {
    let mut summary = Summary::new(dir);
    let results = dir.join("results.jsonl");
    if !results.exists() {
        return Err(format!("{}: no results.jsonl here", dir.display()));
    }
    crate::records::for_each(&results, |r| summary.add(r))
        .map_err(|e| format!("{}: {e}", results.display()))?;
    summary.write()?;
    Ok(summary.len())
}
