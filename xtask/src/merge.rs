//! `cargo xtask merge`: combine shards' results into one folder and summary.
//!
//! Each run is taken once, its newest record across every shard (a run retried with
//! `--retry-failed` replaces its crash; a duplicated line counts once). Shards are
//! counted once however often they are named; a shard is missing when `--expect`
//! names more than were given, and incomplete when its plan lists runs it has not
//! done, or when it has no readable plan (then nothing says it finished).

use crate::records::{self, SweepRecord};
use crate::summary::Summary;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

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
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    expect: Option<u64>,
    /// Replace a merge already in the output folder (kept as results.<n>.jsonl).
    #[arg(long)]
    force: bool,
    /// Merge shards recorded by different clmulti versions (or whose plans are too
    /// old to be checked against their records), named as they are merged.
    #[arg(long)]
    allow_mixed_versions: bool,
}

/// A temporary file removed when dropped, unless kept.
struct Temporary(Option<PathBuf>);

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One shard as given: its results file and its folder.
struct Shard {
    input: PathBuf,
    file: PathBuf,
    folder: PathBuf,
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

pub fn merge(args: &Args) -> Result<std::process::ExitCode, String> {
    let Shards {
        shards,
        missing,
        named_twice,
    } = match named_shards(args)? {
        Ok(named) => named,
        Err(code) => return Ok(code),
    };
    if shards.is_empty() {
        return Err(format!(
            "no shard has a results.jsonl: {}",
            missing.join(", ")
        ));
    }
    if !named_twice.is_empty() {
        eprintln!(
            "merge: named more than once, taken once: {}",
            named_twice.join(", ")
        );
    }
    if let Some(refused) = refuse_strangers(&shards, args.expect) {
        return Ok(refused);
    }

    let Newest {
        newest,
        records_read,
        keys_by_shard,
        seen,
    } = newest_records(&shards)?;
    if let Some(refused) = refuse_unchecked(&shards, &seen, args.allow_mixed_versions) {
        return Ok(refused);
    }
    let (summary, hosts) = write_merged(args, &shards, &newest)?;
    let (found_shards, incomplete, restarted) = shard_states(&shards, &keys_by_shard);
    let superseded = records_read - newest.len();
    Ok(say_what_was_merged(
        args,
        Merged {
            shards: shards.len(),
            runs: summary.len(),
            hosts,
            superseded,
            found_shards,
            missing,
            incomplete,
            restarted,
        },
    ))
}

/// The shards named, each once, and the inputs that are not shards.
struct Shards {
    shards: Vec<Shard>,
    missing: Vec<String>,
    named_twice: Vec<String>,
}

/// The shards, each once, none of them the output folder (that is refused with
/// exit 2).
fn named_shards(args: &Args) -> Result<Result<Shards, std::process::ExitCode>, String> {
    let out = canonical(&args.out);
    let mut shards: Vec<Shard> = Vec::new();
    let mut missing = Vec::new();
    let mut named_twice = Vec::new();
    for input in &args.inputs {
        let file = if input.is_dir() {
            input.join("results.jsonl")
        } else {
            input.clone()
        };
        let folder = canonical(
            file.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        );
        if folder == out {
            eprintln!(
                "error: {} is the output folder (--out {}): merging a folder into itself would replace its results with themselves; merge into another folder",
                input.display(),
                args.out.display()
            );
            return Ok(Err(std::process::ExitCode::from(2)));
        }
        match records::open_regular(&file) {
            Ok(Some(_)) => {}
            Ok(None) => {
                missing.push(format!("{} (no such results.jsonl)", file.display()));
                continue;
            }
            Err(e) => return Err(format!("{}: {e}", file.display())),
        }
        let file = canonical(&file);
        if shards.iter().any(|s| s.file == file) {
            named_twice.push(input.display().to_string());
            continue;
        }
        shards.push(Shard {
            input: input.clone(),
            file,
            folder,
        });
    }
    Ok(Ok(Shards {
        shards,
        missing,
        named_twice,
    }))
}

/// Where a run's newest record is: when it finished, in which shard, where there.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Position {
    finished_at: u64,
    shard: usize,
    position: usize,
}

/// The first pass's findings.
struct Newest {
    /// Each run's newest record.
    newest: HashMap<String, Position>,
    /// Records read in all.
    records_read: usize,
    /// The runs each shard holds.
    keys_by_shard: Vec<std::collections::HashSet<String>>,
    /// What each shard's records say of themselves.
    seen: Vec<crate::plan_check::Seen>,
}

/// First pass: which record of each run is the newest, across every shard.
fn newest_records(shards: &[Shard]) -> Result<Newest, String> {
    let mut newest: HashMap<String, Position> = HashMap::new();
    let mut records_read = 0usize;
    let mut keys_by_shard: Vec<std::collections::HashSet<String>> = Vec::new();
    let mut seen = Vec::new();
    for (shard, s) in shards.iter().enumerate() {
        let mut position = 0;
        let mut keys = std::collections::HashSet::new();
        let mut shard_seen = crate::plan_check::Seen::default();
        records::for_each(&s.file, |r: SweepRecord| {
            position += 1;
            records_read += 1;
            shard_seen.add(&r);
            let here = Position {
                finished_at: r.finished_at,
                shard,
                position,
            };
            keys.insert(r.key.clone());
            let entry = newest.entry(r.key).or_insert(here);
            if here > *entry {
                *entry = here;
            }
        })
        .map_err(|e| format!("{}: {e}", s.file.display()))?;
        keys_by_shard.push(keys);
        seen.push(shard_seen);
    }

    Ok(Newest {
        newest,
        records_read,
        keys_by_shard,
        seen,
    })
}

/// Second pass: the newest records into the output folder (through a temporary file
/// renamed at the end), its summary written; the runs per host.
fn write_merged(
    args: &Args,
    shards: &[Shard],
    newest: &HashMap<String, Position>,
) -> Result<(Summary, BTreeMap<String, usize>), String> {
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let _lock = crate::lock::lock(&args.out)?;
    let merged = args.out.join("results.jsonl");
    let existing = records::open_regular(&merged)
        .map_err(|e| format!("{}: {e}", merged.display()))?
        .and_then(|f| f.metadata().ok())
        .is_some_and(|m| m.len() > 0);
    if existing && !args.force {
        return Err(format!(
            "{} already holds results; merge into another folder (--out), or --force to replace them (kept as results.<n>.jsonl)",
            args.out.display()
        ));
    }
    let tmp = args.out.join(".results.merging.jsonl");
    let _ = std::fs::remove_file(&tmp);
    let temporary = Temporary(Some(tmp.clone()));
    let mut writer = records::Writer::open(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut summary = Summary::new(&args.out);
    let mut hosts: BTreeMap<String, usize> = BTreeMap::new();
    let mut append_error = None;
    for (shard, s) in shards.iter().enumerate() {
        let mut position = 0;
        records::for_each(&s.file, |r: SweepRecord| {
            position += 1;
            let chosen = newest
                .get(&r.key)
                .is_some_and(|n| n.shard == shard && n.position == position);
            if !chosen || append_error.is_some() {
                return;
            }
            *hosts.entry(r.host.clone()).or_default() += 1;
            if let Err(e) = writer.append(&r) {
                append_error = Some(e);
            }
            summary.add(r);
        })
        .map_err(|e| format!("{}: {e}", s.file.display()))?;
    }
    if let Some(e) = append_error {
        return Err(format!("{}: {e}", tmp.display()));
    }
    if existing {
        records::keep_generation(&merged)?;
    }
    // A merged folder has no plan of its own.
    let _ = std::fs::remove_file(args.out.join(records::Plan::FILE_NAME));
    if tmp.exists() {
        std::fs::rename(&tmp, &merged).map_err(|e| format!("{}: {e}", merged.display()))?;
    }
    drop(temporary);
    summary.write()?;

    Ok((summary, hosts))
}

/// Exit 2, each problem named, when the plans do not check out against their runs
/// and records, or the shards are of different clmulti versions (unless allowed).
fn refuse_unchecked(
    shards: &[Shard],
    seen: &[crate::plan_check::Seen],
    allow_mixed_versions: bool,
) -> Option<std::process::ExitCode> {
    let checked: Vec<crate::plan_check::Shard<'_>> = shards
        .iter()
        .zip(seen)
        .map(|(s, seen)| crate::plan_check::Shard {
            name: s.input.display().to_string(),
            plan: records::Plan::read(&s.folder).ok().flatten(),
            seen,
        })
        .collect();
    let (problems, notes) = crate::plan_check::problems(&checked, allow_mixed_versions);
    for note in notes {
        eprintln!("merge: {note}");
    }
    if problems.is_empty() {
        return None;
    }
    for problem in &problems {
        eprintln!("error: {problem}");
    }
    eprintln!("error: nothing was merged");
    Some(std::process::ExitCode::from(2))
}

/// Exit 2, the strangers named, when the shards are not of one plan.
fn refuse_strangers(shards: &[Shard], expect: Option<u64>) -> Option<std::process::ExitCode> {
    let strangers = not_of_one_plan(shards, expect);
    if strangers.is_empty() {
        return None;
    }
    for problem in &strangers {
        eprintln!("error: {problem}");
    }
    eprintln!("error: nothing was merged: merge the shards of one sweep's plan, with the --expect its --shard said");
    Some(std::process::ExitCode::from(2))
}

/// Shards that do not belong in one merge, named: of different plans (the whole
/// plan's identity differs), of different shard counts, or of a count other than
/// `--expect` (a requeued shard in a folder of its own is one of the plan's). Shards
/// without a plan, or
/// with one older than plan identities, cannot say and are let through (their
/// state is reported as incomplete or unknown).
fn not_of_one_plan(shards: &[Shard], expect: Option<u64>) -> Vec<String> {
    let planned: Vec<(&Shard, records::Plan)> = shards
        .iter()
        .filter_map(|s| Some((s, records::Plan::read(&s.folder).ok()??)))
        .collect();
    let named = |s: &Shard, p: &records::Plan| {
        let shard = p
            .shard
            .map_or("not sharded".into(), |(k, n)| format!("shard {k}/{n}"));
        let id = p.plan_id.as_deref().unwrap_or("unknown");
        format!("{} ({shard}, plan {id})", s.input.display())
    };
    let mut problems = Vec::new();
    let ids: BTreeSet<&str> = planned
        .iter()
        .filter_map(|(_, p)| p.plan_id.as_deref())
        .collect();
    if ids.len() > 1 {
        let all: Vec<String> = planned.iter().map(|(s, p)| named(s, p)).collect();
        problems.push(format!(
            "shards of {} different plans: {}",
            ids.len(),
            all.join(", ")
        ));
    }
    let counts: BTreeSet<usize> = planned
        .iter()
        .map(|(_, p)| p.shard.map_or(1, |(_, n)| n))
        .collect();
    if counts.len() > 1 {
        let all: Vec<String> = planned.iter().map(|(s, p)| named(s, p)).collect();
        problems.push(format!("mixed shard counts: {}", all.join(", ")));
    }
    if let Some(expect) = expect {
        let other: Vec<String> = planned
            .iter()
            .filter(|(_, p)| p.shard.map_or(1, |(_, n)| n) as u64 != expect)
            .map(|(s, p)| named(s, p))
            .collect();
        if !other.is_empty() {
            problems.push(format!(
                "not shards of --expect {expect}: {}",
                other.join(", ")
            ));
        }
    }
    problems
}

/// What each shard says of itself: the shard numbers its plan names, shards that
/// did not finish their plan (or cannot say), shards that restarted.
fn shard_states(
    shards: &[Shard],
    keys_by_shard: &[std::collections::HashSet<String>],
) -> (BTreeSet<usize>, Vec<String>, Vec<String>) {
    let mut found_shards = BTreeSet::new();
    let mut incomplete = Vec::new();
    let mut restarted = Vec::new();
    for (s, keys) in shards.iter().zip(keys_by_shard) {
        let plan = match records::Plan::read(&s.folder) {
            Ok(Some(plan)) => plan,
            Ok(None) => {
                incomplete.push(format!(
                    "{}: no plan.json, so nothing says which runs it had to do or whether it finished",
                    s.input.display()
                ));
                continue;
            }
            Err(e) => {
                incomplete.push(format!(
                    "{}: its plan does not read ({e}), so nothing says whether it finished",
                    s.input.display()
                ));
                continue;
            }
        };
        if let Some((k, _)) = plan.shard {
            found_shards.insert(k);
        }
        let shard = plan
            .shard
            .map_or(String::new(), |(k, n)| format!(" (shard {k}/{n})"));
        let done = plan.keys.iter().filter(|k| keys.contains(*k)).count();
        if done < plan.keys.len() {
            incomplete.push(format!(
                "{}{shard} on {}: {done} of {} run(s)",
                s.input.display(),
                plan.host,
                plan.keys.len()
            ));
        }
        if plan.starts.len() > 1 {
            let starts: Vec<String> = plan
                .starts
                .iter()
                .map(|start| {
                    format!(
                        "on {} (pid {}) with {} of {} done",
                        start.host,
                        start.pid,
                        start.done,
                        plan.keys.len()
                    )
                })
                .collect();
            restarted.push(format!(
                "{}{shard}: started {}",
                s.input.display(),
                starts.join(", restarted ")
            ));
        }
    }
    (found_shards, incomplete, restarted)
}

/// What a merge did and found, for the closing words.
struct Merged {
    shards: usize,
    runs: usize,
    hosts: BTreeMap<String, usize>,
    superseded: usize,
    found_shards: BTreeSet<usize>,
    missing: Vec<String>,
    incomplete: Vec<String>,
    restarted: Vec<String>,
}

/// Says what was merged, what restarted, what is missing or incomplete; exit 1 when
/// anything is.
fn say_what_was_merged(args: &Args, merged: Merged) -> std::process::ExitCode {
    let Merged {
        shards: found,
        runs,
        hosts,
        superseded,
        found_shards,
        mut missing,
        incomplete,
        restarted,
    } = merged;
    eprintln!(
        "merge: {} run(s) from {found} shard(s) into {}",
        runs,
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
    if superseded > 0 {
        eprintln!(
            "merge: {superseded} record(s) of runs recorded more than once (in several shards, retried, or duplicated): each run's newest was taken"
        );
    }
    // Shards named by their plans: the numbers missing among 1..=expect; the count
    // of distinct shards given otherwise.
    if let Some(n) = args.expect.map(|n| n as usize) {
        let by_number: Vec<usize> = (1..=n).filter(|k| !found_shards.contains(k)).collect();
        if found_shards.len() == found {
            missing.extend(by_number.iter().map(|k| format!("shard {k}/{n}")));
        } else if found < n {
            missing.push(format!(
                "{} of {n} shard(s) not given{}",
                n - found,
                if by_number.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (no plan names shard {})",
                        by_number
                            .iter()
                            .map(usize::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ));
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
            "merge: shard(s) that stopped early or cannot say (sweep --resume in their folder continues them):"
        );
        for shard in &incomplete {
            eprintln!("merge:   {shard}");
        }
    }
    if shards_missing || !incomplete.is_empty() {
        return std::process::ExitCode::from(1);
    }
    std::process::ExitCode::SUCCESS
}
