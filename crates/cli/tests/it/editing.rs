//! Editing mistakes only the machine decides, said by `clmulti check` on two PoCL
//! devices (512 MiB largest buffer) at file:line:col and key; a run's progress on a
//! terminal; a preload the dynamic linker refused, said in the run's text.

use crate::common;

use common::*;

/// A mistake only this machine's runtime can tell.
struct OnMachine {
    what: &'static str,
    text: &'static str,
    line: u64,
    key: &'static str,
    fragment: &'static str,
    error: bool,
}

const ON_MACHINE: &[OnMachine] = &[
    OnMachine {
        what: "more devices than here",
        text: "[devices]\ntype = \"cpu\"\ncount = 4\n",
        line: 3,
        key: "devices.count",
        fragment: "asked for 4 devices of type cpu",
        error: true,
    },
    OnMachine {
        what: "an index beyond the devices",
        text: "[devices]\ntype = \"cpu\"\nindices = [5, 0, 7]\n",
        line: 3,
        key: "devices.indices[0]",
        fragment: "device index 5 is out of range",
        error: true,
    },
    OnMachine {
        what: "every index beyond the devices, not only the first",
        text: "[devices]\ntype = \"cpu\"\nindices = [5, 0, 7]\n",
        line: 3,
        key: "devices.indices[2]",
        fragment: "device index 7 is out of range",
        error: true,
    },
    OnMachine {
        what: "a type not here",
        text: "[devices]\ntype = \"accelerator\"\nfallback = \"none\"\n",
        line: 2,
        key: "devices.type",
        fragment: "no device of type accelerator",
        error: true,
    },
    OnMachine {
        what: "a grid's device count beyond here",
        text: "[devices]\ntype = \"cpu\"\n[grid]\n\"devices.count\" = [1, 3]\n",
        line: 4,
        key: "grid.\"devices.count\"[1]",
        fragment: "a sweep records it as skipped, as it must on a node with fewer devices",
        error: false,
    },
    OnMachine {
        what: "more environments than are asked",
        text: "[devices]\ntype = \"cpu\"\n[grid]\n\"env.POCL_MAX_PTHREAD_COUNT\" = [\"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\", \"8\", \"9\", \"10\", \"11\", \"12\"]\n",
        line: 4,
        key: "grid.\"env.POCL_MAX_PTHREAD_COUNT\"[8]",
        fragment: "asked about 8 environments of this file (each ask loads it in a child); 4 more runs are not asked here",
        error: false,
    },
    OnMachine {
        what: "a buffer above the largest",
        text: "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"1GiB\"\n",
        line: 4,
        key: "allocation.size",
        fragment: "CL_INVALID_BUFFER_SIZE (-61)",
        error: false,
    },
    OnMachine {
        what: "a pool above the largest",
        text:
            "[devices]\ntype = \"cpu\"\n[allocation]\nstrategy = \"pool\"\npool_size = \"1GiB\"\n",
        line: 5,
        key: "allocation.pool_size",
        fragment: "allocates at once",
        error: false,
    },
    OnMachine {
        what: "an address space the runtime does not load in",
        text: "[devices]\ntype = \"cpu\"\n[limits]\nas = \"100MiB\"\n",
        line: 4,
        key: "limits.as",
        fragment: "PoCL 3.1 (2 pthread devices) needed 301MiB",
        error: false,
    },
];

#[test]
fn what_only_the_machine_knows_is_said_at_its_line_column_and_key() {
    let mut wrong = Vec::new();
    for m in ON_MACHINE {
        let path = scenario_file("machine.toml", m.text);
        let out = run(clmulti(2)
            .arg("check")
            .arg(&path)
            .args(["--format", "json"]));
        assert_eq!(
            out.status.code(),
            Some(if m.error { 2 } else { 0 }),
            "{}: {}",
            m.what,
            stderr(&out)
        );
        let file = &json(&out)["files"][0];
        let said = if m.error {
            &file["errors"]
        } else {
            &file["warnings"]
        };
        let found = said.as_array().unwrap().iter().find(|e| {
            e["line"] == m.line
                && e["key"] == m.key
                && e["column"].as_u64().is_some_and(|c| c >= 1)
                && e["message"]
                    .as_str()
                    .is_some_and(|t| t.contains(m.fragment))
                && e["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(&format!("{}:{}:", path.display(), m.line)))
        });
        if found.is_none() {
            wrong.push(format!("{}: {said}", m.what));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `script` gives the command a terminal; its output is what the terminal showed.
fn on_a_terminal(command: &str) -> String {
    let out = std::process::Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env("CLMULTI_TRUST_FILE", trust_record())
        .env("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd")
        .env("POCL_DEVICES", pocl_devices(2))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_run_on_a_terminal_shows_its_progress_from_the_child() {
    // At least 3000 x 1 ms of pauses: the line appears after the first second.
    let path = scenario_file(
        "slow.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 3000\npause_us = 1000\n[sampling]\nevery = 100\n",
    );
    let shown = on_a_terminal(&format!("{} run {}", bin().display(), path.display()));
    let progress: Vec<&str> = shown
        .split('\r')
        .filter(|l| {
            l.contains(" buffers, ") && l.contains(" RSS, ") && l.trim_end().ends_with(" s")
        })
        .collect();
    assert!(!progress.is_empty(), "no progress line: {shown:?}");
    assert!(shown.contains("completed"), "{shown}");
    // Without a terminal (a pipe): no progress line.
    let piped = run(clmulti(1).arg("run").arg(&path));
    assert!(!String::from_utf8_lossy(&piped.stderr).contains(" RSS, "));
}

#[test]
fn a_preload_the_dynamic_linker_refused_is_said_in_the_run() {
    // A file by that name that is no library: trusted for the run, refused by the
    // dynamic linker (a bare name found nowhere is refused before the run).
    let path = scenario_file(
        "refused.toml",
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 10\n[env]\nLD_PRELOAD = \"./libclmulti-not-a-library.so\"\n",
    );
    let library = path.with_file_name("libclmulti-not-a-library.so");
    std::fs::write(&library, "not an ELF file\n").unwrap();
    let out = run(clmulti(1)
        .arg("run")
        .arg(&path)
        .arg("--allow")
        .arg(&library));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the dynamic linker refused a preload, so this run ran without it")
            && text.contains("libclmulti-not-a-library.so"),
        "{text}\n{}",
        stderr(&out)
    );
}
