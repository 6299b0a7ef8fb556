//! Strategy `pool`: one large buffer per device at a time, carved into sub-buffers at
//! the device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN`; a new pool when one is full.

use clmulti_explain::Call;
use clmulti_probe::ClCode;
use opencl3::types::{cl_context, cl_mem};

struct Pool {
    mem: cl_mem,
    used: u64,
}

/// The pools of one device.
pub(crate) struct Pools {
    pools: Vec<Pool>,
    pool_size: u64,
    align: u64,
}

impl Pools {
    pub fn new(pool_size: u64, align: u64) -> Self {
        Pools {
            pools: Vec::new(),
            pool_size,
            align: align.max(1),
        }
    }

    /// A sub-buffer of `size` bytes, from the current pool or a new one; the flag
    /// says whether a pool was created.
    pub fn carve(
        &mut self,
        context: cl_context,
        flags: u64,
        size: u64,
    ) -> Result<(cl_mem, bool), (ClCode, Call)> {
        let align = self.align;
        let needs_new = self
            .pools
            .last()
            .is_none_or(|p| p.used.div_ceil(align) * align + size > self.pool_size);
        if needs_new {
            // SAFETY: a live context, no host pointer (validation forbids host flags
            // with pools).
            let mem = unsafe {
                clmulti_probe::raw::create_buffer(context, flags, self.pool_size as usize)
            }
            .map_err(|code| (code, Call::CreateBuffer))?;
            self.pools.push(Pool { mem, used: 0 });
        }
        let pool = self
            .pools
            .last_mut()
            .ok_or((ClCode::INVALID_MEM_OBJECT, Call::CreateSubBuffer))?;
        let origin = pool.used.div_ceil(align) * align;
        // SAFETY: `pool.mem` is live; the region lies inside it and its origin is
        // aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN.
        let mem = unsafe {
            clmulti_probe::raw::create_sub_buffer(pool.mem, origin as usize, size as usize)
        }
        .map_err(|code| (code, Call::CreateSubBuffer))?;
        pool.used = origin + size;
        Ok((mem, needs_new))
    }

    /// Releases every pool buffer (after their sub-buffers); the errors, by name.
    pub fn release(&mut self) -> (u64, Vec<String>) {
        let mut released = 0;
        let mut errors = Vec::new();
        for pool in self.pools.drain(..) {
            // SAFETY: created by `carve`, released once.
            match unsafe { clmulti_probe::raw::release_mem_object(pool.mem) } {
                Ok(()) => released += 1,
                Err(code) => errors.push(format!("clReleaseMemObject (pool): {code}")),
            }
        }
        (released, errors)
    }
}
