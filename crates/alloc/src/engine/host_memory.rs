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

/// Address space held back while the loop runs and given back when it ends: a run
/// whose runtime used all `RLIMIT_AS` allows (a scenario's `[limits] as`, studied)
/// still has room to take its last sample and write its report, which otherwise
/// dies allocating (SIGABRT, the result lost) as the heap happens to lie.
pub(crate) struct Headroom(Option<(*mut libc::c_void, usize)>);

impl Headroom {
    /// How much: the report of a run with thousands of samples, with room to spare.
    const BYTES: usize = 4 << 20;

    /// Reserves it (mapped without access, never touched); none when it cannot be.
    pub fn reserve() -> Self {
        // SAFETY: an anonymous mapping at an address the kernel chooses.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::BYTES,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        Headroom((ptr != libc::MAP_FAILED).then_some((ptr, Self::BYTES)))
    }
}

impl Drop for Headroom {
    fn drop(&mut self) {
        if let Some((ptr, len)) = self.0 {
            // SAFETY: mapped in `reserve` with this length, unmapped once.
            unsafe { libc::munmap(ptr, len) };
        }
    }
}
