//! NEO's own allocation log per buffer, and host RSS per buffer, for 1, 2, 4 and 8
//! emulated Arc (DG2) devices in one shared context and in one context per device:
//! each case run at N and 2N buffers, each run in a fresh `clmulti run` child.
//!
//! ```sh
//! scripts/setup-intel-gpu.sh && cargo build --release
//! cargo run --release -p clmulti-alloc --example neo_allocation_log -- target/release/clmulti 1000
//! ```
//! Arguments: the clmulti binary (default target/release/clmulti), N (default 1000),
//! the vendors folder that selects NEO (default .intel-gpu/vendors).

use clmulti_alloc::runtime_log::neo_allocations_per_buffer;
use clmulti_explain::Resource;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let clmulti = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "target/release/clmulti".into()),
    );
    let n: u64 = args
        .next()
        .map_or(Ok(1000), |a| a.parse())
        .map_err(|e| format!("N: {e}"))?;
    let vendors = PathBuf::from(args.next().unwrap_or_else(|| ".intel-gpu/vendors".into()));
    let vendors = vendors.canonicalize().map_err(|e| {
        format!(
            "{}: {e} (run scripts/setup-intel-gpu.sh)",
            vendors.display()
        )
    })?;
    println!("| devices | context | NEO log lines per buffer [measured: NEO's own allocation log] | host RSS per buffer (2N run) |");
    println!("|---|---|---|---|");
    for devices in [1u32, 2, 4, 8] {
        for mode in ["shared", "per-device"] {
            if devices == 1 && mode == "per-device" {
                continue;
            }
            let text = format!(
                "name = \"neo-log-{devices}-{mode}\"\n[devices]\nplatform = \"Graphics\"\ntype = \"gpu\"\n\
                 count = {devices}\nfallback = \"none\"\n[context]\nmode = \"{mode}\"\n\
                 [allocation]\nsize = \"1MiB\"\nplacement = \"round-robin\"\n\
                 [sampling]\nevery = {}\n[env]\nOCL_ICD_VENDORS = \"{}\"\nNEOReadDebugKeys = \"1\"\n\
                 SetCommandStreamReceiver = \"1\"\nProductFamilyOverride = \"dg2\"\n\
                 CreateMultipleRootDevices = \"{devices}\"\nAUBDumpCaptureFileName = \"/dev/null\"\n",
                (n / 10).max(1),
                vendors.display()
            );
            let case = clmulti_scenario::load_str(&text, "neo-log.toml")
                .map_err(|e| e.to_string())?
                .remove(0);
            let found = neo_allocations_per_buffer(&clmulti, &case, n, &BTreeMap::new())?;
            let rss = found
                .large
                .report
                .costs
                .iter()
                .find(|c| c.resource == Resource::HostRss)
                .map_or("?".into(), |c| format!("{:.2} KiB", c.per_buffer / 1024.0));
            println!(
                "| {devices} | {mode} | {} | {rss} |",
                found.per_buffer.summary()
            );
        }
    }
    Ok(())
}
