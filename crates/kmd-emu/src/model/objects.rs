//! GEM objects: created in a region (or from user memory), their handles closed and
//! checked, and their residency when the GPU touches them.

use super::*;

impl Driver {
    /// `GEM_CREATE_EXT` (or `GEM_CREATE`: `placements` empty means system memory):
    /// a new object of at least `size` bytes; returns its handle and rounded size.
    pub fn create(
        &mut self,
        fd: i32,
        size: u64,
        placements: &[(u16, u16)],
    ) -> Result<(u32, u64), Errno> {
        let device = self.file(fd)?.device;
        if size == 0 {
            return Err(libc::EINVAL);
        }
        // The first placement is where the object starts; i915 also keeps the others
        // as places to migrate to, which this model does not need.
        let region = match placements.first() {
            None => Region::System,
            Some(&(clmulti_drm_uapi::I915_MEMORY_CLASS_SYSTEM, 0)) => Region::System,
            Some(&(clmulti_drm_uapi::I915_MEMORY_CLASS_DEVICE, 0)) => Region::Local,
            Some(_) => return Err(libc::EINVAL),
        };
        // A region the device does not have (device memory on an integrated GPU) is
        // refused as one that does not exist.
        let discrete = self.config.hardware.discrete();
        if placements.iter().any(|&(class, instance)| {
            class > clmulti_drm_uapi::I915_MEMORY_CLASS_DEVICE
                || instance != 0
                || (class == clmulti_drm_uapi::I915_MEMORY_CLASS_DEVICE && !discrete)
        }) {
            return Err(libc::EINVAL);
        }
        let page = placements
            .iter()
            .map(|&(class, _)| {
                if class == clmulti_drm_uapi::I915_MEMORY_CLASS_DEVICE {
                    Region::Local.page()
                } else {
                    Region::System.page()
                }
            })
            .max()
            .unwrap_or(Region::System.page());
        let size = size.checked_next_multiple_of(page).ok_or(libc::E2BIG)?;
        if size > self.region_size(device, region) {
            return Err(libc::E2BIG);
        }
        let object = self.insert_object(device, region, size, Origin::Created);
        let handle = self.add_handle(fd, object)?;
        Ok((handle, size))
    }

    /// `GEM_USERPTR`: an object over the process's own `size` bytes at `address`.
    pub fn userptr(
        &mut self,
        fd: i32,
        address: u64,
        size: u64,
        read_only: bool,
    ) -> Result<u32, Errno> {
        let device = self.file(fd)?.device;
        let page = Region::System.page();
        if size == 0 || address % page != 0 || size % page != 0 {
            return Err(libc::EINVAL);
        }
        let object = self.insert_object(device, Region::System, size, Origin::Userptr(address));
        if let Some(o) = self.objects.get_mut(&object) {
            o.read_only = read_only;
        }
        // The process's pages are there already: resident from the start.
        self.make_resident(object, self.clock + 1)?;
        self.counts.userptrs.up();
        self.counts.userptr_bytes += size;
        self.add_handle(fd, object)
    }

    pub(super) fn insert_object(
        &mut self,
        device: usize,
        region: Region,
        size: u64,
        origin: Origin,
    ) -> ObjectId {
        let id = self.next_object;
        self.next_object += 1;
        self.objects.insert(
            id,
            Object {
                device,
                region,
                size,
                origin,
                handles: 0,
                dmabufs: 0,
                mappings: 0,
                binds: 0,
                deferred: false,
                resident: false,
                last_use: 0,
                mmap_offset: None,
                tiling: (0, 0),
                pinned: false,
                read_only: false,
            },
        );
        let counts = self.counts.regions.entry((device, region)).or_default();
        counts.objects += 1;
        counts.bytes += size;
        counts.created += 1;
        id
    }

    /// Marks a new object as created with xe's `DEFER_BACKING`.
    pub(super) fn set_deferred(&mut self, object: ObjectId) {
        if let Some(o) = self.objects.get_mut(&object) {
            o.deferred = true;
            let counts = self.counts.regions.entry((o.device, o.region)).or_default();
            counts.deferred += 1;
        }
    }

    /// Moves an object without pages to another region of its device (TTM's next
    /// placement when the first has no room).
    pub(super) fn move_to(&mut self, object: ObjectId, region: Region) {
        let Some(o) = self.objects.get_mut(&object) else {
            return;
        };
        if o.resident || o.region == region {
            return;
        }
        let old = self.counts.regions.entry((o.device, o.region)).or_default();
        old.objects -= 1;
        old.bytes -= o.size;
        if o.deferred {
            old.deferred -= 1;
        }
        o.region = region;
        let new = self.counts.regions.entry((o.device, region)).or_default();
        new.objects += 1;
        new.bytes += o.size;
        if o.deferred {
            new.deferred += 1;
        }
    }

    pub(super) fn region_size(&self, device: usize, region: Region) -> u64 {
        match region {
            // xe's system memory is TTM's GTT: half the RAM (xe_ttm_sys_mgr.c).
            Region::System if self.config.kernel() == crate::config::Kernel::Xe => {
                self.config.system_bytes / 2
            }
            Region::System => self.config.system_bytes,
            Region::Local => self.config.devices.get(device).map_or(0, |d| d.local_bytes),
        }
    }

    /// `GEM_CLOSE`.
    pub fn close_handle(&mut self, fd: i32, handle: u32) -> Result<(), Errno> {
        let file = self.file(fd)?;
        let device = file.device;
        let object = file.handles.remove(&handle).ok_or(libc::EINVAL)?;
        file.by_object.remove(&object);
        self.drop_handle(object, device);
        Ok(())
    }

    /// Whether `handle` names an object in `fd`'s file (`ENOENT` if not).
    pub fn check_handle(&mut self, fd: i32, handle: u32) -> Result<(), Errno> {
        self.lookup(fd, handle).map(|_| ())
    }

    /// `GEM_SET_DOMAIN`: i915 takes the object's pages to move it to a domain.
    pub fn touch(&mut self, fd: i32, handle: u32) -> Result<(), Errno> {
        let object = self.lookup(fd, handle)?;
        self.make_resident(object, self.clock + 1)
    }

    /// `SET_TILING` (i915_gem_set_tiling_ioctl, on parts with fence registers): the mode
    /// and stride the kernel accepts, kept for `GET_TILING`; returns the stride kept
    /// (none for linear).
    pub fn set_tiling(
        &mut self,
        fd: i32,
        handle: u32,
        mode: u32,
        stride: u32,
    ) -> Result<u32, Errno> {
        let object = self.lookup(fd, handle)?;
        // i915_tiling_ok: X tiles are 512 bytes wide, Y tiles 128; a fence covers at
        // most 256 KiB of pitch (Gen7 and later).
        let width = match mode {
            clmulti_drm_uapi::I915_TILING_NONE => 0,
            clmulti_drm_uapi::I915_TILING_X => 512,
            clmulti_drm_uapi::I915_TILING_Y => 128,
            _ => return Err(libc::EINVAL),
        };
        if width > 0 && (stride < width || stride % width != 0 || stride > 256 << 10) {
            return Err(libc::EINVAL);
        }
        let o = self.objects.get_mut(&object).ok_or(libc::ENOENT)?;
        if matches!(o.origin, Origin::Userptr(_)) {
            return Err(libc::ENXIO);
        }
        let stride = if width == 0 { 0 } else { stride };
        o.tiling = (mode, stride);
        Ok(stride)
    }

    /// `GET_TILING`: the mode `SET_TILING` left (linear when never set).
    pub fn tiling(&mut self, fd: i32, handle: u32) -> Result<u32, Errno> {
        let object = self.lookup(fd, handle)?;
        Ok(self.objects.get(&object).map_or(0, |o| o.tiling.0))
    }
}
