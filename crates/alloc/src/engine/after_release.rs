//! What clmulti reads after the runtime released everything: the readings the leak
//! check sets against the first sample, taken so that clmulti's own work there costs
//! next to nothing.

use super::allocation_loop::LoopOutcome;
use super::device_memory::DeviceMemory;
use clmulti_explain::{LeakCheck, Sample};
use clmulti_probe::UsageReader;

/// Every reading after release, as a sample of no live buffer, then what
/// `malloc_trim(0)` gives back. Nothing allocates before the trim: the runtime just
/// freed its buffers' chunks, and the first allocation of a size the C library keeps
/// no chunk of sorts every one of them (100 000 PoCL buffers: 5 to 8 ms), as walking
/// the heap for its figures does. The trim consolidates them first, as the next
/// allocation of 1 KiB or more would anyway (the plain C loop's `printf` does); the
/// heap's figures are then read in microseconds, and in use they are what they were
/// before it. A reading with DRM or dma-buf descriptors allocates to read their
/// fdinfo: on GPUs that cost is the sort's.
pub(super) fn read(
    leak_check: &mut LeakCheck,
    usage: &UsageReader,
    memory: &mut DeviceMemory,
    outcome: &LoopOutcome,
) {
    let mut reading = usage.read_light();
    reading.process.memory_maps = Some(usage.memory_maps());
    // SAFETY: malloc_trim only returns free heap to the kernel.
    unsafe { libc::malloc_trim(0) };
    let mut trimmed = usage.read_light();
    usage.add_heap(&mut trimmed);
    reading.process.heap_in_use_bytes = trimmed.process.heap_in_use_bytes;
    reading.process.heap_free_bytes = trimmed.process.heap_free_bytes;
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
    leak_check.after_trim = Some(trimmed.process);
}
