//! Intel's GPU runtime, NEO (intel/compute-runtime): when it runs devices that are not
//! there (in AUB mode, or on its kernel-driver path over clmulti's emulated i915
//! driver, [`crate::kmd_emu`]), what each mode is, and NEO's own allocation log.
//!
//! # AUB mode
//! NEO reads debug keys from the environment when `NEOReadDebugKeys=1`. With
//! `SetCommandStreamReceiver=1` it records commands into an AUB capture instead of
//! sending them to a GPU, `ProductFamilyOverride=dg2` makes it emulate Arc A-series
//! (DG2) devices and `CreateMultipleRootDevices=N` gives N of them in one platform, on a
//! machine with no Intel GPU at all (`AUBDumpCaptureFileName=/dev/null` keeps the capture
//! from filling the disk). In that mode NEO uses its OS-agnostic memory manager: no
//! kernel driver, so no GTT, no dma-buf fds and no device memory; kernels are recorded,
//! not executed (NEO 22.43's devices report a largest work-group of 0 and refuse them;
//! NEO 26.27 accepts them and computes nothing). What NEO allocates on the host for each
//! buffer is NEO's real code. [`emulation`] recognises such a platform and
//! [`NeoEmulation::label`] says so in the words every report uses.
//!
//! # The allocation log
//! With `LogAllocationType=1` NEO prints `Created Graphics Allocation of type X` on
//! stdout each time it logs a graphics allocation, in release builds too (so on real
//! Arc GPUs as well). NEO 22.43 logs a buffer's allocation twice: when the memory
//! manager creates it (with the type asked for) and again when `Buffer::create` sets its
//! final type (`GraphicsAllocation::setAllocationType`); NEO 26.27 logs it once: a
//! count of lines is a count of log calls, not of distinct allocations. Host memory NEO
//! takes with plain `alignedMalloc` (the host copy of `MigrationSyncData`) is not a
//! graphics allocation and is never logged. Debug builds, and NEO 26 with
//! `LogAllocationStdout=1`, also print a detailed line per allocation with its memory
//! pool and root device. [`AllocationLog::parse`] counts every form, apart from any meaning;
//! [`AllocationLog::per_buffer`] turns two runs of the same case at N and 2N buffers
//! into log lines per buffer, in which the setup's allocations cancel out.
//!
//! Each line is flushed as NEO prints it (`printDebugString` calls `fflush`), so on a
//! shared stdout it never splits a line of another writer; `LogAllocationStdout`'s
//! detailed lines are plain `printf` and are not flushed, so clmulti never sets it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The environment keys that put NEO in AUB mode, in the order they are read.
pub const AUB_MODE_KEYS: [(&str, &str); 2] =
    [("NEOReadDebugKeys", "1"), ("SetCommandStreamReceiver", "1")];

/// What AUB mode does and does not exercise: the fixed part of every label.
pub const AUB_MODE_LIMITS: &str =
    "AUB mode: host-side allocation only, no kernel driver, kernels not executed";

/// Why no kernel runs on an emulated device, for outcomes that need a kernel.
pub const KERNELS_CANNOT_RUN: &str = "kernels cannot run on this emulated device (NEO AUB mode)";

/// Where the facts of a [`NeoEmulation`] come from, as clmulti's statements cite them.
pub const EVIDENCE: &str = "[inferred from the environment: NEOReadDebugKeys=1, \
SetCommandStreamReceiver=1; known: NEO gives the AUB receiver its OS-agnostic memory manager, \
not the DRM one (intel/compute-runtime, shared/source/execution_environment/execution_environment.cpp); \
measured: a kernel that doubles its input leaves it unchanged (NEO 26.27 enqueues it, NEO 22.43 \
reports CL_DEVICE_MAX_WORK_GROUP_SIZE 0 and refuses it with CL_INVALID_WORK_GROUP_SIZE (-54))]";

/// What the kernel-driver path label says beyond the devices: the fixed part of it.
pub const KERNEL_PATH_LIMITS: &str =
    "NEO's real kernel-driver path; the kernel driver is emulated \
(no GPU work runs; kernel accounting as modelled)";

/// The xe kernel-driver path's label beyond the devices: what the xe emulation does not
/// model, and the one key of NEO's it changes.
pub const XE_KERNEL_PATH_LIMITS: &str =
    "NEO's real kernel-driver path; the kernel driver is emulated (not modelled: GPU work, \
the kernel's own memory and GTT mappings, page faults; NEO's direct submission off, \
EnableDirectSubmission=0; kernel accounting as modelled)";

/// The limits part of a kernel-path label, by kernel driver.
fn kernel_path_limits(kernel: clmulti_contract::kmd_emu::Kernel) -> &'static str {
    match kernel {
        clmulti_contract::kmd_emu::Kernel::I915 => KERNEL_PATH_LIMITS,
        clmulti_contract::kmd_emu::Kernel::Xe => XE_KERNEL_PATH_LIMITS,
    }
}

/// Where the facts of a NEO on the emulated kernel driver come from.
pub const KERNEL_PATH_EVIDENCE: &str =
    "[measured: the process reads the emulated driver's counts file \
(/run/clmulti-kmd-emu/counts), which only clmulti-kmd-emu answers; known: without NEO's AUB keys \
NEO uses its DRM memory manager and i915 ioctls (intel/compute-runtime \
shared/source/os_interface/linux/drm_neo.cpp, drm_memory_manager.cpp)]";

/// Where the facts of a NEO on the emulated xe driver come from.
pub const XE_KERNEL_PATH_EVIDENCE: &str =
    "[measured: the process reads the emulated driver's counts file \
(/run/clmulti-kmd-emu/counts), which only clmulti-kmd-emu answers, and it says xe; known: NEO \
picks its xe ioctl helper when the render node's driver is xe (intel/compute-runtime \
shared/source/os_interface/linux/drm_neo.cpp, xe/ioctl_helper_xe.cpp)]";

/// The evidence of a kernel-path label, by kernel driver.
fn kernel_path_evidence(kernel: clmulti_contract::kmd_emu::Kernel) -> &'static str {
    match kernel {
        clmulti_contract::kmd_emu::Kernel::I915 => KERNEL_PATH_EVIDENCE,
        clmulti_contract::kmd_emu::Kernel::Xe => XE_KERNEL_PATH_EVIDENCE,
    }
}

/// NEO running on devices that are not there: in AUB mode, or on its kernel-driver path
/// over clmulti's emulated i915 driver (`kernel_driver`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeoEmulation {
    /// NEO's version, as its devices report `CL_DRIVER_VERSION` (`22.43.24595`).
    pub version: String,
    /// How many devices the platform exposes (`CreateMultipleRootDevices`).
    pub devices: usize,
    /// The emulated product, upper case (`DG2`), from `ProductFamilyOverride`; `None`
    /// when the key is unset (NEO then emulates its build's default product).
    pub product: Option<String>,
    /// The AUB capture file (`AUBDumpCaptureFileName`), when set.
    pub capture_file: Option<String>,
    /// Not AUB mode: NEO's own kernel-driver path over this emulated i915 driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_driver: Option<crate::kmd_emu::EmulatedDriver>,
}

impl NeoEmulation {
    /// "Intel GPU runtime NEO 22.43.24595 with 2 emulated DG2 devices, AUB mode:
    /// host-side allocation only, no kernel driver, kernels not executed".
    pub fn label(&self) -> String {
        if let Some(driver) = &self.kernel_driver {
            return format!(
                "Intel GPU runtime NEO {} on {}: {}",
                self.version,
                driver.devices_label(),
                kernel_path_limits(driver.kernel())
            );
        }
        label(
            &self.version,
            self.product.as_deref(),
            &self.devices.to_string(),
            self.devices != 1,
        )
    }

    /// Where its facts come from: AUB mode's evidence, or the kernel path's.
    pub fn evidence(&self) -> &'static str {
        match &self.kernel_driver {
            Some(driver) => kernel_path_evidence(driver.kernel()),
            None => EVIDENCE,
        }
    }

    /// [`label`](Self::label) with where its facts come from.
    pub fn statement(&self) -> String {
        let evidence = self.evidence();
        format!("{} {evidence}", self.label())
    }
}

fn label(version: &str, product: Option<&str>, devices: &str, plural: bool) -> String {
    let product = product.map_or_else(String::new, |p| format!("{p} "));
    let s = if plural { "s" } else { "" };
    format!("Intel GPU runtime NEO {version} with {devices} emulated {product}device{s}, {AUB_MODE_LIMITS}")
}

/// One label for several runs (a sweep over device counts): "Intel GPU runtime NEO
/// 22.43.24595 with 1, 2, 4 or 8 emulated DG2 devices, AUB mode: ...", one per NEO
/// version and product, in order.
pub fn combined_labels(all: &[NeoEmulation]) -> Vec<String> {
    // (kernel path, version, product) -> device counts.
    type Key = (bool, String, Option<String>);
    let mut groups: BTreeMap<Key, std::collections::BTreeSet<usize>> = BTreeMap::new();
    for e in all {
        let devices = e.kernel_driver.map_or(e.devices, |k| k.devices);
        groups
            .entry((
                e.kernel_driver.is_some(),
                e.version.clone(),
                e.product.clone(),
            ))
            .or_default()
            .insert(devices);
    }
    groups
        .into_iter()
        .map(|((kernel_path, version, product), counts)| {
            let counts: Vec<String> = counts.iter().map(usize::to_string).collect();
            let devices = match counts.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => counts.concat(),
            };
            if kernel_path {
                let s = if devices == "1" { "" } else { "s" };
                let model = product
                    .as_deref()
                    .and_then(clmulti_contract::kmd_emu::model_of_family)
                    .unwrap_or(clmulti_contract::kmd_emu::A770);
                format!(
                    "Intel GPU runtime NEO {version} on {devices} emulated {} {} device{s}: {}",
                    model.kernel.name(),
                    model.name,
                    kernel_path_limits(model.kernel)
                )
            } else {
                label(&version, product.as_deref(), &devices, devices != "1")
            }
        })
        .collect()
}

/// [`combined_labels`] in one line with where their facts come from (AUB mode's
/// evidence, the kernel path's, or both); `None` when no run was on NEO's emulation.
pub fn combined_statement(all: &[NeoEmulation]) -> Option<String> {
    let labels = combined_labels(all);
    if labels.is_empty() {
        return None;
    }
    let mut evidence = Vec::new();
    if all.iter().any(|e| e.kernel_driver.is_none()) {
        evidence.push(EVIDENCE);
    }
    for kernel in clmulti_contract::kmd_emu::KERNELS {
        if all
            .iter()
            .any(|e| e.kernel_driver.is_some_and(|d| d.kernel() == kernel))
        {
            evidence.push(kernel_path_evidence(kernel));
        }
    }
    Some(format!("{} {}", labels.join("; "), evidence.join(" ")))
}

/// Whether a platform is NEO, by its `CL_PLATFORM_NAME`: "Intel(R) OpenCL HD Graphics"
/// (NEO up to 2023) or "Intel(R) OpenCL Graphics" (later). Intel's CPU runtime ("Intel(R)
/// OpenCL") and FPGA emulator are not NEO.
pub fn is_neo(platform_name: &str) -> bool {
    platform_name.starts_with("Intel(R) OpenCL") && platform_name.contains("Graphics")
}

/// NEO in AUB mode, when `platform_name` is NEO's and `env` (a variable lookup: the
/// process's environment, or a scenario's `[env]` over it) holds [`AUB_MODE_KEYS`];
/// `None` for any other platform or mode (a real GPU among them).
///
/// `driver_version` is a device's `CL_DRIVER_VERSION`, `device_count` the platform's
/// devices.
///
/// ```
/// use clmulti_probe::neo;
/// let env = |k: &str| match k {
///     "NEOReadDebugKeys" | "SetCommandStreamReceiver" => Some("1".to_owned()),
///     "ProductFamilyOverride" => Some("dg2".to_owned()),
///     _ => None,
/// };
/// let aub = neo::emulation("Intel(R) OpenCL HD Graphics", "22.43.24595", 2, env).unwrap();
/// assert_eq!(
///     aub.label(),
///     "Intel GPU runtime NEO 22.43.24595 with 2 emulated DG2 devices, AUB mode: \
///      host-side allocation only, no kernel driver, kernels not executed"
/// );
/// assert!(neo::emulation("Intel(R) OpenCL", "2026.2", 1, env).is_none());
/// ```
pub fn emulation(
    platform_name: &str,
    driver_version: &str,
    device_count: usize,
    env: impl Fn(&str) -> Option<String>,
) -> Option<NeoEmulation> {
    if !is_neo(platform_name) {
        return None;
    }
    let set = |key: &str, want: &str| env(key).is_some_and(|v| v.trim() == want);
    if !AUB_MODE_KEYS.iter().all(|(k, v)| set(k, v)) {
        return None;
    }
    let non_empty = |key: &str| {
        env(key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    Some(NeoEmulation {
        version: driver_version.trim().to_owned(),
        devices: device_count,
        product: non_empty("ProductFamilyOverride").map(|p| p.to_uppercase()),
        capture_file: non_empty("AUBDumpCaptureFileName"),
        kernel_driver: None,
    })
}

/// NEO on its kernel-driver path over clmulti's emulated i915 driver, when
/// `platform_name` is NEO's and this process runs under that emulation
/// ([`crate::kmd_emu::active`]); `None` on real GPUs and for other runtimes.
pub fn on_emulated_driver(
    platform_name: &str,
    driver_version: &str,
    driver: Option<crate::kmd_emu::EmulatedDriver>,
) -> Option<NeoEmulation> {
    let driver = driver.filter(|_| is_neo(platform_name))?;
    Some(NeoEmulation {
        version: driver_version.trim().to_owned(),
        devices: driver.devices,
        product: Some(driver.model().family.into()),
        capture_file: None,
        kernel_driver: Some(driver),
    })
}

/// [`emulation`] for a run, which may use only some of the platform's devices: the
/// scenario's `[env]` over this process's environment, and the platform's device count
/// as NEO sets it, `CreateMultipleRootDevices` (1 when unset or unreadable).
pub fn emulation_for_run(
    platform_name: &str,
    driver_version: &str,
    scenario_env: &BTreeMap<String, String>,
) -> Option<NeoEmulation> {
    if let Some(kernel_path) =
        on_emulated_driver(platform_name, driver_version, crate::kmd_emu::active())
    {
        return Some(kernel_path);
    }
    let env = |k: &str| {
        scenario_env
            .get(k)
            .cloned()
            .or_else(|| std::env::var(k).ok())
    };
    let roots = env("CreateMultipleRootDevices")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    emulation(platform_name, driver_version, roots, env)
}

/// The variables that turn NEO's allocation log on: type lines on stdout, flushed one
/// by one (see the module's documentation for why not `LogAllocationStdout`).
pub const LOG_KEYS: [(&str, &str); 2] = [("NEOReadDebugKeys", "1"), ("LogAllocationType", "1")];

/// One detailed allocation line's kind: type, memory pool and root device, as far as
/// the line says.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AllocationKey {
    /// `BUFFER`, `BUFFER_HOST_MEMORY`, ... (NEO 26 prints camel case names: `buffer`).
    #[serde(rename = "type")]
    pub allocation_type: String,
    /// `System4KBPages`, `LocalMemory`, ...
    pub pool: Option<String>,
    /// The root device's index.
    pub root_device: Option<u32>,
}

/// NEO's allocation log, counted line by line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocationLog {
    /// `Created Graphics Allocation of type X` lines, by X.
    pub created: BTreeMap<String, u64>,
    /// Detailed lines (` ThreadID: ... AllocationType: X MemoryPool: P Root device
    /// index: R ...` from NEO 22 debug builds, ` ThreadID: ... Type: X Pool: P Root
    /// index: R ...` from NEO 23+ with `LogAllocationStdout=1`), by type, pool and root
    /// device. Serialized as a list.
    #[serde(with = "key_counts")]
    pub detailed: BTreeMap<AllocationKey, u64>,
    /// Lines that are neither (the program's own output, other NEO messages).
    pub other_lines: u64,
}

mod key_counts {
    use super::AllocationKey;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    #[derive(Serialize, Deserialize)]
    struct Entry {
        #[serde(flatten)]
        key: AllocationKey,
        count: u64,
    }

    pub fn serialize<S: Serializer>(
        map: &BTreeMap<AllocationKey, u64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let entries: Vec<Entry> = map
            .iter()
            .map(|(key, &count)| Entry {
                key: key.clone(),
                count,
            })
            .collect();
        entries.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<AllocationKey, u64>, D::Error> {
        Ok(Vec::<Entry>::deserialize(d)?
            .into_iter()
            .map(|e| (e.key, e.count))
            .collect())
    }
}

/// The text between `label` and the next of `ends` (or the line's end), trimmed.
fn field<'a>(line: &'a str, label: &str, ends: &[&str]) -> Option<&'a str> {
    let start = line.find(label)? + label.len();
    let rest = &line[start..];
    let end = ends
        .iter()
        .filter_map(|e| rest.find(e))
        .min()
        .unwrap_or(rest.len());
    Some(rest[..end].trim()).filter(|v| !v.is_empty())
}

impl AllocationLog {
    /// Counts every allocation line of `text` (stdout of a process NEO ran in, or a
    /// log file); any other line is counted in [`other_lines`](Self::other_lines).
    pub fn parse(text: &str) -> Self {
        let mut log = AllocationLog::default();
        for line in text.lines() {
            log.add_line(line);
        }
        log
    }

    fn add_line(&mut self, line: &str) {
        const CREATED: &str = "Created Graphics Allocation of type ";
        if let Some(rest) = line.trim_start().strip_prefix(CREATED) {
            if let Some(kind) = rest.split_whitespace().next() {
                *self.created.entry(kind.to_owned()).or_default() += 1;
                return;
            }
        }
        if line.trim_start().starts_with("ThreadID:") {
            // NEO 22 (debug builds): "AllocationType: X MemoryPool: P Root device index: R".
            // NEO 23+: "Type: X Pool: P Root index: R Size: S".
            let (kind, pool, root) = if line.contains(" AllocationType: ") {
                (
                    field(line, " AllocationType: ", &[" MemoryPool: "]),
                    field(line, " MemoryPool: ", &[" Root device index: "]),
                    field(line, " Root device index: ", &[" GPU address: "]),
                )
            } else {
                (
                    field(line, " Type: ", &[" Pool: "]),
                    field(line, " Pool: ", &[" Root index: "]),
                    field(
                        line,
                        " Root index: ",
                        &[" Size: ", " CPU VA: ", " GPU VA: "],
                    ),
                )
            };
            if let Some(kind) = kind {
                let key = AllocationKey {
                    allocation_type: kind.to_owned(),
                    pool: pool.map(str::to_owned),
                    root_device: root.and_then(|r| r.parse().ok()),
                };
                *self.detailed.entry(key).or_default() += 1;
                return;
            }
        }
        self.other_lines += 1;
    }

    /// Allocation lines of either form.
    pub fn allocation_lines(&self) -> u64 {
        self.created.values().sum::<u64>() + self.detailed.values().sum::<u64>()
    }

    /// Lines per buffer, by type (and by pool and root device where detailed lines say
    /// them), between a run of `buffers_small` buffers and one of `buffers_large` of
    /// the same case: `(count(large) - count(small)) / (large - small)`. What the
    /// setup allocates cancels out. `None` when `buffers_large <= buffers_small`.
    pub fn per_buffer(
        small: &AllocationLog,
        buffers_small: u64,
        large: &AllocationLog,
        buffers_large: u64,
    ) -> Option<AllocationsPerBuffer> {
        let extra = buffers_large
            .checked_sub(buffers_small)
            .filter(|n| *n > 0)? as f64;
        fn slope<K: Ord + Clone>(
            small: &BTreeMap<K, u64>,
            large: &BTreeMap<K, u64>,
            extra: f64,
        ) -> BTreeMap<K, f64> {
            let mut out = BTreeMap::new();
            for key in small.keys().chain(large.keys()) {
                let a = small.get(key).copied().unwrap_or(0) as f64;
                let b = large.get(key).copied().unwrap_or(0) as f64;
                out.insert(key.clone(), (b - a) / extra);
            }
            out
        }
        let group = |pick: &dyn Fn(&AllocationKey) -> Option<String>, log: &AllocationLog| {
            let mut counts: BTreeMap<String, u64> = BTreeMap::new();
            for (key, n) in &log.detailed {
                if let Some(k) = pick(key) {
                    *counts.entry(k).or_default() += n;
                }
            }
            counts
        };
        let by_type_of = |log: &AllocationLog| {
            let mut counts = log.created.clone();
            if counts.is_empty() {
                counts = group(&|k| Some(k.allocation_type.clone()), log);
            }
            counts
        };
        let pool = |k: &AllocationKey| k.pool.clone();
        let root = |k: &AllocationKey| k.root_device.map(|r| r.to_string());
        Some(AllocationsPerBuffer {
            buffers: (buffers_small, buffers_large),
            by_type: slope(&by_type_of(small), &by_type_of(large), extra),
            by_pool: slope(&group(&pool, small), &group(&pool, large), extra),
            by_root_device: slope(&group(&root, small), &group(&root, large), extra),
        })
    }
}

/// NEO's allocation log lines per buffer: [`AllocationLog::per_buffer`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationsPerBuffer {
    /// The two runs' buffer counts (N, 2N).
    pub buffers: (u64, u64),
    /// Lines per buffer by allocation type: from the `Created ...` lines, or from the
    /// detailed ones when the log has only those (a line printed in both forms counts
    /// once).
    pub by_type: BTreeMap<String, f64>,
    /// Detailed lines per buffer by memory pool (empty when the log does not say).
    pub by_pool: BTreeMap<String, f64>,
    /// Detailed lines per buffer by root device index (empty when the log does not say).
    pub by_root_device: BTreeMap<String, f64>,
}

impl AllocationsPerBuffer {
    /// Lines per buffer of every type.
    pub fn total(&self) -> f64 {
        self.by_type.values().sum()
    }

    /// This case's lines per buffer by type minus `other`'s (a type one of them lacks
    /// counts 0 there): what a shared context costs over per-device contexts.
    pub fn minus(&self, other: &AllocationsPerBuffer) -> BTreeMap<String, f64> {
        self.by_type
            .keys()
            .chain(other.by_type.keys())
            .map(|k| {
                let at = |p: &AllocationsPerBuffer| p.by_type.get(k).copied().unwrap_or(0.0);
                (k.clone(), at(self) - at(other))
            })
            .collect()
    }

    /// `BUFFER 2.00, BUFFER_HOST_MEMORY 2.00` (types whose rate rounds to 0 left out).
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .by_type
            .iter()
            .filter(|(_, v)| v.abs() >= 0.005)
            .map(|(k, v)| format!("{k} {v:.2}"))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests;
