//! DRM client stats, dma-bufs and system memory, read from fixture files in the
//! kernel's exact formats (tests/fixtures/drm/FORMAT.md names each source): no DRM
//! device exists on the machines that run these tests.

use clmulti_probe::drm::{parse_fdinfo, FdInfo};
use clmulti_probe::{DriverLimits, DrmMemoryKind, UsageReader};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/drm")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

fn client(name: &str) -> clmulti_probe::drm::DrmClient {
    match parse_fdinfo(&fixture(name)) {
        FdInfo::Drm(c) => c,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn each_driver_format_parses_with_its_units() {
    let xe = client("xe-client.fdinfo");
    assert_eq!(
        (
            xe.driver.as_str(),
            xe.pdev.as_deref(),
            xe.client_id.as_deref()
        ),
        ("xe", Some("0000:03:00.0"), Some("9"))
    );
    assert_eq!(
        xe.memory[&("gtt".into(), DrmMemoryKind::Total)],
        14372 << 10
    );
    assert_eq!(
        xe.memory[&("vram0".into(), DrmMemoryKind::Shared)],
        4096 << 20
    );
    assert_eq!(xe.memory[&("system".into(), DrmMemoryKind::Total)], 0);
    assert!(
        xe.memory
            .keys()
            .all(|(region, _)| !region.starts_with("cycles")),
        "cycle counters are not memory"
    );

    let i915 = client("i915-client.fdinfo");
    assert_eq!(i915.driver, "i915");
    assert!(
        i915.memory.keys().any(|(region, _)| region == "local0"),
        "{:?}",
        i915.memory
    );

    // amdgpu before 6.13: drm-memory-<region> in KiB, with a space before the tab.
    let old = client("amdgpu-old.fdinfo");
    assert_eq!(
        old.memory[&("vram".into(), DrmMemoryKind::Memory)],
        4214784 << 10
    );
    assert_eq!(
        old.memory[&("gtt".into(), DrmMemoryKind::Memory)],
        20492 << 10
    );
    assert!(!old
        .memory
        .keys()
        .any(|(r, _)| r.starts_with("memory") || r.contains("visible")));

    // amdgpu since 6.13: both the standard keys and the old ones.
    let new = client("amdgpu-new.fdinfo");
    assert!(new
        .memory
        .contains_key(&("vram".into(), DrmMemoryKind::Total)));
    assert!(new
        .memory
        .contains_key(&("vram".into(), DrmMemoryKind::Memory)));

    assert_eq!(
        parse_fdinfo(&fixture("dmabuf.fdinfo")),
        FdInfo::DmaBuf {
            exporter: "drm".into(),
            size: 4 << 30
        }
    );
    assert_eq!(parse_fdinfo(&fixture("plain-file.fdinfo")), FdInfo::Other);
}

/// A `/proc` of one process: its fds link to DRM devices, a dma-buf and /dev/null.
fn proc_tree() -> PathBuf {
    // One tree per call: the tests that build one run in parallel.
    static TREES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = TREES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!("clmulti-proc-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let this = root.join("self");
    std::fs::create_dir_all(this.join("fd")).unwrap();
    std::fs::create_dir_all(this.join("fdinfo")).unwrap();
    std::fs::write(this.join("statm"), "262144 25600 1000 10 0 20000 0\n").unwrap();
    std::fs::write(this.join("maps"), "a\nb\nc\n").unwrap();
    std::fs::copy(fixtures().join("meminfo"), root.join("meminfo")).unwrap();
    let fds = [
        ("3", "/dev/dri/renderD128", "xe-client.fdinfo"),
        ("4", "/dev/dri/renderD128", "xe-client-shared.fdinfo"),
        ("5", "/dev/dri/renderD129", "xe-peer.fdinfo"),
        ("6", "/dmabuf:", "dmabuf.fdinfo"),
        ("7", "/dev/null", "plain-file.fdinfo"),
        ("8", "/dev/dri/card2", "amdgpu-old.fdinfo"),
    ];
    for (fd, target, info) in fds {
        std::os::unix::fs::symlink(target, this.join("fd").join(fd)).unwrap();
        std::fs::copy(fixtures().join(info), this.join("fdinfo").join(fd)).unwrap();
    }
    root
}

#[test]
fn a_whole_proc_tree_is_read_counting_each_client_once() {
    let root = proc_tree();
    let usage = UsageReader::open_at(&root).read();
    let p = usage.process;
    assert_eq!(p.open_fds, 6);
    assert_eq!((p.rss_bytes, p.memory_maps), (25600 * 4096, Some(3)));
    assert_eq!((p.dmabuf_fds, p.dmabuf_bytes), (1, 4 << 30));
    let system = usage.system.unwrap();
    assert_eq!(system.available_bytes, Some(38120488 << 10));
    let figure = |pdev: &str, region: &str, kind| {
        usage
            .drm
            .iter()
            .find(|u| u.pdev.as_deref() == Some(pdev) && u.region == region && u.kind == kind)
            .map(|u| u.bytes)
    };
    // fds 3 and 4 are one client (id 9): its GTT counts once.
    assert_eq!(
        figure("0000:03:00.0", "gtt", DrmMemoryKind::Total),
        Some(14372 << 10)
    );
    // The peer GPU's client holds the host mirror (compute-runtime#980).
    assert_eq!(
        figure("0000:83:00.0", "gtt", DrmMemoryKind::Total),
        Some(4404236 << 10)
    );
    assert!(usage
        .drm
        .iter()
        .any(|u| u.driver == "amdgpu" && u.kind == DrmMemoryKind::Memory));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn driver_limits_are_read_from_sysfs() {
    let limits = DriverLimits::read(&fixtures().join("sysfs"), 4096);
    let pages: u64 = fixture("sysfs/module/ttm/parameters/pages_limit")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(limits.ttm_pages_limit_bytes, Some(pages * 4096));
    assert_eq!(limits.amdgpu.len(), 1);
    let card = &limits.amdgpu[0];
    assert_eq!(card.pdev, "0000:03:00.0");
    assert!(card.vram_total.unwrap() > card.vram_used.unwrap());
    assert_eq!(card.gtt_total, Some(pages * 4096));
    // Absent sources are absent, not zero.
    let none = DriverLimits::read(Path::new("/nonexistent"), 4096);
    assert_eq!((none.ttm_pages_limit_bytes, none.amdgpu.len()), (None, 0));
}

#[test]
fn a_light_reading_takes_statm_and_the_accounting_adds_status_and_meminfo() {
    let root = proc_tree();
    let status = |text: &str| std::fs::write(root.join("self/status"), text).unwrap();
    // statm: 262144 pages virtual, 25600 resident, 20000 data and stack.
    status("Threads:\t7\nVmSize:\t  2048 kB\nVmLck:\t 8 kB\nVmRSS:\t  1024 kB\nVmData:\t  512 kB\nVmStk:\t  132 kB\n");
    let reader = UsageReader::open_at(&root);
    let mut usage = reader.read_light();
    let p = usage.process;
    assert_eq!(
        (p.virtual_bytes, p.rss_bytes),
        (262144 * 4096, 25600 * 4096)
    );
    assert_eq!(usage.data_and_stack_bytes, 20000 * 4096);
    assert_eq!((p.locked_bytes, p.data_bytes), (None, None));
    assert_eq!(usage.system.unwrap().available_bytes, Some(38120488 << 10));
    reader.add_accounting(&mut usage);
    let p = usage.process;
    assert_eq!(
        (p.threads, p.locked_bytes, p.data_bytes),
        (7, Some(8 << 10), Some(512 << 10))
    );
    // statm stays the one source of size and RSS.
    assert_eq!(p.rss_bytes, 25600 * 4096);
    // A `status` without `VmLck` says nothing of locked memory (not zero).
    status("Threads:\t7\nVmData:\t  512 kB\n");
    reader.add_accounting(&mut usage);
    assert_eq!(
        (usage.process.locked_bytes, usage.process.data_bytes),
        (None, Some(512 << 10))
    );
    std::fs::remove_dir_all(&root).unwrap();
}
