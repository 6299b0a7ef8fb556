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
use clmulti_explain::Statement;
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
    /// one over the sweep's runs; each with its title, and saying which runs it
    /// compares and how the others ended.
    pub verdicts: Vec<(String, Diagnosis)>,
    /// Runs of files that have no verdict of their own while others do: no verdict
    /// above speaks for them.
    pub uncovered: Vec<&'a RunView>,
    /// What the folder's plan (`plan.json`) set out to run, against what ran.
    pub completeness: Option<Completeness>,
    /// The buffers-reached plot's file name, and its figures.
    pub buffers_plot: String,
    pub buffers_data: Vec<plots::PlotData>,
    /// The scaling plot's file name and figures, when there is one.
    pub scaling_plot: Option<String>,
    pub scaling_data: Vec<plots::PlotData>,
}

/// A scenario file's runs.
#[derive(Debug)]
pub struct Group<'a> {
    pub name: String,
    pub file: String,
    pub runs: Vec<&'a RunView>,
    pub plot: Option<String>,
    pub plot_notes: Vec<String>,
    /// The plot's figures, shown beside it.
    pub plot_data: Vec<plots::PlotData>,
}

/// Where the sweep that writes a folder stands, as far as the summary knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepState {
    /// Runs are still going: the page is rewritten as they end.
    Running,
    /// The sweep went through its plan (some runs may have been invalid).
    Ended,
    /// Ctrl-C or a signal stopped it; `--resume` continues.
    Interrupted,
}

/// The plan's runs against the records: planned, done, missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completeness {
    /// Runs the last sweep into the folder planned.
    pub planned: usize,
    /// Of those, runs with a record here.
    pub done: usize,
    /// Why the others have none, in words.
    pub why_missing: String,
}

impl Completeness {
    /// Planned runs without a record.
    pub fn missing(&self) -> usize {
        self.planned - self.done
    }

    /// One line for people: `2 of the 4 planned runs did not run (...)`.
    pub fn line(&self) -> String {
        if self.missing() == 0 {
            format!("all {} planned runs ran", self.planned)
        } else {
            format!(
                "{} of the {} planned runs did not run ({}); {} did",
                self.missing(),
                self.planned,
                self.why_missing,
                self.done
            )
        }
    }
}

/// The sweep's view of its results: slim runs kept as they end, files on demand.
#[derive(Debug)]
pub struct Summary {
    dir: PathBuf,
    /// Set by a sweep that writes the folder; `None` when rebuilt from its files.
    state: Option<SweepState>,
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
            state: None,
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

    /// Tells the summary where the sweep stands (the page says so).
    pub fn set_state(&mut self, state: SweepState) {
        self.state = Some(state);
    }

    /// The plan's runs against the records, when the folder has a plan.
    fn completeness(&self) -> Option<Completeness> {
        let plan = crate::records::Plan::read(&self.dir).ok().flatten()?;
        let recorded: std::collections::HashSet<&str> =
            self.runs.iter().map(|r| r.key.as_str()).collect();
        let done = plan
            .keys
            .iter()
            .filter(|k| recorded.contains(k.as_str()))
            .count();
        let state = self.state.unwrap_or_else(|| {
            if crate::lock::is_locked(&self.dir) {
                SweepState::Running
            } else {
                SweepState::Interrupted
            }
        });
        let why_missing = match state {
            SweepState::Running => {
                "not yet: the sweep was still running when this page was written".to_owned()
            }
            SweepState::Ended => "the sweep ended before them".to_owned(),
            SweepState::Interrupted => {
                "the sweep stopped before them; `cargo xtask sweep --resume` with the same paths and --out runs them".to_owned()
            }
        };
        Some(Completeness {
            planned: plan.keys.len(),
            done,
            why_missing,
        })
    }

    /// The verdicts: a scenario file that holds a shared case and one it compares
    /// with (one device, or per-device contexts) gets its own; otherwise one over
    /// every run (the seed's cases come from three files). Each says which runs it
    /// compares and how the others in its scope ended.
    fn verdicts(&self, completeness: Option<&Completeness>) -> Vec<(String, Diagnosis)> {
        let missing = completeness.map_or(0, Completeness::missing);
        let mut own: Vec<(String, Diagnosis)> = self
            .by_file
            .iter()
            .filter(|(_, c)| {
                let has = |role| c.runs.iter().any(|(r, _, _)| *r == role);
                has(Role::Shared) && (has(Role::OneDevice) || has(Role::PerDevice))
            })
            .filter_map(|(file, c)| {
                let (mut d, used) = diagnosis(c)?;
                let scope: Vec<&RunView> = self.runs.iter().filter(|r| &r.file == file).collect();
                cover(&mut d, &used, &scope, "of this file", missing);
                Some((model::group_of(file), d))
            })
            .collect();
        own.sort_by_key(|(name, _)| group_rank(name));
        if own.is_empty() {
            if let Some((mut d, used)) = diagnosis(&self.candidates) {
                let scope: Vec<&RunView> = self.runs.iter().collect();
                cover(&mut d, &used, &scope, "on this page", missing);
                own.push(("the sweep's runs".to_owned(), d));
            }
        }
        own
    }

    /// Runs that no verdict speaks for: those of files without a verdict of their
    /// own, when other files have one.
    fn uncovered(&self) -> Vec<&RunView> {
        let own: Vec<&String> = self
            .by_file
            .iter()
            .filter(|(_, c)| {
                let has = |role| c.runs.iter().any(|(r, _, _)| *r == role);
                has(Role::Shared) && (has(Role::OneDevice) || has(Role::PerDevice))
            })
            .map(|(file, _)| file)
            .collect();
        if own.is_empty() {
            return Vec::new();
        }
        self.runs
            .iter()
            .filter(|r| !own.contains(&&r.file))
            .collect()
    }
}

/// What the diagnosis says when none of the runs it compares failed; rewritten when
/// the runs it compares are not all the runs it speaks for.
const NO_RUN_FAILED: &str = "no run failed";

/// Says which runs a verdict compares and how every other run in its scope ended, so
/// that a failed, stopped, skipped or never-run run is never hidden under "no run
/// failed".
fn cover(
    d: &mut Diagnosis,
    used: &[(String, String)],
    scope: &[&RunView],
    scope_words: &str,
    missing: usize,
) {
    let is_used = |r: &RunView| used.iter().any(|(f, n)| *f == r.file && *n == r.row.run);
    let compared: Vec<&str> = scope
        .iter()
        .filter(|r| is_used(r))
        .map(|r| r.row.run.as_str())
        .collect();
    let others: Vec<&&RunView> = scope.iter().filter(|r| !is_used(r)).collect();
    let unfinished: Vec<&&RunView> = others
        .iter()
        .copied()
        .filter(|r| r.row.outcome != clmulti_explain::StopKind::Completed)
        .collect();
    let mut lines = vec![Statement::measured(format!(
        "this verdict compares {} of the {} runs {scope_words}: {}{}",
        compared.len(),
        scope.len(),
        names(&compared),
        match (others.len(), unfinished.len()) {
            (0, _) => String::new(),
            (n, 0) => format!("; the other {n} completed"),
            (n, u) if u == n => String::new(),
            (n, u) => format!("; {} of the other {n} completed", n - u),
        }
    ))];
    if !unfinished.is_empty() {
        const SHOWN: usize = 8;
        let mut listed: Vec<String> = unfinished
            .iter()
            .take(SHOWN)
            .map(|r| format!("{}: {}", r.row.run, r.row.headline))
            .collect();
        if unfinished.len() > SHOWN {
            listed.push(format!(
                "and {} more (see the tables below)",
                unfinished.len() - SHOWN
            ));
        }
        lines.push(Statement::measured(format!(
            "not compared, and did not complete: {}",
            listed.join("; ")
        )));
    }
    if missing > 0 {
        lines.push(Statement::inferred(
            "plan.json against results.jsonl",
            format!("{missing} planned run(s) did not run: nothing here speaks for them"),
        ));
    }
    lines.extend(by_device_count(scope));
    let partial = !others.is_empty() || missing > 0;
    for s in &mut d.verdict {
        if partial && s.text == NO_RUN_FAILED {
            s.text = format!(
                "none of the {} runs this verdict compares failed",
                compared.len()
            );
        }
    }
    // The scope first: what the statements after it speak for.
    d.verdict.splice(0..0, lines);
    d.uncompared = unfinished
        .iter()
        .map(|r| format!("{}: {}", r.row.run, r.row.headline))
        .collect();
    d.finish();
}

/// For a scope whose runs vary the device count (three counts or more): the cost per
/// buffer at each count, a shared context beside one context per device, and what
/// each added device adds to a shared context (a least-squares line). The verdict's
/// comparison speaks for 1 and 2 devices only; this speaks for all of them.
fn by_device_count(scope: &[&RunView]) -> Option<Statement> {
    use clmulti_scenario::ContextMode;
    let mut counts: Vec<usize> = scope.iter().map(|r| r.row.device_count).collect();
    counts.sort_unstable();
    counts.dedup();
    counts.retain(|&n| n > 0);
    if counts.len() < 3 {
        return None;
    }
    let strategy = scope.first()?.row.strategy.clone();
    let at = |n: usize, mode: ContextMode| {
        scope.iter().find(|r| {
            r.row.device_count == n
                && r.row.context_mode == mode
                && r.row.strategy == strategy
                && r.row.buffers > 0
        })
    };
    let cell = |r: Option<&&RunView>| {
        r.map_or_else(
            || "-".to_owned(),
            |r| {
                let rss = r
                    .row
                    .rss_per_buffer
                    .map_or("-".into(), clmulti_scenario::format_bytes);
                let fds = r
                    .row
                    .fds_per_buffer
                    .map_or("-".into(), |f| format!("{f:.2}"));
                format!("{rss} RSS, {fds} fds")
            },
        )
    };
    let rows: Vec<String> = counts
        .iter()
        .map(|&n| {
            format!(
                "{n}: {} | {}",
                cell(at(n, ContextMode::Shared)),
                cell(at(n, ContextMode::PerDevice))
            )
        })
        .collect();
    let points: Vec<(f64, f64)> = counts
        .iter()
        .filter_map(|&n| Some((n as f64, at(n, ContextMode::Shared)?.row.rss_per_buffer?)))
        .collect();
    let slope = least_squares_slope(&points).map_or(String::new(), |s| {
        format!(
            "; each added device adds about {} of RSS per buffer to a shared context (a line through {} counts)",
            clmulti_scenario::format_bytes(s),
            points.len()
        )
    });
    Some(Statement::measured(format!(
        "strategy {strategy}, per buffer by device count (shared | one context each): {}{slope}",
        rows.join("; ")
    )))
}

/// The slope of the least-squares line through `points`; `None` under two points.
fn least_squares_slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Run names in a line, the first few of a long list.
fn names(runs: &[&str]) -> String {
    const SHOWN: usize = 10;
    let mut out = runs
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if runs.len() > SHOWN {
        out.push_str(&format!(" and {} more", runs.len() - SHOWN));
    }
    out
}

/// The verdict over candidates, from the diagnose logic: the seed-like runs as the
/// matrix, shared pools and pins as fixes; with the runs it used, `(file, run name)`.
fn diagnosis(candidates: &Candidates) -> Option<(Diagnosis, Vec<(String, String)>)> {
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
        let used = matrix
            .iter()
            .map(|p| p.report)
            .chain(fixes.iter().filter_map(|(_, r)| r.as_ref().ok().copied()))
            .map(|r| (r.scenario.file.clone(), r.run_name.clone()))
            .collect();
        Some((Diagnosis::new(&matrix, &fixes), used))
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
                    plot_data: Vec::new(),
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
            let drawn = plots::group(&group.name, &group.runs)?;
            group.plot_notes = drawn.notes;
            group.plot_data = drawn.data;
            if let Some(svg) = drawn.svg {
                plots.push((name.clone(), svg));
                group.plot = Some(name);
            }
        }
        let buffers = plots::buffers(&order)?;
        plots.push(("buffers.svg".into(), buffers.svg));
        let scaling = plots::scaling(&order)?;
        let scaling_plot = scaling.is_some().then(|| "scaling.svg".to_owned());
        let mut scaling_data = Vec::new();
        if let Some(plot) = scaling {
            plots.push(("scaling.svg".into(), plot.svg));
            scaling_data = plot.data;
        }
        let completeness = self.completeness();
        Ok((
            View {
                runs: order,
                groups,
                verdicts: self.verdicts(completeness.as_ref()),
                uncovered: self.uncovered(),
                completeness,
                buffers_plot: "buffers.svg".into(),
                buffers_data: buffers.data,
                scaling_plot,
                scaling_data,
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
            let path = self.dir.join(&name);
            clmulti::output::write_file(&path, text.as_bytes())
                .map_err(|e| format!("{}: {e}", path.display()))?;
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

#[cfg(test)]
mod tests;
