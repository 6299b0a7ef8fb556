//! Checks over the kept buffers after the loop (the scenario's `[axpy] check`): the
//! engine hands each context's pairs of buffers to a [`BufferCheck`] at once, so a
//! check can build its program once per context.

use clmulti_explain::AxpyCheckReport;
use clmulti_scenario::AxpyCheck;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::memory::Buffer;
use opencl3::types::cl_mem;

/// Two kept buffers placed on one device, as opencl3 types holding their own
/// references (released when the pair is dropped).
#[derive(Debug)]
pub struct BufferPair {
    /// The device both were placed on.
    pub device: Device,
    /// Its index among the run's devices.
    pub device_index: usize,
    /// First buffer (x).
    pub x: Buffer<f32>,
    /// Second buffer (y).
    pub y: Buffer<f32>,
}

/// Checks the pairs of one context; one result per pair checked, in order, `Err`
/// saying what went wrong.
pub trait BufferCheck {
    /// Checks `pairs`, all buffers of `context`, and stops at `deadline`: the pairs
    /// past the results returned were not checked.
    fn check(
        &mut self,
        context: &Context,
        pairs: &mut [BufferPair],
        deadline: std::time::Instant,
    ) -> Vec<Result<(), String>>;
}

/// A buffer of the engine's, with one more reference the wrapper releases on drop.
fn retained(mem: cl_mem) -> Option<Buffer<f32>> {
    // SAFETY: `mem` is a live buffer the engine keeps until after the check.
    unsafe { clmulti_probe::raw::retain_mem_object(mem) }.ok()?;
    Some(Buffer::new(mem))
}

/// Picks pairs of kept buffers (per device, in allocation order), groups them by
/// context and runs the check.
pub(crate) fn check_pairs(
    scenario: &clmulti_scenario::Scenario,
    live: &[cl_mem],
    devices: &[clmulti_probe::Device],
    contexts: &[Context],
    context_of: &[usize],
    check: &mut dyn BufferCheck,
    deadline: std::time::Instant,
) -> AxpyCheckReport {
    let (choice, placement) = (scenario.axpy.check, scenario.allocation.placement);
    let n = devices.len().max(1);
    let mut by_device: Vec<Vec<cl_mem>> = vec![Vec::new(); n];
    for (i, mem) in live.iter().enumerate() {
        by_device[placement.device(i as u64, n)].push(*mem);
    }
    let pairs: Vec<(usize, cl_mem, cl_mem)> = by_device
        .iter()
        .enumerate()
        .flat_map(|(d, list)| list.chunks_exact(2).map(move |c| (d, c[0], c[1])))
        .collect();
    let chosen: Vec<(usize, cl_mem, cl_mem)> = match choice {
        AxpyCheck::None => Vec::new(),
        AxpyCheck::All => pairs,
        AxpyCheck::Sample(k) => {
            let k = (k as usize).min(pairs.len());
            (0..k).map(|j| pairs[j * pairs.len() / k.max(1)]).collect()
        }
    };
    let mut report = AxpyCheckReport::default();
    if chosen.is_empty() {
        report
            .failures
            .push("no pair of kept buffers on one device to check".into());
        return report;
    }
    for (c, context) in contexts.iter().enumerate() {
        let mut group: Vec<BufferPair> = chosen
            .iter()
            .filter(|(d, _, _)| context_of[*d] == c)
            .filter_map(|&(d, x, y)| {
                Some(BufferPair {
                    device: Device::new(devices[d].id()),
                    device_index: d,
                    x: retained(x)?,
                    y: retained(y)?,
                })
            })
            .collect();
        if group.is_empty() {
            continue;
        }
        let results = if std::time::Instant::now() < deadline {
            check.check(context, &mut group, deadline)
        } else {
            Vec::new()
        };
        report.pairs_not_checked += group.len().saturating_sub(results.len()) as u64;
        for (pair, result) in group.iter().zip(results) {
            report.pairs_checked += 1;
            match result {
                Ok(()) => report.pairs_ok += 1,
                Err(e) if report.failures.len() < 20 => report
                    .failures
                    .push(format!("device {}: {e}", pair.device_index)),
                Err(_) => {}
            }
        }
    }
    report
}
