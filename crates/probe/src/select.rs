//! Choosing a platform and devices by name, vendor substring or index.
//!
//! The loader's platform order changes between boots (seen with NVIDIA and PoCL on
//! one machine), so names are the reliable selector; indices are for one session.

use crate::device::{Device, DeviceInfo, DeviceTypeFilter};
use crate::platform::{Platform, PlatformInfo};
use crate::ClCode;
use clmulti_scenario::{DeviceSet, DeviceType, Devices, Partition};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which platform to use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PlatformSelector {
    /// The first platform that has devices of the wanted type.
    #[default]
    Auto,
    /// The platform at this index in the loader's list.
    Index(usize),
    /// The first platform whose name or vendor contains this (case-insensitive).
    Name(String),
}

impl PlatformSelector {
    /// `""` or `auto` is [`Auto`](Self::Auto), a number an index, anything else a name.
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        if text.is_empty() || text.eq_ignore_ascii_case("auto") {
            PlatformSelector::Auto
        } else if let Ok(i) = text.parse() {
            PlatformSelector::Index(i)
        } else {
            PlatformSelector::Name(text.to_owned())
        }
    }
}

impl fmt::Display for PlatformSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlatformSelector::Auto => f.write_str("auto"),
            PlatformSelector::Index(i) => write!(f, "{i}"),
            PlatformSelector::Name(n) => write!(f, "{n:?}"),
        }
    }
}

/// Which of the platform's devices (of the wanted type) to use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeviceChoice {
    /// The first `n`.
    Count(usize),
    /// These indices into the platform's devices of the wanted type.
    Indices(Vec<usize>),
    /// All of them.
    All,
}

/// A request for devices: what a scenario's `[devices]` table or `--device` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRequest {
    /// Which platform.
    pub platform: PlatformSelector,
    /// Which device type.
    pub device_type: DeviceTypeFilter,
    /// Which devices of that type (among the sub-devices, when partitioned).
    pub devices: DeviceChoice,
    /// When no platform has the wanted type, use devices of any type instead.
    pub fallback_to_any_type: bool,
    /// Split every device of that type into sub-devices first.
    pub partition: Option<Partition>,
}

impl From<&clmulti_scenario::Platform> for PlatformSelector {
    /// What a scenario's `devices.platform` asks for.
    fn from(p: &clmulti_scenario::Platform) -> Self {
        match p {
            clmulti_scenario::Platform::Auto => PlatformSelector::Auto,
            clmulti_scenario::Platform::Index(i) => PlatformSelector::Index(*i),
            clmulti_scenario::Platform::Name(n) => PlatformSelector::Name(n.clone()),
        }
    }
}

impl From<&Devices> for DeviceRequest {
    /// What a scenario's `[devices]` table asks for.
    fn from(d: &Devices) -> Self {
        DeviceRequest {
            platform: PlatformSelector::from(&d.platform),
            device_type: d.device_type.into(),
            devices: match &d.set {
                DeviceSet::Count(n) => DeviceChoice::Count(*n),
                DeviceSet::Indices(v) => DeviceChoice::Indices(v.clone()),
            },
            fallback_to_any_type: d.fallback_to_any_type,
            partition: d.partition.clone(),
        }
    }
}

impl From<DeviceType> for DeviceTypeFilter {
    fn from(t: DeviceType) -> Self {
        match t {
            DeviceType::Gpu => DeviceTypeFilter::Gpu,
            DeviceType::Cpu => DeviceTypeFilter::Cpu,
            DeviceType::Accelerator => DeviceTypeFilter::Accelerator,
            DeviceType::All => DeviceTypeFilter::All,
        }
    }
}

impl DeviceRequest {
    /// Parses a command-line selector `PLATFORM[:DEVICE]`: `nvidia`, `pocl:1`, `0:0`, `auto`.
    ///
    /// ```
    /// use clmulti_probe::{DeviceChoice, DeviceRequest, PlatformSelector};
    /// let r = DeviceRequest::from_selector("NVIDIA CUDA:1");
    /// assert_eq!(r.platform, PlatformSelector::Name("NVIDIA CUDA".into()));
    /// assert_eq!(r.devices, DeviceChoice::Indices(vec![1]));
    /// ```
    pub fn from_selector(text: &str) -> Self {
        let (platform, devices) = match text.rsplit_once(':') {
            Some((p, d)) if d.trim().parse::<usize>().is_ok() => (
                PlatformSelector::parse(p),
                DeviceChoice::Indices(vec![d.trim().parse().unwrap_or(0)]),
            ),
            _ => (PlatformSelector::parse(text), DeviceChoice::Count(1)),
        };
        DeviceRequest {
            platform,
            device_type: DeviceTypeFilter::All,
            devices,
            fallback_to_any_type: false,
            partition: None,
        }
    }
}

/// The platform and devices a request resolved to.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Index of the chosen platform in the loader's list.
    pub platform_index: usize,
    /// Its name.
    pub platform_name: String,
    /// Its version (`CL_PLATFORM_VERSION`).
    pub platform_version: String,
    /// The chosen devices, in request order.
    pub devices: Vec<Device>,
    /// True when no device of the wanted type existed and another type was used.
    pub fell_back_to_any_type: bool,
}

/// Why a request could not be met.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// No platform matched the selector.
    #[error("{missing} on this machine; the ICD loader lists {available}")]
    UnknownPlatform {
        /// What is not there: `platform index 9 is not present`, `no platform's name
        /// or vendor contains "x"`.
        missing: String,
        /// `index: name` of each platform.
        available: String,
    },
    /// No platform has devices of the wanted type.
    #[error(
        "no device of type {device_type} on {where_}; run `clmulti devices` to see what exists"
    )]
    NoDevices {
        /// The wanted type.
        device_type: DeviceTypeFilter,
        /// Which platform(s) were searched.
        where_: String,
    },
    /// Fewer devices than asked for.
    #[error("asked for {wanted} devices of type {device_type} on {platform}, found {found}{}", fallback_note(*.fell_back_from))]
    NotEnough {
        /// The type first asked for, when none existed and any type was counted.
        fell_back_from: Option<DeviceTypeFilter>,
        /// How many were asked for.
        wanted: usize,
        /// How many exist.
        found: usize,
        /// The type asked for.
        device_type: DeviceTypeFilter,
        /// The platform searched.
        platform: String,
    },
    /// A device index beyond the list.
    #[error(
        "device index {index} is out of range: {platform} has {found} device(s) of type {device_type}{}", fallback_note(*.fell_back_from)
    )]
    NoSuchIndex {
        /// The type first asked for, when none existed and any type was counted.
        fell_back_from: Option<DeviceTypeFilter>,
        /// The index asked for.
        index: usize,
        /// How many exist.
        found: usize,
        /// The type asked for.
        device_type: DeviceTypeFilter,
        /// The platform searched.
        platform: String,
    },
    /// A device could not be partitioned as asked.
    #[error("cannot partition device {selector} ({name}) {partition}: {error}; the runtime may not support it (see CL_DEVICE_PARTITION_PROPERTIES in clinfo)")]
    Partition {
        /// The device.
        selector: String,
        /// Its name.
        name: String,
        /// The partition asked for.
        partition: Partition,
        /// What `clCreateSubDevices` returned.
        error: ClCode,
    },
}

fn fallback_note(from: Option<DeviceTypeFilter>) -> String {
    from.map_or_else(String::new, |t| {
        format!(" (no device of type {t} exists, so devices of any type were counted)")
    })
}

impl SelectError {
    /// The scenario key the error is about: `devices.platform`, `devices.type`,
    /// `devices.count` (or `devices.indices`), `devices.partition`.
    pub fn key(&self) -> &'static str {
        match self {
            SelectError::UnknownPlatform { .. } => "devices.platform",
            SelectError::NoDevices { .. } => "devices.type",
            SelectError::NotEnough { .. } => "devices.count",
            SelectError::NoSuchIndex { .. } => "devices.indices",
            SelectError::Partition { .. } => "devices.partition",
        }
    }

    /// The key as `request` wrote it: the entry of `devices.indices` that names a
    /// missing device (`devices.indices[1]`), else [`key`](Self::key).
    pub fn key_in(&self, request: &DeviceRequest) -> String {
        match (self, &request.devices) {
            (SelectError::NoSuchIndex { index, .. }, DeviceChoice::Indices(list)) => list
                .iter()
                .position(|i| i == index)
                .map_or(self.key().to_owned(), |at| format!("devices.indices[{at}]")),
            _ => self.key().to_owned(),
        }
    }

    /// Every problem of its kind in `request`: for a missing index, one error for
    /// each entry of `devices.indices` beyond the devices found (`[5, 7]` on two
    /// devices: both), so that a check can name each entry; otherwise this one.
    pub fn each_missing(self, request: &DeviceRequest) -> Vec<SelectError> {
        match (&self, &request.devices) {
            (
                SelectError::NoSuchIndex {
                    fell_back_from,
                    found,
                    device_type,
                    platform,
                    ..
                },
                DeviceChoice::Indices(list),
            ) => list
                .iter()
                .filter(|index| **index >= *found)
                .map(|&index| SelectError::NoSuchIndex {
                    fell_back_from: *fell_back_from,
                    index,
                    found: *found,
                    device_type: *device_type,
                    platform: platform.clone(),
                })
                .collect(),
            _ => vec![self],
        }
    }

    /// Whether the machine simply has fewer devices than asked for: the request is
    /// fine, this machine cannot run it (a run to skip, not bad input).
    pub fn is_too_few_devices(&self) -> bool {
        matches!(
            self,
            SelectError::NotEnough { .. } | SelectError::NoSuchIndex { .. }
        )
    }
}

/// Resolves a request against enumerated platforms.
pub fn select(platforms: &[Platform], request: &DeviceRequest) -> Result<Selection, SelectError> {
    let (mut selection, fell_back) =
        with_fallback(request, |filter| try_select(platforms, request, filter))?;
    selection.fell_back_to_any_type = fell_back;
    Ok(selection)
}

/// The devices a run with `request` would get from `platforms` as `clmulti devices`
/// lists them (they live in the process that loaded them), chosen as [`select`]
/// chooses; `Ok(None)` for a partitioned request, whose sub-devices only the
/// runtime can make.
pub fn select_listed(
    platforms: &[PlatformInfo],
    request: &DeviceRequest,
) -> Result<Option<Vec<DeviceInfo>>, SelectError> {
    if request.partition.is_some() {
        return Ok(None);
    }
    let (devices, _) = with_fallback(request, |filter| {
        let platform = pick_platform(platforms, &request.platform, filter)?;
        pick_devices(
            platform.devices_of(filter),
            &request.devices,
            filter,
            platform,
        )
    })?;
    Ok(Some(devices))
}

/// `choose(request.device_type)`, or, when no device of that type exists and the
/// request allows it, `choose(All)`, with errors naming the type asked for; and
/// whether it fell back.
fn with_fallback<T>(
    request: &DeviceRequest,
    choose: impl Fn(DeviceTypeFilter) -> Result<T, SelectError>,
) -> Result<(T, bool), SelectError> {
    match choose(request.device_type) {
        Err(SelectError::NoDevices { .. })
            if request.fallback_to_any_type && request.device_type != DeviceTypeFilter::All =>
        {
            let chosen = choose(DeviceTypeFilter::All).map_err(|mut e| {
                if let SelectError::NotEnough {
                    fell_back_from,
                    device_type,
                    ..
                }
                | SelectError::NoSuchIndex {
                    fell_back_from,
                    device_type,
                    ..
                } = &mut e
                {
                    *fell_back_from = Some(request.device_type);
                    *device_type = request.device_type;
                }
                e
            })?;
            Ok((chosen, true))
        }
        other => other.map(|chosen| (chosen, false)),
    }
}

/// A platform as selection reads it: loaded ([`Platform`]) or listed
/// ([`PlatformInfo`]).
trait Listed {
    type Device: Clone;
    fn index(&self) -> usize;
    fn name(&self) -> &str;
    fn has(&self, needle: &str) -> bool;
    fn devices_of(&self, filter: DeviceTypeFilter) -> Vec<Self::Device>;
    /// `platform 0 (Portable Computing Language)`.
    fn label(&self) -> String {
        format!("platform {} ({})", self.index(), self.name())
    }
}

impl Listed for Platform {
    type Device = Device;
    fn index(&self) -> usize {
        self.index
    }
    fn name(&self) -> &str {
        self.display_name()
    }
    fn has(&self, needle: &str) -> bool {
        self.matches(needle)
    }
    fn devices_of(&self, filter: DeviceTypeFilter) -> Vec<Device> {
        Platform::devices_of(self, filter).cloned().collect()
    }
}

impl Listed for PlatformInfo {
    type Device = DeviceInfo;
    fn index(&self) -> usize {
        self.index
    }
    fn name(&self) -> &str {
        self.display_name()
    }
    fn has(&self, needle: &str) -> bool {
        self.matches(needle)
    }
    fn devices_of(&self, filter: DeviceTypeFilter) -> Vec<DeviceInfo> {
        self.devices
            .iter()
            .filter(|d| filter.admits(d.kind.value()))
            .cloned()
            .collect()
    }
}

/// The platform `selector` names (for `Auto`: the first with devices of `filter`).
fn pick_platform<'a, P: Listed>(
    platforms: &'a [P],
    selector: &PlatformSelector,
    filter: DeviceTypeFilter,
) -> Result<&'a P, SelectError> {
    let listed = || platforms.iter().map(|p| (p.index(), p.name()));
    let platform = match selector {
        PlatformSelector::Auto => platforms
            .iter()
            .find(|p| !p.devices_of(filter).is_empty())
            .ok_or_else(|| SelectError::NoDevices {
                device_type: filter,
                where_: "any platform".into(),
            })?,
        PlatformSelector::Index(i) => platforms
            .iter()
            .find(|p| p.index() == *i)
            .ok_or_else(|| unknown(listed(), selector))?,
        PlatformSelector::Name(n) => platforms
            .iter()
            .find(|p| p.has(n))
            .ok_or_else(|| unknown(listed(), selector))?,
    };
    if platform.devices_of(filter).is_empty() {
        return Err(SelectError::NoDevices {
            device_type: filter,
            where_: platform.label(),
        });
    }
    Ok(platform)
}

/// The devices `choice` takes of `available` (of type `filter`, on `platform`).
fn pick_devices<D: Clone>(
    mut available: Vec<D>,
    choice: &DeviceChoice,
    filter: DeviceTypeFilter,
    platform: &impl Listed,
) -> Result<Vec<D>, SelectError> {
    match choice {
        DeviceChoice::All => Ok(available),
        DeviceChoice::Count(n) if *n > available.len() => Err(SelectError::NotEnough {
            fell_back_from: None,
            wanted: *n,
            found: available.len(),
            device_type: filter,
            platform: platform.label(),
        }),
        DeviceChoice::Count(n) => {
            available.truncate(*n);
            Ok(available)
        }
        DeviceChoice::Indices(indices) => indices
            .iter()
            .map(|&index| {
                available
                    .get(index)
                    .cloned()
                    .ok_or_else(|| SelectError::NoSuchIndex {
                        fell_back_from: None,
                        index,
                        found: available.len(),
                        device_type: filter,
                        platform: platform.label(),
                    })
            })
            .collect(),
    }
}

/// Platform, partition, then the devices asked for.
fn try_select(
    platforms: &[Platform],
    request: &DeviceRequest,
    filter: DeviceTypeFilter,
) -> Result<Selection, SelectError> {
    let platform = pick_platform(platforms, &request.platform, filter)?;
    let mut available: Vec<Device> = Platform::devices_of(platform, filter).cloned().collect();
    if let Some(partition) = &request.partition {
        let mut subs = Vec::new();
        for device in &available {
            subs.extend(
                device
                    .partition(partition)
                    .map_err(|error| SelectError::Partition {
                        selector: device.info().selector.clone(),
                        name: device.info().display_name().to_owned(),
                        partition: partition.clone(),
                        error,
                    })?,
            );
        }
        available = subs;
    }
    let devices = pick_devices(available, &request.devices, filter, platform)?;
    Ok(Selection {
        platform_index: platform.index,
        platform_name: platform.display_name().to_owned(),
        platform_version: platform.version.value().cloned().unwrap_or_default(),
        devices,
        fell_back_to_any_type: false,
    })
}

/// Whether `selector` names one of `platforms` (as `clmulti devices --format json`
/// lists them) the way [`select`] looks it up; `Auto` names any. For a check that
/// cannot hold the platforms themselves: they live in the process that loaded them.
pub fn check_platform(
    platforms: &[PlatformInfo],
    selector: &PlatformSelector,
) -> Result<(), SelectError> {
    let present = match selector {
        PlatformSelector::Auto => true,
        PlatformSelector::Index(i) => platforms.iter().any(|p| p.index == *i),
        PlatformSelector::Name(n) => platforms.iter().any(|p| p.matches(n)),
    };
    if present {
        return Ok(());
    }
    Err(unknown(
        platforms.iter().map(|p| (p.index, p.display_name())),
        selector,
    ))
}

fn unknown<'a>(
    listed: impl Iterator<Item = (usize, &'a str)>,
    selector: &PlatformSelector,
) -> SelectError {
    let missing = match selector {
        PlatformSelector::Index(i) => format!("platform index {i} is not present"),
        other => {
            // A selector is echoed, never a megabyte of one.
            let mut text = other.to_string();
            if text.len() > 120 {
                let cut = (0..=100)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text = format!("{}... ({} bytes)", &text[..cut], text.len());
            }
            format!("no platform's name or vendor contains {text}")
        }
    };
    SelectError::UnknownPlatform {
        missing,
        available: listed
            .map(|(index, name)| format!("{index}: {name}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_missing_index_is_its_own_error_at_its_own_entry() {
        let request = DeviceRequest {
            platform: PlatformSelector::Index(0),
            device_type: DeviceTypeFilter::Cpu,
            devices: DeviceChoice::Indices(vec![5, 0, 7]),
            fallback_to_any_type: false,
            partition: None,
        };
        let (found, device_type, platform) = (2, DeviceTypeFilter::Cpu, "platform 0".into());
        let first = SelectError::NoSuchIndex {
            fell_back_from: None,
            index: 5,
            found,
            device_type,
            platform,
        };
        let said: Vec<String> = (first.clone().each_missing(&request).iter())
            .map(|e| format!("{} {e}", e.key_in(&request)))
            .collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with("devices.indices[0] device index 5"),
            "{said:?}"
        );
        assert!(
            said[1].starts_with("devices.indices[2] device index 7"),
            "{said:?}"
        );
        // Any other request's error is itself alone.
        let counted = DeviceRequest {
            devices: DeviceChoice::Count(4),
            ..request
        };
        assert_eq!(first.clone().each_missing(&counted), vec![first]);
    }
}
