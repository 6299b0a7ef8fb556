//! `cargo xtask`: project automation (sweeps over scenario grids and their reports).

use std::process::ExitCode;

const HELP: &str = "\
cargo xtask <COMMAND>

Commands:
  sweep [PATHS...]   expand scenarios (default configs/) and run each in its own process
  help               print this help
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("help" | "--help" | "-h") => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("error: unknown xtask command `{other}`\n\n{HELP}");
            ExitCode::from(2)
        }
    }
}
