//! Every exit code the man page documents is one a case returns, and every case's
//! code is documented: the EXIT STATUS section and the commands cannot drift apart.

use crate::common;
use common::*;
use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

/// The codes `docs/man/clmulti.1` documents under EXIT STATUS.
fn documented() -> BTreeSet<i32> {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/man/clmulti.1"),
    )
    .unwrap();
    let section = page
        .split(".SH \"EXIT STATUS\"")
        .nth(1)
        .and_then(|rest| rest.split("\n.SH ").next())
        .expect("an EXIT STATUS section");
    section
        .lines()
        .filter(|l| l.starts_with("\\fB"))
        .flat_map(|l| {
            l.split("\\fB")
                .filter_map(|w| w.split("\\fR").next()?.parse::<i32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A run stopped by `signal` a moment after it started.
fn stopped_by(signal: i32) -> i32 {
    let endless = scenario_file(
        &format!("endless-{signal}.toml"),
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = \"until-failure\"\npause_us = 1000\n[guards]\nmax_seconds = 600\n",
    );
    let child = clmulti(1)
        .arg("run")
        .arg(&endless)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(child.id() as i32, signal) };
    child.wait_with_output().unwrap().status.code().unwrap()
}

#[test]
fn each_documented_exit_code_is_returned_and_each_returned_one_documented() {
    let mut returned = BTreeSet::new();
    // 0: done.
    let out = run(clmulti(1).arg("devices"));
    returned.insert(out.status.code().unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // 1: no OpenCL runtime.
    let out = run(clmulti(1)
        .env("OCL_ICD_VENDORS", "/nonexistent")
        .env("OCL_ICD_FILENAMES", "/nonexistent.so")
        .arg("devices"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    returned.insert(1);
    // 2: bad input.
    let bad = scenario_file("bad.toml", "[allocation]\nsize = \"1 parsec\"\n");
    let out = run(clmulti(1).arg("check").arg(&bad));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    returned.insert(2);
    // 129, 130, 143: stopped part way.
    for (signal, code) in [
        (libc::SIGHUP, 129),
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
    ] {
        assert_eq!(stopped_by(signal), code, "signal {signal}");
        returned.insert(code);
    }
    assert_eq!(
        documented(),
        returned,
        "the man page's EXIT STATUS against the commands"
    );
}
