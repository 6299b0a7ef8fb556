//! The seed's experiment in a few lines: 1 MiB buffers in one context over two
//! devices, and what each cost.
//!
//! `POCL_DEVICES="pthread pthread" cargo run -p clmulti-alloc --example seed`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs = clmulti_scenario::load_str(
        r#"
        name = "seed-example"
        [devices]
        type = "gpu"          # falls back to CPU devices when there is no GPU
        count = 2
        [context]
        mode = "shared"
        [allocation]
        size = "1MiB"
        count = 5000
        [sampling]
        every = 500
        "#,
        "seed-example.toml",
    )?;
    let report = clmulti_alloc::run(&runs[0], None)?;
    println!(
        "{} buffers on {}: {}",
        report.buffers,
        report.platform,
        report.stop.summary()
    );
    for cost in &report.costs {
        println!(
            "  {:<16} {:>12.1} per buffer",
            cost.resource.label(),
            cost.per_buffer
        );
    }
    if let Some(p) = &report.prediction {
        println!("{}", p.explanation);
    }
    println!("leak check clean: {}", report.leak_check.clean);
    Ok(())
}
