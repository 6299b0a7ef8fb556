//! The ioctl table, checked without NEO: the crate's example i915 client runs under
//! the preloaded emulation, as a runtime would, and what it reads is asserted here.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>`, from this test's own path (`target/<profile>/deps/<test>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    exe.parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

fn emulation() -> PathBuf {
    let lib = profile_dir().join("libclmulti_kmd_emu.so");
    assert!(
        lib.exists(),
        "{} missing: cargo builds it with the tests",
        lib.display()
    );
    lib
}

/// The example client under the emulation with `devices` A770s and `nofile` as its
/// soft descriptor limit.
fn client(devices: usize, nofile: Option<u64>, args: &[&str]) -> BTreeMap<String, String> {
    client_of("a770", devices, nofile, args)
}

/// [`client`] on the emulation's device `model`.
fn client_of(
    model: &str,
    devices: usize,
    nofile: Option<u64>,
    args: &[&str],
) -> BTreeMap<String, String> {
    let example = profile_dir().join("examples/i915_client");
    assert!(
        example.exists(),
        "{} missing: cargo builds examples with the tests",
        example.display()
    );
    let mut command = Command::new(example);
    command
        .args(args)
        .env("LD_PRELOAD", emulation())
        .env("CLMULTI_KMD_EMU_DEVICES", devices.to_string())
        .env("CLMULTI_KMD_EMU_MODEL", model)
        .env_remove("CLMULTI_KMD_EMU_ROOT");
    // SAFETY: close_range, getrlimit and setrlimit are async-signal-safe; this runs
    // in the child before exec.
    unsafe {
        command.pre_exec(move || {
            // Descriptors inherited from the test harness (cargo's jobserver, a shell's
            // 255) would take numbers below one limit and not another.
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
            if let Some(limit) = nofile {
                let mut lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
                lim.rlim_cur = limit;
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    };
    let out = command.output().expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[test]
fn a_client_finds_a770s_on_i915_and_shares_a_buffer_through_a_real_dmabuf() {
    let out = client(2, None, &[]);
    assert_eq!(out["render_nodes"], "2");
    assert_eq!(
        out["device0"],
        "i915 0x56a0 /dev/dri/renderD128 pdev=0000:03:00.0"
    );
    assert_eq!(
        out["device1"],
        "i915 0x56a0 /dev/dri/renderD129 pdev=0000:04:00.0"
    );
    // The peer's mapping of the imported object shows what device 0's mapping wrote.
    assert_eq!(out["peer_sees_write"], "true");
    // The kernel's view of the export, as clmulti's readings expect it.
    assert_eq!(out["dmabuf_link"], "/dmabuf:");
    assert_eq!(out["dmabuf_exporter"], "i915 size=1048576");
    assert_eq!(out["device0_total_system0"], "1 MiB");
    assert_eq!(
        out["device1_shared_system0"], "1 MiB",
        "the import counts for the peer too"
    );
    assert_eq!(out["create_1MiB_local"], "None");
    assert_eq!(out["device0_total_local0"], "1 MiB");
    assert_eq!(
        out["create_64GiB_local"],
        format!("Some({})", libc::E2BIG),
        "larger than the region"
    );
    // The counts, per kind.
    let count = |k: &str| out[&format!("counts.{k}")].parse::<u64>().unwrap();
    assert_eq!(
        (count("objects-0-system0"), count("objects-0-local0")),
        (1, 1)
    );
    assert_eq!(
        count("resident-bytes-0-local0"),
        0,
        "pages are taken at first use"
    );
    assert_eq!(
        (count("maps"), count("exports"), count("imports")),
        (2, 1, 1)
    );
    assert_eq!(count("files"), 2);
    assert_eq!(count("failed-ioctls"), 1);
}

/// NEO 20.44 predates the A770: its newest GPU, an integrated Alder Lake-S, where
/// Intel's integrated GPU sits, with system memory only (no region to create in, none
/// in fdinfo), and sharing through a system-memory dma-buf as on the A770.
#[test]
fn an_integrated_alder_lake_s_has_system_memory_only_and_shares_through_a_dmabuf() {
    let out = client_of("adl-s", 2, None, &[]);
    assert_eq!(
        out["device0"],
        "i915 0x4680 /dev/dri/renderD128 pdev=0000:00:02.0"
    );
    assert_eq!(
        out["device1"],
        "i915 0x4680 /dev/dri/renderD129 pdev=0000:00:03.0"
    );
    assert_eq!(out["peer_sees_write"], "true");
    assert_eq!(out["device0_total_system0"], "1 MiB");
    assert_eq!(
        out["create_1MiB_local"],
        format!("Some({})", libc::EINVAL),
        "no device memory region"
    );
    assert_eq!(out["device0_total_local0"], "absent");
    assert_eq!(out["counts.pci-id"], "18048");
    assert_eq!(out["counts.local-bytes"], "0");
}

#[test]
fn the_devices_follow_the_setting() {
    for devices in [1, 4, 8] {
        assert_eq!(
            client(devices, None, &[])["render_nodes"],
            devices.to_string()
        );
    }
}

#[test]
fn exports_are_real_descriptors_that_stop_at_rlimit_nofile_with_emfile() {
    let at = |limit: u64| {
        let out = client(2, Some(limit), &["--exhaust"]);
        let line = &out["fds_before"];
        let exported: u64 = line
            .split("exported=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            line.ends_with(&format!("stopped_errno={}", libc::EMFILE)),
            "{line}"
        );
        exported
    };
    let (low, high) = (at(100), at(300));
    assert!((80..100).contains(&low), "{low} exports under nofile 100");
    assert_eq!(high - low, 200, "one descriptor per export, nothing else");
}

/// A model is one of its driver's: the B580 named on i915 (the driver when none is set)
/// falls back to i915's first model, and the process still finds its devices.
#[test]
fn a_model_of_another_driver_falls_back_to_the_drivers_first() {
    let out = client_of("b580", 2, None, &[]);
    assert_eq!(
        out["device0"],
        "i915 0x56a0 /dev/dri/renderD128 pdev=0000:03:00.0"
    );
    assert_eq!(out["counts.pci-id"], "22176");
}
