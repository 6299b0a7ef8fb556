//! What a split dAxpy reports: per run, per part, transfers, notes.

use crate::bandwidth::Clock;
use crate::launch::{Strategy, StrategyFigures};
use crate::runner::KernelRan;
use clmulti_scenario::ContextMode;
use serde::{Deserialize, Serialize};

/// Where the parts live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// A buffer per part, on its device.
    Buffers,
    /// Sub-buffers of one buffer (shared context only).
    SubBuffers,
}

impl Layout {
    /// `buffers` or `sub-buffers`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Buffers => "buffers",
            Layout::SubBuffers => "sub-buffers",
        }
    }
}

/// One part's device figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartFigures {
    /// The device's index in the split.
    pub device: usize,
    /// Elements of its part.
    pub n: u64,
    /// Its kernel's best bandwidth from its own events (or host time when events
    /// disagree), GB/s.
    pub gb_per_s_best: f64,
    /// Which clock.
    pub clock: Clock,
}

/// One split: devices, mode, layout, kernel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SplitRun {
    /// Devices the vector was split over (the first this many of those selected).
    pub devices: usize,
    /// Context mode.
    pub context: ContextMode,
    /// Where the parts live.
    pub layout: Layout,
    /// Which kernel.
    pub kernel: KernelRan,
    /// Whole-vector bytes over host time, first enqueue to last completion, best, GB/s.
    pub aggregate_gb_per_s_best: f64,
    /// The same, median.
    pub aggregate_gb_per_s_median: f64,
    /// Each device's part.
    pub parts: Vec<PartFigures>,
    /// The same kernel on device 0 alone, whole vector, host-timed, best, GB/s.
    pub one_device_gb_per_s: f64,
    /// aggregate / (one device x devices).
    pub scaling_efficiency: f64,
    /// Largest error after every application, in epsilons of the tolerance (<= 2 passes).
    pub max_error_ulps: f64,
    /// How the timed repetitions were launched and waited for: the fastest of
    /// `strategies` by median.
    pub launched_by: Strategy,
    /// Every way tried, with its launch skew, start lag and completion detection.
    pub strategies: Vec<StrategyFigures>,
    /// How the one-device figure was launched and waited for (its own fastest).
    pub one_device_launched_by: Strategy,
}

/// The cost of getting the data there and back, apart from the kernels.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transfers {
    /// Context mode.
    pub context: ContextMode,
    /// Writing every part's x and y, host to devices, seconds.
    pub host_to_devices_s: f64,
    /// Reading every part's y back, seconds.
    pub devices_to_host_s: f64,
    /// Moving part 0's x and y to device 1 (clEnqueueMigrateMemObjects, host clock;
    /// shared context only), seconds.
    pub device_to_device_s: Option<f64>,
}

/// Everything a split measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SplitReport {
    /// Elements.
    pub n: u64,
    /// Each device's elements.
    pub parts: Vec<u64>,
    /// Timed repetitions.
    pub repeat: usize,
    /// Every split run over all the devices.
    pub runs: Vec<SplitRun>,
    /// Splits over fewer devices (`device_counts`), buffers per device.
    pub scaling: Vec<SplitRun>,
    /// Data movement, when asked.
    pub transfers: Vec<Transfers>,
    /// What to know (which layout was faster, clocks used).
    pub notes: Vec<String>,
    /// The runs [`split_until`](super::split_until)'s `stop` left out ("1 device(s),
    /// shared context, buffers, axpy_fast"); empty when every run ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
}
