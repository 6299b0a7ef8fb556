//! One scenario run in a child process of this binary: what `run`, `diagnose`, the
//! experiments and the bench share ([`clmulti_supervise`] runs the child).

use crate::trust::Binding;
use crate::{note, render, Failure};
use clmulti_explain::Report;
use clmulti_scenario::Scenario;
use clmulti_supervise::{ChildCommand, Placement, INTERRUPT};
use std::time::Duration;

/// How long an interrupted child may take to stop, release and print its report.
pub(crate) const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

/// [`run_child_bound`] of a scenario clmulti made itself (a diagnose case): it may
/// load only what needs no one's word.
pub(crate) fn run_child(scenario: &Scenario, timeout: Option<Duration>) -> Result<Report, Failure> {
    run_child_placed(scenario, timeout, Placement::default(), &Binding::own())
}

/// Runs in a child process of this binary with the scenario's env, checked right
/// before the child starts against what its file's trust allows (`binding`); a crash
/// of the runtime becomes a report with the signal instead of taking this process
/// down. SIGINT or SIGTERM here is passed on: the child stops, releases and reports.
pub(crate) fn run_child_bound(
    scenario: &Scenario,
    timeout: Option<Duration>,
    binding: &Binding,
) -> Result<Report, Failure> {
    run_child_placed(scenario, timeout, Placement::default(), binding)
}

/// [`run_child_bound`] as another user, in other cgroups or under a wrapper (an
/// experiment's second process, a system-call observer).
pub(crate) fn run_child_placed(
    scenario: &Scenario,
    timeout: Option<Duration>,
    placement: Placement,
    binding: &Binding,
) -> Result<Report, Failure> {
    let outcome = child_outcome(scenario, timeout, placement, binding)?;
    let report = clmulti_alloc::child::report_of(scenario, &outcome);
    crate::verbose!("{}", render::details(&report));
    Ok(report)
}

/// A run's report as its child handed it over.
pub(crate) enum Handed {
    /// The report as the child wrote it, when nothing needs adding to it (the
    /// child's process printed nothing besides it): passed on as it is, read only
    /// for how the run ended (reading a 100 000-buffer run's 48 KB report and
    /// writing it again took 0.7 ms of the run's process on a 2-core machine).
    Written {
        json: String,
        stop: clmulti_explain::StopReason,
    },
    /// The report, read whole.
    Read(Box<Report>),
}

/// [`run_child_bound`], its report left as the child wrote it where it can be.
pub(crate) fn run_child_handed(
    scenario: &Scenario,
    timeout: Option<Duration>,
    binding: &Binding,
) -> Result<Handed, Failure> {
    let outcome = child_outcome(scenario, timeout, Placement::default(), binding)?;
    /// What a pass-through reads of a report: its schema and how the run ended.
    #[derive(serde::Deserialize)]
    struct Ending {
        schema_version: u32,
        stop: clmulti_explain::StopReason,
    }
    let nothing_to_add = !outcome.timed_out
        && outcome.stdout.is_empty()
        && outcome.stderr_tail.trim().is_empty()
        && !crate::format::shows(crate::format::Verbosity::Verbose);
    if let (true, Some(json)) = (nothing_to_add, &outcome.progress.report) {
        if let Ok(ending) = serde_json::from_str::<Ending>(json) {
            if ending.schema_version == clmulti_explain::SCHEMA_VERSION {
                return Ok(Handed::Written {
                    json: json.clone(),
                    stop: ending.stop,
                });
            }
        }
    }
    let report = clmulti_alloc::child::report_of(scenario, &outcome);
    crate::verbose!("{}", render::details(&report));
    Ok(Handed::Read(Box::new(report)))
}

/// Runs the child and says how it ended; a child that loaded no runtime or could
/// not run the scenario at all fails this command.
fn child_outcome(
    scenario: &Scenario,
    timeout: Option<Duration>,
    placement: Placement,
    binding: &Binding,
) -> Result<clmulti_supervise::ChildOutcome, Failure> {
    let program = std::env::current_exe()
        .map_err(|e| Failure::Tool(format!("cannot find own binary: {e}")))?;
    note!("run: {} (child process)", scenario.name);
    let prepared = crate::trust::prepare(&scenario.env, binding)
        .map_err(|why| Failure::Input(format!("{}: {why}", scenario.file)))?;
    let command = ChildCommand {
        interrupt: Some(&INTERRUPT),
        interrupt_grace: INTERRUPT_GRACE,
        abandon_when: Some(crate::format::stdout_closed),
        placement,
        inherit: prepared.inherit.clone(),
        ..ChildCommand::scenario_run_in(program, scenario, prepared.env.clone(), timeout)
    };
    crate::verbose!(
        "run: child: {}{} {} SCENARIO.json (killed after {:.0} s)\nrun: SCENARIO.json (a temporary file) holds {}",
        command
            .env
            .iter()
            .map(|(k, v)| format!("{k}={} ", shell_word(v)))
            .collect::<String>(),
        command.program.display(),
        command
            .args
            .iter()
            .map(|a| shell_word(&a.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" "),
        command.timeout.as_secs_f64(),
        command.resolved.as_deref().unwrap_or("{}")
    );
    let mut progress = ProgressLine::new();
    let outcome = clmulti_supervise::run_child_watching(&command, &mut |json| {
        if let Ok(sample) = serde_json::from_str(json) {
            progress.show(&sample);
        }
    })
    .map_err(|e| Failure::Tool(format!("cannot run a child process: {e}")))?;
    progress.clear();
    // Ended for no one: what it found would be written to a closed output.
    if outcome.abandoned {
        return Err(Failure::ClosedOutput);
    }
    crate::verbose!(
        "run: child exited with {} after {:.3} s{}",
        outcome.status,
        outcome.wall_seconds,
        if outcome.timed_out {
            " (killed at the timeout)"
        } else {
            ""
        }
    );
    // Loading the runtime crashed, exited or hung: nothing could be measured.
    if let Some(why) = clmulti_supervise::ended::loading_failure(&outcome) {
        return Err(Failure::Tool(why));
    }
    // A child that could not run the scenario at all fails this command the same way.
    if !outcome.timed_out && !outcome.stdout.lines().any(|l| l.starts_with('{')) {
        // The child's first error line says why; later ones only count problems.
        let message = outcome
            .stderr_tail
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or(outcome.stderr_tail.trim())
            .to_owned();
        let code = outcome.status.code().and_then(|c| u8::try_from(c).ok());
        match code {
            Some(clmulti_contract::EXIT_TOOL) => return Err(Failure::Tool(message)),
            Some(clmulti_contract::EXIT_INPUT) => return Err(Failure::Input(message)),
            _ => {}
        }
    }
    Ok(outcome)
}

/// A word as a shell reads it back: quoted when it holds anything but plain
/// characters.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The terminal's progress line for a run in a child: buffers, RSS and elapsed time
/// from the child's samples, once the run has gone a second (on a terminal, unless
/// `-q`).
struct ProgressLine {
    terminal: bool,
    start: std::time::Instant,
    shown: bool,
}

impl ProgressLine {
    fn new() -> Self {
        use std::io::IsTerminal;
        ProgressLine {
            terminal: std::io::stderr().is_terminal()
                && crate::format::shows(crate::format::Verbosity::Normal),
            start: std::time::Instant::now(),
            shown: false,
        }
    }

    fn show(&mut self, sample: &clmulti_explain::Sample) {
        if self.terminal && self.start.elapsed() > Duration::from_secs(1) {
            crate::format::progress_line(&format!(
                "  {} buffers, {} RSS, {:.1} s",
                sample.allocations,
                clmulti_scenario::format_bytes(sample.host.rss_bytes as f64),
                sample.elapsed_seconds
            ));
            self.shown = true;
        }
    }

    fn clear(&self) {
        if self.shown {
            crate::format::clear_progress_line();
        }
    }
}
