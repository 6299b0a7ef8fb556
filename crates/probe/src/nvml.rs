//! NVIDIA device-memory telemetry through NVML (feature `nvml`).
//!
//! OpenCL has no standard "free memory" query; on NVIDIA, NVML's used-memory
//! figure shows whether the runtime allocates at create, at first use, on one GPU
//! or on all of them. Devices are matched by PCI bus id.

use crate::device::{DeviceInfo, PciBus};
use nvml_wrapper::Nvml;

/// Reads used memory of the NVML devices that match OpenCL devices.
pub struct NvmlMemory {
    nvml: Nvml,
}

impl std::fmt::Debug for NvmlMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NvmlMemory")
    }
}

impl NvmlMemory {
    /// Loads `libnvidia-ml`; `None` when it is absent (no NVIDIA driver).
    pub fn open() -> Option<Self> {
        Nvml::init().ok().map(|nvml| NvmlMemory { nvml })
    }

    /// Used device memory in bytes for an OpenCL device, if NVML knows it.
    pub fn used_bytes(&self, device: &DeviceInfo) -> Option<u64> {
        let bus: &PciBus = device.pci_bus.as_ref()?.value()?;
        let id = format!(
            "{:08x}:{:02x}:{:02x}.{:x}",
            bus.domain, bus.bus, bus.device, bus.function
        );
        let dev = self.nvml.device_by_pci_bus_id(id).ok()?;
        dev.memory_info().ok().map(|m| m.used)
    }
}
