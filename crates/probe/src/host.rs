//! Host limits that bound allocation: RAM, the job's memory (cgroup, Slurm), resource
//! limits and the kernel's mapping limit. Linux only: read from `/proc`, `/sys` and
//! `getrlimit`.

use crate::cgroup::{cgroup_memory_is_v1, cgroup_memory_limit, cgroup_pids, CgroupPids};
use clmulti_scenario::{Limits, Rlimit};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::Path;

/// The ceilings a process meets before device memory runs out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLimits {
    /// Physical RAM (`MemTotal`), bytes.
    pub ram_bytes: Option<u64>,
    /// The memory limit of this process's cgroup (`memory.max` on cgroup v2,
    /// `memory.limit_in_bytes` on v1; the smallest along the path), bytes. Batch
    /// schedulers set it per job.
    #[serde(default)]
    pub cgroup_memory_bytes: Option<u64>,
    /// The memory a Slurm job was given (`SLURM_MEM_PER_NODE`, or `SLURM_MEM_PER_CPU`
    /// times `SLURM_CPUS_ON_NODE`), bytes.
    #[serde(default)]
    pub slurm_memory_bytes: Option<u64>,
    /// `RLIMIT_NOFILE` soft limit; `None` means unlimited.
    pub nofile_soft: Option<u64>,
    /// `RLIMIT_NOFILE` hard limit.
    pub nofile_hard: Option<u64>,
    /// `RLIMIT_AS` soft limit, bytes; `None` means unlimited.
    pub address_space_soft: Option<u64>,
    /// `RLIMIT_AS` hard limit, bytes.
    pub address_space_hard: Option<u64>,
    /// `RLIMIT_MEMLOCK` soft limit, bytes; `None` means unlimited.
    #[serde(default)]
    pub memlock_soft: Option<u64>,
    /// `RLIMIT_MEMLOCK` hard limit, bytes.
    #[serde(default)]
    pub memlock_hard: Option<u64>,
    /// `RLIMIT_NPROC` soft limit: processes and threads of this user; `None` means
    /// unlimited.
    #[serde(default)]
    pub nproc_soft: Option<u64>,
    /// `RLIMIT_NPROC` hard limit.
    #[serde(default)]
    pub nproc_hard: Option<u64>,
    /// `RLIMIT_DATA` soft limit, bytes; `None` means unlimited.
    #[serde(default)]
    pub data_soft: Option<u64>,
    /// `RLIMIT_DATA` hard limit, bytes.
    #[serde(default)]
    pub data_hard: Option<u64>,
    /// `vm.max_map_count`: memory mappings one process may hold.
    pub max_map_count: Option<u64>,
    /// `kernel.threads-max`: threads the whole system may hold.
    #[serde(default)]
    pub threads_max: Option<u64>,
    /// Whether the process runs as root, which the kernel exempts from
    /// `RLIMIT_NPROC` and `RLIMIT_MEMLOCK` (`CAP_SYS_RESOURCE`, `CAP_IPC_LOCK`).
    #[serde(default)]
    pub root: bool,
    /// Whether the process may raise its hard limits (`CAP_SYS_RESOURCE`: root's,
    /// unless a container dropped it).
    #[serde(default)]
    pub may_raise_hard: bool,
    /// `fs.nr_open`: the ceiling of `RLIMIT_NOFILE`, hard limit included.
    #[serde(default)]
    pub nr_open: Option<u64>,
    /// Page size, bytes (`page_size` in reports of schema 3 and earlier).
    #[serde(alias = "page_size")]
    pub page_size_bytes: u64,
    /// Whether the cgroup memory limit is a cgroup v1 one (`memory.limit_in_bytes`).
    #[serde(default)]
    pub cgroup_memory_v1: bool,
    /// The tasks this process's cgroups allow (`pids.max`), where one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_pids: Option<CgroupPids>,
}

/// Which memory ceiling applies to this process, and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCeiling {
    /// Physical RAM.
    Ram,
    /// The cgroup's memory limit (cgroup v2, `memory.max`).
    Cgroup,
    /// The cgroup's memory limit (cgroup v1, `memory.limit_in_bytes`).
    CgroupV1,
    /// The Slurm job's memory.
    SlurmJob,
}

impl MemoryCeiling {
    /// What the limit is called in messages.
    pub fn label(self) -> &'static str {
        match self {
            MemoryCeiling::Ram => "physical RAM",
            MemoryCeiling::Cgroup => "the cgroup's memory.max (cgroup v2)",
            MemoryCeiling::CgroupV1 => "the cgroup's memory.limit_in_bytes (cgroup v1)",
            MemoryCeiling::SlurmJob => "the Slurm job's memory",
        }
    }
}

impl HostLimits {
    /// Reads the limits in force for this process now.
    pub fn read() -> Self {
        let nofile = rlimit(Rlimit::NoFile);
        let address_space = rlimit(Rlimit::AddressSpace);
        let memlock = rlimit(Rlimit::MemLock);
        let nproc = rlimit(Rlimit::NProc);
        let data = rlimit(Rlimit::Data);
        let sysctl = |path: &str| {
            fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse().ok())
        };
        HostLimits {
            ram_bytes: meminfo_kib(Path::new("/proc/meminfo"), "MemTotal").map(|k| k * 1024),
            cgroup_memory_bytes: cgroup_memory_limit(
                Path::new("/proc/self/cgroup"),
                Path::new("/sys/fs/cgroup"),
            ),
            slurm_memory_bytes: slurm_memory(|k| std::env::var(k).ok()),
            nofile_soft: nofile.soft,
            nofile_hard: nofile.hard,
            address_space_soft: address_space.soft,
            address_space_hard: address_space.hard,
            memlock_soft: memlock.soft,
            memlock_hard: memlock.hard,
            nproc_soft: nproc.soft,
            nproc_hard: nproc.hard,
            data_soft: data.soft,
            data_hard: data.hard,
            max_map_count: sysctl("/proc/sys/vm/max_map_count"),
            threads_max: sysctl("/proc/sys/kernel/threads-max"),
            // SAFETY: geteuid cannot fail.
            root: unsafe { libc::geteuid() } == 0,
            may_raise_hard: clmulti_scenario::may_raise_hard_limits(),
            nr_open: clmulti_scenario::nr_open(),
            page_size_bytes: page_size(),
            cgroup_memory_v1: cgroup_memory_is_v1(Path::new("/proc/self/cgroup")),
            cgroup_pids: cgroup_pids(Path::new("/proc/self/cgroup"), Path::new("/sys/fs/cgroup")),
        }
    }

    /// The smallest memory ceiling that applies (RAM, the cgroup, the Slurm job).
    pub fn memory_ceiling(&self) -> Option<(u64, MemoryCeiling)> {
        [
            (self.ram_bytes, MemoryCeiling::Ram),
            (
                self.cgroup_memory_bytes,
                if self.cgroup_memory_v1 {
                    MemoryCeiling::CgroupV1
                } else {
                    MemoryCeiling::Cgroup
                },
            ),
            (self.slurm_memory_bytes, MemoryCeiling::SlurmJob),
        ]
        .into_iter()
        .filter_map(|(bytes, kind)| Some((bytes?, kind)))
        .min_by_key(|(bytes, _)| *bytes)
    }

    /// A resource limit's values as read.
    pub fn values(&self, which: Rlimit) -> RlimitValues {
        let (soft, hard) = match which {
            Rlimit::NoFile => (self.nofile_soft, self.nofile_hard),
            Rlimit::AddressSpace => (self.address_space_soft, self.address_space_hard),
            Rlimit::MemLock => (self.memlock_soft, self.memlock_hard),
            Rlimit::NProc => (self.nproc_soft, self.nproc_hard),
            Rlimit::Data => (self.data_soft, self.data_hard),
        };
        RlimitValues { soft, hard }
    }

    /// The most the soft limit may be raised to by this process: the hard limit, or,
    /// where it may raise hard limits, the kernel's ceiling (`fs.nr_open` for
    /// `nofile`; `None`, none, for the others).
    pub fn raisable(&self, which: Rlimit) -> Option<u64> {
        match (self.may_raise_hard, which) {
            (true, Rlimit::NoFile) => self.nr_open,
            (true, _) => None,
            (false, _) => self.values(which).hard,
        }
    }

    /// These limits with a scenario's soft limits set: what a child process that
    /// sets them runs under (a soft limit above the hard one raises that too, as
    /// [`set_soft_rlimit`] does where the process may).
    pub fn with_soft_limits(&self, soft: &Limits) -> Self {
        let mut limits = self.clone();
        for (&which, &value) in &soft.soft {
            let (soft, hard) = match which {
                Rlimit::NoFile => (&mut limits.nofile_soft, &mut limits.nofile_hard),
                Rlimit::AddressSpace => (
                    &mut limits.address_space_soft,
                    &mut limits.address_space_hard,
                ),
                Rlimit::MemLock => (&mut limits.memlock_soft, &mut limits.memlock_hard),
                Rlimit::NProc => (&mut limits.nproc_soft, &mut limits.nproc_hard),
                Rlimit::Data => (&mut limits.data_soft, &mut limits.data_hard),
            };
            *soft = Some(value);
            if hard.is_some_and(|h| h < value) {
                *hard = Some(value);
            }
        }
        limits
    }

    /// Whether the kernel enforces this limit on this process: root is exempt from
    /// `RLIMIT_NPROC` and `RLIMIT_MEMLOCK`.
    pub fn enforced(&self, which: Rlimit) -> bool {
        !(self.root && matches!(which, Rlimit::NProc | Rlimit::MemLock))
    }
}

/// The `setrlimit` resource of a limit.
fn resource(which: Rlimit) -> libc::__rlimit_resource_t {
    match which {
        Rlimit::NoFile => libc::RLIMIT_NOFILE,
        Rlimit::AddressSpace => libc::RLIMIT_AS,
        Rlimit::MemLock => libc::RLIMIT_MEMLOCK,
        Rlimit::NProc => libc::RLIMIT_NPROC,
        Rlimit::Data => libc::RLIMIT_DATA,
    }
}

/// Soft and hard values of a resource limit; `None` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RlimitValues {
    /// The soft limit (what the process meets).
    pub soft: Option<u64>,
    /// The hard limit (the most the soft limit can be raised to).
    pub hard: Option<u64>,
}

/// Reads a resource limit of this process.
pub fn rlimit(which: Rlimit) -> RlimitValues {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit struct.
    if unsafe { libc::getrlimit(resource(which), &mut lim) } != 0 {
        return RlimitValues {
            soft: None,
            hard: None,
        };
    }
    let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    RlimitValues {
        soft: finite(lim.rlim_cur),
        hard: finite(lim.rlim_max),
    }
}

/// Sets the soft value of a resource limit of this process. A value above the hard
/// limit raises the hard limit with it where the process may (`CAP_SYS_RESOURCE`, as
/// root: what root can do) and is refused otherwise (the kernel would too, with a less
/// helpful message).
pub fn set_soft_rlimit(which: Rlimit, value: u64) -> std::io::Result<()> {
    let current = rlimit(which);
    let mut hard = current.hard.unwrap_or(libc::RLIM_INFINITY);
    if let Some(old) = current.hard.filter(|hard| value > *hard) {
        if !clmulti_scenario::may_raise_hard_limits() {
            return Err(std::io::Error::other(format!(
                "soft {} {value} is above the hard limit {old} (raising the hard limit needs CAP_SYS_RESOURCE, as root)",
                which.name()
            )));
        }
        hard = value;
    }
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a valid rlimit struct.
    if unsafe { libc::setrlimit(resource(which), &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Sets a scenario's soft limits on this process (before the OpenCL runtime loads).
pub fn set_soft_rlimits(limits: &Limits) -> std::io::Result<()> {
    for (&which, &value) in &limits.soft {
        set_soft_rlimit(which, value)?;
    }
    Ok(())
}

/// A `/proc/meminfo` value in KiB (`key` without the colon).
pub fn meminfo_kib(meminfo: &Path, key: &str) -> Option<u64> {
    parse_meminfo_kib(&fs::read_to_string(meminfo).ok()?, key)
}

pub(crate) fn parse_meminfo_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The host's name, as the kernel has it.
pub fn host_name() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The OS and its kernel in words: `Debian GNU/Linux 12 (bookworm), kernel 6.1.0-27-amd64`.
pub fn os_words() -> String {
    let pretty = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| "Linux".into());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{pretty}, kernel {}", kernel.trim())
}

/// The memory Slurm gave this job, from its environment (values in MiB).
///
/// `0` is Slurm's "all of the node's memory" (`--mem=0`): no Slurm limit. A value
/// that does not fit in bytes is no limit either, not a wrapped one.
pub fn slurm_memory(var: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let mib = |k: &str| var(k)?.trim().parse::<u64>().ok().filter(|m| *m > 0);
    let bytes = |m: u64| m.checked_mul(1 << 20);
    let per_node = mib("SLURM_MEM_PER_NODE").and_then(bytes);
    let per_cpu = mib("SLURM_MEM_PER_CPU").and_then(|m| {
        let cpus = var("SLURM_CPUS_ON_NODE")?.trim().parse::<u64>().ok()?;
        m.checked_mul(cpus).and_then(bytes).filter(|b| *b > 0)
    });
    per_node.or(per_cpu)
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_memory_of_zero_or_past_u64_is_no_limit() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            slurm_memory(env(&[("SLURM_MEM_PER_NODE", "2048")])),
            Some(2 << 30)
        );
        assert_eq!(slurm_memory(env(&[("SLURM_MEM_PER_NODE", "0")])), None);
        assert_eq!(
            slurm_memory(env(&[("SLURM_MEM_PER_NODE", "18446744073709551615")])),
            None
        );
        assert_eq!(
            slurm_memory(env(&[
                ("SLURM_MEM_PER_CPU", "9223372036854775807"),
                ("SLURM_CPUS_ON_NODE", "4")
            ])),
            None
        );
        assert_eq!(
            slurm_memory(env(&[
                ("SLURM_MEM_PER_CPU", "1024"),
                ("SLURM_CPUS_ON_NODE", "4")
            ])),
            Some(4 << 30)
        );
    }

    #[test]
    fn limits_are_read() {
        let limits = HostLimits::read();
        assert!(limits.ram_bytes.unwrap() > 0);
        assert!(limits.page_size_bytes >= 4096);
        assert!(limits.max_map_count.unwrap() > 0);
        let (ceiling, _) = limits.memory_ceiling().unwrap();
        assert!(ceiling <= limits.ram_bytes.unwrap());
    }

    #[test]
    fn the_smallest_memory_ceiling_wins() {
        let mut limits = HostLimits::read();
        limits.ram_bytes = Some(64 << 30);
        limits.cgroup_memory_bytes = Some(8 << 30);
        // As on a cgroup v2 host, whichever this one is.
        limits.cgroup_memory_v1 = false;
        limits.slurm_memory_bytes = Some(16 << 30);
        limits.cgroup_memory_v1 = false;
        assert_eq!(
            limits.memory_ceiling(),
            Some((8 << 30, MemoryCeiling::Cgroup))
        );
        // A v1 limit is named as v1 names it.
        limits.cgroup_memory_v1 = true;
        assert_eq!(
            limits.memory_ceiling().map(|(_, c)| c.label()),
            Some("the cgroup's memory.limit_in_bytes (cgroup v1)")
        );
        limits.cgroup_memory_bytes = None;
        assert_eq!(
            limits.memory_ceiling(),
            Some((16 << 30, MemoryCeiling::SlurmJob))
        );
    }

    #[test]
    fn slurm_memory_per_node_or_per_cpu() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            slurm_memory(env(&[("SLURM_MEM_PER_NODE", "2048")])),
            Some(2 << 30)
        );
        assert_eq!(
            slurm_memory(env(&[
                ("SLURM_MEM_PER_CPU", "500"),
                ("SLURM_CPUS_ON_NODE", "2")
            ])),
            Some(1000 << 20)
        );
        assert_eq!(slurm_memory(env(&[("SLURM_MEM_PER_CPU", "500")])), None);
        assert_eq!(slurm_memory(env(&[])), None);
    }

    #[test]
    fn rlimits_round_trip() {
        let before = rlimit(Rlimit::NoFile);
        let soft = before.soft.unwrap();
        set_soft_rlimit(Rlimit::NoFile, soft - 1).unwrap();
        assert_eq!(rlimit(Rlimit::NoFile).soft, Some(soft - 1));
        set_soft_rlimit(Rlimit::NoFile, soft).unwrap();
        if let Some(hard) = before.hard {
            let err = set_soft_rlimit(Rlimit::NoFile, hard + 1).unwrap_err();
            assert!(err.to_string().contains("above the hard limit"), "{err}");
        }
    }
}
