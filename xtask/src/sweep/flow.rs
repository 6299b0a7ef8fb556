//! The sweep's flow: inputs, plan, what is already done, each run recorded as it
//! ends, the closing words. Each step able to stop on a signal.

use super::{
    child_env, devices_report, load_files, machine, plan_identity, prepare_out, run_key,
    scenario_files, shard_words, tool_version, unix_now, Args, Stats,
};
use crate::records::{self, SweepRecord};
use crate::summary::{Summary, SweepState};
use crate::{compare, progress::Progress, workspace};
use clmulti_explain::StopReason;
use clmulti_scenario::ScenarioFile;
use clmulti_supervise::{run_child, ChildCommand, Interrupt, INTERRUPT};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub fn sweep_with_stats(args: &Args) -> Result<(ExitCode, Stats), String> {
    Interrupt::catch();
    let inputs = match Inputs::read(args)? {
        Ok(inputs) => inputs,
        // Bad input exits 2, as `clmulti run` does.
        Err(message) => {
            eprintln!("error: {message}");
            return Ok((ExitCode::from(2), Stats::default()));
        }
    };
    if args.check {
        return Ok((inputs.check_only(), Stats::default()));
    }
    if inputs.files.is_empty() {
        // Nothing to run: no page, no plan, the files' problems said above.
        eprintln!(
            "sweep: {} invalid or refused scenario file(s) of {}; nothing was run (`clmulti check FILE` says every problem)",
            inputs.bad_files, inputs.named
        );
        return Ok((ExitCode::from(2), Stats::default()));
    }
    let machine = Machine::of(&inputs.bin)?;
    let (_lock, results) = prepare_out(args)?;
    let mut summary = Summary::new(&args.out);
    summary.set_state(SweepState::Running);
    let earlier = Earlier::read(args, &results, &machine.key, &mut summary)?;
    let plan = Plan::of(args, &inputs.files, &machine.key, &earlier.done);
    plan.write(args, &machine.host, earlier.retry.len())?;
    let mut runner = Runner::new(args, &inputs, &machine, &results, plan.todo.len())?;
    for (f, i, key) in &plan.todo {
        if INTERRUPT.signal().is_some() || !runner.run(*f, *i, key, &mut summary)? {
            break;
        }
    }
    runner.progress.finish();
    runner.close(&mut summary)?;
    closing_words(args, &results, &inputs, &plan, runner)
}

/// What the sweep reads before it plans: the binary, the scenario files and what
/// each may load.
struct Inputs {
    /// The number of scenario files named (folders expanded).
    named: usize,
    bin: PathBuf,
    files: Vec<ScenarioFile>,
    bindings: Vec<clmulti::trust::Binding>,
    bad_files: usize,
}

impl Inputs {
    /// The inputs, or the message of bad input.
    fn read(args: &Args) -> Result<Result<Self, String>, String> {
        if let Some(old) = &args.compare {
            if let Err(e) = compare::check_input(old) {
                return Ok(Err(format!("--compare {e}")));
            }
        }
        let named = match scenario_files(&args.paths) {
            Ok(files) => files,
            Err(message) => return Ok(Err(message)),
        };
        let root = workspace::root()?;
        let bin = match &args.bin {
            // Absolute: the libraries beside it are not named from a scenario's folder.
            Some(b) => std::path::absolute(b).unwrap_or_else(|_| b.clone()),
            None => workspace::build_release(&root, args.features.as_deref())?,
        };
        let libraries = bin
            .parent()
            .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf);
        let (files, bindings, bad_files) = load_files(&named, &libraries, &args.allow);
        Ok(Ok(Self {
            named: named.len(),
            bin,
            files,
            bindings,
            bad_files,
        }))
    }

    /// `--check`: every run, as a shard would plan it, checked and none run.
    fn check_only(&self) -> ExitCode {
        let invalid = self
            .files
            .iter()
            .filter_map(|f| f.check().err())
            .inspect(|e| eprintln!("error: {e}"))
            .count();
        eprintln!(
            "sweep: {} scenario file(s) checked, {} invalid or refused; nothing was run",
            self.named,
            self.bad_files + invalid
        );
        ExitCode::from(if self.bad_files + invalid > 0 { 2 } else { 0 })
    }
}

/// The machine the runs are recorded on, and the children's environment.
struct Machine {
    env: BTreeMap<String, String>,
    key: String,
    host: String,
    os: String,
    tool: String,
}

impl Machine {
    fn of(bin: &std::path::Path) -> Result<Self, String> {
        let env = child_env(bin);
        let devices = devices_report(bin, &env)?;
        let (key, host) = machine(&devices);
        Ok(Self {
            env,
            key,
            host,
            os: clmulti_probe::os_words(),
            tool: tool_version(bin),
        })
    }
}

/// The results already in the folder: each run once (a retried run's newest record,
/// a duplicated line once).
struct Earlier {
    done: HashSet<String>,
    retry: HashSet<String>,
}

impl Earlier {
    fn read(
        args: &Args,
        results: &std::path::Path,
        machine: &str,
        summary: &mut Summary,
    ) -> Result<Self, String> {
        let mut done = HashSet::new();
        let mut retry = HashSet::new();
        let mut other_machines = HashSet::new();
        records::for_each_latest(results, |r| {
            if r.machine != machine {
                other_machines.insert(r.host.clone());
            }
            if args.retry_failed && r.report.stop.is_abnormal() {
                retry.insert(r.key.clone());
            } else {
                done.insert(r.key.clone());
                summary.add(r);
            }
        })
        .map_err(|e| format!("{}: {e}", results.display()))?;
        if !other_machines.is_empty() {
            eprintln!(
                "sweep: {} holds runs from another kind of machine ({}); they are kept and run again here",
                results.display(),
                other_machines.into_iter().collect::<Vec<_>>().join("; ")
            );
        }
        Ok(Self { done, retry })
    }
}

/// The runs of this sweep (its shard), their keys, and those still to run.
struct Plan {
    runs: usize,
    plan_runs: Vec<String>,
    plan_id: String,
    keys: Vec<String>,
    todo: Vec<(usize, usize, String)>,
    invalid_runs: usize,
}

impl Plan {
    fn of(args: &Args, files: &[ScenarioFile], machine: &str, done: &HashSet<String>) -> Self {
        let mut plan: Vec<(usize, usize)> = files
            .iter()
            .enumerate()
            .flat_map(|(f, file)| (0..file.len()).map(move |i| (f, i)))
            .collect();
        let (plan_runs, plan_id) = plan_identity(files, &plan);
        if let Some((k, n)) = args.shard {
            plan = plan
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % n == k - 1)
                .map(|(_, p)| p)
                .collect();
        }
        let mut todo = Vec::new();
        let mut keys = Vec::with_capacity(plan.len());
        let mut said = HashSet::new();
        let mut invalid_runs = 0;
        for &(f, i) in &plan {
            match files[f].run(i) {
                Ok(scenario) => {
                    let key = run_key(&scenario, machine);
                    keys.push(key.clone());
                    if !done.contains(&key) {
                        todo.push((f, i, key));
                    }
                }
                Err(e) => {
                    // Every run of a grid repeats its file's problem: say it once.
                    let message = e.to_string();
                    if said.insert(message.clone()) {
                        eprintln!("error: {message}");
                    }
                    invalid_runs += 1;
                }
            }
        }
        Self {
            runs: plan.len(),
            plan_runs,
            plan_id,
            keys,
            todo,
            invalid_runs,
        }
    }

    /// Writes `plan.json` with this start added, and says what a resume has left.
    fn write(&self, args: &Args, host: &str, retried: usize) -> Result<(), String> {
        let mut starts = self.earlier_starts(args)?;
        starts.push(records::Start {
            host: clmulti_probe::host_name(),
            pid: std::process::id(),
            at: unix_now(),
            done: self.keys.len() - self.todo.len(),
        });
        records::Plan {
            plan_id: Some(self.plan_id.clone()),
            runs: self.plan_runs.clone(),
            shard: args.shard,
            host: host.to_owned(),
            keys: self.keys.clone(),
            starts,
        }
        .write(&args.out)
        .map_err(|e| format!("{}: {e}", args.out.join(records::Plan::FILE_NAME).display()))?;
        if args.resume {
            eprintln!(
                "sweep: {} run(s) already done, {} to go{}",
                self.runs - self.todo.len() - self.invalid_runs,
                self.todo.len(),
                if retried == 0 {
                    String::new()
                } else {
                    format!(" ({retried} that crashed, were killed or timed out)")
                }
            );
        }
        Ok(())
    }

    /// A resumed shard (a requeue, maybe on another node) keeps its earlier starts.
    /// A shard resumed as another shard, or on another plan, would give its merge two
    /// plans' records (an unsharded sweep resumed after an edit takes the edited runs
    /// as new ones).
    fn earlier_starts(&self, args: &Args) -> Result<Vec<records::Start>, String> {
        let earlier = records::Plan::read(&args.out).ok().flatten();
        if let (true, Some(earlier)) = (args.resume, &earlier) {
            let other_plan = earlier
                .plan_id
                .as_ref()
                .is_some_and(|id| *id != self.plan_id);
            if earlier.shard != args.shard || (other_plan && args.shard.is_some()) {
                return Err(format!(
                    "{}: --resume of another plan: the folder's plan.json is plan {} ({}), this sweep's is plan {} ({}); resume with the files and --shard it started with, or use another --out",
                    args.out.display(),
                    earlier.plan_id.as_deref().unwrap_or("unknown"),
                    shard_words(earlier.shard),
                    self.plan_id,
                    shard_words(args.shard)
                ));
            }
        }
        Ok(match earlier {
            Some(earlier) if args.resume => earlier.starts,
            _ => Vec::new(),
        })
    }
}

/// The runs' loop state: each run in its child, recorded as it ends, the summary
/// rendered now and then.
struct Runner<'a> {
    args: &'a Args,
    inputs: &'a Inputs,
    machine: &'a Machine,
    results: &'a std::path::Path,
    writer: records::Writer,
    progress: Progress,
    stats: Stats,
    sweep_start: Instant,
    child_seconds: f64,
    without_report: usize,
    skipped: usize,
    refused_runs: usize,
    last_render: Instant,
    render_every: Duration,
    render_wait: Duration,
}

impl<'a> Runner<'a> {
    fn new(
        args: &'a Args,
        inputs: &'a Inputs,
        machine: &'a Machine,
        results: &'a std::path::Path,
        todo: usize,
    ) -> Result<Self, String> {
        let sweep_start = Instant::now();
        let progress = Progress::new(todo);
        let render_every = Duration::from_secs_f64(args.render_every.max(0.0));
        Ok(Self {
            args,
            inputs,
            machine,
            results,
            writer: records::Writer::open(results)
                .map_err(|e| format!("{}: {e}", results.display()))?,
            progress,
            stats: Stats::default(),
            sweep_start,
            child_seconds: 0.0,
            without_report: 0,
            skipped: 0,
            refused_runs: 0,
            last_render: Instant::now(),
            render_every,
            // A render costs O(runs): waiting 500 times its cost keeps the sweep's own
            // time per run flat as results grow (10000 runs render in ~0.1 s).
            render_wait: render_every,
        })
    }

    /// Runs one planned run in its child and records it; false once interrupted.
    fn run(
        &mut self,
        f: usize,
        i: usize,
        key: &str,
        summary: &mut Summary,
    ) -> Result<bool, String> {
        let iteration = Instant::now();
        let file = &self.inputs.files[f];
        // Validated above; validating again costs microseconds and keeps no list.
        let Ok(scenario) = file.run(i) else {
            return Ok(true);
        };
        self.progress.start(&scenario.name);
        // What the run loads is checked again now, and handed over as checked.
        let prepared = match clmulti::trust::prepare(&scenario.env, &self.inputs.bindings[f]) {
            Ok(prepared) => prepared,
            Err(why) => {
                self.progress
                    .finish_run(&format!("error: {}: {why}; not run", scenario.name));
                self.refused_runs += 1;
                return Ok(true);
            }
        };
        let bin = &self.inputs.bin;
        let mut child_env = self.machine.env.clone();
        child_env.extend(prepared.env.clone());
        let outcome = run_child(&ChildCommand {
            interrupt: Some(&INTERRUPT),
            inherit: prepared.inherit.clone(),
            ..ChildCommand::scenario_run_in(
                bin.clone(),
                &scenario,
                child_env,
                self.args.timeout.map(Duration::from_secs_f64),
            )
        })
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        drop(prepared);
        if outcome.interrupted {
            return Ok(false);
        }
        self.child_seconds += outcome.wall_seconds;
        use std::os::unix::process::ExitStatusExt;
        let record = SweepRecord {
            key: key.to_owned(),
            file: file.file().to_owned(),
            index: i,
            machine: self.machine.key.clone(),
            host: self.machine.host.clone(),
            os: self.machine.os.clone(),
            tool: self.machine.tool.clone(),
            finished_at: unix_now(),
            wall_seconds: outcome.wall_seconds,
            exit_code: outcome.status.code(),
            signal: outcome.status.signal(),
            report: clmulti_alloc::child::report_of(&scenario, &outcome),
        };
        self.record(record, summary)?;
        self.stats.child_seconds.push(outcome.wall_seconds);
        self.stats
            .own_seconds
            .push(iteration.elapsed().as_secs_f64() - outcome.wall_seconds);
        Ok(true)
    }

    /// Appends a run's record, counts how it ended, and renders the summary when due.
    fn record(&mut self, record: SweepRecord, summary: &mut Summary) -> Result<(), String> {
        self.writer
            .append(&record)
            .map_err(|e| format!("{}: {e}", self.results.display()))?;
        if matches!(record.report.stop, StopReason::NoReport { .. }) {
            self.without_report += 1;
        }
        if matches!(record.report.stop, StopReason::Skipped { .. }) {
            self.skipped += 1;
        }
        self.progress.finish_run(&format!(
            "{}: {} ({:.2} s)",
            record.report.run_name,
            record.report.headline(),
            record.wall_seconds
        ));
        summary.add(record);
        if self.last_render.elapsed() >= self.render_wait {
            let start = Instant::now();
            summary
                .write()
                .map_err(|e| format!("writing the summary: {e}"))?;
            self.render_wait = self.render_every.max(start.elapsed() * 500);
            self.last_render = Instant::now();
        }
        Ok(())
    }

    /// The summary's last render, in the state the sweep ended in, and its timing.
    fn close(&self, summary: &mut Summary) -> Result<(), String> {
        summary.set_state(if INTERRUPT.signal().is_some() {
            SweepState::Interrupted
        } else {
            SweepState::Ended
        });
        summary
            .write()
            .map_err(|e| format!("writing the summary: {e}"))?;
        let total = self.sweep_start.elapsed().as_secs_f64();
        let ran = summary.len();
        let done_now = self.stats.child_seconds.len();
        if done_now > 0 {
            eprintln!(
                "sweep: {done_now} run(s) in {total:.2} s; children {:.2} s; sweep overhead {:.1} ms per run",
                self.child_seconds,
                (total - self.child_seconds) * 1e3 / done_now as f64
            );
        }
        eprintln!(
            "sweep: {ran} run(s) in {}",
            self.args.out.join("index.html").display()
        );
        Ok(())
    }
}

/// What the sweep skipped, compared, left or refused, and its exit code.
fn closing_words(
    args: &Args,
    results: &std::path::Path,
    inputs: &Inputs,
    plan: &Plan,
    runner: Runner<'_>,
) -> Result<(ExitCode, Stats), String> {
    let skipped = runner.skipped;
    if skipped > 0 {
        eprintln!(
            "sweep: {skipped} run(s) skipped: they ask for more devices than this machine has (by design on a node with fewer, such as a Slurm node; each record says why, and `clmulti check FILE` names the key); `clmulti run` refuses such a run with exit 2"
        );
    }
    if let Some(old) = &args.compare {
        let text = compare::compare_files(old, results, args.threshold)?;
        crate::write_stdout(&text)?;
        clmulti::output::write_file(&args.out.join("compare.md"), text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    if INTERRUPT.signal().is_some() {
        eprintln!(
            "sweep: interrupted; every finished run is in {}; --resume continues",
            results.display()
        );
        return Ok((ExitCode::from(130), runner.stats));
    }
    let (bad_files, invalid_runs) = (inputs.bad_files, plan.invalid_runs);
    let (refused_runs, without_report) = (runner.refused_runs, runner.without_report);
    if bad_files > 0 || invalid_runs + refused_runs > 0 || without_report > 0 {
        eprintln!(
            "sweep: {bad_files} invalid or refused scenario file(s), {invalid_runs} invalid run(s), {refused_runs} run(s) refused (what they load changed since planning), {without_report} run(s) without a report"
        );
        let code = if bad_files + invalid_runs + refused_runs > 0 {
            2
        } else {
            1
        };
        return Ok((ExitCode::from(code), runner.stats));
    }
    Ok((ExitCode::SUCCESS, runner.stats))
}
