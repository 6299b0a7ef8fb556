//! What this process's cgroups allow: the memory limit (v2 `memory.max`, v1
//! `memory.limit_in_bytes`) and its headroom, and the limit on tasks (`pids.max`),
//! each the tightest along the cgroup's path, read from `/proc/self/cgroup` and the
//! cgroup mounts.

use serde::{Deserialize, Serialize};
use std::fs;
use std::path::Path;

/// A cgroup's limit on tasks, and what other processes there held when it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupPids {
    /// `pids.max`: tasks (processes and threads) the cgroup may hold.
    pub max: u64,
    /// Tasks of the cgroup other than this process's threads, when read.
    pub others: u64,
    /// The file, as a person finds it: `pids.max (cgroup v1)`.
    pub name: String,
}

/// The smallest memory limit along this process's cgroup path (v2 `memory.max`,
/// v1 `memory.limit_in_bytes`), given `/proc/self/cgroup` and the cgroup mount.
pub fn cgroup_memory_limit(proc_cgroup: &Path, mount: &Path) -> Option<u64> {
    smallest_along_cgroup(proc_cgroup, mount, |dir, v2| {
        read_limit(&dir.join(if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        }))
    })
}

/// What this process's cgroups leave before their memory limit: the smallest
/// limit less usage along the path (v2 `memory.max - memory.current`, v1
/// `memory.limit_in_bytes - memory.usage_in_bytes`). Usage counts what RSS does
/// not: page tables, kernel memory, the page cache. `None` without a limit.
pub fn cgroup_memory_headroom(proc_cgroup: &Path, mount: &Path) -> Option<u64> {
    smallest_along_cgroup(proc_cgroup, mount, |dir, v2| {
        let (max, current) = if v2 {
            ("memory.max", "memory.current")
        } else {
            ("memory.limit_in_bytes", "memory.usage_in_bytes")
        };
        let limit = read_limit(&dir.join(max))?;
        let used = read_limit(&dir.join(current)).unwrap_or(0);
        Some(limit.saturating_sub(used))
    })
}

/// A limit file's value; "max" and v1's page-rounded i64::MAX are no limit.
fn read_limit(file: &Path) -> Option<u64> {
    fs::read_to_string(file)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|v| *v < 1 << 60)
}

/// The smallest of `value(folder, is_v2)` over the memory cgroup of this process and
/// each of its ancestors (the limit of every ancestor applies too).
fn smallest_along_cgroup(
    proc_cgroup: &Path,
    mount: &Path,
    value: impl Fn(&Path, bool) -> Option<u64>,
) -> Option<u64> {
    let text = fs::read_to_string(proc_cgroup).ok()?;
    let mut smallest: Option<u64> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (base, v2) = if controllers.is_empty() {
            (mount.to_path_buf(), true)
        } else if controllers.split(',').any(|c| c == "memory") {
            (mount.join("memory"), false)
        } else {
            continue;
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            if let Some(v) = value(&dir, v2) {
                smallest = Some(smallest.map_or(v, |s| s.min(v)));
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
    }
    smallest
}

/// Whether this process's memory cgroup is a v1 one.
pub(crate) fn cgroup_memory_is_v1(proc_cgroup: &Path) -> bool {
    fs::read_to_string(proc_cgroup).is_ok_and(|t| {
        t.lines().any(|l| {
            l.split(':')
                .nth(1)
                .is_some_and(|c| c.split(',').any(|c| c == "memory"))
        })
    })
}

/// The tightest `pids.max` along this process's pids cgroup (v1's `pids` controller,
/// or v2), with the tasks other processes hold there: what limits its threads.
pub fn cgroup_pids(proc_cgroup: &Path, mount: &Path) -> Option<CgroupPids> {
    let text = fs::read_to_string(proc_cgroup).ok()?;
    let own = fs::read_dir("/proc/self/task").map_or(1, |d| d.count() as u64);
    let mut tightest: Option<CgroupPids> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (base, version) = if controllers.is_empty() {
            // A hybrid layout mounts cgroup v2 at `unified`.
            let unified = mount.join("unified");
            (
                if unified.is_dir() {
                    unified
                } else {
                    mount.to_path_buf()
                },
                2,
            )
        } else if controllers.split(',').any(|c| c == "pids") {
            (mount.join("pids"), 1)
        } else {
            continue;
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            let max = read_limit(&dir.join("pids.max"));
            let current = read_limit(&dir.join("pids.current"));
            if let (Some(max), Some(current)) = (max, current) {
                let room = max.saturating_sub(current);
                if tightest
                    .as_ref()
                    .is_none_or(|t| room < t.max.saturating_sub(t.others + own))
                {
                    tightest = Some(CgroupPids {
                        max,
                        others: current.saturating_sub(own),
                        name: format!("the cgroup's pids.max (cgroup v{version})"),
                    });
                }
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
    }
    tightest
}

/// This process's cgroup memory headroom ([`cgroup_memory_headroom`]) on this
/// machine's mounts.
pub fn own_cgroup_headroom() -> Option<u64> {
    cgroup_memory_headroom(Path::new("/proc/self/cgroup"), Path::new("/sys/fs/cgroup"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_limits_along_the_path() {
        let root = std::env::temp_dir().join(format!("clmulti-cgroup-{}", std::process::id()));
        let leaf = root.join("fs/job/step");
        fs::create_dir_all(&leaf).unwrap();
        fs::write(root.join("cgroup"), "0::/job/step\n").unwrap();
        fs::write(root.join("fs/job/memory.max"), "1073741824\n").unwrap();
        fs::write(leaf.join("memory.max"), "max\n").unwrap();
        assert_eq!(
            cgroup_memory_limit(&root.join("cgroup"), &root.join("fs")),
            Some(1 << 30)
        );
        // Headroom: the limit less what the cgroup uses, page tables and kernel
        // memory included (memory.current), the smallest along the path.
        fs::write(root.join("fs/job/memory.current"), "805306368\n").unwrap();
        fs::write(leaf.join("memory.max"), "2147483648\n").unwrap();
        fs::write(leaf.join("memory.current"), "805306368\n").unwrap();
        assert_eq!(
            cgroup_memory_headroom(&root.join("cgroup"), &root.join("fs")),
            Some(256 << 20)
        );
        fs::write(leaf.join("memory.max"), "max\n").unwrap();
        fs::write(root.join("fs/job/memory.max"), "max\n").unwrap();
        assert_eq!(
            cgroup_memory_limit(&root.join("cgroup"), &root.join("fs")),
            None
        );
        assert_eq!(
            cgroup_memory_headroom(&root.join("cgroup"), &root.join("fs")),
            None
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_tightest_pids_limit_along_the_path_is_named_by_its_version() {
        let root = std::env::temp_dir().join(format!("clmulti-pids-{}", std::process::id()));
        let job = root.join("fs/pids/job/step");
        fs::create_dir_all(&job).unwrap();
        fs::write(root.join("cgroup"), "8:pids:/job/step\n0::/\n").unwrap();
        fs::write(root.join("fs/pids/job/pids.max"), "500\n").unwrap();
        fs::write(root.join("fs/pids/job/pids.current"), "300\n").unwrap();
        fs::write(job.join("pids.max"), "max\n").unwrap();
        fs::write(job.join("pids.current"), "100\n").unwrap();
        let pids = cgroup_pids(&root.join("cgroup"), &root.join("fs")).expect("a limit");
        // The job's 500, not the step's "max"; the others are the job's tasks less
        // this process's threads.
        assert_eq!(pids.max, 500);
        assert!(pids.others < 300 && pids.others + 64 >= 300, "{pids:?}");
        assert_eq!(pids.name, "the cgroup's pids.max (cgroup v1)");
        fs::remove_dir_all(&root).unwrap();
    }
}
