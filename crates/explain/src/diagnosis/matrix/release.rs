//! What stayed after release in the matrix's runs: one statement per run, then the
//! claim each resource's rounds make.

use super::super::{Placed, ReleaseFinding};
use crate::verdict::Statement;
use crate::words;

/// Runs whose readings did not come back after release.
pub(super) fn release_findings(runs: &[Placed<'_>]) -> Vec<ReleaseFinding> {
    runs.iter()
        .filter(|p| !p.report.leak_check.not_returned.is_empty())
        .map(|p| ReleaseFinding {
            run_name: p.report.run_name.clone(),
            not_returned: p
                .report
                .leak_check
                .not_returned
                .iter()
                .map(words::not_returned)
                .collect(),
            second_round: p.report.leak_check.second_round.clone(),
            trimmed: crate::release::trim_words(p.report),
        })
        .collect()
}

/// One statement for every run whose readings stayed up after release (what each kept,
/// and what rounds read where they ran), then the claim each resource's rounds make.
pub(super) fn release_statement(
    runs: &[Placed<'_>],
    findings: &[ReleaseFinding],
) -> Vec<Statement> {
    let mut out = Vec::new();
    for f in findings {
        let Some(report) = runs
            .iter()
            .map(|p| p.report)
            .find(|r| r.run_name == f.run_name)
        else {
            continue;
        };
        let rounds = f
            .second_round
            .as_ref()
            .map_or(String::new(), crate::release::rounds_words);
        out.push(
            Statement::measured(format!(
                "{}: every release call succeeded, yet {} stayed above the start after release",
                f.run_name,
                crate::release::kept_list(&report.leak_check.not_returned)
            ))
            .with_detail(format!(
                "{}{}{rounds}",
                f.not_returned.join(", "),
                f.trimmed
            )),
        );
        let Some(round) = &f.second_round else {
            continue;
        };
        for mut claim in crate::release::kept_claims(round) {
            claim.subject = format!("{}: {}", f.run_name, claim.subject);
            out.push(crate::release::kept_statement(claim));
        }
    }
    out
}
