//! `clmulti diagnose --bundle FILE.tar.gz`: one archive a runtime's maintainer can
//! triage without asking: the machine, kernel and its drivers, the ICD loader and its
//! vendor files, the runtime's build, every loaded library with its package, version
//! and build ID, the environment as far as it concerns OpenCL, every emulated part,
//! the calls that failed with errno and stack, the runtime's own log around each
//! failure, the failing case's report (samples, experiments, fits) and a line for
//! each other run, a reproducer, and the diagnosis page. Nothing secret: the
//! environment keeps only what concerns OpenCL, the host, user, home and checkout
//! are placeholders (unless `--no-redact`), and the README says what is left out.

mod libraries;
mod redact;

use crate::Failure;
use clmulti_explain::diagnosis::{Diagnosis, Role};
use clmulti_explain::Report;
use std::fmt::Write as _;
use std::path::Path;

/// The file's first line, trimmed, or why it could not be read.
fn first_line(path: &str) -> String {
    std::fs::read_to_string(path).map_or_else(
        |e| format!("not readable ({e})"),
        |t| t.lines().next().unwrap_or("").trim().to_owned(),
    )
}

// long: a flat table: one line per fact of the machine, in the order a maintainer reads them
fn machine() -> String {
    let mut out = String::new();
    // SAFETY: uname fills the struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is writable.
    if unsafe { libc::uname(&mut u) } == 0 {
        let field = |f: &[libc::c_char]| {
            // SAFETY: uname's fields are NUL-terminated.
            unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        };
        let _ = writeln!(
            out,
            "kernel: {} {} {} ({})",
            field(&u.sysname),
            field(&u.release),
            field(&u.version),
            field(&u.machine)
        );
        let _ = writeln!(out, "host: {}", field(&u.nodename));
    }
    let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let pretty = os
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .unwrap_or("unknown")
        .trim_matches('"');
    let _ = writeln!(out, "distribution: {pretty}");
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpu
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map_or("unknown", |m| m.trim_start_matches([' ', '\t', ':']));
    let _ = writeln!(
        out,
        "cpu: {model} ({} logical)",
        cpu.matches("processor\t").count()
    );
    let _ = writeln!(out, "memory: {}", first_line("/proc/meminfo"));
    out.push_str("\nkernel drivers (DRM devices and their modules):\n");
    let cards = std::fs::read_dir("/sys/class/drm")
        .map(|d| d.flatten().collect::<Vec<_>>())
        .unwrap_or_default();
    let mut seen = false;
    for card in cards.iter().filter(|c| {
        c.file_name().to_string_lossy().starts_with("card")
            && !c.file_name().to_string_lossy().contains('-')
    }) {
        let device = card.path().join("device");
        let driver = std::fs::read_link(device.join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "?".into());
        let _ = writeln!(
            out,
            "  {}: driver {driver}, PCI {} {}, module version {}",
            card.file_name().to_string_lossy(),
            first_line(&device.join("vendor").to_string_lossy()),
            first_line(&device.join("device").to_string_lossy()),
            first_line(&format!("/sys/module/{driver}/version")),
        );
        seen = true;
    }
    if !seen {
        out.push_str("  none in /sys/class/drm (no DRM GPU here, or one the process cannot see)\n");
    }
    for module in ["i915", "xe", "amdgpu", "nvidia"] {
        if Path::new(&format!("/sys/module/{module}")).exists() {
            let _ = writeln!(
                out,
                "  module {module} loaded, version {}",
                first_line(&format!("/sys/module/{module}/version"))
            );
        }
    }
    out.push_str("\nGPU firmware: ");
    let guc = "/sys/kernel/debug/dri/0/gt/uc/guc_info";
    out.push_str(&match std::fs::read_to_string(guc) {
        Ok(text) => text.lines().take(6).collect::<Vec<_>>().join(" / "),
        Err(e) => {
            format!("{guc} not readable ({e}; debugfs needs root and a mounted /sys/kernel/debug)")
        }
    });
    out.push('\n');
    out
}

fn opencl(reports: &[&Report]) -> String {
    let mut out = String::new();
    let vendors = std::env::var("OCL_ICD_VENDORS").unwrap_or_else(|_| "/etc/OpenCL/vendors".into());
    let _ = writeln!(
        out,
        "ICD vendors (OCL_ICD_VENDORS or the default): {vendors}"
    );
    let mut icds: Vec<_> = std::fs::read_dir(&vendors)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_else(|_| vec![std::path::PathBuf::from(&vendors)]);
    icds.sort();
    for icd in icds
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "icd"))
    {
        let _ = writeln!(
            out,
            "  {}: {}",
            icd.display(),
            first_line(&icd.to_string_lossy())
        );
    }
    for loader in [
        "/usr/lib/x86_64-linux-gnu/libOpenCL.so.1",
        "/usr/lib64/libOpenCL.so.1",
        "/usr/lib/libOpenCL.so.1",
    ] {
        if let Ok(real) = std::fs::canonicalize(loader) {
            let _ = writeln!(out, "ICD loader: {loader} -> {}", real.display());
        }
    }
    out.push_str("\nruntime build, per run:\n");
    for r in reports {
        let driver = r
            .devices
            .first()
            .and_then(|d| d.driver_version.value().cloned())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}: platform {} ({}), driver {driver}, devices {}",
            r.run_name,
            r.platform,
            r.platform_version,
            r.devices
                .iter()
                .map(|d| d.display_name().to_owned())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

fn emulated(diagnosis: &Diagnosis, reports: &[&Report]) -> String {
    let mut parts = Vec::new();
    if let Some(neo) = &diagnosis.neo_emulation {
        parts.push(neo.statement());
    }
    for r in reports {
        if let Some(layers) = &r.layers {
            parts.push(format!(
                "{}: OpenCL layers {} with {:?}",
                r.run_name, layers.opencl_layers, layers.emulation
            ));
        }
    }
    if parts.is_empty() {
        "no part of this system was emulated by clmulti: the runtime ran on the machine's own driver\n".into()
    } else {
        parts.dedup();
        parts.join("\n") + "\n"
    }
}

fn failing_calls(reports: &[&Report]) -> String {
    let failed: Vec<serde_json::Value> = reports
        .iter()
        .filter(|r| matches!(r.stop, clmulti_explain::StopReason::Failed { .. }))
        .map(|r| {
            serde_json::json!({
                "run": r.run_name,
                "stop": r.stop.summary(),
                "traced": r.traced.is_some(),
                "failing_calls": r.traced.as_ref().map(|t| &t.failing_calls),
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "what_the_tracer_sees": clmulti_probe::trace::UNSEEN,
        "runs": failed,
    }))
    .unwrap_or_default()
        + "\n"
}

fn runtime_log(reports: &[&Report]) -> String {
    let mut out = String::new();
    for r in reports
        .iter()
        .filter(|r| !r.stdout_tail.is_empty() || !r.stderr_tail.is_empty())
    {
        let _ = writeln!(out, "===== {} ({})", r.run_name, r.stop.summary());
        let _ = writeln!(
            out,
            "----- stdout (the runtime's output, around clmulti's failure mark)\n{}",
            r.stdout_tail
        );
        let _ = writeln!(out, "----- stderr (its end)\n{}\n", r.stderr_tail);
    }
    if out.is_empty() {
        out.push_str("the runs' processes printed nothing (diagnose --runtime-log turns the runtime's debug log on)\n");
    }
    out
}

/// clmulti's own libraries the runs loaded: the tracer where a run was traced, the
/// layer and the emulated driver where a run's record names them.
fn own_libraries(reports: &[&Report]) -> Vec<clmulti_contract::ProjectLibrary> {
    let records = serde_json::to_string(reports).unwrap_or_default();
    clmulti_contract::PROJECT_LIBRARIES
        .into_iter()
        .filter(|l| {
            if l.file_name == clmulti_contract::TRACE.file_name {
                reports.iter().any(|r| r.traced.is_some())
            } else {
                records.contains(l.file_name)
            }
        })
        .collect()
}

/// Writes the archive; `redact`: names of this machine and its user replaced.
pub fn write(
    path: &Path,
    diagnosis: &Diagnosis,
    runs: &[(Role, Report)],
    page: &str,
    redact: bool,
) -> Result<(), Failure> {
    let reports: Vec<&Report> = runs.iter().map(|(_, r)| r).collect();
    let failed = |r: &Report| matches!(r.stop, clmulti_explain::StopReason::Failed { .. });
    let shared = runs
        .iter()
        .find(|(role, r)| *role == Role::Shared && failed(r))
        .or_else(|| runs.iter().find(|(_, r)| failed(r)))
        .map(|(_, r)| r);
    let environment = shared
        .or(reports.first().copied())
        .and_then(|r| r.environment.clone())
        .unwrap_or_default();
    let calls = failing_calls(&reports);
    let libraries = libraries::loaded(&calls, &own_libraries(&reports));
    let mut files: Vec<(&str, String)> = vec![
        ("machine.txt", machine()),
        ("opencl.txt", opencl(&reports)),
        ("libraries.txt", libraries::text(&libraries)),
        ("emulated.txt", emulated(diagnosis, &reports)),
        (
            "environment.json",
            serde_json::to_string_pretty(&environment).unwrap_or_default() + "\n",
        ),
        ("failing-calls.json", calls),
        ("runtime-log.txt", runtime_log(&reports)),
        (
            "diagnose.json",
            serde_json::to_string_pretty(diagnosis).unwrap_or_default() + "\n",
        ),
        ("diagnose.md", diagnosis.markdown()),
        ("index.html", page.to_owned()),
        (
            "runs.jsonl",
            shared.map_or_else(String::new, |r| {
                serde_json::to_string(r).unwrap_or_default() + "\n"
            }),
        ),
        ("runs-summary.txt", summary(&reports, shared)),
    ];
    let reproducer = shared.map(clmulti_explain::render::reproducer::c_program);
    match &reproducer {
        Some(Ok(program)) => files.push(("reproduce.c", program.clone())),
        Some(Err(why)) => files.push(("reproduce.txt", format!("no reproducer: {why}\n"))),
        None => files.push((
            "reproduce.txt",
            "no run failed: nothing to reproduce\n".into(),
        )),
    }
    let redactor = if redact {
        redact::Redactor::here()
    } else {
        redact::Redactor::default()
    };
    for (_, text) in &mut files {
        *text = redactor.apply(text);
    }
    let readme = readme(&files, &environment.left_out, &redactor, libraries.len());
    files.insert(0, ("README.txt", readme));
    archive(path, &files)
}

/// The files as `clmulti-bundle/NAME` in a gzipped tar at `path`, written beside it
/// and renamed over it.
fn archive(path: &Path, files: &[(&str, String)]) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::Tool(format!("--bundle {}: {e}", path.display()));
    let (tmp, file) = crate::output::temporary_beside(path).map_err(io)?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for (name, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(mtime);
        header.set_cksum();
        tar.append_data(
            &mut header,
            format!("clmulti-bundle/{name}"),
            text.as_bytes(),
        )
        .map_err(io)?;
    }
    tar.into_inner().and_then(|gz| gz.finish()).map_err(io)?;
    // Renamed over the name: a link planted there is replaced, not written through.
    std::fs::rename(&tmp, path).map_err(io)
}

/// One line per run: what each reached and how it stopped; the failing case's
/// whole report is in runs.jsonl.
fn summary(reports: &[&Report], kept: Option<&Report>) -> String {
    let mut out = String::from("Every run of the diagnosis, one line each (runs.jsonl holds the failing case's whole report):\n\n");
    for r in reports {
        let _ = writeln!(
            out,
            "{}{}: {}",
            r.run_name,
            if kept.is_some_and(|k| std::ptr::eq(k, *r)) {
                " (in runs.jsonl)"
            } else {
                ""
            },
            r.headline()
        );
    }
    out
}

/// What the archive holds and what it does not.
fn readme(
    files: &[(&str, String)],
    left_out: &[String],
    redactor: &redact::Redactor,
    libraries: usize,
) -> String {
    let mut out = String::from("clmulti diagnose bundle\n\nFiles:\n");
    for (name, text) in files {
        let _ = writeln!(
            out,
            "  {name:<20} {}",
            clmulti_scenario::format_bytes(text.len() as f64)
        );
    }
    let placeholders = redactor.placeholders();
    let _ = writeln!(
        out,
        "\nlibraries.txt lists {libraries} shared libraries with their build IDs, packages and versions: symbolise the stacks in failing-calls.json with them.\n\nWhat this archive does not contain:\n\
  - the environment's other variables: their names only, values never read: {}\n\
  - {}\n\
  - the other runs' samples, experiments and fits: runs-summary.txt gives a line for each (rerun `clmulti diagnose --out DIR` for all of runs.jsonl)\n\
  - core dumps, the runtime's debug symbols and the libraries themselves: fetch them by the build IDs in libraries.txt\n\
  - the fixes' own reports: their outcomes are in diagnose.json and diagnose.md",
        if left_out.is_empty() { "none".to_owned() } else { left_out.join(" ") },
        if placeholders.is_empty() {
            "nothing was redacted (--no-redact): host, user and paths are as they were".to_owned()
        } else {
            format!("this machine's names, replaced by {} (--no-redact keeps them)", placeholders.join(", "))
        }
    );
    out
}
