//! A [`Diagnosis`] for people: terminal lines, Markdown and an HTML section, each
//! leading with the verdict.

use super::html_escape;
use crate::diagnosis::{Diagnosis, Fix, Outcome, Role};
use crate::verdict::{Basis, CandidateTest, Statement};
use crate::words;
use crate::StopKind;

impl Diagnosis {
    /// The devices in one line.
    pub fn devices_line(&self) -> String {
        if self.devices.is_empty() {
            return self.platform.clone();
        }
        format!(
            "{} device(s) of {}: {}",
            self.devices.len(),
            self.platform,
            self.devices
                .iter()
                .map(|d| format!("{} {}", d.selector, d.display_name()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// The cost table's rows: strategy, resource, 1 device, shared, per device, extra.
    pub fn cost_rows(&self) -> Vec<[String; 6]> {
        self.sharing_costs
            .iter()
            .map(|c| {
                [
                    c.strategy.name().to_owned(),
                    c.label(),
                    c.resource.unit().format_or_dash(c.one_device),
                    c.resource.unit().format_or_dash(c.shared),
                    c.resource.unit().format_or_dash(c.per_device),
                    match c.extra {
                        Some(e) if c.measurable => c.resource.unit().format(e),
                        Some(_) => "not measurable".into(),
                        None => "-".into(),
                    },
                ]
            })
            .collect()
    }

    /// One line per fix, each re-run and measured: worked, did not work, or untested
    /// (and why); each says its basis, as statements do.
    pub fn fix_lines(&self) -> Vec<String> {
        if !self.runs.iter().any(|r| r.role == Role::Shared) {
            return vec!["[not run] not assessed: no shared context ran".into()];
        }
        // A shared case stopped part way by a person says nothing about fixes.
        if self
            .runs
            .iter()
            .any(|r| r.role == Role::Shared && r.outcome == StopKind::Interrupted)
        {
            return vec![
                "[not run] not assessed: the shared context was stopped part way (interrupted)"
                    .into(),
            ];
        }
        if !self.runs.is_empty() && self.runs.iter().all(|r| r.buffers == 0) {
            return vec![
                "[not run] not assessed: no run allocated a buffer (see how each ended)".into(),
            ];
        }
        if self.fixes.is_empty() {
            return self.no_fix_lines();
        }
        // What the fixes are measured against: the shared case that failed.
        let shared_failed = self
            .runs
            .iter()
            .find(|r| r.role == Role::Shared && r.outcome.ended_early())
            .map(|r| r.buffers);
        self.fixes
            .iter()
            .map(|f| match &f.outcome {
                Outcome::Worked { stop, .. } => {
                    format!(
                        "[measured] worked: {} ({stop}). Apply: {}",
                        f.fix.label(),
                        f.fix.how()
                    )
                }
                Outcome::DidNotWork { stop, buffers } => {
                    let further = match shared_failed {
                        Some(before)
                            if *buffers > before
                                && before > 0
                                && !crate::analysis::counts_match(*buffers, before) =>
                        {
                            format!(
                                ", further than the shared context's {before} ({:.2}x)",
                                *buffers as f64 / before as f64
                            )
                        }
                        _ => String::new(),
                    };
                    let why = f.claim.as_ref().map_or(String::new(), |c| {
                        format!(
                            "; [inferred from the fix run's readings and the experiments] {}",
                            c.sentence()
                        )
                    });
                    format!(
                        "[measured] did not work: {} ({stop}){further}{why}",
                        f.fix.label()
                    )
                }
                // A setting clmulti may not change is worth trying by hand: its command.
                Outcome::Untested { reason } => match &f.fix {
                    Fix::SystemSetting { .. } => format!(
                        "[not run] {}: {reason}. To try it: {}",
                        f.fix.label(),
                        f.fix.how()
                    ),
                    _ => format!("[not run] {}: {reason}", f.fix.label()),
                },
            })
            .collect()
    }

    /// The experiments in rows: what was moved, from and to, predicted and observed
    /// counts, and what that means; for candidates and shape questions alike.
    pub fn experiment_rows(&self) -> Vec<[String; 5]> {
        let Some(inv) = &self.investigation else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        for (i, run) in inv.replicates.iter().flat_map(|r| &r.runs).enumerate() {
            rows.push([
                "the failing case, unchanged".into(),
                if i == 0 {
                    "original".into()
                } else {
                    format!("replicate {i}")
                },
                "-".into(),
                run.count.to_string(),
                format!(
                    "{} at {}",
                    if run.failed { "failed" } else { "did not fail" },
                    words::seconds(run.seconds)
                ),
            ]);
        }
        for c in &inv.candidates {
            let test = match &c.test {
                CandidateTest::Confirmed { .. } => "confirmed",
                CandidateTest::Consistent { .. } => "consistent (one side)",
                CandidateTest::Refuted { .. } => "refuted",
                CandidateTest::Inconclusive { .. } => "inconclusive",
                CandidateTest::NotTested { .. } => "not tested",
                CandidateTest::Pending => "pending",
            };
            for e in c.test.experiments() {
                rows.push([
                    format!("{} at {}", c.resource.label(), c.limit.name),
                    words::change(&e.change),
                    e.predicted_count.map_or("-".into(), |p| p.to_string()),
                    format!("{} (before {})", e.observed_count, e.before_count),
                    format!("{test}: {}", e.stop),
                ]);
            }
            if let CandidateTest::NotTested { reason, .. } = &c.test {
                rows.push([
                    format!("{} at {}", c.resource.label(), c.limit.name),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    format!("not tested: {reason}"),
                ]);
            }
        }
        for f in &inv.shape {
            let answer = f.claim.as_ref().map_or_else(
                || "not asked".to_owned(),
                |c| crate::claim::or_list(c.remaining().iter().map(|a| a.key.as_str())),
            );
            for e in &f.experiments {
                rows.push([
                    format!("shape: {}?", words::question(f.question)),
                    words::change(&e.change),
                    "-".into(),
                    format!("{} (before {})", e.observed_count, e.before_count),
                    format!("left: {answer}: {}", e.stop),
                ]);
            }
        }
        rows
    }

    /// The fix lines when no fix was tried: why none was, or none was needed.
    fn no_fix_lines(&self) -> Vec<String> {
        let shared_failed = self
            .runs
            .iter()
            .any(|r| r.role == Role::Shared && r.outcome.ended_early());
        let per_device_ran = self.runs.iter().any(|r| r.role == Role::PerDevice);
        // Only runs that ran are cited: without a per-device run there is nothing
        // to hold the shared context against. A limit ahead that sharing makes nearer
        // is no reason for "not needed".
        let ahead = self.limit_ahead.clone();
        let sharing_adds = self
            .sharing_costs
            .iter()
            .any(|c| c.measurable && c.extra.is_some_and(|e| e > 0.0));
        if let (false, true, Some(ahead), true) =
            (shared_failed, per_device_ran, &ahead, sharing_adds)
        {
            return vec![format!(
                "[inferred from the runs' readings] not needed yet: the shared context did not fail here, but heads for {ahead}, and sharing adds to what it grows by: one context per device keeps further from it"
            )];
        }
        vec![match (shared_failed, per_device_ran) {
            (false, true) => "[inferred from the runs' readings] not needed: the shared context neither failed nor heads for a limit the per-device contexts do not".into(),
            (false, false) => "[measured] not needed: the shared context did not fail (no per-device run here to compare it with)".into(),
            (true, _) => "[not run] none tried: no run here re-runs the failing shared case another way (clmulti diagnose does)".into(),
        }]
    }

    /// The diagnosis as Markdown: the verdict first, then the numbers behind it.
    pub fn markdown(&self) -> String {
        let context = self
            .context
            .as_ref()
            .map_or_else(String::new, |c| c.markdown());
        let answer: String = self
            .answer()
            .iter()
            .map(|l| format!("> {}\n>\n", super::markdown_escape(l)))
            .collect();
        let mut out = format!(
            "# clmulti diagnose\n\n{context}## Verdict\n\n{answer}\n{}\n\n",
            self.devices_line()
        );
        for s in self.headline() {
            out.push_str(&format!("- {s}\n"));
            if let Some(detail) = &s.detail {
                out.push_str(&format!(
                    "  <details><summary>evidence</summary>{}</details>\n",
                    html_escape(detail)
                ));
            }
        }
        out.push_str("\n## Known from documented sources\n\n");
        for s in self
            .verdict
            .iter()
            .filter(|s| matches!(s.basis, Basis::Known(_)))
        {
            out.push_str(&format!("- {s}\n"));
        }
        out.push_str("\n## Cost per buffer\n\n| strategy | resource | 1 device | shared | per device | shared - per device |\n|---|---|---|---|---|---|\n");
        for row in self.cost_rows() {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        let experiments = self.experiment_rows();
        if !experiments.is_empty() {
            out.push_str("\n## Experiments\n\n| candidate or question | moved | predicted | failed at | outcome |\n|---|---|---|---|---|\n");
            for row in experiments {
                let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
                out.push_str(&format!("| {} |\n", cells.join(" | ")));
            }
        }
        out.push_str("\n## Runs\n\n| case | strategy | buffers | result |\n|---|---|---|---|\n");
        let n = self.devices.len().max(2);
        for r in &self.runs {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                r.role.label(n),
                r.strategy.name(),
                r.buffers,
                r.headline.replace('|', "\\|")
            ));
            for m in &r.driver_messages {
                out.push_str(&format!(
                    "|  | driver says |  | {} |\n",
                    m.replace('|', "\\|")
                ));
            }
        }
        out.push_str("\n## Fixes\n\n");
        for line in self.fix_lines() {
            out.push_str(&format!("- {line}\n"));
        }
        out
    }

    /// The diagnosis as an HTML section (escaped), verdict first.
    pub fn html(&self) -> String {
        let context = self.context.as_ref().map_or_else(String::new, |c| c.html());
        let answer: String = self
            .answer()
            .iter()
            .map(|l| format!("<p>{}</p>", html_escape(l)))
            .collect();
        let mut out = format!(
            "{context}<section class=\"verdict\"><h2>Verdict</h2><div class=\"answer\">{answer}</div><p class=\"devices\">{}</p><ul>",
            html_escape(&self.devices_line())
        );
        for s in self.headline() {
            let detail = s.detail.as_ref().map_or(String::new(), |d| {
                format!(
                    "<details><summary>evidence</summary>{}</details>",
                    html_escape(d)
                )
            });
            out.push_str(&format!(
                "<li class=\"{}\"><span class=\"tag\">{}</span> {}{detail}</li>",
                s.tag(),
                html_escape(&tag(s)),
                html_escape(&s.text)
            ));
        }
        out.push_str("</ul><h3>Fixes</h3><ul>");
        for line in self.fix_lines() {
            match line.split_once("] ") {
                Some((tag, rest)) if line.starts_with('[') => out.push_str(&format!(
                    "<li class=\"{}\"><span class=\"tag\">{}]</span> {}</li>",
                    tag[1..].split(' ').next().unwrap_or_default(),
                    html_escape(tag),
                    html_escape(rest)
                )),
                _ => out.push_str(&format!("<li>{}</li>", html_escape(&line))),
            }
        }
        out.push_str("</ul><details><summary>Known from documented sources</summary><ul>");
        for s in self
            .verdict
            .iter()
            .filter(|s| matches!(s.basis, Basis::Known(_)))
        {
            out.push_str(&format!("<li>{}</li>", html_escape(&s.to_string())));
        }
        out.push_str("</ul></details><h3>Cost per buffer</h3><table><tr><th>strategy</th><th>resource</th><th>1 device</th><th>shared</th><th>per device</th><th>shared - per device</th></tr>");
        for row in self.cost_rows() {
            out.push_str("<tr>");
            for cell in row {
                out.push_str(&format!("<td>{}</td>", html_escape(&cell)));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
        let experiments = self.experiment_rows();
        if !experiments.is_empty() {
            out.push_str("<h3>Experiments</h3><table><tr><th>candidate or question</th><th>moved</th><th>predicted</th><th>failed at</th><th>outcome</th></tr>");
            for row in experiments {
                out.push_str("<tr>");
                for cell in row {
                    out.push_str(&format!("<td>{}</td>", html_escape(&cell)));
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>");
        }
        out.push_str("</section>\n");
        out
    }
}

/// A statement's basis as it is printed before it: `[inferred from ...]`.
fn tag(s: &Statement) -> String {
    match &s.basis {
        Basis::Measured => "[measured]".to_owned(),
        Basis::Inferred(from) => format!("[inferred from {from}]"),
        Basis::Known(source) => format!("[known: {source}]"),
    }
}
