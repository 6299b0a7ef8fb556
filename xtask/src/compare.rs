//! Comparing two sweeps: per run (matched by file and run name), buffers reached and
//! per-buffer costs, old -> new, flagged beyond a threshold; runs present in only one
//! are listed apart from changed ones.

use crate::records::{self, SweepRecord};
use crate::summary::tables::markdown_cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Arguments of `cargo xtask compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The earlier results.jsonl (or its folder).
    old: PathBuf,
    /// The later results.jsonl (or its folder).
    new: PathBuf,
    /// Relative change flagged.
    #[arg(long, default_value_t = 0.10, value_parser = threshold)]
    threshold: f64,
}

/// A relative change for `--threshold`: finite and at least 0.
pub fn threshold(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| format!("{text}: expected a relative change >= 0, like 0.1"))
}

fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("results.jsonl")
    } else {
        path.to_path_buf()
    }
}

/// Whether `path` (a results file or its folder) can be compared: a regular file
/// that exists.
pub fn check_input(path: &Path) -> Result<(), String> {
    let file = results_file(path);
    match records::open_regular(&file) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!("{}: no such results file", file.display())),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

fn relative(old: f64, new: f64) -> f64 {
    if old == new {
        0.0
    } else if old == 0.0 {
        f64::INFINITY
    } else {
        (new - old) / old.abs()
    }
}

type Index = BTreeMap<(String, String), SweepRecord>;

fn index(path: &Path) -> Result<(Index, BTreeSet<String>), String> {
    let mut map = Index::new();
    let mut hosts = BTreeSet::new();
    let file = results_file(path);
    check_input(path)?;
    records::for_each_latest(&file, |r| {
        hosts.insert(r.host.clone());
        map.insert((r.file.clone(), r.report.run_name.clone()), r);
    })
    .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((map, hosts))
}

/// The comparison as Markdown.
pub fn compare_files(old: &Path, new: &Path, threshold: f64) -> Result<String, String> {
    let (old_runs, old_hosts) = index(old)?;
    let (new_runs, new_hosts) = index(new)?;
    let mut out = format!(
        "# Comparison (threshold {:.0}%)\n\nold: {} ({})\n\nnew: {} ({})\n\n| run | measure | old | new | change | flag |\n|---|---|---|---|---|---|\n",
        threshold * 100.0,
        results_file(old).display(),
        names(&old_hosts),
        results_file(new).display(),
        names(&new_hosts)
    );
    let mut flagged = 0;
    for (key, n) in &new_runs {
        let Some(o) = old_runs.get(key) else { continue };
        for (name, a, b, margin, unit) in measures(o, n) {
            let change = relative(a, b);
            // Beyond the threshold and beyond both fits' margins: a slope that moved
            // within its own uncertainty did not change.
            let flag = change.abs() > threshold && (b - a).abs() > margin;
            flagged += usize::from(flag);
            out.push_str(&format!(
                "| {} | {name} | {} | {} | {} | {} |\n",
                markdown_cell(&key.1),
                unit.format(a),
                unit.format(b),
                if change.is_finite() {
                    format!("{:+.1}%", change * 100.0)
                } else {
                    "from 0".into()
                },
                if flag { "**changed**" } else { "" }
            ));
        }
    }
    let only = |a: &Index, b: &Index| -> Vec<String> {
        a.keys()
            .filter(|k| !b.contains_key(*k))
            .map(|k| markdown_cell(&k.1))
            .collect()
    };
    let (only_new, only_old) = (only(&new_runs, &old_runs), only(&old_runs, &new_runs));
    out.push_str(&format!(
        "\n{flagged} measure(s) changed beyond the threshold and the fits' margins. System-wide figures (system memory used, Shmem) are not compared: other processes move them.\n"
    ));
    if !only_new.is_empty() {
        out.push_str(&format!(
            "\nOnly in new ({}): {}\n",
            only_new.len(),
            only_new.join(", ")
        ));
    }
    if !only_old.is_empty() {
        out.push_str(&format!(
            "\nOnly in old ({}): {}\n",
            only_old.len(),
            only_old.join(", ")
        ));
    }
    Ok(out)
}

/// A measure of one run in both sweeps: its name, old and new value, the fits'
/// margin, and its unit.
type Measure = (String, f64, f64, f64, clmulti_explain::Unit);

/// The measures two records of one run share.
fn measures(o: &SweepRecord, n: &SweepRecord) -> Vec<Measure> {
    // Each measure with the unit it reads in: a person reads "1.00 GiB", never
    // "1073747968.00".
    let mut measures = vec![(
        "buffers reached".to_owned(),
        o.report.buffers as f64,
        n.report.buffers as f64,
        0.0,
        clmulti_explain::Unit::Count,
    )];
    for c in &n.report.costs {
        // System-wide figures move with every other process: not the run's change.
        if c.resource.system_wide() || c.estimated {
            continue;
        }
        if let Some(oc) = o.report.costs.iter().find(|x| x.resource == c.resource) {
            // Noise on both sides (within the margins, or a line through too few
            // samples) is no change: a heap's free space read at 4 samples moved
            // from +53 B to -3 B a buffer between two sweeps of one build.
            if !oc.is_measured() && !c.is_measured() {
                continue;
            }
            measures.push((
                format!("{} per buffer", c.resource.label()),
                oc.per_buffer,
                c.per_buffer,
                oc.margin.hypot(c.margin),
                c.resource.unit(),
            ));
        }
    }
    measures
}

/// The hosts a results file names, or `(unnamed)`.
fn names(h: &BTreeSet<String>) -> String {
    let list: Vec<&str> = h
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    if list.is_empty() {
        "(unnamed)".to_owned()
    } else {
        list.join("; ")
    }
}

pub fn compare(args: &Args) -> Result<std::process::ExitCode, String> {
    let text = compare_files(&args.old, &args.new, args.threshold)?;
    crate::write_stdout(&text)?;
    Ok(std::process::ExitCode::SUCCESS)
}
