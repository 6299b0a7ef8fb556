//! `cargo xtask`: sweeps over scenario grids, run by run in child processes, with
//! results that survive a crash and summaries rewritten after every run.

mod args;
mod compare;
mod records;
mod summary;
mod sweep;

use std::process::ExitCode;

const HELP: &str = "\
cargo xtask <COMMAND>

Commands:
  sweep [PATHS...]   expand scenarios (default: configs/) and run each run in its own
                     `clmulti run` child process; results go to --out (default sweep-results/)
      --out DIR          results folder (results.jsonl, summary.md/.csv, *.svg, index.html)
      --resume           skip runs already in DIR/results.jsonl for this machine
      --timeout SECS     per-run limit (default: the run's max_seconds guard + 120)
      --shard K/N        run only the K-th of N slices of the expanded list (1-based)
      --compare OLD.jsonl  report per run what changed against an earlier sweep
      --threshold FRAC   relative change flagged by --compare (default 0.10)
      --bin PATH         use this clmulti binary instead of building the release one
      --features LIST    cargo features for the release build (e.g. nvml)
  merge DIR|FILE...  combine shards' results.jsonl into one summary (--out DIR)
  layer              build the OpenCL layer that models Intel's per-buffer descriptors
                     (target/layers/libfd_per_peer_device.so, for configs/emulation/)
  help               print this help

Without a GPU the children run on two PoCL CPU devices: POCL_DEVICES is set for them
(\"cpu cpu\" on PoCL >= 4, \"pthread pthread\" on PoCL 3) unless you set it yourself.
";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        None | Some("help" | "--help" | "-h") => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Some("sweep") => args::SweepArgs::parse(&argv[1..]).and_then(|a| sweep::sweep(&a)),
        Some("merge") => args::MergeArgs::parse(&argv[1..]).and_then(|a| sweep::merge(&a)),
        Some("layer") => sweep::build_layer(),
        Some(other) => Err(args::Error::Usage(format!(
            "unknown xtask command `{other}`"
        ))),
    };
    match result {
        Ok(code) => code,
        Err(args::Error::Usage(m)) => {
            eprintln!("error: {m}\n\n{HELP}");
            ExitCode::from(2)
        }
        Err(args::Error::Failed(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
    }
}
