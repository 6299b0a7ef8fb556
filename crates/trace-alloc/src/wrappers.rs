//! The allocators, each glibc's own entry point (no lookup, which may allocate,
//! stands between a program and its memory), and a failure handed to the tracer.

use libc::{c_char, c_int, c_void, size_t};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

extern "C" {
    fn __libc_malloc(size: size_t) -> *mut c_void;
    fn __libc_calloc(n: size_t, size: size_t) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: size_t) -> *mut c_void;
    fn __libc_memalign(align: size_t, size: size_t) -> *mut c_void;
}

type Failed = unsafe extern "C" fn(*const c_char, *const c_char, c_int);

/// Hands a failed allocation to the tracer: `call` its name, `args` as `strace`
/// prints them. Cold: a failure is rare, and the lookup happens at the first.
#[cold]
#[inline(never)]
fn failed(call: &'static [u8], args: std::fmt::Arguments<'_>) {
    static TRACER: AtomicUsize = AtomicUsize::new(0);
    let mut address = TRACER.load(Ordering::Relaxed);
    if address == 0 {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
        address =
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"clmulti_trace_failed".as_ptr()) } as usize;
        TRACER.store(address, Ordering::Relaxed);
    }
    if address == 0 {
        return;
    }
    // Formatted on the stack: the heap just refused.
    let mut text = [0u8; 96];
    let mut cursor = std::io::Cursor::new(&mut text[..95]);
    let _ = cursor.write_fmt(args);
    let end = cursor.position() as usize;
    text[end] = 0;
    // SAFETY: the tracer's function of this signature (crate clmulti-trace); both
    // strings NUL-terminated.
    unsafe {
        let tracer = std::mem::transmute::<usize, Failed>(address);
        tracer(call.as_ptr().cast(), text.as_ptr().cast(), libc::ENOMEM);
        *libc::__errno_location() = libc::ENOMEM;
    }
}

/// # Safety
/// libc's `malloc`.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: size_t) -> *mut c_void {
    // SAFETY: glibc's malloc.
    let p = unsafe { __libc_malloc(size) };
    if p.is_null() && size != 0 {
        failed(b"malloc\0", format_args!("{size}"));
    }
    p
}

/// # Safety
/// libc's `calloc`.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, size: size_t) -> *mut c_void {
    // SAFETY: glibc's calloc.
    let p = unsafe { __libc_calloc(n, size) };
    if p.is_null() && n != 0 && size != 0 {
        failed(b"calloc\0", format_args!("{n}, {size}"));
    }
    p
}

/// # Safety
/// libc's `realloc`.
#[no_mangle]
pub unsafe extern "C" fn realloc(old: *mut c_void, size: size_t) -> *mut c_void {
    // SAFETY: glibc's realloc.
    let p = unsafe { __libc_realloc(old, size) };
    if p.is_null() && size != 0 {
        failed(b"realloc\0", format_args!("{old:?}, {size}"));
    }
    p
}

/// # Safety
/// libc's `memalign`.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: size_t, size: size_t) -> *mut c_void {
    // SAFETY: glibc's memalign.
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() && size != 0 {
        failed(b"memalign\0", format_args!("{align}, {size}"));
    }
    p
}

/// # Safety
/// libc's `aligned_alloc`.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void {
    // SAFETY: glibc's memalign (aligned_alloc's own checks are ISO C's: the size a
    // multiple of the alignment, which glibc does not enforce either).
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() && size != 0 {
        failed(b"aligned_alloc\0", format_args!("{align}, {size}"));
    }
    p
}

/// # Safety
/// libc's `posix_memalign`.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
) -> c_int {
    let word = std::mem::size_of::<*mut c_void>();
    if !align.is_power_of_two() || align % word != 0 {
        return libc::EINVAL;
    }
    // SAFETY: glibc's memalign with a valid alignment.
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() && size != 0 {
        failed(b"posix_memalign\0", format_args!("{align}, {size}"));
        return libc::ENOMEM;
    }
    // SAFETY: the caller's out-pointer.
    unsafe { *out = p };
    0
}
