//! Host memory the engine owns for `USE_HOST_PTR` / `COPY_HOST_PTR` buffers.

/// A zeroed, page-aligned block, freed on drop.
pub(crate) struct HostBlock {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl HostBlock {
    /// `None` when the allocator refuses (e.g. under `RLIMIT_AS`).
    pub fn new(size: u64) -> Option<Self> {
        let layout = std::alloc::Layout::from_size_align(usize::try_from(size).ok()?, 4096).ok()?;
        if layout.size() == 0 {
            return None;
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(HostBlock { ptr, layout })
    }

    /// The block's start, for a buffer's host pointer.
    pub fn as_ptr(&self) -> *mut std::ffi::c_void {
        self.ptr.cast()
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}
