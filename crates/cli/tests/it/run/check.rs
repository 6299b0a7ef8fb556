//! `clmulti check`: problems named by file, line and key, platforms not present here.

use super::*;

#[test]
fn check_names_file_line_and_key_and_exits_2() {
    let good = scenario_file("good.toml", "[allocation]\nsize = \"1MiB\"\n");
    let bad = scenario_file(
        "bad.toml",
        "name = \"b\"\n[allocation]\nsize = \"1 MB/s\"\n",
    );
    let out = run(clmulti(2).arg("check").arg(&good).arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}:3:8: key `allocation.size`: unknown unit",
            bad.display()
        )),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ok "),
        "the good file is still checked"
    );
}

#[test]
fn check_lists_every_problem_of_a_file_in_text_and_json() {
    let bad = scenario_file(
        "three.toml",
        "[allocation]\nsize = \"1 parsec\"\n[sampling]\nevery = 0\n[grid]\n\"context.mode\" = [\"shared\", \"sideways\"]\n",
    );
    let out = run(clmulti(2).arg("check").arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let name = bad.display();
    for at in [
        format!("{name}:2:8: key `allocation.size`"),
        format!("{name}:4:9: key `sampling.every`"),
        format!("{name}:6:29: key `grid.\"context.mode\"[1]`"),
    ] {
        assert!(err.contains(&format!("error: {at}")), "{at}: {err}");
    }
    let out = run(clmulti(2).args(["check", "--format", "json"]).arg(&bad));
    let v = json(&out);
    let file = &v["files"][0];
    let keys: Vec<&str> = file["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "allocation.size",
            "sampling.every",
            "grid.\"context.mode\"[1]"
        ]
    );
    assert_eq!(file["error"], file["errors"][0]);
}

#[test]
fn run_with_a_bad_file_still_runs_the_good_one_and_exits_2() {
    let good = scenario_file(
        "good.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 5\nsize = \"4KiB\"\n",
    );
    let bad = scenario_file("bad.toml", "[allocation]\nstrategy = \"teleport\"\n");
    let out = run(clmulti(2)
        .arg("run")
        .arg(&bad)
        .arg(&good)
        .args(["--format", "json"]));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(reports(&out)[0].buffers, 5);
    assert!(stderr(&out).contains("allocation.strategy"));
}

#[test]
fn unknown_device_is_bad_input() {
    let path = scenario_file("nodev.toml", "[devices]\nplatform = \"NoSuchVendor\"\n");
    let out = run(clmulti(2).arg("run").arg(&path));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "key `devices.platform`: no platform's name or vendor contains \"NoSuchVendor\" on \
             this machine; the ICD loader lists 0: Portable Computing Language"
        ),
        "{err}"
    );
}

/// `check` looks `devices.platform` up as the run will, among the platforms the ICD
/// loader lists under the run's `[env]`: one not present is bad input at its key
/// (the grid entry of the run that names it), exit 2 like `run`; without a runtime
/// to list them, the file is not refused and check says the platform was not checked.
#[test]
fn check_says_a_platform_not_present_here_and_what_the_loader_lists() {
    let index = scenario_file("platform-99.toml", "[devices]\nplatform = 99\n");
    let checked = run(clmulti(2).arg("check").arg(&index));
    assert_eq!(checked.status.code(), Some(2), "{}", stderr(&checked));
    let said = format!(
        "{}:2:12: key `devices.platform`: platform index 99 is not present on this machine; \
         the ICD loader lists 0: Portable Computing Language",
        index.display()
    );
    assert_eq!(
        stderr(&checked),
        format!("error: {said}\nerror: 1 of 1 file(s) are invalid\n")
    );
    let ran = run(clmulti(2).arg("run").arg(&index));
    assert_eq!(ran.status.code(), Some(2), "{}", stderr(&ran));
    assert!(stderr(&ran).contains(&said), "{}", stderr(&ran));

    let grid = scenario_file(
        "platform-grid.toml",
        "[devices]\ntype = \"cpu\"\n[grid]\n\"devices.platform\" = [0, \"portable\", 7]\n",
    );
    let checked = run(clmulti(2).arg("check").arg(&grid));
    assert_eq!(checked.status.code(), Some(2), "{}", stderr(&checked));
    assert_eq!(
        stderr(&checked).lines().next().unwrap(),
        format!(
            "error: {}:4:38: key `grid.\"devices.platform\"[2]`: platform index 7 is not present \
             on this machine; the ICD loader lists 0: Portable Computing Language",
            grid.display()
        )
    );

    // The run's [env] decides which runtimes load: here only Intel's CPU runtime.
    let intel = intel_vendors();
    let with_env = |platform: &str| {
        scenario_file(
            "platform-env.toml",
            &format!(
                "[devices]\nplatform = {platform}\ntype = \"cpu\"\n[env]\nOCL_ICD_VENDORS = \"{}\"\n",
                intel.display()
            ),
        )
    };
    let found = run(clmulti(2).arg("check").arg(with_env("\"intel(r) opencl\"")));
    assert!(found.status.success(), "{}", stderr(&found));
    let pocl = with_env("\"Portable\"");
    let missing = run(clmulti(2).arg("check").arg(&pocl));
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    assert!(
        stderr(&missing).starts_with(&format!(
            "error: {}:2:12: key `devices.platform`: no platform's name or vendor contains \
             \"Portable\" on this machine; the ICD loader lists 0: Intel(R) OpenCL\n",
            pocl.display()
        )),
        "{}",
        stderr(&missing)
    );

    // No runtime at all: not checked, said, not refused; JSON says why too.
    let empty = scenario_file("x", "").parent().unwrap().join("no-icd");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(clmulti(2)
        .env("OCL_ICD_VENDORS", &empty)
        .arg("check")
        .arg(&index));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("ok {}: 1 run(s)\n", index.display())
    );
    assert!(
        stderr(&out).starts_with(&format!(
            "check: {}: devices.platform was not checked against this machine's OpenCL \
             platforms: no OpenCL platform found: OCL_ICD_VENDORS={} names no runtime",
            index.display(),
            empty.display()
        )),
        "{}",
        stderr(&out)
    );
    let out = run(clmulti(2)
        .env("OCL_ICD_VENDORS", &empty)
        .args(["check", "--format", "json"])
        .arg(&index));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = &json(&out)["files"][0];
    assert_eq!(file["runs"], 1);
    assert!(
        file["platforms_not_checked"]
            .as_str()
            .is_some_and(|why| why.starts_with("no OpenCL platform found")),
        "{file}"
    );
}

#[test]
fn shipped_configs_are_valid() {
    // The configs name clmulti's layer and emulated driver: built here, as cargo test
    // builds no cdylib of its own accord.
    layer();
    kmd_emu();
    let configs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut files = Vec::new();
    let mut folders = vec![configs];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 10, "{files:?}");
    // The versions' files name no runtime: they run inside a root folder whose
    // vendors list one NEO, under `clmulti emulate` (scripts/neo-versions-results.sh),
    // so they are checked there, with the checkout's NEO.
    let (in_a_root, here): (Vec<_>, Vec<_>) = files.into_iter().partition(|f| {
        f.parent()
            .is_some_and(|d| d.ends_with("intel-neo-versions"))
    });
    let out = run(clmulti(2).arg("check").args(&here));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!in_a_root.is_empty());
    let out = run(std::process::Command::new(bin())
        .args(["emulate", "--devices", "8", "--"])
        .arg(bin())
        .arg("check")
        .args(&in_a_root)
        .env("OCL_ICD_VENDORS", neo_vendors())
        .env_remove("POCL_DEVICES")
        .env_remove("LD_PRELOAD"));
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A library user's `load_file` and `clmulti check` read a file the same way: the
/// layer placeholder of the emulation configs resolves, and a limit above this
/// machine's hard one is refused by both.
#[test]
fn load_file_and_check_accept_and_refuse_the_same_files() {
    layer();
    kmd_emu();
    let configs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut files: Vec<std::path::PathBuf> = [
        "emulation/fd-per-peer.toml",
        "emulation/fail-after.toml",
        "seed-1gpu.toml",
    ]
    .iter()
    .map(|f| configs.join(f))
    .collect();
    let hard = clmulti_scenario::hard_limits()[&clmulti_scenario::Rlimit::NoFile];
    files.push(scenario_file(
        "above-hard.toml",
        &format!("[limits]\nnofile = {}\n", hard + 1),
    ));
    files.push(scenario_file(
        "layer-without-policy.toml",
        "[env]\nOPENCL_LAYERS = \"{clmulti-layer}\"\n",
    ));
    let mut accepted = Vec::new();
    for file in &files {
        let loaded = clmulti_scenario::load_file(file);
        let checked = run(clmulti(2).arg("check").arg(file));
        assert_eq!(
            loaded.is_ok(),
            checked.status.success(),
            "{}: load_file says {:?}, check says {}",
            file.display(),
            loaded.as_ref().map(Vec::len),
            stderr(&checked)
        );
        if loaded.is_ok() {
            accepted.push(file.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert_eq!(
        accepted,
        ["fd-per-peer.toml", "fail-after.toml", "seed-1gpu.toml"],
        "the emulation configs load; the limit above the hard one and the layer without a policy do not"
    );
    let err = clmulti_scenario::load_file(&files[3]).unwrap_err();
    assert!(
        err.message
            .contains("above the most this process may set RLIMIT_NOFILE to"),
        "{err}"
    );
}
