//! A stop asked part way keeps what finished: a split's finished runs, a bandwidth
//! run's finished repetitions (what `clmulti axpy` does on Ctrl-C), on PoCL.

use clmulti_axpy::{split, split_until, KernelChoice, Runner, SplitOptions};
use clmulti_scenario::ContextMode;
use opencl3::context::Context;
use opencl3::device::Device;
use std::cell::Cell;

fn pocl_devices(count: usize) -> Vec<Device> {
    // One test at a time (they run on threads): PoCL 3.1 listed no devices to one
    // of two threads asking while it initialised.
    static LOADING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let platforms = {
        let _one = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd");
        std::env::set_var("POCL_DEVICES", "pthread pthread");
        clmulti_probe::platforms().expect("PoCL is installed (scripts/setup-opencl.sh)")
    };
    let devices: Vec<Device> = platforms[0]
        .devices
        .iter()
        .take(count)
        .map(|d| Device::new(d.id()))
        .collect();
    assert_eq!(devices.len(), count, "POCL_DEVICES gives two devices");
    devices
}

/// A stop that says yes from its `nth` question (1 is the first).
fn yes_from(nth: u32) -> (Cell<u32>, u32) {
    (Cell::new(0), nth)
}

#[test]
fn a_stopped_split_keeps_what_finished_and_names_the_rest() {
    let devices = pocl_devices(2);
    let options = SplitOptions {
        n: 1 << 16,
        weights: None,
        repeat: 50,
        modes: vec![ContextMode::Shared, ContextMode::PerDevice],
        kernels: vec![KernelChoice::Seed, KernelChoice::Fast],
        include_transfers: false,
        device_counts: Vec::new(),
    };
    let planned = [
        "2 device(s), shared context, buffers, dAxpy",
        "2 device(s), shared context, buffers, axpy_fast",
        "2 device(s), shared context, sub-buffers, dAxpy",
        "2 device(s), shared context, sub-buffers, axpy_fast",
        "2 device(s), per-device context, buffers, dAxpy",
        "2 device(s), per-device context, buffers, axpy_fast",
    ];
    let whole = split(&devices, &options).unwrap();
    assert_eq!(whole.runs.len(), 6);
    assert!(whole.not_run.is_empty());
    assert!(serde_json::to_value(&whole)
        .unwrap()
        .get("not_run")
        .is_none());

    // Yes at the first question (before the first run): nothing runs.
    let (asked, from) = yes_from(1);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() >= from
    };
    let none = split_until(&devices, &options, &stop).unwrap();
    assert!(none.runs.is_empty() && none.scaling.is_empty());
    assert_eq!(none.not_run, planned);

    // Asked before each run, and after each timed repetition of the split and of
    // its one-device base: the first run asks 1 + 50 + 50 times. Yes at the 110th
    // cuts the second run's repetitions short: the first is kept, the second is
    // not reported (best-of figures of fewer repetitions do not compare).
    let (asked, from) = yes_from(110);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() >= from
    };
    let cut = split_until(&devices, &options, &stop).unwrap();
    assert_eq!(cut.runs.len(), 1);
    assert_eq!(cut.runs[0].kernel.name(), "dAxpy");
    assert!(cut.runs[0].aggregate_gb_per_s_best > 0.0 && cut.runs[0].max_error_ulps.is_finite());
    assert_eq!(cut.not_run.len(), 5);
    assert_eq!(
        cut.not_run[0],
        format!(
            "{} (stopped part way: best-of figures of fewer repetitions do not compare)",
            planned[1]
        )
    );
    assert_eq!(cut.not_run[1..], planned[2..]);
    assert_eq!(asked.get(), 110, "no question after the yes");
    let json = serde_json::to_value(&cut).unwrap();
    assert_eq!(json["not_run"].as_array().unwrap().len(), 5);
}

#[test]
fn a_stopped_bandwidth_run_counts_the_repetitions_it_timed() {
    let devices = pocl_devices(1);
    let context = Context::from_device(&devices[0]).unwrap();
    let runner = Runner::new(&context).unwrap();
    let (asked, from) = yes_from(3);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() >= from
    };
    let b = runner
        .bandwidth_until(&devices[0], 1 << 16, 50, KernelChoice::Seed, &stop)
        .unwrap();
    assert_eq!(b.repeat, 3);
    assert!(b.axpy.gb_per_s_best > 0.0 && b.copy.gb_per_s_best > 0.0);
    assert!(
        b.notes
            .iter()
            .any(|n| n.starts_with("stopped after 3 of 50 timed repetitions")),
        "{:?}",
        b.notes
    );
    let whole = runner
        .bandwidth(&devices[0], 1 << 16, 5, KernelChoice::Seed)
        .unwrap();
    assert_eq!(whole.repeat, 5);
    assert!(!whole.notes.iter().any(|n| n.starts_with("stopped")));
}
