//! `cargo xtask merge`: combine shards' results into one folder and summary.

use crate::records::{self, SweepRecord};
use crate::summary::Summary;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;

/// Arguments of `cargo xtask merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Shards' result folders (or their results.jsonl files).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The merged folder.
    #[arg(long, default_value = "sweep-results")]
    out: PathBuf,
    /// How many shards were planned (to report the missing ones).
    #[arg(long)]
    expect: Option<usize>,
    /// Replace a merge already in the output folder (kept as results.<n>.jsonl).
    #[arg(long)]
    force: bool,
}

pub fn merge(args: &Args) -> Result<std::process::ExitCode, String> {
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let _lock = crate::lock::lock(&args.out)?;
    let merged = args.out.join("results.jsonl");
    if std::fs::metadata(&merged).is_ok_and(|m| m.len() > 0) {
        if !args.force {
            return Err(format!(
                "{} already holds results; merge into another folder (--out), or --force to replace them (kept as results.<n>.jsonl)",
                args.out.display()
            ));
        }
        crate::records::keep_generation(&merged)?;
    }
    // A merged folder has no plan of its own.
    let _ = std::fs::remove_file(args.out.join(records::Plan::FILE_NAME));
    let tmp = args.out.join(".results.merging.jsonl");
    let _ = std::fs::remove_file(&tmp);
    let mut seen = HashSet::new();
    let mut summary = Summary::new(&args.out);
    let mut hosts: BTreeMap<String, usize> = BTreeMap::new();
    let mut found = 0;
    let mut missing = Vec::new();
    let mut incomplete = Vec::new();
    let mut restarted = Vec::new();
    let mut found_shards = BTreeSet::new();
    let mut duplicates = 0usize;
    for input in &args.inputs {
        let file = if input.is_dir() {
            input.join("results.jsonl")
        } else {
            input.clone()
        };
        if !file.exists() {
            missing.push(format!("{} (no such results.jsonl)", file.display()));
            continue;
        }
        found += 1;
        let plan = records::Plan::read(file.parent().unwrap_or(input))?;
        if let Some((k, _)) = plan.as_ref().and_then(|p| p.shard) {
            found_shards.insert(k);
        }
        let mut in_shard = HashSet::new();
        let mut append_error = None;
        records::for_each(&file, |r: SweepRecord| {
            in_shard.insert(r.key.clone());
            // Later shards win nothing: a run (key) is taken once, from its first shard.
            if !seen.insert(r.key.clone()) {
                duplicates += 1;
                return;
            }
            *hosts.entry(r.host.clone()).or_default() += 1;
            if let Err(e) = records::append(&tmp, &r) {
                append_error = Some(e);
            }
            summary.add(r);
        })
        .map_err(|e| format!("{}: {e}", file.display()))?;
        if let Some(e) = append_error {
            return Err(format!("{}: {e}", tmp.display()));
        }
        if let Some(plan) = plan {
            let shard = plan
                .shard
                .map_or(String::new(), |(k, n)| format!(" (shard {k}/{n})"));
            let done = plan.keys.iter().filter(|k| in_shard.contains(*k)).count();
            if done < plan.keys.len() {
                incomplete.push(format!(
                    "{}{shard} on {}: {done} of {} run(s)",
                    input.display(),
                    plan.host,
                    plan.keys.len()
                ));
            }
            if plan.starts.len() > 1 {
                let starts: Vec<String> = plan
                    .starts
                    .iter()
                    .map(|s| {
                        format!(
                            "on {} (pid {}) with {} of {} done",
                            s.host,
                            s.pid,
                            s.done,
                            plan.keys.len()
                        )
                    })
                    .collect();
                restarted.push(format!(
                    "{}{shard}: started {}",
                    input.display(),
                    starts.join(", restarted ")
                ));
            }
        }
    }
    if found == 0 {
        return Err(format!(
            "no shard has a results.jsonl: {}",
            missing.join(", ")
        ));
    }
    if tmp.exists() {
        std::fs::rename(&tmp, &merged).map_err(|e| format!("{}: {e}", merged.display()))?;
    }
    summary.write()?;
    eprintln!(
        "merge: {} run(s) from {found} shard(s) into {}",
        summary.len(),
        args.out.display()
    );
    for (host, n) in &hosts {
        eprintln!("merge:   {n} run(s) on {host}");
    }
    if !restarted.is_empty() {
        eprintln!("merge: shard(s) that restarted, resuming where they stopped:");
        for shard in &restarted {
            eprintln!("merge:   {shard}");
        }
    }
    if duplicates > 0 {
        eprintln!(
            "merge: {duplicates} run(s) appeared in more than one shard; each was taken once"
        );
    }
    // Shards named by their plans: the numbers missing among 1..=expect.
    if let Some(n) = args.expect {
        if found_shards.len() == found {
            missing.extend(
                (1..=n)
                    .filter(|k| !found_shards.contains(k))
                    .map(|k| format!("shard {k}/{n}")),
            );
        } else if found < n {
            missing.push(format!("{} of {n} shard(s) not given", n - found));
        }
    }
    let shards_missing = !missing.is_empty();
    if shards_missing {
        eprintln!(
            "merge: missing shard(s): {}{}",
            missing.join(", "),
            args.expect
                .map_or(String::new(), |n| format!(" ({found} of {n} found)"))
        );
    }
    if !incomplete.is_empty() {
        eprintln!(
            "merge: shard(s) that stopped early (sweep --resume in their folder continues them):"
        );
        for shard in &incomplete {
            eprintln!("merge:   {shard}");
        }
    }
    if shards_missing || !incomplete.is_empty() {
        return Ok(std::process::ExitCode::from(1));
    }
    Ok(std::process::ExitCode::SUCCESS)
}
