//! The `clmulti` binary: everything is in the library (`clmulti::main`), so that
//! `cargo xtask docs` can generate completions and man pages from the same clap
//! definitions.

fn main() -> std::process::ExitCode {
    clmulti::main()
}
