use super::*;

fn loads(pairs: &[(&str, String)], origin: &Origin) -> Vec<Load> {
    let mut out: Vec<Load> = pairs
        .iter()
        .flat_map(|(k, v)| match entry(k, v, origin) {
            Entry::Inert => Vec::new(),
            Entry::Paths { items, .. } => items.into_iter().map(|i| i.load).collect(),
            Entry::Vendors { icds, folder, .. } => icds
                .into_iter()
                .map(|(_, i)| i.load)
                .chain(folder.map(|i| i.load))
                .collect(),
            Entry::Setting(item) => vec![item.load],
        })
        .collect();
    out.sort();
    out
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clmulti-loads-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_key_off_the_inert_list_is_a_load() {
    let origin = Origin::default();
    let found = loads(
        &[
            ("LD_PRELOAD", "/tmp/evil.so libm.so.6".into()),
            ("POCL_CACHE_DIR", "/tmp/cache".into()),
            ("HOME", "/tmp/home".into()),
            ("ld_preload", "/tmp/evil.so".into()),
            ("GLIBC_TUNABLES", "glibc.malloc.x=1".into()),
            ("POCL_DEVICES", "pthread pthread".into()),
            ("POCL_DEBUG", "../x".into()),
        ],
        &origin,
    );
    let find = |key: &str, path: &str| {
        found
            .iter()
            .find(|l| l.key == key && l.path == path)
            .unwrap_or_else(|| panic!("{key} {path}: {found:?}"))
    };
    assert_eq!(find("LD_PRELOAD", "/tmp/evil.so").trusted, None);
    // A bare name is where the dynamic linker finds it: the system's libm.
    let libm = found
        .iter()
        .find(|l| l.key == "LD_PRELOAD" && l.path.ends_with("/libm.so.6"))
        .unwrap_or_else(|| panic!("libm.so.6: {found:?}"));
    assert_eq!(libm.trusted, Some(Trusted::System));
    assert_eq!(
        find("POCL_CACHE_DIR", "/tmp/cache").kind,
        LoadKind::CodeCache
    );
    assert_eq!(find("HOME", "/tmp/home").trusted, None);
    // Case matters; unknown keys and listed keys with a path need a word too.
    assert_eq!(find("ld_preload", "/tmp/evil.so").kind, LoadKind::Setting);
    assert_eq!(find("GLIBC_TUNABLES", "glibc.malloc.x=1").trusted, None);
    assert_eq!(find("POCL_DEBUG", "../x").kind, LoadKind::Setting);
    assert!(found.iter().all(|l| l.key != "POCL_DEVICES"));
}

#[test]
fn relative_paths_resolve_against_the_scenarios_folder() {
    let dir = temp("relative");
    let origin = Origin {
        folder: Some(dir.clone()),
        libraries: None,
    };
    let found = loads(
        &[
            ("LD_AUDIT", "./audit.so".into()),
            ("LD_LIBRARY_PATH", "/usr/lib;lib:".into()),
            ("LD_DEBUG_OUTPUT", "log".into()),
        ],
        &origin,
    );
    let paths: Vec<&str> = found.iter().map(|l| l.path.as_str()).collect();
    let d = dir.display();
    for wanted in [
        format!("{d}/./audit.so"),
        format!("{d}/lib"),
        format!("{d}/."),
        format!("{d}/log"),
    ] {
        assert!(paths.contains(&wanted.as_str()), "{wanted}: {paths:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_ways_round_a_listing_are_listed_too() {
    let dir = temp("ways");
    std::fs::create_dir_all(dir.join("vp")).unwrap();
    std::fs::write(dir.join("vp/evil.icd"), "/tmp/evil-vp.so\n").unwrap();
    std::fs::write(dir.join("space.icd"), " /tmp/x.so\n").unwrap();
    std::fs::write(dir.join("runtime.so"), "").unwrap();
    let origin = Origin::default();
    let d = dir.display();
    let untrusted = |key: &str, value: String| -> Vec<Load> {
        loads(&[(key, value)], &origin)
            .into_iter()
            .filter(|l| !l.may_run())
            .collect()
    };
    // ocl-icd's other folder variable.
    let found = untrusted("OPENCL_VENDOR_PATH", format!("{d}/vp"));
    assert!(
        found.iter().any(|l| l.path == "/tmp/evil-vp.so"),
        "{found:?}"
    );
    // A vendors file that is no .icd is a library the loader opens.
    let found = untrusted("OCL_ICD_VENDORS", format!("{d}/runtime.so"));
    assert!(
        found.iter().any(|l| l.path.ends_with("runtime.so")),
        "{found:?}"
    );
    // A leading space makes a relative path: no word allows it.
    let found = untrusted("OCL_ICD_VENDORS", format!("{d}/space.icd"));
    assert!(
        found[0].problem.as_ref().unwrap().contains("relative path"),
        "{found:?}"
    );
    // The dynamic linker's tokens: never read as written.
    let found = untrusted("LD_PRELOAD", "/usr/$LIB/libm.so.6".into());
    assert!(found[0].problem.is_some(), "{found:?}");
    // What clmulti's own libraries write: asked, but for /dev/null.
    assert_eq!(
        untrusted("CLMULTI_TRACE_REPORT", "/etc/passwd".into()).len(),
        1
    );
    assert!(untrusted("AUBDumpCaptureFileName", "/dev/null".into()).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkout_folder_others_can_write_is_not_the_checkouts() {
    let root = temp("checkout");
    let debug = root.join("target/debug");
    std::fs::create_dir_all(&debug).unwrap();
    std::fs::write(root.join("Cargo.toml"), "").unwrap();
    std::fs::write(debug.join("libx.so"), "").unwrap();
    let origin = Origin {
        folder: None,
        libraries: Some(debug.clone()),
    };
    let lib = || {
        loads(
            &[("LD_PRELOAD", format!("{}/libx.so", debug.display()))],
            &origin,
        )
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = |m| std::fs::Permissions::from_mode(m);
    for p in [&root, &root.join("target"), &debug] {
        std::fs::set_permissions(p, mode(0o755)).unwrap();
    }
    std::fs::set_permissions(debug.join("libx.so"), mode(0o644)).unwrap();
    assert_eq!(lib()[0].trusted, Some(Trusted::ThisCheckout));
    std::fs::set_permissions(root.join("target"), mode(0o777)).unwrap();
    assert_eq!(lib()[0].trusted, None);
    std::fs::remove_dir_all(&root).unwrap();
}
