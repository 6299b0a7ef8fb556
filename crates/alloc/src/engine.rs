//! The allocation loop and its two backends: real OpenCL, and a dry one that
//! measures the engine's own bookkeeping without calling OpenCL.

use crate::costs;
use crate::report::*;
use clmulti_probe::{
    ClCode, DeviceChoice, DeviceInfo, DeviceRequest, DeviceTypeFilter, HostLimits,
    PlatformSelector, UsageReader,
};
use clmulti_scenario::{
    AxpyCheck, ContextMode, Count, DeviceSet, DeviceType, MemFlag, Placement, Platform, RssLimit,
    Scenario, Strategy,
};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::types::{cl_device_id, cl_mem, cl_mem_properties};
use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// `CL_MEM_DEVICE_ID_INTEL` (`cl_intel_create_mem_object_properties`).
pub const CL_MEM_DEVICE_ID_INTEL: u64 = 0x4219;
const PIN_EXTENSION: &str = "cl_intel_create_mem_object_properties";
/// Check the RSS guard at least this often, in requested bytes...
const RSS_GUARD_BYTES: u64 = 1 << 30;
/// ... and in allocations.
const RSS_GUARD_ALLOCATIONS: u64 = 4096;
/// Read the clock for the time guard every this many allocations (a power of two).
const CLOCK_EVERY: u64 = 64;
/// Buffers in the dry bookkeeping measurement: the run's count, within these bounds.
const BOOKKEEPING_BUFFERS: std::ops::RangeInclusive<u64> = 1_000..=100_000;

/// Why a scenario could not be run at all (as opposed to a run that stopped).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No OpenCL runtime: the tool cannot work here.
    #[error(transparent)]
    Probe(#[from] clmulti_probe::ProbeError),
    /// The scenario asks for devices that do not exist.
    #[error("{file}: [devices]: {source}")]
    Devices {
        /// The scenario file.
        file: String,
        /// What was missing.
        source: clmulti_probe::SelectError,
    },
}

/// Two buffers on one device, handed to a check after the loop (e.g. dAxpy).
#[derive(Debug)]
pub struct BufferPair<'a> {
    /// The context the buffers belong to.
    pub context: &'a Context,
    /// The device they were placed on.
    pub device: cl_device_id,
    /// Index of that device among the selected ones.
    pub device_index: usize,
    /// First buffer (x).
    pub x: cl_mem,
    /// Second buffer (y).
    pub y: cl_mem,
    /// Size of each, bytes.
    pub bytes: u64,
}

/// Checks one pair of buffers; `Err` says what went wrong.
pub type BufferCheck<'a> = dyn FnMut(&BufferPair<'_>) -> Result<(), String> + 'a;

/// Runs one scenario run in this process and reports what it found.
///
/// The scenario's `env` and `limits` are *not* applied here: they must be in force
/// before the OpenCL runtime loads, so the caller runs the scenario in a fresh
/// process (`clmulti run` does) and calls [`apply_limits`](crate::apply_limits) there.
pub fn run(
    scenario: &Scenario,
    check: Option<&mut BufferCheck<'_>>,
) -> Result<Report, EngineError> {
    let platforms = clmulti_probe::platforms()?;
    let selection =
        clmulti_probe::select(&platforms, &device_request(scenario)).map_err(|source| {
            EngineError::Devices {
                file: scenario.file.clone(),
                source,
            }
        })?;
    let devices = selection.devices;
    let host_limits = HostLimits::read();
    let mut memory = DeviceMemory::open(&devices);
    let mut report = Report::without_measurements(scenario, StopReason::Completed);
    report.platform = selection.platform_name;
    report.host_limits = host_limits.clone();
    report.device_memory_source = memory.source;
    if selection.fell_back_to_any_type {
        report.warnings.push(Warning {
            kind: WarningKind::FellBackToAnyType,
            message: format!(
                "no {:?} device found; ran on {} instead",
                scenario.devices.device_type,
                devices
                    .iter()
                    .map(|d| d.display_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            advice: "set devices.fallback = \"none\" to fail instead".into(),
        });
    }

    let messages: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut backend = match OpenClBackend::new(scenario, &devices, &messages) {
        Ok(b) => b,
        Err((code, call)) => {
            report.stop = StopReason::Failed {
                error: code.into(),
                call,
                index: 0,
            };
            report.devices = devices;
            report.driver_messages = take(&messages);
            return Ok(report);
        }
    };
    // Opened before the loop: at the descriptor limit nothing new can be opened.
    let usage = UsageReader::open();
    let before = usage.read();
    let mut outcome = if let Some(reason) = backend.unsupported.take() {
        LoopOutcome {
            stop: StopReason::Unsupported { reason },
            ..LoopOutcome::default()
        }
    } else {
        allocation_loop(scenario, &mut backend, &mut memory, &host_limits, &usage)
    };
    if let (Some(check), true) = (check, scenario.axpy_check != AxpyCheck::None) {
        report.axpy_check = Some(backend.check_pairs(scenario, check));
    }
    let mut leak_check = backend.release_all();
    leak_check.before = before;
    leak_check.after_release = usage.read();

    report.devices = devices;
    report.buffers = outcome.buffers;
    report.bytes_requested = outcome.bytes;
    report.elapsed_seconds = outcome.elapsed_seconds;
    report.sampling_seconds = outcome.sampling_seconds;
    let allocating = outcome.elapsed_seconds - outcome.sampling_seconds;
    report.allocations_per_second =
        (outcome.buffers > 0 && allocating > 0.0).then(|| outcome.buffers as f64 / allocating);
    report.costs = costs::costs(&outcome.samples, &host_limits, &report.devices);
    report.prediction = costs::prediction(&report.costs, &outcome.stop, outcome.buffers);
    report.samples = std::mem::take(&mut outcome.samples);
    report.stop = outcome.stop;
    report.leak_check = leak_check;
    report.bookkeeping = measure_bookkeeping(
        scenario,
        outcome
            .buffers
            .clamp(*BOOKKEEPING_BUFFERS.start(), *BOOKKEEPING_BUFFERS.end()),
    );
    report.driver_messages = take(&messages);
    add_warnings(scenario, &mut report);
    Ok(report)
}

fn take(messages: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *messages.lock().unwrap_or_else(|e| e.into_inner()))
}

fn add_warnings(scenario: &Scenario, report: &mut Report) {
    if report.device_memory_source == DeviceMemorySource::None {
        report.warnings.push(Warning {
            kind: WarningKind::NoDeviceMemorySource,
            message: "no device-memory readings on these devices".into(),
            advice:
                "on NVIDIA build with `--features nvml`; AMD devices report free memory themselves"
                    .into(),
        });
    }
    if scenario.allocation.strategy == Strategy::Create {
        report.warnings.push(Warning {
            kind: WarningKind::LazyAllocationLikely,
            message: "create-only buffers may hold no memory yet: NVIDIA, AMD and PoCL allocate at first use".into(),
            advice: "run the same scenario with strategy = \"fill\" or \"migrate\" to force residency".into(),
        });
    }
    if report.samples.len() < 3 && report.buffers > 0 {
        report.warnings.push(Warning {
            kind: WarningKind::FewSamples,
            message: format!(
                "only {} samples: per-buffer costs are rough",
                report.samples.len()
            ),
            advice: "lower sampling.every".into(),
        });
    }
}

fn device_request(scenario: &Scenario) -> DeviceRequest {
    let d = &scenario.devices;
    DeviceRequest {
        platform: match &d.platform {
            Platform::Auto => PlatformSelector::Auto,
            Platform::Index(i) => PlatformSelector::Index(*i),
            Platform::Name(n) => PlatformSelector::Name(n.clone()),
        },
        device_type: match d.device_type {
            DeviceType::Gpu => DeviceTypeFilter::Gpu,
            DeviceType::Cpu => DeviceTypeFilter::Cpu,
            DeviceType::Accelerator => DeviceTypeFilter::Accelerator,
            DeviceType::All => DeviceTypeFilter::All,
        },
        devices: match &d.set {
            DeviceSet::Count(n) => DeviceChoice::Count(*n),
            DeviceSet::Indices(v) => DeviceChoice::Indices(v.clone()),
        },
        fallback_to_any_type: d.fallback_to_any_type,
    }
}

/// Which device buffer `index` is for.
fn placed_device(placement: Placement, index: u64, devices: usize) -> usize {
    match placement {
        Placement::RoundRobin => (index % devices as u64) as usize,
        Placement::Device(d) => d,
    }
}

/// What the loop needs from a backend.
trait Backend {
    /// Allocates buffer `index` on `device`, then keeps or releases it.
    fn allocate(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)>;
    /// Number of devices.
    fn device_count(&self) -> usize;
}

#[derive(Debug, Default)]
struct LoopOutcome {
    buffers: u64,
    bytes: u64,
    elapsed_seconds: f64,
    sampling_seconds: f64,
    samples: Vec<Sample>,
    stop: StopReason,
}

fn allocation_loop(
    scenario: &Scenario,
    backend: &mut impl Backend,
    memory: &mut DeviceMemory,
    host: &HostLimits,
    usage: &UsageReader,
) -> LoopOutcome {
    let alloc = &scenario.allocation;
    let size = alloc.size_bytes;
    let target = match alloc.count {
        Count::Fixed(n) => n,
        Count::UntilFailure => u64::MAX,
    };
    let max_rss = match scenario.guards.max_rss {
        RssLimit::Bytes(b) => b,
        RssLimit::FractionOfRam(f) => (host.ram_bytes.unwrap_or(u64::MAX) as f64 * f) as u64,
    };
    let max_total = scenario.guards.max_total_bytes.unwrap_or(u64::MAX);
    let max_seconds = scenario.guards.max_seconds;
    let devices = backend.device_count();
    let every = scenario.sample_every;

    let start = Instant::now();
    let mut out = LoopOutcome::default();
    // Samples are timed apart so the allocation rate excludes the instrumentation.
    let sample = |out: &mut LoopOutcome, memory: &mut DeviceMemory| {
        let taken = Instant::now();
        let sample = Sample {
            allocations: out.buffers,
            bytes_requested: out.bytes,
            elapsed_seconds: (taken - start).as_secs_f64(),
            host: usage.read(),
            device_used_bytes: memory.read(),
        };
        out.samples.push(sample);
        out.sampling_seconds += taken.elapsed().as_secs_f64();
    };
    let over = |guard: GuardKind, value: f64, limit: f64| {
        (value > limit).then_some(StopReason::Guard {
            guard,
            value,
            limit,
        })
    };
    sample(&mut out, memory);
    let (mut checked_bytes, mut checked_count) = (0u64, 0u64);
    // Counters instead of `%` on the hot path: a 64-bit division costs ~10 ns, a
    // sizeable share of a lazy runtime's ~70 ns clCreateBuffer.
    let mut next_sample = every;
    let mut round_robin = 0usize;

    while out.buffers < target {
        let index = out.buffers;
        let next_total = out.bytes.saturating_add(size);
        let seconds = if index & (CLOCK_EVERY - 1) == 0 {
            start.elapsed().as_secs_f64()
        } else {
            0.0
        };
        // A sample reads RSS too; between samples the guard reads it on its own only
        // when samples are further apart than the guard allows.
        let rss = if out.bytes - checked_bytes >= RSS_GUARD_BYTES
            || index - checked_count >= RSS_GUARD_ALLOCATIONS
        {
            (checked_bytes, checked_count) = (out.bytes, index);
            let reading = Instant::now();
            let rss = usage.rss_bytes();
            out.sampling_seconds += reading.elapsed().as_secs_f64();
            rss
        } else {
            0
        };
        let stop = over(
            GuardKind::MaxTotalBytes,
            next_total as f64,
            max_total as f64,
        )
        .or_else(|| over(GuardKind::MaxSeconds, seconds, max_seconds))
        .or_else(|| over(GuardKind::MaxRss, rss as f64, max_rss as f64));
        if let Some(stop) = stop {
            out.stop = stop;
            break;
        }
        let device = match alloc.placement {
            Placement::RoundRobin => {
                let d = round_robin;
                round_robin = if d + 1 == devices { 0 } else { d + 1 };
                d
            }
            Placement::Device(d) => d,
        };
        if let Err((code, call)) = backend.allocate(index, device) {
            out.stop = StopReason::Failed {
                error: code.into(),
                call,
                index,
            };
            break;
        }
        out.buffers += 1;
        out.bytes = next_total;
        if out.buffers == next_sample {
            next_sample += every;
            sample(&mut out, memory);
            (checked_bytes, checked_count) = (out.bytes, out.buffers);
            let rss = out.samples.last().map_or(0, |s| s.host.rss_bytes);
            if let Some(stop) = over(GuardKind::MaxRss, rss as f64, max_rss as f64) {
                out.stop = stop;
                break;
            }
        }
    }
    out.elapsed_seconds = start.elapsed().as_secs_f64();
    if out.samples.last().map(|s| s.allocations) != Some(out.buffers) || out.buffers == 0 {
        sample(&mut out, memory);
    }
    out
}

/// Host memory the engine owns for `USE_HOST_PTR` / `COPY_HOST_PTR` buffers.
struct HostBlock {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl HostBlock {
    fn new(size: u64) -> Option<Self> {
        let layout = std::alloc::Layout::from_size_align(usize::try_from(size).ok()?, 4096).ok()?;
        // SAFETY: the layout has a non-zero size (validation rejects size 0).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(HostBlock { ptr, layout })
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

struct Pool {
    mem: cl_mem,
    used: u64,
    size: u64,
}

/// The real backend: contexts, queues and buffers through opencl3.
struct OpenClBackend {
    strategy: Strategy,
    flags: u64,
    size: u64,
    keep: bool,
    devices: Vec<cl_device_id>,
    contexts: Vec<Context>,
    /// Raw context handle per device (the shared one, or the device's own).
    context_of: Vec<opencl3::types::cl_context>,
    /// Strategy `create`, no host pointer, buffers kept: the hot path of the seed.
    plain_create: bool,
    /// Bytes of the zero pattern for `fill`: the widest the spec allows (128) that
    /// divides the size, so runtimes that fill pattern by pattern take fewer steps.
    fill_pattern_size: usize,
    shared: bool,
    queues: Vec<CommandQueue>,
    /// Kept buffers, in allocation order. 8 bytes each: the whole per-buffer state.
    live: Vec<cl_mem>,
    /// Host memory behind `USE_HOST_PTR` buffers, parallel to `live`.
    host_blocks: Vec<HostBlock>,
    /// Source of `COPY_HOST_PTR` copies.
    copy_source: Option<HostBlock>,
    use_host_ptr: bool,
    pools: Vec<Vec<Pool>>,
    pool_size: u64,
    sub_buffer_align: Vec<u64>,
    unsupported: Option<String>,
    leak: LeakCheck,
    /// Keeps the callback's target alive until the contexts are gone.
    _messages: Arc<Mutex<Vec<String>>>,
}

/// The context callback: driver messages go into the report.
extern "C" fn notify(
    errinfo: *const c_char,
    _private: *const c_void,
    _cb: usize,
    user_data: *mut c_void,
) {
    if errinfo.is_null() || user_data.is_null() {
        return;
    }
    // SAFETY: the runtime passes a NUL-terminated message; `user_data` is the
    // `Mutex` the backend keeps alive (through an `Arc`) longer than its contexts.
    let (text, sink) = unsafe {
        (
            CStr::from_ptr(errinfo).to_string_lossy().into_owned(),
            &*(user_data as *const Mutex<Vec<String>>),
        )
    };
    if let Ok(mut sink) = sink.lock() {
        if sink.len() < 1000 {
            sink.push(text);
        }
    }
}

impl OpenClBackend {
    fn new(
        scenario: &Scenario,
        devices: &[DeviceInfo],
        messages: &Arc<Mutex<Vec<String>>>,
    ) -> Result<Self, (ClCode, Call)> {
        let alloc = &scenario.allocation;
        let ids: Vec<cl_device_id> = devices
            .iter()
            .map(|d| d.handle().map_or(ptr::null_mut(), |h| h.as_raw()))
            .collect();
        let user_data = Arc::as_ptr(messages) as *mut c_void;
        let mut leak = LeakCheck::default();
        let groups: Vec<Vec<cl_device_id>> = match scenario.context_mode {
            ContextMode::Shared => vec![ids.clone()],
            ContextMode::PerDevice => ids.iter().map(|d| vec![*d]).collect(),
        };
        let mut contexts = Vec::new();
        for group in groups {
            let context = Context::from_devices(&group, &[], Some(notify), user_data)
                .map_err(|e| (ClCode(e.0), Call::CreateContext))?;
            leak.contexts_created += 1;
            contexts.push(context);
        }
        let shared = scenario.context_mode == ContextMode::Shared;
        let needs_queues = matches!(alloc.strategy, Strategy::Fill | Strategy::Migrate);
        let mut queues = Vec::new();
        if needs_queues {
            for (i, id) in ids.iter().enumerate() {
                let context = &contexts[if shared { 0 } else { i }];
                // SAFETY: `id` is one of the context's devices.
                let queue = unsafe { CommandQueue::create_with_properties(context, *id, 0, 0) }
                    .map_err(|e| (ClCode(e.0), Call::CreateCommandQueue))?;
                leak.queues_created += 1;
                queues.push(queue);
            }
        }
        let placed: Vec<usize> = match alloc.placement {
            Placement::RoundRobin => (0..devices.len()).collect(),
            Placement::Device(d) => vec![d],
        };
        let unsupported = (alloc.strategy == Strategy::Pin)
            .then(|| {
                placed
                    .iter()
                    .map(|&d| &devices[d])
                    .find(|d| !d.has_extension(PIN_EXTENSION))
                    .map(|d| {
                        format!(
                            "strategy \"pin\" needs {PIN_EXTENSION} (Intel); device {} ({}) does not expose it. \
                             Use per-device contexts to keep a buffer on one device instead",
                            d.selector,
                            d.display_name()
                        )
                    })
            })
            .flatten();
        let has = |f: MemFlag| alloc.flags.contains(&f);
        let copy_source = if has(MemFlag::CopyHostPtr) {
            Some(HostBlock::new(alloc.size_bytes).ok_or((ClCode(-6), Call::HostAlloc))?)
        } else {
            None
        };
        // Reserve the handle list up front (8 bytes a buffer, capped at 64 MiB) so
        // growing it does not land inside the measured loop.
        let reserve = match (alloc.keep, alloc.count) {
            (true, Count::Fixed(n)) => n.min(8 << 20) as usize,
            _ => 0,
        };
        let context_of = (0..ids.len())
            .map(|d| contexts[if shared { 0 } else { d }].get())
            .collect();
        let plain_create = alloc.strategy == Strategy::Create
            && alloc.keep
            && !has(MemFlag::UseHostPtr)
            && copy_source.is_none();
        let fill_pattern_size = [128usize, 64, 32, 16, 8, 4, 2, 1]
            .into_iter()
            .find(|p| alloc.size_bytes % *p as u64 == 0)
            .unwrap_or(1);
        Ok(OpenClBackend {
            fill_pattern_size,
            context_of,
            plain_create,
            strategy: alloc.strategy,
            flags: alloc.flag_bits(),
            size: alloc.size_bytes,
            keep: alloc.keep,
            sub_buffer_align: devices
                .iter()
                .map(|d| {
                    u64::from(d.mem_base_addr_align_bits.value().copied().unwrap_or(1024) / 8)
                        .max(1)
                })
                .collect(),
            devices: ids,
            contexts,
            shared,
            queues,
            live: Vec::with_capacity(reserve),
            host_blocks: Vec::new(),
            copy_source,
            use_host_ptr: has(MemFlag::UseHostPtr),
            pools: (0..devices.len()).map(|_| Vec::new()).collect(),
            pool_size: alloc.pool_size_bytes.unwrap_or(0),
            unsupported,
            leak,
            _messages: Arc::clone(messages),
        })
    }

    fn context(&self, device: usize) -> &Context {
        &self.contexts[if self.shared { 0 } else { device }]
    }

    fn create(&mut self, device: usize) -> Result<(cl_mem, Option<HostBlock>), (ClCode, Call)> {
        let size = self.size as usize;
        let mut block = None;
        let host_ptr: *mut c_void = if self.use_host_ptr {
            let b = HostBlock::new(self.size).ok_or((ClCode(-6), Call::HostAlloc))?;
            let p = b.ptr.cast();
            block = Some(b);
            p
        } else {
            self.copy_source
                .as_ref()
                .map_or(ptr::null_mut(), |b| b.ptr.cast())
        };
        let context = self.context(device).get();
        let mem = match self.strategy {
            Strategy::Pin => {
                let props: [cl_mem_properties; 3] = [
                    CL_MEM_DEVICE_ID_INTEL,
                    self.devices[device] as cl_mem_properties,
                    0,
                ];
                // SAFETY: valid context; properties are zero-terminated; host_ptr is
                // null or a live block of `size` bytes the backend owns.
                unsafe {
                    opencl3::memory::create_buffer_with_properties(
                        context,
                        props.as_ptr(),
                        self.flags,
                        size,
                        host_ptr,
                    )
                }
                .map_err(|e| (ClCode(e), Call::CreateBufferWithProperties))?
            }
            Strategy::Pool => return self.carve(device).map(|m| (m, None)),
            // SAFETY: as above, without properties.
            _ => unsafe { opencl3::memory::create_buffer(context, self.flags, size, host_ptr) }
                .map_err(|e| (ClCode(e), Call::CreateBuffer))?,
        };
        Ok((mem, block))
    }

    fn carve(&mut self, device: usize) -> Result<cl_mem, (ClCode, Call)> {
        let align = self.sub_buffer_align[device];
        let size = self.size;
        let needs_new = self.pools[device]
            .last()
            .is_none_or(|p| p.used.div_ceil(align) * align + size > p.size);
        if needs_new {
            let context = self.context(device).get();
            // SAFETY: valid context, no host pointer (validation forbids host flags with pools).
            let mem = unsafe {
                opencl3::memory::create_buffer(
                    context,
                    self.flags,
                    self.pool_size as usize,
                    ptr::null_mut(),
                )
            }
            .map_err(|e| (ClCode(e), Call::CreateBuffer))?;
            self.leak.pools_created += 1;
            self.pools[device].push(Pool {
                mem,
                used: 0,
                size: self.pool_size,
            });
        }
        let pool = self.pools[device]
            .last_mut()
            .ok_or((ClCode(-30), Call::CreateSubBuffer))?;
        let origin = pool.used.div_ceil(align) * align;
        let region = opencl3::types::cl_buffer_region {
            origin: origin as usize,
            size: size as usize,
        };
        // SAFETY: `pool.mem` is live; the region lies inside it and its origin is
        // aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN.
        let mem = unsafe {
            opencl3::memory::create_sub_buffer(
                pool.mem,
                0,
                opencl3::memory::CL_BUFFER_CREATE_TYPE_REGION,
                (&region as *const opencl3::types::cl_buffer_region).cast(),
            )
        }
        .map_err(|e| (ClCode(e), Call::CreateSubBuffer))?;
        pool.used = origin + size;
        Ok(mem)
    }

    /// Makes the buffer resident on its device, per strategy.
    fn touch(&mut self, mem: cl_mem, device: usize) -> Result<(), (ClCode, Call)> {
        let queue = match self.strategy {
            Strategy::Fill | Strategy::Migrate => self.queues[device].get(),
            _ => return Ok(()),
        };
        let pattern = [0u8; 128];
        let pattern_size = self.fill_pattern_size;
        // SAFETY: `queue` and `mem` are live and of the same context; the pattern
        // outlives the call (blocking finish below).
        let event = unsafe {
            if self.strategy == Strategy::Fill {
                opencl3::command_queue::enqueue_fill_buffer(
                    queue,
                    mem,
                    pattern.as_ptr().cast(),
                    pattern_size,
                    0,
                    self.size as usize,
                    0,
                    ptr::null(),
                )
                .map_err(|e| (ClCode(e), Call::EnqueueFillBuffer))?
            } else {
                opencl3::command_queue::enqueue_migrate_mem_object(
                    queue,
                    1,
                    &mem,
                    0,
                    0,
                    ptr::null(),
                )
                .map_err(|e| (ClCode(e), Call::EnqueueMigrateMemObjects))?
            }
        };
        let event = opencl3::event::Event::new(event);
        let finished = opencl3::command_queue::finish(queue).map_err(|e| (ClCode(e), Call::Finish));
        drop(event);
        finished
    }

    fn release(&mut self, mem: cl_mem) {
        // SAFETY: `mem` was created by this backend and is released once.
        match unsafe { opencl3::memory::release_mem_object(mem) } {
            Ok(()) => self.leak.buffers_released += 1,
            Err(e) => self
                .leak
                .release_errors
                .push(format!("clReleaseMemObject: {}", ClCode(e))),
        }
    }

    fn check_pairs(&self, scenario: &Scenario, check: &mut BufferCheck<'_>) -> AxpyCheckReport {
        let devices = self.devices.len();
        let mut by_device: Vec<Vec<cl_mem>> = vec![Vec::new(); devices];
        for (i, mem) in self.live.iter().enumerate() {
            by_device[placed_device(scenario.allocation.placement, i as u64, devices)].push(*mem);
        }
        let pairs: Vec<(usize, cl_mem, cl_mem)> = by_device
            .iter()
            .enumerate()
            .flat_map(|(d, list)| list.chunks_exact(2).map(move |c| (d, c[0], c[1])))
            .collect();
        let chosen: Vec<&(usize, cl_mem, cl_mem)> = match scenario.axpy_check {
            AxpyCheck::None => Vec::new(),
            AxpyCheck::All => pairs.iter().collect(),
            AxpyCheck::Sample(n) => {
                let n = (n as usize).min(pairs.len());
                (0..n).map(|k| &pairs[k * pairs.len() / n.max(1)]).collect()
            }
        };
        let mut report = AxpyCheckReport::default();
        for &&(device, x, y) in &chosen {
            report.pairs_checked += 1;
            let pair = BufferPair {
                context: self.context(device),
                device: self.devices[device],
                device_index: device,
                x,
                y,
                bytes: self.size,
            };
            match check(&pair) {
                Ok(()) => report.pairs_ok += 1,
                Err(e) if report.failures.len() < 20 => {
                    report.failures.push(format!("device {device}: {e}"))
                }
                Err(_) => {}
            }
        }
        if chosen.is_empty() {
            report
                .failures
                .push("no pair of kept buffers on one device to check".into());
        }
        report
    }

    /// Releases everything, sub-buffers before their pools, queues before contexts.
    fn release_all(&mut self) -> LeakCheck {
        for mem in std::mem::take(&mut self.live) {
            self.release(mem);
        }
        self.host_blocks.clear();
        for pool in std::mem::take(&mut self.pools).into_iter().flatten() {
            // SAFETY: created by `carve`, released once.
            match unsafe { opencl3::memory::release_mem_object(pool.mem) } {
                Ok(()) => self.leak.pools_released += 1,
                Err(e) => self
                    .leak
                    .release_errors
                    .push(format!("clReleaseMemObject (pool): {}", ClCode(e))),
            }
        }
        self.leak.queues_released += self.queues.len() as u64;
        self.queues.clear();
        self.leak.contexts_released += self.contexts.len() as u64;
        self.contexts.clear();
        let mut leak = std::mem::take(&mut self.leak);
        leak.clean = leak.release_errors.is_empty()
            && leak.buffers_created == leak.buffers_released
            && leak.pools_created == leak.pools_released
            && leak.queues_created == leak.queues_released
            && leak.contexts_created == leak.contexts_released;
        leak
    }
}

impl Drop for OpenClBackend {
    fn drop(&mut self) {
        // Only does work if the run panicked before `release_all`.
        if !self.live.is_empty() || self.pools.iter().any(|p| !p.is_empty()) {
            self.release_all();
        }
    }
}

impl Backend for OpenClBackend {
    fn allocate(&mut self, _index: u64, device: usize) -> Result<(), (ClCode, Call)> {
        if self.plain_create {
            // The seed's case, kept lean: a lazy runtime's clCreateBuffer takes ~1600
            // instructions (PoCL), so every instruction here shows in the rate.
            // SAFETY: a valid context of this backend, no host pointer.
            let mem = unsafe {
                opencl3::memory::create_buffer(
                    self.context_of[device],
                    self.flags,
                    self.size as usize,
                    ptr::null_mut(),
                )
            }
            .map_err(|e| (ClCode(e), Call::CreateBuffer))?;
            self.leak.buffers_created += 1;
            self.live.push(mem);
            return Ok(());
        }
        let (mem, block) = self.create(device)?;
        self.leak.buffers_created += 1;
        if let Err(e) = self.touch(mem, device) {
            self.release(mem);
            return Err(e);
        }
        if self.keep {
            self.live.push(mem);
            self.host_blocks.extend(block);
        } else {
            self.release(mem);
        }
        Ok(())
    }

    fn device_count(&self) -> usize {
        self.devices.len()
    }
}

/// The engine's loop with every OpenCL call replaced by nothing: what remains is
/// the bookkeeping it adds to each allocation it measures.
struct DryBackend {
    live: Vec<cl_mem>,
    devices: usize,
    keep: bool,
}

impl Backend for DryBackend {
    fn allocate(&mut self, index: u64, _device: usize) -> Result<(), (ClCode, Call)> {
        if self.keep {
            // A distinct non-null stand-in for a handle; never dereferenced.
            self.live
                .push(std::hint::black_box((index as usize + 1) as cl_mem));
        }
        Ok(())
    }

    fn device_count(&self) -> usize {
        self.devices
    }
}

/// Measures the loop's own cost per buffer over `buffers` dry allocations: heap
/// bytes and nanoseconds (sampling included, as the scenario asks for it).
pub fn measure_bookkeeping(scenario: &Scenario, buffers: u64) -> Bookkeeping {
    let mut dry = scenario.clone();
    dry.allocation.count = Count::Fixed(buffers);
    dry.guards.max_total_bytes = None;
    dry.guards.max_rss = RssLimit::Bytes(u64::MAX);
    dry.guards.max_seconds = f64::MAX;
    let devices = scenario.devices.set.len();
    let mut backend = DryBackend {
        live: Vec::new(),
        devices,
        keep: scenario.allocation.keep,
    };
    let mut memory = DeviceMemory::none(devices);
    let host = HostLimits::read();
    let start = Instant::now();
    let outcome = allocation_loop(&dry, &mut backend, &mut memory, &host, &UsageReader::open());
    let seconds = start.elapsed().as_secs_f64();
    let heap = backend.live.capacity() * std::mem::size_of::<cl_mem>()
        + outcome.samples.capacity() * std::mem::size_of::<Sample>()
        + outcome
            .samples
            .iter()
            .map(|s| s.device_used_bytes.capacity() * std::mem::size_of::<Option<u64>>())
            .sum::<usize>();
    Bookkeeping {
        bytes_per_buffer: heap as f64 / outcome.buffers.max(1) as f64,
        ns_per_buffer: seconds * 1e9 / outcome.buffers.max(1) as f64,
        measured_buffers: outcome.buffers,
    }
}

/// Device-memory readings, from the best source the devices offer.
struct DeviceMemory {
    source: DeviceMemorySource,
    devices: Vec<DeviceInfo>,
    #[cfg(feature = "nvml")]
    nvml: Option<clmulti_probe::NvmlMemory>,
}

impl DeviceMemory {
    fn none(devices: usize) -> Self {
        DeviceMemory {
            source: DeviceMemorySource::None,
            devices: Vec::with_capacity(devices),
            #[cfg(feature = "nvml")]
            nvml: None,
        }
    }

    fn open(devices: &[DeviceInfo]) -> Self {
        #[cfg(feature = "nvml")]
        if let Some(nvml) = clmulti_probe::NvmlMemory::open() {
            if devices.iter().all(|d| nvml.used_bytes(d).is_some()) {
                return DeviceMemory {
                    source: DeviceMemorySource::Nvml,
                    devices: devices.to_vec(),
                    nvml: Some(nvml),
                };
            }
        }
        let amd = devices.iter().all(|d| {
            d.has_extension("cl_amd_device_attribute_query")
                && d.handle().and_then(|h| h.free_memory_amd()).is_some()
        });
        DeviceMemory {
            source: if amd && !devices.is_empty() {
                DeviceMemorySource::AmdFreeMemory
            } else {
                DeviceMemorySource::None
            },
            devices: devices.to_vec(),
            #[cfg(feature = "nvml")]
            nvml: None,
        }
    }

    fn read(&mut self) -> Vec<Option<u64>> {
        match self.source {
            DeviceMemorySource::None => Vec::new(),
            #[cfg(feature = "nvml")]
            DeviceMemorySource::Nvml => match &self.nvml {
                Some(nvml) => self.devices.iter().map(|d| nvml.used_bytes(d)).collect(),
                None => Vec::new(),
            },
            #[cfg(not(feature = "nvml"))]
            DeviceMemorySource::Nvml => Vec::new(),
            DeviceMemorySource::AmdFreeMemory => self
                .devices
                .iter()
                .map(|d| {
                    let total = *d.global_mem_bytes.value()?;
                    let free = d.handle()?.free_memory_amd()?;
                    Some(total.saturating_sub(free))
                })
                .collect(),
        }
    }
}
