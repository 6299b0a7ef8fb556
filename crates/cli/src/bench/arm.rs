//! One arm, in the child process: the plain loop or the engine, timed.

use super::*;

/// Allocations per second of a plain loop calling `clCreateBuffer` on one device in
/// its own context, releasing every buffer at the end: the reference.
/// Why the plain loop did not finish.
enum PlainStop {
    /// clCreateBuffer failed.
    Failed(ClCode),
    /// Its RSS passed the memory bound after this many buffers.
    Memory { buffers: u64, rss: u64, bound: u64 },
}

fn plain_loop(
    device: &clmulti_probe::Device,
    size: usize,
    count: u64,
    memory_bound: u64,
) -> Result<ArmResult, PlainStop> {
    use opencl3::context::Context;
    let context = Context::from_devices(&[device.id()], &[], None, std::ptr::null_mut())
        .map_err(|e| PlainStop::Failed(ClCode(e.0)))?;
    // Reserved up front (the loop must not reallocate while timed), within the bound.
    let reserve = count.min(memory_bound / 8 / 4).min(1 << 26) as usize;
    let mut live = Vec::with_capacity(reserve);
    let usage = clmulti_probe::UsageReader::open();
    let rss_before = usage.rss_bytes();
    let start = std::time::Instant::now();
    let mut failure = None;
    for i in 0..count {
        // Read rarely (a /proc read per 4096 buffers), so the loop's rate stays its own.
        if i % PLAIN_RSS_EVERY == 0 {
            let rss = usage.rss_bytes();
            if rss > memory_bound {
                failure = Some(PlainStop::Memory {
                    buffers: i,
                    rss,
                    bound: memory_bound,
                });
                break;
            }
        }
        // SAFETY: a live context, no host pointer.
        match unsafe {
            clmulti_probe::raw::create_buffer(
                context.get(),
                opencl3::memory::CL_MEM_READ_WRITE,
                size,
            )
        } {
            Ok(mem) => live.push(mem),
            Err(code) => {
                failure = Some(PlainStop::Failed(code));
                break;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let rss_after = usage.rss_bytes();
    for mem in live {
        // SAFETY: created above, released once.
        let _ = unsafe { clmulti_probe::raw::release_mem_object(mem) };
    }
    match failure {
        Some(code) => Err(code),
        None => Ok(ArmResult {
            rate: count as f64 / seconds,
            seconds,
            rss_per_buffer: rss_after.saturating_sub(rss_before) as f64 / count as f64,
        }),
    }
}

pub(super) fn run_arm(arm: Arm, args: &Args, size: u64) -> Result<(), Failure> {
    let memory_bound = args.memory_bound.unwrap_or_else(memory_bound);
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    let selection = clmulti_probe::select(&platforms, &DeviceRequest::from_selector(&args.device))
        .map_err(|e| Failure::Input(e.to_string()))?;
    let device = &selection.devices[0];
    let result = match arm {
        Arm::Plain => {
            plain_loop(device, size as usize, args.count, memory_bound).map_err(|e| match e {
                PlainStop::Failed(code) => {
                    Failure::Tool(format!("plain loop: clCreateBuffer: {code}"))
                }
                PlainStop::Memory { buffers, rss, bound } => Failure::Input(format!(
                    "--count {}: the plain loop's RSS reached {} after {buffers} buffers, past the bench's bound of {} for one arm (a quarter of the available memory, over --jobs): use a smaller --count or --size, or fewer --jobs",
                    args.count,
                    clmulti_scenario::format_bytes(rss as f64),
                    clmulti_scenario::format_bytes(bound as f64)
                )),
            })?
        }
        Arm::Engine => {
            let toml = format!(
                "name = \"bench\"\n[devices]\nplatform = {}\ntype = \"all\"\nindices = [{}]\n\
                 [allocation]\nsize = {size}\ncount = {}\n[sampling]\nevery = {}\n[guards]\nmax_seconds = 600\nmax_rss = {memory_bound}\n",
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
                let why = format!("engine stopped early: {}", report.stop.summary());
                return Err(match report.stop {
                    clmulti_explain::StopReason::Guard { .. } => Failure::Input(format!(
                        "--count {}: {why}; use a smaller --count or --size",
                        args.count
                    )),
                    _ => Failure::Tool(why),
                });
            }
            let rss = |s: Option<&clmulti_explain::Sample>| s.map_or(0, |s| s.host.rss_bytes);
            ArmResult {
                rate: report.allocations_per_second.unwrap_or(0.0),
                seconds: report.elapsed_seconds - report.sampling_seconds,
                rss_per_buffer: rss(report.samples.last())
                    .saturating_sub(rss(report.samples.first()))
                    as f64
                    / args.count as f64,
            }
        }
    };
    format::write_stdout(&format!(
        "{}\n",
        serde_json::to_string(&result).unwrap_or_default()
    ))
}
