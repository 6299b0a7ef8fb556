//! Platforms and devices as the ICD loader reports them, with the facts that
//! bound allocation.

use crate::raw;
use crate::ClCode;
use clmulti_scenario::Partition;
use serde::{Deserialize, Serialize};
use std::ffi::c_void;

// Extension queries cl-sys does not name.
const CL_DEVICE_PCI_BUS_INFO_KHR: u32 = 0x410F;
const CL_DEVICE_UUID_KHR: u32 = 0x106A;
const CL_DEVICE_GLOBAL_FREE_MEMORY_AMD: u32 = 0x4039;
const CL_DEVICE_PCI_BUS_ID_NV: u32 = 0x4008;
const CL_DEVICE_PCI_SLOT_ID_NV: u32 = 0x4009;
const CL_DEVICE_PCI_DOMAIN_ID_NV: u32 = 0x400A;

/// A value read from the runtime, or the error its query returned.
///
/// Serialized as the bare value, or as `{"error": "CL_INVALID_VALUE (-30)"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Queried<T> {
    /// The query succeeded.
    Value(T),
    /// The query failed; the field's error, by name.
    Error {
        /// `NAME (code)`.
        error: String,
    },
}

impl<T> Queried<T> {
    pub(crate) fn from_result(result: Result<T, ClCode>) -> Self {
        match result {
            Ok(v) => Queried::Value(v),
            Err(code) => Queried::Error {
                error: code.to_string(),
            },
        }
    }

    /// The error (`NAME (code)`), if the query failed.
    pub fn error(&self) -> Option<&str> {
        match self {
            Queried::Value(_) => None,
            Queried::Error { error } => Some(error),
        }
    }

    /// The value, if the query succeeded.
    pub fn value(&self) -> Option<&T> {
        match self {
            Queried::Value(v) => Some(v),
            Queried::Error { .. } => None,
        }
    }
}

impl<T: std::fmt::Display> std::fmt::Display for Queried<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Queried::Value(v) => v.fmt(f),
            Queried::Error { error } => write!(f, "<{error}>"),
        }
    }
}

/// The kind of device, as `CL_DEVICE_TYPE` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// `CL_DEVICE_TYPE_GPU`
    Gpu,
    /// `CL_DEVICE_TYPE_CPU`
    Cpu,
    /// `CL_DEVICE_TYPE_ACCELERATOR`
    Accelerator,
    /// `CL_DEVICE_TYPE_CUSTOM`
    Custom,
    /// Any other bit pattern.
    Other,
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceKind::Gpu => "gpu",
            DeviceKind::Cpu => "cpu",
            DeviceKind::Accelerator => "accelerator",
            DeviceKind::Custom => "custom",
            DeviceKind::Other => "other",
        })
    }
}

impl DeviceKind {
    fn from_bits(bits: u64) -> Self {
        if bits & cl_sys::CL_DEVICE_TYPE_GPU != 0 {
            DeviceKind::Gpu
        } else if bits & cl_sys::CL_DEVICE_TYPE_CPU != 0 {
            DeviceKind::Cpu
        } else if bits & cl_sys::CL_DEVICE_TYPE_ACCELERATOR != 0 {
            DeviceKind::Accelerator
        } else if bits & cl_sys::CL_DEVICE_TYPE_CUSTOM != 0 {
            DeviceKind::Custom
        } else {
            DeviceKind::Other
        }
    }
}

/// Which device types to ask a platform for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DeviceTypeFilter {
    /// GPUs only.
    Gpu,
    /// CPUs only.
    Cpu,
    /// Accelerators only.
    Accelerator,
    /// Every device.
    #[default]
    All,
}

impl std::fmt::Display for DeviceTypeFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceTypeFilter::Gpu => "gpu",
            DeviceTypeFilter::Cpu => "cpu",
            DeviceTypeFilter::Accelerator => "accelerator",
            DeviceTypeFilter::All => "any",
        })
    }
}

impl DeviceTypeFilter {
    /// Whether a device of `kind` is of this type (one whose kind is unknown is of
    /// `All` only).
    pub fn admits(self, kind: Option<&DeviceKind>) -> bool {
        match self {
            DeviceTypeFilter::All => true,
            DeviceTypeFilter::Gpu => kind == Some(&DeviceKind::Gpu),
            DeviceTypeFilter::Cpu => kind == Some(&DeviceKind::Cpu),
            DeviceTypeFilter::Accelerator => kind == Some(&DeviceKind::Accelerator),
        }
    }

    pub(crate) fn bits(self) -> u64 {
        match self {
            DeviceTypeFilter::Gpu => cl_sys::CL_DEVICE_TYPE_GPU,
            DeviceTypeFilter::Cpu => cl_sys::CL_DEVICE_TYPE_CPU,
            DeviceTypeFilter::Accelerator => cl_sys::CL_DEVICE_TYPE_ACCELERATOR,
            DeviceTypeFilter::All => cl_sys::CL_DEVICE_TYPE_ALL,
        }
    }
}

/// PCI location of a device (`cl_khr_pci_bus_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciBus {
    /// PCI domain.
    pub domain: u32,
    /// PCI bus.
    pub bus: u32,
    /// PCI device.
    pub device: u32,
    /// PCI function.
    pub function: u32,
}

impl std::fmt::Display for PciBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// Everything clmulti reads about one device, as plain data (what reports serialize).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Index in its platform's device list (all types), as the loader gave it.
    pub index: usize,
    /// `platform_index:index`, the stable way to name it on the command line.
    pub selector: String,
    /// `CL_DEVICE_NAME`
    pub name: Queried<String>,
    /// `CL_DEVICE_VENDOR`
    pub vendor: Queried<String>,
    /// `CL_DEVICE_VENDOR_ID`
    pub vendor_id: Queried<u32>,
    /// `CL_DEVICE_VERSION`
    pub device_version: Queried<String>,
    /// `CL_DRIVER_VERSION`
    pub driver_version: Queried<String>,
    /// `CL_DEVICE_OPENCL_C_VERSION`
    pub opencl_c_version: Queried<String>,
    /// `CL_DEVICE_TYPE`
    pub kind: Queried<DeviceKind>,
    /// `CL_DEVICE_MAX_COMPUTE_UNITS`
    pub compute_units: Queried<u32>,
    /// `CL_DEVICE_GLOBAL_MEM_SIZE`, bytes.
    pub global_mem_bytes: Queried<u64>,
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, bytes.
    pub max_alloc_bytes: Queried<u64>,
    /// `CL_DEVICE_HOST_UNIFIED_MEMORY`
    pub host_unified_memory: Queried<bool>,
    /// `CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`, bytes.
    pub global_mem_cache_bytes: Queried<u64>,
    /// `CL_DEVICE_MEM_BASE_ADDR_ALIGN`, in bits (sub-buffer origins must be multiples).
    pub mem_base_addr_align_bits: Queried<u32>,
    /// `CL_DEVICE_MAX_WORK_GROUP_SIZE`
    pub max_work_group_size: Queried<usize>,
    /// `CL_DEVICE_EXTENSIONS`, split on spaces.
    pub extensions: Queried<Vec<String>>,
    /// `CL_DEVICE_PCI_BUS_INFO_KHR`, where `cl_khr_pci_bus_info` is exposed.
    pub pci_bus: Option<Queried<PciBus>>,
    /// `CL_DEVICE_UUID_KHR` as hex, where `cl_khr_device_uuid` is exposed.
    pub uuid: Option<Queried<String>>,
    /// For a sub-device: the device it was partitioned from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentDevice>,
    /// For a sub-device: how its parent was partitioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
}

/// The device a sub-device was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentDevice {
    /// Its selector (`platform:index`).
    pub selector: String,
    /// Its name.
    pub name: String,
    /// Its compute units.
    pub compute_units: Option<u32>,
}

/// The zero-terminated property list `clCreateSubDevices` takes.
fn partition_properties(partition: &Partition) -> Vec<isize> {
    // CL_DEVICE_PARTITION_EQUALLY, _BY_COUNTS, _BY_COUNTS_LIST_END (cl.h).
    const EQUALLY: isize = 0x1086;
    const BY_COUNTS: isize = 0x1087;
    const BY_COUNTS_LIST_END: isize = 0;
    match partition {
        Partition::Equally(n) => vec![EQUALLY, *n as isize, 0],
        Partition::ByCounts(counts) => {
            let mut list = vec![BY_COUNTS];
            list.extend(counts.iter().map(|c| *c as isize));
            list.extend([BY_COUNTS_LIST_END, 0]);
            list
        }
    }
}

/// The extension that defines `CL_MEM_DEVICE_ID_INTEL`.
pub const PIN_EXTENSION: &str = "cl_intel_create_mem_object_properties";

impl DeviceInfo {
    /// Whether the device lists an extension.
    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions
            .value()
            .is_some_and(|exts| exts.iter().any(|e| e == name))
    }

    /// Whether a buffer can be pinned to this device in a context of several
    /// (`CL_MEM_DEVICE_ID_INTEL`): it lists `cl_intel_create_mem_object_properties`, or
    /// it is NEO's (device version "OpenCL 3.0 NEO"), which accepts the property
    /// without listing the extension (NEO 22.43 parses it in
    /// opencl/source/helpers/cl_memory_properties_helpers.cpp).
    pub fn pins_buffers(&self) -> bool {
        self.has_extension(PIN_EXTENSION)
            || self
                .device_version
                .value()
                .is_some_and(|v| v.split_whitespace().any(|w| w == "NEO"))
    }

    /// The device name, or `?` when its query failed.
    pub fn display_name(&self) -> &str {
        self.name.value().map(String::as_str).unwrap_or("?")
    }
}

/// A device this process can use: its [`DeviceInfo`] and the live `cl_device_id`.
///
/// Root devices live as long as the process; a sub-device from [`Device::partition`]
/// holds a reference that is released on drop (and retained on clone), so the id
/// stays valid for as long as the `Device` exists.
#[derive(Debug)]
pub struct Device {
    info: DeviceInfo,
    id: cl_sys::cl_device_id,
    sub_device: bool,
}

// SAFETY: OpenCL device ids are thread-safe runtime objects (the spec lets any thread
// use them); the reference a sub-device holds is released exactly once, on drop.
unsafe impl Send for Device {}
// SAFETY: as above; `&Device` exposes only the id and immutable data.
unsafe impl Sync for Device {}

impl Clone for Device {
    fn clone(&self) -> Self {
        if self.sub_device {
            // SAFETY: `self` holds a live reference to the sub-device. Retaining a live
            // device cannot fail except on a broken runtime; then the clone would
            // outlive its reference, so abort rather than continue unsoundly.
            if unsafe { raw::retain_device(self.id) }.is_err() {
                std::process::abort();
            }
        }
        Device {
            info: self.info.clone(),
            id: self.id,
            sub_device: self.sub_device,
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.sub_device {
            // SAFETY: this `Device` owns one reference, released once here. A failure
            // cannot be acted on in a destructor.
            let _ = unsafe { raw::release_device(self.id) };
        }
    }
}

impl Device {
    /// Reads a root device of the platform at `platform` (its `index`-th device).
    ///
    /// # Safety
    /// `id` must be a root device handle returned by the loader in this process.
    pub(crate) unsafe fn root(platform: usize, index: usize, id: cl_sys::cl_device_id) -> Self {
        Device {
            info: read_device(platform, index, id),
            id,
            sub_device: false,
        }
    }

    /// The facts read from the device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The raw `cl_device_id`, for other OpenCL bindings (e.g. `opencl3`). It stays
    /// valid while this `Device` (or a clone) exists.
    pub fn id(&self) -> *mut c_void {
        self.id
    }

    /// Free global memory in bytes, where the device reports it
    /// (`CL_DEVICE_GLOBAL_FREE_MEMORY_AMD`, `cl_amd_device_attribute_query`).
    pub fn free_memory_amd(&self) -> Option<u64> {
        // SAFETY: `self.id` is live while `self` exists.
        let bytes = unsafe { raw::device_info(self.id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD) }.ok()?;
        // The AMD query returns size_t[2] in KiB: total free and largest free block.
        let kib = usize::from_ne_bytes(bytes.get(..8)?.try_into().ok()?);
        Some(kib as u64 * 1024)
    }

    /// Splits the device into sub-devices (`clCreateSubDevices`). Each is named
    /// `<parent selector>.<k>` and records its parent and the partition.
    pub fn partition(&self, partition: &Partition) -> Result<Vec<Device>, ClCode> {
        let properties = partition_properties(partition);
        // SAFETY: `self.id` is live; the list ends with 0.
        let ids = unsafe { raw::create_sub_devices(self.id, &properties) }?;
        let parent = ParentDevice {
            selector: self.info.selector.clone(),
            name: self.info.display_name().to_owned(),
            compute_units: self.info.compute_units.value().copied(),
        };
        Ok(ids
            .into_iter()
            .enumerate()
            .map(|(k, id)| {
                let mut info = read_device(0, k, id);
                info.selector = format!("{}.{k}", self.info.selector);
                info.parent = Some(parent.clone());
                info.partition = Some(partition.clone());
                // Each id arrives with one reference, which this `Device` now owns.
                Device {
                    info,
                    id,
                    sub_device: true,
                }
            })
            .collect())
    }
}

/// Reads every property of a live device.
// long: a flat table: one query per field of [`DeviceInfo`], in field order
fn read_device(platform: usize, index: usize, id: cl_sys::cl_device_id) -> DeviceInfo {
    // SAFETY: `id` is a live handle (the callers' contract).
    let bytes = |param| unsafe { raw::device_info(id, param) };
    let text = |param| Queried::from_result(bytes(param).map(to_text));
    let uint = |param| {
        Queried::from_result(
            bytes(param)
                .and_then(|b| scalar::<4>(&b))
                .map(u32::from_ne_bytes),
        )
    };
    let ulong = |param| {
        Queried::from_result(
            bytes(param)
                .and_then(|b| scalar::<8>(&b))
                .map(u64::from_ne_bytes),
        )
    };
    let extensions: Queried<Vec<String>> = Queried::from_result(
        bytes(cl_sys::CL_DEVICE_EXTENSIONS)
            .map(to_text)
            .map(|s| s.split_whitespace().map(str::to_owned).collect()),
    );
    let has = |ext: &str| {
        extensions
            .value()
            .is_some_and(|list| list.iter().any(|e| e == ext))
    };
    let pci_bus = has("cl_khr_pci_bus_info").then(|| {
        Queried::from_result(bytes(CL_DEVICE_PCI_BUS_INFO_KHR).and_then(|b| {
            let word = |i: usize| -> Result<u32, ClCode> {
                Ok(u32::from_ne_bytes(scalar::<4>(
                    b.get(i * 4..).unwrap_or(&[]),
                )?))
            };
            Ok(PciBus {
                domain: word(0)?,
                bus: word(1)?,
                device: word(2)?,
                function: word(3)?,
            })
        }))
    });
    // NVIDIA reports its PCI location through its own extension.
    let pci_bus = pci_bus.or_else(|| {
        has("cl_nv_device_attribute_query").then(|| {
            Queried::from_result((|| {
                Ok(PciBus {
                    domain: u32::from_ne_bytes(scalar::<4>(&bytes(CL_DEVICE_PCI_DOMAIN_ID_NV)?)?),
                    bus: u32::from_ne_bytes(scalar::<4>(&bytes(CL_DEVICE_PCI_BUS_ID_NV)?)?),
                    device: u32::from_ne_bytes(scalar::<4>(&bytes(CL_DEVICE_PCI_SLOT_ID_NV)?)?),
                    function: 0,
                })
            })())
        })
    });
    let uuid = has("cl_khr_device_uuid").then(|| {
        Queried::from_result(
            bytes(CL_DEVICE_UUID_KHR).map(|b| b.iter().map(|x| format!("{x:02x}")).collect()),
        )
    });
    DeviceInfo {
        index,
        selector: format!("{platform}:{index}"),
        name: text(cl_sys::CL_DEVICE_NAME),
        vendor: text(cl_sys::CL_DEVICE_VENDOR),
        vendor_id: uint(cl_sys::CL_DEVICE_VENDOR_ID),
        device_version: text(cl_sys::CL_DEVICE_VERSION),
        driver_version: text(cl_sys::CL_DRIVER_VERSION),
        opencl_c_version: text(cl_sys::CL_DEVICE_OPENCL_C_VERSION),
        kind: Queried::from_result(
            bytes(cl_sys::CL_DEVICE_TYPE)
                .and_then(|b| scalar::<8>(&b))
                .map(|b| DeviceKind::from_bits(u64::from_ne_bytes(b))),
        ),
        compute_units: uint(cl_sys::CL_DEVICE_MAX_COMPUTE_UNITS),
        global_mem_bytes: ulong(cl_sys::CL_DEVICE_GLOBAL_MEM_SIZE),
        max_alloc_bytes: ulong(cl_sys::CL_DEVICE_MAX_MEM_ALLOC_SIZE),
        host_unified_memory: Queried::from_result(
            bytes(cl_sys::CL_DEVICE_HOST_UNIFIED_MEMORY)
                .and_then(|b| scalar::<4>(&b))
                .map(|b| u32::from_ne_bytes(b) != 0),
        ),
        global_mem_cache_bytes: ulong(cl_sys::CL_DEVICE_GLOBAL_MEM_CACHE_SIZE),
        mem_base_addr_align_bits: uint(cl_sys::CL_DEVICE_MEM_BASE_ADDR_ALIGN),
        max_work_group_size: Queried::from_result(
            bytes(cl_sys::CL_DEVICE_MAX_WORK_GROUP_SIZE)
                .and_then(|b| scalar::<8>(&b))
                .map(usize::from_ne_bytes),
        ),
        extensions,
        pci_bus,
        uuid,
        parent: None,
        partition: None,
    }
}

pub(crate) fn to_text(bytes: Vec<u8>) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_owned()
}

/// The first `N` bytes of a reply, or `CL_INVALID_VALUE` when the runtime gave fewer.
fn scalar<const N: usize>(bytes: &[u8]) -> Result<[u8; N], ClCode> {
    bytes
        .get(..N)
        .and_then(|b| b.try_into().ok())
        .ok_or(ClCode(cl_sys::CL_INVALID_VALUE))
}
