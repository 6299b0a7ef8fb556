//! Intel's GPU runtime NEO (Debian's `intel-opencl-icd`, set up by
//! scripts/setup-intel-gpu.sh) in AUB mode: emulated Arc (DG2) devices on a machine
//! without an Intel GPU. What NEO does on the host for each buffer is its real code; no
//! kernel driver is involved and no kernel runs, and clmulti must say so.

use crate::common;
use clmulti_alloc::runtime_log::neo_allocations_per_buffer;
use clmulti_explain::{Report, Resource, StopReason};
use clmulti_probe::neo::{self, NeoEmulation, AUB_MODE_LIMITS, KERNELS_CANNOT_RUN};
use clmulti_scenario::ContextMode;
use common::*;
use std::collections::BTreeMap;

/// A scenario on NEO's emulated devices: `[devices]` with `devices` lines added, and
/// `[env]` (with `CreateMultipleRootDevices` following `devices.count`), then `rest`.
fn neo_scenario(devices: &str, rest: &str) -> String {
    let mut text = format!(
        "[devices]\nplatform = \"Graphics\"\ntype = \"gpu\"\nfallback = \"none\"\n{devices}[env]\nOCL_ICD_VENDORS = \"{}\"\n",
        neo_vendors().display()
    );
    for (k, v) in neo_aub_env(1) {
        let v = if k == "CreateMultipleRootDevices" {
            "{devices.count}".into()
        } else {
            v
        };
        text.push_str(&format!("{k} = \"{v}\"\n"));
    }
    text + rest
}

fn emulation(r: &Report) -> Option<NeoEmulation> {
    let driver = r.devices[0].driver_version.value().unwrap();
    neo::emulation_for_run(&r.platform, driver, &r.scenario.env)
}

fn rss_kib(r: &Report) -> f64 {
    cost(r, Resource::HostRss).per_buffer / 1024.0
}

fn find(runs: &[Report], devices: usize, mode: ContextMode) -> &Report {
    runs.iter()
        .find(|r| r.devices.len() == devices && r.scenario.context_mode == mode)
        .unwrap_or_else(|| panic!("no run with {devices} device(s), {mode:?}"))
}

/// Runs every run of a grid over NEO's devices, each in its own process.
fn run_grid(name: &str, rest: &str) -> Vec<Report> {
    let path = scenario_file(name, &neo_scenario("", rest));
    let out = run(std::process::Command::new(bin())
        .arg("run")
        .arg(&path)
        .args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    reports(&out)
}

#[test]
fn devices_names_the_emulated_devices_and_what_aub_mode_does_not_do() {
    let out = run(clmulti_neo(2).args(["devices", "--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let report: clmulti_probe::DevicesReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.platforms.len(), 1, "pinned to NEO");
    let platform = &report.platforms[0];
    assert!(
        neo::is_neo(platform.display_name()),
        "{}",
        platform.display_name()
    );
    assert_eq!(platform.devices.len(), 2);
    let emulated = platform
        .neo_emulation
        .as_ref()
        .expect("AUB mode recognised");
    assert_eq!(
        (emulated.devices, emulated.product.as_deref()),
        (2, Some("DG2"))
    );
    assert_eq!(
        Some(&emulated.version),
        platform.devices[0].driver_version.value()
    );
    assert_eq!(
        emulated.label(),
        format!(
            "Intel GPU runtime NEO {} with 2 emulated DG2 devices, {AUB_MODE_LIMITS}",
            emulated.version
        )
    );
    // AUB mode runs no kernel: its devices say so.
    for d in &platform.devices {
        assert_eq!(d.max_work_group_size.value(), Some(&0));
    }

    let text = run(clmulti_neo(2).arg("devices"));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&emulated.label()) && text.contains("[inferred from the environment"),
        "{text}"
    );

    // Without the AUB-mode keys NEO looks for a real GPU, finds none and hides.
    let out = run(clmulti_neo(2)
        .env_remove("SetCommandStreamReceiver")
        .arg("devices"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no OpenCL platform found"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_seed_matrix_runs_on_two_emulated_devices_and_sharing_costs_more_per_buffer() {
    let runs = run_grid(
        "neo-seed.toml",
        "[allocation]\nsize = \"1MiB\"\ncount = 2000\n[sampling]\nevery = 200\n\
         [grid]\n\"devices.count\" = [1, 2]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
    );
    assert_eq!(runs.len(), 4);
    for r in &runs {
        assert_eq!(
            (&r.stop, r.buffers),
            (&StopReason::Completed, 2000),
            "{}",
            r.run_name
        );
        let emulated = emulation(r).unwrap_or_else(|| panic!("{}: not recognised", r.run_name));
        assert_eq!(emulated.devices, r.devices.len(), "{}", r.run_name);
        assert!(r.leak_check.objects_released(), "{}", r.run_name);
        // Measured with NEO 22.43 at 2000 buffers: a shared context over two root
        // devices keeps ~12 MiB of its ~27 MiB RSS growth after every release
        // succeeded; one device and one context per device give it back.
        let kept_rss = r
            .leak_check
            .not_returned
            .iter()
            .any(|n| n.resource == Resource::HostRss);
        let shared_pair = r.devices.len() == 2 && r.scenario.context_mode == ContextMode::Shared;
        assert_eq!(
            kept_rss, shared_pair,
            "{}: {:?}",
            r.run_name, r.leak_check.not_returned
        );
    }
    let one = rss_kib(find(&runs, 1, ContextMode::Shared));
    let shared = rss_kib(find(&runs, 2, ContextMode::Shared));
    let per_device = rss_kib(find(&runs, 2, ContextMode::PerDevice));
    // Measured with NEO 22.43: 9.4, 13.5 and 9.5 KiB.
    assert!(
        shared > per_device + 2.0 && shared > one + 2.0,
        "shared {shared:.2} KiB, per-device {per_device:.2}, one device {one:.2}"
    );
    assert!(
        (per_device - one).abs() < 1.0,
        "{per_device:.2} vs {one:.2}"
    );

    // The text report names the emulation.
    let path = scenario_file(
        "neo-text.toml",
        &neo_scenario("count = 2\n", "[allocation]\ncount = 10\n"),
    );
    let out = run(std::process::Command::new(bin()).arg("run").arg(&path));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("with 2 emulated DG2 devices, AUB mode: host-side allocation only, no kernel driver, kernels not executed"),
        "{text}\n{}",
        stderr(&out)
    );
}

#[test]
fn four_emulated_devices_in_one_context_cost_more_than_two() {
    let runs = run_grid(
        "neo-scaling.toml",
        "[allocation]\nsize = \"1MiB\"\ncount = 2000\n[sampling]\nevery = 200\n\
         [grid]\n\"devices.count\" = [2, 4]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
    );
    assert_eq!(runs.len(), 4);
    for r in &runs {
        assert_eq!(r.buffers, 2000, "{}: {:?}", r.run_name, r.stop);
        assert_eq!(emulation(r).unwrap().devices, r.devices.len());
    }
    let shared = |n| rss_kib(find(&runs, n, ContextMode::Shared));
    let per_device = |n| rss_kib(find(&runs, n, ContextMode::PerDevice));
    // Measured with NEO 22.43: shared 13.5 -> 16.8 KiB, per-device 9.5 -> 9.5.
    assert!(
        shared(4) > shared(2) + 1.5,
        "{:.2} vs {:.2}",
        shared(4),
        shared(2)
    );
    assert!(
        shared(4) > per_device(4) + 4.0,
        "{:.2} vs {:.2}",
        shared(4),
        per_device(4)
    );
    assert!(
        (per_device(4) - per_device(2)).abs() < 1.0,
        "{:.2} vs {:.2}",
        per_device(4),
        per_device(2)
    );
}

#[test]
fn neos_own_allocation_log_counts_what_each_buffer_brings() {
    let case = |devices: usize, mode: &'static str| {
        let text = neo_scenario(
            &format!("count = {devices}\n"),
            &format!("[context]\nmode = \"{mode}\"\n[allocation]\nsize = \"1MiB\"\n"),
        );
        clmulti_scenario::load_str(&text, "neo-log.toml")
            .unwrap()
            .remove(0)
    };
    let per_buffer = |devices, mode| {
        let found = neo_allocations_per_buffer(&bin(), &case(devices, mode), 200, &BTreeMap::new())
            .unwrap_or_else(|e| panic!("{devices} {mode}: {e}"));
        assert!(found
            .statement()
            .contains("[measured: NEO's own allocation log]"));
        assert_eq!(found.per_buffer.buffers, (200, 400));
        found.per_buffer
    };
    let rate = |p: &clmulti_probe::neo::AllocationsPerBuffer, t: &str| {
        p.by_type.get(t).copied().unwrap_or(0.0)
    };
    // NEO 22.43 logs each buffer allocation twice (created, then typed by Buffer::create);
    // a shared context over N root devices allocates on each, in system memory.
    for (devices, mode, buffer, host_memory) in [
        (1, "shared", 2.0, 0.0),
        (2, "shared", 2.0, 2.0),
        (2, "per-device", 2.0, 0.0),
        (4, "shared", 4.0, 4.0),
    ] {
        let p = per_buffer(devices, mode);
        assert_eq!(
            (
                rate(&p, "BUFFER"),
                rate(&p, "BUFFER_HOST_MEMORY"),
                rate(&p, "TAG_BUFFER")
            ),
            (buffer, host_memory, 0.0),
            "{devices} device(s), {mode}: {p:?}"
        );
    }

    // Only NEO keeps such a log: on PoCL the measurement says so instead of zeros.
    let pocl = clmulti_scenario::load_str(
        &format!(
            "[devices]\ntype = \"cpu\"\n[env]\nOCL_ICD_VENDORS = \"{POCL_ICD}\"\nPOCL_DEVICES = \"{}\"\n",
            pocl_devices(1)
        ),
        "pocl.toml",
    )
    .unwrap()
    .remove(0);
    let err = neo_allocations_per_buffer(&bin(), &pocl, 10, &BTreeMap::new()).unwrap_err();
    assert!(err.contains("not Intel's GPU runtime NEO"), "{err}");
}

#[test]
fn axpy_says_kernels_cannot_run_on_emulated_devices() {
    // A result about the platform, not a failure of the tool: exit 0.
    let out = run(clmulti_neo(2).args(["axpy", "--n", "4096", "--format", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json = json(&out);
    assert_eq!(json["unsupported"]["reason"], KERNELS_CANNOT_RUN);
    assert!(json["devices"].as_array().unwrap().is_empty());
    let evidence = json["unsupported"]["evidence"].to_string();
    assert!(
        evidence.contains("with 2 emulated DG2 devices")
            && evidence.contains(
                "CL_DEVICE_MAX_WORK_GROUP_SIZE = 0: no kernel can be enqueued [measured]"
            ),
        "{evidence}"
    );

    let out = run(clmulti_neo(1).args(["axpy", "--n", "4096"]));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(KERNELS_CANNOT_RUN), "{text}");
    assert!(
        stderr(&out).contains("unsupported: kernels cannot run"),
        "{}",
        stderr(&out)
    );
}

/// `clmulti diagnose` on NEO: the verdict says what AUB mode can and cannot show,
/// what sharing costs per buffer, and NEO's own account of each buffer's allocations.
#[test]
fn diagnose_on_neo_says_what_aub_mode_shows_and_what_neo_logged_per_buffer() {
    let out = run(clmulti_neo(2).args(["-q", "diagnose", "--count", "3000", "--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let d: clmulti_explain::diagnosis::Diagnosis = serde_json::from_slice(&out.stdout).unwrap();
    let verdict: String = d.verdict.iter().map(|s| format!("{s}\n")).collect();
    assert!(d.neo_emulation.is_some(), "{verdict}");
    assert!(
        verdict.contains("emulated DG2 devices, AUB mode")
            && verdict.contains("kernel-level limits behind the seed's failure"),
        "{verdict}"
    );
    assert!(
        verdict.contains("sharing one context over 2 devices adds host RSS"),
        "{verdict}"
    );
    let logged = |role| {
        d.allocation_log
            .iter()
            .find(|c| c.role == role)
            .map(|c| c.per_buffer.by_type.clone())
            .unwrap_or_else(|| panic!("{role:?}: {verdict}"))
    };
    use clmulti_explain::diagnosis::Role;
    assert_eq!(logged(Role::Shared).get("BUFFER_HOST_MEMORY"), Some(&2.0));
    assert_eq!(logged(Role::PerDevice).get("BUFFER_HOST_MEMORY"), None);
    assert!(
        verdict.contains("[measured] NEO's allocation log, 2 devices, one shared context"),
        "{verdict}"
    );
    assert!(verdict.contains("BUFFER_HOST_MEMORY +2.00"), "{verdict}");
    // What the shared context keeps after release (FINDINGS: +58 MB at 10000 buffers):
    // measured in four rounds (it grows in the second round, then settles).
    assert!(
        verdict.contains("shared-create: every release call succeeded, yet host RSS"),
        "{verdict}"
    );
    let rounds = d
        .release
        .iter()
        .find(|f| f.run_name == "shared-create")
        .and_then(|f| f.second_round.as_ref())
        .expect("rounds of the shared case");
    assert_eq!(rounds.readings[0].after_rounds.len(), 6, "{verdict}");
}
