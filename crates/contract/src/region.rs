//! A region of memory of its own for an allocator that must leave the C library's
//! heap as it is: blocks carved from one reserved mapping, one after the other, and
//! the whole region used again from its start once every block is freed.
//!
//! Why: a runtime that frees its buffers' small objects leaves them in glibc's fast
//! bins, and the next allocation of 1 KiB or more, or a free that merges into the top
//! of the heap, has glibc consolidate every one of them first (100 000 PoCL buffers:
//! about 9 ms, measured). A program that measures the runtime, and the libraries it
//! preloads to do so, should not pay that for it, nor move the heap the runtime sees.
//! clmulti's process allocates here after release (`clmulti_alloc::own_heap`); the
//! tracer builds its answers here (`clmulti-trace`).
//!
//! The mapping is reserved with a raw `mmap` system call (no preloaded library
//! counts it as the runtime's), `MAP_NORESERVE`: address space only, touched as used.
//! Where it cannot be reserved (an address-space limit), or a block does not fit,
//! the caller falls back to the C library.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// The offset's bits in the state word; the live blocks count above them.
const OFFSET_BITS: u32 = 40;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
const ONE_BLOCK: u64 = 1 << OFFSET_BITS;

/// Not reserved yet, being reserved, reserved, or refused by the kernel.
const UNRESERVED: u8 = 0;
const RESERVING: u8 = 1;
const READY: u8 = 2;
const REFUSED: u8 = 3;

/// One region: a `static` of the allocator that uses it.
#[derive(Debug)]
pub struct Region {
    size: usize,
    reserved: AtomicU8,
    base: AtomicUsize,
    /// The live blocks (high bits) and the offset of the next free byte (low bits),
    /// moved together: a block carved while the last one is freed cannot be lost.
    state: AtomicU64,
}

impl Region {
    /// A region of `size` bytes (below 1 TiB), reserved at its first [`reserve`](Self::reserve).
    pub const fn new(size: usize) -> Self {
        Region {
            size,
            reserved: AtomicU8::new(UNRESERVED),
            base: AtomicUsize::new(0),
            state: AtomicU64::new(0),
        }
    }

    /// Reserves the mapping once; whether the region can serve. A thread that
    /// finds another reserving it gets `false` this time.
    pub fn reserve(&self) -> bool {
        match self.reserved.compare_exchange(
            UNRESERVED,
            RESERVING,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {}
            Err(state) => return state == READY,
        }
        // SAFETY: an anonymous private mapping at an address the kernel chooses.
        let at = unsafe {
            libc::syscall(
                libc::SYS_mmap,
                0usize,
                self.size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1i32,
                0usize,
            )
        };
        // The raw call returns -errno on failure.
        if at <= 0 {
            self.reserved.store(REFUSED, Ordering::Release);
            return false;
        }
        self.base.store(at as usize, Ordering::Release);
        self.reserved.store(READY, Ordering::Release);
        true
    }

    /// Whether `ptr` is a block of this region.
    #[inline]
    pub fn contains(&self, ptr: *mut u8) -> bool {
        let base = self.base.load(Ordering::Acquire);
        let at = ptr as usize;
        base != 0 && at >= base && at < base + self.size
    }

    /// A block for `layout`, or `None` when the region is not reserved or full.
    #[inline]
    pub fn alloc(&self, layout: Layout) -> Option<*mut u8> {
        let base = self.base.load(Ordering::Acquire);
        if base == 0 {
            return None;
        }
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let next = base + (state & OFFSET_MASK) as usize;
            let start = next.checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let stop = start.checked_add(layout.size())?;
            if stop > base + self.size {
                return None;
            }
            let new = (state & !OFFSET_MASK) + ONE_BLOCK + (stop - base) as u64;
            match self
                .state
                .compare_exchange_weak(state, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(start as *mut u8),
                Err(seen) => state = seen,
            }
        }
    }

    /// A zeroed block (the region is used again once empty: not every byte is fresh).
    #[inline]
    pub fn alloc_zeroed(&self, layout: Layout) -> Option<*mut u8> {
        let block = self.alloc(layout)?;
        // SAFETY: `block` is `layout.size()` bytes of the region, the caller's now.
        unsafe { block.write_bytes(0, layout.size()) };
        Some(block)
    }

    /// Frees a block of this region; the last one frees the whole region.
    #[inline]
    pub fn free(&self) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let blocks = state >> OFFSET_BITS;
            let new = if blocks <= 1 { 0 } else { state - ONE_BLOCK };
            match self
                .state
                .compare_exchange_weak(state, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(seen) => state = seen,
            }
        }
    }

    /// Grows (or shrinks) `ptr`, of `old` bytes, to `new` bytes where it is: only the
    /// last block can, and only within the region.
    #[inline]
    pub fn resize_in_place(&self, ptr: *mut u8, old: usize, new: usize) -> bool {
        let base = self.base.load(Ordering::Acquire);
        let (old_stop, new_stop) = (ptr as usize + old, ptr as usize + new);
        if base == 0 || new_stop > base + self.size {
            return false;
        }
        let state = self.state.load(Ordering::Acquire);
        if base + (state & OFFSET_MASK) as usize != old_stop {
            return false;
        }
        let moved = (state & !OFFSET_MASK) + (new_stop - base) as u64;
        self.state
            .compare_exchange(state, moved, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// The three calls of a `GlobalAlloc` over a region: from it while `serve`, from the
/// C library (`System`) otherwise or when it is full; a block of either freed where
/// it came from, except the C library's while `keep_heap` (left to the process's
/// end: a free can make glibc consolidate). An allocator is these with its own
/// `serve` and `keep_heap`.
impl Region {
    /// `GlobalAlloc::alloc` (and `alloc_zeroed`).
    ///
    /// # Safety
    /// `GlobalAlloc::alloc`'s contract: a layout of nonzero size.
    #[inline]
    pub unsafe fn allocate(&self, layout: Layout, serve: bool, zeroed: bool) -> *mut u8 {
        let block = if serve && zeroed {
            self.alloc_zeroed(layout)
        } else if serve {
            self.alloc(layout)
        } else {
            None
        };
        match (block, zeroed) {
            (Some(block), _) => block,
            // SAFETY: the caller's layout, as System requires.
            (None, true) => unsafe { System.alloc_zeroed(layout) },
            // SAFETY: the caller's layout, as System requires.
            (None, false) => unsafe { System.alloc(layout) },
        }
    }

    /// `GlobalAlloc::dealloc`.
    ///
    /// # Safety
    /// `GlobalAlloc::dealloc`'s contract: `ptr` came from [`allocate`](Self::allocate)
    /// or [`reallocate`](Self::reallocate) of this region with `layout`.
    #[inline]
    pub unsafe fn deallocate(&self, ptr: *mut u8, layout: Layout, keep_heap: bool) {
        if self.contains(ptr) {
            self.free();
        } else if !keep_heap {
            // SAFETY: a block System gave for this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    /// `GlobalAlloc::realloc`.
    ///
    /// # Safety
    /// `GlobalAlloc::realloc`'s contract, as for [`deallocate`](Self::deallocate).
    pub unsafe fn reallocate(
        &self,
        ptr: *mut u8,
        layout: Layout,
        new_size: usize,
        serve: bool,
        keep_heap: bool,
    ) -> *mut u8 {
        let ours = self.contains(ptr);
        if serve && ours && self.resize_in_place(ptr, layout.size(), new_size) {
            return ptr;
        }
        if !serve && !ours {
            // SAFETY: a block System gave for this layout; the caller's new size.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // Moved: a new block, the old one freed as `deallocate` frees.
        // SAFETY: the caller guarantees `new_size` is valid for `layout.align()`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a nonzero layout, as the caller's was.
        let moved = unsafe { self.allocate(new_layout, serve, false) };
        if !moved.is_null() {
            // SAFETY: both blocks hold at least the smaller size and do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                self.deallocate(ptr, layout, keep_heap);
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_carved_in_order_grow_in_place_and_the_region_empties_whole() {
        static REGION: Region = Region::new(1 << 20);
        let layout = Layout::from_size_align(100, 16).unwrap();
        assert_eq!(REGION.alloc(layout), None, "not reserved yet");
        assert!(REGION.reserve());
        let a = REGION.alloc(layout).unwrap();
        assert!(REGION.contains(a) && a as usize % 16 == 0);
        assert!(REGION.resize_in_place(a, 100, 5000), "the last block grows");
        let b = REGION.alloc_zeroed(layout).unwrap();
        assert!(b as usize >= a as usize + 5000);
        assert!(
            !REGION.resize_in_place(a, 5000, 9000),
            "a block not last stays"
        );
        assert_eq!(
            REGION.alloc(Layout::from_size_align(2 << 20, 8).unwrap()),
            None
        );
        REGION.free();
        REGION.free();
        assert_eq!(
            REGION.alloc(layout),
            Some(a),
            "empty, the region starts again"
        );
        assert!(!REGION.contains(std::ptr::null_mut()));
    }

    #[test]
    fn an_allocator_serves_from_the_region_only_while_asked_and_can_keep_heap_blocks() {
        static REGION: Region = Region::new(1 << 20);
        assert!(REGION.reserve());
        let layout = Layout::from_size_align(100, 16).unwrap();
        let wide = |size| Layout::from_size_align(size, 16).unwrap();
        // SAFETY: nonzero layouts; each block freed once with its layout.
        unsafe {
            let heap = REGION.allocate(layout, false, false);
            assert!(
                !REGION.contains(heap),
                "the C library serves when not asked"
            );
            let a = REGION.allocate(layout, true, true);
            assert!(REGION.contains(a) && *a == 0);
            a.write_bytes(7, 100);
            assert_eq!(
                REGION.reallocate(a, layout, 5000, true, true),
                a,
                "grown in place"
            );
            let moved = REGION.reallocate(heap, layout, 200, true, true);
            assert!(REGION.contains(moved), "a heap block moves into the region");
            let out = REGION.reallocate(a, wide(5000), 6000, false, false);
            assert!(
                !REGION.contains(out) && *out.add(99) == 7,
                "moved out when not asked"
            );
            REGION.deallocate(out, wide(6000), false);
            REGION.deallocate(moved, wide(200), false);
        }
        let again = REGION.alloc(layout).unwrap();
        assert_eq!(
            again as usize,
            REGION.base.load(Ordering::Acquire),
            "every block freed"
        );
    }
}
