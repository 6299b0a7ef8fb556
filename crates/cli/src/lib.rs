//! `clmulti`: reproduce, measure and explain how OpenCL runtimes allocate buffers
//! across several devices. One subcommand per verb; the logic lives in the library
//! crates (`clmulti-probe` reads devices, `-scenario` the files, `-alloc` runs the
//! loop, `-explain` says what the runs mean, `-supervise` runs children, `-axpy`
//! the kernels); this crate parses arguments, prints and maps outcomes to exit codes. [`command`] is the clap
//! definition (for completions and man pages), [`main`] the program.
//!
//! Exit codes: 0 done (a run that stopped on an OpenCL error, or that the platform
//! cannot do, such as `clmulti axpy` on NEO's emulated devices, is still a result,
//! said on stdout in the command's format), 1 the tool itself failed (no runtime, a
//! runtime that crashed, exited or hung while loading, a write that failed), 2 bad
//! input; 130 and 143 when SIGINT or SIGTERM stopped it.
//!
//! Every command runs in a worker process the first process watches
//! ([`clmulti_supervise::worker`]).

mod axpy;
mod bench;
mod bundle;
mod check;
mod child;
mod devices;
mod diagnose;
mod emulate;
mod experiments;
mod format;
pub mod output;
mod render;
mod reproduce;
mod run;
pub mod trust;
mod values;

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
    /// End the command after this many seconds, loading the runtime included (`run`:
    /// each run, which then reports what it measured; default: its max_seconds guard
    /// plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and
    /// report what finished, and killed a tenth later (2 to 10 s) if still running;
    /// exit 1 either way. Without it, loading a runtime may take 60 s.
    #[arg(long, global = true, allow_negative_numbers = true, value_name = "SECONDS", value_parser = clmulti_scenario::parse_seconds)]
    timeout: Option<f64>,
    #[command(subcommand)]
    command: Command,
}

/// A subcommand's arguments, defined only when that subcommand runs: clap built
/// every subcommand's at each start (0.29 ms of every process, a run's child too,
/// on a 2-core machine; 0.14 ms with only its own, measured).
#[derive(Debug)]
struct Deferred<T>(T);

impl<T> std::ops::Deref for Deferred<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Deferred)
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
}

impl<T: clap::Args> clap::Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(|cmd| keeping_about(cmd, T::augment_args))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(|cmd| keeping_about(cmd, T::augment_args_for_update))
    }
}

/// `augment(cmd)`, keeping the subcommand's own description (its variant's doc
/// comment), which the arguments' struct's would replace when added after it.
fn keeping_about(
    cmd: clap::Command,
    augment: impl FnOnce(clap::Command) -> clap::Command,
) -> clap::Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let mut cmd = augment(cmd);
    if let Some(about) = about {
        cmd = cmd.about(about);
    }
    if let Some(long_about) = long_about {
        cmd = cmd.long_about(long_about);
    }
    cmd
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List every OpenCL platform and device with the facts that bound allocation,
    /// and the host limits.
    Devices(Deferred<devices::Args>),
    /// Validate scenario files without running them.
    ///
    /// Each run of each file is checked as `clmulti run` would read it on this
    /// machine: keys, values and their contradictions; the paths its [env] names
    /// exist here; its [limits] are within this machine's hard limits; and a
    /// devices.platform that names an index or a name names a platform the ICD
    /// loader lists under the run's [env] (listed by `clmulti devices` in a child
    /// process, which loads the runtime, only for a file whose loads are trusted).
    /// It lists what each file's runs would load or write outside themselves (every
    /// [env] key not on the list of inert keys, `clmulti trust --help`), and why
    /// each needs no word or whose it has; what no word allows (a vendors file that
    /// is a FIFO, a device or over 64 KiB, a relative library path in an .icd file)
    /// is a warning, and run refuses the file.
    ///
    /// Exit status: 0 when every file is valid here; 2 when one is not, a problem
    /// of this machine (a missing path, a limit above the hard one, a platform not
    /// present) included: each is said as file:line:col: key `...`: why; 1 when
    /// check itself failed. Without an OpenCL runtime (or with one that crashes or
    /// hangs while loading) the platforms cannot be listed: check says that
    /// devices.platform was not checked and does not fail for it.
    Check(Deferred<check::Args>),
    /// Run scenario files and report how far allocation went and why it stopped.
    Run(Deferred<run::Args>),
    /// Run dAxpy (the seed's kernel and the fast one), verify it and measure bandwidth.
    ///
    /// Ctrl-C, SIGTERM or SIGHUP ends the timing after the repetition in flight, then
    /// reports what finished and names what did not run; a second signal ends it at
    /// once, without a report. `--timeout` stops it the same way.
    Axpy(Deferred<axpy::Args>),
    /// Compare the engine's allocation rate with a plain clCreateBuffer loop.
    Bench(Deferred<bench::Args>),
    /// Answer the seed's question on this machine: one device, one shared context,
    /// one context per device; what sharing costs, what fails, which fix works.
    Diagnose(Deferred<diagnose::Args>),
    /// Run a program on Intel's GPU runtime NEO over emulated Arc A770s (i915) or
    /// Arc B580s (xe).
    ///
    /// The program runs with clmulti's emulated kernel driver preloaded
    /// (libclmulti_kmd_emu.so beside clmulti): NEO finds N Arc A770 render nodes on
    /// i915 (`--model adl-s`: integrated Alder Lake-S GPUs; `--driver xe`: Arc B580s on
    /// xe, NEO's direct submission off) and runs its real kernel-driver path, with no
    /// GPU. Stderr first says which parts are emulated. With OCL_ICD_VENDORS unset,
    /// the ICD loader lists NEO alone. The program then replaces clmulti: its exit
    /// status is the program's (1 when it cannot be started; 2 for bad arguments).
    /// clmulti's own commands run under it as under a real driver:
    /// `clmulti emulate -- clmulti diagnose`.
    Emulate(Deferred<emulate::Args>),
    /// Write a failed run as a stand-alone C program (ICD loader only) that fails
    /// where the run did: the same platform, devices, context mode, flags, size,
    /// strategy and limits, holding as many descriptors as clmulti held itself.
    Reproduce(Deferred<reproduce::Args>),
    /// Trust scenario files that load code (a library, a runtime, a layer, a search
    /// path, a code cache, any [env] key not on the list of inert keys), as they are
    /// now, with the libraries they load: run and the sweep refuse a file whose loads
    /// nothing trusts. A changed file or library needs trust again.
    Trust(Deferred<trust::Args>),
}

/// The clap definition of the `clmulti` command line, with the package version only
/// (generated documentation must not change with every commit).
pub fn command() -> clap::Command {
    cli_command().version(env!("CARGO_PKG_VERSION"))
}

/// The clap definition, `clmulti trust`'s description holding the list of inert
/// keys (one list: [`trust::INERT_KEYS`]).
fn cli_command() -> clap::Command {
    Cli::command().mut_subcommand("trust", |c| c.long_about(trust::long_about()))
}

/// How a subcommand failed, mapped to the exit code.
#[derive(Debug)]
pub enum Failure {
    /// The tool could not do its job (no runtime, I/O): exit 1.
    Tool(String),
    /// The input was wrong (scenario, arguments): exit 2.
    Input(String),
    /// Stdout was closed by its reader (`clmulti devices | head`): exit 1, silently.
    ClosedOutput,
    /// SIGINT or SIGTERM stopped the command after it reported: exit 128 + signal.
    Interrupted(i32),
}

impl Failure {
    /// What went wrong, in words.
    pub fn into_message(self) -> String {
        match self {
            Failure::Tool(m) | Failure::Input(m) => m,
            Failure::ClosedOutput => "stdout was closed".into(),
            Failure::Interrupted(signal) => {
                format!("stopped by {}", clmulti_contract::signal_name(signal))
            }
        }
    }
}

/// `clmulti emulate` did not become its program: why, and 2 for bad input, else 1.
fn emulate_failed(failure: Failure) -> ExitCode {
    let code = if matches!(failure, Failure::Input(_)) {
        clmulti_contract::EXIT_INPUT
    } else {
        clmulti_contract::EXIT_TOOL
    };
    say!("error: {}", failure.into_message());
    ExitCode::from(code)
}

/// The process's arguments, as [`cli_command`] reads them (a usage error exits 2).
fn parse_arguments() -> Cli {
    use clap::FromArgMatches;
    if let Some(cli) = resolved_child(std::env::args_os().skip(1)) {
        return cli;
    }
    Cli::from_arg_matches(&cli_command().get_matches()).unwrap_or_else(|e| e.exit())
}

/// A run's child, started by its harness with exactly
/// [`RESOLVED_CHILD_ARGS`](clmulti_contract::progress::RESOLVED_CHILD_ARGS) and a
/// path: read without building the whole command line (0.4 ms of every run's
/// process, measured); clap reads any other arguments.
fn resolved_child(args: impl Iterator<Item = std::ffi::OsString>) -> Option<Cli> {
    let mut args: Vec<std::ffi::OsString> = args.collect();
    let path = args
        .pop()
        .filter(|p| !p.as_encoded_bytes().starts_with(b"-"))?;
    let expected = clmulti_contract::progress::RESOLVED_CHILD_ARGS;
    (args.len() == expected.len() && args.iter().zip(expected).all(|(a, e)| a == e)).then(|| Cli {
        quiet: true,
        verbose: false,
        timeout: None,
        command: Command::Run(Deferred(run::Args::resolved_child(path.into()))),
    })
}

/// Runs `clmulti` with the process's arguments.
pub fn main() -> ExitCode {
    // Rust's runtime ignores SIGPIPE: a closed stdout is a write error the commands
    // report (format::write_stdout), never a panic or a silent death.
    let cli = parse_arguments();
    format::set_verbosity(match (cli.quiet, cli.verbose) {
        (true, _) => format::Verbosity::Quiet,
        (_, true) => format::Verbosity::Verbose,
        _ => format::Verbosity::Normal,
    });
    let timeout = cli.timeout.map(std::time::Duration::from_secs_f64);
    // The program replaces this process: nothing to supervise.
    if let Command::Emulate(args) = &cli.command {
        return emulate_failed(emulate::run(args));
    }
    let (name, internal) = match &cli.command {
        Command::Devices(_) => ("devices", false),
        Command::Check(_) => ("check", false),
        Command::Run(args) => ("run", args.is_child()),
        Command::Axpy(_) => ("axpy", false),
        Command::Bench(args) => ("bench", args.is_arm()),
        Command::Diagnose(_) => ("diagnose", false),
        Command::Emulate(_) => ("emulate", false),
        Command::Reproduce(_) => ("reproduce", false),
        Command::Trust(_) => ("trust", false),
    };
    // Commands that report what they measured when stopped: `run`'s runs, `bench`'s
    // finished rounds (its arms die at once), `diagnose`'s cases, `axpy`'s finished
    // verifications, bandwidth and split runs.
    let graceful_signals = match &cli.command {
        Command::Run(_) | Command::Diagnose(_) | Command::Axpy(_) => true,
        Command::Bench(args) => !args.is_arm(),
        _ => false,
    };
    let body = move || {
        let result = match cli.command {
            Command::Devices(args) => devices::run(&args),
            Command::Check(args) => check::run(&args),
            Command::Run(args) => run::run(&args, timeout),
            Command::Axpy(args) => axpy::run(&args),
            Command::Bench(args) => bench::run(&args),
            Command::Diagnose(args) => diagnose::run(&args),
            Command::Emulate(args) => Err(emulate::run(&args)),
            Command::Reproduce(args) => reproduce::run(&args),
            Command::Trust(args) => trust::run(&args),
        };
        match result {
            Ok(()) => 0,
            Err(Failure::Tool(msg)) => {
                say!("error: {msg}");
                clmulti_contract::EXIT_TOOL
            }
            Err(Failure::Input(msg)) => {
                say!("error: {msg}");
                clmulti_contract::EXIT_INPUT
            }
            Err(Failure::ClosedOutput) => clmulti_contract::EXIT_TOOL,
            Err(Failure::Interrupted(signal)) => clmulti_contract::exit_by_signal(signal),
        }
    };
    // Internal children are watched by the harness that started them.
    let code = if internal {
        if graceful_signals {
            clmulti_supervise::Interrupt::catch();
        }
        body()
    } else {
        clmulti_supervise::worker::supervise(
            clmulti_supervise::worker::Bounds {
                timeout: timeout.filter(|_| name != "run"),
                graceful_signals,
                command: name,
                note: |message| note!("{message}"),
            },
            body,
        )
    };
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// A run's child reads its arguments as clap would, and nothing else takes
    /// that path.
    #[test]
    fn a_run_child_reads_its_arguments_as_clap_does() {
        let given = clmulti_contract::progress::RESOLVED_CHILD_ARGS
            .iter()
            .map(|a| a.to_string())
            .chain(["/dev/fd/5".to_owned()]);
        let fast = resolved_child(given.clone().map(Into::into)).expect("the harness's arguments");
        let clap = Cli::try_parse_from(std::iter::once("clmulti".to_owned()).chain(given)).unwrap();
        assert_eq!(format!("{fast:?}"), format!("{clap:?}"));
        for other in [
            vec![
                "run",
                "--format",
                "json",
                "--child",
                "-q",
                "--resolved",
                "--help",
            ],
            vec![
                "run",
                "--format",
                "json",
                "--child",
                "--resolved",
                "/dev/fd/5",
            ],
            vec![
                "run",
                "--format",
                "text",
                "--child",
                "-q",
                "--resolved",
                "/dev/fd/5",
            ],
            vec!["run", "/dev/fd/5"],
            vec![],
        ] {
            assert!(
                resolved_child(other.iter().map(Into::into)).is_none(),
                "{other:?}"
            );
        }
    }
}
