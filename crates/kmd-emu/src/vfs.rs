//! The files a runtime reads to find i915 or xe devices, kept as a real folder tree
//! (`dev/dri`, `sys/...`), and the rules that send `/dev/dri` and the devices' sysfs
//! paths there; the fdinfo and counts texts the kernel (or the emulation) shows.
//!
//! The tree is real so that every path call (`open`, `opendir`, `stat`, `readlink`,
//! `realpath`, `access`) works by rewriting the path only; results naming the tree
//! are rewritten back, so the process sees `/dev/dri/renderD128`, never the folder.

use crate::config::{Config, Device, Hardware, Kernel, DRM_MAJOR};
use crate::files::{drm_size, link, write_if_missing};
use crate::model::{ClientUsage, Counts, Region};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// A live file the emulation answers itself: the counts of this process.
pub use clmulti_contract::kmd_emu::COUNTS_PATH;

/// The emulated tree.
#[derive(Debug)]
pub struct Tree {
    root: Vec<u8>,
    bdfs: Vec<String>,
}

/// What a rewritten path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// A DRM device node (render or primary) of this device.
    Drm(usize),
    /// Any other file of the tree.
    Other,
}

impl Tree {
    /// The tree at `root` (made if missing) for `config`'s devices.
    pub fn build(root: &Path, config: &Config) -> io::Result<Self> {
        let tree = Self {
            root: root.as_os_str().as_encoded_bytes().to_vec(),
            bdfs: config.devices.iter().map(|d| d.bdf.clone()).collect(),
        };
        let marker = root.join("clmulti-kmd-emu");
        let description = tree_description(config);
        if std::fs::read_to_string(&marker).ok().as_deref() != Some(description.as_str()) {
            for device in &config.devices {
                match config.kernel() {
                    Kernel::I915 => make_device(root, config.hardware, device)?,
                    Kernel::Xe => crate::xe::sysfs::make_device(root, config.hardware, device)?,
                }
            }
            std::fs::write(&marker, description)?;
        }
        Ok(tree)
    }

    /// The folder.
    pub fn root(&self) -> &[u8] {
        &self.root
    }

    /// Whether `path` may be one of the emulated paths (a cheap first test).
    pub fn may_rewrite(path: &[u8]) -> bool {
        path.starts_with(b"/dev/dri") || path.starts_with(b"/sys/")
    }

    /// `path` inside the tree, when it is one of the emulated paths.
    pub fn rewrite(&self, path: &[u8]) -> Option<Vec<u8>> {
        let under = |prefix: &[u8]| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
        };
        let emulated = under(b"/dev/dri")
            || under(b"/sys/class/drm")
            || path.starts_with(format!("/sys/dev/char/{DRM_MAJOR}:").as_bytes())
            || self.bdfs.iter().any(|bdf| {
                under(format!("/sys/bus/pci/devices/{bdf}").as_bytes())
                    || under(format!("/sys/devices/pci0000:00/{bdf}").as_bytes())
            });
        emulated.then(|| [self.root.as_slice(), path].concat())
    }

    /// What a rewritten path names: a DRM node of a device, or another file.
    pub fn node(&self, rewritten: &[u8]) -> Node {
        let Some(inside) = rewritten.strip_prefix(self.root.as_slice()) else {
            return Node::Other;
        };
        let Some(name) = inside.strip_prefix(b"/dev/dri/") else {
            return Node::Other;
        };
        let text = String::from_utf8_lossy(name);
        let device = if let Some(n) = text.strip_prefix("renderD") {
            n.parse::<usize>().ok().and_then(|m| m.checked_sub(128))
        } else if let Some(n) = text.strip_prefix("card") {
            n.parse::<usize>().ok()
        } else if let Some(rest) = text.strip_prefix("by-path/pci-") {
            self.bdfs.iter().position(|bdf| {
                rest.strip_prefix(bdf.as_str())
                    .is_some_and(|s| s == "-render" || s == "-card")
            })
        } else {
            None
        };
        match device {
            Some(d) if d < self.bdfs.len() => Node::Drm(d),
            _ => Node::Other,
        }
    }

    /// A path or link target the kernel returned, with the tree's folder taken out;
    /// `None` when it does not name the tree.
    pub fn unrewrite<'a>(&self, result: &'a [u8]) -> Option<&'a [u8]> {
        result
            .strip_prefix(self.root.as_slice())
            .filter(|rest| rest.is_empty() || rest[0] == b'/')
    }
}

fn tree_description(config: &Config) -> String {
    let mut text = format!("clmulti-kmd-emu tree, {}\n", config.kernel().name());
    for d in &config.devices {
        let _ = writeln!(
            text,
            "{} card{} renderD{} {:#06x}",
            d.bdf,
            d.index,
            d.render_minor(),
            config.hardware.model.pci_id
        );
    }
    text
}

// long: a flat table: one device's files in the tree, file by file as the kernel lays them out
fn make_device(root: &Path, hw: &Hardware, device: &Device) -> io::Result<()> {
    let bdf = &device.bdf;
    let (id, revision) = (hw.model.pci_id, hw.revision);
    let card = format!("card{}", device.index);
    let render = format!("renderD{}", device.render_minor());
    let pci: PathBuf = root.join("sys/devices/pci0000:00").join(bdf);
    let dri = root.join("dev/dri");
    std::fs::create_dir_all(dri.join("by-path"))?;
    for node in [&card, &render] {
        write_if_missing(&dri.join(node), "")?;
    }
    link(
        &format!("../{card}"),
        &dri.join(format!("by-path/pci-{bdf}-card")),
    )?;
    link(
        &format!("../{render}"),
        &dri.join(format!("by-path/pci-{bdf}-render")),
    )?;
    let attributes = [
        ("vendor", "0x8086".to_owned()),
        ("device", format!("{id:#06x}")),
        ("revision", format!("{revision:#04x}")),
        ("class", "0x030000".to_owned()),
        ("subsystem_vendor", "0x8086".to_owned()),
        ("subsystem_device", "0x1020".to_owned()),
        ("numa_node", "-1".to_owned()),
        ("enable", "1".to_owned()),
        ("driver_override", "(null)".to_owned()),
        (
            "uevent",
            format!("DRIVER=i915\nPCI_CLASS=30000\nPCI_ID=8086:{id:04X}\nPCI_SLOT_NAME={bdf}\n"),
        ),
    ];
    std::fs::create_dir_all(&pci)?;
    for (name, value) in attributes {
        write_if_missing(&pci.join(name), &format!("{value}\n"))?;
    }
    let card_dir = pci.join("drm").join(&card);
    let render_dir = pci.join("drm").join(&render);
    std::fs::create_dir_all(card_dir.join("gt/gt0"))?;
    std::fs::create_dir_all(&render_dir)?;
    write_if_missing(
        &card_dir.join("dev"),
        &format!("{DRM_MAJOR}:{}\n", device.index),
    )?;
    write_if_missing(
        &render_dir.join("dev"),
        &format!("{DRM_MAJOR}:{}\n", device.render_minor()),
    )?;
    // The model's clock range (MHz), where NEO and sysfs readers look for it.
    let (min, max) = hw.clock_mhz;
    for (name, value) in [
        ("gt_max_freq_mhz", max),
        ("gt_min_freq_mhz", min),
        ("gt_RP0_freq_mhz", max),
        ("gt_RPn_freq_mhz", min),
    ] {
        write_if_missing(&card_dir.join(name), &format!("{value}\n"))?;
        write_if_missing(
            &card_dir.join("gt/gt0").join(name.replace("gt_", "rps_")),
            &format!("{value}\n"),
        )?;
    }
    link(
        &format!("../../../devices/pci0000:00/{bdf}"),
        &root.join("sys/bus/pci/devices").join(bdf),
    )?;
    link("../../../module/i915", &pci.join("driver")).ok();
    std::fs::create_dir_all(root.join("sys/module/i915"))?;
    write_if_missing(&root.join("sys/module/i915/version"), "")?;
    for (node, minor) in [
        (&card, device.index as u32),
        (&render, device.render_minor()),
    ] {
        link(
            &format!("../../devices/pci0000:00/{bdf}/drm/{node}"),
            &root.join(format!("sys/dev/char/{DRM_MAJOR}:{minor}")),
        )?;
        link(
            &format!("../../devices/pci0000:00/{bdf}/drm/{node}"),
            &root.join("sys/class/drm").join(node),
        )?;
        link("../..", &pci.join("drm").join(node).join("device")).ok();
    }
    Ok(())
}

/// The fdinfo i915 (Linux 6.8 and later) shows for a render-node client.
pub fn drm_fdinfo(header: &str, usage: &ClientUsage, config: &Config) -> String {
    let mut text = String::from(header);
    let bdf = config
        .devices
        .get(usage.device)
        .map_or("", |d| d.bdf.as_str());
    let _ = write!(
        text,
        "drm-driver:\ti915\ndrm-client-id:\t{}\ndrm-pdev:\t{bdf}\n",
        usage.client_id
    );
    // i915 lists the regions the device has.
    let regions: &[Region] = if config.hardware.discrete() {
        &[Region::System, Region::Local]
    } else {
        &[Region::System]
    };
    for &region in regions {
        let figures = usage.regions.get(&region).copied().unwrap_or_default();
        let name = region.name();
        for (kind, bytes) in [
            ("total", figures.total),
            ("shared", figures.shared),
            ("active", 0),
            ("resident", figures.resident),
            ("purgeable", 0),
        ] {
            let _ = writeln!(text, "drm-{kind}-{name}:\t{}", drm_size(bytes));
        }
    }
    // Each engine class the device has, with how many engines (i915's uabi order).
    for (class, engine) in (0..).zip(["render", "copy", "video", "video-enhance", "compute"]) {
        let capacity = config.hardware.engines_of_class(class);
        if capacity == 0 {
            continue;
        }
        let _ = writeln!(text, "drm-engine-{engine}:\t0 ns");
        if capacity > 1 {
            let _ = writeln!(text, "drm-engine-capacity-{engine}:\t{capacity}");
        }
    }
    text
}

/// The fdinfo of a dma-buf the driver (`i915`, `xe`) exported (drivers/dma-buf/dma-buf.c).
pub fn dmabuf_fdinfo(header: &str, size: u64, exporter: &str) -> String {
    format!("{header}size:\t{size}\ncount:\t1\nexp_name:\t{exporter}\n")
}

/// The counts file ([`COUNTS_PATH`]): `key: value` lines, documented in the crate docs.
pub fn counts_text(counts: &Counts, config: &Config) -> String {
    let kernel = config.kernel();
    let mut text = format!(
        "# clmulti-kmd-emu: {} emulated {} device(s), {} ({:#06x}); this process\n",
        config.devices.len(),
        kernel.name(),
        config.hardware.model.name,
        config.hardware.model.pci_id
    );
    let _ = writeln!(text, "devices: {}", config.devices.len());
    let _ = writeln!(text, "pci-id: {}", config.hardware.model.pci_id);
    let local = config.devices.first().map_or(0, |d| d.local_bytes);
    let _ = writeln!(text, "local-bytes: {local}");
    for ((device, region), c) in &counts.regions {
        let name = match kernel {
            Kernel::I915 => region.name(),
            Kernel::Xe => region.xe_name(),
        };
        if kernel == Kernel::Xe {
            let _ = writeln!(text, "deferred-objects-{device}-{name}: {}", c.deferred);
        }
        let _ = writeln!(text, "objects-{device}-{name}: {}", c.objects);
        let _ = writeln!(text, "objects-created-{device}-{name}: {}", c.created);
        let _ = writeln!(text, "bytes-{device}-{name}: {}", c.bytes);
        let _ = writeln!(text, "resident-bytes-{device}-{name}: {}", c.resident_bytes);
    }
    for (name, tally) in [
        ("maps", counts.maps),
        ("exports", counts.exports),
        ("imports", counts.imports),
        ("userptrs", counts.userptrs),
        ("files", counts.files),
        ("vms", counts.vms),
        ("contexts", counts.contexts),
    ] {
        let _ = writeln!(text, "{name}: {}", tally.live);
        let _ = writeln!(text, "{name}-created: {}", tally.total);
    }
    let _ = writeln!(text, "userptr-bytes: {}", counts.userptr_bytes);
    let _ = writeln!(text, "execbuffers: {}", counts.execbuffers);
    let _ = writeln!(text, "post-sync-writes: {}", counts.post_sync_writes);
    let _ = writeln!(text, "evictions: {}", counts.evictions);
    let _ = writeln!(text, "failed-ioctls: {}", counts.failed_ioctls);
    if kernel == Kernel::Xe {
        crate::xe::sysfs::counts_lines(&mut text, &counts.xe);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (Tree, tempdir::Dir) {
        let dir = tempdir::Dir::new();
        let tree = Tree::build(dir.path(), &Config::new(2, 16 << 30, 32 << 30)).unwrap();
        (tree, dir)
    }

    mod tempdir {
        /// A folder removed on drop.
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let path = std::env::temp_dir()
                    .join(format!("kmd-emu-vfs-test-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&path).unwrap();
                Self(path)
            }
            pub fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn only_the_emulated_paths_are_rewritten_and_nodes_name_their_device() {
        let (tree, dir) = tree();
        let root = dir.path().to_str().unwrap();
        let r = |p: &str| {
            tree.rewrite(p.as_bytes())
                .map(|v| String::from_utf8(v).unwrap())
        };
        assert_eq!(
            r("/dev/dri/renderD129").unwrap(),
            format!("{root}/dev/dri/renderD129")
        );
        assert_eq!(r("/dev/dri").unwrap(), format!("{root}/dev/dri"));
        assert_eq!(r("/dev/driver"), None);
        assert_eq!(
            r("/sys/bus/pci/devices/0000:04:00.0/drm").unwrap(),
            format!("{root}/sys/bus/pci/devices/0000:04:00.0/drm")
        );
        assert_eq!(r("/sys/bus/pci/devices/0000:00:01.0/drm"), None);
        assert_eq!(r("/sys/bus/pci/devices"), None);
        assert!(r("/sys/dev/char/226:128").is_some());
        assert_eq!(r("/sys/dev/char/1:3"), None);
        let node = |p: &str| tree.node(&tree.rewrite(p.as_bytes()).unwrap());
        assert_eq!(node("/dev/dri/renderD129"), Node::Drm(1));
        assert_eq!(node("/dev/dri/card0"), Node::Drm(0));
        assert_eq!(
            node("/dev/dri/by-path/pci-0000:04:00.0-render"),
            Node::Drm(1)
        );
        assert_eq!(node("/dev/dri/renderD130"), Node::Other, "two devices only");
        assert_eq!(node("/dev/dri/by-path"), Node::Other);
        let inside = format!("{root}/dev/dri/renderD128");
        assert_eq!(
            tree.unrewrite(inside.as_bytes()),
            Some(&b"/dev/dri/renderD128"[..])
        );
        assert_eq!(tree.unrewrite(b"/tmp/other"), None);
    }

    #[test]
    fn the_tree_has_what_neo_reads_and_links_resolve_inside_it() {
        let (_tree, dir) = tree();
        let root = dir.path();
        let by_path: Vec<String> = std::fs::read_dir(root.join("dev/dri/by-path"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(by_path.len(), 4);
        assert!(by_path.contains(&"pci-0000:03:00.0-render".to_owned()));
        let card = root.join("sys/bus/pci/devices/0000:03:00.0/drm/card0/gt_max_freq_mhz");
        assert_eq!(std::fs::read_to_string(card).unwrap(), "2400\n");
        let dev = root.join("sys/dev/char/226:129/dev");
        assert_eq!(std::fs::read_to_string(dev).unwrap(), "226:129\n");
        assert_eq!(
            std::fs::read_to_string(root.join("sys/class/drm/card1/device/device")).unwrap(),
            "0x56a0\n"
        );
        // A second build over the same folder keeps it.
        Tree::build(root, &Config::new(2, 16 << 30, 32 << 30)).unwrap();
    }

    #[test]
    fn a_b580s_counts_and_files_are_xes_and_name_the_model_once() {
        let dir = tempdir::Dir::new();
        let config = Config::of(&crate::config::B580, 1, 1 << 30, 32 << 30);
        Tree::build(dir.path(), &config).unwrap();
        // sysfs: the device memory asked for, not the model's default.
        let vram = dir
            .path()
            .join("sys/bus/pci/devices/0000:03:00.0/tile0/physical_vram_size_bytes");
        assert_eq!(std::fs::read_to_string(vram).unwrap(), "0x40000000\n");
        // The counts name the model (and so the driver) by its PCI id, once.
        let counts = counts_text(&Counts::default(), &config);
        assert!(
            counts.starts_with("# clmulti-kmd-emu: 1 emulated xe device(s), Arc B580 (0xe20b)"),
            "{counts}"
        );
        assert!(counts.contains("\npci-id: 57867\n"), "{counts}");
        assert!(!counts.contains("device-id") && !counts.contains("driver:"));
    }

    #[test]
    fn fdinfo_follows_the_kernels_format_and_probe_reads_it() {
        let config = Config::new(2, 16 << 30, 32 << 30);
        let mut usage = ClientUsage {
            device: 1,
            client_id: 7,
            regions: Default::default(),
        };
        usage.regions.insert(
            Region::System,
            crate::model::MemoryFigures {
                total: 1 << 20,
                shared: 1 << 20,
                resident: 4096,
            },
        );
        let text = drm_fdinfo("pos:\t0\n", &usage, &config);
        assert!(
            text.contains("drm-driver:\ti915\ndrm-client-id:\t7\ndrm-pdev:\t0000:04:00.0\n"),
            "{text}"
        );
        assert!(text.contains("drm-total-system0:\t1 MiB\n"));
        assert!(text.contains("drm-resident-system0:\t4 KiB\n"));
        assert!(text.contains("drm-total-local0:\t0\n"));
        assert_eq!(drm_size(1536), "1536", "not a whole KiB: bytes");
        assert_eq!(drm_size(3 << 30), "3072 MiB");
        assert!(dmabuf_fdinfo("", 4096, "i915").contains("exp_name:\ti915\n"));
    }
}
