//! What xe keeps beside GEM objects, per client: VMs and the mappings bound in them,
//! exec queues, syncobjs; and objects created with a placement mask, backed at
//! creation or (`DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING`) at their first bind.
//!
//! Rules taken from the kernel (drivers/gpu/drm/xe: xe_bo.c, xe_vm.c,
//! xe_exec_queue.c; drm_syncobj.c):
//! - a bound mapping holds its object: closing the last handle leaves it alive until
//!   it is unbound (or its VM destroyed);
//! - a new mapping over bound addresses replaces what it covers, splitting mappings it
//!   overlaps in part; an unbind removes what it covers;
//! - an object created for one VM (`vm_id`) is bound only there and never exported;
//! - a VM with exec queues on it cannot be destroyed (`EBUSY`).

use super::*;

/// What a mapping of a VM shows at its addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An object, from this offset in it.
    Object(ObjectId, u64),
    /// The process's own memory, from this address (`MAP_USERPTR`).
    Userptr(u64),
    /// Nothing: reads give zero, writes are dropped (`DRM_XE_VM_BIND_FLAG_NULL`).
    Null,
}

#[derive(Debug, Clone, Copy)]
struct Mapping {
    end: u64,
    target: Target,
}

impl Mapping {
    /// The same mapping starting `by` bytes later.
    fn advanced(self, by: u64) -> Self {
        let target = match self.target {
            Target::Object(o, offset) => Target::Object(o, offset + by),
            Target::Userptr(address) => Target::Userptr(address + by),
            Target::Null => Target::Null,
        };
        Mapping { target, ..self }
    }
}

#[derive(Debug, Default)]
struct Vm {
    flags: u32,
    /// Start address -> mapping; mappings never overlap.
    mappings: BTreeMap<u64, Mapping>,
    queues: u32,
}

#[derive(Debug, Clone, Copy)]
struct Queue {
    vm: u32,
    class: u16,
}

/// A syncobj's state: signalled, and the timeline point reached.
#[derive(Debug, Clone, Copy, Default)]
pub struct Syncobj {
    /// Whether it has a signalled fence (binary syncobjs).
    pub signaled: bool,
    /// The last point signalled (timeline syncobjs).
    pub point: u64,
}

/// One client's xe state.
#[derive(Debug, Default)]
pub(super) struct XeFile {
    vms: BTreeMap<u32, Vm>,
    queues: BTreeMap<u32, Queue>,
    syncobjs: BTreeMap<u32, Syncobj>,
    next_vm: u32,
    next_queue: u32,
    next_syncobj: u32,
}

/// The xe state of every client, and the objects private to one VM.
#[derive(Debug, Default)]
pub(super) struct XeState {
    files: HashMap<u64, XeFile>,
    /// Object -> (its file, its VM) for objects created with a `vm_id`.
    private: HashMap<ObjectId, (u64, u32)>,
    /// Per device, objects in the order they took VRAM pages: eviction's candidates
    /// (stale entries are skipped when met).
    pub(super) vram_order: HashMap<usize, std::collections::VecDeque<ObjectId>>,
}

/// xe's own counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XeCounts {
    /// Mappings of objects bound in VMs (`VM_BIND` MAP).
    pub binds: Tally,
    /// `VM_BIND` UNMAP and UNMAP_ALL operations.
    pub unbinds: u64,
    /// `VM_BIND` PREFETCH operations.
    pub prefetches: u64,
    /// Exec queues.
    pub exec_queues: Tally,
    /// `DRM_IOCTL_XE_EXEC` submissions completed.
    pub execs: u64,
    /// User fences written on completion (binds and execs).
    pub user_fence_writes: u64,
    /// Syncobjs.
    pub syncobjs: Tally,
    /// `MADVISE` calls accepted.
    pub madvises: u64,
}

/// A GEM object as `DRM_IOCTL_XE_GEM_CREATE` asks for it.
#[derive(Debug, Clone, Copy)]
pub struct XeCreate {
    /// Bytes.
    pub size: u64,
    /// Bit 0 system memory, bit 1 the device's VRAM.
    pub placement: u32,
    /// `DRM_XE_GEM_CREATE_FLAG_*`.
    pub flags: u32,
    /// The VM the object is private to (0: none).
    pub vm_id: u32,
}

/// One `VM_BIND` operation, decoded.
#[derive(Debug, Clone, Copy)]
pub struct BindOp {
    /// `DRM_XE_VM_BIND_OP_*`.
    pub op: u32,
    /// `DRM_XE_VM_BIND_FLAG_*`.
    pub flags: u32,
    /// The object's handle (MAP, UNMAP_ALL).
    pub handle: u32,
    /// The offset in the object, or the user address (MAP_USERPTR).
    pub offset: u64,
    /// GPU address.
    pub address: u64,
    /// Bytes.
    pub range: u64,
}

impl Driver {
    fn xe_file(&mut self, fd: i32) -> Result<(u64, &mut XeFile), Errno> {
        let id = *self.file_fds.get(&fd).ok_or(libc::EBADF)?;
        Ok((id, self.xe.files.entry(id).or_default()))
    }

    /// `DRM_IOCTL_XE_GEM_CREATE`: returns the handle. Without `DEFER_BACKING` the
    /// object takes its pages now, in VRAM when the mask allows it (system memory when
    /// VRAM cannot make room); with it, at its first bind.
    pub fn xe_create(&mut self, fd: i32, create: XeCreate) -> Result<u32, Errno> {
        let device = self.file(fd)?.device;
        if create.vm_id != 0 && !self.xe_file(fd)?.1.vms.contains_key(&create.vm_id) {
            return Err(libc::ENOENT);
        }
        let region = if create.placement & 0b10 != 0 {
            Region::Local
        } else {
            Region::System
        };
        if create.size > self.region_size(device, region) {
            return Err(libc::E2BIG);
        }
        let deferred = create.flags & clmulti_drm_uapi::DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING != 0;
        let object = self.insert_object(device, region, create.size, Origin::Created);
        if deferred {
            self.set_deferred(object);
        } else if let Err(errno) = self.back(object, create.placement) {
            self.release_if_unreferenced(object);
            return Err(errno);
        }
        if create.vm_id != 0 {
            let file = self.xe_file(fd)?.0;
            self.xe.private.insert(object, (file, create.vm_id));
        }
        self.add_handle(fd, object)
    }

    /// Pages for an object created without deferring, in TTM's order: each allowed
    /// region without evicting (VRAM first), then VRAM evicting others.
    fn back(&mut self, object: ObjectId, placement: u32) -> Result<(), Errno> {
        if placement & 0b11 == 0b11
            && !self.fits(object, Region::Local)
            && self.fits(object, Region::System)
        {
            self.move_to(object, Region::System);
        }
        self.make_resident(object, self.clock + 1)
    }

    /// Whether an object's pages fit in a region of its device as it is now.
    fn fits(&self, object: ObjectId, region: Region) -> bool {
        let Some(o) = self.objects.get(&object) else {
            return false;
        };
        let used = self
            .counts
            .regions
            .get(&(o.device, region))
            .map_or(0, |c| c.resident_bytes);
        used + o.size <= self.region_size(o.device, region)
    }

    /// Whether an object may be exported (xe refuses objects private to a VM).
    pub fn xe_exportable(&mut self, fd: i32, handle: u32) -> Result<bool, Errno> {
        let object = self.lookup(fd, handle)?;
        Ok(!self.xe.private.contains_key(&object))
    }

    /// `DRM_IOCTL_XE_VM_CREATE`.
    pub fn xe_vm_create(&mut self, fd: i32, flags: u32) -> Result<u32, Errno> {
        let (_, file) = self.xe_file(fd)?;
        file.next_vm += 1;
        let id = file.next_vm;
        file.vms.insert(
            id,
            Vm {
                flags,
                ..Vm::default()
            },
        );
        self.counts.vms.up();
        Ok(id)
    }

    /// `DRM_IOCTL_XE_VM_DESTROY`: its mappings go with it.
    pub fn xe_vm_destroy(&mut self, fd: i32, vm: u32) -> Result<(), Errno> {
        let (_, file) = self.xe_file(fd)?;
        match file.vms.get(&vm) {
            None => return Err(libc::ENOENT),
            Some(v) if v.queues > 0 => return Err(libc::EBUSY),
            Some(_) => {}
        }
        let gone = file.vms.remove(&vm).expect("looked up above");
        self.counts.vms.down();
        for mapping in gone.mappings.into_values() {
            self.unmapped_target(mapping.target);
        }
        Ok(())
    }

    /// A VM's creation flags.
    pub fn xe_vm_flags(&mut self, fd: i32, vm: u32) -> Result<u32, Errno> {
        let (_, file) = self.xe_file(fd)?;
        file.vms.get(&vm).map(|v| v.flags).ok_or(libc::ENOENT)
    }

    /// One `VM_BIND` operation, checked against the objects and applied.
    pub fn xe_bind(&mut self, fd: i32, vm: u32, op: BindOp) -> Result<(), Errno> {
        use clmulti_drm_uapi::*;
        let vm_flags = self.xe_vm_flags(fd, vm).map_err(|_| libc::EINVAL)?;
        match op.op {
            DRM_XE_VM_BIND_OP_MAP if op.flags & DRM_XE_VM_BIND_FLAG_NULL != 0 => {
                self.replace(fd, vm, op.address, op.range, Some(Target::Null))
            }
            DRM_XE_VM_BIND_OP_MAP => {
                let object = self.lookup(fd, op.handle)?;
                let size = self.objects.get(&object).map_or(0, |o| o.size);
                if op.offset.checked_add(op.range).is_none_or(|end| end > size) {
                    return Err(libc::EINVAL);
                }
                let file = self.xe_file(fd)?.0;
                if self
                    .xe
                    .private
                    .get(&object)
                    .is_some_and(|&owner| owner != (file, vm))
                {
                    return Err(libc::EINVAL);
                }
                let target = Target::Object(object, op.offset);
                self.replace(fd, vm, op.address, op.range, Some(target))?;
                // A fault-mode VM binds without IMMEDIATE lazily: pages come with the
                // GPU's first touch, which is not modelled.
                let lazy = vm_flags & DRM_XE_VM_CREATE_FLAG_FAULT_MODE != 0
                    && op.flags & DRM_XE_VM_BIND_FLAG_IMMEDIATE == 0;
                if !lazy {
                    self.clock += 1;
                    self.make_resident(object, self.clock)?;
                }
                Ok(())
            }
            DRM_XE_VM_BIND_OP_MAP_USERPTR => self.replace(
                fd,
                vm,
                op.address,
                op.range,
                Some(Target::Userptr(op.offset)),
            ),
            DRM_XE_VM_BIND_OP_UNMAP => {
                self.counts.xe.unbinds += 1;
                self.replace(fd, vm, op.address, op.range, None)
            }
            DRM_XE_VM_BIND_OP_UNMAP_ALL => {
                let object = self.lookup(fd, op.handle)?;
                self.counts.xe.unbinds += 1;
                self.unbind_object(fd, vm, object)
            }
            DRM_XE_VM_BIND_OP_PREFETCH => {
                self.counts.xe.prefetches += 1;
                Ok(())
            }
            _ => Err(libc::EINVAL),
        }
    }

    /// Makes `[address, address + range)` show `target` (or nothing), splitting the
    /// mappings it overlaps.
    fn replace(
        &mut self,
        fd: i32,
        vm: u32,
        address: u64,
        range: u64,
        target: Option<Target>,
    ) -> Result<(), Errno> {
        let end = address.checked_add(range).ok_or(libc::EINVAL)?;
        let (_, file) = self.xe_file(fd)?;
        let mappings = &mut file.vms.get_mut(&vm).ok_or(libc::EINVAL)?.mappings;
        let overlapping: Vec<u64> = mappings
            .range(..end)
            .filter(|(_, m)| m.end > address)
            .map(|(&s, _)| s)
            .collect();
        // Each mapping removed drops its reference; each piece of it kept takes one.
        let (mut kept, mut removed) = (Vec::new(), Vec::new());
        for start in overlapping {
            let m = mappings.remove(&start).expect("listed above");
            if start < address {
                mappings.insert(start, Mapping { end: address, ..m });
                kept.push(m.target);
            }
            if m.end > end {
                let right = m.advanced(end - start);
                mappings.insert(end, right);
                kept.push(right.target);
            }
            removed.push(m.target);
        }
        if let Some(target) = target {
            mappings.insert(address, Mapping { end, target });
            kept.push(target);
        }
        // Taken before dropped: an object split in two never reaches zero between.
        for target in kept {
            self.mapped_target(target);
        }
        for target in removed {
            self.unmapped_target(target);
        }
        Ok(())
    }

    fn unbind_object(&mut self, fd: i32, vm: u32, object: ObjectId) -> Result<(), Errno> {
        let (_, file) = self.xe_file(fd)?;
        let mappings = &mut file.vms.get_mut(&vm).ok_or(libc::EINVAL)?.mappings;
        let starts: Vec<u64> = mappings
            .iter()
            .filter(|(_, m)| matches!(m.target, Target::Object(o, _) if o == object))
            .map(|(&s, _)| s)
            .collect();
        let removed: Vec<Target> = starts
            .iter()
            .filter_map(|s| mappings.remove(s))
            .map(|m| m.target)
            .collect();
        for target in removed {
            self.unmapped_target(target);
        }
        Ok(())
    }

    fn mapped_target(&mut self, target: Target) {
        match target {
            Target::Object(object, _) => {
                if let Some(o) = self.objects.get_mut(&object) {
                    o.binds += 1;
                }
                self.counts.xe.binds.up();
            }
            Target::Userptr(_) => self.counts.userptrs.up(),
            Target::Null => {}
        }
    }

    fn unmapped_target(&mut self, target: Target) {
        match target {
            Target::Object(object, _) => {
                if let Some(o) = self.objects.get_mut(&object) {
                    o.binds -= 1;
                }
                self.counts.xe.binds.down();
                self.release_if_unreferenced(object);
            }
            Target::Userptr(_) => self.counts.userptrs.down(),
            Target::Null => {}
        }
    }

    /// The mappings of a VM as the batch reader sees memory: GPU address, size, and
    /// the CPU's view of the same bytes when there is one.
    pub fn xe_views(&mut self, fd: i32, vm: u32) -> Result<Vec<crate::batch::View>, Errno> {
        let (_, file) = self.xe_file(fd)?;
        let mappings: Vec<(u64, Mapping)> = file
            .vms
            .get(&vm)
            .ok_or(libc::EINVAL)?
            .mappings
            .iter()
            .map(|(&s, &m)| (s, m))
            .collect();
        Ok(mappings
            .into_iter()
            .map(|(start, m)| {
                let size = m.end - start;
                let cpu = match m.target {
                    Target::Object(object, offset) => self.cpu_view(object).and_then(|(a, l)| {
                        let offset = usize::try_from(offset).ok()?;
                        (offset < l).then(|| (a + offset, (l - offset).min(size as usize)))
                    }),
                    Target::Userptr(address) => Some((address as usize, size as usize)),
                    Target::Null => None,
                };
                crate::batch::View {
                    gpu_address: start,
                    size,
                    cpu,
                }
            })
            .collect())
    }

    /// `DRM_IOCTL_XE_EXEC_QUEUE_CREATE` on `vm` (0 for a bind queue).
    pub fn xe_queue_create(&mut self, fd: i32, vm: u32, class: u16) -> Result<u32, Errno> {
        let (_, file) = self.xe_file(fd)?;
        if class != clmulti_drm_uapi::DRM_XE_ENGINE_CLASS_VM_BIND || vm != 0 {
            file.vms.get_mut(&vm).ok_or(libc::ENOENT)?.queues += 1;
        }
        file.next_queue += 1;
        let id = file.next_queue;
        file.queues.insert(id, Queue { vm, class });
        self.counts.xe.exec_queues.up();
        Ok(id)
    }

    /// `DRM_IOCTL_XE_EXEC_QUEUE_DESTROY`.
    pub fn xe_queue_destroy(&mut self, fd: i32, queue: u32) -> Result<(), Errno> {
        let (_, file) = self.xe_file(fd)?;
        let q = file.queues.remove(&queue).ok_or(libc::ENOENT)?;
        if let Some(vm) = file.vms.get_mut(&q.vm) {
            vm.queues = vm.queues.saturating_sub(1);
        }
        self.counts.xe.exec_queues.down();
        Ok(())
    }

    /// An exec queue's VM and engine class.
    pub fn xe_queue(&mut self, fd: i32, queue: u32) -> Result<(u32, u16), Errno> {
        let (_, file) = self.xe_file(fd)?;
        let q = file.queues.get(&queue).ok_or(libc::ENOENT)?;
        Ok((q.vm, q.class))
    }

    /// A submission completed.
    pub fn xe_executed(&mut self, post_sync_writes: u64) {
        self.counts.xe.execs += 1;
        self.counts.post_sync_writes += post_sync_writes;
    }

    /// A user fence was written.
    pub fn xe_fence_written(&mut self) {
        self.counts.xe.user_fence_writes += 1;
    }

    /// A `MADVISE` was accepted.
    pub fn xe_advised(&mut self) {
        self.counts.xe.madvises += 1;
    }

    /// `DRM_IOCTL_SYNCOBJ_CREATE`.
    pub fn syncobj_create(&mut self, fd: i32, signaled: bool) -> Result<u32, Errno> {
        let (_, file) = self.xe_file(fd)?;
        file.next_syncobj += 1;
        let id = file.next_syncobj;
        file.syncobjs.insert(id, Syncobj { signaled, point: 0 });
        self.counts.xe.syncobjs.up();
        Ok(id)
    }

    /// `DRM_IOCTL_SYNCOBJ_DESTROY`.
    pub fn syncobj_destroy(&mut self, fd: i32, handle: u32) -> Result<(), Errno> {
        let (_, file) = self.xe_file(fd)?;
        file.syncobjs.remove(&handle).ok_or(libc::EINVAL)?;
        self.counts.xe.syncobjs.down();
        Ok(())
    }

    /// A syncobj to read or change (`EINVAL` for an unknown handle, as the kernel's
    /// `drm_syncobj_find` callers answer; `ENOENT` for the wait calls is theirs).
    pub fn syncobj(&mut self, fd: i32, handle: u32) -> Result<&mut Syncobj, Errno> {
        let (_, file) = self.xe_file(fd)?;
        file.syncobjs.get_mut(&handle).ok_or(libc::EINVAL)
    }

    /// Everything a closed file held in xe: its VMs' mappings, its queues, its
    /// syncobjs (its handles are dropped by [`Driver::forget`]).
    pub(super) fn xe_forget(&mut self, file: u64) {
        let Some(state) = self.xe.files.remove(&file) else {
            return;
        };
        self.counts.vms.live = self.counts.vms.live.saturating_sub(state.vms.len() as u64);
        let queues = state.queues.len() as u64;
        self.counts.xe.exec_queues.live = self.counts.xe.exec_queues.live.saturating_sub(queues);
        let syncobjs = state.syncobjs.len() as u64;
        self.counts.xe.syncobjs.live = self.counts.xe.syncobjs.live.saturating_sub(syncobjs);
        for vm in state.vms.into_values() {
            for mapping in vm.mappings.into_values() {
                self.unmapped_target(mapping.target);
            }
        }
        self.xe.private.retain(|_, (f, _)| *f != file);
    }
}
