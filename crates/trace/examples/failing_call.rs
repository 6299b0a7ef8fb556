//! What the tracer records when a call fails: this program opens a file that is not
//! there and asks for an impossible mapping, then asks the tracer (found in this
//! process by `dlsym`, as clmulti does) what failed and how often each call ran.
//!
//! ```sh
//! cargo build -p clmulti-trace --examples
//! LD_PRELOAD=$PWD/target/debug/libclmulti_trace.so target/debug/examples/failing_call
//! ```
//! Without the preload it says the tracer is not in this process.

fn main() {
    let Some(tracer) = clmulti_probe::trace::Tracer::find() else {
        eprintln!("clmulti-trace is not loaded: run with LD_PRELOAD=.../libclmulti_trace.so");
        std::process::exit(1);
    };
    let mark = tracer.mark();
    let _ = std::fs::File::open("/nonexistent/clmulti-example");
    // SAFETY: a request the kernel refuses (length 0); nothing is mapped.
    let mapped = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            0,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_eq!(mapped, libc::MAP_FAILED);
    for call in tracer.failures_since(mark) {
        println!("failed: {}", call.summary());
    }
    let counts = tracer.counts();
    for kind in ["open", "mmap"] {
        println!("{kind}: {} call(s)", counts.get(kind).copied().unwrap_or(0));
    }
}
