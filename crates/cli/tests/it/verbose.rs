//! `-v` adds what a user debugging a run wants, in every command: each child's
//! command line, every sample, the timing of each step, what was verified.

use crate::common;

use common::*;

/// stderr of `clmulti [-v] ARGS` (stdout is the result, the same either way).
fn stderr_of(verbose: bool, args: &[&str]) -> (String, Vec<u8>) {
    let mut cmd = clmulti(2);
    if verbose {
        cmd.arg("-v");
    }
    let out = run(cmd.args(args));
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    (stderr(&out), out.stdout)
}

#[test]
fn verbose_adds_details_to_every_command() {
    let scenario = scenario_file(
        "verbose.toml",
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"64KiB\"\ncount = 300\n[sampling]\nevery = 100\n",
    );
    let file = scenario.to_str().unwrap();
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["devices"],
            &["devices: the ICD loader found", "extensions: cl_khr"],
        ),
        (
            &["check", file],
            &["--index 0: verbose: 2 device(s) of type cpu"],
        ),
        (
            &["run", "--isolate", file],
            &[
                "run: child: ",
                "--resolved SCENARIO.json",
                "run: SCENARIO.json (a temporary file) holds {",
                "load the runtime and choose the devices",
                "allocation loop (with sampling)",
                "4 sample(s):",
            ],
        ),
        (
            &["axpy", "--n", "4096", "--repeat", "1"],
            &["verified AxpyCase", "GB/s)"],
        ),
        (
            &[
                "bench",
                "--count",
                "500",
                "--size",
                "4KiB",
                "--rounds",
                "1",
                "--min-seconds",
                "0.001",
            ],
            &[
                "bench: child: ",
                "--arm plain",
                "the engine arm exited with",
            ],
        ),
        (
            &[
                "diagnose",
                "--count",
                "200",
                "--size",
                "64KiB",
                "--no-experiments",
            ],
            &["run: child: ", "create contexts and queues", "sample(s):"],
        ),
    ];
    for (args, wanted) in cases {
        let (plain, _) = stderr_of(false, args);
        let (verbose, _) = stderr_of(true, args);
        assert_ne!(plain, verbose, "{args:?}: -v changes nothing");
        for w in wanted {
            assert!(verbose.contains(w), "{args:?}: no {w:?} in\n{verbose}");
            assert!(!plain.contains(w), "{args:?}: {w:?} without -v");
        }
    }
}
