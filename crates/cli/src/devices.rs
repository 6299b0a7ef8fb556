//! `clmulti devices`: what clinfo shows, narrowed to what bounds allocation.

use crate::format::{self, Format};
use crate::Failure;
use clmulti_probe::{DevicesReport, Queried};
use clmulti_scenario::format_bytes;
use std::fmt::Write as _;

/// Arguments of `clmulti devices`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Internal: soft limits (a scenario's `[limits]`, as JSON) set before the
    /// runtime loads: `check` asks whether it loads under a file's limits.
    #[arg(long, hide = true, value_name = "JSON")]
    under_limits: Option<String>,
}

/// A `--device` selector, `PLATFORM[:DEVICE]`, checked before anything loads: a
/// platform named (by name, vendor substring, index or `auto`), and an index after
/// the last `:` when there is one. An empty one, or one that names only a device
/// (`:0`), is refused with what to write.
pub fn selector(text: &str) -> Result<String, String> {
    const LISTS: &str = "`clmulti devices` lists each device's selector";
    if text.trim().is_empty() {
        return Err(format!(
            "an empty selector names no platform: write PLATFORM[:DEVICE], the platform by name, vendor substring or index ({LISTS})"
        ));
    }
    if text.len() > 256 || text.chars().any(char::is_control) {
        return Err(format!(
            "a selector is one line of at most 256 bytes: PLATFORM[:DEVICE] ({LISTS})"
        ));
    }
    if let Some((platform, device)) = text.rsplit_once(':') {
        if platform.trim().is_empty() {
            return Err(format!(
                "{text:?} names no platform before the `:`: write PLATFORM:{} ({LISTS})",
                device.trim()
            ));
        }
        // A number that is no index would be read as part of the platform's name.
        let device = device.trim();
        let numeric = device.strip_prefix('-').unwrap_or(device);
        if !numeric.is_empty()
            && numeric.bytes().all(|b| b.is_ascii_digit())
            && device.parse::<u32>().is_err()
        {
            return Err(format!(
                "{device} is not a device index: after the `:` comes 0, 1, ... ({LISTS})"
            ));
        }
    }
    Ok(text.to_owned())
}

pub fn run(args: &Args) -> Result<(), Failure> {
    if let Some(json) = &args.under_limits {
        let limits: clmulti_scenario::Limits = serde_json::from_str(json)
            .map_err(|e| Failure::Input(format!("--under-limits: {e}")))?;
        clmulti_alloc::apply_limits(&limits)
            .map_err(|e| Failure::Input(format!("--under-limits: {e}")))?;
    }
    let start = std::time::Instant::now();
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    let loaded = start.elapsed().as_secs_f64();
    let report = DevicesReport::new(&platforms);
    crate::verbose!(
        "devices: the ICD loader found {} platform(s) in {loaded:.3} s ({}); their devices were queried in {:.3} s",
        report.platforms.len(),
        clmulti_probe::loaded_library("libOpenCL.so").unwrap_or_else(|| "libOpenCL.so".into()),
        start.elapsed().as_secs_f64() - loaded
    );
    for p in &report.platforms {
        for d in &p.devices {
            if let Queried::Value(all) = &d.extensions {
                crate::verbose!("devices: {} extensions: {}", d.selector, all.join(" "));
            }
        }
    }
    for p in report.platforms.iter().filter(|p| p.devices.is_empty()) {
        crate::note!(
            "devices: platform {} lists no device{}",
            p.name,
            pocl_devices_hint()
        );
    }
    match args.format {
        Format::Json => format::print_json(&report),
        Format::Text => format::write_stdout(&table_text(&report)),
    }
}

/// Why PoCL may list no device, where `POCL_DEVICES` is set (empty otherwise).
pub(crate) fn pocl_devices_hint() -> String {
    std::env::var("POCL_DEVICES").map_or_else(
        |_| String::new(),
        |v| format!("; PoCL lists none when POCL_DEVICES ({v:?}) names no driver it has (\"pthread pthread\" on PoCL 3, \"cpu cpu\" on PoCL 4 and later)"),
    )
}

// long: a flat table: one row per device, column by column
fn table_text(report: &DevicesReport) -> String {
    let mut out = String::new();
    let mem = |q: &Queried<u64>| match q {
        Queried::Value(v) => format_bytes(*v as f64),
        other => other.to_string(),
    };
    for p in &report.platforms {
        let _ = writeln!(
            out,
            "platform {}: {} | {} | {}",
            p.index, p.name, p.vendor, p.version
        );
        if let Some(neo) = &p.neo_emulation {
            let _ = writeln!(out, "  {}", neo.statement());
        }
        if let Some(err) = &p.devices_error {
            let _ = writeln!(out, "  devices: <{err}>");
        }
        for d in &p.devices {
            let _ = writeln!(
                out,
                "  device {} (select with --device {}): {} [{}]",
                d.index, d.selector, d.name, d.kind
            );
            let vendor_id = match &d.vendor_id {
                Queried::Value(v) => format!("{v:#x}"),
                other => other.to_string(),
            };
            let _ = writeln!(out, "    vendor            {} (id {vendor_id})", d.vendor);
            let _ = writeln!(
                out,
                "    versions          device {} | driver {} | {}",
                d.device_version, d.driver_version, d.opencl_c_version
            );
            let _ = writeln!(out, "    compute units     {}", d.compute_units);
            let _ = writeln!(out, "    global memory     {}", mem(&d.global_mem_bytes));
            let _ = writeln!(out, "    max allocation    {}", mem(&d.max_alloc_bytes));
            let _ = writeln!(
                out,
                "    global mem cache  {}",
                mem(&d.global_mem_cache_bytes)
            );
            let _ = writeln!(out, "    host unified mem  {}", d.host_unified_memory);
            let _ = writeln!(out, "    max work-group    {}", d.max_work_group_size);
            if let Some(bus) = &d.pci_bus {
                let _ = writeln!(out, "    pci bus           {bus}");
            }
            if let Some(uuid) = &d.uuid {
                let _ = writeln!(out, "    uuid              {uuid}");
            }
            let notable: Vec<&str> = [
                "cl_intel_create_mem_object_properties",
                "cl_amd_device_attribute_query",
                "cl_nv_device_attribute_query",
                "cl_khr_pci_bus_info",
                "cl_khr_device_uuid",
            ]
            .into_iter()
            .filter(|e| d.has_extension(e))
            .collect();
            let _ = match &d.extensions {
                Queried::Value(all) => writeln!(
                    out,
                    "    extensions        {} (relevant: {})",
                    all.len(),
                    if notable.is_empty() {
                        "none".to_owned()
                    } else {
                        notable.join(", ")
                    }
                ),
                Queried::Error { error } => writeln!(out, "    extensions        <{error}>"),
            };
        }
    }
    let h = &report.host;
    let _ = writeln!(out, "host");
    let _ = writeln!(
        out,
        "  RAM               {}",
        h.ram_bytes.map_or("?".into(), |b| format_bytes(b as f64))
    );
    if let Some(b) = h.cgroup_memory_bytes {
        let _ = writeln!(out, "  cgroup memory.max {}", format_bytes(b as f64));
    }
    if let Some(b) = h.slurm_memory_bytes {
        let _ = writeln!(out, "  Slurm job memory  {}", format_bytes(b as f64));
    }
    let _ = writeln!(
        out,
        "  RLIMIT_NOFILE     soft {} / hard {}",
        format::limit(h.nofile_soft),
        format::limit(h.nofile_hard)
    );
    let _ = writeln!(
        out,
        "  RLIMIT_AS         soft {} / hard {}",
        h.address_space_soft
            .map_or("unlimited".into(), |b| format_bytes(b as f64)),
        h.address_space_hard
            .map_or("unlimited".into(), |b| format_bytes(b as f64))
    );
    let _ = writeln!(
        out,
        "  vm.max_map_count  {}",
        format::limit(h.max_map_count)
    );
    let _ = writeln!(
        out,
        "  page size         {}",
        format_bytes(h.page_size_bytes as f64)
    );
    out
}
