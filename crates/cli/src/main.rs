//! `clmulti`: reproduce, measure and explain how OpenCL runtimes allocate buffers
//! across several devices. One subcommand per verb; the logic lives in the library
//! crates (`clmulti-probe`, `-scenario`, `-alloc`, `-axpy`).
//!
//! Exit codes: 0 done (a run that stopped on an OpenCL error is still a successful
//! measurement), 1 the tool itself failed, 2 bad input.

mod axpy;
mod bench;
mod devices;
mod format;
mod run;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Reproduce, measure and explain how OpenCL runtimes allocate buffers across devices.
#[derive(Debug, Parser)]
#[command(name = "clmulti", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List every OpenCL platform and device with the facts that bound allocation,
    /// and the host limits.
    Devices(devices::Args),
    /// Validate scenario files without running them.
    Check(run::CheckArgs),
    /// Run scenario files and report how far allocation went and why it stopped.
    Run(run::RunArgs),
    /// Run dAxpy (the seed's kernel and the fast one), verify it and measure bandwidth.
    Axpy(axpy::Args),
    /// Compare the engine's allocation rate with a plain clCreateBuffer loop.
    Bench(bench::Args),
}

/// How a subcommand failed, mapped to the exit code.
#[derive(Debug)]
pub enum Failure {
    /// The tool could not do its job (no runtime, I/O): exit 1.
    Tool(String),
    /// The input was wrong (scenario, arguments): exit 2.
    Input(String),
}

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`clmulti devices | head`), as Unix tools do,
    // instead of panicking in println!.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devices(args) => devices::run(&args),
        Command::Check(args) => run::check(&args),
        Command::Run(args) => run::run(&args),
        Command::Axpy(args) => axpy::run(&args),
        Command::Bench(args) => bench::run(&args),
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
    }
}
