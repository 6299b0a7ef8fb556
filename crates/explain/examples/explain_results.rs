//! Explains saved runs offline: each report of a `clmulti run --format json` output,
//! or of a diagnose's `runs.jsonl`, concluded again by this crate and said as its
//! headline and statements. No OpenCL: the reasoning is plain data in, words out.
//!
//! ```sh
//! cargo run -p clmulti-explain --example explain_results -- results/pocl-emulation/diagnose/fd-per-peer/runs.jsonl
//! ```

use clmulti_explain::Report;
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        return Err("give one or more report files (JSON Lines)".into());
    }
    let mut out = std::io::stdout().lock();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        for (number, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            // A sweep's record holds the run's report under "report".
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("{path}:{}: {e}", number + 1))?;
            // A sweep also writes each file's scenario once (a base the records
            // refer to): no report to explain.
            if value.get("scenario_base").is_some() && value.get("report").is_none() {
                continue;
            }
            let report_json = value.get("report").unwrap_or(&value).to_string();
            let mut report = Report::from_json(&report_json)
                .map_err(|e| format!("{path}:{}: {e}", number + 1))?;
            report.conclude();
            writeln!(out, "{}: {}", report.run_name, report.headline())?;
            for statement in &report.analysis.statements {
                writeln!(out, "  {statement}")?;
            }
        }
    }
    Ok(())
}
