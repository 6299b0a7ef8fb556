//! The seed's three runs against a layer that models Intel's multi-GPU buffers (one
//! exported descriptor per peer device per buffer, -6 when none is left): the real
//! loader, real PoCL devices and a real RLIMIT_NOFILE. clmulti must reproduce the
//! symptom and name the descriptor limit as its cause.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

fn build_layer() -> PathBuf {
    let source =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/layers/fd_per_peer_device.c");
    let out = std::env::temp_dir().join(format!("clmulti-layer-{}.so", std::process::id()));
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (build-essential, installed by scripts/setup-opencl.sh)");
    assert!(status.success(), "building the layer failed");
    out
}

#[test]
fn the_seed_symptom_is_reproduced_and_its_cause_named() {
    let layer = build_layer();
    let scenario = format!(
        "name = \"seed\"\n[devices]\ntype = \"gpu\"\n[allocation]\nsize = \"1MiB\"\ncount = 3000\n\
         [limits]\nnofile = 1024\n[env]\nOPENCL_LAYERS = \"{}\"\n[sampling]\nevery = 100\n\
         [grid]\n\"devices.count\" = [1, 2]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
        layer.display()
    );
    let path = scenario_file("seed.toml", &scenario);
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = reports(&out);
    assert_eq!(runs.len(), 4);
    for r in &runs {
        let name = r["run_name"].as_str().unwrap();
        assert_eq!(r["leak_check"]["clean"], true, "{name}");
        assert_eq!(r["host_limits"]["nofile_soft"], 1024, "{name}");
        if name.contains("devices.count=2") && name.contains("context.mode=shared") {
            // The seed: two devices in one context fail after ~1000 buffers with -6.
            assert_eq!(r["stop"]["kind"], "failed", "{name}: {}", r["stop"]);
            assert_eq!(r["stop"]["error"]["name"], "CL_OUT_OF_HOST_MEMORY");
            let buffers = r["buffers"].as_u64().unwrap();
            assert!((900..1024).contains(&buffers), "{name}: {buffers}");
            let fds = r["costs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["resource"] == "open_fds")
                .unwrap();
            assert!(
                (fds["per_buffer"].as_f64().unwrap() - 1.0).abs() < 0.01,
                "{fds}"
            );
            let p = &r["prediction"];
            assert_eq!(p["resource"], "open_fds", "{p}");
            assert_eq!(p["matches_failure"], true, "{p}");
            assert!(
                p["explanation"].as_str().unwrap().contains("ulimit -n"),
                "{p}"
            );
            // The reading at the failure still counts descriptors, though none is left.
            let last = r["samples"].as_array().unwrap().last().unwrap();
            assert!(last["open_fds"].as_u64().unwrap() > 1000, "{last}");
        } else {
            // One device, or one context per device: every buffer, no descriptors.
            assert_eq!(r["stop"]["kind"], "completed", "{name}: {}", r["stop"]);
            assert_eq!(r["buffers"], 3000, "{name}");
        }
    }
    // The fix the report names: a higher descriptor limit.
    let fixed = scenario
        .replace("nofile = 1024", "nofile = 4096")
        .replace("[1, 2]", "[2]")
        .replace("[\"shared\", \"per-device\"]", "[\"shared\"]");
    let path = scenario_file("fixed.toml", &fixed);
    let out = run(clmulti(2).arg("run").arg(&path).args(["--format", "json"]));
    let r = &reports(&out)[0];
    assert_eq!(r["stop"]["kind"], "completed", "{}", r["stop"]);
    assert_eq!(r["buffers"], 3000);
    let _ = std::fs::remove_file(layer);
}
