//! # clmulti-axpy: the seed's dAxpy kernel, verified, and device bandwidth
//!
//! The proof that allocated buffers work, and clmulti's bandwidth benchmark.
//!
//! - [`KERNELS`] (`kernels/axpy.cl`): the seed's `dAxpy` kernel (float data, `int
//!   elements`, offsets and increments, 2D group indexing) and a fast contiguous
//!   kernel (`axpy_fast`: float4, several float4s per work-item, 64-bit counts), plus
//!   a float4 copy kernel as the device's achievable-bandwidth reference
//!   (BabelStream's copy).
//! - [`AxpyCase`] and its CPU reference ([`tolerance`]): no OpenCL, unit-tested.
//! - [`Runner`]: builds the program for a context (a build failure returns the log
//!   with the device's name), runs y <- alpha*x + y on any device of the context and
//!   checks it against the CPU reference ([`verify`](Runner::verify)), measures
//!   bandwidth ([`bandwidth`](Runner::bandwidth)) from profiling events checked
//!   against the host clock, runs across two devices of one shared context
//!   ([`cross_device`](Runner::cross_device)), and checks buffers someone else
//!   allocated ([`check_buffers`](Runner::check_buffers)).
//! - [`split`]: one dAxpy split over several devices at once, in a shared context and
//!   in per-device contexts, against the same kernel on one device.
//! - Stopping part way: [`split_until`] and
//!   [`bandwidth_until`](Runner::bandwidth_until) ask a `stop` closure between runs
//!   and repetitions and return what finished, marked (a command's Ctrl-C).
//!
//! Everything takes opencl3 types, and checks that devices and buffers belong to the
//! runner's context: a mistake is an [`AxpyError`], not undefined behaviour.
//!
//! ## Kernel choice
//! [`KernelChoice::Auto`] runs `axpy_fast` when increments are 1 and offsets are
//! multiples of 4 floats, and the seed's kernel otherwise. The seed's kernel takes
//! `int elements`, so it refuses n > 2^31 - 1 ([`AxpyError::SeedKernelLimit`]).
//!
//! ## Tolerance
//! Each result is one multiply and one add in f32: the device may fuse them (one
//! rounding) or not (two), so device and CPU can differ by the rounding of both,
//! at most `2 * f32::EPSILON * (|alpha * x| + |y|)`, per application ([`tolerance`]).
//!
//! ## Example
//! ```no_run
//! use clmulti_axpy::{AxpyCase, KernelChoice, Runner};
//! use opencl3::{context::Context, device::Device};
//! let platforms = clmulti_probe::platforms()?;
//! let device = Device::new(platforms[0].devices[0].id());
//! let context = Context::from_device(&device)?;
//! let runner = Runner::new(&context)?;
//! let result = runner.verify(&device, &AxpyCase::contiguous(1 << 20, 2.0), KernelChoice::Auto)?;
//! assert!(result.max_error_ulps <= 2.0);
//! let bw = runner.bandwidth(&device, 1 << 24, 20, KernelChoice::Fast)?;
//! println!("{:.0} GB/s ({:.2} of copy)", bw.axpy.gb_per_s_best, bw.ratio_to_copy);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bandwidth;
mod case;
mod cross;
mod error;
mod launch;
mod runner;
mod split;

pub use bandwidth::{Bandwidth, Clock, Timing};
pub use case::{test_data, tolerance, AxpyCase};
pub use cross::CrossDevice;
pub use error::AxpyError;
pub use launch::{Completion, Launcher, Strategy, StrategyFigures};
pub use runner::{KernelChoice, KernelRan, Runner, Verified};
pub use split::{
    default_device_counts, parts, split, split_until, Layout, PartFigures, SplitOptions,
    SplitReport, SplitRun, Transfers,
};

/// The kernels' source (`kernels/axpy.cl` of the workspace).
pub const KERNELS: &str = include_str!("../kernels/axpy.cl");
