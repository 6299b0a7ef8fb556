//! Summaries of a sweep: `index.html` (verdict first), `summary.md`, `summary.csv`
//! and SVG plots. The sweep keeps a slim view of each run as it ends ([`RunView`])
//! and re-renders at most every few seconds, so its cost per run stays flat; every
//! file can be rebuilt from `results.jsonl` alone (`cargo xtask summary DIR`).

mod html;
mod model;
pub mod plots;
pub mod tables;

use crate::records::SweepRecord;
use clmulti_explain::diagnosis::{Diagnosis, Fix, Placed, Role};
use clmulti_scenario::Strategy;
use model::{group_rank, Candidates, RunView};
use std::path::{Path, PathBuf};

/// One output of the summary.
pub trait Exporter {
    /// The file it writes, relative to the results folder.
    fn file_name(&self) -> String;
    /// Its content.
    fn render(&self, view: &View<'_>) -> Result<String, String>;
}

/// What every exporter renders: runs in report order, grouped, with the verdict.
#[derive(Debug)]
pub struct View<'a> {
    /// Runs: the seed's groups first, then mitigations, then the rest.
    pub runs: Vec<&'a RunView>,
    /// Groups in order, with their plot's file name.
    pub groups: Vec<Group<'a>>,
    /// The verdicts: one per scenario file that holds the seed's cases itself, else
    /// one over the sweep's runs; each with its title.
    pub verdicts: Vec<(String, Diagnosis)>,
    /// The buffers-reached plot's file name.
    pub buffers_plot: String,
    /// The scaling plot's file name, when there is one.
    pub scaling_plot: Option<String>,
}

/// A scenario file's runs.
#[derive(Debug)]
pub struct Group<'a> {
    pub name: String,
    pub file: String,
    pub runs: Vec<&'a RunView>,
    pub plot: Option<String>,
    pub plot_notes: Vec<String>,
}

/// The sweep's view of its results: slim runs kept as they end, files on demand.
#[derive(Debug)]
pub struct Summary {
    dir: PathBuf,
    runs: Vec<RunView>,
    /// Across every run.
    candidates: Candidates,
    /// Per scenario file.
    by_file: std::collections::BTreeMap<String, Candidates>,
}

/// A file-name-safe version of a name, short enough for any file system (a name
/// is at most 255 bytes): a long one keeps its start and a hash of the whole.
pub fn slug(name: &str) -> String {
    const MAX: usize = 80;
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.len() <= MAX {
        return safe;
    }
    format!("{}-{}", &safe[..MAX - 17], crate::records::fnv64(name))
}

impl Summary {
    pub fn new(dir: &Path) -> Self {
        Summary {
            dir: dir.to_path_buf(),
            runs: Vec::new(),
            candidates: Candidates::default(),
            by_file: std::collections::BTreeMap::new(),
        }
    }

    pub fn add(&mut self, record: SweepRecord) {
        self.candidates.offer(&record);
        self.by_file
            .entry(record.file.clone())
            .or_default()
            .offer(&record);
        self.runs.push(RunView::from(&record));
    }

    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// The verdicts: a scenario file that holds a shared case and one it compares
    /// with (one device, or per-device contexts) gets its own; otherwise one over
    /// every run (the seed's cases come from three files).
    fn verdicts(&self) -> Vec<(String, Diagnosis)> {
        let mut own: Vec<(String, Diagnosis)> = self
            .by_file
            .iter()
            .filter(|(_, c)| {
                let has = |role| c.runs.iter().any(|(r, _, _)| *r == role);
                has(Role::Shared) && (has(Role::OneDevice) || has(Role::PerDevice))
            })
            .filter_map(|(file, c)| Some((model::group_of(file), diagnosis(c)?)))
            .collect();
        own.sort_by_key(|(name, _)| group_rank(name));
        if own.is_empty() {
            own.extend(diagnosis(&self.candidates).map(|d| ("the sweep's runs".to_owned(), d)));
        }
        own
    }
}

/// The verdict over candidates, from the diagnose logic: the seed-like runs as the
/// matrix, shared pools and pins as fixes.
fn diagnosis(candidates: &Candidates) -> Option<Diagnosis> {
    {
        let matrix: Vec<Placed<'_>> = candidates
            .runs
            .iter()
            .filter(|(_, _, r)| {
                !matches!(
                    r.scenario.allocation.strategy,
                    Strategy::Pool | Strategy::Pin
                )
            })
            .map(|(role, _, report)| Placed {
                role: *role,
                report,
            })
            .collect();
        if !matrix.iter().any(|p| p.role == Role::Shared) {
            return None;
        }
        let shared_failed = matrix.iter().any(|p| {
            p.role == Role::Shared
                && matches!(p.report.stop, clmulti_explain::StopReason::Failed { .. })
        });
        let mut fixes = Vec::new();
        if shared_failed {
            if let Some(per) = matrix.iter().find(|p| p.role == Role::PerDevice) {
                fixes.push((Fix::PerDeviceContexts, Ok(per.report)));
            }
            for (_, _, r) in &candidates.runs {
                match r.scenario.allocation.strategy {
                    Strategy::Pool => fixes.push((Fix::Pool, Ok(r))),
                    Strategy::Pin
                        if !matches!(r.stop, clmulti_explain::StopReason::Unsupported { .. }) =>
                    {
                        fixes.push((Fix::Pin, Ok(r)))
                    }
                    _ => {}
                }
            }
        }
        Some(Diagnosis::new(&matrix, &fixes))
    }
}

impl Summary {
    fn view(&self) -> Result<(View<'_>, Vec<(String, String)>), String> {
        let mut order: Vec<&RunView> = self.runs.iter().collect();
        order.sort_by_key(|r| group_rank(&r.row.group));
        let mut groups: Vec<Group<'_>> = Vec::new();
        for run in &order {
            match groups.iter_mut().find(|g| g.file == run.file) {
                Some(g) => g.runs.push(run),
                None => groups.push(Group {
                    name: run.row.group.clone(),
                    file: run.file.clone(),
                    runs: vec![run],
                    plot: None,
                    plot_notes: Vec::new(),
                }),
            }
        }
        // Plot files: one per group, unique even when two names reduce alike.
        let mut used = std::collections::HashSet::new();
        let mut plots = Vec::new();
        for group in &mut groups {
            let base = format!("group-{}", slug(&group.name));
            let name = (1..)
                .map(|n| {
                    if n == 1 {
                        format!("{base}.svg")
                    } else {
                        format!("{base}-{n}.svg")
                    }
                })
                .find(|n| used.insert(n.clone()))
                .expect("a free name");
            let (svg, notes) = plots::group(&group.name, &group.runs)?;
            group.plot_notes = notes;
            if let Some(svg) = svg {
                plots.push((name.clone(), svg));
                group.plot = Some(name);
            }
        }
        plots.push(("buffers.svg".into(), plots::buffers(&order)?));
        let scaling = plots::scaling(&order)?;
        let scaling_plot = scaling.is_some().then(|| "scaling.svg".to_owned());
        if let Some(svg) = scaling {
            plots.push(("scaling.svg".into(), svg));
        }
        Ok((
            View {
                runs: order,
                groups,
                verdicts: self.verdicts(),
                buffers_plot: "buffers.svg".into(),
                scaling_plot,
            },
            plots,
        ))
    }

    /// Writes every summary file, each through a temporary file and a rename.
    pub fn write(&self) -> Result<(), String> {
        let (view, plots) = self.view()?;
        let exporters: [&dyn Exporter; 3] = [&tables::Markdown, &tables::Csv, &html::Html];
        let mut files: Vec<(String, String)> = plots;
        for exporter in exporters {
            files.push((exporter.file_name(), exporter.render(&view)?));
        }
        for (name, text) in files {
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
    match crate::records::open_regular(&results) {
        Ok(Some(_)) => {}
        Ok(None) => return Err(format!("{}: no results.jsonl here", dir.display())),
        Err(e) => return Err(format!("{}: {e}", results.display())),
    }
    // Each run once: its newest record.
    crate::records::for_each_latest(&results, |r| summary.add(r))
        .map_err(|e| format!("{}: {e}", results.display()))?;
    summary.write()?;
    Ok(summary.len())
}
