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
    /// Reads all four, opening the `/proc` files for this one reading; a reading
    /// that fails is zero. To sample repeatedly, and at the descriptor limit, use a
    /// [`UsageReader`].
    pub fn read() -> Self {
        UsageReader::open().read()
    }
}

/// Resident set size in bytes, from one small read of `/proc/self/statm`.
pub fn rss_bytes() -> u64 {
    UsageReader::open().rss_bytes()
}

/// Reads [`ProcessUsage`] through `/proc` descriptors opened once.
///
/// Why: a process that has run out of file descriptors (the very limit clmulti
/// looks for) can no longer open `/proc/self/fd` to count them. The reader opens
/// its three descriptors up front and re-reads them from the start each time, and
/// counts itself out of the open-fd figure. It allocates nothing on the heap, so
/// sampling does not disturb the allocator of the runtime being measured.
#[derive(Debug)]
pub struct UsageReader {
    statm: i32,
    maps: i32,
    fd_dir: i32,
}

fn open_proc(path: &std::ffi::CStr, directory: bool) -> i32 {
    let flags = libc::O_RDONLY | libc::O_CLOEXEC | if directory { libc::O_DIRECTORY } else { 0 };
    // SAFETY: `path` is NUL-terminated; the caller owns the descriptor.
    unsafe { libc::open(path.as_ptr(), flags) }
}

impl UsageReader {
    /// Opens `/proc/self/statm`, `/proc/self/maps` and `/proc/self/fd`.
    pub fn open() -> Self {
        UsageReader {
            statm: open_proc(c"/proc/self/statm", false),
            maps: open_proc(c"/proc/self/maps", false),
            fd_dir: open_proc(c"/proc/self/fd", true),
        }
    }

    /// Reads all four figures; one whose file could not be opened is zero.
    pub fn read(&self) -> ProcessUsage {
        let (virtual_bytes, rss_bytes) = self.statm();
        ProcessUsage {
            rss_bytes,
            virtual_bytes,
            open_fds: self.open_fds(),
            memory_maps: self.memory_maps(),
        }
    }

    /// Resident set size in bytes (one small read).
    pub fn rss_bytes(&self) -> u64 {
        self.statm().1
    }

    /// Reads `fd` from its start in chunks, handing each to `each`.
    fn reread(fd: i32, mut each: impl FnMut(&[u8])) {
        if fd < 0 {
            return;
        }
        // SAFETY: `fd` is a descriptor this reader owns.
        if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
            return;
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
    }

    fn statm(&self) -> (u64, u64) {
        let page = page_size();
        let mut text = [0u8; 256];
        let mut len = 0;
        Self::reread(self.statm, |chunk| {
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

    fn memory_maps(&self) -> u64 {
        let mut lines = 0u64;
        Self::reread(self.maps, |chunk| {
            lines += chunk.iter().filter(|&&c| c == b'\n').count() as u64;
        });
        lines
    }

    fn open_fds(&self) -> u64 {
        if self.fd_dir < 0 {
            return 0;
        }
        // SAFETY: rewinding a directory descriptor this reader owns.
        if unsafe { libc::lseek(self.fd_dir, 0, libc::SEEK_SET) } < 0 {
            return 0;
        }
        let mut buf = [0u8; 8192];
        let mut entries = 0u64;
        loop {
            // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    self.fd_dir,
                    buf.as_mut_ptr(),
                    buf.len(),
                )
            };
            if n <= 0 {
                break;
            }
            let mut offset = 0usize;
            while offset < n as usize {
                // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
                let reclen = u16::from_ne_bytes([buf[offset + 16], buf[offset + 17]]) as usize;
                if buf[offset + 19] != b'.' {
                    entries += 1;
                }
                offset += reclen.max(1);
            }
        }
        // The reader's own descriptors are not the process's doing.
        let own = [self.statm, self.maps, self.fd_dir]
            .iter()
            .filter(|fd| **fd >= 0)
            .count() as u64;
        entries.saturating_sub(own)
    }
}

impl Drop for UsageReader {
    fn drop(&mut self) {
        for fd in [self.statm, self.maps, self.fd_dir] {
            if fd >= 0 {
                // SAFETY: each descriptor is owned by this reader and closed once.
                unsafe { libc::close(fd) };
            }
        }
    }
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
