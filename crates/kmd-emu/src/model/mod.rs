//! The kernel driver's state, as i915 keeps it: open files (each a DRM client with its
//! own handle table, VMs and contexts), GEM objects (shared between files by PRIME),
//! memory regions, and the counts the emulation reports. No libc calls here: the
//! interposer ([`crate::preload`]) makes descriptors and mappings and tells the model.
//!
//! Rules taken from the kernel (drivers/gpu/drm/i915, drm_prime.c, drm_gem.c):
//! - an object lives while a handle, a dma-buf or a CPU mapping refers to it;
//! - handles are per file, nonzero, and importing an object a file already holds
//!   returns the handle it has;
//! - sizes round up to the region's page (4 KiB system, 64 KiB device memory on DG2),
//!   and an object larger than its region is refused at creation (`E2BIG`);
//! - pages are taken when the object is first used (bound for execution or mapped),
//!   not at creation; device memory in use evicts idle objects to system memory
//!   before anything fails (TTM), and only a working set larger than the region fails
//!   (`ENOSPC`).

mod objects;

mod contexts;
mod maps;
mod xe;
mod xe_memory;

pub use xe::{BindOp, Syncobj, Target, XeCounts, XeCreate};
pub use xe_memory::XeClientUsage;

use crate::config::Config;
use std::collections::{BTreeMap, HashMap};

/// An errno value.
pub type Errno = i32;
/// An object's identity across files.
pub type ObjectId = u64;

/// Where an object's pages live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    /// System memory (`system0`).
    System,
    /// The device's own memory (`local0`).
    Local,
}

impl Region {
    /// i915's name for the region in fdinfo.
    pub fn name(self) -> &'static str {
        match self {
            Region::System => "system0",
            Region::Local => "local0",
        }
    }

    fn page(self) -> u64 {
        match self {
            Region::System => 4 << 10,
            Region::Local => 64 << 10,
        }
    }
}

/// What made an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `GEM_CREATE` / `GEM_CREATE_EXT`.
    Created,
    /// `GEM_USERPTR`: the process's own pages at this address.
    Userptr(u64),
}

#[derive(Debug)]
struct Object {
    device: usize,
    region: Region,
    size: u64,
    origin: Origin,
    /// Handles in files, open dma-bufs, CPU mappings, mappings bound in xe VMs: the
    /// object's references.
    handles: u32,
    dmabufs: u32,
    mappings: u32,
    binds: u32,
    /// Created with xe's `DEFER_BACKING`.
    deferred: bool,
    resident: bool,
    /// Last use for execution (eviction order).
    last_use: u64,
    mmap_offset: Option<u64>,
    /// `SET_TILING`'s mode and stride (integrated parts with fence registers).
    tiling: (u32, u32),
    /// A userptr object's pages pinned by a submission; whether it is read-only.
    pinned: bool,
    read_only: bool,
}

impl Object {
    fn referenced(&self) -> bool {
        self.handles + self.dmabufs + self.mappings + self.binds > 0
    }
}

#[derive(Debug)]
struct File {
    device: usize,
    client_id: u64,
    /// Descriptors naming this open file (dup'ed ones too).
    fds: u32,
    handles: BTreeMap<u32, ObjectId>,
    /// The same table the other way round: the handle of an object in this file.
    by_object: HashMap<ObjectId, u32>,
    next_handle: u32,
    vms: Vec<u32>,
    contexts: BTreeMap<u32, u32>,
    next_vm: u32,
    next_context: u32,
}

/// Per device and region: live objects, their bytes and their resident bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionCounts {
    /// Live objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes with pages taken.
    pub resident_bytes: u64,
    /// Objects ever created here.
    pub created: u64,
    /// Live objects created with xe's `DEFER_BACKING` (pages at first bind).
    pub deferred: u64,
}

/// A live figure and its total since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Now.
    pub live: u64,
    /// Ever.
    pub total: u64,
}

impl Tally {
    fn up(&mut self) {
        self.live += 1;
        self.total += 1;
    }
    fn down(&mut self) {
        self.live = self.live.saturating_sub(1);
    }
}

/// What the emulated driver has done for this process, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Per device, per region.
    pub regions: BTreeMap<(usize, Region), RegionCounts>,
    /// CPU mappings of objects (`mmap` of an offset from `GEM_MMAP_OFFSET`).
    pub maps: Tally,
    /// dma-buf descriptors from `PRIME_HANDLE_TO_FD`.
    pub exports: Tally,
    /// Handles from `PRIME_FD_TO_HANDLE` to an object of another device.
    pub imports: Tally,
    /// Objects over the process's own pages (`GEM_USERPTR`).
    pub userptrs: Tally,
    /// Their bytes (live): of the system region's bytes, those that are the
    /// process's own memory, already in its RSS once touched.
    pub userptr_bytes: u64,
    /// Open render-node files.
    pub files: Tally,
    /// Address spaces (`GEM_VM_CREATE`).
    pub vms: Tally,
    /// Contexts (`GEM_CONTEXT_CREATE_EXT`).
    pub contexts: Tally,
    /// `EXECBUFFER2` submissions completed.
    pub execbuffers: u64,
    /// Post-sync writes performed for them.
    pub post_sync_writes: u64,
    /// Objects moved out of device memory to make room.
    pub evictions: u64,
    /// ioctls that returned an error.
    pub failed_ioctls: u64,
    /// xe's VMs, binds, exec queues and syncobjs.
    pub xe: XeCounts,
}

/// The emulated i915 driver of one process.
#[derive(Debug)]
pub struct Driver {
    /// What it presents.
    pub config: Config,
    files: HashMap<u64, File>,
    /// Descriptor -> open file.
    file_fds: HashMap<i32, u64>,
    /// dma-buf descriptor -> object.
    dmabuf_fds: HashMap<i32, ObjectId>,
    objects: HashMap<ObjectId, Object>,
    offsets: HashMap<u64, ObjectId>,
    /// Live CPU mappings: start address -> (object, length).
    mappings: BTreeMap<usize, (ObjectId, usize)>,
    /// The same, by object: its mappings' start addresses.
    mappings_of: HashMap<ObjectId, Vec<usize>>,
    next_file: u64,
    next_object: ObjectId,
    next_offset: u64,
    clock: u64,
    counts: Counts,
    xe: xe::XeState,
}

/// The object an execution names, with the GPU address the caller pinned it at.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// The object.
    pub object: ObjectId,
    /// Its GPU virtual address (softpin).
    pub gpu_address: u64,
    /// Its size.
    pub size: u64,
}

impl Driver {
    /// A driver with no open files.
    pub fn new(config: Config) -> Self {
        let mut counts = Counts::default();
        for device in &config.devices {
            for region in [Region::System, Region::Local] {
                counts
                    .regions
                    .insert((device.index, region), RegionCounts::default());
            }
        }
        Self {
            config,
            files: HashMap::new(),
            file_fds: HashMap::new(),
            dmabuf_fds: HashMap::new(),
            objects: HashMap::new(),
            offsets: HashMap::new(),
            mappings: BTreeMap::new(),
            mappings_of: HashMap::new(),
            next_file: 1,
            next_object: 1,
            // Fake offsets start above any real file's size, page-aligned.
            next_offset: 1 << 32,
            clock: 0,
            counts,
            xe: xe::XeState::default(),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Notes a failed ioctl.
    pub fn failed(&mut self) {
        self.counts.failed_ioctls += 1;
    }

    /// The device an open render-node descriptor belongs to.
    pub fn device_of(&self, fd: i32) -> Option<usize> {
        let file = self.file_fds.get(&fd)?;
        self.files.get(file).map(|f| f.device)
    }

    /// Whether `fd` is a dma-buf this driver exported.
    pub fn is_dmabuf(&self, fd: i32) -> bool {
        self.dmabuf_fds.contains_key(&fd)
    }

    /// Some exported dma-buf descriptor, if any is open.
    pub fn any_dmabuf(&self) -> Option<i32> {
        self.dmabuf_fds.keys().next().copied()
    }

    /// A render node of `device` was opened as `fd`: a new DRM client.
    pub fn open(&mut self, fd: i32, device: usize) {
        let id = self.next_file;
        self.next_file += 1;
        self.files.insert(
            id,
            File {
                device,
                client_id: id,
                fds: 1,
                handles: BTreeMap::new(),
                by_object: HashMap::new(),
                next_handle: 1,
                vms: Vec::new(),
                contexts: BTreeMap::new(),
                next_vm: 1,
                next_context: 1,
            },
        );
        self.file_fds.insert(fd, id);
        self.counts.files.up();
    }

    /// `new` now names what `old` names (dup).
    pub fn dup(&mut self, old: i32, new: i32) {
        if let Some(&file) = self.file_fds.get(&old) {
            self.forget(new);
            self.file_fds.insert(new, file);
            if let Some(f) = self.files.get_mut(&file) {
                f.fds += 1;
            }
        } else if let Some(&object) = self.dmabuf_fds.get(&old) {
            self.forget(new);
            self.dmabuf_fds.insert(new, object);
            if let Some(o) = self.objects.get_mut(&object) {
                o.dmabufs += 1;
            }
        }
    }

    /// `fd` was closed (or is about to be reused): drop what it held.
    pub fn forget(&mut self, fd: i32) {
        if let Some(file) = self.file_fds.remove(&fd) {
            let last = self.files.get_mut(&file).is_some_and(|f| {
                f.fds -= 1;
                f.fds == 0
            });
            if last {
                if let Some(f) = self.files.remove(&file) {
                    for (_, object) in f.handles {
                        self.drop_handle(object, f.device);
                    }
                    self.counts.vms.live = self.counts.vms.live.saturating_sub(f.vms.len() as u64);
                    self.counts.contexts.live = self
                        .counts
                        .contexts
                        .live
                        .saturating_sub(f.contexts.len() as u64);
                }
                self.xe_forget(file);
                self.counts.files.down();
            }
        } else if let Some(object) = self.dmabuf_fds.remove(&fd) {
            if let Some(o) = self.objects.get_mut(&object) {
                o.dmabufs -= 1;
            }
            self.counts.exports.down();
            self.release_if_unreferenced(object);
        }
    }

    fn file(&mut self, fd: i32) -> Result<&mut File, Errno> {
        let id = self.file_fds.get(&fd).ok_or(libc::EBADF)?;
        self.files.get_mut(id).ok_or(libc::EBADF)
    }

    fn lookup(&mut self, fd: i32, handle: u32) -> Result<ObjectId, Errno> {
        self.file(fd)?
            .handles
            .get(&handle)
            .copied()
            .ok_or(libc::ENOENT)
    }

    fn add_handle(&mut self, fd: i32, object: ObjectId) -> Result<u32, Errno> {
        let file = self.file(fd)?;
        if let Some(&handle) = file.by_object.get(&object) {
            return Ok(handle);
        }
        let handle = file.next_handle;
        file.next_handle += 1;
        file.handles.insert(handle, object);
        file.by_object.insert(object, handle);
        let device = file.device;
        if let Some(o) = self.objects.get_mut(&object) {
            o.handles += 1;
            if o.device != device {
                self.counts.imports.up();
            }
        }
        Ok(handle)
    }

    fn drop_handle(&mut self, object: ObjectId, file_device: usize) {
        if let Some(o) = self.objects.get_mut(&object) {
            o.handles -= 1;
            if o.device != file_device {
                self.counts.imports.down();
            }
        }
        self.release_if_unreferenced(object);
    }

    fn release_if_unreferenced(&mut self, object: ObjectId) {
        let Some(o) = self.objects.get(&object) else {
            return;
        };
        if o.referenced() {
            return;
        }
        let o = self.objects.remove(&object).expect("looked up above");
        if let Some(offset) = o.mmap_offset {
            self.offsets.remove(&offset);
        }
        let region = self.counts.regions.entry((o.device, o.region)).or_default();
        region.objects -= 1;
        region.bytes -= o.size;
        if o.deferred {
            region.deferred -= 1;
        }
        if o.resident {
            region.resident_bytes -= o.size;
        }
        if matches!(o.origin, Origin::Userptr(_)) {
            self.counts.userptrs.down();
            self.counts.userptr_bytes -= o.size;
        }
    }

    /// `PRIME_HANDLE_TO_FD`, first half: the object to export. The caller makes the
    /// descriptor (a real one, so it counts against `RLIMIT_NOFILE` as the kernel's
    /// does) and then calls [`Driver::exported`].
    pub fn export(&mut self, fd: i32, handle: u32) -> Result<ObjectId, Errno> {
        self.lookup(fd, handle)
    }

    /// The dma-buf descriptor `dmabuf` now refers to `object`.
    pub fn exported(&mut self, object: ObjectId, dmabuf: i32) {
        if let Some(o) = self.objects.get_mut(&object) {
            o.dmabufs += 1;
        }
        self.dmabuf_fds.insert(dmabuf, object);
        self.counts.exports.up();
    }

    /// `PRIME_FD_TO_HANDLE`: a handle in `fd`'s file to the dma-buf's object.
    pub fn import(&mut self, fd: i32, dmabuf: i32) -> Result<u32, Errno> {
        let object = *self.dmabuf_fds.get(&dmabuf).ok_or(libc::EBADF)?;
        self.add_handle(fd, object)
    }

    /// Where the CPU sees the object's memory (a mapping or the userptr pages).
    pub fn cpu_view(&self, object: ObjectId) -> Option<(usize, usize)> {
        let o = self.objects.get(&object)?;
        match o.origin {
            Origin::Userptr(address) => Some((address as usize, o.size as usize)),
            Origin::Created => self.mapping_of(object),
        }
    }

    /// The user pages a submission of `bound` pins for the first time, as `(address,
    /// size, writable)`: i915 pins a userptr object's pages when it is first submitted
    /// (i915_gem_object_userptr_submit_init: pin_user_pages_fast, FOLL_WRITE unless
    /// read-only), which faults them into the process: its RSS and memory cgroup grow.
    pub fn pin_userptrs(&mut self, bound: &[Bound]) -> Vec<(u64, u64, bool)> {
        let mut pins = Vec::new();
        for b in bound {
            if let Some(o) = self.objects.get_mut(&b.object) {
                if let (Origin::Userptr(address), false) = (o.origin, o.pinned) {
                    o.pinned = true;
                    pins.push((address, o.size, !o.read_only));
                }
            }
        }
        pins
    }

    /// `EXECBUFFER2`: the objects it names, made resident (device memory evicting
    /// idle objects first). Errors as the kernel's: an unknown handle `ENOENT`, a
    /// working set larger than a region `ENOSPC`.
    pub fn execute(&mut self, fd: i32, named: &[(u32, u64)]) -> Result<Vec<Bound>, Errno> {
        let mut bound = Vec::with_capacity(named.len());
        for &(handle, gpu_address) in named {
            let object = self.lookup(fd, handle)?;
            let size = self.objects.get(&object).map_or(0, |o| o.size);
            bound.push(Bound {
                object,
                gpu_address,
                size,
            });
        }
        self.clock += 1;
        let now = self.clock;
        for b in &bound {
            if let Some(o) = self.objects.get_mut(&b.object) {
                o.last_use = now;
            }
        }
        for b in &bound {
            self.make_resident(b.object, now)?;
        }
        self.counts.execbuffers += 1;
        Ok(bound)
    }

    /// A post-sync write was carried out for a submission.
    pub fn post_sync_written(&mut self) {
        self.counts.post_sync_writes += 1;
    }

    /// Takes pages for the object on first use; device memory evicts the least
    /// recently used idle objects when full. Objects used at `busy_since` or later
    /// (the submission in flight) and mapped ones stay.
    fn make_resident(&mut self, object: ObjectId, busy_since: u64) -> Result<(), Errno> {
        if self.config.kernel() == crate::config::Kernel::Xe {
            return self.xe_make_resident(object, busy_since);
        }
        let (device, region, size) = match self.objects.get(&object) {
            Some(o) if !o.resident => (o.device, o.region, o.size),
            _ => return Ok(()),
        };
        let total = self.region_size(device, region);
        let used = |d: &Self| {
            d.counts
                .regions
                .get(&(device, region))
                .map_or(0, |c| c.resident_bytes)
        };
        while used(self) + size > total {
            // The oldest resident object of this region not in the current submission.
            let victim = self
                .objects
                .iter()
                .filter(|(&id, o)| {
                    id != object
                        && o.resident
                        && o.device == device
                        && o.region == region
                        && o.last_use < busy_since
                        && o.mappings == 0
                })
                .min_by_key(|(_, o)| o.last_use)
                .map(|(&id, _)| id);
            let Some(victim) = victim else {
                return Err(libc::ENOSPC);
            };
            let o = self.objects.get_mut(&victim).expect("found above");
            o.resident = false;
            let counts = self.counts.regions.entry((device, region)).or_default();
            counts.resident_bytes -= o.size;
            self.counts.evictions += 1;
        }
        if let Some(o) = self.objects.get_mut(&object) {
            o.resident = true;
        }
        self.counts
            .regions
            .entry((device, region))
            .or_default()
            .resident_bytes += size;
        Ok(())
    }

    /// The file's fdinfo memory figures per region, as i915 prints them
    /// (`drm-total-`, `drm-shared-`, `drm-resident-`), and its client id and device.
    pub fn client_usage(&self, fd: i32) -> Option<ClientUsage> {
        let file = self.files.get(self.file_fds.get(&fd)?)?;
        let mut usage = ClientUsage {
            device: file.device,
            client_id: file.client_id,
            regions: BTreeMap::new(),
        };
        for object in file.handles.values() {
            let Some(o) = self.objects.get(object) else {
                continue;
            };
            let figures = usage.regions.entry(o.region).or_default();
            figures.total += o.size;
            if o.handles > 1 || o.dmabufs > 0 {
                figures.shared += o.size;
            }
            if o.resident {
                figures.resident += o.size;
            }
        }
        Some(usage)
    }
}

/// One client's memory, as its fdinfo shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientUsage {
    /// The device the file is open on.
    pub device: usize,
    /// `drm-client-id`.
    pub client_id: u64,
    /// Per region.
    pub regions: BTreeMap<Region, MemoryFigures>,
}

/// Bytes of one region in one client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryFigures {
    /// Every object the client holds a handle to.
    pub total: u64,
    /// Those shared with another client or exported.
    pub shared: u64,
    /// Those with pages.
    pub resident: u64,
}

#[cfg(test)]
mod tests;
