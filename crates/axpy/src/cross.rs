//! dAxpy on one device, then on another over the same buffers, in one shared context.

use crate::case::{check, test_data, AxpyCase};
use crate::error::{cl3, AxpyError};
use crate::runner::{buffer, event_seconds, read, write, KernelChoice, KernelRan, Runner};
use opencl3::device::Device;
use opencl3::memory::ClMem;
use serde::{Deserialize, Serialize};

/// dAxpy on device 0, then on device 1 over the same buffers, in one shared context.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// The largest error after both runs, in epsilons of the tolerance (<= 2 passes).
    pub max_error_ulps: f64,
}

impl Runner<'_> {
    /// dAxpy on `first`, then on `second` over the same buffers, verified; times the
    /// runtime's migration of both buffers to `second`. Both devices must belong to
    /// this runner's (shared) context, and differ.
    pub fn cross_device(
        &self,
        first: &Device,
        second: &Device,
        n: u64,
        choice: KernelChoice,
    ) -> Result<CrossDevice, AxpyError> {
        if first.id() == second.id() {
            return Err(AxpyError::SameDevice(format!("{:?}", first.id())));
        }
        let case = AxpyCase::contiguous(n, 1.5);
        let kernel = Self::pick(&case, choice)?;
        let (xl, yl) = case.buffer_lengths();
        let mut x = buffer(self.context, xl)?;
        let mut y = buffer(self.context, yl)?;
        let q0 = self.queue(first)?;
        let q1 = self.queue(second)?;
        let x0 = test_data(xl, 1);
        let y0 = test_data(yl, 2);
        write(&q0, &mut x, &x0)?;
        write(&q0, &mut y, &y0)?;
        let first_kernel_s = match self.enqueue(&q0, kernel, &case, &x, &y, 1)? {
            Some(ev) => event_seconds(&ev)?,
            None => 0.0,
        };
        q0.finish().map_err(cl3("clFinish"))?;
        let mems = [x.get(), y.get()];
        let migrate_start = std::time::Instant::now();
        // SAFETY: both buffers belong to this context; the list outlives the call.
        let migrate = unsafe { q1.enqueue_migrate_mem_object(2, mems.as_ptr(), 0, &[]) }
            .map_err(cl3("clEnqueueMigrateMemObjects"))?;
        let migration_s = event_seconds(&migrate)?;
        let migration_wall_s = migrate_start.elapsed().as_secs_f64();
        let second_kernel_s = match self.enqueue(&q1, kernel, &case, &x, &y, 1)? {
            Some(ev) => event_seconds(&ev)?,
            None => 0.0,
        };
        let mut got = vec![0f32; yl as usize];
        read(&q1, &y, &mut got)?;
        let max_error_ulps = check(&case, &x0, &y0, &got, 2)?;
        Ok(CrossDevice {
            n,
            first_kernel_s,
            migration_s,
            migration_wall_s,
            second_kernel_s,
            kernel,
            max_error_ulps,
        })
    }
}
