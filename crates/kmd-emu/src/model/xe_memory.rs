//! Where xe's objects have their pages: TTM's placement and eviction as the model
//! keeps them, and a client's memory as xe's fdinfo shows it.

use super::*;

impl Driver {
    /// Pages for an object, as TTM gives them on xe: VRAM full evicts the objects that
    /// took their pages first (TTM: least recently used) to system memory (GTT), or out
    /// of both when GTT is full too (TTM would swap them to shmem); only an object that
    /// finds no room anywhere fails (`ENOSPC`). GTT full fails a system-memory object
    /// (`ENOMEM`, TTM's page limit). Objects used at `busy_since` or later and mapped
    /// ones stay.
    pub(super) fn xe_make_resident(
        &mut self,
        object: ObjectId,
        busy_since: u64,
    ) -> Result<(), Errno> {
        let (device, region, size) = match self.objects.get(&object) {
            Some(o) if !o.resident => (o.device, o.region, o.size),
            _ => return Ok(()),
        };
        let total = self.region_size(device, region);
        let used = |d: &Self, region| {
            d.counts
                .regions
                .get(&(device, region))
                .map_or(0, |c| c.resident_bytes)
        };
        if used(self, region) + size > total && region == Region::System {
            return Err(libc::ENOMEM);
        }
        let mut skipped = Vec::new();
        while used(self, region) + size > total {
            let Some(victim) = self.xe_next_victim(device, object, busy_since, &mut skipped) else {
                self.xe
                    .vram_order
                    .entry(device)
                    .or_default()
                    .extend(skipped);
                return Err(libc::ENOSPC);
            };
            self.xe_evict(victim, device);
        }
        let order = self.xe.vram_order.entry(device).or_default();
        for s in skipped.into_iter().rev() {
            order.push_front(s);
        }
        self.set_resident(object, device, region, size);
        if region == Region::Local {
            self.xe
                .vram_order
                .entry(device)
                .or_default()
                .push_back(object);
        }
        Ok(())
    }

    fn set_resident(&mut self, object: ObjectId, device: usize, region: Region, size: u64) {
        if let Some(o) = self.objects.get_mut(&object) {
            o.resident = true;
        }
        self.counts
            .regions
            .entry((device, region))
            .or_default()
            .resident_bytes += size;
    }

    /// The first object in VRAM order that can go; those that cannot stay set aside.
    fn xe_next_victim(
        &mut self,
        device: usize,
        object: ObjectId,
        busy_since: u64,
        skipped: &mut Vec<ObjectId>,
    ) -> Option<ObjectId> {
        let order = self.xe.vram_order.entry(device).or_default();
        while let Some(id) = order.pop_front() {
            let Some(o) = self.objects.get(&id) else {
                continue;
            };
            if !o.resident || o.region != Region::Local || id == object {
                continue;
            }
            if o.last_use >= busy_since || o.mappings > 0 {
                skipped.push(id);
                continue;
            }
            return Some(id);
        }
        None
    }

    /// Moves a VRAM object's pages to GTT, or drops them when GTT has no room.
    fn xe_evict(&mut self, victim: ObjectId, device: usize) {
        let size = self.objects.get(&victim).map_or(0, |o| o.size);
        self.counts.evictions += 1;
        self.counts
            .regions
            .entry((device, Region::Local))
            .or_default()
            .resident_bytes -= size;
        if let Some(o) = self.objects.get_mut(&victim) {
            o.resident = false;
        }
        self.move_to(victim, Region::System);
        let gtt = self
            .counts
            .regions
            .get(&(device, Region::System))
            .map_or(0, |c| c.resident_bytes);
        if gtt + size <= self.region_size(device, Region::System) {
            self.set_resident(victim, device, Region::System, size);
        }
    }
}

impl Region {
    /// xe's name for where an object with pages in this region is (fdinfo, counts):
    /// system memory is TTM's `gtt`, device memory `vram0`.
    pub fn xe_name(self) -> &'static str {
        match self {
            Region::System => "gtt",
            Region::Local => "vram0",
        }
    }
}

/// One xe client's memory as its fdinfo shows it, by xe's memory types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XeClientUsage {
    /// The device the file is open on.
    pub device: usize,
    /// `drm-client-id`.
    pub client_id: u64,
    /// Per memory type (`system`, `gtt`, `vram0`).
    pub regions: BTreeMap<&'static str, MemoryFigures>,
}

impl Driver {
    /// The file's fdinfo memory figures as xe counts them (xe_drm_client.c): each
    /// object under the memory type it is in; one without pages under `system`, one
    /// imported from another device under `gtt` (xe's own object over the exporter's
    /// pages); shared when another handle or a dma-buf refers to it.
    pub fn xe_client_usage(&self, fd: i32) -> Option<XeClientUsage> {
        let file = self.files.get(self.file_fds.get(&fd)?)?;
        let mut usage = XeClientUsage {
            device: file.device,
            client_id: file.client_id,
            regions: BTreeMap::new(),
        };
        for object in file.handles.values() {
            let Some(o) = self.objects.get(object) else {
                continue;
            };
            let imported = o.device != file.device;
            let kind = match (imported, o.resident) {
                (true, _) => "gtt",
                (false, false) => "system",
                (false, true) => o.region.xe_name(),
            };
            let figures = usage.regions.entry(kind).or_default();
            figures.total += o.size;
            if o.handles > 1 || o.dmabufs > 0 || imported {
                figures.shared += o.size;
            }
            if o.resident {
                figures.resident += o.size;
            }
        }
        Some(usage)
    }
}
