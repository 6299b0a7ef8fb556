//! Verifies dAxpy on the first device and measures its bandwidth against a float4 copy.
//!
//! `cargo run --release -p clmulti-axpy --example bandwidth`

use clmulti_axpy::{AxpyCase, KernelChoice, Runner};
use opencl3::context::Context;
use opencl3::device::Device;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let platforms = clmulti_probe::platforms()?;
    let probed = platforms
        .iter()
        .flat_map(|p| &p.devices)
        .next()
        .ok_or("no OpenCL device")?;
    let device = Device::new(probed.id());
    let context = Context::from_device(&device)?;
    let runner = Runner::new(&context)?;
    for choice in [KernelChoice::Seed, KernelChoice::Fast] {
        let verified = runner.verify(&device, &AxpyCase::contiguous(1_000_003, 2.0), choice)?;
        let bw = runner.bandwidth(&device, 1 << 24, 10, choice)?;
        println!(
            "{}: {:?} verified ({:.2} of tolerance); {:.1} GB/s, copy {:.1} GB/s, ratio {:.3} ({:?} clock)",
            probed.info().display_name(),
            verified.kernel,
            verified.max_error_ulps / 2.0,
            bw.axpy.gb_per_s_best,
            bw.copy.gb_per_s_best,
            bw.ratio_to_copy,
            bw.axpy.clock
        );
    }
    Ok(())
}
