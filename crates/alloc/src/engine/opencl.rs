//! The real backend: contexts, queues and buffers through opencl3.
//!
//! Buffers are kept as raw `cl_mem`, not opencl3's `Buffer`: its drop panics when
//! `clReleaseMemObject` fails, and the leak check must count such failures instead.

use super::allocation_loop::{allocate_each, Backend, Run, RunStop};
use super::host_memory::HostBlock;
use super::pool::Pools;
use super::watchdog::CallTracker;
use clmulti_explain::{Call, LeakCheck};
use clmulti_probe::{ClCode, Device};
use clmulti_scenario::{ContextMode, MemFlag, Scenario, Strategy};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::types::{cl_context, cl_device_id, cl_mem, cl_mem_properties};
use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use std::sync::{Arc, Mutex};

/// `CL_MEM_DEVICE_ID_INTEL` (`cl_intel_create_mem_object_properties`).
pub const CL_MEM_DEVICE_ID_INTEL: u64 = 0x4219;
/// The value NEO used for it before Khronos registered 0x4219 (its private header
/// `opencl/extensions/public/cl_ext_private.h`, NEO 22.x); later NEO takes both.
pub const CL_MEM_DEVICE_ID_INTEL_PRIVATE: u64 = 0x10011;
use clmulti_probe::PIN_EXTENSION;

/// Driver messages from the context callback, kept alive longer than the contexts.
pub(crate) type Messages = Arc<Mutex<Vec<String>>>;

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

pub(crate) struct OpenClBackend {
    strategy: Strategy,
    flags: u64,
    size: u64,
    keep: bool,
    devices: Vec<Device>,
    contexts: Vec<Context>,
    /// Raw context handle per slot: slot `c * devices + d` is device `d` in its
    /// `c`-th context (one per device, or `[context] count` shared ones).
    context_of: Vec<cl_context>,
    /// Contexts each device is in: `[context] count` when shared, else 1.
    contexts_per_device: u64,
    /// Strategy `create`, no host pointer, buffers kept: the hot path of the seed.
    plain_create: bool,
    /// Bytes of the zero pattern for `fill`: the widest the spec allows (128) that
    /// divides the size, so runtimes that fill pattern by pattern take fewer steps.
    fill_pattern_size: usize,
    /// One queue per slot, for strategies that enqueue.
    queues: Vec<CommandQueue>,
    /// Kept buffers, in allocation order. 8 bytes each: the whole per-buffer state.
    live: Vec<cl_mem>,
    /// Host memory behind `USE_HOST_PTR` buffers, parallel to `live`.
    host_blocks: Vec<HostBlock>,
    /// Source of `COPY_HOST_PTR` copies.
    copy_source: Option<HostBlock>,
    use_host_ptr: bool,
    /// The property value `pin` passes (the registered one, or NEO 22's private one).
    pin_property: u64,
    /// clmulti's tracer, when loaded: its failure count read before each buffer's
    /// calls, asked after one fails.
    tracer: Option<clmulti_probe::trace::Tracer>,
    /// What the tracer saw fail inside the call that failed.
    failing_calls: Vec<clmulti_probe::trace::TracedCall>,
    /// Under a system-call observer: when the call that failed began and ended.
    observed: Option<Option<(f64, f64)>>,
    pools: Vec<Pools>,
    tracker: CallTracker,
    leak: LeakCheck,
    _messages: Messages,
}

/// Why the backend could not be built.
pub(crate) enum SetupError {
    /// An OpenCL call failed.
    Failed(ClCode, Call),
    /// The strategy needs what the devices lack.
    Unsupported(String),
}

/// Why `pin` cannot run on a device the run places buffers on, if it cannot.
fn pin_unsupported(scenario: &Scenario, devices: &[Device]) -> Option<String> {
    let alloc = &scenario.allocation;
    if alloc.strategy != Strategy::Pin {
        return None;
    }
    let d = alloc
        .placement
        .used(devices.len())
        .iter()
        .map(|&d| devices[d].info())
        .find(|d| !d.pins_buffers())?;
    Some(format!(
        "strategy \"pin\" needs {PIN_EXTENSION} (or NEO, which takes CL_MEM_DEVICE_ID_INTEL without listing it); device {} ({}) does neither",
        d.selector,
        d.display_name()
    ))
}

/// One context per group of devices, each counted as created.
fn create_contexts(
    groups: Vec<Vec<cl_device_id>>,
    tracker: &CallTracker,
    user_data: *mut c_void,
    leak: &mut LeakCheck,
) -> Result<Vec<Context>, SetupError> {
    let mut contexts = Vec::new();
    for group in groups {
        tracker.enter(Call::CreateContext);
        let context = Context::from_devices(&group, &[], Some(notify), user_data)
            .map_err(|e| SetupError::Failed(ClCode(e.0), Call::CreateContext))?;
        leak.contexts_created += 1;
        contexts.push(context);
    }
    Ok(contexts)
}

/// A queue for `device` in `context`, one of its devices.
fn create_queue(
    context: &Context,
    device: cl_device_id,
    tracker: &CallTracker,
) -> Result<CommandQueue, SetupError> {
    tracker.enter(Call::CreateCommandQueue);
    // SAFETY: the slot's device is one of its context's devices.
    unsafe { CommandQueue::create_with_properties(context, device, 0, 0) }
        .map_err(|e| SetupError::Failed(ClCode(e.0), Call::CreateCommandQueue))
}

/// A pool per device, carved at its base address alignment.
fn device_pools(devices: &[Device], pool_size: u64) -> Vec<Pools> {
    devices
        .iter()
        .map(|d| {
            let align_bits = d
                .info()
                .mem_base_addr_align_bits
                .value()
                .copied()
                .unwrap_or(1024);
            Pools::new(pool_size, u64::from(align_bits / 8))
        })
        .collect()
}

/// The source block of `COPY_HOST_PTR` copies, when the flags ask for them.
fn copy_source(alloc: &clmulti_scenario::Allocation) -> Result<Option<HostBlock>, SetupError> {
    if !alloc.flags.contains(&MemFlag::CopyHostPtr) {
        return Ok(None);
    }
    HostBlock::new(alloc.size_bytes)
        .map(Some)
        .ok_or(SetupError::Failed(
            ClCode::OUT_OF_HOST_MEMORY,
            Call::HostAlloc,
        ))
}

/// The handle list reserved up front (8 bytes a buffer, capped at 64 MiB) so
/// growing it does not land inside the measured loop.
fn reserved_handles(alloc: &clmulti_scenario::Allocation) -> usize {
    match (alloc.keep, alloc.count) {
        (true, clmulti_scenario::Count::Fixed(n)) => n.min(8 << 20) as usize,
        _ => 0,
    }
}

/// The widest zero pattern the spec allows (128 bytes) that divides `size`.
fn fill_pattern_size(size: u64) -> usize {
    [128usize, 64, 32, 16, 8, 4, 2, 1]
        .into_iter()
        .find(|p| size % *p as u64 == 0)
        .unwrap_or(1)
}

impl OpenClBackend {
    pub fn new(
        scenario: &Scenario,
        devices: &[Device],
        messages: &Messages,
        tracker: CallTracker,
    ) -> Result<Self, SetupError> {
        let alloc = &scenario.allocation;
        let ids: Vec<cl_device_id> = devices.iter().map(Device::id).collect();
        if let Some(why) = pin_unsupported(scenario, devices) {
            return Err(SetupError::Unsupported(why));
        }
        let user_data = Arc::as_ptr(messages) as *mut c_void;
        let mut leak = LeakCheck::default();
        let shared = scenario.context_mode == ContextMode::Shared;
        let contexts_per_device = if shared { scenario.context_count } else { 1 };
        let groups: Vec<Vec<cl_device_id>> = if shared {
            (0..contexts_per_device).map(|_| ids.clone()).collect()
        } else {
            ids.iter().map(|d| vec![*d]).collect()
        };
        let contexts = create_contexts(groups, &tracker, user_data, &mut leak)?;
        // Slot `c * devices + d`: device `d` in its `c`-th context.
        let context_index = |slot: usize| {
            if shared {
                slot / ids.len()
            } else {
                slot
            }
        };
        let slots = ids.len() * contexts_per_device as usize;
        let mut queues = Vec::new();
        if matches!(alloc.strategy, Strategy::Fill | Strategy::Migrate) {
            for slot in 0..slots {
                let context = &contexts[context_index(slot)];
                queues.push(create_queue(context, ids[slot % ids.len()], &tracker)?);
                leak.queues_created += 1;
            }
        }
        let has = |f: MemFlag| alloc.flags.contains(&f);
        let copy_source = copy_source(alloc)?;
        let context_of = (0..slots)
            .map(|slot| contexts[context_index(slot)].get())
            .collect();
        let pools = device_pools(devices, alloc.pool_size_bytes.unwrap_or(0));
        tracker.enter(match alloc.strategy {
            Strategy::Pin => Call::CreateBufferWithProperties,
            _ => Call::CreateBuffer,
        });
        Ok(OpenClBackend {
            fill_pattern_size: fill_pattern_size(alloc.size_bytes),
            context_of,
            contexts_per_device,
            plain_create: alloc.strategy == Strategy::Create
                && alloc.keep
                && !has(MemFlag::UseHostPtr)
                && copy_source.is_none(),
            strategy: alloc.strategy,
            flags: alloc.flag_bits(),
            size: alloc.size_bytes,
            keep: alloc.keep,
            devices: devices.to_vec(),
            contexts,
            queues,
            live: Vec::with_capacity(reserved_handles(alloc)),
            host_blocks: Vec::new(),
            copy_source,
            use_host_ptr: has(MemFlag::UseHostPtr),
            pin_property: CL_MEM_DEVICE_ID_INTEL,
            tracer: None,
            failing_calls: Vec::new(),
            observed: std::env::var_os(clmulti_probe::strace::OBSERVED_ENV).map(|_| None),
            pools,
            tracker,
            leak,
            _messages: Arc::clone(messages),
        })
    }

    /// The contexts (shared, or one per device) and, per device, the index of its
    /// first context.
    pub fn contexts(&self) -> (&[Context], Vec<usize>) {
        let shared = self.contexts.len() as u64 == self.contexts_per_device;
        let per_device = (0..self.devices.len())
            .map(|d| if shared { 0 } else { d })
            .collect();
        (&self.contexts, per_device)
    }

    /// The slot (device in one of its contexts) buffer `index` goes to: with several
    /// shared contexts, each round over the devices takes the next context.
    fn slot(&self, index: u64, device: usize) -> usize {
        if self.contexts_per_device == 1 {
            return device;
        }
        let n = self.devices.len() as u64;
        ((index / n) % self.contexts_per_device * n) as usize + device
    }

    /// The kept buffers, in allocation order.
    pub fn live(&self) -> &[cl_mem] {
        &self.live
    }

    /// The devices, in the run's order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    fn create(
        &mut self,
        slot: usize,
        device: usize,
    ) -> Result<(cl_mem, Option<HostBlock>), (ClCode, Call)> {
        self.tracker.enter(match self.strategy {
            Strategy::Pin => Call::CreateBufferWithProperties,
            Strategy::Pool => Call::CreateSubBuffer,
            _ => Call::CreateBuffer,
        });
        let size = self.size as usize;
        let mut block = None;
        let host_ptr: *mut c_void = if self.use_host_ptr {
            let b =
                HostBlock::new(self.size).ok_or((ClCode::OUT_OF_HOST_MEMORY, Call::HostAlloc))?;
            let p = b.as_ptr();
            block = Some(b);
            p
        } else {
            self.copy_source
                .as_ref()
                .map_or(ptr::null_mut(), HostBlock::as_ptr)
        };
        let context = self.context_of[slot];
        let mem = match self.strategy {
            Strategy::Pin => {
                let create = |property: cl_mem_properties| {
                    let props: [cl_mem_properties; 3] =
                        [property, self.devices[device].id() as cl_mem_properties, 0];
                    // SAFETY: a live context; the properties are zero-terminated;
                    // host_ptr is null or a live block of `size` bytes the backend owns.
                    unsafe {
                        clmulti_probe::raw::create_buffer_with_properties(
                            context, &props, self.flags, size, host_ptr,
                        )
                    }
                };
                match create(self.pin_property) {
                    // NEO before 2023 knows the property only by its private value:
                    // tried once, at the first buffer, then kept.
                    Err(code)
                        if code == ClCode::INVALID_PROPERTY
                            && self.pin_property == CL_MEM_DEVICE_ID_INTEL
                            && self.live.is_empty() =>
                    {
                        self.pin_property = CL_MEM_DEVICE_ID_INTEL_PRIVATE;
                        create(self.pin_property)
                    }
                    other => other,
                }
                .map_err(|code| (code, Call::CreateBufferWithProperties))?
            }
            Strategy::Pool => {
                let (mem, new_pool) = self.pools[device].carve(context, self.flags, self.size)?;
                self.leak.pools_created += u64::from(new_pool);
                mem
            }
            // SAFETY: as above, without properties.
            _ => unsafe {
                clmulti_probe::raw::create_buffer_from(context, self.flags, size, host_ptr)
            }
            .map_err(|code| (code, Call::CreateBuffer))?,
        };
        self.tracker.leave();
        Ok((mem, block))
    }

    /// Makes the buffer resident on its device, per strategy.
    fn touch(&mut self, mem: cl_mem, slot: usize) -> Result<(), (ClCode, Call)> {
        let call = match self.strategy {
            Strategy::Fill => Call::EnqueueFillBuffer,
            Strategy::Migrate => Call::EnqueueMigrateMemObjects,
            _ => return Ok(()),
        };
        let queue = &self.queues[slot];
        let pattern = [0u8; 128];
        self.tracker.enter(call);
        // SAFETY: `queue` and `mem` are live and of the same context; the pattern
        // outlives the call (blocking finish below).
        let event = unsafe {
            if self.strategy == Strategy::Fill {
                clmulti_probe::raw::enqueue_fill_buffer(
                    queue.get(),
                    mem,
                    &pattern[..self.fill_pattern_size],
                    self.size as usize,
                )
            } else {
                clmulti_probe::raw::enqueue_migrate_mem_object(queue.get(), mem)
            }
        }
        .map_err(|code| (code, call))?;
        let event = opencl3::event::Event::new(event);
        self.tracker.enter(Call::Finish);
        let finished = queue.finish().map_err(|e| (ClCode(e.0), Call::Finish));
        self.tracker.leave();
        drop(event);
        finished
    }

    fn release(&mut self, mem: cl_mem) {
        // SAFETY: `mem` was created by this backend and is released once.
        match unsafe { clmulti_probe::raw::release_mem_object(mem) } {
            Ok(()) => self.leak.buffers_released += 1,
            Err(code) => self
                .leak
                .release_errors
                .push(format!("clReleaseMemObject: {code}")),
        }
    }

    /// Releases everything, sub-buffers before their pools, queues before contexts.
    pub fn release_all(&mut self) -> LeakCheck {
        self.release_live();
        for pools in &mut self.pools {
            let (released, errors) = pools.release();
            self.leak.pools_released += released;
            self.leak.release_errors.extend(errors);
        }
        self.leak.queues_released += self.queues.len() as u64;
        self.queues.clear();
        self.leak.contexts_released += self.contexts.len() as u64;
        self.contexts.clear();
        let mut leak = std::mem::take(&mut self.leak);
        leak.clean = leak.objects_released();
        leak
    }
}

impl Drop for OpenClBackend {
    fn drop(&mut self) {
        // Only does work if the run unwound before `release_all`.
        if !self.live.is_empty() || !self.contexts.is_empty() {
            self.release_all();
        }
    }
}

impl OpenClBackend {
    /// Traces each buffer's calls with `tracer` (marked before, asked after a failure).
    pub fn trace_with(&mut self, tracer: Option<clmulti_probe::trace::Tracer>) {
        self.tracer = tracer;
    }

    /// What the tracer saw fail inside the call that failed, if one did.
    pub fn failing_calls(&mut self) -> Vec<clmulti_probe::trace::TracedCall> {
        std::mem::take(&mut self.failing_calls)
    }

    /// Under a system-call observer, when the call that failed began and ended (Unix
    /// seconds): the observer's calls in it are the ones inside it.
    pub fn failing_window(&self) -> Option<(f64, f64)> {
        self.observed.flatten()
    }

    /// One buffer; where the tracer is loaded, what it saw fail inside a call that
    /// failed.
    #[inline]
    fn allocate_traced(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)> {
        let Some(tracer) = self.tracer else {
            return self.allocate_one(index, device);
        };
        // A load, not a call: the engine marked once before its contexts.
        let mark = tracer.seq();
        let result = self.allocate_one(index, device);
        if result.is_err() {
            self.failing_calls = tracer.failures_since(mark);
        }
        result
    }

    /// One buffer under a system-call observer: a call that fails keeps when it
    /// began and ended.
    #[inline(never)]
    fn allocate_observed(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)> {
        let began = clmulti_probe::strace::unix_seconds();
        let result = self.allocate_traced(index, device);
        if result.is_err() {
            self.observed = Some(Some((began, clmulti_probe::strace::unix_seconds())));
        }
        result
    }

    #[inline]
    fn allocate_one(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)> {
        let slot = self.slot(index, device);
        if !self.plain_create {
            return self.allocate_with_extras(slot, device);
        }
        // The seed's case, kept lean and inline: a lazy runtime's clCreateBuffer takes
        // ~1600 instructions (PoCL), so every instruction here shows in the rate.
        // SAFETY: a live context of this backend, no host pointer.
        let mem = unsafe {
            clmulti_probe::raw::create_buffer(self.context_of[slot], self.flags, self.size as usize)
        }
        .map_err(|code| (code, Call::CreateBuffer))?;
        self.leak.buffers_created += 1;
        self.live.push(mem);
        Ok(())
    }

    /// A buffer with a host pointer, a touch, or not kept.
    #[inline(never)]
    fn allocate_with_extras(&mut self, slot: usize, device: usize) -> Result<(), (ClCode, Call)> {
        let (mem, block) = self.create(slot, device)?;
        self.leak.buffers_created += 1;
        if let Err(e) = self.touch(mem, slot) {
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
}

impl Backend for OpenClBackend {
    #[inline]
    fn allocate(&mut self, index: u64, device: usize) -> Result<(), (ClCode, Call)> {
        if self.observed.is_some() {
            return self.allocate_observed(index, device);
        }
        self.allocate_traced(index, device)
    }

    fn allocate_run(&mut self, run: &Run<'_>) -> (u64, Option<RunStop>) {
        if !self.plain_create || self.observed.is_some() || self.contexts_per_device != 1 {
            return allocate_each(self, run);
        }
        // The seed's case as a C loop has it: the call, the handle kept, the next
        // device; what else a buffer needs is counted once for the run. (Per buffer,
        // the engine's bookkeeping cost 8 to 15 ns beside a C loop's on a 16-core
        // node, of PoCL's 450 ns and NVIDIA's 1.8 us calls: measured.)
        let (flags, size, tracer) = (self.flags, self.size as usize, self.tracer);
        let (contexts, live) = (&self.context_of, &mut self.live);
        live.reserve(run.count.min(1 << 20) as usize);
        let mut device = run.device;
        let mut stop = None;
        let mut done = 0;
        while done < run.count {
            if let Some(signal) = run.interrupted() {
                stop = Some(RunStop::Interrupted(signal));
                break;
            }
            // A load, not a call: the engine marked once before its contexts.
            let mark = tracer.map(|t| t.seq());
            // SAFETY: a live context of this backend, no host pointer.
            match unsafe { clmulti_probe::raw::create_buffer(contexts[device], flags, size) } {
                Ok(mem) => live.push(mem),
                Err(code) => {
                    if let (Some(tracer), Some(mark)) = (tracer, mark) {
                        self.failing_calls = tracer.failures_since(mark);
                    }
                    stop = Some(RunStop::Failed(code, Call::CreateBuffer));
                    break;
                }
            }
            done += 1;
            device = run.next_device(device);
        }
        self.leak.buffers_created += done;
        (done, stop)
    }

    fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn release_live(&mut self) {
        self.tracker.enter(Call::ReleaseMemObject);
        for mem in std::mem::take(&mut self.live) {
            self.release(mem);
        }
        self.host_blocks.clear();
    }
}
