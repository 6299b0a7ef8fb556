//! The seed's experiment in a few lines: 1 MiB buffers in one context over two
//! devices, what each cost, and what the measurements say.
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
    let report = clmulti_alloc::run(&runs[0], clmulti_alloc::RunOptions::default())?;
    if let clmulti_explain::StopReason::Skipped { .. } = report.stop {
        println!("{}", report.headline());
        eprintln!(
            "(for two CPU devices: POCL_DEVICES=\"pthread pthread\", or \"cpu cpu\" on PoCL >= 4)"
        );
        return Ok(());
    }
    println!("{} on {}", report.headline(), report.platform);
    for cost in &report.costs {
        println!(
            "  {:<16} {:>12} per buffer",
            cost.resource.label(),
            cost.resource.unit().format(cost.per_buffer)
        );
    }
    for statement in &report.analysis.statements {
        println!("{statement}");
    }
    println!("leak check clean: {}", report.leak_check.clean);
    Ok(())
}
