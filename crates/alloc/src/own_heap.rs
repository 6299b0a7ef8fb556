//! clmulti's own memory after release, kept off the C library's heap.
//!
//! A runtime that frees its buffers' small objects leaves them in glibc's fast bins;
//! the next allocation of 1 KiB or more, or any free that merges into the top of the
//! heap, has glibc consolidate every one of them first (100 000 PoCL buffers: about
//! 9 ms, measured). A plain C loop that releases and exits never pays it; clmulti,
//! which still reads, concludes and reports after release, would, inside the run's
//! time and for no figure of the runtime's. So from [`after_release`] on (until
//! [`end`]), the allocator here serves clmulti's allocations from a region of its own
//! ([`clmulti_contract::region`]) and leaves the C library's heap as the runtime left
//! it: frees of the heap's blocks are skipped meanwhile (the run's process ends soon
//! after; they are what a few samples held).
//!
//! It acts only where a binary installs it, as `clmulti` does:
//!
//! ```
//! #[global_allocator]
//! static HEAP: clmulti_alloc::own_heap::OwnHeap = clmulti_alloc::own_heap::OwnHeap;
//! # fn main() {}
//! ```
//!
//! Elsewhere [`after_release`] changes nothing. When the region is full, or cannot be
//! reserved (an address-space limit), allocations go to the C library as before.

use clmulti_contract::region::Region;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};

/// Address space only until touched: a report of 100 000 samples serialises to
/// tens of MiB; beyond the region the C library serves.
static REGION: Region = Region::new(1 << 30);
/// Whether new allocations come from the region.
static ON: AtomicBool = AtomicBool::new(false);

/// The global allocator: the C library's (`System`), but the region's from
/// [`after_release`] to [`end`].
#[derive(Debug, Clone, Copy, Default)]
pub struct OwnHeap;

/// From now on (until [`end`]), clmulti's allocations leave the C library's heap
/// alone (see the module docs): the engine calls it once the runtime has released
/// everything, and the run's process ends after its report.
pub fn after_release() {
    if REGION.reserve() {
        ON.store(true, Ordering::Release);
    }
}

/// Allocations go back to the C library (what the region holds stays valid until
/// freed): for a process that goes on after its run.
pub fn end() {
    ON.store(false, Ordering::Release);
}

// SAFETY: the region's calls keep GlobalAlloc's contract (see `Region::allocate`).
unsafe impl GlobalAlloc for OwnHeap {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract.
        unsafe { REGION.allocate(layout, ON.load(Ordering::Relaxed), false) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract.
        unsafe { REGION.allocate(layout, ON.load(Ordering::Relaxed), true) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // A free of the C library's block while the region serves could have glibc
        // consolidate the runtime's freed blocks: skipped, kept to the process's end.
        // SAFETY: the caller's contract.
        unsafe { REGION.deallocate(ptr, layout, ON.load(Ordering::Relaxed)) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let on = ON.load(Ordering::Relaxed);
        // SAFETY: the caller's contract.
        unsafe { REGION.reallocate(ptr, layout, new_size, on, on) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The allocator works without being the global one: this calls it directly.
    #[test]
    fn the_region_serves_from_after_release_to_end() {
        let heap = OwnHeap;
        let layout = Layout::from_size_align(100, 16).unwrap();
        // SAFETY: nonzero layouts; each block freed once with its layout.
        unsafe {
            let before = heap.alloc(layout);
            assert!(
                !REGION.contains(before),
                "the C library serves before release"
            );
            after_release();
            let ours = heap.alloc(layout);
            assert!(REGION.contains(ours));
            end();
            let after = heap.alloc(layout);
            assert!(!REGION.contains(after), "the C library serves after end()");
            for block in [before, ours, after] {
                heap.dealloc(block, layout);
            }
        }
    }
}
