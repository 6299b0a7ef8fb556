//! What the summary keeps of each run: a table row, a few points per resource for
//! the plots, and, for the runs the verdict compares, the report without its samples.
//! Kept small, so that a sweep of 10,000 runs stays cheap to hold and to render.

use crate::records::SweepRecord;
use clmulti_explain::diagnosis::Role;
use clmulti_explain::{Limit, Report, Resource, StopKind, StopReason, Unit};
use clmulti_scenario::Strategy;
use std::path::Path;

/// Points kept per resource and run: enough for a line's shape.
const POINTS: usize = 24;

/// One table row: what a reader compares across runs.
#[derive(Debug, Clone)]
pub struct Row {
    pub run: String,
    pub group: String,
    pub devices: String,
    pub device_count: usize,
    pub context_mode: clmulti_scenario::ContextMode,
    pub strategy: String,
    /// Bytes per buffer.
    pub size_bytes: u64,
    pub buffers: u64,
    pub bytes_requested: u64,
    pub outcome: StopKind,
    pub stop: String,
    pub headline: String,
    pub rss_per_buffer: Option<f64>,
    pub fds_per_buffer: Option<f64>,
    pub maps_per_buffer: Option<f64>,
    pub device_mem_per_buffer: Option<f64>,
    /// The host and the devices the run used (`vm: NVIDIA H200 (NVIDIA CUDA)`).
    pub host: String,
}

/// One resource's readings in a run, thinned to a few points.
#[derive(Debug, Clone)]
pub struct Series {
    pub resource: Resource,
    pub points: Vec<(u64, f64)>,
    /// Whether every sample had a reading: a series with gaps (mapping counts left
    /// out of cheap samples) is drawn as points, not a line that would invent the
    /// readings in between.
    pub continuous: bool,
    pub limit: Option<Limit>,
}

/// Everything kept of a run.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The record's key (run and kind of machine), as `plan.json` lists it.
    pub key: String,
    pub row: Row,
    pub file: String,
    pub series: Vec<Series>,
    pub failed_at: Option<u64>,
    pub notes: Vec<String>,
    pub fell_back: bool,
    pub layers: Option<String>,
    pub platform: String,
    /// The host the run ran on (empty: not recorded).
    pub host_name: String,
    /// The devices it used, with their platform, each once.
    pub devices_used: Vec<String>,
    pub device_names: Vec<String>,
    pub drivers: Vec<String>,
    /// NEO running emulated devices (AUB mode), when the run's platform and `[env]` say so.
    pub neo_emulation: Option<clmulti_probe::neo::NeoEmulation>,
    pub tool: String,
    pub os: String,
    pub finished_at: u64,
    pub per_buffer: Vec<(Resource, f64)>,
}

/// The group a run belongs to: its scenario file's stem.
pub fn group_of(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map_or_else(|| file.to_owned(), |s| s.to_string_lossy().into_owned())
}

/// Where a group comes in the report: the seed's three runs first, then the
/// mitigations, then the rest.
pub fn group_rank(group: &str) -> (u8, String) {
    let rank = match group {
        "seed-1gpu" => 0,
        "seed-2gpu-shared" => 1,
        "seed-2gpu-per-device" => 2,
        g if g.starts_with("seed") => 3,
        g if g.starts_with("mitigation") => 4,
        _ => 5,
    };
    (rank, group.to_owned())
}

fn thin(points: Vec<(u64, f64)>) -> Vec<(u64, f64)> {
    if points.len() <= POINTS {
        return points;
    }
    let last = points.len() - 1;
    (0..POINTS)
        .map(|i| points[i * last / (POINTS - 1)])
        .collect()
}

impl RunView {
    // long: a flat table: a record's figures into a row, field by field
    pub fn from(record: &SweepRecord) -> Self {
        let r = &record.report;
        let resources = Resource::all_in(&r.samples, &r.devices);
        let series = resources
            .into_iter()
            .filter_map(|resource| {
                let points: Vec<(u64, f64)> = r
                    .samples
                    .iter()
                    .filter_map(|s| Some((s.allocations, resource.reading(s, &r.host_limits)?)))
                    .collect();
                // Resources that read zero throughout say nothing.
                if points.is_empty() || points.iter().all(|(_, v)| *v == 0.0) {
                    return None;
                }
                let limit = r
                    .costs
                    .iter()
                    .find(|c| c.resource == resource)
                    .and_then(|c| c.limit.clone());
                Some(Series {
                    resource,
                    continuous: points.len() == r.samples.len(),
                    points: thin(points),
                    limit,
                })
            })
            .collect();
        let mut notes: Vec<String> = r
            .warnings
            .iter()
            .map(|w| clmulti_explain::library_file_names(&w.message))
            .collect();
        notes.extend(
            r.driver_messages
                .iter()
                .take(5)
                .map(|m| format!("driver: {m}")),
        );
        if !r.stderr_tail.is_empty() {
            if let Some(last) = r.stderr_tail.lines().rev().find(|l| !l.trim().is_empty()) {
                notes.push(format!("stderr: {last}"));
            }
        }
        let mut names: Vec<String> = r
            .devices
            .iter()
            .map(|d| d.display_name().to_owned())
            .collect();
        names.dedup();
        let mut drivers: Vec<String> = r
            .devices
            .iter()
            .filter_map(|d| d.driver_version.value().cloned())
            .collect();
        drivers.dedup();
        RunView {
            key: record.key.clone(),
            row: Row::from(record),
            file: record.file.clone(),
            series,
            failed_at: matches!(
                r.stop,
                StopReason::Failed { .. } | StopReason::Crashed { .. }
            )
            .then_some(r.buffers),
            notes,
            fell_back: r
                .warnings
                .iter()
                .any(|w| w.kind == clmulti_explain::WarningKind::FellBackToAnyType),
            // File names: a build folder's path says nothing to a reader.
            layers: r.layers.as_ref().map(|l| {
                let names: Vec<String> = l
                    .opencl_layers
                    .split(':')
                    .map(|p| {
                        std::path::Path::new(p)
                            .file_name()
                            .map_or_else(|| p.to_owned(), |n| n.to_string_lossy().into_owned())
                    })
                    .collect();
                format!(
                    "{}{}",
                    names.join(":"),
                    l.emulation
                        .iter()
                        .map(|(k, v)| format!(" {k}={v}"))
                        .collect::<String>()
                )
            }),
            host_name: record.host_name().to_owned(),
            devices_used: record.devices_used(),
            platform: format!("{} {}", r.platform, r.platform_version)
                .trim()
                .to_owned(),
            // Records from before the engine recorded it: inferred as the engine does.
            neo_emulation: r.neo_emulation.clone().or_else(|| {
                clmulti_probe::neo::emulation_for_run(
                    &r.platform,
                    drivers.first().map_or("", String::as_str),
                    &r.scenario.env,
                )
            }),
            device_names: names,
            drivers,
            tool: record.tool.clone(),
            os: record.os.clone(),
            finished_at: record.finished_at,
            per_buffer: r
                .costs
                .iter()
                .filter(|c| !c.estimated)
                .map(|c| (c.resource.clone(), c.per_buffer))
                .collect(),
        }
    }

    /// A resource's cost per buffer in this run.
    pub fn cost(&self, resource: &Resource) -> Option<f64> {
        self.per_buffer
            .iter()
            .find(|(r, _)| r == resource)
            .map(|(_, v)| *v)
    }
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
            group: group_of(&record.file),
            devices: if count == 0 {
                "-".into()
            } else {
                format!("{count} x {}", names.join(" + "))
            },
            device_count: count,
            context_mode: r.scenario.context_mode,
            strategy: r.scenario.allocation.strategy.name().to_owned(),
            size_bytes: r.scenario.allocation.size_bytes,
            buffers: r.buffers,
            bytes_requested: r.bytes_requested,
            outcome: r.stop.kind(),
            stop,
            headline: r.headline(),
            rss_per_buffer: cost(&|c| *c == Resource::HostRss),
            fds_per_buffer: cost(&|c| *c == Resource::OpenFds),
            maps_per_buffer: cost(&|c| *c == Resource::MemoryMaps),
            device_mem_per_buffer: cost(&|c| matches!(c, Resource::DeviceMemory { .. })),
            host: crate::records::machine_words(record.host_name(), &record.devices_used()),
        }
    }
}

/// A value in a resource's unit, for people (`-` when absent).
pub fn human(unit: Unit, value: Option<f64>) -> String {
    unit.format_or_dash(value)
}

/// The verdict's candidates: for each (case, strategy), the run that best matches the
/// seed (2 devices, 1 MiB buffers, the seed's groups first), kept without samples.
#[derive(Debug, Default)]
pub struct Candidates {
    pub runs: Vec<(Role, (u8, usize), Report)>,
}

impl Candidates {
    fn rank(record: &SweepRecord) -> (u8, usize) {
        let r = &record.report;
        let seed_group = u8::from(!group_of(&record.file).starts_with("seed"));
        let devices = r.devices.len().max(1);
        let distance = if devices == 1 { 0 } else { devices.abs_diff(2) };
        (
            seed_group,
            distance + usize::from(r.scenario.allocation.size_bytes != 1 << 20) * 8,
        )
    }

    pub fn offer(&mut self, record: &SweepRecord) {
        let r = &record.report;
        let strategy = r.scenario.allocation.strategy;
        let role = Role::of(r);
        // Skipped and unsupported runs measured nothing; pools and pins are fixes.
        if matches!(
            r.stop,
            StopReason::Skipped { .. } | StopReason::Unsupported { .. }
        ) || (matches!(strategy, Strategy::Pool | Strategy::Pin) && role != Role::Shared)
        {
            return;
        }
        let rank = Self::rank(record);
        let mut slim = r.clone();
        slim.samples.clear();
        match self
            .runs
            .iter_mut()
            .find(|(ro, _, rep)| *ro == role && rep.scenario.allocation.strategy == strategy)
        {
            Some(existing) if existing.1 <= rank => {}
            Some(existing) => *existing = (role, rank, slim),
            None => self.runs.push((role, rank, slim)),
        }
    }
}
