//! Host limits that bound allocation, and this process's use of them.
//!
//! Linux only: everything is read from `/proc` and `getrlimit`.

use serde::{Deserialize, Serialize};
use std::fs;

/// The ceilings a process meets before device memory runs out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLimits {
    /// Physical RAM (`MemTotal`), bytes.
    pub ram_bytes: Option<u64>,
    /// `RLIMIT_NOFILE` soft limit; `None` means unlimited.
    pub nofile_soft: Option<u64>,
    /// `RLIMIT_NOFILE` hard limit.
    pub nofile_hard: Option<u64>,
    /// `RLIMIT_AS` soft limit, bytes; `None` means unlimited.
    pub address_space_soft: Option<u64>,
    /// `RLIMIT_AS` hard limit, bytes.
    pub address_space_hard: Option<u64>,
    /// `vm.max_map_count`: memory mappings one process may hold.
    pub max_map_count: Option<u64>,
    /// Page size, bytes.
    pub page_size: u64,
}

impl HostLimits {
    /// Reads the limits in force for this process now.
    pub fn read() -> Self {
        let (nofile_soft, nofile_hard) = rlimit(libc::RLIMIT_NOFILE);
        let (as_soft, as_hard) = rlimit(libc::RLIMIT_AS);
        HostLimits {
            ram_bytes: meminfo_kib("MemTotal:").map(|k| k * 1024),
            nofile_soft,
            nofile_hard,
            address_space_soft: as_soft,
            address_space_hard: as_hard,
            max_map_count: fs::read_to_string("/proc/sys/vm/max_map_count")
                .ok()
                .and_then(|s| s.trim().parse().ok()),
            page_size: page_size(),
        }
    }
}

/// This process's use of the host resources that allocation consumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessUsage {
    /// Resident set size (`VmRSS`), bytes.
    pub rss_bytes: u64,
    /// Virtual size (`VmSize`), bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors (entries of `/proc/self/fd`).
    pub open_fds: u64,
    /// Memory mappings (lines of `/proc/self/maps`).
    pub memory_maps: u64,
}

impl ProcessUsage {
    /// Reads all four; a reading that fails is zero.
    pub fn read() -> Self {
        let (virtual_bytes, rss_bytes) = statm();
        ProcessUsage {
            rss_bytes,
            virtual_bytes,
            open_fds: count_open_fds(),
            memory_maps: count_maps(),
        }
    }
}

/// Resident set size in bytes, from one small read of `/proc/self/statm`.
pub fn rss_bytes() -> u64 {
    statm().1
}

// The readers below use stack buffers and raw syscalls: no heap allocation, so
// sampling does not disturb the allocator state of the runtime being measured.

/// Reads a /proc file in chunks, handing each chunk to `each`.
fn read_chunks(path: &std::ffi::CStr, mut each: impl FnMut(&[u8])) -> bool {
    // SAFETY: `path` is NUL-terminated; the fd is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 16384];
    loop {
        // SAFETY: `buf` is writable for its whole length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        each(&buf[..n as usize]);
    }
    // SAFETY: `fd` is open and owned here.
    unsafe { libc::close(fd) };
    true
}

fn statm() -> (u64, u64) {
    let page = page_size();
    let mut text = [0u8; 256];
    let mut len = 0;
    read_chunks(c"/proc/self/statm", |chunk| {
        let take = chunk.len().min(text.len() - len);
        text[len..len + take].copy_from_slice(&chunk[..take]);
        len += take;
    });
    let mut fields = text[..len]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .map(|f| {
            f.iter()
                .fold(0u64, |acc, d| acc * 10 + u64::from(d.wrapping_sub(b'0')))
        });
    let size = fields.next().unwrap_or(0);
    let resident = fields.next().unwrap_or(0);
    (size * page, resident * page)
}

fn count_open_fds() -> u64 {
    // SAFETY: NUL-terminated path; the fd is closed below.
    let dir = unsafe {
        libc::open(
            c"/proc/self/fd".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return 0;
    }
    let mut buf = [0u8; 8192];
    let mut entries = 0u64;
    loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        let mut offset = 0usize;
        while offset < n as usize {
            // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
            let reclen = u16::from_ne_bytes([buf[offset + 16], buf[offset + 17]]) as usize;
            let name = buf[offset + 19];
            if name != b'.' {
                entries += 1;
            }
            offset += reclen.max(1);
        }
    }
    // SAFETY: `dir` is open and owned here.
    unsafe { libc::close(dir) };
    // The directory handle used for reading is itself one entry; don't count it.
    entries.saturating_sub(1)
}

fn count_maps() -> u64 {
    let mut lines = 0u64;
    read_chunks(c"/proc/self/maps", |chunk| {
        lines += chunk.iter().filter(|&&c| c == b'\n').count() as u64;
    });
    lines
}

/// A `/proc/meminfo` value in KiB.
pub fn meminfo_kib(key: &str) -> Option<u64> {
    fs::read_to_string("/proc/meminfo")
        .ok()?
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

fn rlimit(resource: libc::__rlimit_resource_t) -> (Option<u64>, Option<u64>) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit struct.
    if unsafe { libc::getrlimit(resource, &mut lim) } != 0 {
        return (None, None);
    }
    let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    (finite(lim.rlim_cur), finite(lim.rlim_max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_a_new_fd_and_mapping() {
        let before = ProcessUsage::read();
        let file = fs::File::open("/proc/self/status").unwrap();
        let after = ProcessUsage::read();
        assert_eq!(after.open_fds, before.open_fds + 1);
        drop(file);
        assert!(before.rss_bytes > 0 && before.virtual_bytes >= before.rss_bytes);
        assert!(before.memory_maps > 5);
    }

    #[test]
    fn limits_are_read() {
        let limits = HostLimits::read();
        assert!(limits.ram_bytes.unwrap() > 0);
        assert!(limits.page_size >= 4096);
        assert!(limits.max_map_count.unwrap() > 0);
    }
}
