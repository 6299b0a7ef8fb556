//! `clmulti bench`: the engine's allocation rate against a plain `clCreateBuffer`
//! loop on the same device, interleaved in one process.

use crate::Failure;
use clmulti_probe::DeviceRequest;

/// Arguments of `clmulti bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Device selector `PLATFORM[:DEVICE]`.
    #[arg(long, default_value = "auto")]
    device: String,
    /// Buffers per round.
    #[arg(long, default_value_t = 20_000)]
    count: u64,
    /// Buffer size.
    #[arg(long, default_value = "1MiB")]
    size: String,
    /// Rounds (each runs both loops).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// The engine's sampling interval.
    #[arg(long, default_value_t = 1000)]
    sample_every: u64,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let size = clmulti_scenario::parse_size(&args.size)
        .map_err(|e| Failure::Input(format!("--size: {e}")))?;
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    let selection = clmulti_probe::select(&platforms, &DeviceRequest::from_selector(&args.device))
        .map_err(|e| Failure::Input(e.to_string()))?;
    let device = &selection.devices[0];
    let platform_index = selection.platform_index;
    let device_index = selection.devices[0].index;
    let toml = format!(
        "name = \"bench\"\n[devices]\nplatform = {platform_index}\ntype = \"all\"\nindices = [{device_index}]\n\
         [allocation]\nsize = {size}\ncount = {}\n[sampling]\nevery = {}\n[guards]\nmax_seconds = 600\n",
        args.count, args.sample_every
    );
    let scenario = clmulti_scenario::load_str(&toml, "bench")
        .map_err(|e| Failure::Input(e.to_string()))?
        .remove(0);
    println!(
        "device {} {}; {} buffers of {} per round, engine sampling every {}",
        device.selector,
        device.display_name(),
        args.count,
        clmulti_scenario::format_size(size),
        args.sample_every
    );
    println!(
        "{:>5} {:>16} {:>16} {:>8}",
        "round", "plain alloc/s", "clmulti alloc/s", "ratio"
    );
    let mut ratios = Vec::new();
    let (mut best_plain, mut best_engine) = (0f64, 0f64);
    // Round 0 warms the runtime up and is not counted.
    for round in 0..=args.rounds {
        // Alternate which loop goes first, so neither always inherits a warmer runtime.
        let plain_loop = || {
            clmulti_alloc::plain_loop_rate(device, size as usize, args.count)
                .map_err(|e| Failure::Tool(format!("plain loop: {e}")))
        };
        let engine_run =
            || clmulti_alloc::run(&scenario, None).map_err(|e| Failure::Tool(e.to_string()));
        let (plain, report) = if round % 2 == 0 {
            let p = plain_loop()?;
            (p, engine_run()?)
        } else {
            let r = engine_run()?;
            (plain_loop()?, r)
        };
        if report.buffers != args.count {
            return Err(Failure::Tool(format!(
                "engine stopped early: {}",
                report.stop.summary()
            )));
        }
        let engine = report.allocations_per_second.unwrap_or(0.0);
        if round == 0 {
            println!(
                "{:>5} {plain:>16.0} {engine:>16.0} {:>8.3}  (warm-up, not counted)",
                0,
                engine / plain
            );
            continue;
        }
        best_plain = best_plain.max(plain);
        best_engine = best_engine.max(engine);
        ratios.push(engine / plain);
        println!(
            "{round:>5} {plain:>16.0} {engine:>16.0} {:>8.3}",
            engine / plain
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "best: plain {best_plain:.0}/s, clmulti {best_engine:.0}/s, ratio of bests {:.3}; median ratio {:.3} (target >= 0.95)",
        best_engine / best_plain,
        ratios[ratios.len() / 2]
    );
    Ok(())
}
