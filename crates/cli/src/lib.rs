//! `clmulti`: reproduce, measure and explain how OpenCL runtimes allocate buffers
//! across several devices. One subcommand per verb; the logic lives in the library
//! crates (`clmulti-probe`, `-scenario`, `-alloc`, `-axpy`); this crate parses
//! arguments, prints and maps outcomes to exit codes. [`command`] is the clap
//! definition (for completions and man pages), [`main`] the program.
//!
//! Exit codes: 0 done (a run that stopped on an OpenCL error is still a successful
//! measurement), 1 the tool itself failed, 2 bad input, 3 unsupported: the platform
//! cannot do what was asked (e.g. `clmulti axpy` on NEO's emulated devices, which run
//! no kernel), said on stdout in the command's format.

mod axpy;
mod bench;
mod check;
mod devices;
mod diagnose;
mod experiments;
mod format;
mod render;
mod run;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// The version line: crate version, git commit, enabled features.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CLMULTI_GIT_COMMIT"),
    ", features: ",
    env!("CLMULTI_FEATURES"),
    ")"
);

/// Reproduce, measure and explain how OpenCL runtimes allocate buffers across devices.
#[derive(Debug, Parser)]
#[command(name = "clmulti", version = VERSION, about, long_about = None)]
struct Cli {
    /// Say nothing on stderr but errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Say more on stderr.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List every OpenCL platform and device with the facts that bound allocation,
    /// and the host limits.
    Devices(devices::Args),
    /// Validate scenario files without running them.
    Check(check::Args),
    /// Run scenario files and report how far allocation went and why it stopped.
    Run(run::Args),
    /// Run dAxpy (the seed's kernel and the fast one), verify it and measure bandwidth.
    Axpy(axpy::Args),
    /// Compare the engine's allocation rate with a plain clCreateBuffer loop.
    Bench(bench::Args),
    /// Answer the seed's question on this machine: one device, one shared context,
    /// one context per device; what sharing costs, what fails, which fix works.
    Diagnose(diagnose::Args),
}

/// The clap definition of the `clmulti` command line, with the package version only
/// (generated documentation must not change with every commit).
pub fn command() -> clap::Command {
    Cli::command().version(env!("CARGO_PKG_VERSION"))
}

/// How a subcommand failed, mapped to the exit code.
#[derive(Debug)]
pub enum Failure {
    /// The tool could not do its job (no runtime, I/O): exit 1.
    Tool(String),
    /// The input was wrong (scenario, arguments): exit 2.
    Input(String),
    /// The platform cannot do what was asked, and the output said why: exit 3.
    Unsupported(String),
}

/// Runs `clmulti` with the process's arguments.
pub fn main() -> ExitCode {
    // Die quietly on a closed pipe (`clmulti devices | head`), as Unix tools do,
    // instead of panicking in println!.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    format::set_verbosity(if cli.quiet {
        format::Verbosity::Quiet
    } else if cli.verbose {
        format::Verbosity::Verbose
    } else {
        format::Verbosity::Normal
    });
    let result = match cli.command {
        Command::Devices(args) => devices::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Axpy(args) => axpy::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Diagnose(args) => diagnose::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Tool(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
        Err(Failure::Input(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Unsupported(msg)) => {
            eprintln!("unsupported: {msg}");
            ExitCode::from(3)
        }
    }
}
