//! The words a key takes, one typed table per key: each word as the file writes it,
//! what it means, and the value validation makes of it. The key's item points at its
//! table ([`super::Value::Words`]); its schema, the list of words in its description
//! and validation's mapping all read the table, so a word is written once.

use crate::model::{ContextMode, DeviceType, MapsSampling, MemFlag, Strategy};

/// A word, what it means, and the value it stands for.
pub(crate) type Word<T> = (&'static str, &'static str, T);

/// A key's table of words, its values left out: what the schema and messages show.
pub(crate) trait Words: std::fmt::Debug + Sync {
    /// Each word and what it means, in documented order.
    fn each(&self) -> Vec<(&'static str, &'static str)>;
}

impl<T: std::fmt::Debug + Sync, const N: usize> Words for [Word<T>; N] {
    fn each(&self) -> Vec<(&'static str, &'static str)> {
        self.iter()
            .map(|(word, means, _)| (*word, *means))
            .collect()
    }
}

/// `devices.type`.
pub(crate) const DEVICE_TYPES: [Word<DeviceType>; 4] = [
    ("gpu", "GPUs", DeviceType::Gpu),
    ("cpu", "CPU devices", DeviceType::Cpu),
    (
        "accelerator",
        "accelerators (CL_DEVICE_TYPE_ACCELERATOR: FPGAs, DSPs)",
        DeviceType::Accelerator,
    ),
    ("all", "every device of the platform", DeviceType::All),
];

/// `devices.fallback`: whether to fall back to devices of any type.
pub(crate) const FALLBACKS: [Word<bool>; 2] = [
    (
        "any-type",
        "with no device of the type, use devices of any type",
        true,
    ),
    (
        "none",
        "with no device of the type, the run is skipped",
        false,
    ),
];

/// `context.mode`.
pub(crate) const CONTEXT_MODES: [Word<ContextMode>; 2] = [
    (
        "shared",
        "one context over all devices, the seed's failing case",
        ContextMode::Shared,
    ),
    (
        "per-device",
        "one context per device",
        ContextMode::PerDevice,
    ),
];

/// `allocation.flags`, as written without `CL_MEM_`.
pub(crate) const MEM_FLAGS: [Word<MemFlag>; 6] = [
    (
        "READ_WRITE",
        "kernels read and write the buffer",
        MemFlag::ReadWrite,
    ),
    (
        "READ_ONLY",
        "kernels only read the buffer",
        MemFlag::ReadOnly,
    ),
    (
        "WRITE_ONLY",
        "kernels only write the buffer",
        MemFlag::WriteOnly,
    ),
    (
        "ALLOC_HOST_PTR",
        "the runtime allocates the buffer from host-accessible memory",
        MemFlag::AllocHostPtr,
    ),
    (
        "USE_HOST_PTR",
        "the buffer lives in a host block clmulti allocates per buffer",
        MemFlag::UseHostPtr,
    ),
    (
        "COPY_HOST_PTR",
        "the buffer starts as a copy of a host block",
        MemFlag::CopyHostPtr,
    ),
];

/// `allocation.strategy`.
pub(crate) const STRATEGIES: [Word<Strategy>; 5] = [
    (
        "create",
        "clCreateBuffer only; lazy runtimes back nothing yet",
        Strategy::Create,
    ),
    (
        "fill",
        "create, then clEnqueueFillBuffer: the buffer becomes resident",
        Strategy::Fill,
    ),
    (
        "migrate",
        "create, then clEnqueueMigrateMemObjects to its device",
        Strategy::Migrate,
    ),
    (
        "pin",
        "clCreateBufferWithProperties with CL_MEM_DEVICE_ID_INTEL: allocated on its device only",
        Strategy::Pin,
    ),
    (
        "pool",
        "sub-buffers carved out of large pool buffers",
        Strategy::Pool,
    ),
];

/// `sampling.maps`.
pub(crate) const MAPS_SAMPLINGS: [Word<MapsSampling>; 2] = [
    (
        "budgeted",
        "the first and last samples, either side of a release round, the 1st, 8th, 64th..., and the others while the walks cost under 100 us or 0.5% of the loop (the C library's heap is read at the same samples; the devices' memory, NVML's costly query, there and at the first 8 and the 16th, 32nd..., within the same budget; locked memory, the data segment and MemAvailable, from /proc/self/status and /proc/meminfo, at those samples too)",
        MapsSampling::Budgeted,
    ),
    (
        "every-sample",
        "every sample (and every figure), whatever the walks cost the loop's rate",
        MapsSampling::EverySample,
    ),
];

/// What `axpy.check` asks for; with [`Check::Sample`], `axpy.samples` says how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    None,
    Sample,
    All,
}

/// `axpy.check`.
pub(crate) const AXPY_CHECKS: [Word<Check>; 3] = [
    ("none", "no check", Check::None),
    (
        "sample",
        "dAxpy over a few pairs of kept buffers (axpy.samples)",
        Check::Sample,
    ),
    ("all", "dAxpy over every pair of kept buffers", Check::All),
];

/// The word `table` writes for `value`.
///
/// # Panics
/// When the table lists no word for it: a mistake in the table (the tests ask for
/// every value).
#[cfg_attr(not(feature = "schema"), allow(dead_code))]
pub(crate) fn word_for<T: PartialEq + Copy>(table: &[Word<T>], value: T) -> &'static str {
    table
        .iter()
        .find(|(_, _, v)| *v == value)
        .map(|(word, _, _)| *word)
        .expect("every value of a key's table has a word")
}
