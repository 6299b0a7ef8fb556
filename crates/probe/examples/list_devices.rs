//! Lists every OpenCL device with the facts that bound allocation, and the host limits.
//!
//! `cargo run -p clmulti-probe --example list_devices`

fn main() {
    let platforms = match clmulti_probe::platforms() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    for p in &platforms {
        println!("platform {}: {}", p.index, p.name);
        for d in p.devices.iter().map(|d| d.info()) {
            println!(
                "  {} {} [{}]: global {} B, max alloc {} B, host-unified {}",
                d.selector,
                d.name,
                d.kind,
                d.global_mem_bytes,
                d.max_alloc_bytes,
                d.host_unified_memory
            );
        }
    }
    let host = clmulti_probe::HostLimits::read();
    let usage = clmulti_probe::UsageReader::open().read();
    let process = usage.process;
    let known = |v: Option<u64>| v.map_or_else(|| "unlimited or unknown".into(), |v| v.to_string());
    println!(
        "host: RAM {} B; open fds {} of {}; memory maps {} of {}; DRM readings {}",
        known(host.ram_bytes),
        process.open_fds,
        known(host.nofile_soft),
        known(process.memory_maps),
        known(host.max_map_count),
        usage.drm.len()
    );
}
