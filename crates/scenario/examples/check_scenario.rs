//! Validates scenario files and prints the runs their grids expand to.
//!
//! `cargo run -p clmulti-scenario --example check_scenario -- configs/*.toml`

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        match clmulti_scenario::load_file(path.as_ref()) {
            Ok(runs) => {
                for run in runs {
                    println!(
                        "{path}: {} ({:?}, {:?}, {} x {})",
                        run.name,
                        run.context_mode,
                        run.allocation.strategy,
                        clmulti_scenario::format_size(run.allocation.size_bytes),
                        match run.allocation.count {
                            clmulti_scenario::Count::Fixed(n) => n.to_string(),
                            clmulti_scenario::Count::UntilFailure => "until failure".into(),
                        }
                    );
                }
            }
            Err(e) => {
                eprintln!("{e}");
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed) * 2);
}
