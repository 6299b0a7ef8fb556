//! What one reading of this process's usage costs here, part by part: the price a
//! sample adds to an allocation loop (clmulti's `sampling` seconds).
//!
//! `cargo run --release -p clmulti-probe --example reading_cost [-- ROUNDS]`
//!
//! The OpenCL runtimes load first (as in a run), so the mapping count is a run's. A
//! sample takes the light reading; the first 8, the 16th, 32nd... and those that walk
//! the accounting too; one in a few (the 1st, 8th, 64th... and those the walks'
//! budget allows) the heap and the walk, and the first and the last the counts as
//! well. Under clmulti's tracer (`LD_PRELOAD=.../libclmulti_trace.so`) the counts
//! include its own.

use clmulti_probe::UsageReader;
use std::time::Instant;

/// Median microseconds of `rounds` calls of `part`.
fn micros(rounds: usize, mut part: impl FnMut() -> u64) -> (f64, u64) {
    let mut times = Vec::with_capacity(rounds);
    let mut last = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        last = std::hint::black_box(part());
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    (times[rounds / 2], last)
}

fn main() {
    let rounds: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 2000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: reading_cost [ROUNDS > 0]");
            std::process::exit(2);
        }
    };
    let platforms = clmulti_probe::platforms().map_or(0, |p| p.len());
    let reader = UsageReader::open();
    let maps = reader.memory_maps();
    println!(
        "{platforms} platform(s) loaded, {maps} mappings; median of {rounds} calls [measured]"
    );
    let parts: [(&str, &dyn Fn() -> u64); 8] = [
        ("statm (guards between samples)", &|| {
            reader.statm().rss_bytes
        }),
        ("meminfo", &|| {
            reader.system().and_then(|s| s.available_bytes).unwrap_or(0)
        }),
        ("light: fds, statm, task, sysinfo", &|| {
            reader.read_light().process.open_fds
        }),
        ("accounting: status, meminfo", &|| {
            let mut usage = clmulti_probe::Usage::default();
            reader.add_accounting(&mut usage);
            usage.process.locked_bytes.unwrap_or(0)
        }),
        ("the C library's heap (mallinfo2)", &|| {
            let mut usage = clmulti_probe::Usage::default();
            reader.add_heap(&mut usage);
            usage.process.heap_in_use_bytes.unwrap_or(0)
        }),
        ("the counts (tracer, emulated driver)", &|| {
            let mut usage = clmulti_probe::Usage::default();
            reader.add_counts(&mut usage);
            usage.traced_counts.map_or(0, |c| c.len() as u64)
        }),
        ("the mapping walk", &|| reader.memory_maps()),
        ("a whole reading", &|| reader.read().process.rss_bytes),
    ];
    for (name, part) in parts {
        let (us, _) = micros(rounds, part);
        println!("  {name:<32} {us:>8.1} us");
    }
}
