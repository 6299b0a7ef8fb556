//! Submissions and their completion: `DRM_IOCTL_XE_EXEC` reads the batch through the
//! queue's VM (its bound mappings are the GPU's memory), carries out the writes the
//! runtime waits for ([`crate::batch`]), and signals the syncs at once; user fences
//! are written where the caller said, and `WAIT_USER_FENCE` compares what is there.

use super::*;
use crate::batch::{Memory, View};

/// `DRM_IOCTL_XE_EXEC`, checked as xe_exec.c checks it; no GPU runs the batch.
pub(super) fn exec(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    e: &mut XeExec,
) -> Result<i32, Errno> {
    if e.extensions != 0 || e.pad != [0; 3] || e.reserved != [0; 2] {
        return Err(libc::EINVAL);
    }
    let (vm, class) = driver.xe_queue(fd, e.exec_queue_id)?;
    if class == DRM_XE_ENGINE_CLASS_VM_BIND || e.num_batch_buffer != 1 {
        return Err(libc::EINVAL);
    }
    if e.num_syncs > 1024 {
        return Err(libc::EINVAL);
    }
    // SAFETY: `syncs` points to `num_syncs` entries (the uAPI).
    let syncs: Vec<XeSync> = unsafe { vm::read_array(e.syncs, e.num_syncs as usize)? };
    check_syncs(driver, fd, &syncs)?;
    let views = driver.xe_views(fd, vm)?;
    let outcome =
        Memory::new(&views, driver.config.hardware.timestamp(host.now_ns())).run(e.address);
    driver.xe_executed(outcome.writes);
    if driver.config.trace {
        let fences: Vec<String> = syncs
            .iter()
            .filter(|s| s.sync_type == DRM_XE_SYNC_TYPE_USER_FENCE)
            .map(|s| match cpu_address(&views, s.addr) {
                Some(cpu) => format!("{:#x} (CPU {cpu:#x}) <- {}", s.addr, s.timeline_value),
                None => format!("{:#x} (no CPU view) <- {}", s.addr, s.timeline_value),
            })
            .collect();
        eprintln!(
            "clmulti-kmd-emu: exec on fd {fd} at {:#x}: {} writes{}; user fences: {}",
            e.address,
            outcome.writes,
            outcome
                .stopped
                .as_ref()
                .map_or(String::new(), |why| format!(", batch read stopped: {why}")),
            fences.join(", ")
        );
    }
    signal(driver, host, fd, &syncs, |_, gpu| cpu_address(&views, gpu))?;
    Ok(0)
}

/// The CPU address of the 8 bytes at `gpu` in the VM's mappings, when the CPU sees them.
fn cpu_address(views: &[View], gpu: u64) -> Option<u64> {
    let gpu = gpu & ((1 << 48) - 1);
    views.iter().find_map(|v| {
        let offset = gpu.checked_sub(v.gpu_address)?;
        let (cpu, len) = v.cpu?;
        (offset + 8 <= v.size.min(len as u64)).then(|| cpu as u64 + offset)
    })
}

/// The syncs of a submission or a bind, as `xe_sync_entry_parse` checks them.
fn check_syncs(driver: &mut Driver, fd: i32, syncs: &[XeSync]) -> Result<(), Errno> {
    for s in syncs {
        let signal = s.flags & DRM_XE_SYNC_FLAG_SIGNAL != 0;
        if s.extensions != 0 || s.reserved != [0; 2] || s.flags & !DRM_XE_SYNC_FLAG_SIGNAL != 0 {
            return Err(libc::EINVAL);
        }
        match s.sync_type {
            DRM_XE_SYNC_TYPE_USER_FENCE if !signal || s.addr % 8 != 0 => return Err(libc::EINVAL),
            DRM_XE_SYNC_TYPE_USER_FENCE => {}
            DRM_XE_SYNC_TYPE_SYNCOBJ | DRM_XE_SYNC_TYPE_TIMELINE_SYNCOBJ => {
                let handle = s.addr as u32;
                let state = *driver.syncobj(fd, handle).map_err(|_| libc::ENOENT)?;
                // A dependency on a syncobj without a fence: the kernel has nothing to
                // wait for and refuses it.
                let waiting_on_nothing = if s.sync_type == DRM_XE_SYNC_TYPE_SYNCOBJ {
                    !state.signaled
                } else {
                    state.point < s.timeline_value
                };
                if !signal && waiting_on_nothing {
                    return Err(libc::EINVAL);
                }
            }
            _ => return Err(libc::EINVAL),
        }
    }
    Ok(())
}

/// Signals a completed operation's syncs: user fences get their value at the address
/// `to_cpu` gives for theirs (identity for binds, the VM's mapping for execs; a fence
/// the CPU cannot see is the GPU's alone and is left), syncobjs are signalled.
pub(super) fn signal(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    syncs: &[XeSync],
    to_cpu: impl Fn(&Driver, u64) -> Option<u64>,
) -> Result<(), Errno> {
    check_syncs(driver, fd, syncs)?;
    for s in syncs
        .iter()
        .filter(|s| s.flags & DRM_XE_SYNC_FLAG_SIGNAL != 0)
    {
        match s.sync_type {
            DRM_XE_SYNC_TYPE_USER_FENCE => {
                if let Some(address) = to_cpu(driver, s.addr) {
                    if host.write_user(address, s.timeline_value).is_ok() {
                        driver.xe_fence_written();
                    }
                }
            }
            DRM_XE_SYNC_TYPE_SYNCOBJ => driver.syncobj(fd, s.addr as u32)?.signaled = true,
            _ => {
                let state = driver.syncobj(fd, s.addr as u32)?;
                state.point = state.point.max(s.timeline_value);
            }
        }
    }
    Ok(())
}

/// A `WAIT_USER_FENCE` whose condition did not hold when asked: the caller waits
/// without the driver's lock (another thread's submission may write the fence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FenceWait {
    address: u64,
    op: u16,
    value: u64,
    mask: u64,
    /// Nanoseconds: relative, absolute (CLOCK_MONOTONIC) with `absolute`, or < 0 for
    /// no limit.
    timeout: i64,
    absolute: bool,
    /// The caller's structure, where a relative wait writes back the time left.
    arg: usize,
}

/// An infinite wait gives up after this long: nothing but the CPU can write a fence
/// here, and a process waiting for GPU work the emulation does not run would hang.
const NO_GPU_WAIT_NS: u64 = 10_000_000_000;

impl FenceWait {
    /// Waits as xe does: polls the fence until the condition holds (0) or the time is
    /// up (`ETIME`); a relative wait's time left is written back to the caller.
    pub fn wait(&self, host: &dyn Host) -> Result<i32, Errno> {
        let start = host.now_ns();
        let deadline = match (self.timeout, self.absolute) {
            (t, _) if t < 0 => start + NO_GPU_WAIT_NS,
            (t, true) => t as u64,
            (t, false) => start.saturating_add(t as u64),
        };
        let result = loop {
            if passes(
                self.op,
                host.read_user(self.address)?,
                self.value,
                self.mask,
            ) {
                break Ok(0);
            }
            if host.now_ns() >= deadline {
                if self.timeout < 0 {
                    eprintln!(
                        "clmulti-kmd-emu: xe: a wait without limit on the user fence at {:#x} gave up after 10 s: no GPU work runs here to write it",
                        self.address
                    );
                }
                break Err(libc::ETIME);
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        };
        if !self.absolute && self.timeout >= 0 {
            let left = (self.timeout as u64).saturating_sub(host.now_ns() - start);
            let at = self.arg as *mut XeWaitUserFence;
            // SAFETY: the caller's structure, still valid: the ioctl has not returned.
            unsafe { std::ptr::addr_of_mut!((*at).timeout).write_unaligned(left as i64) };
        }
        result
    }
}

fn passes(op: u16, current: u64, value: u64, mask: u64) -> bool {
    let (current, value) = (current & mask, value & mask);
    match op {
        DRM_XE_UFENCE_WAIT_OP_EQ => current == value,
        DRM_XE_UFENCE_WAIT_OP_NEQ => current != value,
        DRM_XE_UFENCE_WAIT_OP_GT => current > value,
        DRM_XE_UFENCE_WAIT_OP_GTE => current >= value,
        DRM_XE_UFENCE_WAIT_OP_LT => current < value,
        _ => current <= value,
    }
}

/// `DRM_IOCTL_XE_WAIT_USER_FENCE`: done when the fence already holds, else a
/// [`FenceWait`] for the caller (with no time to wait: `ETIME`).
pub(super) fn wait_user_fence(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    arg: *mut c_void,
    w: &mut XeWaitUserFence,
) -> Result<Reply, Errno> {
    let bad = w.extensions != 0
        || w.pad != 0
        || w.pad2 != 0
        || w.reserved != [0; 2]
        || w.op > DRM_XE_UFENCE_WAIT_OP_LTE
        || w.flags & !DRM_XE_UFENCE_WAIT_FLAG_ABSTIME != 0
        || w.addr % 8 != 0;
    if bad {
        return Err(libc::EINVAL);
    }
    if w.exec_queue_id != 0 {
        driver.xe_queue(fd, w.exec_queue_id)?;
    }
    if passes(w.op, host.read_user(w.addr)?, w.value, w.mask) {
        return Ok(Reply::Done(0));
    }
    if w.timeout == 0 {
        return Err(libc::ETIME);
    }
    Ok(Reply::Wait(FenceWait {
        address: w.addr,
        op: w.op,
        value: w.value,
        mask: w.mask,
        timeout: w.timeout,
        absolute: w.flags & DRM_XE_UFENCE_WAIT_FLAG_ABSTIME != 0,
        arg: arg as usize,
    }))
}
