//! The third hostile round: scenario files sent by an attacker, each trying to make a
//! run load code or write outside the run without the user's word. Each case's code
//! is a marker library (or program) whose constructor leaves a file behind: the file
//! must never appear, and the command must end with a message that says why. A
//! vendors folder holding a FIFO or a link to `/dev/zero` must end every command.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BASE: &str = "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"4KiB\"\ncount = 5\n";

/// A fresh folder of this test process's own.
fn folder(name: &str) -> PathBuf {
    let dir = scenario_file("fresh", "").parent().unwrap().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `cmd` to its end ([`ended`]: one that hangs fails).
fn finished(cmd: &mut Command) -> Output {
    let what = format!("{cmd:?}");
    ended(cmd, &what)
}

/// `run` refuses the file, exit 2, naming `said`, and runs no code of it.
fn refused(cmd: &mut Command, path: &Path, marker: &Path, said: &str) {
    let out = finished(cmd.arg("run").arg(path));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
    assert!(err.contains(said), "{}: {err}", path.display());
    assert!(out.stdout.is_empty(), "{}: ran", path.display());
    assert!(!marker.exists(), "{}: its code ran", path.display());
}

/// A library of the system's (root's, in root's folders) the dynamic linker loads.
fn system_library() -> PathBuf {
    [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
    ]
    .iter()
    .find_map(|p| std::fs::canonicalize(p).ok())
    .expect("the C library's libm")
}

#[test]
fn a_grid_placeholder_in_ld_preload_is_read_in_every_run() {
    let dir = folder("placeholder");
    let marker = dir.join("constructor-ran");
    std::fs::create_dir_all(dir.join("helpers")).unwrap();
    // The first run's library is the system's; the second run's is the sender's.
    std::os::unix::fs::symlink(system_library(), dir.join("helpers/p1.so")).unwrap();
    marking_library(&dir.join("helpers"), "p2.so", &marker);
    let path = dir.join("grid.toml");
    std::fs::write(
        &path,
        format!("{BASE}[env]\nLD_PRELOAD = \"helpers/p{{devices.count}}.so\"\n[grid]\n\"devices.indices\" = [[0], [0, 1]]\n"),
    )
    .unwrap();
    let out = finished(clmulti(2).args(["check", "--format", "json"]).arg(&path));
    let checked = json(&out);
    assert_eq!(checked["files"][0]["trusted"], false, "{checked}");
    let p2 = dir.join("helpers/p2.so").display().to_string();
    assert!(checked.to_string().contains(&p2), "{checked}");
    refused(&mut clmulti(2), &path, &marker, &p2);
}

#[test]
fn home_path_and_keys_nobody_listed_need_a_word() {
    let dir = folder("settings");
    let marker = dir.join("program-ran");
    // The linker PoCL's compiler would run from PATH.
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let ld = dir.join("bin/x86_64-pc-linux-gnu-ld");
    std::fs::write(&ld, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ld, std::fs::Permissions::from_mode(0o755)).unwrap();
    marking_library(&dir, "libmark.so", &marker);
    for (name, env, said) in [
        ("home", "HOME = \".\"", "HOME keeps compiled code"),
        (
            "path",
            "PATH = \"bin\"",
            "PATH searches for libraries and programs",
        ),
        (
            "tunables",
            "GLIBC_TUNABLES = \"glibc.rtld.x=1\"",
            "GLIBC_TUNABLES = ",
        ),
        (
            "devices",
            "POCL_DEVICES = \"../../tmp/x\"",
            "POCL_DEVICES = ",
        ),
    ] {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!("{BASE}[axpy]\ncheck = \"all\"\n[env]\n{env}\n"),
        )
        .unwrap();
        refused(&mut clmulti(1), &path, &marker, said);
        let out = finished(clmulti(1).arg("check").arg(&path));
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("not trusted"));
    }
    // A known key in another case is a mistake check and run refuse before any trust.
    let path = dir.join("lower.toml");
    std::fs::write(
        &path,
        format!("{BASE}[env]\nld_preload = \"./libmark.so\"\n"),
    )
    .unwrap();
    refused(&mut clmulti(1), &path, &marker, "did you mean LD_PRELOAD?");
    let out = finished(clmulti(1).arg("check").arg(&path));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn an_icd_line_with_a_leading_space_is_refused() {
    let dir = folder("leading-space");
    let marker = dir.join("constructor-ran");
    // ocl-icd opens " hidden/libmark.so" from its working folder.
    std::fs::create_dir_all(dir.join(" hidden")).unwrap();
    marking_library(&dir.join(" hidden"), "libmark.so", &marker);
    std::fs::create_dir_all(dir.join("vendors")).unwrap();
    std::fs::write(dir.join("vendors/x.icd"), " hidden/libmark.so\n").unwrap();
    let path = dir.join("space.toml");
    std::fs::write(
        &path,
        format!("{BASE}[env]\nOCL_ICD_VENDORS = \"vendors\"\n"),
    )
    .unwrap();
    let out = finished(clmulti(1).current_dir(&dir).arg("check").arg(&path));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(
            "key `env.OCL_ICD_VENDORS`: OCL_ICD_VENDORS (x.icd): names \" hidden/libmark.so\", a relative path"
        ),
        "{said}"
    );
    let out = finished(clmulti(1).current_dir(&dir).arg("trust").arg(&path));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    refused(
        clmulti(1).current_dir(&dir),
        &path,
        &marker,
        "a relative path",
    );
}

#[test]
fn a_link_to_a_trusted_file_keeps_that_files_folder() {
    let (a, b) = (folder("trusted-a"), folder("linked-b"));
    let (mark_a, mark_b) = (a.join("a-ran"), b.join("b-ran"));
    marking_library(&a, "lib.so", &mark_a);
    marking_library(&b, "lib.so", &mark_b);
    let trusted = a.join("a.toml");
    std::fs::write(
        &trusted,
        format!("{BASE}[env]\nLD_PRELOAD = \"./lib.so\"\n"),
    )
    .unwrap();
    trust(&trusted);
    let link = b.join("b.toml");
    std::os::unix::fs::symlink(&trusted, &link).unwrap();
    let out = finished(clmulti(1).arg("run").arg(&link));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(mark_a.exists(), "the trusted file's library ran");
    assert!(!mark_b.exists(), "the link's folder's library ran");
}

#[test]
fn a_relative_ld_audit_resolves_against_the_scenarios_folder() {
    let (scenarios, elsewhere) = (folder("audit-scenario"), folder("audit-cwd"));
    let (own, stranger) = (scenarios.join("own-ran"), elsewhere.join("stranger-ran"));
    marking_library(&scenarios, "audit.so", &own);
    marking_library(&elsewhere, "audit.so", &stranger);
    let path = scenarios.join("audit.toml");
    std::fs::write(&path, format!("{BASE}[env]\nLD_AUDIT = \"./audit.so\"\n")).unwrap();
    // Not trusted: refused, from any folder.
    refused(
        clmulti(1).current_dir(&elsewhere),
        &path,
        &stranger,
        "LD_AUDIT loads library",
    );
    trust(&path);
    let out = finished(clmulti(1).current_dir(&elsewhere).arg("run").arg(&path));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stranger.exists(), "the working folder's library ran");
}

#[test]
fn a_newline_in_a_trusted_path_forges_no_second_record() {
    let dir = folder("newline");
    let marker = dir.join("constructor-ran");
    marking_library(&dir, "libmark.so", &marker);
    let evil = dir.join("evil.toml");
    let text = format!("{BASE}[env]\nLD_PRELOAD = \"./libmark.so\"\n");
    std::fs::write(&evil, &text).unwrap();
    // The old record was `HASH PATH` lines: this name wrote a second one, for evil.
    let hash = {
        let out = Command::new("sha256sum").arg(&evil).output().unwrap();
        String::from_utf8_lossy(&out.stdout)[..64].to_owned()
    };
    let forged = dir.join(format!("a\n{hash} {}", evil.display()));
    std::fs::create_dir_all(&forged).unwrap();
    let innocent = forged.join("ok.toml");
    std::fs::write(&innocent, BASE).unwrap();
    trust(&innocent);
    refused(&mut clmulti(1), &evil, &marker, "needs your word");
}

#[test]
fn a_checkout_folder_others_can_write_is_not_the_checkouts() {
    let root = folder("checkout");
    let debug = root.join("target/debug");
    std::fs::create_dir_all(&debug).unwrap();
    std::fs::write(root.join("Cargo.toml"), "").unwrap();
    // clmulti as this checkout's cargo built it: its libraries are beside it.
    let copy = debug.join("clmulti");
    std::fs::copy(bin(), &copy).unwrap();
    let marker = root.join("constructor-ran");
    marking_library(&debug, "libmark.so", &marker);
    let path = root.join("checkout.toml");
    std::fs::write(
        &path,
        format!("{BASE}[env]\nLD_PRELOAD = \"target/debug/libmark.so\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    for p in [&root, &debug] {
        mode(p, 0o755);
    }
    // The copy, with the test's environment, its target/ folder in mode `m`.
    let own = |m| {
        mode(&root.join("target"), m);
        let mut cmd = Command::new(&copy);
        cmd.env("CLMULTI_TRUST_FILE", trust_record())
            .env("OCL_ICD_VENDORS", POCL_ICD)
            .env("POCL_DEVICES", pocl_devices(1))
            .env("POCL_MEMORY_LIMIT", "2");
        cmd
    };
    let out = finished(own(0o755).args(["check", "--format", "json"]).arg(&path));
    assert_eq!(
        json(&out)["files"][0]["loads"][0]["trusted"],
        "this-checkout",
        "{}",
        stderr(&out)
    );
    // Trusted, check listed the devices under it: the library loaded then.
    let _ = std::fs::remove_file(&marker);
    let out = finished(own(0o777).args(["check", "--format", "json"]).arg(&path));
    assert_eq!(json(&out)["files"][0]["trusted"], false, "{}", stderr(&out));
    refused(&mut own(0o777), &path, &marker, "needs your word");
    mode(&root.join("target"), 0o755);
}

#[test]
fn ld_debug_output_writes_nothing_outside_the_run() {
    let dir = folder("debug-output");
    let path = dir.join("debug.toml");
    std::fs::write(
        &path,
        format!(
            "{BASE}[env]\nLD_DEBUG = \"files\"\nLD_DEBUG_OUTPUT = \"{}/victim\"\n",
            dir.display()
        ),
    )
    .unwrap();
    refused(
        &mut clmulti(1),
        &path,
        &dir.join("victim"),
        "LD_DEBUG_OUTPUT writes to",
    );
    let written: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("victim"))
        .collect();
    assert!(written.is_empty(), "{written:?}");
}

/// A vendors folder holding `x.icd` made a FIFO, or `zero.icd` linked to
/// `/dev/zero`: no command waits on it or reads it without end.
#[test]
fn a_fifo_or_dev_zero_in_a_vendors_folder_ends_every_command() {
    for (name, said) in [("fifo", "a FIFO"), ("zero", "a device")] {
        let dir = folder(name);
        let vendors = dir.join("vendors");
        std::fs::create_dir_all(&vendors).unwrap();
        if name == "fifo" {
            let c = std::ffi::CString::new(vendors.join("x.icd").to_str().unwrap()).unwrap();
            // SAFETY: mkfifo with a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        } else {
            std::os::unix::fs::symlink("/dev/zero", vendors.join("zero.icd")).unwrap();
        }
        let path = dir.join("vendors.toml");
        std::fs::write(
            &path,
            format!("{BASE}[env]\nOCL_ICD_VENDORS = \"vendors\"\n"),
        )
        .unwrap();
        let out = finished(clmulti(1).arg("check").arg(&path));
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("warning: ")
                && text.contains("key `env.OCL_ICD_VENDORS`: ")
                && text.contains(said),
            "{name}: {text}"
        );
        for args in [&["--timeout", "5", "run"][..], &["trust"][..]] {
            let out = finished(clmulti(1).args(args).arg(&path));
            assert_eq!(
                out.status.code(),
                Some(2),
                "{name} {args:?}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains(said),
                "{name} {args:?}: {}",
                stderr(&out)
            );
        }
        // As the process's own vendors folder: the loader in the worker is ended by
        // the time limit, which says what never returned.
        let out = finished(clmulti(1).env("OCL_ICD_VENDORS", &vendors).args([
            "--timeout",
            "2",
            "devices",
        ]));
        assert!(
            matches!(out.status.code(), Some(1)),
            "{name}: {}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("panicked"),
            "{name}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_bare_library_name_is_trusted_only_from_the_systems_folders() {
    let dir = folder("bare-name");
    let marker = dir.join("constructor-ran");
    let mine = dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    marking_library(&mine, "libclmulti-hook.so", &marker);
    std::fs::create_dir_all(dir.join("vendors")).unwrap();
    std::fs::write(dir.join("vendors/x.icd"), "libclmulti-hook.so\n").unwrap();
    for (name, env) in [
        ("preload", "LD_PRELOAD = \"libclmulti-hook.so\""),
        ("icd", "OCL_ICD_VENDORS = \"vendors\""),
    ] {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, format!("{BASE}[env]\n{env}\n")).unwrap();
        // Looked up first in a folder another user could write: refused outright.
        use std::os::unix::fs::PermissionsExt;
        let mode = |m| std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(m)).unwrap();
        mode(0o777);
        let mut cmd = clmulti(1);
        cmd.env("LD_LIBRARY_PATH", &mine);
        refused(&mut cmd, &path, &marker, "another user could write");
        // Found in a folder of this user's: the user's word first, like any library.
        mode(0o755);
        let mut cmd = clmulti(1);
        cmd.env("LD_LIBRARY_PATH", &mine);
        refused(&mut cmd, &path, &marker, "needs your word");
        // Found nowhere: refused, not called a system file.
        let out = finished(clmulti(1).arg("check").arg(&path));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("no library libclmulti-hook.so"),
            "{name}: {said}"
        );
        assert!(!marker.exists(), "{name}: its code ran");
    }
}
