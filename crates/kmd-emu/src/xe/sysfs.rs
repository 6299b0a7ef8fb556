//! What xe shows outside its ioctls: the sysfs files of each device as xe lays them out
//! (the PCI device, its DRM nodes, `tile0/gt0/freq0/...`), a client's fdinfo in the
//! drm-usage-stats format with xe's memory types and engine cycles, and xe's lines of
//! the emulation's counts file.

use crate::config::{Device, Hardware, DRM_MAJOR};
use crate::files::{drm_size, link, write_if_missing};
use crate::model::{XeClientUsage, XeCounts};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// One device's files under `root` (the tree [`crate::vfs::Tree`] sends paths into).
pub fn make_device(root: &Path, hw: &Hardware, device: &Device) -> io::Result<()> {
    let pci = root.join("sys/devices/pci0000:00").join(&device.bdf);
    pci_files(&pci, hw, &device.bdf)?;
    drm_nodes(root, &pci, device)?;
    tile_files(&pci, hw, device)?;
    link(
        &format!("../../../devices/pci0000:00/{}", device.bdf),
        &root.join("sys/bus/pci/devices").join(&device.bdf),
    )?;
    link("../../../module/xe", &pci.join("driver")).ok();
    std::fs::create_dir_all(root.join("sys/module/xe"))?;
    write_if_missing(&root.join("sys/module/xe/version"), "")
}

/// The PCI device's attributes: ids, class, and the link (PCIe 4.0 x8).
fn pci_files(pci: &Path, hw: &Hardware, bdf: &str) -> io::Result<()> {
    let (id, revision) = (hw.model.pci_id, hw.revision);
    let attributes = [
        ("vendor", "0x8086".to_owned()),
        ("device", format!("{id:#06x}")),
        ("revision", format!("{revision:#04x}")),
        ("class", "0x030000".to_owned()),
        ("subsystem_vendor", "0x8086".to_owned()),
        ("subsystem_device", "0x1100".to_owned()),
        ("numa_node", "-1".to_owned()),
        ("enable", "1".to_owned()),
        ("driver_override", "(null)".to_owned()),
        ("max_link_speed", "16.0 GT/s PCIe".to_owned()),
        ("max_link_width", "8".to_owned()),
        ("current_link_speed", "16.0 GT/s PCIe".to_owned()),
        ("current_link_width", "8".to_owned()),
        (
            "uevent",
            format!("DRIVER=xe\nPCI_CLASS=30000\nPCI_ID=8086:{id:04X}\nPCI_SLOT_NAME={bdf}\n"),
        ),
    ];
    std::fs::create_dir_all(pci)?;
    for (name, value) in attributes {
        write_if_missing(&pci.join(name), &format!("{value}\n"))?;
    }
    Ok(())
}

/// `drm/cardN` and `drm/renderD(128+N)` with their `dev` numbers, and the links
/// `/dev/dri`, `/sys/dev/char` and `/sys/class/drm` resolve through.
fn drm_nodes(root: &Path, pci: &Path, device: &Device) -> io::Result<()> {
    let card = format!("card{}", device.index);
    let render = format!("renderD{}", device.render_minor());
    let dri = root.join("dev/dri");
    std::fs::create_dir_all(dri.join("by-path"))?;
    for (node, minor, kind) in [
        (&card, device.index as u32, "card"),
        (&render, device.render_minor(), "render"),
    ] {
        write_if_missing(&dri.join(node), "")?;
        link(
            &format!("../{node}"),
            &dri.join(format!("by-path/pci-{}-{kind}", device.bdf)),
        )?;
        let dir = pci.join("drm").join(node);
        std::fs::create_dir_all(&dir)?;
        write_if_missing(&dir.join("dev"), &format!("{DRM_MAJOR}:{minor}\n"))?;
        let target = format!("../../devices/pci0000:00/{}/drm/{node}", device.bdf);
        link(
            &target,
            &root.join(format!("sys/dev/char/{DRM_MAJOR}:{minor}")),
        )?;
        link(&target, &root.join("sys/class/drm").join(node))?;
        link("../..", &dir.join("device")).ok();
    }
    Ok(())
}

/// `tile0`: its VRAM size, and per GT (0 graphics, 1 media) the frequency files NEO
/// reads (`freq0/max_freq`, `rp0_freq`...) and the compute-engine mode.
fn tile_files(pci: &Path, hw: &Hardware, device: &Device) -> io::Result<()> {
    let tile = pci.join("tile0");
    std::fs::create_dir_all(&tile)?;
    write_if_missing(
        &tile.join("physical_vram_size_bytes"),
        &format!("{:#x}\n", device.local_bytes),
    )?;
    // The model's clock range (MHz) on the graphics GT; media's range is invented.
    let (min, max) = hw.clock_mhz;
    for (gt, max, min) in [("gt0", max, min), ("gt1", 2000, 400)] {
        let freq = tile.join(gt).join("freq0");
        std::fs::create_dir_all(&freq)?;
        for (name, value) in [
            ("max_freq", max),
            ("rp0_freq", max),
            ("rpa_freq", max),
            ("rpe_freq", min * 2),
            ("min_freq", min),
            ("rpn_freq", min),
            ("act_freq", 0),
            ("cur_freq", min),
        ] {
            write_if_missing(&freq.join(name), &format!("{value}\n"))?;
        }
    }
    write_if_missing(&tile.join("gt0/ccs_mode"), "1\n")
}

/// The fdinfo xe (Linux 6.13 and later) shows for a render-node client of a `hw`: memory
/// per type (`system`, `gtt`, `vram0`, `stolen`), then cycles per engine class (none run
/// here: 0 busy, the clock for the total).
pub fn fdinfo(
    header: &str,
    usage: &XeClientUsage,
    hw: &Hardware,
    bdf: &str,
    gpu_timestamp: u64,
) -> String {
    let mut text = String::from(header);
    let _ = write!(
        text,
        "drm-driver:\txe\ndrm-client-id:\t{}\ndrm-pdev:\t{bdf}\n",
        usage.client_id
    );
    for name in ["system", "gtt", "vram0", "stolen"] {
        let f = usage.regions.get(name).copied().unwrap_or_default();
        for (kind, bytes) in [("total", f.total), ("shared", f.shared), ("active", 0)] {
            let _ = writeln!(text, "drm-{kind}-{name}:\t{}", drm_size(bytes));
        }
        let _ = writeln!(text, "drm-resident-{name}:\t{}", drm_size(f.resident));
        // Only system memory can be purged (xe_drm_client.c).
        if name == "system" {
            let _ = writeln!(text, "drm-purgeable-{name}:\t0");
        }
    }
    // Each engine class the device has, with how many engines (xe's class order).
    for (class, name) in (0..).zip(["rcs", "bcs", "vcs", "vecs", "ccs"]) {
        let capacity = hw.engines_of_class(class);
        if capacity == 0 {
            continue;
        }
        let _ = writeln!(text, "drm-cycles-{name}:\t0");
        let _ = writeln!(text, "drm-total-cycles-{name}:\t{gpu_timestamp}");
        if capacity > 1 {
            let _ = writeln!(text, "drm-engine-capacity-{name}:\t{capacity}");
        }
    }
    text
}

/// xe's lines of the counts file (documented in the crate docs).
pub fn counts_lines(text: &mut String, xe: &XeCounts) {
    for (name, tally) in [
        ("vm-binds", xe.binds),
        ("exec-queues", xe.exec_queues),
        ("syncobjs", xe.syncobjs),
    ] {
        let _ = writeln!(text, "{name}: {}", tally.live);
        let _ = writeln!(text, "{name}-created: {}", tally.total);
    }
    for (name, value) in [
        ("vm-unbinds", xe.unbinds),
        ("vm-prefetches", xe.prefetches),
        ("execs", xe.execs),
        ("user-fence-writes", xe.user_fence_writes),
        ("madvises", xe.madvises),
    ] {
        let _ = writeln!(text, "{name}: {value}");
    }
}
