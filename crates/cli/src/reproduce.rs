//! `clmulti reproduce`: a failed run as a stand-alone C program (ICD loader only) for a
//! runtime's maintainer: the same platform, devices, context mode, flags, size and
//! strategy, under the same limits, failing where the run did.

use crate::Failure;
use clmulti_explain::Report;
use std::path::{Path, PathBuf};

/// Arguments of `clmulti reproduce`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Reports: `clmulti run --format json` output, a diagnosis's runs.jsonl, or a
    /// sweep's results.jsonl.
    reports: PathBuf,
    /// The run to reproduce, by name; default: the first that failed.
    #[arg(long)]
    run: Option<String>,
    /// Write the program here (default: stdout).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Every report in a file of report lines (or sweep records holding one).
pub fn read_reports(path: &Path) -> Result<Vec<Report>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?;
    let mut reports = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let report = Report::from_json(line).or_else(|first| {
            let record: serde_json::Value =
                serde_json::from_str(line).map_err(|_| first.to_string())?;
            let inner = record.get("report").ok_or_else(|| first.to_string())?;
            Report::from_json(&inner.to_string()).map_err(|e| e.to_string())
        });
        match report {
            Ok(r) => reports.push(r),
            Err(e) => {
                return Err(Failure::Input(format!(
                    // `e` says "not a clmulti report: ..." itself.
                    "{}:{}: {e}",
                    path.display(),
                    n + 1
                )));
            }
        }
    }
    Ok(reports)
}

/// The run `name` asks for, or the first that failed.
pub fn pick<'a>(reports: &'a [Report], name: Option<&str>) -> Result<&'a Report, String> {
    match name {
        Some(name) => reports.iter().find(|r| r.run_name == name).ok_or_else(|| {
            let names: Vec<&str> = reports.iter().map(|r| r.run_name.as_str()).collect();
            format!("no run named {name:?}; there are: {}", names.join(", "))
        }),
        None => reports
            .iter()
            .find(|r| matches!(r.stop, clmulti_explain::StopReason::Failed { .. }))
            .ok_or_else(|| "no run failed: name one with --run".to_owned()),
    }
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let reports = read_reports(&args.reports)?;
    let report = pick(&reports, args.run.as_deref())
        .map_err(|e| Failure::Input(format!("{}: {e}", args.reports.display())))?;
    let program = clmulti_explain::render::reproducer::c_program(report)
        .map_err(|e| Failure::Input(format!("{}: {e}", report.run_name)))?;
    match &args.out {
        Some(path) => crate::output::write_file(path, program.as_bytes())
            .map_err(|e| Failure::Tool(format!("{}: {e}", path.display()))),
        None => crate::format::write_stdout(&program),
    }
}
