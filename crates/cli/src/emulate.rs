//! `clmulti emulate`: any program on Intel's GPU runtime NEO over emulated GPUs: Arc
//! A770s on i915 (or another i915 model: `--model adl-s`, the newest GPU NEO 20.44
//! lists), Arc B580s on xe (`--driver xe`). The program runs with clmulti's emulated
//! kernel driver preloaded (crate `clmulti-kmd-emu`), so NEO runs its real
//! kernel-driver path; stderr says first which parts are emulated. The program replaces
//! this process (`exec`, as `env` and `strace` do): its exit status, signals and output
//! are its own.

use crate::Failure;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clmulti_contract::kmd_emu;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Arguments of `clmulti emulate`.
#[derive(Debug, clap::Args)]
#[command(trailing_var_arg = true)]
pub struct Args {
    /// The kernel driver: i915 or xe (sets NEO's EnableDirectSubmission=0, as no GPU
    /// runs NEO's ring here).
    #[arg(long, default_value = "i915", value_parser = driver_parser())]
    driver: kmd_emu::Kernel,
    /// The device, one of the driver's models (default its first): on i915 a770 (Arc
    /// A770, discrete) or adl-s (UHD Graphics 770, Alder Lake-S: integrated, no device
    /// memory; the newest GPU NEO 20.44 lists); on xe b580 (Arc B580, discrete).
    #[arg(long, value_parser = model_parser())]
    model: Option<kmd_emu::Model>,
    /// Emulated devices (1-8).
    #[arg(long, allow_negative_numbers = true, default_value_t = 2, value_parser = crate::values::whole_in::<u8>(1..=kmd_emu::MAX_DEVICES as u64))]
    devices: u8,
    /// Device memory per device (default: the model's, 16 GiB on an A770, 12 GiB on a
    /// B580; none on an integrated GPU).
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE", value_parser = parse_memory)]
    local_memory: Option<u64>,
    /// Print every ioctl on an emulated descriptor on stderr.
    #[arg(long)]
    trace: bool,
    /// Write the emulated driver's counts to FILE when the program exits.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Keep the ICD loader's own choice of runtimes (OCL_ICD_VENDORS as set, or every
    /// installed one); by default, with OCL_ICD_VENDORS unset, NEO alone is listed.
    #[arg(long)]
    all_runtimes: bool,
    /// The program and its arguments.
    #[arg(required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// `--driver`'s values: the emulation's kernel drivers, by name.
fn driver_parser() -> impl TypedValueParser<Value = kmd_emu::Kernel> {
    let values = kmd_emu::KERNELS.map(|kernel| {
        let help = format!("Linux's {} driver: {}", kernel.name(), kernel.model_keys());
        PossibleValue::new(kernel.name()).help(help)
    });
    PossibleValuesParser::new(values).map(|name| kmd_emu::Kernel::named(&name).unwrap_or_default())
}

/// `--model`'s values: every model's key (whether it fits `--driver` is checked after).
fn model_parser() -> impl TypedValueParser<Value = kmd_emu::Model> {
    let values = kmd_emu::MODELS
        .map(|m| PossibleValue::new(m.key).help(format!("{}, on {}", m.name, m.kernel.name())));
    PossibleValuesParser::new(values).map(|key| kmd_emu::model(&key).unwrap_or(kmd_emu::A770))
}

fn parse_memory(text: &str) -> Result<u64, String> {
    clmulti_scenario::parse_size(text)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            (b >= 1 << 20)
                .then_some(b)
                .ok_or_else(|| "at least 1MiB".to_owned())
        })
}

/// NEO's `.icd` file as Debian's intel-opencl-icd installs it, when the library it
/// names exists (ocl-icd takes one `.icd` file in OCL_ICD_VENDORS: NEO alone).
fn neo_icd() -> Option<&'static Path> {
    let icd = Path::new("/etc/OpenCL/vendors/intel.icd");
    let library = std::fs::read_to_string(icd).ok()?;
    Path::new(library.trim()).exists().then_some(icd)
}

/// The library beside this binary, or why it is not there.
fn emulation_library() -> Result<PathBuf, Failure> {
    let dir = clmulti_scenario::default_libraries()
        .ok_or_else(|| Failure::Tool("cannot tell where clmulti is".into()))?;
    let library = dir.join(kmd_emu::LIBRARY.file_name);
    if library.exists() {
        return Ok(library);
    }
    let release = if dir.ends_with("release") {
        " --release"
    } else {
        ""
    };
    Err(Failure::Tool(format!(
        "{} is not beside clmulti ({}): build it with `cargo build{release} -p {}`",
        kmd_emu::LIBRARY.file_name,
        dir.display(),
        kmd_emu::LIBRARY.package
    )))
}

pub fn run(args: &Args) -> Failure {
    match prepare(args) {
        Ok(mut command) => {
            let program = args.command[0].to_string_lossy().into_owned();
            let err = command.exec();
            let code = if err.kind() == std::io::ErrorKind::NotFound {
                "not found"
            } else {
                "cannot be run"
            };
            Failure::Tool(format!("{program} {code}: {err}"))
        }
        Err(failure) => failure,
    }
}

/// The model `--driver` and `--model` name, or why they do not fit together.
fn model(args: &Args) -> Result<kmd_emu::Model, Failure> {
    let model = kmd_emu::model_on(args.driver, args.model.map(|m| m.key)).map_err(|why| {
        // The parser took a model's key: only its driver can be another.
        let (key, its) = args.model.map_or(("", ""), |m| (m.key, m.kernel.name()));
        Failure::Input(format!("--model {key}: {why}: pass --driver {its}"))
    })?;
    if !model.discrete() && args.local_memory.is_some() {
        return Err(Failure::Input(format!(
            "--local-memory: the {} is integrated and has no device memory",
            model.name
        )));
    }
    Ok(model)
}

fn prepare(args: &Args) -> Result<std::process::Command, Failure> {
    let model = model(args)?;
    let library = emulation_library()?;
    let mut command = std::process::Command::new(&args.command[0]);
    command.args(&args.command[1..]);
    // Last, nearest libc: a library preloaded before it (a tracer) sees the calls
    // the emulation answers.
    let preload = match std::env::var_os("LD_PRELOAD").filter(|p| !p.is_empty()) {
        Some(mut old) => {
            old.push(":");
            old.push(&library);
            old
        }
        None => library.clone().into_os_string(),
    };
    command
        .env("LD_PRELOAD", preload)
        .env(kmd_emu::DRIVER, model.kernel.name())
        .env(kmd_emu::MODEL, model.key)
        .env(kmd_emu::DEVICES, args.devices.to_string());
    let neo_keys = xe_keys(model.kernel, &mut command);
    if let Some(bytes) = args.local_memory {
        command.env(kmd_emu::LOCAL_MEMORY, bytes.to_string());
    }
    if args.trace {
        command.env(kmd_emu::TRACE, "1");
    }
    if let Some(report) = &args.report {
        command.env(kmd_emu::REPORT, report);
    }
    let mut runtimes = "the ICD loader's runtimes as configured".to_owned();
    if !args.all_runtimes && std::env::var_os("OCL_ICD_VENDORS").is_none() {
        let neo = neo_icd().ok_or_else(|| {
            Failure::Tool(
                "Intel's GPU runtime NEO is not installed (no /etc/OpenCL/vendors/intel.icd naming an existing library): install it with scripts/setup-intel-gpu.sh (Debian's intel-opencl-icd), or pass --all-runtimes".into(),
            )
        })?;
        command.env("OCL_ICD_VENDORS", neo);
        runtimes = format!("NEO alone (OCL_ICD_VENDORS={})", neo.display());
    }
    let memory = if model.discrete() {
        let size = clmulti_scenario::format_size(args.local_memory.unwrap_or(model.local_bytes));
        format!("of {size}")
    } else {
        "(integrated: system memory only; no machine has two)".to_owned()
    };
    crate::note!(
        "clmulti emulate: {} emulated {} {} device(s) {memory} ({}): the kernel driver is emulated (not modelled: GPU work, the kernel's own memory and GTT mappings, page faults), kernel accounting as modelled; what the runtime does is its own code{neo_keys}; {runtimes}",
        args.devices,
        model.kernel.name(),
        model.name,
        library.display()
    );
    Ok(command)
}

/// On xe, NEO's keys the emulation needs (its direct submission off), where the
/// environment does not set them already; what the note says of them.
fn xe_keys(kernel: kmd_emu::Kernel, command: &mut std::process::Command) -> String {
    if kernel != kmd_emu::Kernel::Xe {
        return String::new();
    }
    let mut set = Vec::new();
    for (key, value) in kmd_emu::XE_NEO_KEYS {
        match std::env::var(key) {
            Ok(own) => set.push(format!("{key}={own} (as set)")),
            Err(_) => {
                command.env(key, value);
                set.push(format!("{key}={value}"));
            }
        }
    }
    format!(
        ", except {}: NEO's direct submission hands work to a ring the GPU keeps running, and none runs here; not every NEO drives xe: Debian 12's 22.43 lists no platform on it, unstable's 26.27 does (measured here): `scripts/intel-gpu-next.sh run-kernel-path target/release/clmulti emulate --driver xe -- COMMAND` runs the newer one",
        set.join(" ")
    )
}
