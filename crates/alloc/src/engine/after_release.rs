//! What clmulti reads after the runtime released everything: the readings the leak
//! check sets against the first sample, taken so that clmulti's own work there costs
//! next to nothing.

use super::allocation_loop::LoopOutcome;
use super::device_memory::DeviceMemory;
use clmulti_explain::{LeakCheck, Sample};
use clmulti_probe::UsageReader;

/// Every reading after release, as a sample of no live buffer; in full mode
/// ([`clmulti_contract::trace::FULL`]) then what `malloc_trim(0)` gives back.
///
/// Nothing allocates before the readings that need no heap: the runtime just freed
/// its buffers' chunks, and (glibc) the first allocation of a size the C library
/// keeps no chunk of sorts every one of them, as walking the heap for its figures
/// does (100 000 PoCL buffers: 5 to 8 ms each). One allocation of 4 KiB first has the
/// C library consolidate them, as the plain C loop's first `printf` does; the heap's
/// figures are then read in microseconds, and they are what they were before it. The
/// trim would return the freed pages at the price of a TLB shootdown on every CPU
/// the runtime's threads ran on (11 ms on a 16-core node, measured): pages a process
/// returns at its exit anyway, so only a diagnosis that asks for it pays it. A
/// reading with DRM or dma-buf descriptors allocates to read their fdinfo: on GPUs
/// that cost is the sort's.
pub(super) fn read(
    leak_check: &mut LeakCheck,
    usage: &UsageReader,
    memory: &mut DeviceMemory,
    outcome: &LoopOutcome,
) {
    let mut reading = usage.read_light();
    reading.process.memory_maps = Some(usage.memory_maps());
    let consolidate: Vec<u8> = Vec::with_capacity(4096);
    std::hint::black_box(consolidate.as_ptr());
    usage.add_heap(&mut reading);
    drop(consolidate);
    usage.add_counts(&mut reading);
    if full_mode() {
        // SAFETY: malloc_trim only returns free heap to the kernel.
        unsafe { libc::malloc_trim(0) };
        let mut trimmed = usage.read_light();
        usage.add_heap(&mut trimmed);
        leak_check.after_trim = Some(trimmed.process);
    }
    let after = Sample {
        allocations: outcome.buffers,
        live: Some(0),
        bytes_requested: outcome.bytes,
        elapsed_seconds: outcome.elapsed_seconds,
        host: reading.process,
        system: reading.system,
        drm: reading.drm,
        device_used_bytes: memory.read(),
        dmabuf_exporters: reading.dmabuf_exporters,
        kernel_counts: reading.kernel_counts,
        traced_counts: reading.traced_counts,
    };
    leak_check.after_release = after.host;
    leak_check.after_release_sample = Some(after);
}

/// Whether this run records in full ([`clmulti_contract::trace::MODE`] is `full`):
/// the replicate a diagnosis runs of a failing case.
pub(crate) fn full_mode() -> bool {
    std::env::var(clmulti_contract::trace::MODE).is_ok_and(|v| clmulti_contract::trace::is_full(&v))
}
