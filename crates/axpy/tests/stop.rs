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
fn a_stopped_split_keeps_the_runs_that_finished_and_says_it_stopped() {
    let devices = pocl_devices(2);
    let options = SplitOptions {
        n: 1 << 16,
        weights: None,
        repeat: 2,
        modes: vec![ContextMode::Shared, ContextMode::PerDevice],
        kernels: vec![KernelChoice::Seed, KernelChoice::Fast],
        include_transfers: false,
        device_counts: Vec::new(),
    };
    let whole = split(&devices, &options).unwrap();
    // Shared: buffers and sub-buffers, per-device: buffers; two kernels each.
    assert_eq!(whole.runs.len(), 6);

    let (asked, from) = yes_from(3);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() >= from
    };
    let stopped = split_until(&devices, &options, &stop).unwrap();
    assert_eq!(asked.get(), 3, "asked before each run, none after the yes");
    assert_eq!(stopped.runs.len(), 2);
    assert!(stopped.runs.iter().all(|r| r.max_error_ulps.is_finite()));
    // The four left, in the order they would have run.
    assert_eq!(
        stopped.not_run,
        [
            "2 device(s), shared context, sub-buffers, dAxpy",
            "2 device(s), shared context, sub-buffers, axpy_fast",
            "2 device(s), per-device context, buffers, dAxpy",
            "2 device(s), per-device context, buffers, axpy_fast",
        ]
    );
    let json = serde_json::to_value(&stopped).unwrap();
    assert_eq!(json["not_run"].as_array().unwrap().len(), 4);
    assert!(whole.not_run.is_empty());
    assert!(serde_json::to_value(&whole)
        .unwrap()
        .get("not_run")
        .is_none());
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
