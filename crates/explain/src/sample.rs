//! What a run reads at each point, and the layers it ran under: plain data, below
//! the resources that read it ([`crate::resource`]) and the report that holds it.

use clmulti_probe::{DrmUsage, ProcessUsage, SystemMemory};
use serde::{Deserialize, Serialize};

/// The resource readings at one point of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Buffers allocated so far.
    pub allocations: u64,
    /// Buffers held at this point, when the run released some on the way
    /// (`allocation.release_every`); otherwise every allocated buffer is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<u64>,
    /// Bytes requested so far.
    pub bytes_requested: u64,
    /// Seconds since the loop started.
    pub elapsed_seconds: f64,
    /// Host process readings.
    #[serde(flatten)]
    pub host: ProcessUsage,
    /// System memory, when `/proc/meminfo` could be read.
    #[serde(default)]
    pub system: Option<SystemMemory>,
    /// DRM memory of the process's GPU clients (empty without DRM devices).
    #[serde(default)]
    pub drm: Vec<DrmUsage>,
    /// Device memory in use per selected device, bytes, where a source exists.
    pub device_used_bytes: Vec<Option<u64>>,
    /// Who exported the open dma-bufs (their fdinfo's `exp_name`), each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dmabuf_exporters: Vec<String>,
    /// The emulated kernel driver's counts (GEM objects by device and region, CPU
    /// maps, exports, imports...), under clmulti's kernel-driver emulation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_counts: Option<clmulti_probe::kmd_emu::Counts>,
    /// The calls clmulti's tracer counted in the process so far, by kind (`mmap`,
    /// `ioctl:DRM_IOCTL_PRIME_HANDLE_TO_FD`), when the run was traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_counts: Option<clmulti_probe::kmd_emu::Counts>,
}

impl Sample {
    /// Who exported the dma-bufs of a run's samples, each once: "i915", "i915, amdgpu".
    pub fn exporters(samples: &[Sample]) -> Option<String> {
        let mut names: Vec<&str> = samples
            .iter()
            .flat_map(|s| s.dmabuf_exporters.iter().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        (!names.is_empty()).then(|| names.join(", "))
    }

    /// Buffers held at this point.
    pub fn live(&self) -> u64 {
        self.live.unwrap_or(self.allocations)
    }
}

/// The OpenCL layers a run ran under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layers {
    /// `OPENCL_LAYERS`.
    pub opencl_layers: String,
    /// clmulti's emulation layer's knobs (`CLMULTI_LAYER_*`), when set.
    pub emulation: Vec<(String, String)>,
}

impl Layers {
    /// The layers named by an environment (`lookup` reads a variable).
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let opencl_layers = lookup("OPENCL_LAYERS").filter(|l| !l.is_empty())?;
        let emulation = clmulti_contract::layer::KNOBS
            .iter()
            .filter_map(|k| Some((k.to_string(), lookup(k)?)))
            .collect();
        Some(Layers {
            opencl_layers,
            emulation,
        })
    }

    /// The emulation layer's settings, when its knobs are set.
    pub fn settings(&self) -> Option<clmulti_scenario::layer::LayerSettings> {
        clmulti_scenario::layer::LayerSettings::read(|k| {
            self.emulation
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        })
        .ok()?
    }
}
