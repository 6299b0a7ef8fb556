//! `clmulti bench`: the engine's allocation rate against a plain `clCreateBuffer`
//! loop on the same device. Each arm of each round runs in a fresh process (a warm
//! runtime or reused memory would favour whichever runs second), the order
//! alternates, and the verdict is the median ratio with its spread.

use crate::format::{self, table, Format};
use crate::{note, Failure};
use clmulti_probe::{ClCode, DeviceRequest};
use serde::{Deserialize, Serialize};

/// The engine's rate should be at least this share of the plain loop's.
const TARGET: f64 = 0.95;

/// Arguments of `clmulti bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Device selector `PLATFORM[:DEVICE]`.
    #[arg(long, default_value = "auto")]
    device: String,
    /// Buffers per arm.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    count: u64,
    /// Buffer size.
    #[arg(long, default_value = "1MiB")]
    size: String,
    /// Rounds (each runs both arms, in fresh processes).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// The engine's sampling interval.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    sample_every: u64,
    /// Fail (exit 1) when the median ratio is below this.
    #[arg(long, value_name = "RATIO")]
    require: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Internal: run one arm in this process and print its rate.
    #[arg(long, hide = true, value_enum)]
    arm: Option<Arm>,
}

/// One side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Arm {
    /// A plain loop calling clCreateBuffer.
    Plain,
    /// clmulti's engine on the same scenario.
    Engine,
}

#[derive(Debug, Serialize, Deserialize)]
struct ArmResult {
    rate: f64,
}

#[derive(Debug, Serialize)]
struct Round {
    plain: f64,
    engine: f64,
    ratio: f64,
}

#[derive(Debug, Serialize)]
struct BenchReport {
    schema_version: u32,
    device: String,
    count: u64,
    size_bytes: u64,
    rounds: Vec<Round>,
    ratio_min: f64,
    ratio_median: f64,
    ratio_max: f64,
    target: f64,
    met: bool,
}

/// Allocations per second of a plain loop calling `clCreateBuffer` on one device in
/// its own context, releasing every buffer at the end: the reference.
fn plain_loop_rate(device: &clmulti_probe::Device, size: usize, count: u64) -> Result<f64, ClCode> {
    use opencl3::context::Context;
    let context = Context::from_devices(&[device.id()], &[], None, std::ptr::null_mut())
        .map_err(|e| ClCode(e.0))?;
    let mut live = Vec::with_capacity(count as usize);
    let start = std::time::Instant::now();
    let mut failure = None;
    for _ in 0..count {
        // SAFETY: a live context, no host pointer.
        match unsafe {
            opencl3::memory::create_buffer(
                context.get(),
                opencl3::memory::CL_MEM_READ_WRITE,
                size,
                std::ptr::null_mut(),
            )
        } {
            Ok(mem) => live.push(mem),
            Err(e) => {
                failure = Some(ClCode(e));
                break;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    for mem in live {
        // SAFETY: created above, released once.
        let _ = unsafe { opencl3::memory::release_mem_object(mem) };
    }
    match failure {
        Some(code) => Err(code),
        None => Ok(count as f64 / seconds),
    }
}

fn run_arm(arm: Arm, args: &Args, size: u64) -> Result<(), Failure> {
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    let selection = clmulti_probe::select(&platforms, &DeviceRequest::from_selector(&args.device))
        .map_err(|e| Failure::Input(e.to_string()))?;
    let device = &selection.devices[0];
    let rate = match arm {
        Arm::Plain => plain_loop_rate(device, size as usize, args.count)
            .map_err(|e| Failure::Tool(format!("plain loop: {e}")))?,
        Arm::Engine => {
            let toml = format!(
                "name = \"bench\"\n[devices]\nplatform = {}\ntype = \"all\"\nindices = [{}]\n\
                 [allocation]\nsize = {size}\ncount = {}\n[sampling]\nevery = {}\n[guards]\nmax_seconds = 600\n",
                selection.platform_index,
                device.info().index,
                args.count,
                args.sample_every
            );
            let scenario = clmulti_scenario::load_str(&toml, "bench")
                .map_err(|e| Failure::Input(e.to_string()))?
                .remove(0);
            let report = clmulti_alloc::run(&scenario, clmulti_alloc::RunOptions::default())
                .map_err(|e| Failure::Tool(e.to_string()))?;
            if report.buffers != args.count {
                return Err(Failure::Tool(format!(
                    "engine stopped early: {}",
                    report.stop.summary()
                )));
            }
            report.allocations_per_second.unwrap_or(0.0)
        }
    };
    println!(
        "{}",
        serde_json::to_string(&ArmResult { rate }).unwrap_or_default()
    );
    Ok(())
}

fn spawn_arm(arm: Arm, args: &Args) -> Result<f64, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Tool(format!("cannot find own binary: {e}")))?;
    let arm_name = match arm {
        Arm::Plain => "plain",
        Arm::Engine => "engine",
    };
    let out = std::process::Command::new(exe)
        .args([
            "bench",
            "--arm",
            arm_name,
            "--device",
            &args.device,
            "--size",
            &args.size,
        ])
        .args([
            "--count",
            &args.count.to_string(),
            "--sample-every",
            &args.sample_every.to_string(),
        ])
        .output()
        .map_err(|e| Failure::Tool(format!("cannot run a bench arm: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout
        .lines()
        .find_map(|l| serde_json::from_str::<ArmResult>(l).ok())
    {
        Some(r) if out.status.success() => Ok(r.rate),
        _ => {
            let err = String::from_utf8_lossy(&out.stderr);
            let why = err
                .lines()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or(err.trim());
            Err(match out.status.code() {
                Some(2) => Failure::Input(why.to_owned()),
                _ => Failure::Tool(format!("the {arm_name} arm failed: {why}")),
            })
        }
    }
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let size = clmulti_scenario::parse_size(&args.size)
        .map_err(|e| Failure::Input(format!("--size: {e}")))?;
    if size == 0 {
        return Err(Failure::Input(
            "--size: a buffer must have at least 1 byte".into(),
        ));
    }
    if let Some(arm) = args.arm {
        return run_arm(arm, args, size);
    }
    if let Some(r) = args.require.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(Failure::Input(format!(
            "--require {r}: expected a ratio > 0"
        )));
    }
    let (_, devices) = crate::axpy::devices_from_args(std::slice::from_ref(&args.device), None)?;
    let device = format!(
        "{} {}",
        devices[0].info().selector,
        devices[0].info().display_name()
    );
    note!(
        "bench: {device}; {} buffers of {} per arm, engine sampling every {}; each arm in a fresh process",
        args.count,
        clmulti_scenario::format_size(size),
        args.sample_every
    );
    let mut rounds = Vec::new();
    for round in 0..args.rounds {
        // Alternate which arm goes first.
        let (plain, engine) = if round % 2 == 0 {
            let p = spawn_arm(Arm::Plain, args)?;
            (p, spawn_arm(Arm::Engine, args)?)
        } else {
            let e = spawn_arm(Arm::Engine, args)?;
            (spawn_arm(Arm::Plain, args)?, e)
        };
        rounds.push(Round {
            plain,
            engine,
            ratio: engine / plain,
        });
    }
    let mut ratios: Vec<f64> = rounds.iter().map(|r| r.ratio).collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let target = args.require.unwrap_or(TARGET);
    let report = BenchReport {
        schema_version: 1,
        device,
        count: args.count,
        size_bytes: size,
        ratio_min: ratios[0],
        ratio_median: median,
        ratio_max: ratios[ratios.len() - 1],
        target,
        met: median >= target,
        rounds,
    };
    match args.format {
        Format::Json => format::print_json(&report)?,
        Format::Text => {
            println!("device {}", report.device);
            let mut rows = vec![vec![
                "round".to_owned(),
                "plain alloc/s".into(),
                "clmulti alloc/s".into(),
                "ratio".into(),
            ]];
            for (i, r) in report.rounds.iter().enumerate() {
                rows.push(vec![
                    (i + 1).to_string(),
                    format!("{:.0}", r.plain),
                    format!("{:.0}", r.engine),
                    format!("{:.3}", r.ratio),
                ]);
            }
            print!("{}", table(&rows));
            println!(
                "verdict: the engine allocates at {:.3} (median; min {:.3}, max {:.3} over {} rounds) of a plain clCreateBuffer loop's rate; target >= {target}: {}",
                report.ratio_median,
                report.ratio_min,
                report.ratio_max,
                report.rounds.len(),
                if report.met { "met" } else { "NOT met" }
            );
        }
    }
    if args.require.is_some() && !report.met {
        return Err(Failure::Tool(format!(
            "median ratio {:.3} is below --require {target}",
            report.ratio_median
        )));
    }
    Ok(())
}
