//! A small i915 client, as a runtime talks to the kernel: it finds the render nodes,
//! asks each what it is, makes a buffer object in system memory on the first device,
//! maps it, shares it with the second through a dma-buf, and reads back what the
//! kernel shows of it. Run it on the emulation:
//!
//! ```sh
//! cargo build -p clmulti-kmd-emu --examples
//! LD_PRELOAD=$PWD/target/debug/libclmulti_kmd_emu.so target/debug/examples/i915_client
//! ```
//! With `--exhaust`, it then exports buffers until the kernel refuses, and prints how
//! many it made and why it stopped. On a machine with real i915 devices it runs the
//! same ioctls against them. Output: `key=value` lines.

use clmulti_drm_uapi::*;
use std::ffi::CString;

fn ioctl<T>(fd: i32, request: u64, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is the request's structure, valid for the call.
    let r = unsafe {
        libc::ioctl(
            fd,
            request as libc::c_ulong,
            (arg as *mut T).cast::<libc::c_void>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

fn open(path: &str) -> i32 {
    let c = CString::new(path).expect("no NUL");
    // SAFETY: a NUL-terminated path.
    unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) }
}

fn create(fd: i32, size: u64, class: u16) -> u32 {
    try_create(fd, size, class).expect("GEM_CREATE_EXT")
}

fn try_create(fd: i32, size: u64, class: u16) -> Result<u32, i32> {
    let mut region = MemoryClassInstance {
        memory_class: class,
        memory_instance: 0,
    };
    let mut regions = CreateExtMemoryRegions {
        base: UserExtension {
            next_extension: 0,
            name: I915_GEM_CREATE_EXT_MEMORY_REGIONS,
            flags: 0,
            rsvd: [0; 4],
        },
        pad: 0,
        num_regions: 1,
        regions: &mut region as *mut _ as u64,
    };
    let mut create = GemCreateExt {
        size,
        handle: 0,
        flags: 0,
        extensions: &mut regions as *mut _ as u64,
    };
    ioctl(fd, DRM_IOCTL_I915_GEM_CREATE_EXT, &mut create).map(|()| create.handle)
}

fn map(fd: i32, handle: u32, size: usize) -> *mut u8 {
    let mut offset = GemMmapOffset {
        handle,
        pad: 0,
        offset: 0,
        flags: I915_MMAP_OFFSET_FIXED,
        extensions: 0,
    };
    ioctl(fd, DRM_IOCTL_I915_GEM_MMAP_OFFSET, &mut offset).expect("GEM_MMAP_OFFSET");
    // SAFETY: mapping an object through the offset the driver gave.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            offset.offset as i64,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap");
    p.cast()
}

fn export(fd: i32, handle: u32) -> Result<i32, i32> {
    let mut prime = DrmPrimeHandle {
        handle,
        flags: DRM_CLOEXEC | libc::O_RDWR as u32,
        fd: -1,
    };
    ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut prime).map(|()| prime.fd)
}

fn first_fdinfo_line(fd: i32, key: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
    text.lines().find(|l| l.starts_with(key)).map_or_else(
        || "absent".into(),
        |l| l.split_once(':').map_or("", |(_, v)| v).trim().to_owned(),
    )
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map_or(0, |d| d.count())
        .saturating_sub(1)
}

fn main() {
    let mut nodes: Vec<String> = std::fs::read_dir("/dev/dri/by-path")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    nodes.retain(|n| n.ends_with("-render"));
    nodes.sort();
    println!("render_nodes={}", nodes.len());
    let fds: Vec<i32> = nodes
        .iter()
        .map(|n| open(&format!("/dev/dri/by-path/{n}")))
        .collect();
    for (i, &fd) in fds.iter().enumerate() {
        let mut name = [0u8; 8];
        let mut version = DrmVersion::asking_name(&mut name);
        ioctl(fd, DRM_IOCTL_VERSION, &mut version).expect("DRM_IOCTL_VERSION");
        let mut chipset = 0i32;
        let mut get = GetParam {
            param: I915_PARAM_CHIPSET_ID,
            value: &mut chipset,
        };
        ioctl(fd, DRM_IOCTL_I915_GETPARAM, &mut get).expect("GETPARAM");
        let driver =
            String::from_utf8_lossy(&name[..version.name_len.min(name.len())]).into_owned();
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
        println!(
            "device{i}={driver} {chipset:#06x} {} pdev={}",
            link.display(),
            first_fdinfo_line(fd, "drm-pdev")
        );
    }
    if fds.len() < 2 {
        return;
    }
    // One object in system memory on device 0, seen by device 1 through a dma-buf.
    let size = 1 << 20;
    let handle = create(fds[0], size as u64, I915_MEMORY_CLASS_SYSTEM);
    let cpu = map(fds[0], handle, size);
    // SAFETY: the mapping is `size` bytes.
    unsafe { cpu.add(4096).write(0x5a) };
    let dmabuf = export(fds[0], handle).expect("PRIME_HANDLE_TO_FD");
    let mut prime = DrmPrimeHandle {
        handle: 0,
        flags: 0,
        fd: dmabuf,
    };
    ioctl(fds[1], DRM_IOCTL_PRIME_FD_TO_HANDLE, &mut prime).expect("PRIME_FD_TO_HANDLE");
    let peer = map(fds[1], prime.handle, size);
    // SAFETY: the peer's mapping is `size` bytes.
    let seen = unsafe { peer.add(4096).read() };
    println!("peer_sees_write={}", seen == 0x5a);
    let link = std::fs::read_link(format!("/proc/self/fd/{dmabuf}")).unwrap_or_default();
    println!("dmabuf_link={}", link.display());
    println!(
        "dmabuf_exporter={} size={}",
        first_fdinfo_line(dmabuf, "exp_name"),
        first_fdinfo_line(dmabuf, "size")
    );
    println!(
        "device0_total_system0={}",
        first_fdinfo_line(fds[0], "drm-total-system0")
    );
    println!(
        "device1_shared_system0={}",
        first_fdinfo_line(fds[1], "drm-shared-system0")
    );
    // Device memory: an integrated GPU has none (i915: no such region, EINVAL).
    let local = try_create(fds[0], size as u64, I915_MEMORY_CLASS_DEVICE);
    println!("create_1MiB_local={:?}", local.err());
    println!(
        "device0_total_local0={}",
        first_fdinfo_line(fds[0], "drm-total-local0")
    );
    let mut too_big = GemCreateExt {
        size: 64 << 30,
        handle: 0,
        flags: 0,
        extensions: 0,
    };
    let mut region = MemoryClassInstance {
        memory_class: I915_MEMORY_CLASS_DEVICE,
        memory_instance: 0,
    };
    let mut regions = CreateExtMemoryRegions {
        base: UserExtension {
            next_extension: 0,
            name: I915_GEM_CREATE_EXT_MEMORY_REGIONS,
            flags: 0,
            rsvd: [0; 4],
        },
        pad: 0,
        num_regions: 1,
        regions: &mut region as *mut _ as u64,
    };
    too_big.extensions = &mut regions as *mut _ as u64;
    println!(
        "create_64GiB_local={:?}",
        ioctl(fds[0], DRM_IOCTL_I915_GEM_CREATE_EXT, &mut too_big).err()
    );
    if let Ok(counts) = std::fs::read_to_string("/run/clmulti-kmd-emu/counts") {
        for line in counts.lines().filter(|l| !l.starts_with('#')) {
            println!("counts.{}", line.replacen(": ", "=", 1));
        }
    }
    if let Ok(local) = local {
        let mut close = DrmGemClose {
            handle: local,
            pad: 0,
        };
        ioctl(fds[0], DRM_IOCTL_GEM_CLOSE, &mut close).expect("GEM_CLOSE");
    }
    if std::env::args().any(|a| a == "--exhaust") {
        let before = open_fds();
        let mut exported = 0;
        let stop = loop {
            let handle = create(fds[0], 4096, I915_MEMORY_CLASS_SYSTEM);
            match export(fds[0], handle) {
                Ok(_) => exported += 1,
                Err(errno) => break errno,
            }
        };
        println!("fds_before={before} exported={exported} stopped_errno={stop}");
    }
}
