//! Platforms as the ICD loader reports them, each with its devices.

use crate::device::{to_text, Device, DeviceInfo, DeviceTypeFilter, Queried};
use crate::host::HostLimits;
use crate::raw;
use crate::ClCode;
use serde::{Deserialize, Serialize};

/// Version of the shape [`DevicesReport`] serializes to; bumped when a field changes
/// meaning or is removed.
pub const DEVICES_SCHEMA_VERSION: u32 = 3;

/// A platform this process can use, with its live devices.
#[derive(Debug, Clone)]
pub struct Platform {
    /// Index in the loader's list. The order can change between boots: select by name.
    pub index: usize,
    /// `CL_PLATFORM_NAME`
    pub name: Queried<String>,
    /// `CL_PLATFORM_VENDOR`
    pub vendor: Queried<String>,
    /// `CL_PLATFORM_VERSION`
    pub version: Queried<String>,
    /// `CL_PLATFORM_PROFILE`
    pub profile: Queried<String>,
    /// The platform's devices of every type.
    pub devices: Vec<Device>,
    /// Set when listing the devices failed.
    pub devices_error: Option<String>,
}

/// What clmulti reads about one platform, as plain data (what reports serialize).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlatformInfo {
    /// Index in the loader's list. The order can change between boots: select by name.
    pub index: usize,
    /// `CL_PLATFORM_NAME`
    pub name: Queried<String>,
    /// `CL_PLATFORM_VENDOR`
    pub vendor: Queried<String>,
    /// `CL_PLATFORM_VERSION`
    pub version: Queried<String>,
    /// `CL_PLATFORM_PROFILE`
    pub profile: Queried<String>,
    /// The platform's devices of every type.
    pub devices: Vec<DeviceInfo>,
    /// Set when listing the devices failed.
    pub devices_error: Option<String>,
    /// Set when the platform is Intel's GPU runtime NEO running emulated devices in AUB
    /// mode (this process's environment holds its debug keys): what it is and what it
    /// does not exercise ([`crate::neo`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neo_emulation: Option<crate::neo::NeoEmulation>,
}

impl PlatformInfo {
    /// The platform name, or `?` when its query failed.
    pub fn display_name(&self) -> &str {
        self.name.value().map(String::as_str).unwrap_or("?")
    }

    /// Whether `needle` (case-insensitive) occurs in the platform's name or vendor.
    pub fn matches(&self, needle: &str) -> bool {
        name_or_vendor_contains(&self.name, &self.vendor, needle)
    }
}

fn name_or_vendor_contains(name: &Queried<String>, vendor: &Queried<String>, needle: &str) -> bool {
    let needle = needle.to_lowercase();
    [name, vendor].iter().any(|field| {
        field
            .value()
            .is_some_and(|v| v.to_lowercase().contains(&needle))
    })
}

/// Everything `clmulti devices --format json` prints: the platforms and the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicesReport {
    /// See [`DEVICES_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Every platform, with its devices.
    pub platforms: Vec<PlatformInfo>,
    /// The host limits that bound allocation.
    pub host: HostLimits,
}

impl DevicesReport {
    /// Reads the host limits and describes `platforms`, recognising NEO's emulated
    /// devices from this process's environment.
    pub fn new(platforms: &[Platform]) -> Self {
        DevicesReport {
            schema_version: DEVICES_SCHEMA_VERSION,
            platforms: platforms
                .iter()
                .map(|p| {
                    let mut info = p.info();
                    info.neo_emulation = p.neo_emulation(|k| std::env::var(k).ok());
                    info
                })
                .collect(),
            host: HostLimits::read(),
        }
    }
}

impl Platform {
    /// The platform as plain data.
    pub fn info(&self) -> PlatformInfo {
        PlatformInfo {
            index: self.index,
            name: self.name.clone(),
            vendor: self.vendor.clone(),
            version: self.version.clone(),
            profile: self.profile.clone(),
            devices: self.devices.iter().map(|d| d.info().clone()).collect(),
            devices_error: self.devices_error.clone(),
            neo_emulation: None,
        }
    }

    /// [`crate::neo::emulation`] for this platform: NEO on clmulti's emulated i915
    /// driver when this process runs under it, else NEO in AUB mode under `env`, with
    /// its first device's driver version and its device count.
    pub fn neo_emulation(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<crate::neo::NeoEmulation> {
        let driver = self
            .devices
            .first()
            .and_then(|d| d.info().driver_version.value().cloned())
            .unwrap_or_else(|| "?".into());
        crate::neo::on_emulated_driver(self.display_name(), &driver, crate::kmd_emu::active())
            .or_else(|| {
                crate::neo::emulation(self.display_name(), &driver, self.devices.len(), env)
            })
    }

    /// Whether `needle` (case-insensitive) occurs in the platform's name or vendor.
    pub fn matches(&self, needle: &str) -> bool {
        name_or_vendor_contains(&self.name, &self.vendor, needle)
    }

    /// The platform name, or `?` when its query failed.
    pub fn display_name(&self) -> &str {
        self.name.value().map(String::as_str).unwrap_or("?")
    }

    /// Devices of the given type, in the platform's order.
    pub fn devices_of(&self, filter: DeviceTypeFilter) -> impl Iterator<Item = &Device> {
        self.devices
            .iter()
            .filter(move |d| filter.admits(d.info().kind.value()))
    }
}

/// Told `true` right before `clGetPlatformIDs` (where the ICD loader loads every
/// runtime it finds, running their constructors) and `false` after it returned.
static LOADING_HOOKS: std::sync::Mutex<Vec<fn(bool)>> = std::sync::Mutex::new(Vec::new());

/// Adds a function told when the runtime loads: a watcher can then tell a crash or
/// a hang while loading from one later. Hooks must not call OpenCL.
pub fn on_loading(hook: fn(bool)) {
    LOADING_HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(hook);
}

fn platform_ids() -> Result<Vec<cl_sys::cl_platform_id>, ClCode> {
    let hooks = LOADING_HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for hook in &hooks {
        hook(true);
    }
    let ids = raw::platform_ids();
    for hook in &hooks {
        hook(false);
    }
    ids
}

/// Enumerates every platform and device.
///
/// Errors only when the loader itself fails or reports no platform at all;
/// a query that fails on one device is kept in that field.
pub fn platforms() -> Result<Vec<Platform>, crate::ProbeError> {
    let ids = platform_ids().map_err(crate::ProbeError::Loader)?;
    if ids.is_empty() {
        return Err(crate::ProbeError::NoPlatform);
    }
    Ok(ids
        .into_iter()
        .enumerate()
        .map(|(index, id)| read_platform(index, id))
        .collect())
}

fn read_platform(index: usize, id: cl_sys::cl_platform_id) -> Platform {
    let text = |param| {
        // SAFETY: `id` came from `raw::platform_ids`.
        Queried::from_result(unsafe { raw::platform_info(id, param) }.map(to_text))
    };
    // SAFETY: as above.
    let (devices, devices_error) =
        match unsafe { raw::device_ids(id, DeviceTypeFilter::All.bits()) } {
            Ok(ids) => (
                ids.into_iter()
                    .enumerate()
                    // SAFETY: each id came from `raw::device_ids`.
                    .map(|(d, dev)| unsafe { Device::root(index, d, dev) })
                    .collect(),
                None,
            ),
            Err(code) => (Vec::new(), Some(code.to_string())),
        };
    Platform {
        index,
        name: text(cl_sys::CL_PLATFORM_NAME),
        vendor: text(cl_sys::CL_PLATFORM_VENDOR),
        version: text(cl_sys::CL_PLATFORM_VERSION),
        profile: text(cl_sys::CL_PLATFORM_PROFILE),
        devices,
        devices_error,
    }
}

/// A string-valued `clGetPlatformInfo` of the platform at `index` (as in
/// [`Platform::index`]) by raw parameter: for queries no header names, such as an
/// OpenCL layer's own (clmulti-layer answers `ACTIVE_QUERY`).
pub fn platform_text(index: usize, param: u32) -> Result<String, ClCode> {
    let ids = platform_ids()?;
    let id = *ids.get(index).ok_or(ClCode::INVALID_PLATFORM)?;
    // SAFETY: `id` came from `raw::platform_ids` in this process.
    unsafe { raw::platform_info(id, param) }.map(to_text)
}

/// Whether a platform is PoCL, by its `CL_PLATFORM_NAME` ("Portable Computing
/// Language"), whatever case or spacing a build gives it.
pub fn is_pocl(platform_name: &str) -> bool {
    platform_name
        .to_ascii_lowercase()
        .contains("portable computing language")
}

/// PoCL's word for its CPU driver in `POCL_DEVICES`, from its `CL_PLATFORM_VERSION`:
/// `pthread` on PoCL 3, `cpu` from PoCL 4 on. One device per word.
pub fn pocl_cpu_driver(platform_version: &str) -> &'static str {
    if platform_version.contains("PoCL 3") {
        "pthread"
    } else {
        "cpu"
    }
}
