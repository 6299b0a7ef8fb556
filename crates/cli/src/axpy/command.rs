//! `clmulti axpy`'s steps in order: devices, host memory, each device, the
//! cross-device run or the split, the report; each able to stop on a signal.

use super::*;

pub fn run(args: &Args) -> Result<(), Failure> {
    let (platform, devices) = devices_from_args(&args.devices, args.partition.as_ref())?;
    if let Some(unsupported) = unsupported_on(&platform, &devices) {
        return say_unsupported(args, platform, unsupported);
    }
    host_memory_check(args.n, &devices)?;
    let kernels: &[KernelChoice] = match args.kernel {
        KernelArg::Seed => &[KernelChoice::Seed],
        KernelArg::Fast => &[KernelChoice::Fast],
        KernelArg::Both => &[KernelChoice::Seed, KernelChoice::Fast],
    };
    if args.split {
        return run_split(args, platform, &devices, kernels);
    }
    let mut not_run = Vec::new();
    let results = each_device(args, &devices, kernels, &mut not_run);
    let cross_device = cross_device(args, &devices, &mut not_run);
    let stopped = stopped_part_way(&not_run);
    let report = AxpyReport {
        schema_version: AXPY_SCHEMA_VERSION,
        platform,
        devices: results,
        cross_device,
        split: None,
        unsupported: None,
        stopped_by: stopped.map(clmulti_contract::signal_name),
        not_run,
    };
    match args.format {
        Format::Json => format::print_json(&report)?,
        Format::Text => format::write_stdout(&table_text(&report))?,
    }
    if let Some(signal) = stopped {
        return Err(Failure::Interrupted(signal));
    }
    let failed = report.devices.iter().any(|d| !d.errors.is_empty())
        || matches!(report.cross_device, Some(Cross::Failed { .. }));
    if failed {
        return Err(Failure::Tool("some dAxpy runs failed (see above)".into()));
    }
    Ok(())
}

/// A platform whose kernels cannot run: a result about the platform, not a failure
/// of the tool (exit 0).
fn say_unsupported(args: &Args, platform: String, unsupported: Unsupported) -> Result<(), Failure> {
    let report = AxpyReport {
        schema_version: AXPY_SCHEMA_VERSION,
        platform,
        devices: Vec::new(),
        cross_device: None,
        split: None,
        unsupported: Some(unsupported),
        stopped_by: None,
        not_run: Vec::new(),
    };
    note!(
        "unsupported: {}; dAxpy not run",
        clmulti_probe::neo::KERNELS_CANNOT_RUN
    );
    match (args.format, &report.unsupported) {
        (Format::Text, Some(u)) => {
            let mut text = format!(
                "platform {}\nunsupported: {}; dAxpy not run\n",
                report.platform, u.reason
            );
            for e in &u.evidence {
                let _ = writeln!(text, "  {e}");
            }
            format::write_stdout(&text)
        }
        _ => format::print_json(&report),
    }
}

/// `--split`: one dAxpy split over the devices, reported alone.
fn run_split(
    args: &Args,
    platform: String,
    devices: &[Device],
    kernels: &[KernelChoice],
) -> Result<(), Failure> {
    let options = SplitOptions {
        n: args.n,
        weights: args.weights.clone(),
        repeat: args.repeat as usize,
        modes: match args.context {
            ContextArg::Shared => vec![ContextMode::Shared],
            ContextArg::PerDevice => vec![ContextMode::PerDevice],
            ContextArg::Both => vec![ContextMode::Shared, ContextMode::PerDevice],
        },
        kernels: kernels.to_vec(),
        include_transfers: args.include_transfers,
        device_counts: match &args.device_counts {
            Some(counts) => counts.iter().map(|&k| k as usize).collect(),
            None => clmulti_axpy::default_device_counts(devices.len()),
        },
    };
    note!("axpy --split over {} device(s)", devices.len());
    let report = split(devices, &options, &stop_asked).map_err(|e| {
        if e.is_input() {
            Failure::Input(e.to_string())
        } else {
            Failure::Tool(e.to_string())
        }
    })?;
    if shows(Verbosity::Verbose) {
        print_strategies(&report);
    }
    let stopped = stopped_part_way(&report.not_run);
    let not_run = report
        .not_run
        .iter()
        .map(|run| format!("split run: {run}"))
        .collect();
    let report = AxpyReport {
        schema_version: AXPY_SCHEMA_VERSION,
        platform,
        devices: Vec::new(),
        cross_device: None,
        split: Some(report),
        unsupported: None,
        stopped_by: stopped.map(clmulti_contract::signal_name),
        not_run,
    };
    match args.format {
        Format::Json => format::print_json(&report)?,
        Format::Text => format::write_stdout(&split_text(&report, devices))?,
    }
    stopped.map_or(Ok(()), |signal| Err(Failure::Interrupted(signal)))
}

/// Each device's cases, bandwidth and kernels, until a stop (the devices left are
/// named in `not_run`).
fn each_device(
    args: &Args,
    devices: &[Device],
    kernels: &[KernelChoice],
    not_run: &mut Vec<String>,
) -> Vec<DeviceResult> {
    let mut results = Vec::new();
    for (i, device) in devices.iter().enumerate() {
        if stop_asked() {
            not_run.extend(
                devices[i..]
                    .iter()
                    .map(|d| format!("device {} ({})", d.info().selector, d.info().display_name())),
            );
            break;
        }
        note!(
            "axpy: {} {}",
            device.info().selector,
            device.info().display_name()
        );
        let result = run_device(device, args, kernels, not_run);
        say_verbose(&result);
        results.push(result);
    }
    results
}

/// With `-v`: what a device verified and its timings.
fn say_verbose(result: &DeviceResult) {
    for v in &result.verified {
        crate::verbose!(
            "axpy: {} verified {:?}: kernel {:?}, max error {} ulps",
            result.selector,
            v.case,
            v.kernel,
            v.max_error_ulps
        );
    }
    for b in &result.bandwidth {
        for t in [&b.axpy, &b.copy] {
            crate::verbose!(
                "axpy: {} {} over {} elements, {} runs: {:.6} s best, {:.6} s median, {:.6} s worst ({:.2} / {:.2} GB/s)",
                result.selector,
                t.kernel,
                b.n,
                b.repeat,
                t.min_s,
                t.median_s,
                t.max_s,
                t.gb_per_s_best,
                t.gb_per_s_median
            );
        }
    }
}

/// The first two devices together, when there are two and no stop came.
fn cross_device(args: &Args, devices: &[Device], not_run: &mut Vec<String>) -> Option<Cross> {
    if devices.len() < 2 {
        None
    } else if stop_asked() {
        not_run.push("the cross-device run".to_owned());
        None
    } else {
        let kernel = match args.kernel {
            KernelArg::Seed => KernelChoice::Seed,
            KernelArg::Fast | KernelArg::Both => KernelChoice::Auto,
        };
        match cross(&devices[..2], args.n.min(1 << 26), kernel) {
            Ok(ran) => Some(Cross::Ran(ran)),
            // Failed as the stop came (see `run_device`): not run.
            Err(_) if stop_asked() => {
                not_run.push("the cross-device run".to_owned());
                None
            }
            Err(error) => Some(Cross::Failed { error }),
        }
    }
}
