//! `clmulti diagnose`: the seed's question answered on this machine. One device, N
//! devices in one shared context and N per-device contexts, with `create` (the seed)
//! and `fill` (residency forced), each in its own process; then every applicable fix
//! re-run on a failing shared case; then one verdict, each statement tagged with
//! where it comes from.

mod command;
mod fixes;

pub use command::run;

use fixes::run_fixes;

use crate::format::{table, Format};
use crate::{note, Failure};
use clmulti_alloc::runtime_log::neo_allocations_per_buffer;
use clmulti_explain::diagnosis::{fixes_for, Diagnosis, Fix, LoggedCase, Placed, Role};
use clmulti_explain::verdict::{Cause, Statement};
use clmulti_explain::{Report, StopReason};
use clmulti_probe::Device;
use clmulti_scenario::{format_size, parse_size, Scenario, Strategy};
use std::path::{Path, PathBuf};

/// How `diagnose` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum DiagnoseFormat {
    /// Terminal text (`table` is accepted too, as for the other commands).
    #[default]
    #[value(alias = "table")]
    Text,
    /// The versioned JSON shape (docs/json.md).
    Json,
    /// Markdown, as diagnose.md.
    Markdown,
}

/// Arguments of `clmulti diagnose`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Devices to diagnose (`PLATFORM[:DEVICE]`, repeat); default: every GPU of the
    /// first platform with two, else the first platform with two devices.
    #[arg(long = "device", value_parser = crate::devices::selector)]
    devices: Vec<String>,
    /// Buffers in the `create` runs (the `fill` runs make a tenth as many). The seed
    /// failed at ~1000; for the long version use --count 100000 (at least 10).
    #[arg(long, allow_negative_numbers = true, default_value_t = 10_000, value_parser = crate::values::whole_in::<u64>(10..=i64::MAX as u64))]
    count: u64,
    /// Bytes per buffer (the seed's 1 MiB by default).
    #[arg(long, allow_hyphen_values = true, default_value = "1MiB")]
    size: String,
    /// Split each device into sub-devices first (`equally`, or compute-unit counts
    /// such as `1,1`): two devices out of one CPU, for Intel's CPU runtime.
    #[arg(long, allow_hyphen_values = true, value_parser = clmulti_scenario::Partition::parse)]
    partition: Option<clmulti_scenario::Partition>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: DiagnoseFormat,
    /// Also write diagnose.md, diagnose.json, runs.jsonl and index.html here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Skip the experiments that move each candidate's limit (and, when none is
    /// confirmed, find the shape of the unseen one): faster, but a cause is then
    /// only a candidate.
    #[arg(long = "no-experiments", action = clap::ArgAction::SetFalse)]
    experiments: bool,
    /// Also write one archive (.tar.gz) a runtime's maintainer can triage: machine,
    /// kernel drivers, ICD loader, every loaded library with its package and build ID,
    /// the OpenCL part of the environment, emulated parts, the failing calls with
    /// errno and stack, the runtime's log, the failing run, a line for each other, a
    /// reproducer, the page; this machine's names as placeholders.
    #[arg(long, value_name = "FILE")]
    bundle: Option<PathBuf>,
    /// Keep this machine's host name, user name, home and checkout paths in the
    /// bundle (by default they are placeholders: <host>, <user>, <home>, <checkout>).
    #[arg(long, requires = "bundle")]
    no_redact: bool,
    /// Turn on the runtime's own debug log in every case (NEO: NEOReadDebugKeys=1
    /// PrintDebugMessages=1 PrintIoctlEntries=1; PoCL: POCL_DEBUG); the runtime's
    /// output around each failure is kept in its report (runs.jsonl) and quoted.
    #[arg(long)]
    runtime_log: bool,
    /// Put this machine's diagnosis of another runtime beside this one (its
    /// diagnose.json, from `--out`): what each shared context reached and cost, and
    /// whether the other runtime is the upgrade a fix names.
    #[arg(long, value_name = "DIAGNOSE_JSON")]
    compare: Option<PathBuf>,
}

impl From<DiagnoseFormat> for Format {
    fn from(f: DiagnoseFormat) -> Self {
        match f {
            DiagnoseFormat::Json => Format::Json,
            _ => Format::Text,
        }
    }
}

/// The devices to diagnose, their platform's name, and why only one when only one.
fn choose(args: &Args) -> Result<(String, Vec<Device>, Option<String>), Failure> {
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    if !args.devices.is_empty() || args.partition.is_some() {
        let (name, devices) =
            crate::axpy::devices_from_args(&args.devices, args.partition.as_ref())?;
        let why = (devices.len() < 2).then(|| "one device was named".to_owned());
        return Ok((name, devices, why));
    }
    let gpus =
        |p: &clmulti_probe::Platform| p.devices_of(clmulti_probe::DeviceTypeFilter::Gpu).count();
    if let Some(p) = platforms.iter().find(|p| gpus(p) >= 2) {
        let devices = p
            .devices_of(clmulti_probe::DeviceTypeFilter::Gpu)
            .cloned()
            .collect();
        return Ok((p.display_name().to_owned(), devices, None));
    }
    if let Some(p) = platforms.iter().find(|p| p.devices.len() >= 2) {
        return Ok((p.display_name().to_owned(), p.devices.clone(), None));
    }
    let p = platforms
        .iter()
        .find(|p| !p.devices.is_empty())
        .ok_or_else(|| {
            let names: Vec<&str> = platforms.iter().map(|p| p.display_name()).collect();
            Failure::Tool(format!(
                "no platform has a device (platforms: {}){}; `clmulti devices` lists what each offers",
                names.join(", "),
                crate::devices::pocl_devices_hint()
            ))
        })?;
    Ok((
        p.display_name().to_owned(),
        p.devices[..1].to_vec(),
        Some("no platform has two devices (PoCL gives two with POCL_DEVICES=\"cpu cpu\", or \"pthread pthread\" on PoCL 3)".into()),
    ))
}

/// The scenario of one case of the matrix: the seed's loop on these devices.
fn case_scenario(
    name: &str,
    role: Role,
    strategy: Strategy,
    (platform, partition): (&str, Option<&clmulti_scenario::Partition>),
    devices: &[Device],
    size: u64,
    count: u64,
) -> Result<Scenario, Failure> {
    // Sub-devices are picked by their place among the parent's sub-devices.
    let index = |(i, d): (usize, &Device)| match partition {
        Some(_) => i.to_string(),
        None => d.info().index.to_string(),
    };
    let indices: Vec<String> = match role {
        Role::OneDevice => vec![index((0, &devices[0]))],
        _ => devices.iter().enumerate().map(index).collect(),
    };
    let partition = match partition {
        Some(clmulti_scenario::Partition::ByCounts(counts)) => format!("partition = {counts:?}\n"),
        Some(clmulti_scenario::Partition::Equally(_)) => "partition = \"equally\"\n".to_owned(),
        None => String::new(),
    };
    let quoted = platform.replace('\\', "\\\\").replace('"', "\\\"");
    let text = format!(
        "name = \"{name}\"\n[devices]\nplatform = \"{quoted}\"\ntype = \"all\"\nindices = [{}]\n{partition}[context]\nmode = \"{}\"\n\
         [allocation]\nsize = {size}\ncount = {count}\nstrategy = \"{}\"\nplacement = \"round-robin\"\n\
         [sampling]\nevery = {}\n[guards]\nmax_seconds = 120\n",
        indices.join(", "),
        if role == Role::PerDevice { "per-device" } else { "shared" },
        strategy.name(),
        (count / 50).max(1),
    );
    let mut scenario = clmulti_scenario::load_str(&text, name)
        .map(|mut runs| runs.remove(0))
        .map_err(|e| Failure::Tool(e.to_string()))?;
    scenario.limits = inherited_memory_limits();
    Ok(scenario)
}

/// The address-space and data limits this process runs under (`ulimit -v`, `-d`), as
/// limits the cases study: the runtime meets them, where a run would otherwise stop
/// a tenth short of an inherited one at a guard.
fn inherited_memory_limits() -> clmulti_scenario::Limits {
    use clmulti_scenario::Rlimit;
    let host = clmulti_probe::HostLimits::read();
    let mut limits = clmulti_scenario::Limits::default();
    for (which, soft) in [
        (Rlimit::AddressSpace, host.address_space_soft),
        (Rlimit::Data, host.data_soft),
    ] {
        if let Some(soft) = soft {
            limits.soft.insert(which, soft);
        }
    }
    limits
}

/// The signal that asked this diagnose to stop, if one did: no run starts after it.
fn stop_signal() -> Option<i32> {
    clmulti_supervise::INTERRUPT.signal()
}

/// Why a run was not made, or cannot be judged, once a signal asked to stop.
fn stopped_words(signal: i32) -> String {
    format!(
        "not run: diagnose was stopped by {}",
        clmulti_contract::signal_name(signal)
    )
}

fn run_case(scenario: &Scenario) -> Result<Report, Failure> {
    note!("diagnose: {} ...", scenario.name);
    let report = crate::child::run_child(scenario, None)?;
    note!("diagnose:   {}", report.headline());
    Ok(report)
}

/// Two rounds of one completed run per strategy whose readings stayed up after
/// release (the shared case first): a cache or a leak.
fn second_rounds(reports: &mut [(Role, Report)]) {
    for strategy in [Strategy::Create, Strategy::Fill] {
        let kept = |(role, r): &(Role, Report)| {
            r.scenario.allocation.strategy == strategy
                && matches!(r.stop, StopReason::Completed)
                && !r.leak_check.not_returned.is_empty()
                && r.leak_check.second_round.is_none()
                && *role == Role::Shared
        };
        let any_role = |(_, r): &(Role, Report)| {
            r.scenario.allocation.strategy == strategy
                && matches!(r.stop, StopReason::Completed)
                && !r.leak_check.not_returned.is_empty()
        };
        let pick = reports
            .iter()
            .position(kept)
            .or_else(|| reports.iter().position(any_role));
        if let Some(i) = pick {
            crate::experiments::investigate(&mut reports[i].1);
        }
    }
}

/// NEO's own allocation log per buffer for each `create` case of the matrix: two
/// more runs of each (N and 2N buffers, a tenth of the matrix's count within 100 and
/// 1000), each in a fresh process.
fn allocation_logs(reports: &[(Role, Report)], count: u64) -> Result<Vec<LoggedCase>, Failure> {
    let program = std::env::current_exe()
        .map_err(|e| Failure::Tool(format!("cannot find own binary: {e}")))?;
    let buffers = (count / 10).clamp(100, 1000);
    let mut cases = Vec::new();
    for (role, report) in reports {
        if report.scenario.allocation.strategy != Strategy::Create {
            continue;
        }
        note!("diagnose: NEO's allocation log, {} ...", report.run_name);
        match neo_allocations_per_buffer(&program, &report.scenario, buffers, &Default::default()) {
            Ok(found) => cases.push(LoggedCase {
                role: *role,
                per_buffer: found.per_buffer,
            }),
            Err(e) => note!("diagnose:   no allocation log: {e}"),
        }
    }
    Ok(cases)
}

/// Whether the shared case calls for fixes: it failed, or it heads for a limit well
/// before the per-device contexts do.
fn needs_fixes(shared: &Report, per_device: Option<&Report>) -> bool {
    if shared.stop.kind().ended_early() {
        return true;
    }
    let ahead = |r: &Report| r.analysis.first_limit.as_ref().map(|l| l.count);
    match (ahead(shared), per_device.and_then(ahead)) {
        (Some(s), Some(p)) => s < p / 2 && s < shared.buffers.saturating_mul(100),
        (Some(s), None) => s < shared.buffers.saturating_mul(100),
        _ => false,
    }
}

/// The seed's matrix: each case with `create`, then with `fill` (a tenth as many).
fn run_matrix(
    platform: (&str, Option<&clmulti_scenario::Partition>),
    devices: &[Device],
    size: u64,
    count: u64,
    runtime_log: bool,
) -> Result<Vec<(Role, Report)>, Failure> {
    let debug_env: Vec<(String, String)> = clmulti_explain::knowledge::runtime_of(platform.0)
        .filter(|_| runtime_log)
        .map(|r| {
            r.debug_log
                .0
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        })
        .unwrap_or_default();
    if runtime_log && debug_env.is_empty() {
        note!(
            "diagnose: --runtime-log: clmulti knows no debug log keys for {}",
            platform.0
        );
    }
    let roles: &[Role] = if devices.len() >= 2 {
        &[Role::OneDevice, Role::Shared, Role::PerDevice]
    } else {
        &[Role::OneDevice]
    };
    let mut reports = Vec::new();
    for strategy in [Strategy::Create, Strategy::Fill] {
        let count = if strategy == Strategy::Create {
            count
        } else {
            fill_count(count)
        };
        for &role in roles {
            let name = format!("{}-{}", role_word(role), strategy.name());
            let mut scenario =
                case_scenario(&name, role, strategy, platform, devices, size, count)?;
            scenario.env.extend(debug_env.iter().cloned());
            reports.push((role, run_case(&scenario)?));
            // Stopped: the cases so far (the last one partial) are the diagnosis.
            if stop_signal().is_some() {
                return Ok(reports);
            }
        }
    }
    Ok(reports)
}

fn role_word(role: Role) -> &'static str {
    match role {
        Role::OneDevice => "one-device",
        Role::Shared => "shared",
        Role::PerDevice => "per-device",
    }
}

/// Where and how the diagnosis ran, for the head of every file it writes.
fn page_context<'a>(
    d: &Diagnosis,
    reports: impl IntoIterator<Item = &'a Report>,
) -> clmulti_explain::context::PageContext {
    let mut drivers: Vec<&str> = d
        .devices
        .iter()
        .map(|x| x.driver_version.value().map_or("unknown", String::as_str))
        .collect();
    drivers.dedup();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_secs());
    clmulti_explain::context::PageContext {
        host: clmulti_probe::host_name(),
        os: clmulti_probe::os_words(),
        runtime: format!("{} (drivers {})", d.platform, drivers.join(", ")),
        clmulti: format!("clmulti {}", crate::VERSION),
        date: clmulti_explain::context::utc_date(now),
        emulated: clmulti_explain::context::PageContext::emulated_parts(reports),
    }
}

fn text(d: &Diagnosis, args: &Args) -> String {
    let context = d.context.as_ref().map_or_else(String::new, |c| c.text());
    let answer: String = d.answer().iter().map(|l| format!("{l}\n")).collect();
    let mut out = format!(
        "clmulti diagnose: {}\n{context}\n{answer}\nverdict\n",
        d.devices_line()
    );
    let evidence = crate::format::shows(crate::format::Verbosity::Verbose);
    for s in d.headline() {
        out.push_str(&format!("  {s}\n"));
        if let (true, Some(detail)) = (evidence, &s.detail) {
            out.push_str(&format!("      evidence: {detail}\n"));
        }
    }
    if !evidence && d.headline().iter().any(|s| s.detail.is_some()) {
        out.push_str("  (the evidence behind each line, the experiments' figures with it: `clmulti -v diagnose`, or the pages `--out DIR` writes)\n");
    }
    out.push_str("\nfixes\n");
    for line in d.fix_lines() {
        out.push_str(&format!("  {line}\n"));
    }
    let mut rows = vec![[
        "strategy",
        "resource",
        "1 device",
        "shared",
        "per device",
        "shared - per device",
    ]
    .map(String::from)
    .to_vec()];
    rows.extend(d.cost_rows().into_iter().map(|r| r.to_vec()));
    if rows.len() > 1 {
        out.push_str(&format!("\ncost per buffer\n{}", table(&rows)));
    }
    out.push_str("\nknown from documented sources\n");
    for s in d.verdict.iter().filter(|s| s.tag() == "known") {
        out.push_str(&format!("  {s}\n"));
    }
    if args.count < 100_000 {
        out.push_str(&format!(
            "\nthe long version: clmulti diagnose --count 100000{}\n",
            if args.devices.is_empty() {
                String::new()
            } else {
                format!(" --device {}", args.devices.join(" --device "))
            }
        ));
    }
    out
}

fn write_out(dir: &Path, diagnosis: &Diagnosis, reports: &[(Role, Report)]) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::Tool(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let write = crate::output::write_file;
    write(&dir.join("diagnose.md"), diagnosis.markdown().as_bytes()).map_err(io)?;
    let json = serde_json::to_string_pretty(diagnosis).map_err(|e| Failure::Tool(e.to_string()))?;
    write(&dir.join("diagnose.json"), (json + "\n").as_bytes()).map_err(io)?;
    let mut lines = String::new();
    for (_, r) in reports {
        lines.push_str(&serde_json::to_string(r).map_err(|e| Failure::Tool(e.to_string()))?);
        lines.push('\n');
    }
    write(&dir.join("runs.jsonl"), lines.as_bytes()).map_err(io)?;
    write(&dir.join("index.html"), page(diagnosis).as_bytes()).map_err(io)?;
    Ok(())
}

/// The diagnosis as a page that opens from disk.
fn page(diagnosis: &Diagnosis) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>clmulti diagnose</title>\n<style>{}</style></head><body>\n<h1>clmulti diagnose</h1>\n{}<p>Files: <a href=\"diagnose.md\">diagnose.md</a>, <a href=\"diagnose.json\">diagnose.json</a>, <a href=\"runs.jsonl\">runs.jsonl</a> (one report per run).</p>\n</body></html>\n",
        crate::render::PAGE_STYLE,
        diagnosis.html()
    )
}

/// Buffers the fill cases make: a tenth of the create cases' (filling each costs its
/// size in memory), at least 10.
pub(crate) fn fill_count(count: u64) -> u64 {
    (count / 10).max(10)
}
