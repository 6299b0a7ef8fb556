//! A kernel that does not compile yields the build log with the device's name.

use clmulti_axpy::{AxpyError, Runner};
use opencl3::context::Context;
use opencl3::device::Device;

#[test]
fn build_failure_returns_the_log_and_device_name() {
    std::env::set_var("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd");
    std::env::remove_var("POCL_DEVICES");
    let platforms =
        clmulti_probe::platforms().expect("PoCL is installed (scripts/setup-opencl.sh)");
    let device = platforms[0].devices[0].info();
    let context = Context::from_device(&Device::new(platforms[0].devices[0].id())).unwrap();
    let broken = "__kernel void dAxpy(int n) { this is not C; }\n";
    match Runner::from_source(&context, broken) {
        Err(AxpyError::Build { device: name, log }) => {
            assert_eq!(name, device.display_name());
            assert!(log.starts_with("CL_BUILD_PROGRAM_FAILURE (-11)"), "{log}");
            assert!(log.contains("error"), "{log}");
        }
        other => panic!("expected a build error, got {other:?}"),
    }
    // The shipped kernels build.
    assert!(Runner::new(&context).is_ok());
}
