//! What a sweep loads, checked right before each run; unreadable lines; a submit nothing trusts.

use super::*;

/// A shared library built from C `body` (a constructor's statements) at `lib`,
/// written in place as the linker does when it relinks.
fn library_with_constructor(lib: &Path, body: &str) {
    let source = lib.with_extension("c");
    std::fs::write(
        &source,
        format!("#include <stdio.h>\n#include <unistd.h>\n__attribute__((constructor)) static void start(void) {{ {body} }}\n"),
    )
    .unwrap();
    shared_library(&source, lib);
}

/// A sweep checks what each run loads right before the run: a trusted library
/// relinked after the sweep planned is refused in every later run (7 of 20 runs
/// loaded it before), and a file that loads what nothing trusts, through a grid's
/// placeholder or a vendors folder holding a FIFO, runs nothing.
#[test]
fn a_sweep_checks_what_each_run_loads_right_before_it() {
    let dir = temp_dir("hostile-swapped");
    let lib = dir.join("libswap.so");
    let (waiting, go, relinked) = (
        dir.join("waiting"),
        dir.join("go"),
        dir.join("relinked-ran"),
    );
    // The first run waits in its library's constructor until the library is relinked.
    library_with_constructor(
        &lib,
        &format!(
            "FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); while (access(\"{}\", F_OK) != 0) usleep(10000);",
            waiting.display(),
            go.display()
        ),
    );
    let grid = dir.join("swap.toml");
    std::fs::write(
        &grid,
        format!(
            "{}[env]\nLD_PRELOAD = \"./libswap.so\"\n",
            GRID.replace("\"16KiB\", \"32KiB\"", "\"16KiB\"")
        ),
    )
    .unwrap();
    trust(&grid);
    let out_dir = dir.join("out");
    let sweeping = sweep(&[grid.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !waiting.exists() {
        assert!(start.elapsed() < HANG, "the first run never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    library_with_constructor(
        &lib,
        &format!(
            "FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f);",
            relinked.display()
        ),
    );
    std::fs::write(&go, "").unwrap();
    let out = sweeping.wait_with_output().unwrap();
    assert_sane("swapped", &out);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!relinked.exists(), "a run loaded the relinked library");
    assert!(
        stderr(&out).contains("changed since it was trusted"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        results(&out_dir).len(),
        1,
        "the run planned before the relink"
    );

    // A placeholder that names another library in another run; a FIFO in a vendors
    // folder: refused at planning, nothing run, nothing waited on.
    let marker = dir.join("constructor-ran");
    std::fs::create_dir_all(dir.join("helpers")).unwrap();
    library_with_constructor(
        &dir.join("helpers/p2.so"),
        &format!(
            "FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f);",
            marker.display()
        ),
    );
    std::os::unix::fs::symlink("/lib/x86_64-linux-gnu/libm.so.6", dir.join("helpers/p1.so"))
        .unwrap();
    let placeholder = dir.join("placeholder.toml");
    std::fs::write(
        &placeholder,
        "[devices]\ntype = \"cpu\"\n[allocation]\ncount = 3\n[env]\nLD_PRELOAD = \"helpers/p{devices.count}.so\"\n[grid]\n\"devices.indices\" = [[0], [0, 1]]\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("vendors")).unwrap();
    mkfifo(&dir.join("vendors/x.icd"));
    let fifo = dir.join("fifo.toml");
    std::fs::write(
        &fifo,
        "[allocation]\ncount = 3\n[env]\nOCL_ICD_VENDORS = \"vendors\"\n",
    )
    .unwrap();
    for (file, said) in [(&placeholder, "helpers/p2.so"), (&fifo, "a FIFO")] {
        let out_dir = dir.join(format!(
            "out-{}",
            file.file_stem().unwrap().to_string_lossy()
        ));
        let out = ended(
            &mut sweep(&[file.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]),
            said,
        );
        assert_sane(said, &out);
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
        assert!(results(&out_dir).is_empty(), "{said}: ran");
        // The check submit.sh runs says it before anything is submitted.
        let out = ended(
            xtask_bare()
                .args(["sweep", "--check", "--bin"])
                .arg(clmulti_bin())
                .arg(file),
            said,
        );
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
    }
    assert!(!marker.exists(), "a refused file's library ran");
}

/// 300 000 unreadable result lines: the first few named, the rest counted (25.7 MB
/// of warnings before).
#[test]
fn many_unreadable_lines_are_counted_not_each_said() {
    let dir = temp_dir("hostile-empty-lines");
    std::fs::write(dir.join("results.jsonl"), "{}\n".repeat(300_000)).unwrap();
    let out = ended(xtask_bare().arg("summary").arg(&dir), "summary");
    assert_sane("empty lines", &out);
    let err = stderr(&out);
    assert!(err.len() < 4000, "{} bytes of warnings", err.len());
    assert!(
        err.contains("299995 more unreadable record(s) skipped"),
        "{err}"
    );
}

/// `submit.sh` checks the files and their trust as the shards will, and submits
/// nothing (no `sbatch`) when one is refused, saying why.
#[test]
fn submit_stops_before_sbatch_on_a_file_nothing_trusts() {
    let dir = temp_dir("hostile-submit");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let called = dir.join("sbatch-called");
    let sbatch = bin.join("sbatch");
    std::fs::write(
        &sbatch,
        format!("#!/bin/sh\ntouch {}\necho 1\n", called.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.join("preload.toml");
    std::fs::write(&file, "[allocation]\ncount = 3\n[env]\nHOME = \"/tmp\"\n").unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = ended(
        Command::new(root.join("scripts/slurm/submit.sh"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("CLMULTI_BIN", clmulti_bin())
            .env("CLMULTI_XTASK", env!("CARGO_BIN_EXE_xtask"))
            .env("CLMULTI_TRUST_FILE", common::trust_record())
            .args(["--out", dir.join("out").to_str().unwrap()])
            .arg(&file),
        "submit",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("nothing was submitted") && err.contains("HOME keeps compiled code"),
        "{err}"
    );
    assert!(!called.exists(), "sbatch was called");
}
