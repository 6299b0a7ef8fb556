//! The resources a run measures: what each reading is, its unit, and its limit.

use crate::sample::{Layers, Sample};
use clmulti_probe::{DeviceInfo, DriverLimits, DrmMemoryKind, HostLimits};
use clmulti_scenario::layer::Policy;
use clmulti_scenario::{format_bytes, Rlimit, Scenario};
use serde::{Deserialize, Serialize};

/// What a run's readings are set against: its scenario, devices and limits.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The scenario run.
    pub scenario: &'a Scenario,
    /// The devices used.
    pub devices: &'a [DeviceInfo],
    /// Host limits in force.
    pub host: &'a HostLimits,
    /// GPU drivers' caps.
    pub driver: &'a DriverLimits,
    /// Buffers the run allocated.
    pub buffers: u64,
    /// The OpenCL layers it ran under.
    pub layers: Option<&'a Layers>,
    /// Whether the run ended in a failure.
    pub failed: bool,
    /// Whether the devices are emulated without memory of their own (NEO in AUB
    /// mode): nothing is resident anywhere but the host.
    pub emulated_devices: bool,
}

/// A resource whose growth per buffer is measured.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "resource")]
pub enum Resource {
    /// Resident set size, bytes; limit: the memory ceiling (RAM, cgroup, Slurm job).
    HostRss,
    /// Virtual size, bytes; limit: `RLIMIT_AS`.
    VirtualSize,
    /// Open file descriptors numbered under the soft `RLIMIT_NOFILE` (clmulti's own
    /// included): the slots the limit counts.
    OpenFds,
    /// Of the open fds, dma-bufs: buffers exported for sharing between devices.
    DmabufFds,
    /// Bytes behind those dma-bufs.
    DmabufBytes,
    /// Memory mappings; limit: `vm.max_map_count`.
    MemoryMaps,
    /// Threads of the process; limit: `RLIMIT_NPROC` (which counts every process
    /// and thread of the user), else the kernel's `threads-max`.
    Threads,
    /// Locked memory (`VmLck`), bytes; limit: `RLIMIT_MEMLOCK`.
    LockedMemory,
    /// Data segment (`VmData`), bytes; limit: `RLIMIT_DATA`.
    DataSize,
    /// The C library's heap in use (`mallinfo2`), bytes: what live allocations hold.
    HeapInUse,
    /// Freed heap the C library keeps (`mallinfo2`), bytes: RSS no allocation holds.
    HeapFree,
    /// System memory in use (`MemTotal - MemAvailable`), bytes: includes what the
    /// kernel accounts outside every RSS (GPU drivers' GTT, memfds).
    SystemMemoryUsed,
    /// The system's `Shmem`, bytes: memfds, tmpfs, and host mirrors kept there.
    SystemShmem,
    /// Used memory of one selected device (NVML, AMD query), bytes; limit: its
    /// global memory.
    DeviceMemory {
        /// Index among the run's devices.
        device: usize,
    },
    /// A DRM memory figure this process's GPU clients hold (kernel fdinfo), bytes.
    Drm {
        /// The device's PCI address, from `drm-pdev`.
        pdev: Option<String>,
        /// The run's device at that address, when one matches.
        device: Option<usize>,
        /// The kernel driver.
        driver: String,
        /// The driver's region name (`gtt`, `vram0`, `system0`).
        region: String,
        /// Which figure.
        kind: DrmMemoryKind,
    },
}

/// How a resource's values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// A count (descriptors, mappings).
    Count,
}

impl Unit {
    /// A value in this unit: `1.00 MiB`, `1024`, `0.25`, `8.25 million`.
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Bytes => format_bytes(value),
            Unit::Count => clmulti_scenario::format_count(value),
        }
    }

    /// A value that may be missing: `-` for none.
    pub fn format_or_dash(self, value: Option<f64>) -> String {
        value.map_or_else(|| "-".into(), |v| self.format(v))
    }
}

/// A ceiling a resource meets, and what it is called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// The value, in the resource's unit.
    pub value: f64,
    /// Its name: `RLIMIT_NOFILE (soft)`, `physical RAM`, `device global memory`.
    pub name: String,
    /// Whether it caps the growth during the run rather than the reading (a cap on
    /// what the run adds to a system-wide figure).
    #[serde(default)]
    pub of_growth: bool,
}

impl Limit {
    /// The name of a soft resource limit as a [`Limit`] calls it: `RLIMIT_NOFILE (soft)`.
    pub fn soft_name(which: Rlimit) -> String {
        format!("{} (soft)", which.name())
    }

    /// The soft resource limit this is, when it is one.
    pub fn rlimit(&self) -> Option<Rlimit> {
        Rlimit::ALL
            .into_iter()
            .find(|r| self.name == Limit::soft_name(*r))
    }
}

impl Resource {
    /// A short human name.
    pub fn label(&self) -> String {
        match self {
            Resource::HostRss => "host RSS".into(),
            Resource::VirtualSize => "virtual size".into(),
            Resource::OpenFds => "open fds".into(),
            Resource::DmabufFds => "dma-buf fds".into(),
            Resource::DmabufBytes => "dma-buf bytes".into(),
            Resource::MemoryMaps => "memory maps".into(),
            Resource::Threads => "threads".into(),
            Resource::LockedMemory => "locked memory".into(),
            Resource::DataSize => "data segment".into(),
            Resource::HeapInUse => "C heap in use".into(),
            Resource::HeapFree => "C heap kept free".into(),
            Resource::SystemMemoryUsed => "system memory used".into(),
            Resource::SystemShmem => "system Shmem".into(),
            Resource::DeviceMemory { device } => format!("device {device} memory"),
            Resource::Drm {
                device,
                pdev,
                driver,
                region,
                kind,
            } => {
                let at = match (device, pdev) {
                    (Some(d), _) => format!("device {d}"),
                    (None, Some(p)) => p.clone(),
                    (None, None) => "?".into(),
                };
                format!("DRM {driver} {at} {region} ({})", kind.word())
            }
        }
    }

    /// The unit of its readings.
    pub fn unit(&self) -> Unit {
        match self {
            Resource::OpenFds | Resource::DmabufFds | Resource::MemoryMaps | Resource::Threads => {
                Unit::Count
            }
            _ => Unit::Bytes,
        }
    }

    /// Whether it is a figure of the whole system, which other processes move too.
    pub fn system_wide(&self) -> bool {
        matches!(self, Resource::SystemMemoryUsed | Resource::SystemShmem)
    }

    /// Whether it belongs to one device (plotted per device).
    pub fn device(&self) -> Option<usize> {
        match self {
            Resource::DeviceMemory { device } => Some(*device),
            Resource::Drm { device, .. } => *device,
            _ => None,
        }
    }

    /// The reading in a sample, if the sample has one.
    pub fn reading(&self, sample: &Sample, host: &HostLimits) -> Option<f64> {
        let p = &sample.host;
        Some(match self {
            Resource::HostRss => p.rss_bytes as f64,
            Resource::VirtualSize => p.virtual_bytes as f64,
            // What RLIMIT_NOFILE counts: the slots under it.
            Resource::OpenFds => p.open_fds.saturating_sub(p.fds_above_limit) as f64,
            Resource::DmabufFds => p.dmabuf_fds as f64,
            Resource::DmabufBytes => p.dmabuf_bytes as f64,
            Resource::MemoryMaps => p.memory_maps? as f64,
            Resource::Threads => p.threads as f64,
            Resource::LockedMemory => p.locked_bytes? as f64,
            Resource::DataSize => p.data_bytes? as f64,
            Resource::HeapInUse => p.heap_in_use_bytes? as f64,
            Resource::HeapFree => p.heap_free_bytes? as f64,
            Resource::SystemMemoryUsed => {
                host.ram_bytes?
                    .saturating_sub(sample.system?.available_bytes?) as f64
            }
            Resource::SystemShmem => sample.system?.shmem_bytes as f64,
            Resource::DeviceMemory { device } => (*sample.device_used_bytes.get(*device)?)? as f64,
            Resource::Drm {
                pdev,
                driver,
                region,
                kind,
                ..
            } => sample
                .drm
                .iter()
                .find(|u| {
                    &u.pdev == pdev && &u.driver == driver && &u.region == region && u.kind == *kind
                })
                .map_or(0.0, |u| u.bytes as f64),
        })
    }

    /// The limit this resource meets on this machine, where one is known.
    pub fn limit(&self, facts: &Facts<'_>) -> Option<Limit> {
        let host = facts.host;
        let limit = limit_named;
        // A soft limit the kernel enforces on this process (root is exempt from some).
        let soft = |which: Rlimit| {
            let value = host.values(which).soft?;
            host.enforced(which)
                .then(|| limit(value, &Limit::soft_name(which)))?
        };
        match self {
            Resource::HostRss => {
                let (bytes, ceiling) = host.memory_ceiling()?;
                limit(bytes, ceiling.label())
            }
            Resource::VirtualSize => soft(Rlimit::AddressSpace),
            Resource::OpenFds => soft(Rlimit::NoFile),
            Resource::LockedMemory => soft(Rlimit::MemLock),
            Resource::DataSize => soft(Rlimit::Data),
            // The tightest of the user's process limit, the cgroup's pids.max (less the
            // tasks other processes hold there) and the kernel's.
            Resource::Threads => {
                let cgroup = host
                    .cgroup_pids
                    .as_ref()
                    .and_then(|p| limit(p.max.saturating_sub(p.others), &p.name));
                [
                    soft(Rlimit::NProc),
                    cgroup,
                    host.threads_max
                        .and_then(|t| limit(t, "kernel.threads-max")),
                ]
                .into_iter()
                .flatten()
                .min_by(|a, b| a.value.total_cmp(&b.value))
            }
            Resource::MemoryMaps => limit(host.max_map_count?, "vm.max_map_count"),
            Resource::SystemMemoryUsed => limit(host.ram_bytes?, "physical RAM (MemTotal)"),
            Resource::DeviceMemory { device } => device_memory_limit(*device, facts),
            Resource::Drm {
                pdev,
                device,
                driver,
                region,
                kind,
            } => {
                // xe's `system` memory type holds the objects with no pages yet (created
                // with DEFER_BACKING, or not yet placed): its total takes no memory.
                if driver == "xe" && region == "system" && *kind == DrmMemoryKind::Total {
                    return None;
                }
                drm_limit(pdev.as_deref(), *device, region, facts)
            }
            Resource::SystemShmem => {
                // The emulation layer's host mirror lives in Shmem, up to its cap.
                let settings = facts.layers?.settings()?;
                settings.has(Policy::HostMirror).then_some(())?;
                Some(Limit {
                    value: settings.mirror_limit.bytes(host.ram_bytes?) as f64,
                    name: "the emulation layer's host-mirror cap (CLMULTI_LAYER_MIRROR_LIMIT)"
                        .into(),
                    of_growth: true,
                })
            }
            Resource::DmabufFds
            | Resource::DmabufBytes
            | Resource::HeapInUse
            | Resource::HeapFree => None,
        }
    }

    /// Every resource a run's samples may hold readings of, in display order.
    pub fn all_in(samples: &[Sample], devices: &[DeviceInfo]) -> Vec<Resource> {
        let mut list = vec![
            Resource::HostRss,
            Resource::VirtualSize,
            Resource::OpenFds,
            Resource::DmabufFds,
            Resource::DmabufBytes,
            Resource::MemoryMaps,
            Resource::Threads,
            Resource::LockedMemory,
            Resource::DataSize,
            Resource::HeapInUse,
            Resource::HeapFree,
            Resource::SystemMemoryUsed,
            Resource::SystemShmem,
        ];
        list.extend((0..devices.len()).map(|device| Resource::DeviceMemory { device }));
        let mut drm: Vec<Resource> = Vec::new();
        for usage in samples.iter().flat_map(|s| &s.drm) {
            let device = usage.pdev.as_ref().and_then(|p| {
                devices.iter().position(|d| {
                    d.pci_bus
                        .as_ref()
                        .and_then(|b| b.value())
                        .is_some_and(|b| b.to_string().eq_ignore_ascii_case(p))
                })
            });
            let resource = Resource::Drm {
                pdev: usage.pdev.clone(),
                device,
                driver: usage.driver.clone(),
                region: usage.region.clone(),
                kind: usage.kind,
            };
            if !drm.contains(&resource) {
                drm.push(resource);
            }
        }
        drm.sort();
        list.extend(drm);
        list
    }
}

fn limit_named(value: u64, name: &str) -> Option<Limit> {
    Some(Limit {
        value: value as f64,
        name: name.to_owned(),
        of_growth: false,
    })
}

/// A device's memory limit: the emulation layer's size (a cap on the growth: NVML
/// counts the CUDA context too), else its global memory.
fn device_memory_limit(device: usize, facts: &Facts<'_>) -> Option<Limit> {
    if let Some(bytes) = facts
        .layers
        .and_then(|l| l.settings())
        .and_then(|s| s.device_memory)
    {
        return Some(Limit {
            value: bytes as f64,
            name: "the emulation layer's device memory (CLMULTI_LAYER_DEVICE_MEMORY)".into(),
            of_growth: true,
        });
    }
    limit_named(
        *facts.devices.get(device)?.global_mem_bytes.value()?,
        "device global memory",
    )
}

/// A DRM region's limit: GTT against amdgpu's total or TTM's cap, VRAM against the
/// device, system regions against the host's memory ceiling.
fn drm_limit(
    pdev: Option<&str>,
    device: Option<usize>,
    region: &str,
    facts: &Facts<'_>,
) -> Option<Limit> {
    let driver = facts.driver;
    let amd = pdev.and_then(|p| driver.amdgpu.iter().find(|m| m.pdev == p));
    if region.starts_with("gtt") {
        if let Some(total) = amd.and_then(|m| m.gtt_total) {
            return limit_named(total, "amdgpu mem_info_gtt_total");
        }
        return limit_named(driver.ttm_pages_limit_bytes?, "TTM pages_limit (GTT cap)");
    }
    if region.starts_with("vram") || region.starts_with("local") {
        if let Some(total) = amd.and_then(|m| m.vram_total) {
            return limit_named(total, "amdgpu mem_info_vram_total");
        }
        let global = facts.devices.get(device?)?.global_mem_bytes.value()?;
        return limit_named(*global, "device global memory");
    }
    if region.starts_with("system") || region == "cpu" {
        let (bytes, ceiling) = facts.host.memory_ceiling()?;
        return limit_named(bytes, ceiling.label());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clmulti_probe::{DrmUsage, ProcessUsage};

    fn device(pci: &str) -> DeviceInfo {
        let (domain, rest) = pci.split_once(':').unwrap();
        let bus = &rest[..2];
        serde_json::from_value(serde_json::json!({
            "index": 0, "selector": "0:0", "name": "GPU", "vendor": "v", "vendor_id": 1,
            "device_version": "v", "driver_version": "d", "opencl_c_version": "c", "kind": "gpu",
            "compute_units": 1, "global_mem_bytes": 16u64 << 30, "max_alloc_bytes": 4u64 << 30,
            "host_unified_memory": false, "global_mem_cache_bytes": 0, "mem_base_addr_align_bits": 1024,
            "max_work_group_size": 256, "extensions": [],
            "pci_bus": { "domain": u32::from_str_radix(domain, 16).unwrap(), "bus": u32::from_str_radix(bus, 16).unwrap(), "device": 0, "function": 0 },
            "uuid": null
        }))
        .unwrap()
    }

    fn sample(gtt: u64) -> Sample {
        Sample {
            allocations: 0,
            live: None,
            bytes_requested: 0,
            elapsed_seconds: 0.0,
            host: ProcessUsage::default(),
            system: None,
            drm: vec![DrmUsage {
                pdev: Some("0000:83:00.0".into()),
                driver: "xe".into(),
                region: "gtt".into(),
                kind: DrmMemoryKind::Total,
                bytes: gtt,
            }],
            device_used_bytes: Vec::new(),
            dmabuf_exporters: Vec::new(),
            kernel_counts: None,
            traced_counts: None,
        }
    }

    #[test]
    fn drm_figures_are_matched_to_devices_by_pci_address() {
        let devices = [device("0000:03:00.0"), device("0000:83:00.0")];
        let resources = Resource::all_in(&[sample(1 << 20)], &devices);
        let drm: Vec<&Resource> = resources
            .iter()
            .filter(|r| matches!(r, Resource::Drm { .. }))
            .collect();
        assert_eq!(drm.len(), 1);
        assert_eq!(drm[0].device(), Some(1));
        assert_eq!(drm[0].label(), "DRM xe device 1 gtt (total)");
        assert_eq!(
            drm[0].reading(&sample(5 << 20), &HostLimits::read()),
            Some((5 << 20) as f64)
        );
        // No device at that address: the label names the address instead.
        let unmatched = Resource::all_in(&[sample(1)], &devices[..1]);
        let drm = unmatched
            .iter()
            .find(|r| matches!(r, Resource::Drm { .. }))
            .unwrap();
        assert_eq!(drm.device(), None);
        assert!(drm.label().contains("0000:83:00.0"));
    }
}
