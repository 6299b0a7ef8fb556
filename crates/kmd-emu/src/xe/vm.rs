//! VMs, the mappings bound in them and the exec queues that run on them, checked as
//! xe_vm.c and xe_exec_queue.c check them.

use super::*;
use crate::model::BindOp;

/// `DRM_IOCTL_XE_VM_CREATE`.
pub(super) fn create(driver: &mut Driver, fd: i32, c: &mut XeVmCreate) -> Result<i32, Errno> {
    let all = DRM_XE_VM_CREATE_FLAG_SCRATCH_PAGE
        | DRM_XE_VM_CREATE_FLAG_LR_MODE
        | DRM_XE_VM_CREATE_FLAG_FAULT_MODE
        | DRM_XE_VM_CREATE_FLAG_NO_VM_OVERCOMMIT;
    let fault = c.flags & DRM_XE_VM_CREATE_FLAG_FAULT_MODE != 0;
    if c.extensions != 0 || c.reserved != [0; 2] || c.flags & !all != 0 {
        return Err(libc::EINVAL);
    }
    // Page faults need long-running mode; overcommit control needs page faults.
    if fault && c.flags & DRM_XE_VM_CREATE_FLAG_LR_MODE == 0
        || c.flags & DRM_XE_VM_CREATE_FLAG_NO_VM_OVERCOMMIT != 0 && !fault
    {
        return Err(libc::EINVAL);
    }
    c.vm_id = driver.xe_vm_create(fd, c.flags)?;
    Ok(0)
}

/// `DRM_IOCTL_XE_VM_BIND`: every operation checked first, then applied in order; the
/// syncs it signals are signalled at once (binding takes no GPU time here).
pub(super) fn bind(
    driver: &mut Driver,
    host: &dyn Host,
    fd: i32,
    b: &mut XeVmBind,
) -> Result<i32, Errno> {
    if b.extensions != 0 || b.pad != 0 || b.pad2 != 0 || b.reserved != [0; 2] || b.num_binds == 0 {
        return Err(libc::EINVAL);
    }
    if b.exec_queue_id != 0 {
        let (_, class) = driver.xe_queue(fd, b.exec_queue_id)?;
        if class != DRM_XE_ENGINE_CLASS_VM_BIND {
            return Err(libc::EINVAL);
        }
    }
    let vm_flags = driver.xe_vm_flags(fd, b.vm_id).map_err(|_| libc::EINVAL)?;
    let ops: Vec<XeVmBindOp> = if b.num_binds == 1 {
        vec![b.bind]
    } else {
        // SAFETY: `vector_of_binds` points to `num_binds` operations (the uAPI).
        unsafe { read_array(b.bind.extensions, b.num_binds as usize)? }
    };
    for op in &ops {
        check_op(op, vm_flags)?;
    }
    // SAFETY: `syncs` points to `num_syncs` entries (the uAPI).
    let syncs: Vec<XeSync> = unsafe { read_array(b.syncs, b.num_syncs as usize)? };
    for op in &ops {
        let (handle, offset) = if op.flags & DRM_XE_VM_BIND_FLAG_CPU_ADDR_MIRROR != 0 {
            // The GPU sees the CPU's memory at the same addresses.
            (0, op.addr)
        } else {
            (op.obj, op.obj_offset)
        };
        let op_code = if op.flags & DRM_XE_VM_BIND_FLAG_CPU_ADDR_MIRROR != 0 {
            DRM_XE_VM_BIND_OP_MAP_USERPTR
        } else {
            op.op
        };
        driver.xe_bind(
            fd,
            b.vm_id,
            BindOp {
                op: op_code,
                flags: op.flags,
                handle,
                offset,
                address: op.addr,
                range: op.range,
            },
        )?;
    }
    exec::signal(driver, host, fd, &syncs, |_, address| Some(address))?;
    Ok(0)
}

/// `vm_bind_ioctl_check_args`, one operation.
fn check_op(op: &XeVmBindOp, vm_flags: u32) -> Result<(), Errno> {
    let known = DRM_XE_VM_BIND_FLAG_READONLY
        | DRM_XE_VM_BIND_FLAG_IMMEDIATE
        | DRM_XE_VM_BIND_FLAG_NULL
        | DRM_XE_VM_BIND_FLAG_DUMPABLE
        | DRM_XE_VM_BIND_FLAG_CHECK_PXP
        | DRM_XE_VM_BIND_FLAG_CPU_ADDR_MIRROR
        | DRM_XE_VM_BIND_FLAG_MADVISE_AUTORESET
        | DRM_XE_VM_BIND_FLAG_DECOMPRESS;
    let page_aligned = |v: u64| v % 4096 == 0;
    let null = op.flags & DRM_XE_VM_BIND_FLAG_NULL != 0;
    let mirror = op.flags & DRM_XE_VM_BIND_FLAG_CPU_ADDR_MIRROR != 0;
    let bad = op.extensions != 0
        || op.op > DRM_XE_VM_BIND_OP_PREFETCH
        || op.flags & !known != 0
        || (null || mirror) && (op.op != DRM_XE_VM_BIND_OP_MAP || op.obj != 0)
        || mirror && vm_flags & DRM_XE_VM_CREATE_FLAG_FAULT_MODE == 0
        || op.op == DRM_XE_VM_BIND_OP_MAP && !null && !mirror && op.obj == 0
        || matches!(
            op.op,
            DRM_XE_VM_BIND_OP_UNMAP | DRM_XE_VM_BIND_OP_MAP_USERPTR | DRM_XE_VM_BIND_OP_PREFETCH
        ) && op.obj != 0
        || op.op == DRM_XE_VM_BIND_OP_UNMAP_ALL && (op.obj == 0 || op.addr != 0 || op.range != 0);
    if bad {
        return Err(libc::EINVAL);
    }
    if op.op != DRM_XE_VM_BIND_OP_UNMAP_ALL
        && (op.range == 0
            || !page_aligned(op.addr)
            || !page_aligned(op.range)
            || !page_aligned(op.obj_offset) && !null && !mirror)
    {
        return Err(libc::EINVAL);
    }
    Ok(())
}

/// `DRM_IOCTL_XE_EXEC_QUEUE_CREATE`: one engine (or several of one class, the
/// kernel's choice among them), on a VM; or a bind queue.
pub(super) fn queue_create(
    driver: &mut Driver,
    fd: i32,
    c: &mut XeExecQueueCreate,
) -> Result<i32, Errno> {
    if c.flags & !DRM_XE_EXEC_QUEUE_LOW_LATENCY_HINT != 0 || c.reserved != [0; 2] {
        return Err(libc::EINVAL);
    }
    // Parallel submission (width > 1) is not modelled: refused as on an engine class
    // that has no parallel engines.
    if c.width != 1 || c.num_placements == 0 || c.num_placements > 64 {
        return Err(libc::EINVAL);
    }
    // SAFETY: `instances` points to `width * num_placements` entries (the uAPI).
    let instances: Vec<XeEngineClassInstance> =
        unsafe { read_array(c.instances, usize::from(c.num_placements))? };
    let class = instances[0].engine_class;
    if class == DRM_XE_ENGINE_CLASS_VM_BIND {
        if c.num_placements != 1 || instances[0].engine_instance != 0 {
            return Err(libc::EINVAL);
        }
    } else if instances
        .iter()
        .any(|eci| eci.engine_class != class || !query::engine_exists(driver.config.hardware, eci))
    {
        return Err(libc::EINVAL);
    }
    properties(c.extensions)?;
    c.exec_queue_id = driver.xe_queue_create(fd, c.vm_id, class)?;
    Ok(0)
}

/// The `SET_PROPERTY` extensions of a new exec queue.
fn properties(mut next: u64) -> Result<(), Errno> {
    // SAFETY: geteuid has no preconditions.
    let max_priority = if unsafe { libc::geteuid() } == 0 {
        2
    } else {
        1
    };
    let mut seen = 0;
    while next != 0 {
        seen += 1;
        if seen > 16 {
            return Err(libc::E2BIG);
        }
        // SAFETY: the chain's entries are valid extensions (the uAPI).
        let ext: XeExtSetProperty = unsafe { read_array(next, 1)? }[0];
        if ext.base.name != DRM_XE_EXEC_QUEUE_EXTENSION_SET_PROPERTY || ext.pad != 0 {
            return Err(libc::EINVAL);
        }
        match ext.property {
            DRM_XE_EXEC_QUEUE_SET_PROPERTY_PRIORITY if ext.value > max_priority => {
                return Err(libc::EPERM)
            }
            DRM_XE_EXEC_QUEUE_SET_PROPERTY_PRIORITY | DRM_XE_EXEC_QUEUE_SET_PROPERTY_TIMESLICE => {}
            DRM_XE_EXEC_QUEUE_SET_PROPERTY_PXP_TYPE if ext.value == 0 => {}
            DRM_XE_EXEC_QUEUE_SET_PROPERTY_PXP_TYPE => return Err(libc::ENODEV),
            // Multi-queue groups: not on a B580.
            _ => return Err(libc::EINVAL),
        }
        next = ext.base.next_extension;
    }
    Ok(())
}

/// `DRM_IOCTL_XE_MADVISE`: memory attributes of a fault-mode VM's ranges, accepted
/// and counted (page faults, which would read them, are not modelled).
pub(super) fn madvise(driver: &mut Driver, fd: i32, m: &mut XeMadvise) -> Result<i32, Errno> {
    if m.extensions != 0 || m.reserved != [0; 2] {
        return Err(libc::EINVAL);
    }
    let flags = driver.xe_vm_flags(fd, m.vm_id).map_err(|_| libc::EINVAL)?;
    if flags & DRM_XE_VM_CREATE_FLAG_FAULT_MODE == 0
        || m.range == 0
        || m.start % 4096 != 0
        || m.range % 4096 != 0
        || m.advice_type > 2
    {
        return Err(libc::EINVAL);
    }
    driver.xe_advised();
    Ok(0)
}

/// `n` structures the caller's array holds at `address` (`EFAULT` for a null one).
///
/// # Safety
/// `address` is null or points to `n` valid `T`.
pub(super) unsafe fn read_array<T: Copy>(address: u64, n: usize) -> Result<Vec<T>, Errno> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if address == 0 {
        return Err(libc::EFAULT);
    }
    if n > 1 << 16 {
        return Err(libc::EINVAL);
    }
    let p = address as *const T;
    // SAFETY: the caller's contract.
    Ok((0..n)
        .map(|i| unsafe { std::ptr::read_unaligned(p.add(i)) })
        .collect())
}
