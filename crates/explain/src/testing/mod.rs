//! Hand-built reports for tests and examples: a run's setup, readings that grow
//! linearly, and how it stopped, concluded as a real run would be. Not part of the
//! stable API.

use crate::report::{Call, ErrorCode, LeakCheck, Report, Sample, StopReason};
use clmulti_probe::{ClCode, DeviceInfo, HostLimits, ProcessUsage, SystemMemory};
use clmulti_scenario::{ContextMode, Count, DeviceSet, Rlimit, Scenario, Strategy};

/// A device as a probe would report it: a GPU of `global` bytes.
pub fn device(index: usize, global: u64) -> DeviceInfo {
    serde_json::from_value(serde_json::json!({
        "index": index, "selector": format!("0:{index}"), "name": "Test GPU", "vendor": "test",
        "vendor_id": 1, "device_version": "OpenCL 3.0", "driver_version": "1",
        "opencl_c_version": "OpenCL C 3.0", "kind": "gpu", "compute_units": 8,
        "global_mem_bytes": global, "max_alloc_bytes": global / 4,
        "host_unified_memory": false, "global_mem_cache_bytes": 0,
        "mem_base_addr_align_bits": 1024, "max_work_group_size": 256, "extensions": [],
        "pci_bus": null, "uuid": null
    }))
    .expect("a valid device")
}

/// Host limits of a 64 GiB machine with soft and hard descriptor limits, run as an
/// ordinary user.
pub fn host(nofile_soft: u64, nofile_hard: u64) -> HostLimits {
    HostLimits {
        ram_bytes: Some(64 << 30),
        cgroup_memory_bytes: None,
        slurm_memory_bytes: None,
        nofile_soft: Some(nofile_soft),
        nofile_hard: Some(nofile_hard),
        address_space_soft: None,
        address_space_hard: None,
        memlock_soft: Some(8 << 20),
        memlock_hard: Some(8 << 20),
        nproc_soft: Some(100_000),
        nproc_hard: Some(100_000),
        data_soft: None,
        data_hard: None,
        max_map_count: Some(65530),
        threads_max: Some(1 << 20),
        root: false,
        may_raise_hard: false,
        nr_open: Some(1 << 20),
        page_size_bytes: 4096,
        cgroup_memory_v1: false,
        cgroup_pids: None,
    }
}

/// One linear reading, named: `base + per_buffer * live`.
type Reading = (&'static str, fn(&mut Sample, f64), f64, f64);

/// A run being built.
#[derive(Clone)]
pub struct Build {
    /// Its report, before the readings and the end.
    pub report: Report,
    readings: Vec<Reading>,
    every: u64,
    seconds_per_buffer: f64,
}

impl std::fmt::Debug for Build {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Build")
            .field("run", &self.report.run_name)
            .finish()
    }
}

/// A run of `devices` 16 GiB GPUs in `mode`, strategy create, 1 MiB buffers, under
/// soft/hard descriptor limits 1024/4096; RSS grows 2 KiB and fds 0 per buffer
/// until told otherwise.
pub fn run(devices: usize, mode: ContextMode) -> Build {
    let mut scenario: Scenario =
        clmulti_scenario::load_str("[allocation]\ncount = 10000\n", "test.toml")
            .expect("a valid scenario")
            .remove(0);
    scenario.devices.set = DeviceSet::Count(devices);
    scenario.context_mode = mode;
    scenario.name = format!("{devices}-{}", mode.name());
    let mut report = Report::new(&scenario, StopReason::Completed, host(1024, 4096), None);
    report.platform = "Test Platform".into();
    report.devices = (0..devices).map(|i| device(i, 16 << 30)).collect();
    Build {
        report,
        readings: vec![(
            "rss",
            |s, v| s.host.rss_bytes = v as u64,
            64.0 * 1048576.0,
            2048.0,
        )],
        every: 100,
        seconds_per_buffer: 1e-6,
    }
}

impl Build {
    fn set(mut self, name: &'static str, f: fn(&mut Sample, f64), base: f64, per: f64) -> Self {
        self.readings.retain(|r| r.0 != name);
        self.readings.push((name, f, base, per));
        self
    }

    /// The strategy.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.report.scenario.allocation.strategy = strategy;
        self
    }

    /// Open fds: `base` before the first buffer, `per_buffer` more each.
    pub fn fds(self, base: f64, per_buffer: f64) -> Self {
        self.set("fds", |s, v| s.host.open_fds = v as u64, base, per_buffer)
    }

    /// Host RSS, bytes.
    pub fn rss(self, base: f64, per_buffer: f64) -> Self {
        self.set("rss", |s, v| s.host.rss_bytes = v as u64, base, per_buffer)
    }

    /// Virtual size, bytes.
    pub fn virtual_size(self, base: f64, per_buffer: f64) -> Self {
        self.set(
            "virtual",
            |s, v| s.host.virtual_bytes = v as u64,
            base,
            per_buffer,
        )
    }

    /// Threads.
    pub fn threads(self, base: f64, per_buffer: f64) -> Self {
        self.set(
            "threads",
            |s, v| s.host.threads = v as u64,
            base,
            per_buffer,
        )
    }

    /// The system's Shmem, bytes.
    pub fn shmem(self, base: f64, per_buffer: f64) -> Self {
        self.set(
            "shmem",
            |s, v| {
                if let Some(system) = &mut s.system {
                    system.shmem_bytes = v as u64;
                }
            },
            base,
            per_buffer,
        )
    }

    /// A soft (and hard) resource limit in force.
    pub fn limit(mut self, which: Rlimit, soft: u64, hard: Option<u64>) -> Self {
        let h = &mut self.report.host_limits;
        let (s, hd) = match which {
            Rlimit::NoFile => (&mut h.nofile_soft, &mut h.nofile_hard),
            Rlimit::AddressSpace => (&mut h.address_space_soft, &mut h.address_space_hard),
            Rlimit::MemLock => (&mut h.memlock_soft, &mut h.memlock_hard),
            Rlimit::NProc => (&mut h.nproc_soft, &mut h.nproc_hard),
            Rlimit::Data => (&mut h.data_soft, &mut h.data_hard),
        };
        *s = Some(soft);
        *hd = hard;
        self
    }

    /// Runs as root (exempt from RLIMIT_NPROC and RLIMIT_MEMLOCK).
    pub fn as_root(mut self) -> Self {
        self.report.host_limits.root = true;
        self
    }

    /// Seconds each buffer takes (default a microsecond): where a time limit falls.
    pub fn seconds_per_buffer(mut self, seconds: f64) -> Self {
        self.seconds_per_buffer = seconds;
        self
    }

    /// Samples every `n` buffers (default 100).
    pub fn every(mut self, n: u64) -> Self {
        self.every = n.max(1);
        self
    }

    fn sample(&self, live: u64, allocations: u64) -> Sample {
        let mut s = Sample {
            allocations,
            live: (live != allocations).then_some(live),
            bytes_requested: allocations * self.report.scenario.allocation.size_bytes,
            elapsed_seconds: allocations as f64 * self.seconds_per_buffer,
            host: ProcessUsage {
                locked_bytes: Some(0),
                data_bytes: Some(0),
                ..ProcessUsage::default()
            },
            system: Some(SystemMemory {
                available_bytes: Some(32 << 30),
                free_bytes: 32 << 30,
                shmem_bytes: 0,
            }),
            drm: Vec::new(),
            device_used_bytes: vec![None; self.report.devices.len()],
            dmabuf_exporters: Vec::new(),
            kernel_counts: None,
            traced_counts: None,
        };
        for (_, set, base, per) in &self.readings {
            set(&mut s, base + per * live as f64);
        }
        s
    }

    fn finish(mut self, buffers: u64, stop: StopReason) -> Report {
        let mut samples: Vec<Sample> = (0..buffers)
            .step_by(self.every as usize)
            .map(|n| self.sample(n, n))
            .collect();
        samples.push(self.sample(buffers, buffers));
        let before = samples[0].clone();
        let mut after = self.sample(0, buffers);
        after.live = Some(0);
        self.report.leak_check = LeakCheck {
            buffers_created: buffers,
            buffers_released: buffers,
            contexts_created: 1,
            contexts_released: 1,
            before: before.host,
            after_release: after.host,
            after_release_sample: Some(after),
            ..LeakCheck::default()
        };
        self.report.scenario.allocation.count = Count::Fixed(10_000.max(buffers));
        self.report.samples = samples;
        self.report.buffers = buffers;
        self.report.elapsed_seconds = buffers as f64 * self.seconds_per_buffer;
        self.report.bytes_requested = buffers * self.report.scenario.allocation.size_bytes;
        self.report.stop = stop;
        self.report.conclude();
        self.report
    }

    /// Ends with every buffer allocated.
    pub fn completed(self, buffers: u64) -> Report {
        self.finish(buffers, StopReason::Completed)
    }

    /// Ends with `CL_OUT_OF_HOST_MEMORY (-6)` in `clCreateBuffer` after `buffers`.
    pub fn failed_at(self, buffers: u64) -> Report {
        self.finish(
            buffers,
            StopReason::Failed {
                error: ErrorCode::from(ClCode::OUT_OF_HOST_MEMORY),
                call: Call::CreateBuffer,
                index: buffers,
            },
        )
    }

    /// Ends killed by `signal` after `buffers`.
    pub fn crashed(self, buffers: u64, signal: i32) -> Report {
        self.finish(buffers, StopReason::crashed(signal))
    }
}

/// A shared two-device context that failed after `buffers` with one more open fd
/// per buffer, `base` fds open before the first, under a soft RLIMIT_NOFILE of
/// `nofile` (hard 4096).
pub fn failed_at_limit(buffers: u64, nofile: u64, base: u64) -> Report {
    run(2, ContextMode::Shared)
        .fds(base as f64, 1.0)
        .limit(Rlimit::NoFile, nofile, Some(4096))
        .failed_at(buffers)
}

/// A re-run that failed after `buffers`, nothing growing.
pub fn rerun_failing_at(buffers: u64) -> Report {
    run(2, ContextMode::Shared).failed_at(buffers)
}

pub mod fault_space;
