//! `clmulti axpy`, and the dAxpy check the allocation engine runs when a scenario
//! asks for `[axpy] check`.

mod command;
mod device;

pub use command::run;
use device::{cross, run_device};

use crate::format::{self, shows, table, Format, Verbosity};
use crate::{note, Failure};
use clmulti_alloc::{BufferCheck, BufferPair};
use clmulti_axpy::{
    AxpyCase, Bandwidth, CrossDevice, KernelChoice, Runner, SplitOptions, SplitReport, Verified,
};
use clmulti_probe::{Device, DeviceChoice, DeviceRequest, DeviceTypeFilter, PlatformSelector};
use clmulti_scenario::format_bytes;
use clmulti_scenario::ContextMode;
use opencl3::context::Context;
use serde::Serialize;
use std::fmt::Write as _;
use text::{print_strategies, split_text, table_text};

mod text;

/// The most timed repetitions `--repeat` takes.
const MAX_REPEAT: u32 = 100_000;
/// The most elements `--n` takes (2^40 floats, 4 TiB per vector): past it a size
/// overflows before any memory check could refuse it.
const MAX_N: u64 = 1 << 40;

/// The engine's buffer check: dAxpy over each pair, one program per context.
#[derive(Debug)]
pub struct BufferCheckAxpy;

impl BufferCheck for BufferCheckAxpy {
    fn check(
        &mut self,
        context: &Context,
        pairs: &mut [BufferPair],
        deadline: std::time::Instant,
    ) -> Vec<Result<(), String>> {
        let runner = match Runner::new(context) {
            Ok(r) => r,
            Err(e) => return pairs.iter().map(|_| Err(e.to_string())).collect(),
        };
        pairs
            .iter_mut()
            .take_while(|_| std::time::Instant::now() < deadline)
            .map(|p| {
                runner
                    .check_buffers(&p.device, &mut p.x, &mut p.y)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
            .collect()
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
    /// Elements (floats) for the bandwidth runs (the host must hold a few vectors of
    /// 4 n bytes: checked before anything is allocated).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1 << 24, value_parser = crate::values::whole_in::<u64>(1..=MAX_N))]
    n: u64,
    /// Device selector `PLATFORM[:DEVICE]` (name, vendor substring or index); repeat
    /// for several. Default: every device of the first platform with GPUs, else of
    /// the first platform.
    #[arg(long = "device", value_parser = crate::devices::selector)]
    devices: Vec<String>,
    /// Split each selected device into sub-devices first: `equally` (one compute unit
    /// each) or compute-unit counts like `1,1`.
    #[arg(long, allow_hyphen_values = true, value_parser = clmulti_scenario::Partition::parse)]
    partition: Option<clmulti_scenario::Partition>,
    /// Timed repetitions after the warm-up.
    #[arg(long, allow_negative_numbers = true, default_value_t = 20, value_parser = crate::values::whole_in::<u32>(1..=u64::from(MAX_REPEAT)))]
    repeat: u32,
    /// Which kernel(s).
    #[arg(long, value_enum, default_value_t = KernelArg::Both)]
    kernel: KernelArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Split one dAxpy over all selected devices at once, in one shared context and
    /// in per-device contexts, against one device.
    #[arg(long)]
    split: bool,
    /// With --split: which context modes.
    #[arg(long, value_enum, default_value_t = ContextArg::Both, requires = "split")]
    context: ContextArg,
    /// With --split: each device's share, e.g. 1,3 (default equal).
    #[arg(long, allow_hyphen_values = true, value_delimiter = ',', requires = "split", value_parser = crate::values::weight)]
    weights: Option<Vec<f64>>,
    /// With --split: also time moving the data (host to devices, back, between devices).
    #[arg(long, requires = "split")]
    include_transfers: bool,
    /// With --split: also split over the first k devices for each k given, for the
    /// efficiency per device count (default: 2, 4, 8... below the device count).
    #[arg(long, allow_negative_numbers = true, value_delimiter = ',', requires = "split", value_parser = crate::values::whole_in::<u32>(1..=u64::from(u32::MAX)))]
    device_counts: Option<Vec<u32>>,
}

/// The context modes of `--split`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ContextArg {
    /// One context over every device.
    Shared,
    /// One context per device.
    PerDevice,
    /// Both, in one invocation.
    Both,
}

/// Version of `clmulti axpy --format json`.
const AXPY_SCHEMA_VERSION: u32 = 4;

#[derive(Debug, Serialize)]
struct DeviceResult {
    device: String,
    selector: String,
    /// Bytes the bandwidth runs' two arrays occupy.
    working_set_bytes: u64,
    /// `CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`.
    cache_bytes: Option<u64>,
    verified: Vec<Verified>,
    bandwidth: Vec<Bandwidth>,
    notes: Vec<String>,
    errors: Vec<String>,
}

#[derive(Debug, Serialize)]
struct AxpyReport {
    schema_version: u32,
    platform: String,
    devices: Vec<DeviceResult>,
    cross_device: Option<Cross>,
    split: Option<SplitReport>,
    /// Set when the platform cannot run kernels at all: nothing was run or measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    unsupported: Option<Unsupported>,
    /// The signal that stopped the command part way (`SIGINT`): the report holds what
    /// finished before it; `not_run` says what did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<String>,
    /// What a stop left out, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_run: Vec<String>,
}

/// The signal that asked the command to stop, if one did (the first SIGINT, SIGTERM
/// or SIGHUP; a second ends it at once).
fn stop_signal() -> Option<i32> {
    clmulti_supervise::INTERRUPT.signal()
}

/// Whether a signal asked the command to stop: what the runs ask between steps.
fn stop_asked() -> bool {
    stop_signal().is_some()
}

/// The signal that stopped the command part way, when something did not run. A
/// signal during the last step, which finished, leaves a whole report: said, since
/// the signal was acknowledged as stopping it.
fn stopped_part_way(not_run: &[String]) -> Option<i32> {
    let signal = stop_signal()?;
    if not_run.is_empty() {
        note!(
            "axpy: {} came during the last step, which finished: the report is whole",
            clmulti_contract::signal_name(signal)
        );
        return None;
    }
    Some(signal)
}

/// dAxpy across two devices of one context: its figures, or `{"error": ...}`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Cross {
    Ran(CrossDevice),
    Failed { error: String },
}

/// Why dAxpy was not run.
#[derive(Debug, Serialize)]
struct Unsupported {
    /// In a few words.
    reason: String,
    /// The facts behind it, each tagged with where it comes from.
    evidence: Vec<String>,
}

/// NEO's emulated devices (AUB mode) record commands and execute none (NEO 22.43's also
/// report a largest work-group of 0 and refuse every kernel): dAxpy is not tried.
fn unsupported_on(platform: &str, devices: &[Device]) -> Option<Unsupported> {
    let driver = devices
        .first()
        .and_then(|d| d.info().driver_version.value().cloned())
        .unwrap_or_default();
    let neo = clmulti_probe::neo::emulation_for_run(platform, &driver, &Default::default())?;
    let mut evidence = vec![neo.statement()];
    for d in devices {
        let info = d.info();
        if info.max_work_group_size.value() == Some(&0) {
            evidence.push(format!(
                "device {} reports CL_DEVICE_MAX_WORK_GROUP_SIZE = 0: no kernel can be enqueued [measured]",
                info.selector
            ));
        }
    }
    Some(Unsupported {
        reason: clmulti_probe::neo::KERNELS_CANNOT_RUN.to_owned(),
        evidence,
    })
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

/// The devices `--device` names (or the default set), all of one platform, none twice,
/// each split into sub-devices when `partition` is given.
pub fn devices_from_args(
    selectors: &[String],
    partition: Option<&clmulti_scenario::Partition>,
) -> Result<(String, Vec<Device>), Failure> {
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    let requests: Vec<DeviceRequest> = if selectors.is_empty() {
        vec![DeviceRequest {
            platform: PlatformSelector::Auto,
            device_type: DeviceTypeFilter::Gpu,
            devices: DeviceChoice::All,
            fallback_to_any_type: true,
            partition: None,
        }]
    } else {
        selectors
            .iter()
            .map(|s| DeviceRequest::from_selector(s))
            .collect()
    };
    let mut platform = None;
    let mut name = String::new();
    let mut devices: Vec<Device> = Vec::new();
    for request in &requests {
        let selection = clmulti_probe::select(&platforms, request)
            .map_err(|e| Failure::Input(e.to_string()))?;
        if *platform.get_or_insert(selection.platform_index) != selection.platform_index {
            return Err(Failure::Input(
                "--device selectors must name devices of one platform".into(),
            ));
        }
        name = selection.platform_name;
        let mut selected = selection.devices;
        if let Some(partition) = partition {
            // Each named device is split; all of its sub-devices are used.
            let mut subs = Vec::new();
            for parent in &selected {
                subs.extend(parent.partition(partition).map_err(|e| {
                    Failure::Input(format!(
                        "cannot partition device {} ({}) {partition}: {e}",
                        parent.info().selector,
                        parent.info().display_name()
                    ))
                })?);
            }
            selected = subs;
        }
        for device in selected {
            if devices.iter().any(|d| d.id() == device.id()) {
                return Err(Failure::Input(format!(
                    "device {} ({}) is named twice; name each device once",
                    device.info().selector,
                    device.info().display_name()
                )));
            }
            devices.push(device);
        }
    }
    Ok((name, devices))
}

/// Runs dAxpy split over `devices`, as `clmulti axpy --split` and a scenario's
/// `[axpy] split` do; no run starts once `stop` says yes.
pub fn split(
    devices: &[Device],
    options: &SplitOptions,
    stop: &dyn Fn() -> bool,
) -> Result<SplitReport, clmulti_axpy::AxpyError> {
    let cl: Vec<opencl3::device::Device> = devices
        .iter()
        .map(|d| opencl3::device::Device::new(d.id()))
        .collect();
    clmulti_axpy::split_until(&cl, options, stop)
}

/// Host memory `n` elements need, before any is allocated: the vectors the host
/// makes (data, reference, read-back: 4 for a split, as many for the full-length
/// verification past 2^31), and the device buffers when the devices keep them in host
/// memory (x, y and the copy target), against what the host has: the smaller of its
/// available memory and half of its ceiling (RAM, cgroup, Slurm job), as the
/// scenarios' default `max_rss` guard.
fn host_memory_check(n: u64, devices: &[Device]) -> Result<(), Failure> {
    let host_backed = devices
        .iter()
        .any(|d| d.info().host_unified_memory.value() == Some(&true));
    let vectors = 4 + if host_backed { 3 } else { 0 };
    let need = n as f64 * 4.0 * f64::from(vectors);
    let limits = clmulti_probe::HostLimits::read();
    let half_ceiling = limits
        .memory_ceiling()
        .map_or(f64::INFINITY, |(b, _)| b as f64 * 0.5);
    let available = clmulti_probe::UsageReader::open()
        .system()
        .and_then(|s| s.available_bytes)
        .map_or(f64::INFINITY, |a| a as f64);
    let headroom = clmulti_probe::own_cgroup_headroom().map_or(f64::INFINITY, |h| h as f64);
    let bound = half_ceiling.min(available).min(headroom);
    if need > bound {
        return Err(Failure::Input(format!(
            "--n {n}: needs about {} of host memory ({vectors} vectors of {}{}); this host allows {} (the smallest of its available memory, its cgroup's headroom and half of its memory ceiling): use --n {} or less",
            format_bytes(need),
            format_bytes(n as f64 * 4.0),
            if host_backed { ", the devices' buffers included: they live in host memory" } else { "" },
            format_bytes(bound),
            ((bound / 4.0 / f64::from(vectors)) as u64).max(1)
        )));
    }
    Ok(())
}
