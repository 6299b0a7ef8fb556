//! # clmulti-alloc: the allocation engine
//!
//! Runs one validated [`Scenario`](clmulti_scenario::Scenario) through OpenCL
//! (`opencl3`) and reports how far allocation went, why it stopped, and what each
//! buffer cost the host and each device.
//!
//! What a run does:
//! 1. Selects devices ([`clmulti_probe::select`]) and builds the contexts for the
//!    context mode (one shared context, or one per device), registering a context
//!    callback whose driver messages land in the report.
//! 2. Allocates buffers by the strategy (`create`, `fill`, `migrate`, `pin`, `pool`),
//!    placing each on a device, keeping or releasing it, and stops at the count, the
//!    first OpenCL error (recorded with its name and the call that failed), or a guard.
//! 3. Samples host RSS, virtual size, open fds, memory mappings and device memory
//!    (where a source exists) every N allocations, at a failure and at the end.
//! 4. Fits each resource's cost per buffer, compares it with its limit
//!    (RAM, `RLIMIT_AS`, `RLIMIT_NOFILE`, `vm.max_map_count`, device memory) and
//!    predicts which limit is reached first: the likely cause of a failure.
//! 5. Releases everything and proves it in a leak check (created vs released, and
//!    host readings after release).
//!
//! The engine's own cost is measured by running the same loop with the OpenCL calls
//! removed ([`Report::bookkeeping`]): 8 bytes per kept buffer plus amortised samples.
//!
//! ## Example
//! ```no_run
//! let runs = clmulti_scenario::load_str(r#"
//!     [devices]
//!     count = 2
//!     [allocation]
//!     size = "1MiB"
//!     count = 2000
//! "#, "inline.toml")?;
//! let report = clmulti_alloc::run(&runs[0], None)?;
//! println!("{} buffers, stopped: {}", report.buffers, report.stop.summary());
//! if let Some(p) = &report.prediction {
//!     println!("{}", p.explanation);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The scenario's `[env]` and `[limits]` must be in force before the OpenCL runtime
//! loads: run each scenario in its own process, and call [`apply_limits`] there first.

mod costs;
mod engine;
mod report;

pub use costs::slope;
pub use engine::{
    measure_bookkeeping, run, BufferCheck, BufferPair, EngineError, CL_MEM_DEVICE_ID_INTEL,
};
pub use report::*;

use clmulti_scenario::Limits;

/// Applies a scenario's resource limits to this process (soft limits only; the
/// hard limit caps what can be set).
pub fn apply_limits(limits: &Limits) -> std::io::Result<()> {
    if let Some(n) = limits.nofile {
        set_soft_limit(libc::RLIMIT_NOFILE, n)?;
    }
    if let Some(bytes) = limits.address_space_bytes {
        set_soft_limit(libc::RLIMIT_AS, bytes)?;
    }
    Ok(())
}

fn set_soft_limit(resource: libc::__rlimit_resource_t, value: u64) -> std::io::Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit struct for both calls.
    unsafe {
        if libc::getrlimit(resource, &mut lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if lim.rlim_max != libc::RLIM_INFINITY && value > lim.rlim_max {
            return Err(std::io::Error::other(format!(
                "soft limit {value} is above the hard limit {}",
                lim.rlim_max
            )));
        }
        lim.rlim_cur = value;
        if libc::setrlimit(resource, &lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Allocations per second of a plain loop calling `clCreateBuffer` on one device in
/// its own context, releasing every buffer at the end: the reference the engine's
/// rate is compared with (`clmulti bench`).
pub fn plain_loop_rate(
    device: &clmulti_probe::DeviceInfo,
    size: usize,
    count: u64,
) -> Result<f64, clmulti_probe::ClCode> {
    use opencl3::context::Context;
    let id = device.handle().map_or(std::ptr::null_mut(), |h| h.as_raw());
    let context = Context::from_devices(&[id], &[], None, std::ptr::null_mut())
        .map_err(|e| clmulti_probe::ClCode(e.0))?;
    let mut live = Vec::with_capacity(count as usize);
    let start = std::time::Instant::now();
    let mut failure = None;
    for _ in 0..count {
        // SAFETY: valid context, no host pointer.
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
                failure = Some(clmulti_probe::ClCode(e));
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
