//! `clmulti check` and `clmulti run`: validate scenarios, run them, print reports.

use crate::format::{self, Format};
use crate::Failure;
use clmulti_alloc::{Report, Resource};
use clmulti_scenario::{load_file, Scenario, ScenarioError};
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// Arguments of `clmulti check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Scenario files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Arguments of `clmulti run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Scenario files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output format; `json` prints one report per line (JSON Lines).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Run only the N-th run (0-based) of each file's grid.
    #[arg(long)]
    index: Option<usize>,
    /// Run every run in its own child process (always done for runs that set
    /// `[env]` or `[limits]` when several runs share this invocation).
    #[arg(long)]
    isolate: bool,
}

pub fn check(args: &CheckArgs) -> Result<(), Failure> {
    let mut bad = 0;
    for file in &args.files {
        match load_file(file) {
            Ok(runs) => println!("ok {}: {} run(s)", file.display(), runs.len()),
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
            }
        }
    }
    if bad > 0 {
        return Err(Failure::Input(format!(
            "{bad} of {} file(s) are invalid",
            args.files.len()
        )));
    }
    Ok(())
}

fn select_runs(args: &RunArgs) -> (Vec<(PathBuf, usize, Scenario)>, Vec<ScenarioError>) {
    let mut runs = Vec::new();
    let mut errors = Vec::new();
    for file in &args.files {
        match load_file(file) {
            Ok(list) => {
                let count = list.len();
                for (i, s) in list.into_iter().enumerate() {
                    if args.index.is_none_or(|n| n == i) {
                        runs.push((file.clone(), i, s));
                    }
                }
                if let Some(n) = args.index.filter(|n| *n >= count) {
                    errors.push(ScenarioError {
                        file: file.display().to_string(),
                        line: None,
                        column: None,
                        key: Some("grid".into()),
                        message: format!(
                            "--index {n} is out of range: the file expands to {count} run(s)"
                        ),
                    });
                }
            }
            Err(e) => errors.push(e),
        }
    }
    (runs, errors)
}

pub fn run(args: &RunArgs) -> Result<(), Failure> {
    let (runs, errors) = select_runs(args);
    for e in &errors {
        eprintln!("error: {e}");
    }
    let several = runs.len() > 1;
    let mut tool_failure = None;
    let mut input_failure = None;
    for (file, index, scenario) in &runs {
        let has_knobs = !scenario.env.is_empty() || scenario.limits.any();
        let result = if args.isolate || (several && has_knobs) {
            run_child(file, *index, scenario)
        } else {
            run_here(scenario)
        };
        match result {
            Ok(report) => print_report(&report, args.format)?,
            Err(Failure::Tool(m)) => {
                eprintln!("error: {}: {m}", scenario.name);
                tool_failure = Some(m);
            }
            Err(Failure::Input(m)) => {
                eprintln!("error: {m}");
                input_failure = Some(m);
            }
        }
    }
    if let Some(m) = tool_failure {
        return Err(Failure::Tool(format!("a run could not be performed: {m}")));
    }
    if input_failure.is_some() || !errors.is_empty() {
        let problems = errors.len() + usize::from(input_failure.is_some());
        return Err(Failure::Input(if runs.is_empty() {
            format!("{problems} scenario problem(s); nothing was run")
        } else {
            format!("{problems} scenario problem(s); the valid runs were performed")
        }));
    }
    Ok(())
}

/// Runs in this process: env and limits are applied first, so this must be the
/// process's first use of OpenCL for `[env]` to reach the runtime.
fn run_here(scenario: &Scenario) -> Result<Report, Failure> {
    for (key, value) in &scenario.env {
        std::env::set_var(key, value);
    }
    clmulti_alloc::apply_limits(&scenario.limits)
        .map_err(|e| Failure::Input(format!("{}: [limits]: {e}", scenario.file)))?;
    let mut check = crate::axpy::buffer_check();
    clmulti_alloc::run(scenario, Some(&mut check)).map_err(|e| match e {
        clmulti_alloc::EngineError::Probe(p) => Failure::Tool(p.to_string()),
        devices @ clmulti_alloc::EngineError::Devices { .. } => Failure::Input(devices.to_string()),
    })
}

/// Runs in a child process of this binary with the scenario's env; a crash of the
/// runtime becomes a report with the signal instead of taking this process down.
fn run_child(file: &std::path::Path, index: usize, scenario: &Scenario) -> Result<Report, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Tool(format!("cannot find own binary: {e}")))?;
    let output = Command::new(exe)
        .arg("run")
        .arg(file)
        .args(["--index", &index.to_string(), "--format", "json"])
        .envs(&scenario.env)
        .output()
        .map_err(|e| Failure::Tool(format!("cannot start child: {e}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // A child that could not run the scenario at all fails this command the same way.
    if !stdout.lines().any(|l| l.starts_with('{')) {
        match output.status.code() {
            Some(1) => return Err(Failure::Tool(stderr.trim().to_owned())),
            Some(2) => return Err(Failure::Input(stderr.trim().to_owned())),
            _ => {}
        }
    }
    Ok(Report::from_child(
        scenario,
        &stdout,
        &stderr,
        output.status,
    ))
}

fn print_report(report: &Report, format: Format) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    let written = match format {
        Format::Json => serde_json::to_writer(&mut out, report)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out)),
        Format::Table => write!(out, "{}", render(report)),
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Tool(format!("cannot write report: {e}")))
}

fn render(r: &Report) -> String {
    let mut s = String::new();
    let scenario = &r.scenario;
    let alloc = &scenario["allocation"];
    let line = |s: &mut String, k: &str, v: String| s.push_str(&format!("  {k:<16}{v}\n"));
    s.push_str(&format!(
        "run {}  ({})\n",
        r.run_name,
        scenario["file"].as_str().unwrap_or("?")
    ));
    let devices: Vec<String> = r
        .devices
        .iter()
        .map(|d| format!("{} {}", d.selector, d.display_name()))
        .collect();
    line(&mut s, "platform", r.platform.clone());
    line(&mut s, "devices", devices.join(", "));
    line(
        &mut s,
        "experiment",
        format!(
            "context {}, strategy {}, {} x {}, flags {}",
            scenario["context_mode"].as_str().unwrap_or("?"),
            alloc["strategy"].as_str().unwrap_or("?"),
            format::bytes(alloc["size_bytes"].as_u64().unwrap_or(0)),
            match &alloc["count"] {
                serde_json::Value::Object(o) =>
                    o.get("fixed").map_or("?".into(), |v| v.to_string()),
                other => other.as_str().unwrap_or("?").to_owned(),
            },
            alloc["flags"].as_array().map_or(String::new(), |f| f
                .iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join("|")),
        ),
    );
    line(
        &mut s,
        "reached",
        format!(
            "{} buffers ({} requested) in {:.3} s ({:.3} s of it sampling){}",
            r.buffers,
            format::bytes(r.bytes_requested),
            r.elapsed_seconds,
            r.sampling_seconds,
            r.allocations_per_second
                .map_or(String::new(), |a| format!(", {a:.0} allocations/s"))
        ),
    );
    line(&mut s, "stopped", r.stop.summary());
    if !r.costs.is_empty() {
        s.push_str("  per-buffer cost and limits:\n");
        for c in &r.costs {
            let fmt_value = |v: f64| match c.resource {
                Resource::OpenFds | Resource::MemoryMaps => format!("{v:.2}"),
                _ => format::bytes(v.max(0.0) as u64),
            };
            s.push_str(&format!(
                "    {:<16}{:>12} per buffer   now {:>12}   limit {:>12} {:<22} {}\n",
                c.resource.label(),
                match c.resource {
                    Resource::OpenFds | Resource::MemoryMaps => format!("{:.3}", c.per_buffer),
                    _ if c.per_buffer < 0.0 => format!("-{}", format::bytes(-c.per_buffer as u64)),
                    _ => format::bytes(c.per_buffer as u64),
                },
                fmt_value(c.last),
                c.limit.map_or("-".into(), fmt_value),
                format!("({})", c.resource.limit_name()),
                c.predicted_count
                    .map_or("not reached at this rate".into(), |n| format!(
                        "reached at ~{n} buffers"
                    )),
            ));
        }
    }
    if let Some(p) = &r.prediction {
        line(&mut s, "prediction", p.explanation.clone());
    }
    let l = &r.leak_check;
    line(
        &mut s,
        "leak check",
        format!(
            "{}: buffers {}/{}, pools {}/{}, queues {}/{}, contexts {}/{} released; fds {} -> {}, RSS {} -> {}",
            if l.clean { "clean" } else { "NOT CLEAN" },
            l.buffers_released,
            l.buffers_created,
            l.pools_released,
            l.pools_created,
            l.queues_released,
            l.queues_created,
            l.contexts_released,
            l.contexts_created,
            l.before.open_fds,
            l.after_release.open_fds,
            format::bytes(l.before.rss_bytes),
            format::bytes(l.after_release.rss_bytes),
        ),
    );
    line(
        &mut s,
        "bookkeeping",
        format!(
            "{:.1} B and {:.1} ns per buffer (measured without OpenCL calls)",
            r.bookkeeping.bytes_per_buffer, r.bookkeeping.ns_per_buffer
        ),
    );
    if let Some(a) = &r.axpy_check {
        line(
            &mut s,
            "dAxpy check",
            format!(
                "{}/{} pairs verified{}",
                a.pairs_ok,
                a.pairs_checked,
                if a.failures.is_empty() {
                    String::new()
                } else {
                    format!("; {}", a.failures.join("; "))
                }
            ),
        );
    }
    for m in &r.driver_messages {
        line(&mut s, "driver", m.clone());
    }
    for w in &r.warnings {
        line(&mut s, "warning", format!("{} ({})", w.message, w.advice));
    }
    s.push('\n');
    s
}
