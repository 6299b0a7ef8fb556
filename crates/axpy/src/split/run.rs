//! One split run: the launches of one way (layout and kernel) over its devices, timed
//! and checked, and the single-device run each split is measured against.

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) fn run_split<'r>(
    devices: &[Device],
    parts: &[u64],
    whole: (&'r [f32], &'r [f32]),
    mode: ContextMode,
    layout: Layout,
    choice: KernelChoice,
    runner_of: &dyn Fn(usize) -> &'r Runner<'r>,
    options: &SplitOptions,
    time_transfers: bool,
    one_device: &mut Vec<(ContextMode, KernelRan, f64, Strategy)>,
    stop: &dyn Fn() -> bool,
) -> Result<Option<(SplitRun, Option<Transfers>)>, AxpyError> {
    let kernel = Runner::pick(
        &AxpyCase::contiguous(*parts.iter().max().unwrap_or(&0), 1.0),
        choice,
    )?;
    let total: u64 = parts.iter().sum();
    // One buffer of the whole vector for the sub-buffer layout.
    let parents = if layout == Layout::SubBuffers {
        let r = runner_of(0);
        Some((buffer(r.context, total)?, buffer(r.context, total)?))
    } else {
        None
    };
    let write_start = Instant::now();
    let mut built = build_parts(devices, parts, whole, &parents, runner_of)?;
    let write_s = write_start.elapsed().as_secs_f64();
    let tuning_launches = tune(&mut built, kernel)?;
    let timed = time_parts(&built, kernel, options.repeat.max(1), stop)?;
    if timed.measured.timed.len() < options.repeat.max(1) {
        // Stopped part way: best-of figures of fewer repetitions do not compare.
        return Ok(None);
    }
    let read_start = Instant::now();
    let results = read_back(&built)?;
    let read_s = read_start.elapsed().as_secs_f64();
    let worst = worst_error(
        &built,
        &results,
        tuning_launches,
        timed.measured.applications,
    )?;
    let transfers = if time_transfers {
        Some(transfers_of(mode, &built, write_s, read_s)?)
    } else {
        None
    };
    let bytes = 3 * total * 4;
    let mut sorted = timed.totals.clone();
    sorted.sort_by(f64::total_cmp);
    let parts_figures = part_figures(&built, &timed.measured.profiled);
    // The same kernel on device 0 alone, whole vector, timed the same way.
    let key = (mode, kernel);
    let on_one = (runner_of(0), &devices[0], total, whole);
    let Some((one, one_strategy)) = one_device_figure(one_device, key, on_one, options, stop)?
    else {
        return Ok(None);
    };
    let aggregate_best = bytes as f64 / sorted[0] / 1e9;
    Ok(Some((
        SplitRun {
            devices: devices.len(),
            context: mode,
            layout,
            kernel,
            aggregate_gb_per_s_best: aggregate_best,
            aggregate_gb_per_s_median: bytes as f64 / sorted[sorted.len() / 2] / 1e9,
            parts: parts_figures,
            one_device_gb_per_s: one,
            scaling_efficiency: aggregate_best / (one * devices.len() as f64),
            max_error_ulps: worst,
            launched_by: timed.measured.chosen,
            strategies: timed.measured.strategies,
            one_device_launched_by: one_strategy,
        },
        transfers,
    )))
}

/// The fast kernel tuned on each part of 4 elements or more; the tuning launches
/// each part ran (each adds alpha * x to y too).
fn tune(built: &mut [Part<'_>], kernel: KernelRan) -> Result<u32, AxpyError> {
    if kernel != KernelRan::Fast {
        return Ok(0);
    }
    for p in built {
        if p.case.n >= 4 {
            p.per_item = p.runner.tune(&p.queue, &p.case, &p.x, &p.y)?;
        }
    }
    Ok(12)
}

/// The same kernel on one device alone over the whole vector: measured once per mode
/// and kernel, then taken from `one_device`; `None` when a stop cut it short.
fn one_device_figure<'r>(
    one_device: &mut Vec<(ContextMode, KernelRan, f64, Strategy)>,
    (mode, kernel): (ContextMode, KernelRan),
    (runner, device, total, whole): (&'r Runner<'r>, &Device, u64, (&'r [f32], &'r [f32])),
    options: &SplitOptions,
    stop: &dyn Fn() -> bool,
) -> Result<Option<(f64, Strategy)>, AxpyError> {
    if let Some(&(_, _, one, strategy)) = one_device
        .iter()
        .find(|(m, k, _, _)| *m == mode && *k == kernel)
    {
        return Ok(Some((one, strategy)));
    }
    let Some((one, strategy)) = single_device(
        runner,
        device,
        kernel,
        total,
        whole,
        options.repeat.max(1),
        stop,
    )?
    else {
        return Ok(None);
    };
    one_device.push((mode, kernel, one, strategy));
    Ok(Some((one, strategy)))
}

/// Each device's part: its buffers (its own, or sub-buffers of `parents`) written
/// with its slice of the whole vectors.
fn build_parts<'r>(
    devices: &[Device],
    parts: &[u64],
    (whole_x, whole_y): (&'r [f32], &'r [f32]),
    parents: &Option<(Buffer<f32>, Buffer<f32>)>,
    runner_of: &dyn Fn(usize) -> &'r Runner<'r>,
) -> Result<Vec<Part<'r>>, AxpyError> {
    let alpha = 0.75f32;
    let mut built = Vec::with_capacity(devices.len());
    let mut offset = 0u64;
    for (d, (&len, device)) in parts.iter().zip(devices).enumerate() {
        let runner = runner_of(d);
        let queue = runner.queue(device)?;
        let plain = runner.queue_with(device, false)?;
        let (mut x, mut y) = match parents {
            Some((px, py)) => {
                // SAFETY: the region lies inside each parent (cut from its length), its
                // origin aligned to every device's base address alignment.
                let sub = |parent: &Buffer<f32>| unsafe {
                    parent
                        .create_sub_buffer(
                            opencl3::memory::CL_MEM_READ_WRITE,
                            offset as usize,
                            len.max(1) as usize,
                        )
                        .map_err(cl3("clCreateSubBuffer"))
                };
                (sub(px)?, sub(py)?)
            }
            None => (buffer(runner.context, len)?, buffer(runner.context, len)?),
        };
        let range = offset as usize..(offset + len) as usize;
        let (x0, y0) = (&whole_x[range.clone()], &whole_y[range]);
        write(&queue, &mut x, x0)?;
        write(&queue, &mut y, y0)?;
        offset += len;
        built.push(Part {
            runner,
            queue,
            plain,
            x,
            y,
            case: AxpyCase::contiguous(len, alpha),
            per_item: 1,
            x0,
            y0,
        });
    }
    Ok(built)
}

/// Every part's `y`, read back.
fn read_back(built: &[Part<'_>]) -> Result<Vec<Vec<f32>>, AxpyError> {
    let mut results = Vec::with_capacity(built.len());
    for p in built {
        let mut got = vec![0f32; p.case.n as usize];
        read(&p.queue, &p.y, &mut got)?;
        results.push(got);
    }
    Ok(results)
}

/// The worst error in ulps of the parts read back, against `tuning_launches` plus
/// `applications` applications of the kernel.
fn worst_error(
    built: &[Part<'_>],
    results: &[Vec<f32>],
    tuning_launches: u32,
    applications: u32,
) -> Result<f64, AxpyError> {
    let mut worst = 0f64;
    for (p, got) in built.iter().zip(results) {
        let tuned = if p.case.n >= 4 { tuning_launches } else { 0 };
        let times = tuned + applications;
        worst = worst.max(check_contiguous(p.case.alpha, p.x0, p.y0, got, times)?);
    }
    Ok(worst)
}

/// The data movement of one mode: the writes and reads as timed, and a migration
/// between two devices of a shared context.
fn transfers_of(
    mode: ContextMode,
    built: &[Part<'_>],
    write_s: f64,
    read_s: f64,
) -> Result<Transfers, AxpyError> {
    let device_to_device_s = if mode == ContextMode::Shared && built.len() > 1 {
        let mems = [built[0].x.get(), built[0].y.get()];
        let start = Instant::now();
        // SAFETY: both buffers belong to this (shared) context; the list outlives
        // the call, which is waited on below.
        let ev = unsafe {
            built[1]
                .queue
                .enqueue_migrate_mem_object(2, mems.as_ptr(), 0, &[])
        }
        .map_err(cl3("clEnqueueMigrateMemObjects"))?;
        event_seconds(&ev)?;
        Some(start.elapsed().as_secs_f64())
    } else {
        None
    };
    Ok(Transfers {
        context: mode,
        host_to_devices_s: write_s,
        devices_to_host_s: read_s,
        device_to_device_s,
    })
}

/// Each part's best bandwidth, by its events where they can be believed.
fn part_figures(built: &[Part<'_>], profiled: &[Vec<launch::PartRep>]) -> Vec<PartFigures> {
    built
        .iter()
        .enumerate()
        .map(|(d, p)| {
            let launches: Vec<launch::PartRep> = profiled.iter().map(|r| r[d]).collect();
            // A part's host time includes waiting for the other parts: its events are
            // believed when they are non-zero and within that time.
            let clock = if events_within_host(&launches) {
                Clock::Events
            } else {
                Clock::Host
            };
            let best = launches
                .iter()
                .map(|l| match clock {
                    Clock::Events => l.kernel_s().unwrap_or(f64::MAX),
                    Clock::Host => l.host_s(),
                })
                .fold(f64::MAX, f64::min);
            PartFigures {
                device: d,
                n: p.case.n,
                gb_per_s_best: 3.0 * p.case.n as f64 * 4.0 / best / 1e9,
                clock,
            }
        })
        .collect()
}

/// Best host-timed bandwidth of the kernel over the whole vector (`n` elements) on
/// one device, launched the fastest way for it, and that way; `None` when `stop` cut
/// its `repeat` timed repetitions short.
fn single_device(
    runner: &Runner<'_>,
    device: &Device,
    kernel: KernelRan,
    n: u64,
    (whole_x, whole_y): (&[f32], &[f32]),
    repeat: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<(f64, Strategy)>, AxpyError> {
    let case = AxpyCase::contiguous(n, 0.5);
    let queue = runner.queue(device)?;
    let plain = runner.queue_with(device, false)?;
    let mut x = buffer(runner.context, n)?;
    let mut y = buffer(runner.context, n)?;
    write(&queue, &mut x, &whole_x[..n as usize])?;
    write(&queue, &mut y, &whole_y[..n as usize])?;
    let per_item = if kernel == KernelRan::Fast && n >= 4 {
        runner.tune(&queue, &case, &x, &y)?
    } else {
        1
    };
    let part = Part {
        runner,
        queue,
        plain,
        x,
        y,
        case,
        per_item,
        x0: &[],
        y0: &[],
    };
    let timed = time_parts(std::slice::from_ref(&part), kernel, repeat, stop)?;
    if timed.measured.timed.len() < repeat {
        return Ok(None);
    }
    let best = timed.totals.iter().copied().fold(f64::MAX, f64::min);
    Ok(Some((
        3.0 * n as f64 * 4.0 / best / 1e9,
        timed.measured.chosen,
    )))
}
