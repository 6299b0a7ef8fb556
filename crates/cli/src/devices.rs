//! `clmulti devices`: what clinfo shows, narrowed to what bounds allocation.

use crate::format::{self, Format};
use crate::Failure;
use clmulti_probe::{DevicesReport, Queried};
use clmulti_scenario::format_bytes;

/// Arguments of `clmulti devices`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: &Args) -> Result<(), Failure> {
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
    match args.format {
        Format::Json => format::print_json(&report),
        Format::Text => {
            print_table(&report);
            Ok(())
        }
    }
}

fn print_table(report: &DevicesReport) {
    let mem = |q: &Queried<u64>| match q {
        Queried::Value(v) => format_bytes(*v as f64),
        other => other.to_string(),
    };
    for p in &report.platforms {
        println!(
            "platform {}: {} | {} | {}",
            p.index, p.name, p.vendor, p.version
        );
        if let Some(neo) = &p.neo_emulation {
            println!("  {}", neo.statement());
        }
        if let Some(err) = &p.devices_error {
            println!("  devices: <{err}>");
        }
        for d in &p.devices {
            println!(
                "  device {} (select with --device {}): {} [{}]",
                d.index, d.selector, d.name, d.kind
            );
            let vendor_id = match &d.vendor_id {
                Queried::Value(v) => format!("{v:#x}"),
                other => other.to_string(),
            };
            println!("    vendor            {} (id {vendor_id})", d.vendor);
            println!(
                "    versions          device {} | driver {} | {}",
                d.device_version, d.driver_version, d.opencl_c_version
            );
            println!("    compute units     {}", d.compute_units);
            println!("    global memory     {}", mem(&d.global_mem_bytes));
            println!("    max allocation    {}", mem(&d.max_alloc_bytes));
            println!("    global mem cache  {}", mem(&d.global_mem_cache_bytes));
            println!("    host unified mem  {}", d.host_unified_memory);
            println!("    max work-group    {}", d.max_work_group_size);
            if let Some(bus) = &d.pci_bus {
                println!("    pci bus           {bus}");
            }
            if let Some(uuid) = &d.uuid {
                println!("    uuid              {uuid}");
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
            match &d.extensions {
                Queried::Value(all) => println!(
                    "    extensions        {} (relevant: {})",
                    all.len(),
                    if notable.is_empty() {
                        "none".to_owned()
                    } else {
                        notable.join(", ")
                    }
                ),
                Queried::Error { error } => println!("    extensions        <{error}>"),
            }
        }
    }
    let h = &report.host;
    println!("host");
    println!(
        "  RAM               {}",
        h.ram_bytes.map_or("?".into(), |b| format_bytes(b as f64))
    );
    if let Some(b) = h.cgroup_memory_bytes {
        println!("  cgroup memory.max {}", format_bytes(b as f64));
    }
    if let Some(b) = h.slurm_memory_bytes {
        println!("  Slurm job memory  {}", format_bytes(b as f64));
    }
    println!(
        "  RLIMIT_NOFILE     soft {} / hard {}",
        format::limit(h.nofile_soft),
        format::limit(h.nofile_hard)
    );
    println!(
        "  RLIMIT_AS         soft {} / hard {}",
        h.address_space_soft
            .map_or("unlimited".into(), |b| format_bytes(b as f64)),
        h.address_space_hard
            .map_or("unlimited".into(), |b| format_bytes(b as f64))
    );
    println!("  vm.max_map_count  {}", format::limit(h.max_map_count));
    println!(
        "  page size         {}",
        format_bytes(h.page_size_bytes as f64)
    );
}
