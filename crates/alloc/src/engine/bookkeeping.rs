//! The engine's own cost: the same loop with every OpenCL call replaced by nothing.

use super::allocation_loop::{allocation_loop, Backend, LoopPlan, Meter};
use clmulti_explain::{Bookkeeping, Call, Sample};
use clmulti_probe::{ClCode, Usage};
use std::time::Instant;

struct DryBackend {
    live: Vec<usize>,
    devices: usize,
    keep: bool,
}

impl Backend for DryBackend {
    fn allocate(&mut self, index: u64, _device: usize) -> Result<(), (ClCode, Call)> {
        if self.keep {
            // A stand-in for a handle, as large as one.
            self.live.push(std::hint::black_box(index as usize + 1));
        }
        Ok(())
    }

    fn device_count(&self) -> usize {
        self.devices
    }

    fn release_live(&mut self) {
        self.live.clear();
    }
}

/// A meter that reads nothing: the dry loop measures the engine, not the host.
struct NoMeter;

impl Meter for NoMeter {
    fn guard_reading(&self, _bytes: u64) -> super::allocation_loop::GuardReading {
        super::allocation_loop::GuardReading::default()
    }

    fn guard_reading_in(
        &self,
        _usage: &Usage,
        _bytes: u64,
    ) -> super::allocation_loop::GuardReading {
        super::allocation_loop::GuardReading::default()
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }

    fn memory_maps(&self) -> u64 {
        0
    }

    fn device_used(&mut self) -> Vec<Option<u64>> {
        Vec::new()
    }
}

/// Measures the loop's own cost per buffer over `buffers` dry allocations: heap
/// bytes and nanoseconds (samples included, at the plan's interval).
pub(crate) fn measure(plan: &LoopPlan, devices: usize, keep: bool, buffers: u64) -> Bookkeeping {
    let dry = LoopPlan {
        target: buffers,
        max_total: u64::MAX,
        max_rss: u64::MAX,
        max_vsize: u64::MAX,
        max_data: u64::MAX,
        max_seconds: f64::MAX,
        pause: std::time::Duration::ZERO,
        ..*plan
    };
    let mut backend = DryBackend {
        live: Vec::new(),
        devices,
        keep,
    };
    let start = Instant::now();
    let outcome = allocation_loop(&dry, &mut backend, &mut NoMeter, None);
    let seconds = start.elapsed().as_secs_f64();
    let heap = backend.live.capacity() * std::mem::size_of::<usize>()
        + outcome.samples.capacity() * std::mem::size_of::<Sample>()
        + outcome
            .samples
            .iter()
            .map(|s| {
                s.device_used_bytes.capacity() * std::mem::size_of::<Option<u64>>()
                    + s.drm.capacity() * std::mem::size_of::<clmulti_probe::DrmUsage>()
            })
            .sum::<usize>();
    Bookkeeping {
        bytes_per_buffer: heap as f64 / outcome.buffers.max(1) as f64,
        ns_per_buffer: seconds * 1e9 / outcome.buffers.max(1) as f64,
        measured_buffers: outcome.buffers,
    }
}
