//! The tracer's answers (its counts and failures as text) are built in a region of
//! its own ([`clmulti_contract::region`]), never in the C library's heap the traced
//! runtime uses: after a release, one allocation of 1 KiB there would consolidate
//! every block the runtime freed (9 ms after 100 000 PoCL buffers), and asking the
//! tracer would move the heap it watches. Its other allocations (a failure's record,
//! the report at exit) stay the C library's.

use clmulti_contract::region::Region;
use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// Address space only until touched; every answer frees its blocks before it
/// returns, so the region starts again at each.
static REGION: Region = Region::new(64 << 20);

thread_local! {
    static ANSWERING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's allocations in the region.
pub(crate) fn answer<T>(f: impl FnOnce() -> T) -> T {
    let serve = REGION.reserve();
    let was = ANSWERING.try_with(|a| a.replace(serve)).unwrap_or(false);
    let result = f();
    let _ = ANSWERING.try_with(|a| a.set(was));
    result
}

fn answering() -> bool {
    ANSWERING.try_with(Cell::get).unwrap_or(false)
}

/// The library's allocator: the C library's, but the region's while answering.
pub(crate) struct AnswerHeap;

// SAFETY: the region's calls keep GlobalAlloc's contract (see `Region::allocate`).
unsafe impl GlobalAlloc for AnswerHeap {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract.
        unsafe { REGION.allocate(layout, answering(), false) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract.
        unsafe { REGION.allocate(layout, answering(), true) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract.
        unsafe { REGION.deallocate(ptr, layout, false) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract.
        unsafe { REGION.reallocate(ptr, layout, new_size, answering(), false) }
    }
}
