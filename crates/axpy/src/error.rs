//! What can go wrong running dAxpy.

use clmulti_probe::ClCode;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum AxpyError {
    /// An OpenCL call failed.
    #[error("{call}: {code}")]
    OpenCl {
        /// The call.
        call: &'static str,
        /// The status, named.
        code: ClCode,
    },
    /// The program did not build.
    #[error("building kernels/axpy.cl failed on {device}: {log}")]
    Build {
        /// The device's name.
        device: String,
        /// The build log.
        log: String,
    },
    /// The seed kernel's `int elements` cannot express n.
    #[error("n = {n} exceeds the seed kernel's `int elements` (2^31 - 1); use the fast kernel")]
    SeedKernelLimit {
        /// The n asked for.
        n: u64,
    },
    /// The fast kernel's preconditions do not hold.
    #[error("the fast kernel needs increments of 1 and offsets that are multiples of 4; use the seed kernel")]
    FastKernelPreconditions,
    /// The result differs from the CPU reference.
    #[error("{mismatches} of {n} results differ from the CPU reference beyond tolerance; first at element {first_index}: got {got}, expected {expected}")]
    Mismatch {
        /// Elements checked.
        n: u64,
        /// How many were wrong.
        mismatches: u64,
        /// The first wrong element.
        first_index: u64,
        /// Its value.
        got: f32,
        /// The reference.
        expected: f32,
    },
    /// Buffer sizes do not fit the host's address space.
    #[error("a buffer of {0} floats does not fit this host's address space")]
    TooLarge(u64),
    /// A device or buffer handed to the runner is not of its context.
    #[error("{0} does not belong to the runner's context")]
    NotInContext(&'static str),
    /// Buffers handed to a check differ in size, or are too small.
    #[error(
        "buffers of {x} and {y} bytes cannot be checked together (equal sizes, at least 8 bytes)"
    )]
    BufferSizes {
        /// x's size.
        x: usize,
        /// y's size.
        y: usize,
    },
    /// The same device named twice where distinct devices are needed.
    #[error("device {0} is named twice; a cross-device or split run needs distinct devices")]
    SameDevice(String),
    /// A split over devices that cannot be made.
    #[error("{0}")]
    Split(String),
}

impl AxpyError {
    /// Whether the caller asked for something that cannot be (a device named twice, a
    /// split that cannot be made), not a failure of the machine or the runtime.
    pub fn is_input(&self) -> bool {
        matches!(self, AxpyError::SameDevice(_) | AxpyError::Split(_))
    }
}

/// The error of an opencl3 call, named.
pub(crate) fn cl3(call: &'static str) -> impl Fn(opencl3::error_codes::ClError) -> AxpyError {
    move |e| AxpyError::OpenCl {
        call,
        code: ClCode(e.0),
    }
}

/// The error of a raw status, named.
pub(crate) fn cl(call: &'static str) -> impl Fn(i32) -> AxpyError {
    move |code| AxpyError::OpenCl {
        call,
        code: ClCode(code),
    }
}
