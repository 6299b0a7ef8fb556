//! `clmulti run`: run scenario runs, each in a process of its own when more than one
//! shares the invocation or when it sets `[env]` or `[limits]`, and print reports.

use crate::format::Format;
use crate::trust::Binding;
use crate::{render, say, Failure};
use clmulti_alloc::{Observer, RunOptions, Watchdog};
use clmulti_explain::{Report, Sample, StopReason};
use clmulti_scenario::{Scenario, ScenarioFile};
use clmulti_supervise::{ProgressWriter, INTERRUPT};

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod list;

/// Arguments of `clmulti run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output format; `json` prints one report per line (JSON Lines).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Run only the N-th run (0-based) of each file's grid (`--list` shows them).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::values::whole_in::<usize>(0..=u64::MAX))]
    index: Option<usize>,
    /// Run every run in its own child process: always done (a fresh process for
    /// each run, whose stdout and stderr are the runtime's own, kept apart from the
    /// report); accepted for scripts that pass it.
    #[arg(long)]
    isolate: bool,
    /// Print each file's runs with their `--index` (with `--format json`, one line per
    /// run), and run nothing.
    #[arg(long)]
    list: bool,
    /// When a run fails, move the limit of each candidate cause (and, when none is
    /// confirmed, the buffer size, a release half way, a second context, one more
    /// device) and re-run it in fresh processes: the report then says which cause
    /// moved the failure, measured.
    #[arg(long)]
    experiment: bool,
    /// A library (or folder) the files may load for this run without being trusted
    /// (`clmulti trust`); repeat for several.
    #[arg(long, value_name = "PATH")]
    allow: Vec<PathBuf>,
    /// Internal: this process is the child that runs the run.
    #[arg(long, hide = true)]
    child: bool,
    /// Internal: the file is a resolved scenario (JSON), run as it is.
    #[arg(long, hide = true, requires = "child")]
    resolved: bool,
}

impl Args {
    /// A run's child as its harness starts it
    /// ([`RESOLVED_CHILD_ARGS`](clmulti_contract::progress::RESOLVED_CHILD_ARGS) and
    /// the resolved scenario's path), as clap reads those arguments.
    pub fn resolved_child(path: PathBuf) -> Self {
        Args {
            files: vec![path],
            format: Format::Json,
            index: None,
            isolate: false,
            list: false,
            experiment: false,
            allow: Vec::new(),
            child: true,
            resolved: true,
        }
    }

    /// Whether this process is a harness's child (watched by its parent).
    pub fn is_child(&self) -> bool {
        self.child
    }
}

/// Runs every run of the files given, each in a child process of its own, and
/// prints their reports; `timeout` bounds each (`--timeout`).
pub fn run(args: &Args, timeout: Option<Duration>) -> Result<(), Failure> {
    if args.resolved {
        return run_resolved(args, timeout);
    }
    if args.list {
        return list::list(args);
    }
    let (files, problems) = trusted_files(args);
    let total: usize = files
        .iter()
        .map(|(_, f, _)| if args.index.is_some() { 1 } else { f.len() })
        .sum();
    let mut runs = Runs {
        args,
        timeout,
        several: total > 1,
        reports: Vec::new(),
        shown: std::collections::HashSet::new(),
        problems,
        tool_failures: 0,
        performed: 0,
    };
    'files: for (_, file, binding) in &files {
        let indices: Box<dyn Iterator<Item = usize>> = match args.index {
            Some(i) => Box::new(std::iter::once(i)),
            None => Box::new(0..file.len()),
        };
        for index in indices {
            if INTERRUPT.signal().is_some() {
                break 'files;
            }
            runs.one(file, index, binding)?;
        }
    }
    runs.closing_words()
}

/// The files given that load, each with what its runs may load (listing needs no
/// trust), and how many did not load or were refused.
fn trusted_files(args: &Args) -> (Vec<(PathBuf, ScenarioFile, Binding)>, usize) {
    let mut files = Vec::new();
    let mut problems = 0usize;
    for path in &args.files {
        match crate::check::load(path) {
            Ok(file) => {
                let assessment = crate::trust::assess(&file, &args.allow);
                match crate::trust::refusal(path, &assessment) {
                    Some(why) => {
                        say!("error: {why}");
                        problems += 1;
                    }
                    None => files.push((path.clone(), file, assessment.binding)),
                }
            }
            Err(e) => {
                say!("error: {e}");
                problems += 1;
            }
        }
    }
    (files, problems)
}

/// The runs as they go: reports kept for the comparison, and what failed whose way.
struct Runs<'a> {
    args: &'a Args,
    timeout: Option<Duration>,
    several: bool,
    reports: Vec<Report>,
    shown: std::collections::HashSet<String>,
    /// The input's problems (exit 2).
    problems: usize,
    /// Runs the tool could not perform (exit 1).
    tool_failures: usize,
    performed: usize,
}

impl Runs<'_> {
    /// Run `index` of `file`, its report printed.
    fn one(&mut self, file: &ScenarioFile, index: usize, binding: &Binding) -> Result<(), Failure> {
        if crate::format::stdout_closed() {
            return Err(Failure::ClosedOutput);
        }
        let args = self.args;
        let scenario = match file.run(index) {
            Ok(s) => s,
            Err(e) => {
                say!("error: {e}");
                self.problems += 1;
                return Ok(());
            }
        };
        // A child of its own for every run: a fresh process to measure, and the
        // runtime's output (NEO's debug keys print on stdout) never in the report.
        let result = if args.child {
            in_process(&scenario, binding, args.format, self.timeout)
        } else if args.format == Format::Json && !args.experiment {
            use crate::child::Handed;
            match crate::child::run_child_handed(&scenario, self.timeout, binding) {
                Ok(Handed::Written { mut json, stop }) => {
                    json.push('\n');
                    crate::format::write_stdout(&json)?;
                    self.judge((file, index, &scenario.name), &stop);
                    return Ok(());
                }
                Ok(Handed::Read(report)) => Ok((*report, None)),
                Err(e) => Err(e),
            }
        } else {
            crate::child::run_child_bound(&scenario, self.timeout, binding)
                .map(|report| (report, None))
        };
        match result {
            Ok((mut report, mut watchdog)) => {
                if args.experiment && !matches!(report.stop, StopReason::Interrupted { .. }) {
                    // The experiments' runs are children bounded by their own limits.
                    drop(watchdog.take());
                    crate::experiments::investigate_bound(&mut report, binding);
                }
                print_report(&report, args.format, &mut self.shown)?;
                drop(watchdog);
                self.judge((file, index, &scenario.name), &report.stop);
                if args.format == Format::Text && self.several {
                    self.reports.push(report);
                }
            }
            Err(Failure::Tool(m)) => {
                say!("error: {}: {m}", scenario.name);
                self.tool_failures += 1;
            }
            Err(Failure::Input(m)) => {
                say!("error: {}", located(file, index, &m));
                self.problems += 1;
            }
            Err(other) => return Err(other),
        }
        Ok(())
    }

    /// Counts a run that measured something as performed; one that measured nothing
    /// (how it `stop`ped) is said and counted as the input's or the tool's, at the
    /// key of its file that asked for what this machine lacks, where one did.
    fn judge(&mut self, (file, index, name): (&ScenarioFile, usize, &str), stop: &StopReason) {
        // A runtime that never finished loading measured nothing: the report says
        // where it hung, and the tool failed.
        if let StopReason::TimedOut {
            call: Some(clmulti_explain::Call::GetPlatformIds),
            seconds,
        } = *stop
        {
            say!("error: {name}: loading the OpenCL runtime did not finish within {seconds:.1} s: clGetPlatformIDs never returned (an ICD the loader opened hangs while loading)");
            self.tool_failures += 1;
            return;
        }
        // A run this machine cannot do measured nothing: the input asks for what is
        // not here (a sweep records it as skipped instead, as it must on a node with
        // fewer devices).
        if let StopReason::Skipped { reason, key } = stop {
            let why = format!("{reason}: this machine cannot run it, so nothing was measured (`clmulti check` says so before a run; a sweep records such a run as skipped)");
            match key {
                Some(key) => say!("error: {name}: {}", file.error_in_run(index, key, &why)),
                None => say!("error: {name}: {why}"),
            }
            self.problems += 1;
            return;
        }
        // A child that ended without a report measured nothing: its input's fault
        // when it said so (exit 2), else the tool's.
        if let StopReason::NoReport { exit_code, .. } = stop {
            say!("error: {name}: {}", stop.summary());
            if *exit_code == Some(2) {
                self.problems += 1;
            } else {
                self.tool_failures += 1;
            }
            return;
        }
        self.performed += 1;
    }

    /// The comparison of several reports, and the exit the runs earned.
    fn closing_words(self) -> Result<(), Failure> {
        if self.reports.len() > 1 {
            crate::format::write_stdout(&render::comparison(&self.reports))?;
        }
        if let Some(signal) = INTERRUPT.signal() {
            say!(
                "run: stopped by {}; the reports above are what ran",
                clmulti_contract::signal_name(signal)
            );
            return Err(Failure::Interrupted(signal));
        }
        let (problems, performed) = (self.problems, self.performed);
        if self.tool_failures > 0 {
            return Err(Failure::Tool(format!(
                "{} run(s) could not be performed (said above)",
                self.tool_failures
            )));
        }
        if problems > 0 {
            return Err(Failure::Input(if performed == 0 {
                format!("{problems} scenario problem(s); nothing was measured")
            } else {
                format!("{problems} scenario problem(s); {performed} run(s) measured (above)")
            }));
        }
        Ok(())
    }
}

/// A run's input error at its place in the file: the engine names the key
/// (`FILE: key `devices.platform`: ...`), the file knows its line and column (the
/// grid entry that set it in run `index`, when one did).
fn located(file: &ScenarioFile, index: usize, message: &str) -> String {
    let Some(rest) = message.strip_prefix(file.file()) else {
        return message.to_owned();
    };
    let Some((key, why)) = rest
        .strip_prefix(": key `")
        .and_then(|r| r.split_once("`: "))
    else {
        return message.to_owned();
    };
    file.error_in_run(index, key, why).to_string()
}

/// The child's side of [`ChildCommand::scenario_run`]: the one resolved scenario.
fn run_resolved(args: &Args, timeout: Option<Duration>) -> Result<(), Failure> {
    let path = &args.files[0];
    let text = clmulti_supervise::read_resolved(path)
        .map_err(|e| Failure::Tool(format!("{}: {e}", path.display())))?;
    let scenario: Scenario = serde_json::from_str(&text)
        .map_err(|e| Failure::Tool(format!("{}: not a resolved scenario: {e}", path.display())))?;
    // The parent gave the run's [env] to this process as it started it, checked.
    let (report, watchdog) = run_here(&scenario, None, args.format, timeout)?;
    // To the parent through the progress file when it gave one: stdout is the
    // runtime's (NEO's debug keys print there).
    if !ProgressWriter::report_to_parent(&report) {
        print_report(&report, args.format, &mut std::collections::HashSet::new())?;
    }
    drop(watchdog);
    Ok(())
}

/// A run in this process (`--child` without `--resolved`): its `[env]` checked and
/// applied here, the files it names held open until it ends.
fn in_process(
    scenario: &Scenario,
    binding: &Binding,
    format: Format,
    timeout: Option<Duration>,
) -> Result<(Report, Option<Watchdog>), Failure> {
    let prepared = crate::trust::prepare(&scenario.env, binding)
        .map_err(|why| Failure::Input(format!("{}: {why}", scenario.name)))?;
    // Held until the run has ended: the runtime loaded what they name by then.
    let result = run_here(scenario, Some(&prepared.env), format, timeout);
    drop(prepared);
    result
}

/// A report as its format has it: one JSON line, or text.
fn report_text(
    report: &Report,
    format: Format,
    shown: &mut std::collections::HashSet<String>,
) -> String {
    match format {
        Format::Json => {
            let mut line = serde_json::to_string(report).unwrap_or_default();
            line.push('\n');
            line
        }
        Format::Text => render::report(report, shown),
    }
}

fn print_report(
    report: &Report,
    format: Format,
    shown: &mut std::collections::HashSet<String>,
) -> Result<(), Failure> {
    crate::format::write_stdout(&report_text(report, format, shown))
}

/// Writes all of `text` to a raw descriptor, taking no lock (the watchdog's last
/// words: the thread it watches may hold stdout's).
fn write_fd(fd: i32, text: &[u8]) {
    let mut rest = text;
    while !rest.is_empty() {
        // SAFETY: writing from a live buffer to a descriptor.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// What the run in this process has reported so far: a hung call's report needs it.
#[derive(Default)]
struct Seen {
    started: Option<Report>,
    /// The last sample's buffers and bytes requested: all a hang's report takes from
    /// it (a copy of the whole sample would cost every sample an allocation).
    last: Option<(u64, u64)>,
}

/// Tells the parent (progress file: it draws the terminal's progress line) and the
/// watchdog (the setup and last sample) how the run goes.
struct CliObserver {
    progress: Option<ProgressWriter>,
    seen: Arc<Mutex<Seen>>,
}

impl Observer for CliObserver {
    fn started(&mut self, report: &Report) {
        if let Some(p) = &mut self.progress {
            p.started(report);
        }
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).started = Some(report.clone());
    }

    fn sampled(&mut self, sample: &Sample) {
        if let Some(p) = &mut self.progress {
            p.sampled(sample);
        }
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).last =
            Some((sample.allocations, sample.bytes_requested));
    }
}

/// Runs in this process under a watchdog armed before the runtime loads (its
/// `--timeout`, else max_seconds plus a margin), which the caller holds until the
/// report's last byte is written. Limits and env are applied first, so this must be
/// the process's first use of OpenCL for `[env]` to reach the runtime.
fn run_here(
    scenario: &Scenario,
    env: Option<&std::collections::BTreeMap<String, String>>,
    format: Format,
    timeout: Option<Duration>,
) -> Result<(Report, Option<Watchdog>), Failure> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let on_hang = report_on_hang(scenario, format, Arc::clone(&seen));
    // Armed before anything touches the runtime, held until the report is written.
    let limit = clmulti_alloc::time_limit(scenario, timeout);
    let watchdog = Watchdog::arm(limit, on_hang)
        .map_err(|e| Failure::Tool(format!("cannot start the run's watchdog thread: {e}")))?;
    clmulti_supervise::worker::publish_deadline(limit);
    clmulti_alloc::apply_limits(&scenario.limits)
        .map_err(|e| Failure::Input(format!("{}: [limits]: {e}", scenario.file)))?;
    for (key, value) in env.into_iter().flatten() {
        // Validation refused NUL and '=': set_var cannot panic on these.
        std::env::set_var(key, value);
    }
    let progress = ProgressWriter::from_env();
    if let Some(p) = &progress {
        p.mark_loading();
    }
    let mut observer = CliObserver {
        progress,
        seen: Arc::clone(&seen),
    };
    let mut check = crate::axpy::BufferCheckAxpy;
    let mut split = short_split;
    let result = clmulti_alloc::run(
        scenario,
        RunOptions {
            check: Some(&mut check),
            split: Some(&mut split),
            observer: Some(&mut observer),
            watchdog: Some(&watchdog),
            interrupt: Some(INTERRUPT.as_atomic()),
            ..RunOptions::default()
        },
    );
    let report = result.map_err(|e| match e {
        clmulti_alloc::EngineError::Probe(p) => Failure::Tool(p.to_string()),
        devices @ clmulti_alloc::EngineError::Devices { .. } => Failure::Input(devices.to_string()),
    })?;
    Ok((report, Some(watchdog)))
}

/// What the watchdog does when a call outlives the run's limit: the report so far
/// (from what the observer `seen`) on stdout, then the process ends at once.
fn report_on_hang(
    scenario: &Scenario,
    format: Format,
    seen: Arc<Mutex<Seen>>,
) -> clmulti_alloc::OnHang {
    let hung_scenario = scenario.clone();
    Box::new(move |call, seconds| {
        let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut report = seen
            .started
            .clone()
            .unwrap_or_else(|| clmulti_alloc::blank_report(&hung_scenario, StopReason::Completed));
        report.stop = StopReason::TimedOut { seconds, call };
        if let Some((buffers, bytes)) = seen.last {
            report.buffers = buffers;
            report.bytes_requested = bytes;
        }
        let text = report_text(&report, format, &mut std::collections::HashSet::new());
        write_fd(1, text.as_bytes());
        // A runtime that never finished loading measured nothing: the tool failed.
        let code = if call == Some(clmulti_explain::Call::GetPlatformIds) {
            write_fd(2, format!("error: {}: loading the OpenCL runtime did not finish within {seconds:.1} s: clGetPlatformIDs never returned (an ICD the loader opened hangs while loading)\n", hung_scenario.name).as_bytes());
            1
        } else {
            0
        };
        clmulti_supervise::worker::finish(code);
        // The hung call never returns: leave without running destructors that would
        // wait on the runtime.
        // SAFETY: _exit ends the process at once; nothing after it runs.
        unsafe { libc::_exit(i32::from(code)) };
    })
}

/// The scenario's `[axpy] split`: a short split (2^22 elements, 5 repetitions) in
/// the run's own context mode; it runs whole, even when stopped.
fn short_split(
    devices: &[clmulti_probe::Device],
    scenario: &Scenario,
) -> clmulti_explain::AxpySplit {
    let options = clmulti_axpy::SplitOptions {
        n: 1 << 22,
        weights: None,
        repeat: 5,
        modes: vec![scenario.context_mode],
        kernels: vec![
            clmulti_axpy::KernelChoice::Seed,
            clmulti_axpy::KernelChoice::Fast,
        ],
        include_transfers: false,
        device_counts: Vec::new(),
    };
    match crate::axpy::split(devices, &options, &|| false) {
        Ok(report) => clmulti_explain::AxpySplit::Ran {
            n: report.n,
            runs: report
                .runs
                .iter()
                .map(|r| clmulti_explain::SplitFigures {
                    devices: r.devices,
                    context: r.context,
                    layout: r.layout.name().to_owned(),
                    kernel: r.kernel.name().to_owned(),
                    aggregate_gb_per_s: r.aggregate_gb_per_s_best,
                    scaling_efficiency: r.scaling_efficiency,
                    max_error_ulps: r.max_error_ulps,
                })
                .collect(),
        },
        Err(e) => clmulti_explain::AxpySplit::Failed {
            error: e.to_string(),
        },
    }
}
