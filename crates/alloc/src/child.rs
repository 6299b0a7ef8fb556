//! A run's report from its child process ([`clmulti_supervise`] runs the child): the
//! report it wrote, or one that says how it ended with what its progress file kept;
//! and the engine's observer that writes that progress file.

use clmulti_contract::progress::Kind;
use clmulti_explain::{Report, Sample, StopReason};
use clmulti_scenario::Scenario;
use clmulti_supervise::ended::{around_failure, loading_failure};
use clmulti_supervise::{ChildOutcome, ProgressWriter};
use std::os::unix::process::ExitStatusExt;

impl crate::Observer for ProgressWriter {
    fn started(&mut self, report: &Report) {
        self.write_line(Kind::Started, report);
    }

    fn sampled(&mut self, sample: &Sample) {
        self.write_line(Kind::Sample, sample);
    }
}

/// The report a child printed, or, when it printed none, one that says how it
/// ended (crashed with a signal, killed at the timeout, exited with its stderr),
/// with the setup and samples its progress file kept.
pub fn report_of(scenario: &Scenario, outcome: &ChildOutcome) -> Report {
    let written = outcome.progress.report.as_deref().map(Report::from_json);
    if let (Some(Ok(mut report)), false) = (written, outcome.timed_out) {
        report.stdout_tail = around_failure(&outcome.stdout);
        report.stderr_tail = outcome.stderr_tail.trim().to_owned();
        return report;
    }
    let printed = outcome.stdout.lines().find(|l| l.starts_with('{'));
    let parsed = printed.map(Report::from_json);
    if let (Some(Ok(report)), false) = (&parsed, outcome.timed_out) {
        return report.clone();
    }
    let loading = loading_failure(outcome);
    let stop = if let (true, Some(signal)) = (
        outcome.interrupted,
        outcome.interrupted_by.or(outcome.status.signal()),
    ) {
        // Stopped as the caller asked, before it could say so itself.
        StopReason::interrupted(signal)
    } else if outcome.timed_out {
        StopReason::TimedOut {
            seconds: outcome.wall_seconds.floor(),
            call: loading
                .is_some()
                .then_some(clmulti_explain::Call::GetPlatformIds),
        }
    } else if let Some(signal) = outcome.status.signal() {
        StopReason::crashed(signal)
    } else {
        let mut tail = outcome.stderr_tail.trim().to_owned();
        if let Some(Err(e)) = &parsed {
            tail.push_str(&format!("\nerror: unreadable report: {e}"));
        }
        if let Some(why) = &loading {
            tail = format!("error: {why}\n{tail}");
        }
        StopReason::NoReport {
            exit_code: outcome.status.code(),
            stderr_tail: tail,
        }
    };
    let mut report = outcome
        .progress
        .started
        .as_deref()
        .and_then(|json| Report::from_json(json).ok())
        .unwrap_or_else(|| crate::blank_report(scenario, StopReason::Completed));
    report.stop = stop;
    report.samples = outcome
        .progress
        .samples
        .iter()
        .filter_map(|json| serde_json::from_str::<Sample>(json).ok())
        .collect();
    if let Some(last) = report.samples.last() {
        report.buffers = last.allocations;
        report.bytes_requested = last.bytes_requested;
        report.elapsed_seconds = last.elapsed_seconds;
    }
    report.stderr_tail = outcome.stderr_tail.trim().to_owned();
    report.conclude();
    if let Some(why) = loading {
        report
            .analysis
            .statements
            .insert(0, clmulti_explain::verdict::Statement::measured(why));
    }
    report
}
