//! Memory the kernel's GPU drivers account to this process, outside its RSS.
//!
//! Each DRM file descriptor's `/proc/<pid>/fdinfo/<fd>` carries the kernel's "DRM
//! client usage stats" (Documentation/gpu/drm-usage-stats.rst): one `key: value [unit]`
//! per line, `drm-driver` always, `drm-pdev` (PCI address) and `drm-client-id` (shared
//! by the fds of one client) usually, and memory per region as `drm-total-<region>`,
//! `drm-shared-`, `drm-resident-`, `drm-purgeable-`, `drm-active-`, or amdgpu's older
//! `drm-memory-<region>`. Units: none (bytes), `KiB`, `MiB`. dma-buf fds carry
//! `exp_name:` and `size:` instead.
//!
//! Why it matters: with two Intel GPUs in one context, every device allocation gets a
//! host mirror in the driver's GTT, accounted here and not in VmRSS
//! (intel/compute-runtime#980).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Which figure of a DRM memory region a key reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DrmMemoryKind {
    /// `drm-total-<region>`: all buffers the client can see in the region.
    Total,
    /// `drm-shared-<region>`: of those, shared with other clients.
    Shared,
    /// `drm-resident-<region>`: resident in the region.
    Resident,
    /// `drm-purgeable-<region>`: resident and purgeable.
    Purgeable,
    /// `drm-active-<region>`: in use by the GPU now.
    Active,
    /// `drm-memory-<region>`: amdgpu's older key (resident memory).
    Memory,
}

impl DrmMemoryKind {
    fn from_key(word: &str) -> Option<Self> {
        Some(match word {
            "total" => DrmMemoryKind::Total,
            "shared" => DrmMemoryKind::Shared,
            "resident" => DrmMemoryKind::Resident,
            "purgeable" => DrmMemoryKind::Purgeable,
            "active" => DrmMemoryKind::Active,
            "memory" => DrmMemoryKind::Memory,
            _ => return None,
        })
    }

    /// The key's word: `total`, `resident`, ...
    pub fn word(self) -> &'static str {
        match self {
            DrmMemoryKind::Total => "total",
            DrmMemoryKind::Shared => "shared",
            DrmMemoryKind::Resident => "resident",
            DrmMemoryKind::Purgeable => "purgeable",
            DrmMemoryKind::Active => "active",
            DrmMemoryKind::Memory => "memory",
        }
    }
}

/// One DRM memory figure of this process, summed over its clients on one device.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DrmUsage {
    /// The device's PCI address (`drm-pdev`), when the driver gives it.
    pub pdev: Option<String>,
    /// The kernel driver (`drm-driver`): `xe`, `i915`, `amdgpu`, ...
    pub driver: String,
    /// The region, as the driver names it: `gtt`, `vram0`, `system0`, ...
    pub region: String,
    /// Which figure.
    pub kind: DrmMemoryKind,
    /// Bytes.
    pub bytes: u64,
}

/// What one fd's fdinfo says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FdInfo {
    /// A DRM client.
    Drm(DrmClient),
    /// A dma-buf: exported buffer memory shared between devices or processes.
    DmaBuf {
        /// The exporter (`exp_name:`).
        exporter: String,
        /// Bytes (`size:`).
        size: u64,
    },
    /// Anything else.
    Other,
}

/// One DRM client as its fdinfo describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrmClient {
    /// `drm-driver`
    pub driver: String,
    /// `drm-pdev`
    pub pdev: Option<String>,
    /// `drm-client-id`: fds with the same id are one client.
    pub client_id: Option<String>,
    /// `(region, kind) -> bytes`
    pub memory: BTreeMap<(String, DrmMemoryKind), u64>,
}

/// Parses one fdinfo file's text.
pub fn parse_fdinfo(text: &str) -> FdInfo {
    let mut driver = None;
    let mut pdev = None;
    let mut client_id = None;
    let mut memory = BTreeMap::new();
    let (mut exporter, mut size) = (None, None);
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "drm-driver" => driver = Some(value.to_owned()),
            "drm-pdev" => pdev = Some(value.to_owned()),
            "drm-client-id" => client_id = Some(value.to_owned()),
            "exp_name" => exporter = Some(value.to_owned()),
            "size" => size = value.parse::<u64>().ok(),
            _ => {
                let Some(rest) = key.strip_prefix("drm-") else {
                    continue;
                };
                let Some((word, region)) = rest.split_once('-') else {
                    continue;
                };
                // `drm-total-cycles-<engine>` counts GPU cycles, not memory.
                if region.starts_with("cycles-") || region.is_empty() {
                    continue;
                }
                if let (Some(kind), Some(bytes)) = (DrmMemoryKind::from_key(word), bytes(value)) {
                    memory.insert((region.to_owned(), kind), bytes);
                }
            }
        }
    }
    match (driver, exporter, size) {
        (Some(driver), _, _) => FdInfo::Drm(DrmClient {
            driver,
            pdev,
            client_id,
            memory,
        }),
        (None, Some(exporter), Some(size)) => FdInfo::DmaBuf { exporter, size },
        _ => FdInfo::Other,
    }
}

/// `123`, `4 KiB`, `23 MiB` (also `GiB`, `kB`) in bytes.
fn bytes(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let n: u64 = parts.next()?.parse().ok()?;
    let shift = match parts.next() {
        None => 0,
        Some("KiB" | "kB" | "KB") => 10,
        Some("MiB" | "MB") => 20,
        Some("GiB" | "GB") => 30,
        Some(_) => return None,
    };
    n.checked_mul(1 << shift)
}

/// Sums DRM clients into [`DrmUsage`] figures per device, region and kind, counting
/// each client once however many fds it has.
pub fn summarize<'a>(clients: impl IntoIterator<Item = &'a DrmClient>) -> Vec<DrmUsage> {
    let mut seen = std::collections::HashSet::new();
    let mut sums: BTreeMap<(Option<String>, String, String, DrmMemoryKind), u64> = BTreeMap::new();
    for client in clients {
        if let Some(id) = &client.client_id {
            if !seen.insert((client.driver.clone(), client.pdev.clone(), id.clone())) {
                continue;
            }
        }
        for ((region, kind), bytes) in &client.memory {
            *sums
                .entry((
                    client.pdev.clone(),
                    client.driver.clone(),
                    region.clone(),
                    *kind,
                ))
                .or_default() += bytes;
        }
    }
    sums.into_iter()
        .map(|((pdev, driver, region, kind), bytes)| DrmUsage {
            pdev,
            driver,
            region,
            kind,
            bytes,
        })
        .collect()
}

/// Memory limits GPU drivers publish in sysfs; each `None` when absent here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverLimits {
    /// TTM's cap on pages it may pin in system memory (`/sys/module/ttm/parameters/
    /// pages_limit` times the page size): the GTT ceiling of xe and amdgpu.
    pub ttm_pages_limit_bytes: Option<u64>,
    /// amdgpu's per-card figures, by PCI address.
    pub amdgpu: Vec<AmdgpuMemory>,
}

/// amdgpu's `mem_info_*` files of one card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmdgpuMemory {
    /// The card's PCI address.
    pub pdev: String,
    /// `mem_info_vram_total`
    pub vram_total: Option<u64>,
    /// `mem_info_vram_used`
    pub vram_used: Option<u64>,
    /// `mem_info_gtt_total`
    pub gtt_total: Option<u64>,
    /// `mem_info_gtt_used`
    pub gtt_used: Option<u64>,
}

impl DriverLimits {
    /// Reads the limits under a sysfs root (`/sys` on a real machine).
    pub fn read(sys: &Path, page_size: u64) -> Self {
        let number = |p: &Path| fs::read_to_string(p).ok()?.trim().parse::<u64>().ok();
        let ttm_pages_limit_bytes = number(&sys.join("module/ttm/parameters/pages_limit"))
            .and_then(|pages| pages.checked_mul(page_size));
        let mut amdgpu = Vec::new();
        if let Ok(cards) = fs::read_dir(sys.join("class/drm")) {
            let mut cards: Vec<_> = cards.filter_map(Result::ok).map(|e| e.path()).collect();
            cards.sort();
            for card in cards {
                let device = card.join("device");
                let Some(pdev) = fs::read_to_string(device.join("uevent"))
                    .ok()
                    .and_then(|u| {
                        u.lines()
                            .find_map(|l| l.strip_prefix("PCI_SLOT_NAME="))
                            .map(str::to_owned)
                    })
                else {
                    continue;
                };
                let info = |name: &str| number(&device.join(name));
                let memory = AmdgpuMemory {
                    pdev,
                    vram_total: info("mem_info_vram_total"),
                    vram_used: info("mem_info_vram_used"),
                    gtt_total: info("mem_info_gtt_total"),
                    gtt_used: info("mem_info_gtt_used"),
                };
                let any = memory.vram_total.is_some() || memory.gtt_total.is_some();
                if any && !amdgpu.iter().any(|m: &AmdgpuMemory| m.pdev == memory.pdev) {
                    amdgpu.push(memory);
                }
            }
        }
        DriverLimits {
            ttm_pages_limit_bytes,
            amdgpu,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_non_memory_keys() {
        let text = "pos:\t0\nflags:\t02100002\ndrm-driver:\txe\ndrm-client-id:\t7\n\
                    drm-pdev:\t0000:03:00.0\ndrm-total-gtt:\t4 KiB\ndrm-total-vram0:\t23 MiB\n\
                    drm-resident-system:\t100\ndrm-cycles-rcs:\t123456\ndrm-total-cycles-rcs:\t999\n\
                    drm-engine-capacity-ccs:\t4\n";
        let FdInfo::Drm(client) = parse_fdinfo(text) else {
            panic!("not a DRM client");
        };
        assert_eq!(client.driver, "xe");
        assert_eq!(client.pdev.as_deref(), Some("0000:03:00.0"));
        assert_eq!(client.memory.len(), 3, "{:?}", client.memory);
        assert_eq!(client.memory[&("gtt".into(), DrmMemoryKind::Total)], 4096);
        assert_eq!(
            client.memory[&("vram0".into(), DrmMemoryKind::Total)],
            23 << 20
        );
        assert_eq!(
            client.memory[&("system".into(), DrmMemoryKind::Resident)],
            100
        );
    }

    #[test]
    fn a_client_with_two_fds_counts_once() {
        let a = "drm-driver:\txe\ndrm-client-id:\t7\ndrm-total-gtt:\t8 KiB\n";
        let other = "drm-driver:\txe\ndrm-client-id:\t8\ndrm-total-gtt:\t1 KiB\n";
        let clients: Vec<DrmClient> = [a, a, other]
            .iter()
            .map(|t| match parse_fdinfo(t) {
                FdInfo::Drm(c) => c,
                other => panic!("{other:?}"),
            })
            .collect();
        let usage = summarize(&clients);
        assert_eq!(usage.len(), 1);
        assert_eq!(usage[0].bytes, 9 << 10);
    }

    #[test]
    fn dma_buf_and_plain_files() {
        assert_eq!(
            parse_fdinfo("pos:\t0\nflags:\t02\nmnt_id:\t9\nino:\t5\nsize:\t1048576\ncount:\t1\nexp_name:\txe\n"),
            FdInfo::DmaBuf {
                exporter: "xe".into(),
                size: 1 << 20
            }
        );
        assert_eq!(
            parse_fdinfo("pos:\t0\nflags:\t0100000\nmnt_id:\t25\n"),
            FdInfo::Other
        );
    }
}
