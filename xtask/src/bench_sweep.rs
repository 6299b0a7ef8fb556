//! `cargo xtask bench-sweep N`: a sweep of N tiny runs (10 buffers of 64 KiB on two
//! PoCL devices, varied by an [env] value so every child does the same work), and
//! what the sweep itself costs per run in its first and last tenth, the report's
//! sizes, and the time to render the summary from the JSONL alone.

use crate::sweep;
use clap::Parser;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `cargo xtask bench-sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Runs in the grid.
    #[arg(value_parser = clap::value_parser!(u64).range(10..=100_000))]
    runs: u64,
    /// Keep the results here (default: a temporary folder, removed after).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The clmulti binary to run (default: build the release one).
    #[arg(long)]
    bin: Option<PathBuf>,
}

#[derive(Debug, Parser)]
struct Wrapper {
    #[command(flatten)]
    sweep: sweep::Args,
}

fn mean_ms(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64 * 1e3
}

fn size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

pub fn bench(args: &Args) -> Result<std::process::ExitCode, String> {
    let dir = std::env::temp_dir().join(format!("clmulti-bench-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let out = args.out.clone().unwrap_or_else(|| dir.join("out"));
    let argv = sweep_argv(args, &dir, &out)?;
    let wrapper = Wrapper::try_parse_from(argv).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let (_, stats) = sweep::sweep_with_stats(&wrapper.sweep)?;
    let total = start.elapsed().as_secs_f64();
    let n = stats.own_seconds.len();
    if n == 0 {
        return Err("the sweep ran no run".into());
    }
    let tenth = (n / 10).max(1);
    let (first, last) = (&stats.own_seconds[..tenth], &stats.own_seconds[n - tenth..]);
    let (child_first, child_last) = (
        &stats.child_seconds[..tenth],
        &stats.child_seconds[n - tenth..],
    );
    let render = Instant::now();
    let rebuilt = crate::summary::rebuild(&out)?;
    let render_s = render.elapsed().as_secs_f64();
    let svgs = svg_sizes(&out)?;
    println!("bench-sweep: {n} runs in {total:.1} s");
    println!(
        "  sweep's own time per run: first tenth {:.2} ms, last tenth {:.2} ms (ratio {:.2}; target <= 1.2 and <= 20 ms)",
        mean_ms(first),
        mean_ms(last),
        mean_ms(last) / mean_ms(first).max(1e-9)
    );
    println!(
        "  child per run: first tenth {:.1} ms, last tenth {:.1} ms",
        mean_ms(child_first),
        mean_ms(child_last)
    );
    println!(
        "  outputs: results.jsonl {} KiB, index.html {} KiB, summary.csv {} KiB, summary.md {} KiB, {} plots ({} KiB largest)",
        size(&out.join("results.jsonl")) >> 10,
        size(&out.join("index.html")) >> 10,
        size(&out.join("summary.csv")) >> 10,
        size(&out.join("summary.md")) >> 10,
        svgs.len(),
        svgs.iter().map(|s| s.1).max().unwrap_or(0) >> 10
    );
    println!("  summary rebuilt from the JSONL alone ({rebuilt} runs) in {render_s:.2} s");
    // The scenario's folder is the bench's own (and `out` with it, unless asked for).
    let _ = std::fs::remove_dir_all(&dir);
    Ok(std::process::ExitCode::SUCCESS)
}

/// The sweep's command line: a grid of `args.runs` tiny runs written into `dir`.
fn sweep_argv(
    args: &Args,
    dir: &std::path::Path,
    out: &std::path::Path,
) -> Result<Vec<String>, String> {
    // Runs told apart by their names alone: an [env] key would be a load to trust.
    let values: Vec<String> = (0..args.runs).map(|i| format!("\"tiny-{i}\"")).collect();
    let scenario = dir.join("tiny.toml");
    std::fs::write(
        &scenario,
        format!(
            "[devices]\ntype = \"gpu\"\ncount = 2\n[allocation]\nsize = \"64KiB\"\ncount = 10\n\
             [sampling]\nevery = 5\n[grid]\n\"name\" = [{}]\n",
            values.join(", ")
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut argv = vec![
        "sweep".into(),
        scenario.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--force".into(),
    ];
    if let Some(bin) = &args.bin {
        argv.extend(["--bin".into(), bin.display().to_string()]);
    }
    Ok(argv)
}

/// Each plot the sweep wrote, with its size.
fn svg_sizes(out: &std::path::Path) -> Result<Vec<(String, u64)>, String> {
    Ok(std::fs::read_dir(out)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .map(|p| {
            (
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                size(&p),
            )
        })
        .collect())
}
