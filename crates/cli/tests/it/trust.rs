//! A scenario file is code: `check` lists what a file loads, `run` refuses a file
//! whose loads nothing trusts (and runs none of its code), `--allow` and
//! `clmulti trust` let it run, and a changed file needs trust again.

use crate::common;
use common::*;
use std::path::Path;

#[test]
fn a_file_that_preloads_a_library_is_refused_then_allowed_then_trusted() {
    let dir = temp_root().join(format!("clmulti-trust-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("constructor-ran");
    let _ = std::fs::remove_file(&marker);
    let lib = marking_library(&dir, "libmark.so", &marker);
    let text = format!(
        "[allocation]\ncount = 5\nsize = \"4KiB\"\n[env]\nLD_PRELOAD = \"{}\"\n",
        lib.display()
    );
    let path = scenario_file("preload.toml", &text);

    // check says what it loads, and that it is not trusted, without loading it.
    let out = run(clmulti(1).arg("check").arg(&path));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", stderr(&out));
    assert!(
        said.contains(&format!("LD_PRELOAD loads library {}", lib.display())),
        "{said}"
    );
    assert!(said.contains("not trusted"), "{said}");
    let out = run(clmulti(1)
        .arg("check")
        .arg(&path)
        .args(["--format", "json"]));
    let checked = json(&out);
    assert_eq!(checked["files"][0]["trusted"], false, "{checked}");
    assert_eq!(
        checked["files"][0]["loads"][0]["key"], "LD_PRELOAD",
        "{checked}"
    );
    assert!(!marker.exists(), "check ran the library");

    // run refuses it, naming the library and the ways out, and runs nothing.
    let out = run(clmulti(1).arg("run").arg(&path));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let why = stderr(&out);
    assert!(
        why.contains(&lib.display().to_string()) && why.contains("clmulti trust"),
        "{why}"
    );
    assert!(out.stdout.is_empty());
    assert!(!marker.exists(), "a refused run ran the library");

    // Allowed for one run: it runs, under the library.
    let out = run(clmulti(1).arg("run").arg(&path).arg("--allow").arg(&lib));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists(), "the allowed library was not loaded");
    std::fs::remove_file(&marker).unwrap();
    // Allowing the library's folder allows what is in it.
    let out = run(clmulti(1).arg("run").arg(&path).arg("--allow").arg(&dir));
    assert!(out.status.success(), "{}", stderr(&out));

    // Trusted: runs with no flag, until the file changes.
    let out = run(clmulti(1).arg("trust").arg(&path));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("trusted"),
        "{said}{}",
        stderr(&out)
    );
    let out = run(clmulti(1).arg("run").arg(&path));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(clmulti(1)
        .arg("check")
        .arg(&path)
        .args(["--format", "json"]));
    assert_eq!(json(&out)["files"][0]["trusted"], true);
    // check says whose word it has, no longer that it needs one.
    let out = run(clmulti(1).arg("check").arg(&path));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            "LD_PRELOAD loads library {} (trusted by you)",
            lib.display()
        )) && !said.contains("needs your word")
            && !said.contains("not trusted"),
        "{said}"
    );
    std::fs::write(&path, format!("{text}# changed\n")).unwrap();
    let out = run(clmulti(1).arg("run").arg(&path));
    assert_eq!(out.status.code(), Some(2), "a changed file kept its trust");

    // Trust taken back.
    std::fs::write(&path, &text).unwrap();
    let out = run(clmulti(1).args(["trust", "--revoke"]).arg(&path));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(clmulti(1).arg("run").arg(&path));
    assert_eq!(out.status.code(), Some(2), "revoked trust still ran");
}

#[test]
fn the_projects_own_configs_need_no_trust() {
    // clmulti's own layer and emulated driver, built as cargo test builds no cdylib.
    layer();
    kmd_emu();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // clmulti's own layer, the emulated i915 driver beside it, a system runtime.
    for config in [
        "configs/emulation/fd-per-peer.toml",
        "configs/intel-neo-i915/seed.toml",
        "configs/seed-2gpu-shared.toml",
    ] {
        let path = root.join(config);
        // Two devices, as the seed's file asks: check refuses a file the machine
        // cannot run before it says whether it trusts it.
        let out = run(clmulti(2)
            .arg("check")
            .arg(&path)
            .args(["--format", "json"]));
        let checked = json(&out);
        assert_eq!(checked["files"][0]["trusted"], true, "{config}: {checked}");
    }
}
