//! The kernels built for one context, and runs of them over the context's devices.

use crate::case::{check, test_data, AxpyCase};
use crate::error::{cl3, AxpyError};
use crate::KERNELS;
use opencl3::command_queue::CommandQueue;
use opencl3::command_queue::CL_QUEUE_PROFILING_ENABLE;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;
use serde::{Deserialize, Serialize};
use std::ptr;

const BUILD_OPTIONS: &str = "-DOPENCL -D CL_TARGET_OPENCL_VERSION=220";
/// Work-group size for every launch (a multiple of 32 and 64, within every device's limit here).
pub(crate) const LOCAL_SIZE: usize = 256;

/// Which kernel to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelChoice {
    /// The seed's `dAxpy`.
    Seed,
    /// `axpy_fast` (contiguous only).
    Fast,
    /// Fast when its preconditions hold, seed otherwise.
    Auto,
}

/// The kernel that actually ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelRan {
    /// `dAxpy`
    Seed,
    /// `axpy_fast`
    Fast,
}

impl KernelRan {
    /// The kernel's name in `kernels/axpy.cl`.
    pub fn name(self) -> &'static str {
        match self {
            KernelRan::Seed => "dAxpy",
            KernelRan::Fast => "axpy_fast",
        }
    }
}

/// The result of one verified run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
    /// The case.
    pub case: AxpyCase,
    /// Which kernel ran.
    pub kernel: KernelRan,
    /// Largest error in units of the tolerance's epsilon term (<= 2 passes).
    pub max_error_ulps: f64,
}

/// The kernels built for one context.
#[derive(Debug)]
pub struct Runner<'c> {
    pub(crate) context: &'c Context,
    seed: Kernel,
    fast: Kernel,
    pub(crate) copy: Kernel,
    program: Program,
}

pub(crate) fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

/// A buffer of `floats` floats in `context`.
pub(crate) fn buffer(context: &Context, floats: u64) -> Result<Buffer<f32>, AxpyError> {
    let count = usize::try_from(floats)
        .ok()
        .filter(|f| f.checked_mul(4).is_some())
        .ok_or(AxpyError::TooLarge(floats))?;
    // SAFETY: a live context, no host pointer; the size was checked to fit.
    unsafe { Buffer::<f32>::create(context, CL_MEM_READ_WRITE, count.max(1), ptr::null_mut()) }
        .map_err(cl3("clCreateBuffer"))
}

/// Writes `data` to the start of `buffer`, blocking.
pub(crate) fn write(
    queue: &CommandQueue,
    buffer: &mut Buffer<f32>,
    data: &[f32],
) -> Result<(), AxpyError> {
    fits(buffer, data.len())?;
    // SAFETY: a blocking write of `data`, which outlives the call, into a buffer at
    // least that large (checked above).
    unsafe { queue.enqueue_write_buffer(buffer, CL_BLOCKING, 0, data, &[]) }
        .map_err(cl3("clEnqueueWriteBuffer"))?;
    Ok(())
}

/// Reads the start of `buffer` into `data`, blocking.
pub(crate) fn read(
    queue: &CommandQueue,
    buffer: &Buffer<f32>,
    data: &mut [f32],
) -> Result<(), AxpyError> {
    fits(buffer, data.len())?;
    // SAFETY: a blocking read into `data`, which outlives the call, from a buffer at
    // least that large (checked above).
    unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, data, &[]) }
        .map_err(cl3("clEnqueueReadBuffer"))?;
    Ok(())
}

fn fits(buffer: &Buffer<f32>, floats: usize) -> Result<(), AxpyError> {
    let size = buffer.size().map_err(cl3("clGetMemObjectInfo"))?;
    if size < floats * 4 {
        return Err(AxpyError::BufferSizes {
            x: size,
            y: floats * 4,
        });
    }
    Ok(())
}

/// Sets `object`'s arguments (an instance of `kernel`) for `case` over `x` and `y`,
/// checking that the buffers hold what the case reaches; returns the global size.
fn set_axpy_args(
    object: &Kernel,
    kernel: KernelRan,
    case: &AxpyCase,
    x: &Buffer<f32>,
    y: &Buffer<f32>,
    per_item: u32,
) -> Result<usize, AxpyError> {
    let (xl, yl) = case.buffer_lengths();
    fits(x, xl as usize)?;
    fits(y, yl as usize)?;
    let set = cl3("clSetKernelArg");
    match kernel {
        KernelRan::Seed => {
            let (n, xo, ix, yo, iy) = (
                case.n as i32,
                case.x_offset as i32,
                case.inc_x as i32,
                case.y_offset as i32,
                case.inc_y as i32,
            );
            // SAFETY: the argument types match dAxpy's signature in kernels/axpy.cl, in
            // order; the buffers hold `buffer_lengths()` floats (checked above), so
            // every index the kernel forms is in range.
            unsafe {
                object.set_arg(0, &n).map_err(&set)?;
                object.set_arg(1, &case.alpha).map_err(&set)?;
                object.set_arg(2, &x.get()).map_err(&set)?;
                object.set_arg(3, &xo).map_err(&set)?;
                object.set_arg(4, &ix).map_err(&set)?;
                object.set_arg(5, &y.get()).map_err(&set)?;
                object.set_arg(6, &yo).map_err(&set)?;
                object.set_arg(7, &iy).map_err(&set)?;
            }
            Ok(round_up(case.n, LOCAL_SIZE as u64) as usize)
        }
        KernelRan::Fast => {
            let n4 = (case.n / 4).max(1);
            let per_item = per_item.max(1);
            let (xo4, yo4) = (case.x_offset / 4, case.y_offset / 4);
            // SAFETY: as for dAxpy, with axpy_fast's signature; the kernel bounds every
            // access by n.
            unsafe {
                object.set_arg(0, &case.n).map_err(&set)?;
                object.set_arg(1, &case.alpha).map_err(&set)?;
                object.set_arg(2, &x.get()).map_err(&set)?;
                object.set_arg(3, &xo4).map_err(&set)?;
                object.set_arg(4, &y.get()).map_err(&set)?;
                object.set_arg(5, &yo4).map_err(&set)?;
                object.set_arg(6, &per_item).map_err(&set)?;
            }
            Ok(round_up(n4.div_ceil(u64::from(per_item)), LOCAL_SIZE as u64) as usize)
        }
    }
}

/// Enqueues `object` (arguments set) over `global` work-items in groups of
/// [`LOCAL_SIZE`].
pub(crate) fn launch(
    queue: &CommandQueue,
    object: &Kernel,
    global: usize,
) -> Result<Event, AxpyError> {
    let local = LOCAL_SIZE;
    // SAFETY: a one-dimensional range whose sizes point at live locals; the kernel's
    // arguments were set (set_axpy_args) and stay valid while it runs.
    unsafe { queue.enqueue_nd_range_kernel(object.get(), 1, ptr::null(), &global, &local, &[]) }
        .map_err(cl3("clEnqueueNDRangeKernel"))
}

/// [`launch`] without an event: nothing to wait on but the queue (clFinish), and no
/// event object for the runtime to make.
pub(crate) fn launch_without_event(
    queue: &CommandQueue,
    object: &Kernel,
    global: usize,
) -> Result<(), AxpyError> {
    // SAFETY: as in `launch`: live handles of one context, arguments set.
    unsafe {
        clmulti_probe::raw::enqueue_kernel_1d_without_event(
            queue.get(),
            object.get(),
            global,
            LOCAL_SIZE,
        )
    }
    .map_err(|code| crate::error::cl("clEnqueueNDRangeKernel")(code.0))
}

/// Seconds between a finished event's start and end, from profiling.
pub(crate) fn event_seconds(event: &Event) -> Result<f64, AxpyError> {
    event.wait().map_err(cl3("clWaitForEvents"))?;
    let start = event
        .profiling_command_start()
        .map_err(cl3("clGetEventProfilingInfo"))?;
    let end = event
        .profiling_command_end()
        .map_err(cl3("clGetEventProfilingInfo"))?;
    Ok(end.saturating_sub(start) as f64 * 1e-9)
}

impl<'c> Runner<'c> {
    /// Builds the kernels for every device of `context`.
    pub fn new(context: &'c Context) -> Result<Self, AxpyError> {
        Self::from_source(context, KERNELS)
    }

    /// Builds kernels from other source that defines `dAxpy`, `axpy_fast` and
    /// `copy_float4` with the signatures of [`KERNELS`].
    pub fn from_source(context: &'c Context, source: &str) -> Result<Self, AxpyError> {
        let mut program = Program::create_from_source(context, source)
            .map_err(cl3("clCreateProgramWithSource"))?;
        if let Err(e) = program.build(context.devices(), BUILD_OPTIONS) {
            let device = context
                .devices()
                .first()
                .copied()
                .unwrap_or(ptr::null_mut());
            let log = program.get_build_log(device).unwrap_or_default();
            let name = Device::new(device).name().unwrap_or_else(|_| "?".into());
            return Err(AxpyError::Build {
                device: name,
                log: format!("{}: {}", clmulti_probe::ClCode(e.0), log.trim()),
            });
        }
        let kernel = |name| Kernel::create(&program, name).map_err(cl3("clCreateKernel"));
        Ok(Runner {
            context,
            seed: kernel("dAxpy")?,
            fast: kernel("axpy_fast")?,
            copy: kernel("copy_float4")?,
            program,
        })
    }

    /// The context the kernels were built for.
    pub fn context(&self) -> &Context {
        self.context
    }

    /// A profiling queue on `device`, which must be one of the context's devices.
    pub fn queue(&self, device: &Device) -> Result<CommandQueue, AxpyError> {
        self.queue_with(device, true)
    }

    /// A queue on `device` (one of the context's devices), with or without profiling.
    pub(crate) fn queue_with(
        &self,
        device: &Device,
        profiling: bool,
    ) -> Result<CommandQueue, AxpyError> {
        if !self.context.devices().contains(&device.id()) {
            return Err(AxpyError::NotInContext("the device"));
        }
        let properties = if profiling {
            CL_QUEUE_PROFILING_ENABLE
        } else {
            0
        };
        // SAFETY: `device` is one of the context's devices (checked above).
        unsafe { CommandQueue::create_with_properties(self.context, device.id(), properties, 0) }
            .map_err(cl3("clCreateCommandQueueWithProperties"))
    }

    pub(crate) fn pick(case: &AxpyCase, choice: KernelChoice) -> Result<KernelRan, AxpyError> {
        match choice {
            KernelChoice::Fast if !case.fast_ok() => Err(AxpyError::FastKernelPreconditions),
            KernelChoice::Fast => Ok(KernelRan::Fast),
            KernelChoice::Auto if case.fast_ok() => Ok(KernelRan::Fast),
            KernelChoice::Seed | KernelChoice::Auto => {
                let fits = |v: u64| v <= i32::MAX as u64;
                let (xl, yl) = case.buffer_lengths();
                if !fits(case.n) || !fits(xl) || !fits(yl) {
                    Err(AxpyError::SeedKernelLimit { n: case.n })
                } else {
                    Ok(KernelRan::Seed)
                }
            }
        }
    }

    /// Enqueues one axpy over `x` and `y` (which hold `case.buffer_lengths()` floats
    /// from `x_base` / `y_base` floats on); `None` when n = 0 (nothing to launch).
    pub(crate) fn enqueue(
        &self,
        queue: &CommandQueue,
        kernel: KernelRan,
        case: &AxpyCase,
        x: &Buffer<f32>,
        y: &Buffer<f32>,
        per_item: u32,
    ) -> Result<Option<Event>, AxpyError> {
        if case.n == 0 {
            return Ok(None);
        }
        let object = match kernel {
            KernelRan::Seed => &self.seed,
            KernelRan::Fast => &self.fast,
        };
        let global = set_axpy_args(object, kernel, case, x, y, per_item)?;
        launch(queue, object, global).map(Some)
    }

    /// A kernel object of its own for repeated launches of one axpy, its arguments
    /// set once: launching it is one clEnqueueNDRangeKernel, with no argument setting
    /// in between (a split's parts share the runner's kernels otherwise). `None`
    /// when n = 0.
    pub(crate) fn prepare(
        &self,
        kernel: KernelRan,
        case: &AxpyCase,
        x: &Buffer<f32>,
        y: &Buffer<f32>,
        per_item: u32,
    ) -> Result<Option<(Kernel, usize)>, AxpyError> {
        if case.n == 0 {
            return Ok(None);
        }
        let object = Kernel::create(&self.program, kernel.name()).map_err(cl3("clCreateKernel"))?;
        let global = set_axpy_args(&object, kernel, case, x, y, per_item)?;
        Ok(Some((object, global)))
    }

    /// Runs `case` once on `device` over fresh buffers and checks every element
    /// (and that y's untouched elements stayed put).
    pub fn verify(
        &self,
        device: &Device,
        case: &AxpyCase,
        choice: KernelChoice,
    ) -> Result<Verified, AxpyError> {
        let kernel = Self::pick(case, choice)?;
        let (xl, yl) = case.buffer_lengths();
        let mut x = buffer(self.context, xl)?;
        let mut y = buffer(self.context, yl)?;
        let queue = self.queue(device)?;
        self.run_on(&queue, kernel, case, &mut x, &mut y, 1)
    }

    /// Fills x and y with test data, applies axpy `times` times (on this queue),
    /// and checks y.
    pub(crate) fn run_on(
        &self,
        queue: &CommandQueue,
        kernel: KernelRan,
        case: &AxpyCase,
        x: &mut Buffer<f32>,
        y: &mut Buffer<f32>,
        times: u32,
    ) -> Result<Verified, AxpyError> {
        let (xl, yl) = case.buffer_lengths();
        let x0 = test_data(xl, 1);
        let y0 = test_data(yl, 2);
        write(queue, x, &x0)?;
        write(queue, y, &y0)?;
        for _ in 0..times {
            if let Some(ev) = self.enqueue(queue, kernel, case, x, y, 1)? {
                ev.wait().map_err(cl3("clWaitForEvents"))?;
            }
        }
        let mut got = vec![0f32; yl as usize];
        read(queue, y, &mut got)?;
        let max_error_ulps = check(case, &x0, &y0, &got, times)?;
        Ok(Verified {
            case: *case,
            kernel,
            max_error_ulps,
        })
    }

    /// dAxpy over two buffers someone else allocated in this runner's context and
    /// placed on `device` (contiguous, all of each buffer), verified. Lazy runtimes
    /// allocate here.
    pub fn check_buffers(
        &self,
        device: &Device,
        x: &mut Buffer<f32>,
        y: &mut Buffer<f32>,
    ) -> Result<Verified, AxpyError> {
        for b in [&*x, &*y] {
            if b.context().map_err(cl3("clGetMemObjectInfo"))? != self.context.get() {
                return Err(AxpyError::NotInContext("a buffer"));
            }
        }
        let (xs, ys) = (
            x.size().map_err(cl3("clGetMemObjectInfo"))?,
            y.size().map_err(cl3("clGetMemObjectInfo"))?,
        );
        if xs != ys || xs < 8 {
            return Err(AxpyError::BufferSizes { x: xs, y: ys });
        }
        let case = AxpyCase::contiguous(xs as u64 / 4, 0.5);
        let kernel = Self::pick(&case, KernelChoice::Auto)?;
        let queue = self.queue(device)?;
        self.run_on(&queue, kernel, &case, x, y, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_choice_follows_preconditions() {
        let contiguous = AxpyCase::contiguous(1000, 1.0);
        assert_eq!(
            Runner::pick(&contiguous, KernelChoice::Auto).unwrap(),
            KernelRan::Fast
        );
        let strided = AxpyCase {
            inc_x: 2,
            ..contiguous
        };
        assert_eq!(
            Runner::pick(&strided, KernelChoice::Auto).unwrap(),
            KernelRan::Seed
        );
        assert!(matches!(
            Runner::pick(&strided, KernelChoice::Fast),
            Err(AxpyError::FastKernelPreconditions)
        ));
        let huge = AxpyCase::contiguous(1 << 31, 1.0);
        assert!(
            matches!(Runner::pick(&huge, KernelChoice::Seed), Err(AxpyError::SeedKernelLimit { n }) if n == 1 << 31)
        );
        assert_eq!(
            Runner::pick(&huge, KernelChoice::Auto).unwrap(),
            KernelRan::Fast
        );
    }
}
