//! The process's descriptors: how many are open, and the fdinfo of those that are a
//! GPU's (DRM and accel devices, dma-bufs), found by their link targets.

use super::UsageReader;
use crate::drm::{self, DrmClient, FdInfo};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;

impl UsageReader {
    /// Lists the fd directory; reads the fdinfo of DRM and dma-buf fds only (found
    /// by their link targets, which `readlinkat` gives without opening anything).
    pub(super) fn scan_fds(&self) -> FdScan {
        let mut scan = FdScan::default();
        let Some(dir) = &self.fd_dir else {
            return scan;
        };
        let own = self.own_fds();
        let limit = crate::host::rlimit(clmulti_scenario::Rlimit::NoFile)
            .soft
            .unwrap_or(u64::MAX);
        let mut interesting: Vec<i32> = Vec::new();
        let dir_fd = dir.as_raw_fd();
        let generation = self.tracer.map(|t| t.fd_generation());
        let mut kinds = self.fd_kinds.borrow_mut();
        kinds.start(generation);
        // Only a tracer's generation lets a listing be repeated: without one, no fstat.
        let size = if generation.is_some() {
            listed_size(dir_fd)
        } else {
            0
        };
        if let Some((open, above_limit)) = kinds.repeat(size, limit) {
            scan.open = open;
            scan.above_limit = above_limit;
            return scan;
        }
        // SAFETY: rewinding a directory descriptor this reader owns.
        if unsafe { libc::lseek(dir_fd, 0, libc::SEEK_SET) } < 0 {
            return scan;
        }
        let mut buf = self.scratch.borrow_mut();
        loop {
            // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`.
            let n =
                unsafe { libc::syscall(libc::SYS_getdents64, dir_fd, buf.as_mut_ptr(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut offset = 0usize;
            while offset < n as usize {
                // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
                let reclen = u16::from_ne_bytes([buf[offset + 16], buf[offset + 17]]) as usize;
                let name = &buf[offset + 19..offset + reclen.max(20)];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                offset += reclen.max(1);
                if name.first() == Some(&b'.') {
                    continue;
                }
                let fd = name
                    .iter()
                    .try_fold(0i32, |acc, &d| {
                        d.is_ascii_digit()
                            .then(|| acc.saturating_mul(10).saturating_add(i32::from(d - b'0')))
                    })
                    .unwrap_or(-1);
                // The reader's own descriptors count against RLIMIT_NOFILE like
                // any other: counted, never inspected.
                scan.open += 1;
                if self.own_proc && fd >= 0 && fd as u64 >= limit {
                    scan.above_limit += 1;
                }
                if self.own_proc && own.contains(&fd) {
                    continue;
                }
                if fd >= 0 && kinds.is_gpu(fd, || is_gpu_fd(dir_fd, name)) {
                    interesting.push(fd);
                }
            }
        }
        kinds.remember(size, limit, &scan, !interesting.is_empty());
        drop((kinds, buf));
        if !interesting.is_empty() {
            self.read_fdinfos(&interesting, &mut scan);
        }
        scan
    }

    fn read_fdinfos(&self, fds: &[i32], scan: &mut FdScan) {
        let Some(dir) = &self.fdinfo_dir else { return };
        self.with_spare_slot(|| self.read_fdinfos_into(dir, fds, scan));
    }

    fn read_fdinfos_into(&self, dir: &File, fds: &[i32], scan: &mut FdScan) {
        for &fd in fds {
            let Ok(name) = CString::new(fd.to_string()) else {
                continue;
            };
            // SAFETY: `dir` is an open directory; `name` is NUL-terminated.
            let info = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            };
            if info < 0 {
                continue;
            }
            let mut text = Vec::with_capacity(2048);
            let mut buf = [0u8; 4096];
            loop {
                // SAFETY: `buf` is writable for its length; `info` is open.
                let n = unsafe { libc::read(info, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                text.extend_from_slice(&buf[..n as usize]);
            }
            // SAFETY: opened above, closed once.
            unsafe { libc::close(info) };
            match drm::parse_fdinfo(&String::from_utf8_lossy(&text)) {
                FdInfo::Drm(client) => scan.drm_clients.push(client),
                FdInfo::DmaBuf { size, exporter } => {
                    scan.dmabuf_fds += 1;
                    scan.dmabuf_bytes += size;
                    if !scan.dmabuf_exporters.contains(&exporter) {
                        scan.dmabuf_exporters.insert(exporter);
                    }
                }
                FdInfo::Other => {}
            }
        }
    }
}

/// How many descriptors are open, as the kernel gives it in the size of the fd
/// directory (Linux 6.2 on; 0 before, where nothing is ever repeated).
fn listed_size(dir_fd: i32) -> u64 {
    // SAFETY: an all-zero stat is valid; fstat fills it for an open descriptor.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir_fd` is open; `stat` is writable.
    if unsafe { libc::fstat(dir_fd, &mut stat) } != 0 {
        return 0;
    }
    u64::try_from(stat.st_size).unwrap_or(0)
}

/// Whether an fd links to a DRM or DRM accel device, or a dma-buf.
fn is_gpu_fd(dir_fd: i32, name: &[u8]) -> bool {
    let mut path = [0u8; 32];
    if name.len() >= path.len() {
        return false;
    }
    path[..name.len()].copy_from_slice(name);
    let mut target = [0u8; 64];
    // SAFETY: `path` is NUL-terminated; readlinkat writes at most `target.len()` bytes.
    let n = unsafe {
        libc::readlinkat(
            dir_fd,
            path.as_ptr().cast(),
            target.as_mut_ptr().cast(),
            target.len(),
        )
    };
    if n <= 0 {
        return false;
    }
    let target = &target[..n as usize];
    // DRM accel drivers (NPUs, Intel's ivpu, habanalabs) print the same fdinfo keys.
    target.starts_with(b"/dev/dri/")
        || target.starts_with(b"/dev/accel/")
        || target.windows(6).any(|w| w == b"dmabuf")
}

/// What one look at the descriptors found.
#[derive(Default)]
pub(super) struct FdScan {
    pub(super) open: u64,
    pub(super) above_limit: u64,
    pub(super) dmabuf_fds: u64,
    pub(super) dmabuf_bytes: u64,
    pub(super) dmabuf_exporters: std::collections::BTreeSet<String>,
    pub(super) drm_clients: Vec<DrmClient>,
}

/// What each descriptor number was at the last look (a GPU's or not), kept while the
/// tracer's descriptor generation ([`crate::trace::Tracer::fd_generation`]) stands
/// still: a number changes file only through a call that frees it, which moves the
/// generation. Without the tracer every look asks again (`readlinkat` per
/// descriptor: a sample's largest part with a GPU runtime's dozens open).
#[derive(Debug, Default)]
pub(super) struct FdKinds {
    /// The generation the kinds were found under.
    generation: Option<u64>,
    /// Per number below [`KNOWN`]: 0 not known, 1 not a GPU's, 2 a GPU's.
    kinds: Vec<u8>,
    /// The last listing, when it found no GPU's descriptor, under `generation`.
    last: Option<Listing>,
}

/// What a listing of the descriptors found, and under what.
#[derive(Debug, Clone, Copy)]
struct Listing {
    /// The fd directory's size then ([`listed_size`]).
    size: u64,
    /// `RLIMIT_NOFILE`'s soft limit then.
    limit: u64,
    open: u64,
    above_limit: u64,
}

/// Descriptor numbers whose kind is kept.
const KNOWN: usize = 1 << 16;

impl FdKinds {
    /// Starts a look under `generation` (`None`: no tracer): what was known stays
    /// only when it is the last look's.
    fn start(&mut self, generation: Option<u64>) {
        if generation.is_none() || generation != self.generation {
            self.kinds.clear();
            self.last = None;
        }
        self.generation = generation;
    }

    /// The last listing's count and those at or above the limit, when a listing now
    /// would find the same: no number was freed since (the generation stands still,
    /// so none changed file), the kernel counts as many open (so none was added),
    /// the limit is the same, and that listing found no GPU's descriptor (whose
    /// fdinfo a listing reads afresh). On a 16-core node with two runtimes loaded a
    /// listing cost 6 to 22 us of a sample, `fstat` about 1. The count is the
    /// kernel's either way; what a repeat can miss is a GPU's descriptor opened while
    /// another closed through a call the tracer does not see (a raw syscall), the
    /// count unchanged: the same blind spot the kinds kept here already have.
    fn repeat(&self, size: u64, limit: u64) -> Option<(u64, u64)> {
        let last = self.last?;
        (size > 0 && size == last.size && limit == last.limit)
            .then_some((last.open, last.above_limit))
    }

    /// What a listing found, for [`repeat`](Self::repeat): kept only under a tracer's
    /// generation and when it found no GPU's descriptor.
    fn remember(&mut self, size: u64, limit: u64, scan: &FdScan, gpu: bool) {
        self.last = (self.generation.is_some() && !gpu).then_some(Listing {
            size,
            limit,
            open: scan.open,
            above_limit: scan.above_limit,
        });
    }

    /// Whether `fd` is a GPU's, asking `ask` when it is not known.
    fn is_gpu(&mut self, fd: i32, ask: impl FnOnce() -> bool) -> bool {
        let Some(slot) = usize::try_from(fd).ok().filter(|&s| s < KNOWN) else {
            return ask();
        };
        if self.kinds.len() <= slot {
            self.kinds.resize(slot + 1, 0);
        }
        if self.kinds[slot] == 0 {
            self.kinds[slot] = if ask() { 2 } else { 1 };
        }
        self.kinds[slot] == 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_kept_while_the_generation_stands_still() {
        let mut kinds = FdKinds::default();
        let asked = std::cell::Cell::new(0);
        let ask = |answer| {
            asked.set(asked.get() + 1);
            answer
        };
        kinds.start(Some(1));
        assert!(kinds.is_gpu(5, || ask(true)));
        assert!(!kinds.is_gpu(3, || ask(false)));
        kinds.start(Some(1));
        assert!(kinds.is_gpu(5, || ask(false)));
        assert_eq!(asked.get(), 2, "known numbers are not asked again");
        // A descriptor was freed: every number is asked again.
        kinds.start(Some(2));
        assert!(!kinds.is_gpu(5, || ask(false)));
        assert_eq!(asked.get(), 3);
        // No tracer: always asked.
        kinds.start(None);
        kinds.is_gpu(3, || ask(false));
        kinds.start(None);
        kinds.is_gpu(3, || ask(false));
        assert_eq!(asked.get(), 5);
    }

    #[test]
    fn a_listing_is_repeated_only_while_nothing_it_saw_can_have_changed() {
        let scan = FdScan {
            open: 12,
            above_limit: 0,
            ..FdScan::default()
        };
        let mut kinds = FdKinds::default();
        kinds.start(Some(4));
        kinds.remember(12, 1024, &scan, false);
        kinds.start(Some(4));
        assert_eq!(kinds.repeat(12, 1024), Some((12, 0)));
        // One more open, the limit moved, or a kernel that gives no count: listed again.
        assert_eq!(kinds.repeat(13, 1024), None);
        assert_eq!(kinds.repeat(12, 512), None);
        assert_eq!(kinds.repeat(0, 1024), None);
        // A number freed (the generation moved): listed again.
        kinds.start(Some(5));
        assert_eq!(kinds.repeat(12, 1024), None);
        // A GPU's descriptor (its fdinfo is read afresh) or no tracer: never repeated.
        kinds.remember(12, 1024, &scan, true);
        assert_eq!(kinds.repeat(12, 1024), None);
        kinds.start(None);
        kinds.remember(12, 1024, &scan, false);
        assert_eq!(kinds.repeat(12, 1024), None);
    }

    #[test]
    fn the_kernel_counts_the_open_descriptors_as_the_listing_does() {
        let dir = File::open("/proc/self/fd").unwrap();
        // Other tests' threads open and close files meanwhile: one look alike is
        // enough. read_dir holds one more descriptor while it lists; a size of 0 is
        // a kernel before 6.2.
        let looks: Vec<(u64, u64)> = (0..50)
            .map(|_| {
                let size = listed_size(dir.as_raw_fd());
                let listed = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
                (size, listed)
            })
            .collect();
        assert!(
            looks
                .iter()
                .any(|&(size, listed)| size == 0 || size + 1 == listed),
            "{looks:?}"
        );
    }
}
