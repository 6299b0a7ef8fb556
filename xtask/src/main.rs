//! `cargo xtask`: sweeps over scenario grids, run by run in child processes, with
//! results that survive a crash, and the summaries, merges and comparisons around
//! them; `docs` for completions, man pages and the scenario schema. The measuring
//! and the reasoning are clmulti's crates'; this orchestrates, stores and renders.

mod bench_sweep;
mod compare;
mod docs;
mod lock;
mod merge;
mod neo_versions;
mod plan_check;
mod progress;
mod records;
mod summary;
mod sweep;
mod workspace;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Sweeps, summaries, merges and comparisons for clmulti.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Expand scenarios (default: configs/) and run each run in its own `clmulti run`
    /// child; without a GPU the children get two PoCL CPU devices (POCL_DEVICES)
    /// unless you set that yourself.
    Sweep(sweep::Args),
    /// Combine shards' results into one folder and summary.
    Merge(merge::Args),
    /// Rebuild a results folder's summaries from its results.jsonl alone.
    Summary {
        /// The results folder.
        dir: std::path::PathBuf,
    },
    /// Compare two sweeps' results run by run.
    Compare(compare::Args),
    /// Build the OpenCL layer behind configs/emulation/ (cargo build -p clmulti-layer).
    Layer,
    /// Measure what a sweep of N tiny runs costs the sweep itself per run.
    BenchSweep(bench_sweep::Args),
    /// Write the NEO versions table (versions.md, versions.json) from the folder
    /// scripts/neo-versions-results.sh fills.
    NeoVersions(neo_versions::Args),
    /// Generate shell completions and man pages (docs/) and the scenario JSON Schema
    /// (configs/scenario.schema.json) from their sources.
    Docs(docs::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Merge(args) => merge::merge(&args),
        Command::Summary { dir } => summary::rebuild(&dir).map(|n| {
            eprintln!(
                "summary: {n} run(s) in {}",
                dir.join("index.html").display()
            );
            ExitCode::SUCCESS
        }),
        Command::Compare(args) => compare::compare(&args),
        Command::Layer => build_layer(),
        Command::Docs(args) => docs::docs(&args),
        Command::BenchSweep(args) => bench_sweep::bench(&args),
        Command::NeoVersions(args) => neo_versions::neo_versions(&args),
    };
    match result {
        Ok(code) => code,
        Err(m) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
    }
}

/// Writes `text` to stdout: a closed or full stdout is an error, not a panic.
pub fn write_stdout(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

fn build_layer() -> Result<ExitCode, String> {
    let root = workspace::root()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--release", "-p", "clmulti-layer"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("building clmulti-layer failed".into());
    }
    eprintln!(
        "layer: {}",
        workspace::target_dir(&root)
            .join("release")
            .join(clmulti_contract::LAYER.file_name)
            .display()
    );
    Ok(ExitCode::SUCCESS)
}
