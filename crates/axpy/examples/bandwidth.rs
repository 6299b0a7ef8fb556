//! Verifies dAxpy on the first device and measures its bandwidth against a float4 copy.
//!
//! `cargo run --release -p clmulti-axpy --example bandwidth`

use clmulti_axpy::{AxpyCase, KernelChoice, Runner};
use opencl3::context::Context;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let platforms = clmulti_probe::platforms()?;
    let device = platforms
        .iter()
        .flat_map(|p| &p.devices)
        .next()
        .ok_or("no OpenCL device")?;
    let id = device.handle().ok_or("no handle")?.as_raw();
    let context = Context::from_devices(&[id], &[], None, std::ptr::null_mut())?;
    let runner = Runner::new(&context)?;
    for choice in [KernelChoice::Seed, KernelChoice::Fast] {
        let verified = runner.verify(id, &AxpyCase::contiguous(1_000_003, 2.0), choice)?;
        let bw = runner.bandwidth(id, 1 << 24, 10, choice)?;
        println!(
            "{}: {:?} verified ({:.2} of tolerance); {:.1} GB/s, copy {:.1} GB/s, ratio {:.3}",
            device.display_name(),
            verified.kernel,
            verified.max_error_ulps / 2.0,
            bw.axpy.gb_per_s_best,
            bw.copy.gb_per_s_best,
            bw.ratio_to_copy
        );
    }
    Ok(())
}
