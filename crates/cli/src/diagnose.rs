//! `clmulti diagnose`: the seed's question answered on this machine. One device, N
//! devices in one shared context and N per-device contexts, with `create` (the seed)
//! and `fill` (residency forced), each in its own process; then every applicable fix
//! re-run on a failing shared case; then one verdict, each statement tagged with
//! where it comes from.

use crate::format::{table, Format};
use crate::{note, Failure};
use clmulti_alloc::child::{self, ChildCommand};
use clmulti_alloc::diagnosis::{fixes_for, Diagnosis, Fix, Placed, Role};
use clmulti_alloc::Report;
use clmulti_probe::Device;
use clmulti_scenario::{format_size, parse_size, Strategy};
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
    #[arg(long = "device")]
    devices: Vec<String>,
    /// Buffers in the `create` runs (the `fill` runs make a tenth as many). The seed
    /// failed at ~1000; for the long version use --count 100000.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(10..))]
    count: u64,
    /// Bytes per buffer (the seed's 1 MiB by default).
    #[arg(long, default_value = "1MiB")]
    size: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: DiagnoseFormat,
    /// Also write diagnose.md, diagnose.json, runs.jsonl and index.html here.
    #[arg(long)]
    out: Option<PathBuf>,
}

impl From<DiagnoseFormat> for Format {
    fn from(f: DiagnoseFormat) -> Self {
        match f {
            DiagnoseFormat::Json => Format::Json,
            _ => Format::Text,
        }
    }
}

/// The devices to diagnose, the platform index, and why only one when only one.
fn choose(args: &Args) -> Result<(usize, String, Vec<Device>, Option<String>), Failure> {
    let platforms = clmulti_probe::platforms().map_err(|e| Failure::Tool(e.to_string()))?;
    if !args.devices.is_empty() {
        let (name, devices) = crate::axpy::devices_from_args(&args.devices, None)?;
        let index = platforms
            .iter()
            .find(|p| p.devices.iter().any(|d| d.id() == devices[0].id()))
            .map_or(0, |p| p.index);
        let why = (devices.len() < 2).then(|| "one device was named".to_owned());
        return Ok((index, name, devices, why));
    }
    let gpus =
        |p: &clmulti_probe::Platform| p.devices_of(clmulti_probe::DeviceTypeFilter::Gpu).count();
    if let Some(p) = platforms.iter().find(|p| gpus(p) >= 2) {
        let devices = p
            .devices_of(clmulti_probe::DeviceTypeFilter::Gpu)
            .cloned()
            .collect();
        return Ok((p.index, p.display_name().to_owned(), devices, None));
    }
    if let Some(p) = platforms.iter().find(|p| p.devices.len() >= 2) {
        return Ok((
            p.index,
            p.display_name().to_owned(),
            p.devices.clone(),
            None,
        ));
    }
    let p = platforms
        .iter()
        .find(|p| !p.devices.is_empty())
        .ok_or_else(|| Failure::Tool("no platform has a device".into()))?;
    Ok((
        p.index,
        p.display_name().to_owned(),
        p.devices[..1].to_vec(),
        Some("no platform has two devices (PoCL gives two with POCL_DEVICES=\"cpu cpu\", or \"pthread pthread\" on PoCL 3)".into()),
    ))
}

/// One run of the matrix or a fix, as a scenario file for a child.
struct Case {
    name: String,
    role: Role,
    strategy: Strategy,
    nofile: Option<u64>,
    env: Vec<(String, String)>,
    context_per_device: bool,
}

fn scenario_text(
    case: &Case,
    platform: usize,
    devices: &[Device],
    size: u64,
    count: u64,
) -> String {
    let indices: Vec<String> = match case.role {
        Role::OneDevice => vec![devices[0].info().index.to_string()],
        _ => devices.iter().map(|d| d.info().index.to_string()).collect(),
    };
    let mut text = format!(
        "name = \"{}\"\n[devices]\nplatform = {platform}\ntype = \"all\"\nindices = [{}]\n[context]\nmode = \"{}\"\n\
         [allocation]\nsize = {size}\ncount = {count}\nstrategy = \"{}\"\nplacement = \"round-robin\"\n\
         [sampling]\nevery = {}\n[guards]\nmax_seconds = 120\n",
        case.name,
        indices.join(", "),
        if case.context_per_device { "per-device" } else { "shared" },
        case.strategy.name(),
        (count / 50).max(1),
    );
    if let Some(n) = case.nofile {
        text.push_str(&format!("[limits]\nnofile = {n}\n"));
    }
    if !case.env.is_empty() {
        text.push_str("[env]\n");
        for (k, v) in &case.env {
            text.push_str(&format!("{k} = \"{v}\"\n"));
        }
    }
    text
}

fn run_case(dir: &Path, case: &Case, text: &str) -> Result<Report, Failure> {
    let file = dir.join(format!("{}.toml", case.name));
    std::fs::write(&file, text).map_err(|e| Failure::Tool(format!("{}: {e}", file.display())))?;
    let program = std::env::current_exe()
        .map_err(|e| Failure::Tool(format!("cannot find own binary: {e}")))?;
    note!("diagnose: {} ...", case.name);
    let scenario = clmulti_scenario::load_str(text, &case.name)
        .map_err(|e| Failure::Tool(e.to_string()))?
        .remove(0);
    let outcome = child::run_child(&ChildCommand::scenario_run(
        program,
        &file,
        0,
        &scenario,
        &case.env.iter().cloned().collect(),
        None,
    ))
    .map_err(|e| Failure::Tool(format!("cannot run a child process: {e}")))?;
    let report = Report::from_child(&scenario, &outcome);
    note!("diagnose:   {}", report.headline());
    Ok(report)
}

/// Whether the shared case calls for fixes: it failed, or it heads for a limit well
/// before the per-device contexts do.
fn needs_fixes(shared: &Report, per_device: Option<&Report>) -> bool {
    if matches!(shared.stop, clmulti_alloc::StopReason::Failed { .. }) {
        return true;
    }
    let ahead = |r: &Report| r.analysis.first_limit.as_ref().map(|l| l.count);
    match (ahead(shared), per_device.and_then(ahead)) {
        (Some(s), Some(p)) => s < p / 2 && s < shared.buffers.saturating_mul(100),
        (Some(s), None) => s < shared.buffers.saturating_mul(100),
        _ => false,
    }
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let size = parse_size(&args.size).map_err(|e| Failure::Input(format!("--size: {e}")))?;
    if size == 0 {
        return Err(Failure::Input(
            "--size: a buffer must have at least 1 byte".into(),
        ));
    }
    // Before minutes of runs: the results must have somewhere to go.
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Input(format!("--out {}: {e}", dir.display())))?;
    }
    let (platform, platform_name, devices, single) = choose(args)?;
    if let Some(why) = &single {
        note!("diagnose: only one device: {why}; the shared and per-device cases need two");
    }
    note!(
        "diagnose: {} device(s) of {platform_name}; {} x {} buffers with create, {} with fill",
        devices.len(),
        args.count,
        format_size(size),
        args.count / 10
    );
    let work = std::env::temp_dir().join(format!("clmulti-diagnose-{}", std::process::id()));
    std::fs::create_dir_all(&work)
        .map_err(|e| Failure::Tool(format!("{}: {e}", work.display())))?;
    let roles: &[Role] = if devices.len() >= 2 {
        &[Role::OneDevice, Role::Shared, Role::PerDevice]
    } else {
        &[Role::OneDevice]
    };
    let mut reports: Vec<(Role, Report)> = Vec::new();
    for strategy in [Strategy::Create, Strategy::Fill] {
        let count = if strategy == Strategy::Create {
            args.count
        } else {
            (args.count / 10).max(10)
        };
        for &role in roles {
            let case = Case {
                name: format!(
                    "{}-{}",
                    match role {
                        Role::OneDevice => "one-device",
                        Role::Shared => "shared",
                        Role::PerDevice => "per-device",
                    },
                    strategy.name()
                ),
                role,
                strategy,
                nofile: None,
                env: Vec::new(),
                context_per_device: role == Role::PerDevice,
            };
            let text = scenario_text(&case, platform, &devices, size, count);
            reports.push((role, run_case(&work, &case, &text)?));
        }
    }
    let find = |role: Role, strategy: Strategy| {
        reports
            .iter()
            .find(|(r, rep)| *r == role && rep.scenario.allocation.strategy == strategy)
            .map(|(_, rep)| rep)
    };
    let failing = [Strategy::Create, Strategy::Fill].into_iter().find(|s| {
        find(Role::Shared, *s).is_some_and(|shared| needs_fixes(shared, find(Role::PerDevice, *s)))
    });
    let mut fix_reports: Vec<(Fix, Result<Report, String>)> = Vec::new();
    if let Some(strategy) = failing {
        let shared = find(Role::Shared, strategy).expect("found above");
        let count = shared.scenario.allocation.count;
        let count = match count {
            clmulti_scenario::Count::Fixed(n) => n,
            clmulti_scenario::Count::UntilFailure => args.count,
        };
        let hard = clmulti_probe::rlimit(clmulti_probe::Rlimit::NoFile).hard;
        for (fix, untested) in fixes_for(shared, hard) {
            if let Some(reason) = untested {
                fix_reports.push((fix, Err(reason)));
                continue;
            }
            let mut case = Case {
                name: format!("fix-{}", fix_reports.len() + 1),
                role: Role::Shared,
                strategy,
                nofile: None,
                env: Vec::new(),
                context_per_device: false,
            };
            match &fix {
                // Measured already: the per-device run of the matrix.
                Fix::PerDeviceContexts => {
                    let per = find(Role::PerDevice, strategy).cloned();
                    fix_reports.push((fix, per.ok_or_else(|| "no per-device run".to_owned())));
                    continue;
                }
                Fix::RaiseNofile { to } => case.nofile = Some(*to),
                Fix::Pin => case.strategy = Strategy::Pin,
                Fix::Pool => case.strategy = Strategy::Pool,
                Fix::RuntimeKnob { env, .. } => case.env = env.clone(),
            }
            let text = scenario_text(&case, platform, &devices, size, count);
            let report = run_case(&work, &case, &text)?;
            fix_reports.push((fix, Ok(report)));
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    let placed: Vec<Placed<'_>> = reports
        .iter()
        .map(|(role, report)| Placed {
            role: *role,
            report,
        })
        .collect();
    let fixes: Vec<(Fix, Result<&Report, String>)> = fix_reports
        .iter()
        .map(|(f, r)| (f.clone(), r.as_ref().map_err(Clone::clone)))
        .collect();
    let mut diagnosis = Diagnosis::new(&placed, &fixes);
    if let Some(why) = single {
        diagnosis.verdict.insert(
            0,
            clmulti_alloc::analysis::Statement::measured(format!(
                "one device only: {why}; nothing here compares a shared context with per-device ones"
            )),
        );
    }
    if let Some(dir) = &args.out {
        write_out(dir, &diagnosis, &reports)?;
    }
    match args.format {
        DiagnoseFormat::Json => crate::format::print_json(&diagnosis)?,
        DiagnoseFormat::Markdown => print!("{}", diagnosis.markdown()),
        DiagnoseFormat::Text => print!("{}", text(&diagnosis, args)),
    }
    Ok(())
}

fn text(d: &Diagnosis, args: &Args) -> String {
    let mut out = format!("clmulti diagnose: {}\n\nverdict\n", d.devices_line());
    for s in d.headline() {
        out.push_str(&format!("  {s}\n"));
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
    std::fs::write(dir.join("diagnose.md"), diagnosis.markdown()).map_err(io)?;
    let json = serde_json::to_string_pretty(diagnosis).map_err(|e| Failure::Tool(e.to_string()))?;
    std::fs::write(dir.join("diagnose.json"), json + "\n").map_err(io)?;
    let mut lines = String::new();
    for (_, r) in reports {
        lines.push_str(&serde_json::to_string(r).map_err(|e| Failure::Tool(e.to_string()))?);
        lines.push('\n');
    }
    std::fs::write(dir.join("runs.jsonl"), lines).map_err(io)?;
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>clmulti diagnose</title>\n<style>{}</style></head><body>\n<h1>clmulti diagnose</h1>\n{}<p>Files: <a href=\"diagnose.md\">diagnose.md</a>, <a href=\"diagnose.json\">diagnose.json</a>, <a href=\"runs.jsonl\">runs.jsonl</a> (one report per run).</p>\n</body></html>\n",
        crate::render::PAGE_STYLE,
        diagnosis.html()
    );
    std::fs::write(dir.join("index.html"), page).map_err(io)?;
    Ok(())
}
