//! `xtask neo-versions DIR`: the table of every NEO version measured by
//! scripts/neo-versions-results.sh, one row per version and emulated device, read from
//! the files that script leaves in DIR (one folder per row) and written beside them as
//! `versions.md` and `versions.json`.

mod read;
mod render;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `xtask neo-versions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The results folder (results/intel-neo-versions).
    dir: PathBuf,
}

/// The whole table, as `versions.json` holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Table {
    /// Where it was measured: host, OS, kernel, CPUs, memory, date, clmulti.
    pub machine: Vec<String>,
    /// What ran and what did not: the kernel driver is emulated.
    pub setting: String,
    /// The command that measured it.
    pub command: String,
    /// One row per NEO version and emulated device.
    pub rows: Vec<Row>,
}

/// One NEO version on one emulated device.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// The Debian suite it came from (the last that ships it).
    pub suite: String,
    /// `intel-opencl-icd`'s version there.
    pub package: String,
    /// NEO's version (the package's, without Debian's revision).
    pub neo: String,
    /// What NEO's devices report as `CL_DRIVER_VERSION`, when it listed any.
    pub driver_version: Option<String>,
    /// The emulated device: clmulti's key (`a770`) and the product's name.
    pub model: String,
    /// The product.
    pub device: String,
    /// Devices NEO listed out of 2 emulated.
    pub listed: usize,
    /// The seed's own program at 1 and 2 GPUs, soft nofile 1024.
    pub seed: Vec<Seed>,
    /// Per buffer in one shared context, by device count and strategy.
    pub shared: Vec<PerBuffer>,
    /// Per buffer with one context per device, likewise.
    pub per_device: Vec<PerBuffer>,
    /// bench/host_copy.c: what each phase cost the process per buffer.
    pub host_copy: Vec<HostCopy>,
    /// host_copy in a memory cgroup smaller than the devices' memory together.
    pub bounded: Option<Bounded>,
    /// What stops the shared context at 2 devices (`clmulti diagnose`), in words.
    pub cause: String,
    /// The fixes diagnose measured to work there.
    pub fixes: Vec<String>,
}

/// One run of the seed's program.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Seed {
    /// GPUs asked for (`--gpus`).
    pub gpus: u32,
    /// The last index it printed as allocated (of 0 to 99999).
    pub last_index: Option<u64>,
    /// Its last line.
    pub last_line: String,
}

/// What one buffer cost in one run of the counts scenario (growth per buffer).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PerBuffer {
    /// Devices in the run.
    pub devices: usize,
    /// `create` or `fill`.
    pub strategy: String,
    /// Buffers the run reached.
    pub buffers: u64,
    /// Open descriptors.
    pub descriptors: f64,
    /// Memory mappings.
    pub maps: f64,
    /// dma-buf exports and imports (the emulated driver's counts).
    pub exports: f64,
    /// Imports.
    pub imports: f64,
    /// GEM objects by `DEVICE-REGION` (`0-system0`, `1-local0`).
    pub objects: std::collections::BTreeMap<String, f64>,
    /// Host RSS, bytes.
    pub rss: f64,
    /// The C heap in use, bytes.
    pub heap: f64,
    /// DRM memory (fdinfo totals) by `DEVICE-REGION`, bytes.
    pub drm: std::collections::BTreeMap<String, f64>,
}

/// bench/host_copy.c at one device count: per buffer, what each phase added.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostCopy {
    /// Devices in the shared context.
    pub devices: usize,
    /// Buffers.
    pub buffers: u64,
    /// Phases in order: `create`, `fill-device-0`, `fill-device-1`.
    pub phases: Vec<Phase>,
}

/// One phase's growth per buffer over the phase before it, bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Phase {
    /// Its name.
    pub phase: String,
    /// The C heap in use.
    pub heap: f64,
    /// Anonymous resident memory (what a host copy becomes when touched).
    pub rss_anon: f64,
    /// Resident shared memory (the emulation's CPU mappings of GEM objects).
    pub rss_shmem: f64,
    /// System-memory GEM objects' resident bytes as the emulated driver counts them
    /// (userptr pages left out): a real kernel's pages, not allocated here.
    pub kernel_system0: Option<f64>,
}

/// host_copy in a memory cgroup.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bounded {
    /// The cgroup's limit, bytes.
    pub limit: u64,
    /// The exit status (137: killed).
    pub exit: i32,
    /// The cgroup's OOM kills.
    pub oom_kills: u64,
    /// The last phase it finished, and where it got in the next one.
    pub reached: String,
}

pub fn neo_versions(args: &Args) -> Result<ExitCode, String> {
    let table = read::table(&args.dir)?;
    let json = serde_json::to_string_pretty(&table).map_err(|e| e.to_string())?;
    write(&args.dir.join("versions.json"), &format!("{json}\n"))?;
    write(&args.dir.join("versions.md"), &render::markdown(&table))?;
    eprintln!(
        "neo-versions: {} row(s) in {}",
        table.rows.len(),
        args.dir.join("versions.md").display()
    );
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
