//! The cgroup's kernel memory for the host-memory guard: read at the guard's own
//! readings, estimated at the samples in between. A read of the cgroup's
//! `memory.stat` makes the kernel flush its statistics (a fifth of a sample's cost on
//! this 2-core machine, more on a busy node), and the samples record nothing of it:
//! only the guard needs it, and the guard already estimates between its readings.

use std::cell::Cell;

/// Kernel memory grown since the loop began, read from the cgroup.
pub(crate) struct KernelTrend {
    memory: clmulti_probe::KernelMemory,
    start: u64,
    trend: Trend,
}

impl KernelTrend {
    /// This process's cgroup's, where one reports it; its reading now is the start.
    pub(crate) fn find() -> Option<Self> {
        let memory = clmulti_probe::KernelMemory::find()?;
        let start = memory.read();
        Some(KernelTrend {
            memory,
            start,
            trend: Trend::default(),
        })
    }

    /// Growth read now, with `bytes` requested.
    pub(crate) fn read(&self, bytes: u64) -> u64 {
        let growth = self.memory.read().saturating_sub(self.start);
        self.trend.learn(growth, bytes);
        growth
    }

    /// Growth at `bytes` requested, estimated ([`Trend::estimate`]).
    pub(crate) fn estimate(&self, bytes: u64) -> u64 {
        self.trend.estimate(bytes)
    }
}

/// The last reading, and the most it grew per requested byte between two readings.
#[derive(Default)]
struct Trend {
    /// (growth, bytes requested) at the last reading.
    last: Cell<(u64, u64)>,
    per_byte: Cell<f64>,
}

impl Trend {
    fn learn(&self, growth: u64, bytes: u64) {
        let (last, at) = self.last.get();
        if bytes > at {
            let per_byte = growth.saturating_sub(last) as f64 / (bytes - at) as f64;
            self.per_byte.set(self.per_byte.get().max(per_byte));
        }
        self.last.set((growth, bytes));
    }

    /// From the last reading at the most it grew per byte: high rather than low, so
    /// that the guard stops early, never late.
    fn estimate(&self, bytes: u64) -> u64 {
        let (last, at) = self.last.get();
        last.saturating_add((bytes.saturating_sub(at) as f64 * self.per_byte.get()) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_grows_at_the_most_seen_per_byte() {
        let trend = Trend::default();
        trend.learn(100, 1024); // 100 bytes per KiB requested
        trend.learn(110, 2048); // then 10: the most stays
        assert_eq!(trend.estimate(2048), 110);
        assert_eq!(trend.estimate(3072), 210);
        assert_eq!(trend.estimate(1024), 110, "never below the last reading");
    }
}
