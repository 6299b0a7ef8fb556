//! Reading one results folder of scripts/neo-versions-results.sh into [`Table`].

use super::*;
use clmulti_explain::diagnosis::{Diagnosis, KernelCounts, Outcome, Role};
use clmulti_explain::verdict::CandidateTest;
use clmulti_explain::{Report, Resource};
use std::collections::BTreeMap;

/// What every table says it is.
const SETTING: &str = "Intel's GPU runtime NEO (Debian's intel-opencl-icd, each version in a root folder of its own) on its real kernel-driver path; the kernel driver is emulated (clmulti-kmd-emu: i915, no GPU work runs, kernel accounting as modelled, no page faults of the GPU or the kernel's own memory); host figures are this process's own, on this machine";

/// The command that fills the folder.
const COMMAND: &str = "scripts/neo-versions-results.sh (root: namespaces and a memory cgroup)";

pub fn table(dir: &Path) -> Result<Table, String> {
    let machine = std::fs::read_to_string(dir.join("machine.txt"))
        .map_err(|e| {
            format!(
                "{}: {e} (scripts/neo-versions-results.sh writes it)",
                dir.join("machine.txt").display()
            )
        })?
        .lines()
        .map(str::to_owned)
        .collect();
    let mut rows = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.join("meta.txt").exists() {
            rows.push(row(&path)?);
        }
    }
    if rows.is_empty() {
        return Err(format!(
            "{}: no row folder (one with meta.txt)",
            dir.display()
        ));
    }
    rows.sort_by(|a, b| (&a.model, version_key(&a.neo)).cmp(&(&b.model, version_key(&b.neo))));
    Ok(Table {
        machine,
        setting: SETTING.into(),
        command: COMMAND.into(),
        rows,
    })
}

fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

fn text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn row(dir: &Path) -> Result<Row, String> {
    let meta: BTreeMap<String, String> = text(&dir.join("meta.txt"))?
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let field = |k: &str| {
        meta.get(k)
            .cloned()
            .ok_or_else(|| format!("{}: no {k}=", dir.join("meta.txt").display()))
    };
    let (suite, package, model) = (field("suite")?, field("package")?, field("model")?);
    let device = clmulti_contract::kmd_emu::model(&model)
        .ok_or_else(|| format!("{}: unknown model {model}", dir.join("meta.txt").display()))?
        .name
        .to_owned();
    let listed = std::fs::read_to_string(dir.join("devices.txt"))
        .unwrap_or_default()
        .matches("Device #")
        .count();
    let seed = [1, 2]
        .into_iter()
        .map(|gpus| seed(&dir.join(format!("seed-{gpus}-gpu.txt")), gpus))
        .collect::<Result<_, _>>()?;
    let diagnosis = diagnosis(dir)?;
    let reports = counts(dir)?;
    let per_buffer = |role: Role| reports.iter().filter_map(|r| per_buffer(r, role)).collect();
    Ok(Row {
        suite,
        neo: package
            .rsplit_once('-')
            .map_or(package.as_str(), |(v, _)| v)
            .to_owned(),
        package,
        driver_version: diagnosis
            .as_ref()
            .and_then(|d| d.neo_emulation.as_ref())
            .map(|n| n.version.clone()),
        model,
        device,
        listed,
        seed,
        shared: per_buffer(Role::Shared),
        per_device: per_buffer(Role::PerDevice),
        host_copy: host_copies(dir)?,
        bounded: bounded(&dir.join("cgroup.txt"))?,
        cause: diagnosis.as_ref().map_or_else(|| not_listed(dir), cause),
        fixes: diagnosis.as_ref().map(fixes).unwrap_or_default(),
    })
}

/// The seed's last allocated index and last line ("998: Allocated 1 MB successfully").
fn seed(path: &Path, gpus: u32) -> Result<Seed, String> {
    let output = text(path)?;
    let last_index = output
        .lines()
        .filter_map(|l| l.split_once(": Allocated "))
        .filter_map(|(i, _)| i.trim().parse().ok())
        .next_back();
    Ok(Seed {
        gpus,
        last_index,
        last_line: output.lines().last().unwrap_or_default().trim().to_owned(),
    })
}

fn diagnosis(dir: &Path) -> Result<Option<Diagnosis>, String> {
    let path = dir.join("diagnose/diagnose.json");
    if !path.exists() {
        return Ok(None);
    }
    serde_json::from_str(&text(&path)?)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn counts(dir: &Path) -> Result<Vec<Report>, String> {
    let path = dir.join("counts.jsonl");
    if !path.exists() {
        return Ok(Vec::new());
    }
    text(&path)?
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            Report::from_json(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

fn per_buffer(report: &Report, role: Role) -> Option<PerBuffer> {
    if Role::of(report) != role {
        return None;
    }
    let kernel = KernelCounts::of(report, role)?.per_buffer;
    let count = |k: &str| kernel.get(k).copied().unwrap_or(0.0);
    let cost = |pick: &dyn Fn(&Resource) -> bool| {
        report
            .costs
            .iter()
            .find(|c| pick(&c.resource))
            .map_or(0.0, |c| c.per_buffer)
    };
    let mut drm = BTreeMap::new();
    for c in &report.costs {
        if let Resource::Drm {
            device: Some(d),
            region,
            kind: clmulti_probe::drm::DrmMemoryKind::Total,
            ..
        } = &c.resource
        {
            drm.insert(format!("{d}-{region}"), c.per_buffer);
        }
    }
    Some(PerBuffer {
        devices: report.devices.len(),
        strategy: report.scenario.allocation.strategy.name().into(),
        buffers: report.buffers,
        descriptors: cost(&|r| *r == Resource::OpenFds),
        maps: cost(&|r| *r == Resource::MemoryMaps),
        exports: count("exports"),
        imports: count("imports"),
        objects: kernel
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("objects-")?.to_owned(), *v)))
            .collect(),
        rss: cost(&|r| *r == Resource::HostRss),
        heap: cost(&|r| *r == Resource::HeapInUse),
        drm,
    })
}

fn host_copies(dir: &Path) -> Result<Vec<HostCopy>, String> {
    let mut out = Vec::new();
    for devices in [2, 4, 8] {
        let path = dir.join(format!("host-copy-{devices}.txt"));
        if path.exists() {
            out.extend(host_copy(&text(&path)?, devices));
        }
    }
    Ok(out)
}

/// `phase=NAME buffers=N key=value...` lines -> growth per buffer phase by phase.
pub(super) fn host_copy(output: &str, devices: usize) -> Option<HostCopy> {
    let lines: Vec<BTreeMap<&str, &str>> = output
        .lines()
        .filter(|l| l.starts_with("phase="))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .collect()
        })
        .collect();
    let number = |l: &BTreeMap<&str, &str>, k: &str| -> Option<f64> { l.get(k)?.parse().ok() };
    let buffers = lines.iter().find(|l| l.get("phase") == Some(&"create"))?;
    let count = number(buffers, "buffers")?;
    let mut phases = Vec::new();
    for pair in lines.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let name = *after.get("phase")?;
        if !["create", "fill-device-0", "fill-device-1"].contains(&name) {
            continue;
        }
        let growth = |k: &str| Some((number(after, k)? - number(before, k)?) / count);
        phases.push(Phase {
            phase: name.into(),
            heap: growth("heap")?,
            rss_anon: growth("rss_anon")?,
            rss_shmem: growth("rss_shmem")?,
            kernel_system0: growth("kernel_system0")
                .filter(|_| number(after, "kernel_system0") >= Some(0.0)),
        });
    }
    Some(HostCopy {
        devices,
        buffers: count as u64,
        phases,
    })
}

/// cgroup.txt: the probe's phases, `exit=N limit=N`, `oom_kill N`, `progress=PHASE N`.
fn bounded(path: &Path) -> Result<Option<Bounded>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let output = text(path)?;
    let value = |prefix: &str| {
        output
            .lines()
            .flat_map(str::split_whitespace)
            .find_map(|w| w.strip_prefix(prefix))
            .map(str::to_owned)
    };
    let finished = output
        .lines()
        .filter(|l| !l.contains(" failed="))
        .filter_map(|l| l.strip_prefix("phase="))
        .filter_map(|l| l.split_whitespace().next())
        .next_back()
        .unwrap_or("none");
    let failed = output.lines().find(|l| l.contains(" failed="));
    let progress = match (finished, failed, value("progress=")) {
        ("release", _, _) => String::new(),
        (_, Some(line), _) => format!("; then {}", line.trim()),
        (_, None, Some(phase)) => {
            let at = output
                .lines()
                .last()
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or("?");
            format!("; stopped in {phase} after buffer {at}")
        }
        _ => String::new(),
    };
    let oom_kills = output
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    Ok(Some(Bounded {
        limit: value("limit=").and_then(|v| v.parse().ok()).unwrap_or(0),
        exit: value("exit=").and_then(|v| v.parse().ok()).unwrap_or(-1),
        oom_kills,
        reached: if finished == "release" {
            "every phase done, all released".into()
        } else {
            format!("last phase done: {finished}{progress}")
        },
    }))
}

/// Why NEO lists no device: its own message, when it gave one.
fn not_listed(dir: &Path) -> String {
    let devices = std::fs::read_to_string(dir.join("devices.txt")).unwrap_or_default();
    match devices.lines().find(|l| l.contains("Unknown device")) {
        Some(message) => format!("NEO lists no device (\"{}\"): nothing runs", message.trim()),
        None => "NEO lists no device: nothing runs".into(),
    }
}

/// The confirmed cause of the shared context's stop; how it stopped when nothing was
/// investigated (a failure before the first buffer); or that none stopped.
fn cause(d: &Diagnosis) -> String {
    let shared = d
        .runs
        .iter()
        .find(|r| r.role == Role::Shared && r.strategy == clmulti_scenario::Strategy::Create);
    let Some(investigation) = &d.investigation else {
        return match shared {
            Some(r) if r.outcome != clmulti_explain::StopKind::Completed => r.headline.clone(),
            Some(r) => format!("none at 3000 buffers ({})", r.headline),
            None => "no shared run".into(),
        };
    };
    let mut causes = investigation.candidates.iter().filter_map(|c| {
        let state = match &c.test {
            CandidateTest::Confirmed { .. } => "confirmed by moving the limit",
            CandidateTest::Consistent { .. } => "consistent, not confirmed",
            _ => return None,
        };
        Some(format!(
            "{} at {} ({}; {state})",
            c.resource.label(),
            c.limit.name,
            c.resource.unit().format(c.limit.value)
        ))
    });
    causes.next().unwrap_or_else(|| "not explained".into())
}

fn fixes(d: &Diagnosis) -> Vec<String> {
    d.fixes
        .iter()
        .filter(|f| matches!(f.outcome, Outcome::Worked { .. }))
        .map(|f| f.fix.label())
        .collect()
}
