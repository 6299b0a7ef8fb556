//! Names DRM requests given as numbers, as `strace` would print them:
//!
//! ```sh
//! cargo run -p clmulti-drm-uapi --example names -- 0xc00c642d 0x40406469
//! ```

fn main() {
    for arg in std::env::args().skip(1) {
        let number = u64::from_str_radix(arg.trim_start_matches("0x"), 16);
        match number.ok().and_then(clmulti_drm_uapi::request_name) {
            Some(name) => println!("{arg}: {name}"),
            None => println!("{arg}: not a request this crate knows"),
        }
    }
}
