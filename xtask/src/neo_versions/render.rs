//! The table as Markdown: one row per NEO version and device, then the host copy
//! phase by phase, the memory-cgroup runs and the pages each row links to.

use super::*;
use clmulti_explain::Unit;
use std::fmt::Write;

pub fn markdown(table: &Table) -> String {
    let mut md = String::from("# Intel NEO versions on the emulated i915 driver\n\n");
    let _ = writeln!(md, "**Measured on:** {}\n", table.machine.join("; "));
    let _ = writeln!(md, "**Setting:** {}.\n", table.setting);
    let _ = writeln!(
        md,
        "**Command:** `{}`; the files behind each row are in its folder.\n",
        table.command
    );
    versions(&mut md, table);
    host_copy(&mut md, table);
    bounded(&mut md, table);
    md
}

fn bytes(v: f64) -> String {
    Unit::Bytes.format(v)
}

fn shared<'a>(row: &'a Row, devices: usize, strategy: &str) -> Option<&'a PerBuffer> {
    row.shared
        .iter()
        .find(|p| p.devices == devices && p.strategy == strategy)
}

fn seed(row: &Row, gpus: u32) -> String {
    row.seed
        .iter()
        .find(|s| s.gpus == gpus)
        .map_or("-".into(), |s| match s.last_index {
            Some(99_999) => "99999 (all)".into(),
            Some(i) => format!("{i}: \"{}\"", s.last_line),
            None => format!("none: \"{}\"", s.last_line),
        })
}

/// "1 in system0 on device 0, 1 import on each other device".
pub(super) fn objects(p: &PerBuffer) -> String {
    let mut regions: BTreeMap<&str, Vec<(usize, f64)>> = BTreeMap::new();
    for (key, &n) in &p.objects {
        if let Some((device, region)) = key.split_once('-') {
            if let Ok(d) = device.parse() {
                regions.entry(region).or_default().push((d, n));
            }
        }
    }
    let mut parts = Vec::new();
    for (region, list) in regions {
        let first = list[0].1;
        if list.len() == p.devices && list.iter().all(|&(_, n)| (n - first).abs() < 0.05) {
            parts.push(format!("{first:.2} in {region} on each device"));
        } else {
            parts.extend(
                list.iter()
                    .map(|(d, n)| format!("{n:.2} in {region} on device {d}")),
            );
        }
    }
    if p.imports > 0.01 {
        parts.push(format!("{:.2} imports", p.imports));
    }
    if parts.is_empty() {
        "none counted".into()
    } else {
        parts.join(", ")
    }
}

/// DRM memory per buffer by region: "local0 1.00 MiB on each of 2 devices".
fn per_device_memory(p: &PerBuffer) -> String {
    let mut regions: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (key, &bytes) in &p.drm {
        if let Some((_, region)) = key.split_once('-') {
            regions.entry(region).or_default().push(bytes);
        }
    }
    let parts: Vec<String> = regions
        .into_iter()
        .filter(|(_, list)| list.iter().any(|&b| b.abs() >= 1024.0))
        .map(|(region, list)| {
            let first = list[0];
            if list.iter().all(|&b| (b - first).abs() < 1024.0) {
                format!("{region} {} on each of {}", bytes(first), list.len())
            } else {
                let each: Vec<String> = list.iter().map(|&b| bytes(b)).collect();
                format!("{region} {}", each.join(" / "))
            }
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join("; ")
    }
}

use std::collections::BTreeMap;

fn versions(md: &mut String, table: &Table) {
    md.push_str("## Per version: the seed's case, per shared buffer (create)\n\n");
    md.push_str("| NEO (package, Debian suite) | device emulated | NEO lists | seed's last index, 1 GPU | seed's last index, 2 GPUs | descriptors per shared buffer at 2 / 4 / 8 devices | GEM objects per shared buffer, 2 devices | host per shared buffer, 2 devices: RSS, C heap | devices per shared buffer, 2 devices (DRM total) | what stops the shared context (diagnose, 2 devices) | fixes measured to work |\n");
    md.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for row in &table.rows {
        let fds: Vec<String> = [2, 4, 8]
            .iter()
            .map(|&n| {
                shared(row, n, "create").map_or("-".into(), |p| format!("{:.2}", p.descriptors))
            })
            .collect();
        let two = shared(row, 2, "create");
        let _ = writeln!(
            md,
            "| {} ({}, {}) | {} | {} of 2 | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.neo,
            row.package,
            row.suite,
            row.device,
            row.listed,
            seed(row, 1),
            seed(row, 2),
            fds.join(" / "),
            two.map_or("-".into(), objects),
            two.map_or("-".into(), |p| format!(
                "{}, {}",
                bytes(p.rss),
                bytes(p.heap)
            )),
            two.map_or("-".into(), per_device_memory),
            row.cause,
            if row.fixes.is_empty() {
                "-".into()
            } else {
                row.fixes.join("; ")
            },
        );
    }
    md.push('\n');
}

fn host_copy(md: &mut String, table: &Table) {
    md.push_str("## The host copy: what each phase adds per shared buffer (bench/host_copy.c)\n\n");
    md.push_str("Create COUNT 1 MiB buffers in one context over N devices, fill each on device 0, then on device 1 (its data moves between GPUs). C heap: `mallinfo2` in use; anon: anonymous RSS, what a host copy becomes once touched (the emulated driver faults userptr pages in when a submission first uses them, as the kernel's pinning does); shmem: the emulation's CPU mappings of GEM objects (device memory on a real discrete GPU, not host RSS); kernel: system-memory GEM objects made resident, as the emulated driver counts them without allocating (a real kernel's shmem pages, charged to the process's memory cgroup).\n\n");
    md.push_str("| NEO | device | N | buffers | create: heap, anon, kernel | fill on device 0: heap, anon, shmem, kernel | fill on device 1: heap, anon, shmem, kernel |\n|---|---|---|---|---|---|---|\n");
    for row in &table.rows {
        for h in &row.host_copy {
            let phase = |name: &str, shmem: bool| {
                h.phases
                    .iter()
                    .find(|p| p.phase == name)
                    .map_or("-".into(), |p| {
                        let mut s = format!("{}, {}", bytes(p.heap), bytes(p.rss_anon));
                        if shmem {
                            let _ = write!(s, ", {}", bytes(p.rss_shmem));
                        }
                        let _ = write!(s, ", {}", p.kernel_system0.map_or("-".into(), bytes));
                        s
                    })
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                row.neo,
                row.device,
                h.devices,
                h.buffers,
                phase("create", false),
                phase("fill-device-0", true),
                phase("fill-device-1", true)
            );
        }
    }
    md.push('\n');
}

fn bounded(md: &mut String, table: &Table) {
    md.push_str(
        "## A host with less memory than its GPUs: host_copy at 2 devices in a memory cgroup\n\n",
    );
    md.push_str("Each emulated device declares its memory (an A770 16 GiB; an integrated GPU none of its own); the process is bound by the cgroup's limit; host_copy asks for 3000 buffers of 1 MiB: create, fill on device 0, fill on device 1, release. The emulated driver allocates no pages for system-memory GEM objects (the kernel column above): a real kernel would charge them to this cgroup too.\n\n");
    md.push_str("| NEO | device | cgroup limit | exit | OOM kills | how far it got |\n|---|---|---|---|---|---|\n");
    for row in &table.rows {
        if let Some(b) = &row.bounded {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                row.neo,
                row.device,
                bytes(b.limit as f64),
                b.exit,
                b.oom_kills,
                b.reached
            );
        }
    }
    md.push('\n');
    md.push_str("## The pages behind each row\n\n");
    for row in &table.rows {
        let folder = format!("{}-{}", row.package, row.model);
        if row.listed > 1 {
            let _ = writeln!(
                md,
                "- {} on {}: [diagnose]({folder}/diagnose/index.html) (beside the next newer version on the same device, where one ran), [counts]({folder}/counts.jsonl), seed: [1 GPU]({folder}/seed-1-gpu.txt), [2 GPUs]({folder}/seed-2-gpu.txt)",
                row.neo, row.device
            );
        } else {
            let _ = writeln!(
                md,
                "- {} on {}: NEO lists {} device(s) ([devices]({folder}/devices.txt)); seed: [1 GPU]({folder}/seed-1-gpu.txt), [2 GPUs]({folder}/seed-2-gpu.txt)",
                row.neo, row.device, row.listed
            );
        }
    }
}
