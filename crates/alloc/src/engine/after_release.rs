//! What clmulti reads after the runtime released everything: the readings the leak
//! check sets against the first sample, taken so that clmulti's own work there costs
//! next to nothing.

use super::allocation_loop::LoopOutcome;
use super::device_memory::DeviceMemory;
use clmulti_explain::{LeakCheck, Sample};
use clmulti_probe::UsageReader;

/// Every reading after release, as a sample of no live buffer; in full mode
/// ([`clmulti_contract::trace::FULL`]) the C library's heap too, and then what
/// `malloc_trim(0)` gives back.
///
/// The runtime just freed its buffers' small objects into the C library's fast bins,
/// and (glibc) the first allocation of 1 KiB or more, or a walk of the heap for its
/// figures, consolidates every one of them first: 100 000 PoCL buffers, about 9 ms,
/// which the plain C loop, exiting after release, never pays. So the readings come
/// first, allocating nothing, and then clmulti's own allocations move off the C
/// library's heap ([`own_heap`](crate::own_heap)). The heap's figures after release
/// (whether resident memory that stayed is freed heap the C library keeps, live
/// allocations or memory outside the heap) are the replicate's, in full mode, as the
/// trim is: the trim returns the freed pages at the price of a TLB shootdown on every
/// CPU the runtime's threads ran on (11 ms on a 16-core node, measured), pages a
/// process returns at its exit anyway. A reading with DRM or dma-buf descriptors
/// allocates to read their fdinfo: on GPUs that cost is the consolidation's.
pub(super) fn read(
    leak_check: &mut LeakCheck,
    usage: &UsageReader,
    memory: &mut DeviceMemory,
    outcome: &LoopOutcome,
) {
    let mut reading = usage.read_light();
    usage.add_accounting(&mut reading);
    reading.process.memory_maps = Some(usage.memory_maps());
    if full_mode() {
        // One allocation of 4 KiB has the C library consolidate the freed chunks, as
        // a C program's next `printf` would; the heap's figures are then read in
        // microseconds, and they are what they were before it.
        let consolidate: Vec<u8> = Vec::with_capacity(4096);
        std::hint::black_box(consolidate.as_ptr());
        usage.add_heap(&mut reading);
        drop(consolidate);
        // SAFETY: malloc_trim only returns free heap to the kernel.
        unsafe { libc::malloc_trim(0) };
        let mut trimmed = usage.read_light();
        usage.add_accounting(&mut trimmed);
        usage.add_heap(&mut trimmed);
        leak_check.after_trim = Some(trimmed.process);
    }
    crate::own_heap::after_release();
    usage.add_counts(&mut reading);
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
