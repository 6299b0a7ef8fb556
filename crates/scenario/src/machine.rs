//! What this machine allows a scenario: the hard resource limits a run's `[limits]`
//! may reach (and whether this process may raise them), and where the project's
//! preloaded libraries were built.

use crate::model::Rlimit;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the project's libraries (`{clmulti-layer}`, `{clmulti-kmd-emu}`) are unless
/// told otherwise: the running executable's folder (`clmulti`, which cargo builds
/// beside them), or one folder up when they are there, where cargo puts them for test
/// and example binaries (which live in `target/<profile>/deps` and `examples`).
pub fn default_libraries() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let has_one = |d: &Path| {
        clmulti_contract::PROJECT_LIBRARIES
            .iter()
            .any(|l| d.join(l.file_name).exists())
    };
    match dir.parent() {
        Some(above) if !has_one(dir) && has_one(above) => Some(above.to_path_buf()),
        _ => Some(dir.to_path_buf()),
    }
}

/// The most each of this process's soft resource limits may be raised to (a limit
/// with no ceiling is absent): the hard limit, or, for a process that may raise hard
/// limits too (`CAP_SYS_RESOURCE`, root's), none but the kernel's own (`fs.nr_open`
/// for `nofile`). What a run's `[limits]` may ask for.
pub fn hard_limits() -> BTreeMap<Rlimit, u64> {
    let resource = |which: Rlimit| match which {
        Rlimit::NoFile => libc::RLIMIT_NOFILE,
        Rlimit::AddressSpace => libc::RLIMIT_AS,
        Rlimit::MemLock => libc::RLIMIT_MEMLOCK,
        Rlimit::NProc => libc::RLIMIT_NPROC,
        Rlimit::Data => libc::RLIMIT_DATA,
    };
    let raises_hard = may_raise_hard_limits();
    Rlimit::ALL
        .into_iter()
        .filter_map(|which| {
            if raises_hard {
                return (which == Rlimit::NoFile)
                    .then(nr_open)
                    .flatten()
                    .map(|n| (which, n));
            }
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `lim` is a valid, writable rlimit struct.
            let ok = unsafe { libc::getrlimit(resource(which), &mut lim) } == 0;
            (ok && lim.rlim_max != libc::RLIM_INFINITY).then_some((which, lim.rlim_max))
        })
        .collect()
}

/// Whether this process may raise its hard resource limits: `CAP_SYS_RESOURCE` in its
/// effective capabilities (root has it, outside a container that drops it).
pub fn may_raise_hard_limits() -> bool {
    const CAP_SYS_RESOURCE: u32 = 24;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_RESOURCE) != 0)
}

/// `fs.nr_open`: the most descriptors any process may be allowed (the ceiling of
/// `RLIMIT_NOFILE`, hard limit included).
pub fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}
