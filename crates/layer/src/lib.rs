//! # clmulti-layer: runtime policies, emulated on any OpenCL runtime
//!
//! The seed's failure (Intel, two GPUs in one context, `CL_OUT_OF_HOST_MEMORY (-6)`
//! after ~1000 buffers) cannot be run where there is no Intel multi-GPU node. This
//! crate builds an OpenCL *layer*: a shared library the ICD loader (ocl-icd >= 2.3)
//! loads through `OPENCL_LAYERS` and puts between the application and the real
//! runtime. It intercepts `clCreateBuffer`, `clCreateBufferWithProperties`,
//! `clReleaseMemObject`, `clReleaseContext`, `clGetDeviceInfo` and
//! `clGetPlatformInfo` (which answers [`ACTIVE_QUERY`](clmulti_contract::layer::ACTIVE_QUERY),
//! so a run can tell the layer is really in the call path), and adds one
//! candidate cause of the failure on top of the real runtime (PoCL in the tests),
//! chosen by `CLMULTI_LAYER_POLICY` (see [`clmulti_scenario::layer`]):
//!
//! | policy | each buffer of a multi-device context | fails when |
//! |---|---|---|
//! | `fd-per-peer` | holds one open fd per peer device (the dma-buf export NEO makes) | no fd is left (`RLIMIT_NOFILE`) |
//! | `host-mirror` | gets a host copy in one memfd: Shmem and MemAvailable show it, RSS does not | the mirror passes `CLMULTI_LAYER_MIRROR_LIMIT` |
//! | `eager` | is made resident on every device of its context (also single-device ones) | a device is full (`CLMULTI_LAYER_DEVICE_MEMORY` or its global memory) |
//! | `fail-after` | nothing | after `CLMULTI_LAYER_FAIL_AFTER` buffers (per process, or per context with `CLMULTI_LAYER_FAIL_SCOPE=context`): a cause no reading shows |
//! | `byte-budget` | nothing but a count of its bytes | its live bytes would pass `CLMULTI_LAYER_BYTE_BUDGET` (default 1 GiB): a byte budget no reading shows |
//! | `leak` (any context) | a touched host block of its size that release never frees | never: release succeeds, memory stays |
//! | `thread-per-buffer` | a thread of its own until release | no thread can be made (`RLIMIT_NPROC`; root is exempt) |
//! | `lock-per-buffer` | a locked host block of its size (`mlock`) | the lock is refused (`RLIMIT_MEMLOCK`; root is exempt) |
//!
//! Policies combine: `CLMULTI_LAYER_POLICY=fail-after,fd-per-peer` is a counter that
//! also holds a descriptor per peer, each policy acting on every buffer in turn.
//!
//! Every failure is returned as `CL_OUT_OF_HOST_MEMORY (-6)` (fail-after: the error
//! in `CLMULTI_LAYER_FAIL_ERROR`), as Intel's runtime reports any failed allocation.
//! With `CLMULTI_LAYER_DEVICE_MEMORY` set, `clGetDeviceInfo` reports that size as
//! `CL_DEVICE_GLOBAL_MEM_SIZE`, so a tool sees the device the layer enforces.
//!
//! ```sh
//! cargo build -p clmulti-layer
//! OPENCL_LAYERS=$PWD/target/debug/libclmulti_layer.so CLMULTI_LAYER_POLICY=fd-per-peer \
//!     POCL_DEVICES="pthread pthread" clmulti run configs/seed-2gpu-shared.toml
//! ```
//! Scenarios in `configs/emulation/` name it as `OPENCL_LAYERS = "{clmulti-layer}"`.

mod entry;
mod state;

pub use clmulti_scenario::layer::{LayerSettings, Policy};
