//! The `clmulti` binary: everything is in the library (`clmulti::main`), so that
//! `cargo xtask docs` can generate completions and man pages from the same clap
//! definitions.

/// A run's process serves clmulti's own allocations after release from a region of
/// its own, off the heap the runtime just freed into (`clmulti_alloc::own_heap`).
#[global_allocator]
static HEAP: clmulti_alloc::own_heap::OwnHeap = clmulti_alloc::own_heap::OwnHeap;

fn main() -> std::process::ExitCode {
    clmulti::main()
}
