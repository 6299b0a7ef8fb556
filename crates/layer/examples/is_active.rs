//! Is the layer in this process's call path, and with which policy?
//!
//! ```sh
//! cargo build -p clmulti-layer
//! OPENCL_LAYERS=$PWD/target/debug/libclmulti_layer.so CLMULTI_LAYER_POLICY=fd-per-peer \
//!     cargo run -p clmulti-layer --example is_active
//! ```
//! An ICD loader without layer support (CUDA's `libOpenCL.so.1`) ignores
//! `OPENCL_LAYERS` silently; this asks the layer itself, through the
//! `clGetPlatformInfo` query only it answers.

use clmulti_contract::layer::ACTIVE_QUERY;
use clmulti_layer::LayerSettings;

fn main() -> std::process::ExitCode {
    match LayerSettings::read(|k| std::env::var(k).ok()) {
        Ok(Some(s)) => println!("environment asks for policies {}", s.names()),
        Ok(None) => println!("environment sets no CLMULTI_LAYER_POLICY"),
        Err((knob, problem)) => {
            eprintln!("{knob}: {problem}");
            return std::process::ExitCode::from(2);
        }
    }
    let loader = clmulti_probe::loaded_library("libOpenCL.so");
    match clmulti_probe::platform_text(0, ACTIVE_QUERY) {
        Ok(policy) => {
            println!("the layer is in the call path, policy {policy}");
            std::process::ExitCode::SUCCESS
        }
        Err(code) => {
            println!(
                "the layer is not in the call path ({code}); the loader is {}",
                loader.unwrap_or_else(|| "unknown".into())
            );
            std::process::ExitCode::FAILURE
        }
    }
}
