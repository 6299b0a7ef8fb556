//! CPU mappings of GEM objects: the fake offsets `mmap` takes, and which object an
//! address range maps, as i915 keeps them.

use super::*;

impl Driver {
    /// `GEM_MMAP_OFFSET`: the fake offset `mmap` takes for this object.
    pub fn mmap_offset(&mut self, fd: i32, handle: u32) -> Result<u64, Errno> {
        let object = self.lookup(fd, handle)?;
        let next = self.next_offset;
        let o = self.objects.get_mut(&object).ok_or(libc::ENOENT)?;
        if matches!(o.origin, Origin::Userptr(_)) {
            // i915 refuses to map userptr objects through an offset.
            return Err(libc::ENODEV);
        }
        if let Some(offset) = o.mmap_offset {
            return Ok(offset);
        }
        o.mmap_offset = Some(next);
        self.next_offset += o.size.next_multiple_of(4096).max(4096);
        self.offsets.insert(next, object);
        Ok(next)
    }

    /// The object `mmap(fd, offset)` maps, and its size. The offset is valid through
    /// any file that holds a handle to it, as the kernel's per-file VMA permission.
    pub fn object_at_offset(&mut self, fd: i32, offset: u64) -> Result<(ObjectId, u64), Errno> {
        let object = *self.offsets.get(&offset).ok_or(libc::EACCES)?;
        if !self.file(fd)?.by_object.contains_key(&object) {
            return Err(libc::EACCES);
        }
        let size = self.objects.get(&object).map_or(0, |o| o.size);
        Ok((object, size))
    }

    /// The object behind a dma-buf descriptor, and its size.
    pub fn object_of_dmabuf(&self, fd: i32) -> Option<(ObjectId, u64)> {
        let object = *self.dmabuf_fds.get(&fd)?;
        Some((object, self.objects.get(&object)?.size))
    }

    /// An existing CPU mapping of `object` (start, length): a new mapping aliases it.
    pub fn mapping_of(&self, object: ObjectId) -> Option<(usize, usize)> {
        let start = *self.mappings_of.get(&object)?.first()?;
        self.mappings.get(&start).map(|&(_, len)| (start, len))
    }

    /// `object` is now mapped at `start` for `len` bytes. Its pages come with the
    /// first touch (real shared memory here, a page fault in the kernel), which the
    /// driver does not see: a mapping alone makes nothing resident.
    pub fn mapped(&mut self, object: ObjectId, start: usize, len: usize) {
        if let Some(o) = self.objects.get_mut(&object) {
            o.mappings += 1;
        }
        if let Some((old, _)) = self.mappings.insert(start, (object, len)) {
            // MAP_FIXED over an older mapping of ours replaced it.
            self.forget_mapping(old, start);
            self.unmap_object(old);
        }
        self.mappings_of.entry(object).or_default().push(start);
        self.counts.maps.up();
    }

    /// `[start, start + len)` was unmapped: mappings inside it end.
    pub fn unmapped(&mut self, start: usize, len: usize) {
        let end = start.saturating_add(len);
        // Mappings do not overlap: those starting inside the range, and the one before
        // it when it reaches in.
        let mut inside = Vec::new();
        for (&s, &(_, l)) in self.mappings.range(..end).rev() {
            if s + l > start {
                inside.push(s);
            }
            if s <= start {
                break;
            }
        }
        for s in inside {
            if let Some((object, _)) = self.mappings.remove(&s) {
                self.forget_mapping(object, s);
                self.unmap_object(object);
            }
        }
    }

    fn forget_mapping(&mut self, object: ObjectId, start: usize) {
        if let Some(starts) = self.mappings_of.get_mut(&object) {
            starts.retain(|&s| s != start);
            if starts.is_empty() {
                self.mappings_of.remove(&object);
            }
        }
    }

    /// Whether any object is mapped (a cheap check before [`Driver::unmapped`]).
    pub fn has_mappings(&self) -> bool {
        !self.mappings.is_empty()
    }

    fn unmap_object(&mut self, object: ObjectId) {
        if let Some(o) = self.objects.get_mut(&object) {
            o.mappings -= 1;
        }
        self.counts.maps.down();
        self.release_if_unreferenced(object);
    }
}
