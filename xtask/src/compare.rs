//! `--compare OLD.jsonl`: what changed per run, flagged beyond a threshold.

use crate::records::SweepRecord;
use std::collections::BTreeMap;

fn relative(old: f64, new: f64) -> f64 {
    if old == new {
        0.0
    } else if old == 0.0 {
        f64::INFINITY
    } else {
        (new - old) / old.abs()
    }
}

/// A Markdown report: per run (matched by run name and file), buffers reached and
/// per-buffer costs, old -> new, with `**changed**` where the relative change
/// exceeds `threshold`.
pub fn compare(old: &[SweepRecord], new: &[SweepRecord], threshold: f64) -> String {
    let index = |records: &[SweepRecord]| -> BTreeMap<(String, String), SweepRecord> {
        records
            .iter()
            .map(|r| ((r.file.clone(), r.report.run_name.clone()), r.clone()))
            .collect()
    };
    let (old, new) = (index(old), index(new));
    let mut out = format!("# Comparison (threshold {:.0}%)\n\n| run | measure | old | new | change | flag |\n|---|---|---|---|---|---|\n", threshold * 100.0);
    let mut flagged = 0;
    for (key, n) in &new {
        let Some(o) = old.get(key) else {
            out.push_str(&format!(
                "| {} | (new run) | - | {} | - | |\n",
                key.1, n.report.buffers
            ));
            continue;
        };
        let mut measures = vec![(
            "buffers reached".to_owned(),
            o.report.buffers as f64,
            n.report.buffers as f64,
        )];
        for c in &n.report.costs {
            if let Some(oc) = o.report.costs.iter().find(|x| x.resource == c.resource) {
                measures.push((
                    format!("{} per buffer", c.resource.label()),
                    oc.per_buffer,
                    c.per_buffer,
                ));
            }
        }
        for (name, a, b) in measures {
            let change = relative(a, b);
            let flag = change.abs() > threshold;
            flagged += usize::from(flag);
            out.push_str(&format!(
                "| {} | {name} | {a:.2} | {b:.2} | {} | {} |\n",
                key.1,
                if change.is_finite() {
                    format!("{:+.1}%", change * 100.0)
                } else {
                    "new".into()
                },
                if flag { "**changed**" } else { "" }
            ));
        }
    }
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        out.push_str(&format!(
            "| {} | (missing now) | | | | **changed** |\n",
            key.1
        ));
        flagged += 1;
    }
    out.push_str(&format!(
        "\n{flagged} measure(s) changed beyond the threshold.\n"
    ));
    out
}
