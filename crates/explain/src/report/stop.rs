//! How a run ended: the OpenCL status and call of a failure, the guard that stopped
//! it, a crash, a timeout; with the one-line summaries people read.

use clmulti_contract::signal_name;
use clmulti_probe::ClCode;
use clmulti_scenario::format_bytes_apart;
use serde::{Deserialize, Serialize};

/// An OpenCL status with its name: `{"code": -6, "name": "CL_OUT_OF_HOST_MEMORY"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCode {
    /// The numeric status.
    pub code: i32,
    /// Its symbolic name.
    pub name: String,
}

impl From<ClCode> for ErrorCode {
    fn from(c: ClCode) -> Self {
        ErrorCode {
            code: c.0,
            name: c.name().to_owned(),
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.code)
    }
}

/// The OpenCL call that failed (or hung).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// `clGetPlatformIDs`: the ICD loader found no runtime it could load.
    GetPlatformIds,
    /// `clCreateSubDevices`
    CreateSubDevices,
    /// `clCreateContext`
    CreateContext,
    /// `clCreateCommandQueueWithProperties`
    CreateCommandQueue,
    /// `clCreateBuffer`
    CreateBuffer,
    /// `clCreateBufferWithProperties`
    CreateBufferWithProperties,
    /// `clCreateSubBuffer`
    CreateSubBuffer,
    /// `clEnqueueFillBuffer`
    EnqueueFillBuffer,
    /// `clEnqueueMigrateMemObjects`
    EnqueueMigrateMemObjects,
    /// `clFinish` after an enqueued command
    Finish,
    /// `clReleaseMemObject`
    ReleaseMemObject,
    /// The engine's own host allocation behind a `USE_HOST_PTR` / `COPY_HOST_PTR`
    /// buffer, before any OpenCL call (reported as `CL_OUT_OF_HOST_MEMORY`).
    HostAlloc,
}

impl Call {
    /// Every call, in a fixed order (its index identifies it in a watchdog).
    pub const ALL: [Call; 12] = [
        Call::GetPlatformIds,
        Call::CreateSubDevices,
        Call::CreateContext,
        Call::CreateCommandQueue,
        Call::CreateBuffer,
        Call::CreateBufferWithProperties,
        Call::CreateSubBuffer,
        Call::EnqueueFillBuffer,
        Call::EnqueueMigrateMemObjects,
        Call::Finish,
        Call::ReleaseMemObject,
        Call::HostAlloc,
    ];

    /// The C function's name.
    pub fn c_name(self) -> &'static str {
        match self {
            Call::GetPlatformIds => "clGetPlatformIDs",
            Call::CreateSubDevices => "clCreateSubDevices",
            Call::CreateContext => "clCreateContext",
            Call::CreateCommandQueue => "clCreateCommandQueueWithProperties",
            Call::CreateBuffer => "clCreateBuffer",
            Call::CreateBufferWithProperties => "clCreateBufferWithProperties",
            Call::CreateSubBuffer => "clCreateSubBuffer",
            Call::EnqueueFillBuffer => "clEnqueueFillBuffer",
            Call::EnqueueMigrateMemObjects => "clEnqueueMigrateMemObjects",
            Call::Finish => "clFinish",
            Call::ReleaseMemObject => "clReleaseMemObject",
            Call::HostAlloc => "the engine's host allocation for the buffer's host pointer",
        }
    }
}

/// The guard that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardKind {
    /// `guards.max_total`
    MaxTotalBytes,
    /// `guards.max_rss`
    MaxRss,
    /// `guards.max_seconds`
    MaxSeconds,
    /// The process's `RLIMIT_AS` (its soft limit, less a tenth for the runtime's own
    /// mappings): an allocation past it fails inside the runtime, which may abort.
    AddressSpace,
    /// The process's `RLIMIT_DATA` (its soft limit, less a tenth): the same, for the
    /// data segment.
    DataSegment,
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopReason {
    /// Every buffer asked for was allocated.
    #[default]
    Completed,
    /// An OpenCL call failed.
    Failed {
        /// The status.
        error: ErrorCode,
        /// Which call.
        call: Call,
        /// Which buffer (0-based) was being allocated; 0 for setup calls.
        index: u64,
    },
    /// A guard stopped the run before the machine suffered (or before it started,
    /// when one buffer alone would pass it).
    Guard {
        /// Which guard.
        guard: GuardKind,
        /// The reading (or, before an allocation, the estimate) that crossed it.
        value: f64,
        /// The guard's limit.
        limit: f64,
    },
    /// The strategy cannot run on these devices.
    Unsupported {
        /// Why, and what to do instead.
        reason: String,
    },
    /// The machine cannot run this run (e.g. it asks for more devices than exist);
    /// nothing was attempted.
    Skipped {
        /// Why.
        reason: String,
        /// The scenario key that asks for what is not here (`devices.indices[1]`,
        /// `devices.count`), where one does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// The process running the scenario was killed by a signal (set by the parent).
    Crashed {
        /// Signal number.
        signal: i32,
        /// Its name, e.g. `SIGABRT`.
        signal_name: String,
    },
    /// The run outlived its time limit: its process was killed (set by the parent),
    /// or, in process, a call never returned.
    TimedOut {
        /// The limit.
        seconds: f64,
        /// The call that was running, when known.
        #[serde(default)]
        call: Option<Call>,
    },
    /// SIGINT or SIGTERM reached the run: it stopped before the next buffer, skipped
    /// its checks and released everything.
    Interrupted {
        /// Signal number.
        signal: i32,
        /// Its name, e.g. `SIGINT`.
        signal_name: String,
    },
    /// The process running the scenario exited without a report (set by the parent).
    NoReport {
        /// Its exit code.
        exit_code: Option<i32>,
        /// The end of its stderr.
        stderr_tail: String,
    },
}

/// How a run ended, without the details: what tables count and colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// Every buffer asked for was allocated.
    Completed,
    /// An OpenCL call failed.
    Failed,
    /// A guard stopped the run.
    Guard,
    /// The strategy cannot run on these devices.
    Unsupported,
    /// The machine cannot run this run.
    Skipped,
    /// Killed by a signal.
    Crashed,
    /// Outlived its time limit.
    TimedOut,
    /// Exited without a report.
    NoReport,
    /// Stopped by SIGINT or SIGTERM.
    Interrupted,
}

impl StopKind {
    /// Whether the run ended before its count for a reason of the runtime's: an
    /// error, a crash, a hang, an exit without a report (not a guard, not a signal
    /// a person sent).
    pub fn ended_early(self) -> bool {
        matches!(
            self,
            StopKind::Failed | StopKind::Crashed | StopKind::TimedOut | StopKind::NoReport
        )
    }

    /// Every kind, in the order tables list them.
    pub const ALL: [StopKind; 9] = [
        StopKind::Completed,
        StopKind::Failed,
        StopKind::Guard,
        StopKind::Unsupported,
        StopKind::Skipped,
        StopKind::Crashed,
        StopKind::TimedOut,
        StopKind::NoReport,
        StopKind::Interrupted,
    ];

    /// Its name: `completed`, `failed`, `guard`, `timed_out`, ...
    pub fn name(self) -> &'static str {
        match self {
            StopKind::Completed => "completed",
            StopKind::Failed => "failed",
            StopKind::Guard => "guard",
            StopKind::Unsupported => "unsupported",
            StopKind::Skipped => "skipped",
            StopKind::Crashed => "crashed",
            StopKind::TimedOut => "timed_out",
            StopKind::NoReport => "no_report",
            StopKind::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for StopKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl StopReason {
    /// A crash by `signal`, named.
    pub fn crashed(signal: i32) -> Self {
        StopReason::Crashed {
            signal,
            signal_name: signal_name(signal),
        }
    }

    /// Stopped by `signal` (SIGINT, SIGTERM), named.
    pub fn interrupted(signal: i32) -> Self {
        StopReason::Interrupted {
            signal,
            signal_name: signal_name(signal),
        }
    }

    /// The outcome alone, for colours, counts and comparisons.
    pub fn kind(&self) -> StopKind {
        match self {
            StopReason::Completed => StopKind::Completed,
            StopReason::Failed { .. } => StopKind::Failed,
            StopReason::Guard { .. } => StopKind::Guard,
            StopReason::Unsupported { .. } => StopKind::Unsupported,
            StopReason::Skipped { .. } => StopKind::Skipped,
            StopReason::Crashed { .. } => StopKind::Crashed,
            StopReason::TimedOut { .. } => StopKind::TimedOut,
            StopReason::NoReport { .. } => StopKind::NoReport,
            StopReason::Interrupted { .. } => StopKind::Interrupted,
        }
    }

    /// Whether the run ended without a measurement of its own (crash, kill, no
    /// report): a run `--retry-failed` runs again.
    pub fn is_abnormal(&self) -> bool {
        matches!(
            self,
            StopReason::Crashed { .. }
                | StopReason::TimedOut { .. }
                | StopReason::NoReport { .. }
                | StopReason::Interrupted { .. }
        )
    }

    /// A one-line description: `failed: CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer`.
    pub fn summary(&self) -> String {
        match self {
            StopReason::Completed => "completed".into(),
            StopReason::Failed { error, call, index } => {
                format!("failed: {error} in {} at buffer {index}", call.c_name())
            }
            StopReason::Guard {
                guard,
                value,
                limit,
            } => match guard {
                GuardKind::MaxTotalBytes => {
                    let (value, limit) = format_bytes_apart(*value, *limit);
                    format!("guard max_total: {value} requested would pass {limit}")
                }
                GuardKind::MaxRss => {
                    let (value, limit) = format_bytes_apart(*value, *limit);
                    format!("guard max_rss: host RSS {value} would pass {limit}")
                }
                GuardKind::MaxSeconds => {
                    format!("guard max_seconds: {value:.1} s passed {limit:.1} s")
                }
                GuardKind::AddressSpace => {
                    let (value, limit) = format_bytes_apart(*value, *limit);
                    format!("guard RLIMIT_AS: virtual size {value} would pass {limit} (the soft limit less a tenth)")
                }
                GuardKind::DataSegment => {
                    let (value, limit) = format_bytes_apart(*value, *limit);
                    format!("guard RLIMIT_DATA: data segment {value} would pass {limit} (the soft limit less a tenth)")
                }
            },
            StopReason::Unsupported { reason } => format!("unsupported: {reason}"),
            StopReason::Skipped { reason, .. } => format!("skipped: {reason}"),
            StopReason::Crashed { signal_name, .. } => format!("crashed: {signal_name}"),
            StopReason::Interrupted { signal_name, .. } => {
                format!("interrupted by {signal_name}: stopped, released, partial")
            }
            StopReason::TimedOut { seconds, call } => match call {
                Some(call) => format!(
                    "timed out: {} did not return within {seconds:.0} s",
                    call.c_name()
                ),
                None => format!(
                    "stopped by its time limit (--timeout, or a run's guards) after {seconds:.0} s, between OpenCL calls"
                ),
            },
            StopReason::NoReport {
                exit_code,
                stderr_tail,
            } => {
                let code = exit_code.map_or_else(|| "?".to_owned(), |c| c.to_string());
                // The first error line says why; the last one only counts problems.
                let why = stderr_tail
                    .lines()
                    .find(|l| l.trim_start().starts_with("error:"))
                    .or_else(|| stderr_tail.lines().rev().find(|l| !l.trim().is_empty()))
                    .unwrap_or("");
                format!(
                    "no report (exit {code}): {}",
                    why.trim().trim_start_matches("error: ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seen on the GPU node: a child that exits 2 prints the real error first and a
    /// count of problems last; the summary must show the first.
    #[test]
    fn no_report_summary_shows_the_first_error() {
        let stop = StopReason::NoReport {
            exit_code: Some(2),
            stderr_tail: "error: scaling.toml: [devices]: asked for 4 devices of type gpu on platform 1 (NVIDIA CUDA), found 2\n\
                          error: 1 scenario problem(s)\n"
                .into(),
        };
        assert_eq!(
            stop.summary(),
            "no report (exit 2): scaling.toml: [devices]: asked for 4 devices of type gpu on platform 1 (NVIDIA CUDA), found 2"
        );
    }

    #[test]
    fn guards_say_which_and_in_units() {
        let stop = StopReason::Guard {
            guard: GuardKind::MaxRss,
            value: (5u64 << 30) as f64,
            limit: (4u64 << 30) as f64,
        };
        assert_eq!(
            stop.summary(),
            "guard max_rss: host RSS 5.00 GiB would pass 4.00 GiB"
        );
    }

    /// Seen in a report: "host RSS 4295806976 B would pass 4294967296 B".
    #[test]
    fn guard_figures_read_apart_in_units() {
        let stop = StopReason::Guard {
            guard: GuardKind::MaxRss,
            value: 4295806976.0,
            limit: 4294967296.0,
        };
        assert_eq!(
            stop.summary(),
            "guard max_rss: host RSS 4.001 GiB would pass 4.000 GiB"
        );
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(StopReason::crashed(11).summary(), "crashed: SIGSEGV");
    }

    #[test]
    fn failures_name_the_code_and_call() {
        let stop = StopReason::Failed {
            error: ClCode::OUT_OF_HOST_MEMORY.into(),
            call: Call::CreateBuffer,
            index: 1003,
        };
        assert_eq!(
            stop.summary(),
            "failed: CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer at buffer 1003"
        );
    }

    #[test]
    fn a_hung_call_is_named() {
        let stop = StopReason::TimedOut {
            seconds: 5.0,
            call: Some(Call::CreateCommandQueue),
        };
        assert_eq!(
            stop.summary(),
            "timed out: clCreateCommandQueueWithProperties did not return within 5 s"
        );
    }
}
