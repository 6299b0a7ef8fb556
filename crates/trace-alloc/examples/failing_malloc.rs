//! What the tracer records when an allocation fails in full mode: this program asks
//! for more memory than any machine has, then asks the tracer (found by `dlsym`, as
//! clmulti does) what failed.
//!
//! ```sh
//! cargo build -p clmulti-trace -p clmulti-trace-alloc --lib --examples
//! LD_PRELOAD=$PWD/target/debug/libclmulti_trace.so:$PWD/target/debug/libclmulti_trace_alloc.so \
//!   target/debug/examples/failing_malloc
//! ```
//! Without both preloaded it says what is missing.

fn main() {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
    let loaded =
        !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"clmulti_trace_failed".as_ptr()) }.is_null();
    // Whose `malloc` this process calls: the allocator half's, when preloaded.
    // SAFETY: dlsym with a NUL-terminated name; dladdr only reads the address.
    let alloc_wrapped = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let malloc = libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr());
        libc::dladdr(malloc, &mut info) != 0
            && !info.dli_fname.is_null()
            && std::ffi::CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .contains("libclmulti_trace_alloc")
    };
    if !loaded || !alloc_wrapped {
        eprintln!(
            "preload libclmulti_trace.so and libclmulti_trace_alloc.so (see the comment above)"
        );
        std::process::exit(1);
    }
    type Mark = unsafe extern "C" fn() -> u64;
    type Failures = unsafe extern "C" fn(u64, *mut libc::c_char, usize) -> usize;
    // SAFETY: the tracer defines these with these signatures (crate clmulti-trace).
    let (mark, failures) = unsafe {
        (
            std::mem::transmute::<*mut libc::c_void, Mark>(libc::dlsym(
                libc::RTLD_DEFAULT,
                c"clmulti_trace_mark".as_ptr(),
            )),
            std::mem::transmute::<*mut libc::c_void, Failures>(libc::dlsym(
                libc::RTLD_DEFAULT,
                c"clmulti_trace_failures".as_ptr(),
            )),
        )
    };
    // SAFETY: the tracer's functions; a buffer of the length given.
    let since = unsafe { mark() };
    // SAFETY: a request no machine grants; nothing is allocated.
    let p = unsafe { libc::malloc(usize::MAX / 2) };
    assert!(p.is_null());
    let mut text = vec![0u8; 16384];
    // SAFETY: as above.
    let n = unsafe { failures(since, text.as_mut_ptr().cast(), text.len()) };
    text.truncate(n.min(text.len() - 1));
    let text = String::from_utf8_lossy(&text);
    let named = text.contains("\"call\":\"malloc\"") && text.contains("ENOMEM");
    println!(
        "malloc({}) failed: {}",
        usize::MAX / 2,
        if named {
            "the tracer names it, with ENOMEM and its stack"
        } else {
            "the tracer did not record it"
        }
    );
}
