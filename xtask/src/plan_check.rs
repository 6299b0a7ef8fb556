//! What a merge checks of its shards beyond what their plans say of themselves: the
//! plan's identity computed again from the runs `plan.json` lists, each record's run
//! found in that plan (its identity computed from the scenario it carries), and one
//! clmulti version for all of them. A hand-edited
//! `plan_id`, a shard of another plan with its plan copied in, or shards of two
//! versions are refused, each named.

use crate::records::{self, Plan, SweepRecord};
use std::collections::{BTreeMap, HashSet};

/// What one shard's records say of themselves.
#[derive(Debug, Default)]
pub struct Seen {
    /// The identity of each run recorded.
    runs: HashSet<String>,
    /// `clmulti --version` of each binary that recorded runs, and how many.
    tools: BTreeMap<String, usize>,
}

impl Seen {
    /// Takes one record in.
    pub fn add(&mut self, record: &SweepRecord) {
        self.runs
            .insert(records::run_identity(&record.report.scenario));
        if !record.tool.is_empty() {
            *self.tools.entry(record.tool.clone()).or_default() += 1;
        }
    }
}

/// One shard as a merge sees it: its name as given, its plan, its records.
pub struct Shard<'a> {
    pub name: String,
    pub plan: Option<Plan>,
    pub seen: &'a Seen,
}

/// Why the shards may not be merged, each naming its shard (empty: they may), and
/// what a merge allowed anyway says.
pub fn problems(shards: &[Shard<'_>], allow_mixed_versions: bool) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let mut planned: Option<(String, HashSet<&str>)> = None;
    for shard in shards {
        let Some(plan) = &shard.plan else { continue };
        let claimed = plan.plan_id.as_deref().unwrap_or("unknown");
        if plan.runs.is_empty() {
            let what = format!(
                "{}: its plan.json (plan {claimed}) lists no runs: written by an older clmulti, its plan cannot be checked against its records",
                shard.name
            );
            match allow_mixed_versions {
                true => notes.push(format!("{what}; merged unchecked (--allow-mixed-versions)")),
                false => problems.push(format!(
                    "{what}; --allow-mixed-versions merges it unchecked"
                )),
            }
            continue;
        }
        let computed = records::plan_identity(&plan.runs);
        if computed != claimed {
            problems.push(format!(
                "{}: its plan.json says plan {claimed}, but the runs it lists make plan {computed}: edited by hand, or not one sweep's plan",
                shard.name
            ));
            continue;
        }
        planned.get_or_insert_with(|| {
            let runs = plan
                .runs
                .iter()
                .filter(|r| !r.starts_with(records::INVALID))
                .map(String::as_str)
                .collect();
            (computed, runs)
        });
    }
    for shard in shards {
        if let Some((id, runs)) = &planned {
            let foreign = shard
                .seen
                .runs
                .iter()
                .filter(|r| !runs.contains(r.as_str()))
                .count();
            if foreign > 0 {
                problems.push(format!(
                    "{}: {foreign} recorded run(s) that plan {id} does not hold: another plan's results",
                    shard.name
                ));
            }
        }
    }
    versions(shards, allow_mixed_versions, &mut problems, &mut notes);
    (problems, notes)
}

/// Shards recorded by different clmulti versions: named, and refused unless allowed.
fn versions(
    shards: &[Shard<'_>],
    allowed: bool,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let all: std::collections::BTreeSet<&String> =
        shards.iter().flat_map(|s| s.seen.tools.keys()).collect();
    if all.len() < 2 {
        return;
    }
    let named: Vec<String> = shards
        .iter()
        .flat_map(|s| {
            s.seen
                .tools
                .iter()
                .map(move |(tool, n)| format!("{} ({n} run(s) by clmulti {tool})", s.name))
        })
        .collect();
    let what = format!(
        "shards recorded by {} clmulti versions: {}",
        all.len(),
        named.join(", ")
    );
    match allowed {
        true => notes.push(format!("{what}; merged as --allow-mixed-versions asks")),
        false => problems.push(format!(
            "{what}; their figures may not compare: merge one version's shards, or --allow-mixed-versions"
        )),
    }
}
