//! Device-memory readings, from the best source the devices offer.

use clmulti_explain::DeviceMemorySource;
use clmulti_probe::Device;

/// PCI vendor ID of NVIDIA (what its OpenCL devices report as `CL_DEVICE_VENDOR_ID`).
#[cfg(feature = "nvml")]
const NVIDIA_VENDOR_ID: u32 = 0x10de;

pub(crate) struct DeviceMemory {
    pub source: DeviceMemorySource,
    devices: Vec<Device>,
    #[cfg(feature = "nvml")]
    nvml: Option<clmulti_probe::NvmlMemory>,
}

impl DeviceMemory {
    /// NVML where every device is an NVIDIA GPU it knows (feature `nvml`), else AMD's
    /// free-memory query where every device answers it, else none.
    pub fn open(devices: &[Device]) -> Self {
        // Loading NVML costs ~20 ms (measured on an H200 node): only for NVIDIA GPUs,
        // which it can find by their PCI bus.
        #[cfg(feature = "nvml")]
        let nvidia = !devices.is_empty()
            && devices.iter().all(|d| {
                let info = d.info();
                info.vendor_id.value() == Some(&NVIDIA_VENDOR_ID)
                    && info.pci_bus.as_ref().and_then(|b| b.value()).is_some()
            });
        #[cfg(feature = "nvml")]
        if let Some(nvml) = nvidia.then(clmulti_probe::NvmlMemory::open).flatten() {
            if devices.iter().all(|d| nvml.used_bytes(d.info()).is_some()) {
                return DeviceMemory {
                    source: DeviceMemorySource::Nvml,
                    devices: devices.to_vec(),
                    nvml: Some(nvml),
                };
            }
        }
        let amd = !devices.is_empty()
            && devices.iter().all(|d| {
                d.info().has_extension("cl_amd_device_attribute_query")
                    && d.free_memory_amd().is_some()
            });
        DeviceMemory {
            source: if amd {
                DeviceMemorySource::AmdFreeMemory
            } else {
                DeviceMemorySource::None
            },
            devices: devices.to_vec(),
            #[cfg(feature = "nvml")]
            nvml: None,
        }
    }

    pub fn read(&mut self) -> Vec<Option<u64>> {
        match self.source {
            DeviceMemorySource::None => Vec::new(),
            #[cfg(feature = "nvml")]
            DeviceMemorySource::Nvml => match &self.nvml {
                Some(nvml) => self
                    .devices
                    .iter()
                    .map(|d| nvml.used_bytes(d.info()))
                    .collect(),
                None => Vec::new(),
            },
            #[cfg(not(feature = "nvml"))]
            DeviceMemorySource::Nvml => Vec::new(),
            DeviceMemorySource::AmdFreeMemory => self
                .devices
                .iter()
                .map(|d| {
                    let total = *d.info().global_mem_bytes.value()?;
                    Some(total.saturating_sub(d.free_memory_amd()?))
                })
                .collect(),
        }
    }
}
