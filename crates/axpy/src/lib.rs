//! # clmulti-axpy: the seed's dAxpy kernel, verified, and device bandwidth
//!
//! The proof that allocated buffers work, and clmulti's bandwidth benchmark.
//!
//! - [`KERNELS`]: the seed's `dAxpy` kernel (float data, `int elements`, offsets and
//!   increments, 2D group indexing) and a fast contiguous kernel (`axpy_fast`:
//!   float4, several float4s per work-item, 64-bit counts), plus a float4 copy
//!   kernel as the device's achievable-bandwidth reference (BabelStream's copy).
//! - [`Runner`]: builds the program for a context (a build failure returns the log
//!   with the device's name), runs y <- alpha*x + y and checks it against a CPU
//!   reference ([`verify`](Runner::verify)), measures bandwidth from profiling events
//!   ([`bandwidth`](Runner::bandwidth)) and runs across two devices of one shared
//!   context ([`cross_device`](Runner::cross_device)).
//! - [`Runner::check_buffers`]: dAxpy over two buffers someone else allocated (the
//!   allocation engine's `axpy.check`), where lazy runtimes fail if they must.
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
//! use opencl3::context::Context;
//! let platforms = clmulti_probe::platforms()?;
//! let device = &platforms[0].devices[0];
//! let id = device.handle().unwrap().as_raw();
//! let context = Context::from_devices(&[id], &[], None, std::ptr::null_mut())?;
//! let runner = Runner::new(&context)?;
//! let case = AxpyCase::contiguous(1 << 20, 2.0);
//! let result = runner.verify(id, &case, KernelChoice::Auto)?;
//! assert!(result.max_error_ulps <= 2.0);
//! let bw = runner.bandwidth(id, 1 << 24, 20, KernelChoice::Fast)?;
//! println!("{:.0} GB/s ({:.2} of copy)", bw.axpy.gb_per_s_best, bw.ratio_to_copy);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::event::Event;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::program::Program;
use opencl3::types::{cl_device_id, cl_mem, CL_BLOCKING};
use serde::Serialize;
use std::ffi::c_void;
use std::ptr;

/// The kernels' source (`kernels/axpy.cl`).
pub const KERNELS: &str = include_str!("../../../kernels/axpy.cl");
const BUILD_OPTIONS: &str = "-DOPENCL -D CL_TARGET_OPENCL_VERSION=220";
const CL_QUEUE_PROFILING_ENABLE: u64 = 1 << 1;
const CL_MEM_READ_WRITE: u64 = 1 << 0;
/// Work-group size for every launch (a multiple of 32 and 64, within every device's limit here).
const LOCAL_SIZE: usize = 256;

/// Which kernel to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelRan {
    /// `dAxpy`
    Seed,
    /// `axpy_fast`
    Fast,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum AxpyError {
    /// An OpenCL call failed.
    #[error("{call}: {code}")]
    OpenCl {
        /// The call.
        call: &'static str,
        /// The status, named.
        code: clmulti_probe::ClCode,
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
}

fn cl(call: &'static str) -> impl Fn(i32) -> AxpyError {
    move |code| AxpyError::OpenCl {
        call,
        code: clmulti_probe::ClCode(code),
    }
}

fn cl3(call: &'static str) -> impl Fn(opencl3::error_codes::ClError) -> AxpyError {
    move |e| AxpyError::OpenCl {
        call,
        code: clmulti_probe::ClCode(e.0),
    }
}

/// One axpy problem: y[y_offset + i*inc_y] += alpha * x[x_offset + i*inc_x], i < n.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AxpyCase {
    /// Elements.
    pub n: u64,
    /// The scalar.
    pub alpha: f32,
    /// First x element.
    pub x_offset: u64,
    /// x stride, elements.
    pub inc_x: u64,
    /// First y element.
    pub y_offset: u64,
    /// y stride, elements.
    pub inc_y: u64,
}

impl AxpyCase {
    /// Contiguous, zero offsets.
    pub fn contiguous(n: u64, alpha: f32) -> Self {
        AxpyCase {
            n,
            alpha,
            x_offset: 0,
            inc_x: 1,
            y_offset: 0,
            inc_y: 1,
        }
    }

    /// Floats the x and y buffers need (at least 1: OpenCL has no empty buffers).
    pub fn buffer_lengths(&self) -> (u64, u64) {
        let span = |offset: u64, inc: u64| {
            if self.n == 0 {
                offset + 1
            } else {
                offset + (self.n - 1) * inc + 1
            }
        };
        (
            span(self.x_offset, self.inc_x),
            span(self.y_offset, self.inc_y),
        )
    }

    fn fast_ok(&self) -> bool {
        self.inc_x == 1 && self.inc_y == 1 && self.x_offset % 4 == 0 && self.y_offset % 4 == 0
    }
}

/// Non-trivial, reproducible test data in [-1, 1): not zeros, not constant.
pub fn test_data(len: u64, seed: u64) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let h = (i.wrapping_add(seed)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (h % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// The largest difference between device and CPU that float rounding allows for
/// one application of y + alpha*x.
pub fn tolerance(alpha: f32, x: f32, y: f32) -> f32 {
    2.0 * f32::EPSILON * ((alpha * x).abs() + y.abs()) + f32::MIN_POSITIVE
}

/// The result of one verified run.
#[derive(Debug, Clone, Serialize)]
pub struct Verified {
    /// The case.
    pub case: AxpyCase,
    /// Which kernel ran.
    pub kernel: KernelRan,
    /// Largest error in units of the tolerance's epsilon term (<= 2 passes).
    pub max_error_ulps: f64,
}

/// Kernel times from profiling events, and the bandwidth they give.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    /// Which kernel.
    pub kernel: String,
    /// Bytes moved per run.
    pub bytes: u64,
    /// Best time, seconds.
    pub min_s: f64,
    /// Median time.
    pub median_s: f64,
    /// Worst time.
    pub max_s: f64,
    /// bytes / min_s, in 10^9 bytes per second.
    pub gb_per_s_best: f64,
    /// bytes / median_s.
    pub gb_per_s_median: f64,
}

/// Bandwidth of axpy and of the float4 copy, measured in one run.
#[derive(Debug, Clone, Serialize)]
pub struct Bandwidth {
    /// Elements.
    pub n: u64,
    /// Timed repetitions (after one warm-up).
    pub repeat: usize,
    /// The axpy kernel's timing (3 * n * 4 bytes per run).
    pub axpy: Timing,
    /// Which axpy kernel.
    pub kernel: KernelRan,
    /// float4s per work-item the fast kernel used (chosen at warm-up).
    pub per_item: Option<u32>,
    /// The float4 copy (2 * n * 4 bytes per run).
    pub copy: Timing,
    /// axpy best GB/s over copy best GB/s.
    pub ratio_to_copy: f64,
}

/// dAxpy on device 0, then on device 1 over the same buffers, in one shared context.
#[derive(Debug, Clone, Serialize)]
pub struct CrossDevice {
    /// Elements.
    pub n: u64,
    /// Kernel on device 0, seconds.
    pub first_kernel_s: f64,
    /// The runtime's migration of x and y to device 1, seconds (profiling event;
    /// NVIDIA reports 0 for it).
    pub migration_s: f64,
    /// The same migration timed on the host, enqueue to completion.
    pub migration_wall_s: f64,
    /// Kernel on device 1, seconds.
    pub second_kernel_s: f64,
    /// Which kernel.
    pub kernel: KernelRan,
    /// Whether y = y0 + 2*alpha*x held after both.
    pub verified: bool,
}

/// An OpenCL buffer this crate created; released on drop.
struct Mem(cl_mem);

impl Mem {
    fn new(context: &Context, floats: u64) -> Result<Self, AxpyError> {
        let bytes = usize::try_from(floats)
            .ok()
            .and_then(|f| f.checked_mul(4))
            .ok_or(AxpyError::TooLarge(floats))?;
        // SAFETY: valid context, no host pointer.
        let mem = unsafe {
            opencl3::memory::create_buffer(context.get(), CL_MEM_READ_WRITE, bytes, ptr::null_mut())
        }
        .map_err(cl("clCreateBuffer"))?;
        Ok(Mem(mem))
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: created in `new`, released once. A failure here cannot be acted on.
        let _ = unsafe { opencl3::memory::release_mem_object(self.0) };
    }
}

/// The kernels built for one context.
#[derive(Debug)]
pub struct Runner<'c> {
    context: &'c Context,
    seed: Kernel,
    fast: Kernel,
    copy: Kernel,
    _program: Program,
}

/// One blocking copy between host floats and a buffer at least that large.
enum Transfer<'a> {
    ToDevice(&'a [f32]),
    ToHost(&'a mut [f32]),
}

fn transfer(queue: &CommandQueue, mem: cl_mem, direction: Transfer<'_>) -> Result<(), AxpyError> {
    use opencl3::command_queue::{enqueue_read_buffer, enqueue_write_buffer};
    // SAFETY: blocking copies of the slice's length, into or out of a buffer the
    // callers sized to hold it; the slice outlives the call.
    let ev = unsafe {
        match direction {
            Transfer::ToDevice(data) => enqueue_write_buffer(
                queue.get(),
                mem,
                CL_BLOCKING,
                0,
                std::mem::size_of_val(data),
                data.as_ptr().cast::<c_void>(),
                0,
                ptr::null(),
            )
            .map_err(cl("clEnqueueWriteBuffer")),
            Transfer::ToHost(data) => enqueue_read_buffer(
                queue.get(),
                mem,
                CL_BLOCKING,
                0,
                std::mem::size_of_val(data),
                data.as_mut_ptr().cast::<c_void>(),
                0,
                ptr::null(),
            )
            .map_err(cl("clEnqueueReadBuffer")),
        }
    }?;
    drop(Event::new(ev));
    Ok(())
}

fn write(queue: &CommandQueue, mem: cl_mem, data: &[f32]) -> Result<(), AxpyError> {
    transfer(queue, mem, Transfer::ToDevice(data))
}

fn read(queue: &CommandQueue, mem: cl_mem, data: &mut [f32]) -> Result<(), AxpyError> {
    transfer(queue, mem, Transfer::ToHost(data))
}

fn seconds(event: &Event) -> Result<f64, AxpyError> {
    event.wait().map_err(cl3("clWaitForEvents"))?;
    let start = event
        .profiling_command_start()
        .map_err(cl3("clGetEventProfilingInfo"))?;
    let end = event
        .profiling_command_end()
        .map_err(cl3("clGetEventProfilingInfo"))?;
    Ok(end.saturating_sub(start) as f64 * 1e-9)
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
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
            let name = opencl3::device::Device::new(device)
                .name()
                .unwrap_or_else(|_| "?".into());
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
            _program: program,
        })
    }

    fn queue(&self, device: cl_device_id) -> Result<CommandQueue, AxpyError> {
        // SAFETY: callers pass a device of this runner's context.
        unsafe {
            CommandQueue::create_with_properties(self.context, device, CL_QUEUE_PROFILING_ENABLE, 0)
        }
        .map_err(cl3("clCreateCommandQueueWithProperties"))
    }

    fn pick(case: &AxpyCase, choice: KernelChoice) -> Result<KernelRan, AxpyError> {
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

    /// Enqueues one axpy; `None` when n = 0 (nothing to launch).
    fn enqueue(
        &self,
        queue: &CommandQueue,
        kernel: KernelRan,
        case: &AxpyCase,
        x: cl_mem,
        y: cl_mem,
        per_item: u32,
    ) -> Result<Option<Event>, AxpyError> {
        if case.n == 0 {
            return Ok(None);
        }
        let event = match kernel {
            KernelRan::Seed => {
                let (n, xo, ix, yo, iy) = (
                    case.n as i32,
                    case.x_offset as i32,
                    case.inc_x as i32,
                    case.y_offset as i32,
                    case.inc_y as i32,
                );
                // SAFETY: argument types match the kernel's signature; buffers hold
                // `buffer_lengths()` floats, so every index the kernel forms is in range.
                unsafe {
                    ExecuteKernel::new(&self.seed)
                        .set_arg(&n)
                        .set_arg(&case.alpha)
                        .set_arg(&x)
                        .set_arg(&xo)
                        .set_arg(&ix)
                        .set_arg(&y)
                        .set_arg(&yo)
                        .set_arg(&iy)
                        .set_global_work_size(round_up(case.n, LOCAL_SIZE as u64) as usize)
                        .set_local_work_size(LOCAL_SIZE)
                        .enqueue_nd_range(queue)
                }
            }
            KernelRan::Fast => {
                let n4 = (case.n / 4).max(1);
                let items = round_up(n4.div_ceil(u64::from(per_item)), LOCAL_SIZE as u64);
                let (xo4, yo4) = (case.x_offset / 4, case.y_offset / 4);
                // SAFETY: as above; the kernel bounds every access by n.
                unsafe {
                    ExecuteKernel::new(&self.fast)
                        .set_arg(&case.n)
                        .set_arg(&case.alpha)
                        .set_arg(&x)
                        .set_arg(&xo4)
                        .set_arg(&y)
                        .set_arg(&yo4)
                        .set_arg(&per_item)
                        .set_global_work_size(items as usize)
                        .set_local_work_size(LOCAL_SIZE)
                        .enqueue_nd_range(queue)
                }
            }
        }
        .map_err(cl3("clEnqueueNDRangeKernel"))?;
        Ok(Some(event))
    }

    /// Runs `case` once on `device` over fresh buffers and checks every element
    /// (and that y's untouched elements stayed put).
    pub fn verify(
        &self,
        device: cl_device_id,
        case: &AxpyCase,
        choice: KernelChoice,
    ) -> Result<Verified, AxpyError> {
        let kernel = Self::pick(case, choice)?;
        let (xl, yl) = case.buffer_lengths();
        let x = Mem::new(self.context, xl)?;
        let y = Mem::new(self.context, yl)?;
        let queue = self.queue(device)?;
        self.run_on(&queue, kernel, case, x.0, y.0, 1, 1)
    }

    /// Fills x and y with test data, applies axpy `times` times (on this queue),
    /// and checks y.
    #[allow(clippy::too_many_arguments)]
    fn run_on(
        &self,
        queue: &CommandQueue,
        kernel: KernelRan,
        case: &AxpyCase,
        x: cl_mem,
        y: cl_mem,
        times: u32,
        per_item: u32,
    ) -> Result<Verified, AxpyError> {
        let (xl, yl) = case.buffer_lengths();
        let x0 = test_data(xl, 1);
        let y0 = test_data(yl, 2);
        write(queue, x, &x0)?;
        write(queue, y, &y0)?;
        for _ in 0..times {
            if let Some(ev) = self.enqueue(queue, kernel, case, x, y, per_item)? {
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

    /// BabelStream-style bandwidth on `device`: one warm-up (which also picks the
    /// fast kernel's float4s per work-item), then `repeat` timed runs of axpy and of
    /// the float4 copy, interleaved, timed by profiling events.
    pub fn bandwidth(
        &self,
        device: cl_device_id,
        n: u64,
        repeat: usize,
        choice: KernelChoice,
    ) -> Result<Bandwidth, AxpyError> {
        let case = AxpyCase::contiguous(n.max(4), 2.0);
        let kernel = Self::pick(&case, choice)?;
        let queue = self.queue(device)?;
        let x = Mem::new(self.context, case.n)?;
        let y = Mem::new(self.context, case.n)?;
        let c = Mem::new(self.context, case.n)?;
        write(&queue, x.0, &test_data(case.n, 1))?;
        write(&queue, y.0, &test_data(case.n, 2))?;
        write(&queue, c.0, &test_data(case.n, 3))?;

        let mut per_item = None;
        if kernel == KernelRan::Fast {
            let mut best = (f64::MAX, 1);
            for candidate in [1u32, 2, 4, 8] {
                let mut t = f64::MAX;
                for _ in 0..3 {
                    if let Some(ev) = self.enqueue(&queue, kernel, &case, x.0, y.0, candidate)? {
                        t = t.min(seconds(&ev)?);
                    }
                }
                if t < best.0 {
                    best = (t, candidate);
                }
            }
            per_item = Some(best.1);
        } else if let Some(ev) = self.enqueue(&queue, kernel, &case, x.0, y.0, 1)? {
            seconds(&ev)?;
        }
        let n4 = case.n / 4;
        let copy_global = round_up(n4, LOCAL_SIZE as u64) as usize;
        let run_copy = || -> Result<f64, AxpyError> {
            // SAFETY: argument types match copy_float4; both buffers hold n floats.
            let ev = unsafe {
                ExecuteKernel::new(&self.copy)
                    .set_arg(&x.0)
                    .set_arg(&c.0)
                    .set_arg(&n4)
                    .set_global_work_size(copy_global)
                    .set_local_work_size(LOCAL_SIZE)
                    .enqueue_nd_range(&queue)
            }
            .map_err(cl3("clEnqueueNDRangeKernel"))?;
            seconds(&ev)
        };
        run_copy()?;
        let (mut axpy_t, mut copy_t) = (Vec::new(), Vec::new());
        for _ in 0..repeat.max(1) {
            if let Some(ev) =
                self.enqueue(&queue, kernel, &case, x.0, y.0, per_item.unwrap_or(1))?
            {
                axpy_t.push(seconds(&ev)?);
            }
            copy_t.push(run_copy()?);
        }
        let axpy = timing(
            match kernel {
                KernelRan::Seed => "dAxpy",
                KernelRan::Fast => "axpy_fast",
            },
            3 * case.n * 4,
            axpy_t,
        );
        let copy = timing("copy_float4", 2 * n4 * 4 * 4, copy_t);
        Ok(Bandwidth {
            n: case.n,
            repeat: repeat.max(1),
            ratio_to_copy: axpy.gb_per_s_best / copy.gb_per_s_best,
            axpy,
            kernel,
            per_item,
            copy,
        })
    }

    /// dAxpy on `first`, then on `second` over the same buffers, verified; times the
    /// runtime's migration of both buffers to `second`. Both devices must belong
    /// to this runner's (shared) context.
    pub fn cross_device(
        &self,
        first: cl_device_id,
        second: cl_device_id,
        n: u64,
        choice: KernelChoice,
    ) -> Result<CrossDevice, AxpyError> {
        let case = AxpyCase::contiguous(n, 1.5);
        let kernel = Self::pick(&case, choice)?;
        let (xl, yl) = case.buffer_lengths();
        let x = Mem::new(self.context, xl)?;
        let y = Mem::new(self.context, yl)?;
        let q0 = self.queue(first)?;
        let q1 = self.queue(second)?;
        let x0 = test_data(xl, 1);
        let y0 = test_data(yl, 2);
        write(&q0, x.0, &x0)?;
        write(&q0, y.0, &y0)?;
        let first_kernel_s = match self.enqueue(&q0, kernel, &case, x.0, y.0, 1)? {
            Some(ev) => seconds(&ev)?,
            None => 0.0,
        };
        q0.finish().map_err(cl3("clFinish"))?;
        let mems = [x.0, y.0];
        let migrate_start = std::time::Instant::now();
        // SAFETY: both buffers belong to this context; the list outlives the call.
        let migrate = unsafe {
            opencl3::command_queue::enqueue_migrate_mem_object(
                q1.get(),
                2,
                mems.as_ptr(),
                0,
                0,
                ptr::null(),
            )
        }
        .map_err(cl("clEnqueueMigrateMemObjects"))?;
        let migration_s = seconds(&Event::new(migrate))?;
        let migration_wall_s = migrate_start.elapsed().as_secs_f64();
        let second_kernel_s = match self.enqueue(&q1, kernel, &case, x.0, y.0, 1)? {
            Some(ev) => seconds(&ev)?,
            None => 0.0,
        };
        let mut got = vec![0f32; yl as usize];
        read(&q1, y.0, &mut got)?;
        check(&case, &x0, &y0, &got, 2)?;
        Ok(CrossDevice {
            n,
            first_kernel_s,
            migration_s,
            migration_wall_s,
            second_kernel_s,
            kernel,
            verified: true,
        })
    }

    /// dAxpy over two buffers of `bytes` each that someone else allocated on `device`
    /// (contiguous, all of each buffer), verified. Lazy runtimes allocate here.
    pub fn check_buffers(
        &self,
        device: cl_device_id,
        x: cl_mem,
        y: cl_mem,
        bytes: u64,
    ) -> Result<Verified, AxpyError> {
        let case = AxpyCase::contiguous(bytes / 4, 0.5);
        let kernel = Self::pick(&case, KernelChoice::Auto)?;
        let queue = self.queue(device)?;
        self.run_on(&queue, kernel, &case, x, y, 1, 1)
    }
}

fn timing(kernel: &str, bytes: u64, mut times: Vec<f64>) -> Timing {
    times.sort_by(f64::total_cmp);
    let min_s = times.first().copied().unwrap_or(f64::NAN);
    let max_s = times.last().copied().unwrap_or(f64::NAN);
    let median_s = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    Timing {
        kernel: kernel.to_owned(),
        bytes,
        min_s,
        median_s,
        max_s,
        gb_per_s_best: bytes as f64 / min_s / 1e9,
        gb_per_s_median: bytes as f64 / median_s / 1e9,
    }
}

/// Checks y against the CPU reference after `times` applications; returns the
/// largest error in epsilons of the tolerance.
fn check(
    case: &AxpyCase,
    x: &[f32],
    y0: &[f32],
    got: &[f32],
    times: u32,
) -> Result<f64, AxpyError> {
    let mut expected = y0.to_vec();
    let mut touched = vec![false; y0.len()];
    for i in 0..case.n {
        let xi = x[(case.x_offset + i * case.inc_x) as usize];
        let yi = (case.y_offset + i * case.inc_y) as usize;
        for _ in 0..times {
            expected[yi] += case.alpha * xi;
        }
        touched[yi] = true;
    }
    let (mut mismatches, mut first, mut worst) = (0u64, None, 0f64);
    for (i, (&g, &e)) in got.iter().zip(&expected).enumerate() {
        let tol = if touched[i] {
            let xi =
                x[((i as u64 - case.y_offset) / case.inc_y * case.inc_x + case.x_offset) as usize];
            times as f32 * tolerance(case.alpha, xi, e.abs().max(y0[i].abs()))
        } else {
            0.0
        };
        let err = (g - e).abs();
        if err > tol || g.is_nan() {
            mismatches += 1;
            first.get_or_insert((i as u64, g, e));
        } else if tol > 0.0 {
            worst = worst.max(f64::from(err / tol) * 2.0);
        }
    }
    match first {
        None => Ok(worst),
        Some((first_index, got, expected)) => Err(AxpyError::Mismatch {
            n: case.n,
            mismatches,
            first_index,
            got,
            expected,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_check_accepts_exact_and_rejects_wrong_results() {
        let case = AxpyCase {
            n: 10,
            alpha: 2.0,
            x_offset: 1,
            inc_x: 2,
            y_offset: 3,
            inc_y: 3,
        };
        let (xl, yl) = case.buffer_lengths();
        assert_eq!((xl, yl), (20, 31));
        let x = test_data(xl, 1);
        let y0 = test_data(yl, 2);
        let mut y = y0.clone();
        for i in 0..10usize {
            y[3 + 3 * i] += 2.0 * x[1 + 2 * i];
        }
        assert!(check(&case, &x, &y0, &y, 1).is_ok());
        // One element off by much more than rounding.
        let mut wrong = y.clone();
        wrong[6] += 1e-3;
        assert!(matches!(
            check(&case, &x, &y0, &wrong, 1),
            Err(AxpyError::Mismatch {
                mismatches: 1,
                first_index: 6,
                ..
            })
        ));
        // An element outside the strided set must stay untouched.
        let mut stray = y.clone();
        stray[4] += 1.0;
        assert!(matches!(
            check(&case, &x, &y0, &stray, 1),
            Err(AxpyError::Mismatch { first_index: 4, .. })
        ));
    }

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

    #[test]
    fn test_data_is_not_trivial() {
        let d = test_data(1000, 7);
        assert!(d.iter().all(|v| (-1.0..1.0).contains(v)));
        assert!(d.iter().filter(|v| **v == 0.0).count() < 10);
        assert!(d.windows(2).filter(|w| w[0] != w[1]).count() > 900);
    }
}
