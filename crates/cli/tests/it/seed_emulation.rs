//! The seed's runs under clmulti's emulation layer, one test per policy: the real
//! ICD loader, real PoCL devices, and each policy's real resource (descriptors,
//! kernel-accounted memory, device memory as the layer reports it) or none. The
//! report must name the resource and the limit for the first three, and must not
//! attribute the fourth to anything it measured.

use crate::common;
use clmulti_explain::verdict::Cause;
use clmulti_explain::{Report, Resource, StopReason};
use clmulti_scenario::ContextMode;
use common::*;

/// The seed's runs: 1 device, 2 in one context, 2 in one context each (and the
/// grid's 1-device per-device run, which equals the first).
fn seed_runs(policy: &str, knobs: &str, count: u64, every: u64) -> Vec<Report> {
    layer();
    let text = format!(
        "name = \"{policy}\"\n[devices]\ntype = \"gpu\"\n[allocation]\nsize = \"1MiB\"\ncount = {count}\n\
         [env]\nOPENCL_LAYERS = \"{{clmulti-layer}}\"\nCLMULTI_LAYER_POLICY = \"{policy}\"\n{knobs}\n\
         [sampling]\nevery = {every}\n[grid]\n\"devices.count\" = [1, 2]\n\"context.mode\" = [\"shared\", \"per-device\"]\n"
    );
    let path = scenario_file(&format!("{policy}.toml"), &text);
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = reports(&out);
    assert_eq!(runs.len(), 4);
    for r in &runs {
        assert!(
            r.leak_check.objects_released(),
            "{}: {:?}",
            r.run_name,
            r.leak_check
        );
    }
    runs
}

fn shared_pair(r: &Report) -> bool {
    r.devices.len() == 2 && r.scenario.context_mode == ContextMode::Shared
}

/// The first candidate cause of a run without experiments (untested: only an
/// experiment names a cause), and its prediction error.
fn cause(r: &Report) -> (&Resource, f64) {
    match (&r.analysis.cause, r.analysis.candidates.first()) {
        (Some(Cause::Untested { .. }), Some(c)) => (&c.resource, c.prediction_error()),
        (other, _) => panic!(
            "{}: cause {other:?}, candidates {:?}",
            r.run_name, r.analysis.candidates
        ),
    }
}

fn failed_with_minus_6(r: &Report) -> bool {
    matches!(&r.stop, StopReason::Failed { error, .. } if error.code == -6)
}

#[test]
fn fd_per_peer_fails_the_shared_context_at_the_descriptor_limit() {
    let runs = seed_runs("fd-per-peer", "[limits]\nnofile = 1024", 3000, 100);
    for r in &runs {
        if shared_pair(r) {
            assert!(failed_with_minus_6(r), "{}: {:?}", r.run_name, r.stop);
            assert!((900..1024).contains(&r.buffers), "{}", r.buffers);
            let (resource, error) = cause(r);
            assert_eq!(*resource, Resource::OpenFds);
            assert!(
                error <= 0.05,
                "predicted vs observed {:.1}% apart",
                error * 100.0
            );
            let fds = cost(r, Resource::OpenFds).per_buffer;
            assert!((fds - 1.0).abs() < 0.01, "{fds} fds per buffer");
            // At the limit /proc cannot be opened; the reader still counted.
            assert!(r.samples.last().unwrap().host.open_fds > 1000);
        } else {
            assert_eq!(r.stop, StopReason::Completed, "{}", r.run_name);
            assert_eq!(r.buffers, 3000);
        }
    }
    // A higher descriptor limit lets the shared context complete.
    layer();
    let path = scenario_file(
        "fixed.toml",
        "[devices]\ntype = \"gpu\"\ncount = 2\n[allocation]\nsize = \"1MiB\"\ncount = 3000\n[limits]\nnofile = 4096\n\
         [env]\nOPENCL_LAYERS = \"{clmulti-layer}\"\nCLMULTI_LAYER_POLICY = \"fd-per-peer\"\n",
    );
    let r = &reports(&run(clmulti(2)
        .arg("run")
        .arg(&path)
        .args(["--format", "json"])))[0];
    assert_eq!((r.stop.clone(), r.buffers), (StopReason::Completed, 3000));
}

#[test]
fn host_mirror_grows_kernel_memory_that_rss_does_not_show() {
    let runs = seed_runs(
        "host-mirror",
        "CLMULTI_LAYER_MIRROR_LIMIT = \"128MiB\"",
        400,
        16,
    );
    for r in &runs {
        if shared_pair(r) {
            assert!(failed_with_minus_6(r), "{}: {:?}", r.run_name, r.stop);
            assert!((120..=128).contains(&r.buffers), "{}", r.buffers);
            let (resource, error) = cause(r);
            assert_eq!(*resource, Resource::SystemShmem);
            assert!(
                error <= 0.05,
                "predicted vs observed {:.1}% apart",
                error * 100.0
            );
            let shmem = cost(r, Resource::SystemShmem).per_buffer;
            let rss = cost(r, Resource::HostRss).per_buffer;
            assert!(shmem > 0.9 * 1048576.0, "Shmem +{shmem} B per buffer");
            assert!(
                rss < 0.1 * 1048576.0,
                "the mirror must not show in RSS: +{rss} B"
            );
        } else {
            assert_eq!(
                (r.stop.clone(), r.buffers),
                (StopReason::Completed, 400),
                "{}",
                r.run_name
            );
        }
    }
}

#[test]
fn eager_residency_fills_every_device_of_a_shared_context() {
    let runs = seed_runs("eager", "CLMULTI_LAYER_DEVICE_MEMORY = \"64MiB\"", 400, 8);
    for r in &runs {
        assert!(failed_with_minus_6(r), "{}: {:?}", r.run_name, r.stop);
        // The device reports the layer's memory size.
        assert_eq!(r.devices[0].global_mem_bytes.value(), Some(&(64 << 20)));
        let (resource, error) = cause(r);
        assert!(
            matches!(resource, Resource::DeviceMemory { .. }),
            "{resource:?}"
        );
        assert!(
            error <= 0.05,
            "{}: predicted vs observed {:.1}% apart",
            r.run_name,
            error * 100.0
        );
        let rss = cost(r, Resource::HostRss).per_buffer / 1048576.0;
        // A shared context of two keeps two copies of every buffer; otherwise one.
        let (copies, buffers) = match (r.devices.len(), r.scenario.context_mode) {
            (2, ContextMode::Shared) => (2.0, 64),
            (2, ContextMode::PerDevice) => (1.0, 128),
            _ => (1.0, 64),
        };
        assert!(
            (rss - copies).abs() < 0.2,
            "{}: {rss:.2} MiB of RSS per buffer",
            r.run_name
        );
        assert_eq!(r.buffers, buffers, "{}", r.run_name);
    }
}

#[test]
fn fail_after_is_not_attributed_to_anything_measured() {
    let runs = seed_runs(
        "fail-after",
        "CLMULTI_LAYER_FAIL_AFTER = \"500\"",
        1500,
        100,
    );
    for r in &runs {
        if shared_pair(r) {
            assert!(failed_with_minus_6(r), "{}: {:?}", r.run_name, r.stop);
            assert_eq!(r.buffers, 500);
            assert!(
                matches!(&r.analysis.cause, Some(Cause::NotExplained { unmeasured }) if !unmeasured.is_empty()),
                "{:?}",
                r.analysis.cause
            );
            assert!(r.headline().contains("not explained"), "{}", r.headline());
        } else {
            assert_eq!(
                (r.stop.clone(), r.buffers),
                (StopReason::Completed, 1500),
                "{}",
                r.run_name
            );
        }
    }
}

#[test]
fn a_missing_layer_fails_before_running_and_names_the_build_command() {
    let path = scenario_file(
        "nolayer.toml",
        "[env]\nOPENCL_LAYERS = \"/nonexistent/libclmulti_layer.so\"\nCLMULTI_LAYER_POLICY = \"eager\"\n",
    );
    let out = run(clmulti(2).arg("run").arg(&path));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("/nonexistent/libclmulti_layer.so does not exist"),
        "{err}"
    );
    assert!(err.contains("cargo build -p clmulti-layer"), "{err}");
    assert!(err.contains(":2:17: key `env.OPENCL_LAYERS`"), "{err}");
}

#[test]
fn a_layer_the_loader_did_not_load_is_reported_not_measured() {
    // A library by the layer's name that is no layer: the loader opens it, finds no
    // clInitLayer and goes on without it, silently, as a loader without layer
    // support does. The run must not pass the bare runtime off as the emulation.
    let dir = temp_root().join(format!("clmulti-notlayer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join(clmulti_contract::LAYER.file_name);
    std::fs::copy("/lib/x86_64-linux-gnu/libm.so.6", &fake).unwrap();
    let path = scenario_file(
        "notlayer.toml",
        &format!(
            "[devices]\ncount = 2\n[allocation]\ncount = 50\n[env]\nOPENCL_LAYERS = \"{}\"\nCLMULTI_LAYER_POLICY = \"fail-after\"\nCLMULTI_LAYER_FAIL_AFTER = \"10\"\n",
            fake.display()
        ),
    );
    let out = run(clmulti(2)
        .arg("run")
        .arg(&path)
        .args(["--format", "json", "--allow"])
        .arg(&dir));
    let runs = reports(&out);
    match &runs[0].stop {
        StopReason::Unsupported { reason } => {
            assert!(reason.contains("is not in the call path"), "{reason}");
            assert!(
                reason.contains("libOpenCL.so"),
                "names the loader: {reason}"
            );
        }
        other => panic!("ran without its layer: {other:?}"),
    }
    assert_eq!(runs[0].buffers, 0);
}

#[test]
fn another_library_named_as_a_layer_is_said_opened_not_in_the_call_path() {
    // Not clmulti's layer, and no layer at all: ocl-icd opens it (its constructor
    // runs), finds no clInitLayer and closes it. The report must not say the run was
    // measured under it, nor that it did not load.
    let dir = temp_root().join(format!("clmulti-otherlayer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("constructor-ran");
    let _ = std::fs::remove_file(&marker);
    let fake = marking_library(&dir, "libnot_a_layer.so", &marker);
    let path = scenario_file(
        "other-layer.toml",
        &format!(
            "[allocation]\ncount = 10\n[env]\nOPENCL_LAYERS = \"{}\"\n",
            fake.display()
        ),
    );
    let out = run(clmulti(2)
        .arg("run")
        .arg(&path)
        .args(["--format", "json", "--allow"])
        .arg(&dir));
    let report = &reports(&out)[0];
    assert!(
        matches!(report.stop, StopReason::Completed),
        "{:?}",
        report.stop
    );
    let kinds: Vec<_> = report.warnings.iter().map(|w| w.kind).collect();
    assert!(
        !kinds.contains(&clmulti_explain::WarningKind::EmulationLayer),
        "{kinds:?}"
    );
    let warning = report
        .warnings
        .iter()
        .find(|w| w.kind == clmulti_explain::WarningKind::LayerNotLoaded)
        .unwrap_or_else(|| panic!("{kinds:?}"));
    assert!(marker.exists(), "the loader ran the library's constructor");
    assert!(
        warning.message.contains("opened (its code ran)")
            && !warning.message.contains("did not load"),
        "{}",
        warning.message
    );
}
