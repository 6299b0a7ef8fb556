//! This process's use of the resources allocation consumes, read from `/proc`.

mod fds;
mod maps;
mod text;

use maps::{count_vmas, maps_lines, query_offset};

use crate::drm::{self, DrmUsage};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The process's own readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessUsage {
    /// Resident set size (`VmRSS`), bytes.
    pub rss_bytes: u64,
    /// Virtual size (`VmSize`), bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors (entries of `/proc/self/fd`), the reader's own
    /// included: the kernel counts them against `RLIMIT_NOFILE` like any other.
    pub open_fds: u64,
    /// Of those, descriptors numbered at or above the soft `RLIMIT_NOFILE` (inherited
    /// from a parent with a higher limit): they take none of the slots under it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fds_above_limit: u64,
    /// Memory mappings (lines of `/proc/self/maps`); `None` when this reading did not
    /// walk them ([`UsageReader::read_without_maps`]).
    #[serde(default)]
    pub memory_maps: Option<u64>,
    /// Of the open fds, dma-bufs (exported buffers shared across devices).
    #[serde(default)]
    pub dmabuf_fds: u64,
    /// Their total size, bytes (`size:` of each one's fdinfo).
    #[serde(default)]
    pub dmabuf_bytes: u64,
    /// Threads (`Threads` of `/proc/self/status`, or the links of `/proc/self/task`
    /// less its two: the same count): what `RLIMIT_NPROC` counts, with every other
    /// process of the same user.
    #[serde(default)]
    pub threads: u64,
    /// Locked memory (`VmLck`), bytes: what `RLIMIT_MEMLOCK` bounds; `None` when this
    /// reading did not read `status` ([`UsageReader::add_accounting`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_bytes: Option<u64>,
    /// Data segment (`VmData`: heap and private anonymous mappings), bytes: what
    /// `RLIMIT_DATA` bounds; `None` when this reading did not read `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_bytes: Option<u64>,
    /// The C library's heap in use (`mallinfo2`: `uordblks + hblkhd`), bytes; read in
    /// this process only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_in_use_bytes: Option<u64>,
    /// Freed heap the C library keeps for reuse (`mallinfo2`: `fordblks`), bytes:
    /// RSS that no live allocation holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_free_bytes: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The C library's own heap figures: (in use, kept free).
pub fn heap() -> (u64, u64) {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let m = unsafe { libc::mallinfo2() };
    ((m.uordblks + m.hblkhd) as u64, m.fordblks as u64)
}

/// System-wide memory (`/proc/meminfo`): where kernel-accounted memory shows that no
/// process's RSS does (GPU drivers' GTT, memfds, tmpfs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SystemMemory {
    /// `MemAvailable`, bytes; `None` when this reading did not read `/proc/meminfo`
    /// (the kernel estimates it there only) but took the other two from `sysinfo(2)`
    /// ([`UsageReader::read_light`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// `MemFree`, bytes.
    pub free_bytes: u64,
    /// `Shmem`, bytes.
    pub shmem_bytes: u64,
}

impl SystemMemory {
    /// `MemFree` and `Shmem` from `sysinfo(2)`: the counters `/proc/meminfo` prints,
    /// read in half a microsecond against its six (a 2-core VM, PoCL loaded).
    fn from_sysinfo() -> Option<Self> {
        // SAFETY: sysinfo fills the struct it is given.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sysinfo(&mut info) } != 0 {
            return None;
        }
        let unit = u64::from(info.mem_unit.max(1));
        Some(SystemMemory {
            available_bytes: None,
            free_bytes: info.freeram as u64 * unit,
            shmem_bytes: info.sharedram as u64 * unit,
        })
    }
}

/// One full reading.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Usage {
    /// The process.
    pub process: ProcessUsage,
    /// The system, when `/proc/meminfo` could be read.
    pub system: Option<SystemMemory>,
    /// DRM memory of this process's GPU clients, per device, region and kind.
    pub drm: Vec<DrmUsage>,
    /// Who exported the dma-bufs among the open fds (`exp_name:`), each once, sorted.
    pub dmabuf_exporters: Vec<String>,
    /// The emulated kernel driver's counts, when this process runs under clmulti's
    /// emulation ([`crate::kmd_emu`]).
    pub kernel_counts: Option<crate::kmd_emu::Counts>,
    /// The calls clmulti's tracer counted, by kind, when it is loaded
    /// ([`crate::trace`]).
    pub traced_counts: Option<crate::kmd_emu::Counts>,
    /// Data and stack, bytes: `statm`'s data figure (`VmData` + `VmStk`), the one a
    /// guard reads between samples too (not reported: `process.data_bytes` is
    /// `VmData`).
    pub data_and_stack_bytes: u64,
}

impl ProcessUsage {
    /// Reads the process's figures once, opening `/proc` for this reading only. To
    /// sample repeatedly, and at the descriptor limit, use a [`UsageReader`].
    pub fn read() -> Self {
        UsageReader::open().read().process
    }
}

/// The figures of `/proc/self/statm` the guards watch, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Statm {
    /// Virtual size (what `RLIMIT_AS` bounds).
    pub virtual_bytes: u64,
    /// Resident set size.
    pub rss_bytes: u64,
    /// Data and stack (what `RLIMIT_DATA` bounds, near enough).
    pub data_bytes: u64,
}

/// Reads [`Usage`] through `/proc` descriptors opened once.
///
/// Why: a process that has run out of file descriptors (the very limit clmulti looks
/// for) can no longer open `/proc/self/fd` to count them. The reader opens its files
/// up front and re-reads them from the start each time, counts itself out of the
/// open-fd figure, and keeps one spare descriptor it gives up for a moment when it
/// must open a DRM or dma-buf fd's fdinfo. Without DRM fds it allocates nothing on
/// the heap, so sampling does not disturb the allocator of the runtime being measured.
#[derive(Debug)]
pub struct UsageReader {
    statm: Option<File>,
    status: Option<File>,
    maps: Option<File>,
    /// How to count mappings: `Some(extra)` when `PROCMAP_QUERY` works on `maps` (the
    /// count of VMAs it walks, plus the lines the text has beyond them: the gate
    /// VMA, `[vsyscall]`); `None` reads the text. Found at the first count: a reader
    /// opened for `statm` alone never reads the text. This process's is learnt once
    /// for all its readers ([`UsageReader::learn_mapping_count`]); a fixture's here.
    maps_by_query: std::cell::OnceCell<Option<u64>>,
    meminfo: Option<File>,
    fd_dir: Option<File>,
    fdinfo_dir: Option<File>,
    spare: std::cell::Cell<i32>,
    /// Whether the files are this process's own (their fds appear in the fd listing).
    own_proc: bool,
    /// Whether the process runs under clmulti's kernel-driver emulation, whose counts
    /// are then read with every figure.
    kernel_counts: bool,
    /// clmulti's tracer, when loaded: its counts are read with every figure.
    tracer: Option<crate::trace::Tracer>,
    /// Where `status`, `meminfo` and the descriptor listing are read to, made once.
    scratch: std::cell::RefCell<Box<[u8]>>,
    /// What each descriptor was at the last look.
    fd_kinds: std::cell::RefCell<fds::FdKinds>,
}

fn open_dir(path: &Path) -> Option<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
        .ok()
}

fn open_spare() -> i32 {
    // SAFETY: a NUL-terminated path; the reader owns the descriptor.
    unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }
}

/// How this process's mappings are counted (a reader's `maps_by_query` for this
/// process): a property of the kernel (its gate VMA), learnt once.
fn own_maps_extra() -> Option<u64> {
    static EXTRA: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *EXTRA.get_or_init(|| {
        let _own = crate::trace::own_calls();
        File::open("/proc/self/maps")
            .ok()
            .as_ref()
            .and_then(query_offset)
    })
}

impl UsageReader {
    /// Learns how this process's mappings are counted while it has few: learning
    /// walks the text of every mapping twice (0.5 ms once a runtime has loaded, on a
    /// 2-core machine; tens of microseconds before). Call it before loading one.
    pub fn learn_mapping_count() {
        let _ = own_maps_extra();
    }

    /// Opens this process's `/proc` files.
    pub fn open() -> Self {
        Self::open_at(Path::new("/proc"))
    }

    /// Opens `<proc_root>/self/{statm,status,maps,fd,fdinfo}` and `<proc_root>/meminfo`: a
    /// test gives a fixture tree here.
    pub fn open_at(proc_root: &Path) -> Self {
        let this = proc_root.join("self");
        let maps = File::open(this.join("maps")).ok();
        UsageReader {
            statm: File::open(this.join("statm")).ok(),
            status: File::open(this.join("status")).ok(),
            maps_by_query: std::cell::OnceCell::new(),
            maps,
            meminfo: File::open(proc_root.join("meminfo")).ok(),
            fd_dir: open_dir(&this.join("fd")),
            fdinfo_dir: open_dir(&this.join("fdinfo")),
            spare: std::cell::Cell::new(open_spare()),
            own_proc: proc_root == Path::new("/proc"),
            kernel_counts: proc_root == Path::new("/proc")
                && crate::kmd_emu::read_counts().is_some(),
            tracer: crate::trace::Tracer::find().filter(|_| proc_root == Path::new("/proc")),
            scratch: std::cell::RefCell::new(vec![0; text::SCRATCH].into_boxed_slice()),
            fd_kinds: std::cell::RefCell::default(),
        }
    }

    /// Reads every figure; one whose file could not be opened is zero (or `None`).
    pub fn read(&self) -> Usage {
        let mut usage = self.read_without_maps();
        usage.process.memory_maps = Some(self.memory_maps());
        usage
    }

    /// Reads every figure but the mapping count, which [`memory_maps`](Self::memory_maps)
    /// gives: counting walks every mapping (about 1 us each, 150-200 of them once a
    /// runtime is loaded), several times what the rest of a reading costs.
    pub fn read_without_maps(&self) -> Usage {
        let mut usage = self.read_light();
        self.add_accounting(&mut usage);
        self.add_heap(&mut usage);
        self.add_counts(&mut usage);
        usage
    }

    /// Reads the figures a syscall or a short file gives: `statm`, the descriptors,
    /// the thread count (`task`'s links) and the system's free and shared memory
    /// (`sysinfo`); not `status`'s and `meminfo`'s figures ([`add_accounting`](Self::add_accounting):
    /// the kernel prints 1.5 KiB for each, 14 us of a sample's 16 on a 2-core VM),
    /// the mapping count, the C library's heap ([`add_heap`](Self::add_heap)) nor the
    /// emulation's and the tracer's counts ([`add_counts`](Self::add_counts)). Without
    /// DRM or dma-buf descriptors it allocates nothing: right after a runtime freed
    /// its buffers, the first allocation (or a walk of the heap) pays for sorting
    /// every freed chunk.
    pub fn read_light(&self) -> Usage {
        let _own = self.own();
        let fds = self.scan_fds();
        let statm = self.statm();
        Usage {
            process: ProcessUsage {
                rss_bytes: statm.rss_bytes,
                virtual_bytes: statm.virtual_bytes,
                open_fds: fds.open,
                fds_above_limit: fds.above_limit,
                memory_maps: None,
                dmabuf_fds: fds.dmabuf_fds,
                dmabuf_bytes: fds.dmabuf_bytes,
                threads: self.task_threads().unwrap_or(0),
                locked_bytes: None,
                data_bytes: None,
                heap_in_use_bytes: None,
                heap_free_bytes: None,
            },
            system: self.light_system(),
            drm: drm::summarize(&fds.drm_clients),
            dmabuf_exporters: fds.dmabuf_exporters.into_iter().collect(),
            kernel_counts: None,
            traced_counts: None,
            data_and_stack_bytes: statm.data_bytes,
        }
    }

    /// `status`'s threads, locked memory and data segment, and `meminfo`'s figures
    /// (`MemAvailable` with them) into `usage`.
    pub fn add_accounting(&self, usage: &mut Usage) {
        let _own = self.own();
        let status = self.status();
        let p = &mut usage.process;
        p.threads = status.threads.unwrap_or(p.threads);
        p.locked_bytes = status.locked_bytes;
        p.data_bytes = status.data_bytes;
        usage.system = self.system_memory().or(usage.system);
    }

    /// Threads, from the link count of `task` beside the fd directory (the kernel
    /// adds one per thread to a directory's two): one `fstatat` (1.4 us), no
    /// descriptor taken, so it reads at the descriptor limit too.
    fn task_threads(&self) -> Option<u64> {
        let dir = self.fd_dir.as_ref()?;
        // SAFETY: fstatat fills the struct it is given; the path is NUL-terminated.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `dir` is a directory descriptor this reader owns.
        let done = unsafe { libc::fstatat(dir.as_raw_fd(), c"../task".as_ptr(), &mut st, 0) };
        (done == 0)
            .then_some(st.st_nlink as u64)?
            .checked_sub(2)
            .filter(|&n| n > 0)
    }

    /// The C library's heap figures ([`heap`]) into `usage`, in this process only.
    /// `mallinfo2` walks every free chunk: cheap while a heap grows, dear (5 ms for
    /// 100 000 freed buffers of a lazy runtime) until freed chunks are consolidated.
    pub fn add_heap(&self, usage: &mut Usage) {
        if self.own_proc {
            let (in_use, free) = heap();
            usage.process.heap_in_use_bytes = Some(in_use);
            usage.process.heap_free_bytes = Some(free);
        }
    }

    /// The emulated kernel driver's counts and the tracer's, where they exist, into
    /// `usage` (each a text read and parsed: tens of microseconds).
    pub fn add_counts(&self, usage: &mut Usage) {
        let _own = self.own();
        usage.kernel_counts = self
            .kernel_counts
            .then(|| self.with_spare_slot(crate::kmd_emu::read_counts))
            .flatten();
        usage.traced_counts = self.tracer.map(|t| t.counts());
    }

    /// While it lives, this thread's calls are clmulti's own to the tracer (when
    /// loaded): not counted as the runtime's, never its failing calls.
    fn own(&self) -> Option<crate::trace::OwnCalls> {
        self.tracer.map(|t| t.own())
    }

    /// Runs `open_and_read` with the spare descriptor given up for it (a process at its
    /// descriptor limit has no other slot), and takes the spare back after.
    fn with_spare_slot<T>(&self, open_and_read: impl FnOnce() -> T) -> T {
        let spare = self.spare.replace(-1);
        if spare >= 0 {
            // SAFETY: the reader owns `spare` and closes it once.
            unsafe { libc::close(spare) };
        }
        let result = open_and_read();
        self.spare.set(open_spare());
        result
    }

    /// Resident set size in bytes: one read of `statm`, for guards between samples.
    pub fn rss_bytes(&self) -> u64 {
        self.statm().rss_bytes
    }

    /// Virtual size, resident set size and data segment: one read of `statm`.
    pub fn statm(&self) -> Statm {
        self.read_statm()
    }

    /// The system's memory (available, free, Shmem): one read of `meminfo`.
    pub fn system(&self) -> Option<SystemMemory> {
        self.system_memory()
    }

    /// The system's `Shmem`, bytes: `sysinfo` for this process's reader (what a guard
    /// reads between samples), `meminfo` for a fixture's.
    pub fn shmem_bytes(&self) -> u64 {
        self.light_system().map_or(0, |s| s.shmem_bytes)
    }

    /// MemFree and Shmem without `MemAvailable`: `sysinfo` for this process's reader,
    /// `meminfo` (all three) for a fixture's.
    fn light_system(&self) -> Option<SystemMemory> {
        match self.own_proc {
            true => SystemMemory::from_sysinfo(),
            false => self.system_memory(),
        }
    }

    /// This process's `statm` alone, read now: what a guard checks once, without
    /// opening every file a reader keeps.
    pub fn own_statm() -> Statm {
        let _own = crate::trace::own_calls();
        statm_of(File::open("/proc/self/statm").ok().as_ref())
    }

    fn read_statm(&self) -> Statm {
        statm_of(self.statm.as_ref())
    }

    /// `Threads`, `VmLck` and `VmData` of `status`.
    fn status(&self) -> StatusFigures {
        let mut buf = self.scratch.borrow_mut();
        let len = text::read_into(self.status.as_ref(), &mut buf);
        let [threads, locked, data] = text::fields(&buf[..len], ["Threads", "VmLck", "VmData"]);
        let kib = |v: Option<u64>| v.map(|v| v * 1024);
        StatusFigures {
            threads,
            locked_bytes: kib(locked),
            data_bytes: kib(data),
        }
    }

    /// The process's mappings, counted now (what `vm.max_map_count` bounds).
    pub fn memory_maps(&self) -> u64 {
        let _own = self.own();
        let by_query = match self.own_proc {
            true => own_maps_extra(),
            false => *self
                .maps_by_query
                .get_or_init(|| self.maps.as_ref().and_then(query_offset)),
        };
        if let (Some(extra), Some(maps)) = (by_query, &self.maps) {
            if let Some(vmas) = count_vmas(maps) {
                return vmas + extra;
            }
        }
        self.maps.as_ref().map_or(0, maps_lines)
    }

    fn system_memory(&self) -> Option<SystemMemory> {
        let mut buf = self.scratch.borrow_mut();
        let len = text::read_into(self.meminfo.as_ref(), &mut buf);
        let [available, free, shmem] =
            text::fields(&buf[..len], ["MemAvailable", "MemFree", "Shmem"]);
        Some(SystemMemory {
            available_bytes: Some(available? * 1024),
            free_bytes: free? * 1024,
            shmem_bytes: shmem.unwrap_or(0) * 1024,
        })
    }

    /// How many descriptors clmulti holds open itself now: the reader's own (at most
    /// 7) and clmulti's memfds (`/memfd:clmulti-*`, the child protocol's). They count
    /// against `RLIMIT_NOFILE` like the runtime's; descriptors the process inherited
    /// are left out (a program started the same way inherits them too).
    pub fn clmulti_fd_count(&self) -> u64 {
        let _own = self.own();
        let own = self.own_fds().iter().filter(|&&fd| fd >= 0).count() as u64;
        let memfds = std::fs::read_dir("/proc/self/fd").map_or(0, |dir| {
            dir.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|t| t.to_string_lossy().starts_with("/memfd:clmulti-"))
                })
                .count() as u64
        });
        own + memfds
    }

    fn own_fds(&self) -> [i32; 7] {
        let raw = |f: &Option<File>| f.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        [
            raw(&self.statm),
            raw(&self.status),
            raw(&self.maps),
            raw(&self.meminfo),
            raw(&self.fd_dir),
            raw(&self.fdinfo_dir),
            self.spare.get(),
        ]
    }
}

#[derive(Default)]
struct StatusFigures {
    threads: Option<u64>,
    locked_bytes: Option<u64>,
    data_bytes: Option<u64>,
}

impl Drop for UsageReader {
    fn drop(&mut self) {
        let spare = self.spare.get();
        if spare >= 0 {
            // SAFETY: the reader owns `spare` and closes it once.
            unsafe { libc::close(spare) };
        }
    }
}

/// A `statm` file's figures, in bytes.
fn statm_of(file: Option<&File>) -> Statm {
    let page = crate::host::page_size();
    let mut text = [0u8; 256];
    let len = text::read_into(file, &mut text);
    let mut fields = text[..len]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .map(|f| {
            f.iter()
                .fold(0u64, |acc, d| acc * 10 + u64::from(d.wrapping_sub(b'0')))
        });
    let mut next = || fields.next().unwrap_or(0) * page;
    let virtual_bytes = next();
    let rss_bytes = next();
    let (_shared, _text, _lib) = (next(), next(), next());
    Statm {
        virtual_bytes,
        rss_bytes,
        data_bytes: next(),
    }
}
