//! `clmulti axpy`, and the dAxpy check the allocation engine runs when a scenario
//! asks for `axpy.check`.

use crate::format::{self, Format};
use crate::Failure;
use clmulti_axpy::{AxpyCase, Bandwidth, CrossDevice, KernelChoice, Runner, Verified};
use clmulti_probe::{DeviceChoice, DeviceInfo, DeviceRequest, DeviceTypeFilter, PlatformSelector};
use opencl3::context::Context;
use serde::Serialize;

/// The engine's buffer check: dAxpy over each pair, verified.
pub fn buffer_check() -> impl FnMut(&clmulti_alloc::BufferPair<'_>) -> Result<(), String> {
    |pair| {
        let runner = Runner::new(pair.context).map_err(|e| e.to_string())?;
        runner
            .check_buffers(pair.device, pair.x, pair.y, pair.bytes)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// Which kernels `clmulti axpy` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelArg {
    /// The seed's dAxpy.
    Seed,
    /// The fast float4 kernel.
    Fast,
    /// Both, side by side.
    Both,
}

/// Arguments of `clmulti axpy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Elements (floats) for the bandwidth runs.
    #[arg(long, default_value_t = 1 << 24)]
    n: u64,
    /// Device selector `PLATFORM[:DEVICE]` (name, vendor substring or index); repeat
    /// for several. Default: every device of the first platform with GPUs, else of
    /// the first platform.
    #[arg(long = "device")]
    devices: Vec<String>,
    /// Timed repetitions after the warm-up.
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// Which kernel(s).
    #[arg(long, value_enum, default_value_t = KernelArg::Both)]
    kernel: KernelArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Debug, Serialize)]
struct DeviceResult {
    device: String,
    selector: String,
    verified: Vec<Verified>,
    bandwidth: Vec<Bandwidth>,
    notes: Vec<String>,
    errors: Vec<String>,
}

#[derive(Debug, Serialize)]
struct AxpyReport {
    platform: String,
    devices: Vec<DeviceResult>,
    cross_device: Option<Result<CrossDevice, String>>,
}

/// Cases every device must pass: offsets, increments, n not a multiple of the
/// work-group size, n = 0 and n = 1.
fn verification_cases(n: u64) -> Vec<AxpyCase> {
    let small = n.clamp(1, 1 << 20);
    vec![
        AxpyCase::contiguous(small + 3, 2.0),
        AxpyCase::contiguous(0, 2.0),
        AxpyCase::contiguous(1, -0.75),
        AxpyCase {
            n: 100_003,
            alpha: 0.5,
            x_offset: 7,
            inc_x: 3,
            y_offset: 5,
            inc_y: 2,
        },
        AxpyCase {
            n: 4097,
            alpha: 3.0,
            x_offset: 8,
            inc_x: 1,
            y_offset: 12,
            inc_y: 1,
        },
    ]
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    let requests: Vec<DeviceRequest> = if args.devices.is_empty() {
        vec![DeviceRequest {
            platform: PlatformSelector::Auto,
            device_type: DeviceTypeFilter::Gpu,
            devices: DeviceChoice::All,
            fallback_to_any_type: true,
        }]
    } else {
        args.devices
            .iter()
            .map(|s| DeviceRequest::from_selector(s))
            .collect()
    };
    let mut platform = None;
    let mut devices: Vec<DeviceInfo> = Vec::new();
    for request in &requests {
        let selection = clmulti_probe::select(&platforms, request)
            .map_err(|e| Failure::Input(e.to_string()))?;
        if platform.get_or_insert(selection.platform_index) != &selection.platform_index {
            return Err(Failure::Input(
                "--device selectors must name devices of one platform".into(),
            ));
        }
        devices.extend(selection.devices);
    }
    let platform_name = platforms
        .iter()
        .find(|p| Some(p.index) == platform)
        .map_or_else(String::new, |p| p.display_name().to_owned());
    let kernels: &[KernelChoice] = match args.kernel {
        KernelArg::Seed => &[KernelChoice::Seed],
        KernelArg::Fast => &[KernelChoice::Fast],
        KernelArg::Both => &[KernelChoice::Seed, KernelChoice::Fast],
    };
    let mut results = Vec::new();
    for device in &devices {
        eprintln!("axpy: {} {}", device.selector, device.display_name());
        results.push(run_device(device, args, kernels));
    }
    let cross_device = (devices.len() >= 2).then(|| cross(&devices[..2], args.n.min(1 << 26)));
    let report = AxpyReport {
        platform: platform_name,
        devices: results,
        cross_device,
    };
    match args.format {
        Format::Json => format::print_json(&report)?,
        Format::Table => print_table(&report),
    }
    let failed = report.devices.iter().any(|d| !d.errors.is_empty())
        || matches!(report.cross_device, Some(Err(_)));
    if failed {
        return Err(Failure::Tool("some dAxpy runs failed (see above)".into()));
    }
    Ok(())
}

fn context_for(ids: &[opencl3::types::cl_device_id]) -> Result<Context, String> {
    Context::from_devices(ids, &[], None, std::ptr::null_mut())
        .map_err(|e| format!("clCreateContext: {}", clmulti_probe::ClCode(e.0)))
}

fn run_device(device: &DeviceInfo, args: &Args, kernels: &[KernelChoice]) -> DeviceResult {
    let mut result = DeviceResult {
        device: device.display_name().to_owned(),
        selector: device.selector.clone(),
        verified: Vec::new(),
        bandwidth: Vec::new(),
        notes: Vec::new(),
        errors: Vec::new(),
    };
    let id = device.handle().map_or(std::ptr::null_mut(), |h| h.as_raw());
    let context = match context_for(&[id]) {
        Ok(c) => c,
        Err(e) => {
            result.errors.push(e);
            return result;
        }
    };
    let runner = match Runner::new(&context) {
        Ok(r) => r,
        Err(e) => {
            result.errors.push(e.to_string());
            return result;
        }
    };
    for &kernel in kernels {
        if kernel == KernelChoice::Seed && args.n > i32::MAX as u64 {
            result.notes.push(format!(
                "seed kernel not run at n = {}: its `int elements` (and int index arithmetic) stop at 2^31 - 1; the fast kernel uses 64-bit counts",
                args.n
            ));
            continue;
        }
        let mut cases = verification_cases(args.n);
        if kernel == KernelChoice::Fast && args.n > i32::MAX as u64 {
            // Past the seed kernel's range: verify the whole vector once.
            cases.push(AxpyCase::contiguous(args.n, 1.25));
        }
        for case in cases {
            // The fast kernel only takes the contiguous, aligned cases.
            let choice = if kernel == KernelChoice::Fast {
                KernelChoice::Auto
            } else {
                kernel
            };
            match runner.verify(id, &case, choice) {
                Ok(v) => result.verified.push(v),
                Err(e) => result.errors.push(format!("verify {case:?}: {e}")),
            }
        }
        match runner.bandwidth(id, args.n, args.repeat, kernel) {
            Ok(b) => result.bandwidth.push(b),
            Err(e) => result.errors.push(format!("bandwidth ({kernel:?}): {e}")),
        }
    }
    result
}

fn cross(devices: &[DeviceInfo], n: u64) -> Result<CrossDevice, String> {
    let ids: Vec<_> = devices
        .iter()
        .map(|d| d.handle().map_or(std::ptr::null_mut(), |h| h.as_raw()))
        .collect();
    let context = context_for(&ids)?;
    let runner = Runner::new(&context).map_err(|e| e.to_string())?;
    runner
        .cross_device(ids[0], ids[1], n, KernelChoice::Auto)
        .map_err(|e| e.to_string())
}

fn print_table(report: &AxpyReport) {
    println!("platform {}", report.platform);
    for d in &report.devices {
        println!("device {} {}", d.selector, d.device);
        let passed = d.verified.len();
        println!("  verified          {passed} case(s) against the CPU reference (both kernels where they apply)");
        for b in &d.bandwidth {
            println!(
                "  {:<10} n={} best {:>8.1} GB/s  median {:>8.1} GB/s  (min/median/max {:.3}/{:.3}/{:.3} ms){}",
                b.axpy.kernel,
                b.n,
                b.axpy.gb_per_s_best,
                b.axpy.gb_per_s_median,
                b.axpy.min_s * 1e3,
                b.axpy.median_s * 1e3,
                b.axpy.max_s * 1e3,
                b.per_item.map_or(String::new(), |p| format!(", {p} float4/work-item")),
            );
            println!(
                "  {:<10} best {:>8.1} GB/s  -> axpy/copy = {:.3}",
                "copy", b.copy.gb_per_s_best, b.ratio_to_copy
            );
        }
        for n in &d.notes {
            println!("  note              {n}");
        }
        for e in &d.errors {
            println!("  error             {e}");
        }
    }
    match &report.cross_device {
        Some(Ok(c)) => println!(
            "cross-device (shared context): kernel on device 0 {:.3} ms, migration {:.3} ms ({:.3} ms by its event), kernel on device 1 {:.3} ms, verified: {}",
            c.first_kernel_s * 1e3,
            c.migration_wall_s * 1e3,
            c.migration_s * 1e3,
            c.second_kernel_s * 1e3,
            c.verified
        ),
        Some(Err(e)) => println!("cross-device: error: {e}"),
        None => println!("cross-device: needs two devices of one platform"),
    }
}
