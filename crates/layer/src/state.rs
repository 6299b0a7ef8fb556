//! What the layer keeps per buffer and per context, and the policies' effects.

use clmulti_scenario::layer::{FailScope, LayerSettings, Policy};
use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::*;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Resources the layer holds for one buffer, released with it.
#[derive(Debug, Default)]
pub(crate) struct Held {
    context: usize,
    size: u64,
    fds: Vec<OwnedFd>,
    mirror: Option<(u64, u64)>,
    shadows: Vec<usize>,
    resident_on: Vec<usize>,
    /// Counted against byte-budget.
    budgeted: bool,
    /// thread-per-buffer's thread and the flag that ends it.
    thread: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    /// lock-per-buffer's locked mapping: address and length.
    locked: Option<(usize, usize)>,
}

/// What the layer knows of a context.
#[derive(Debug, Default)]
struct Ctx {
    devices: Vec<usize>,
    queues: Vec<usize>,
}

/// The host mirror: one memfd for all buffers, one region each.
#[derive(Debug)]
struct Mirror {
    file: OwnedFd,
    next_offset: u64,
}

pub(crate) struct Layer {
    pub next: &'static cl_icd_dispatch,
    pub settings: Option<LayerSettings>,
    mirror_limit: u64,
    buffers: HashMap<usize, Held>,
    contexts: HashMap<usize, Ctx>,
    resident: HashMap<usize, u64>,
    capacity: HashMap<usize, u64>,
    mirror: Option<Mirror>,
    mirror_bytes: u64,
    /// fail-after's counts: per context, or one under the key 0 for the process.
    created: HashMap<usize, u64>,
    /// byte-budget's live bytes.
    budget_used: u64,
    /// leak's blocks: never freed.
    leaked: Vec<Vec<u8>>,
}

/// Why a policy refused a buffer.
pub(crate) struct Refused(pub cl_int);

fn ram_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

impl Layer {
    pub fn new(next: &'static cl_icd_dispatch) -> Self {
        let settings =
            LayerSettings::read(|k| std::env::var(k).ok()).unwrap_or_else(|(key, message)| {
                eprintln!(
                    "clmulti-layer: {key}: {message}; the layer passes calls through unchanged"
                );
                None
            });
        let mirror_limit = settings
            .as_ref()
            .map_or(0, |s| s.mirror_limit.bytes(ram_bytes()));
        Layer {
            next,
            settings,
            mirror_limit,
            buffers: HashMap::new(),
            contexts: HashMap::new(),
            resident: HashMap::new(),
            capacity: HashMap::new(),
            mirror: None,
            mirror_bytes: 0,
            created: HashMap::new(),
            budget_used: 0,
            leaked: Vec::new(),
        }
    }

    /// The devices of a context, asked once.
    fn devices(&mut self, context: cl_context) -> Vec<usize> {
        let next = self.next;
        self.contexts
            .entry(context as usize)
            .or_insert_with(|| {
                let mut size = 0usize;
                // SAFETY: a live context of the application; size query first.
                let ok = unsafe {
                    next.clGetContextInfo
                        .map(|f| f(context, CL_CONTEXT_DEVICES, 0, ptr::null_mut(), &mut size))
                };
                let mut ids = vec![0usize; size / std::mem::size_of::<usize>()];
                if ok == Some(CL_SUCCESS) && !ids.is_empty() {
                    // SAFETY: `ids` holds `size` bytes.
                    unsafe {
                        next.clGetContextInfo.map(|f| {
                            f(
                                context,
                                CL_CONTEXT_DEVICES,
                                size,
                                ids.as_mut_ptr().cast(),
                                ptr::null_mut(),
                            )
                        })
                    };
                }
                Ctx {
                    devices: ids,
                    queues: Vec::new(),
                }
            })
            .devices
            .clone()
    }

    /// A device's memory: the override, else what the runtime reports.
    fn capacity(&mut self, device: usize) -> u64 {
        if let Some(bytes) = self.settings.as_ref().and_then(|s| s.device_memory) {
            return bytes;
        }
        let next = self.next;
        *self.capacity.entry(device).or_insert_with(|| {
            let mut value: cl_ulong = 0;
            // SAFETY: a live device id; the value is a cl_ulong.
            unsafe {
                next.clGetDeviceInfo.map(|f| {
                    f(
                        device as cl_device_id,
                        CL_DEVICE_GLOBAL_MEM_SIZE,
                        std::mem::size_of::<cl_ulong>(),
                        (&mut value as *mut cl_ulong).cast(),
                        ptr::null_mut(),
                    )
                })
            };
            value
        })
    }

    /// Applies the policies to a buffer the runtime just created; on a refusal,
    /// undoes what the earlier ones did.
    pub fn adopt(&mut self, context: cl_context, mem: cl_mem, size: u64) -> Result<(), Refused> {
        let Some(settings) = self.settings.clone() else {
            return Ok(());
        };
        let devices = self.devices(context);
        let mut held = Held {
            context: context as usize,
            size,
            ..Held::default()
        };
        for &policy in &settings.policies {
            if let Err(refused) = self.apply(policy, &settings, mem, &devices, &mut held) {
                self.undo(&mut held);
                return Err(refused);
            }
        }
        self.buffers.insert(mem as usize, held);
        Ok(())
    }

    /// One policy's effect on one buffer.
    fn apply(
        &mut self,
        policy: Policy,
        settings: &LayerSettings,
        mem: cl_mem,
        devices: &[usize],
        held: &mut Held,
    ) -> Result<(), Refused> {
        let multi = devices.len() >= 2;
        let size = held.size;
        match policy {
            Policy::FdPerPeer if multi => {
                for _ in 1..devices.len() {
                    // SAFETY: a NUL-terminated path; the fd is owned by `held`.
                    let fd = unsafe {
                        libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC)
                    };
                    if fd < 0 {
                        return Err(Refused(CL_OUT_OF_HOST_MEMORY));
                    }
                    // SAFETY: a descriptor just opened, owned from here on.
                    held.fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
                }
            }
            Policy::HostMirror if multi => {
                if self.mirror_bytes + size > self.mirror_limit {
                    return Err(Refused(CL_OUT_OF_HOST_MEMORY));
                }
                held.mirror = Some(self.mirror_write(size)?);
                self.mirror_bytes += size;
            }
            Policy::Eager => {
                let context = held.context as cl_context;
                self.make_resident(context, mem, devices, held)?;
            }
            Policy::FailAfter if multi => {
                let key = match settings.fail_scope {
                    FailScope::Process => 0,
                    FailScope::Context => held.context,
                };
                let count = self.created.entry(key).or_default();
                if *count >= settings.fail_after {
                    return Err(Refused(settings.fail_error));
                }
                *count += 1;
            }
            Policy::ByteBudget if multi => {
                if self.budget_used + size > settings.byte_budget {
                    return Err(Refused(CL_OUT_OF_HOST_MEMORY));
                }
                self.budget_used += size;
                held.budgeted = true;
            }
            Policy::Leak => {
                // Touched, so it is resident; kept past release on purpose.
                self.leaked.push(vec![1u8; size as usize]);
            }
            Policy::ThreadPerBuffer if multi => {
                let stop = Arc::new(AtomicBool::new(false));
                let flag = Arc::clone(&stop);
                let thread = std::thread::Builder::new()
                    .name("clmulti-buffer".into())
                    .stack_size(64 << 10)
                    .spawn(move || {
                        while !flag.load(Ordering::Acquire) {
                            std::thread::park();
                        }
                    })
                    .map_err(|_| Refused(CL_OUT_OF_HOST_MEMORY))?;
                held.thread = Some((stop, thread));
            }
            Policy::LockPerBuffer if multi => held.locked = Some(lock_block(size)?),
            _ => {}
        }
        Ok(())
    }

    /// Writes `size` zero bytes into a fresh region of the memfd: pages the kernel
    /// accounts as Shmem, never mapped into this process.
    fn mirror_write(&mut self, size: u64) -> Result<(u64, u64), Refused> {
        if self.mirror.is_none() {
            // SAFETY: a NUL-terminated name; the fd is owned by the mirror.
            let fd =
                unsafe { libc::memfd_create(c"clmulti-host-mirror".as_ptr(), libc::MFD_CLOEXEC) };
            if fd < 0 {
                return Err(Refused(CL_OUT_OF_HOST_MEMORY));
            }
            self.mirror = Some(Mirror {
                // SAFETY: just created, owned from here on.
                file: unsafe { OwnedFd::from_raw_fd(fd) },
                next_offset: 0,
            });
        }
        let mirror = self.mirror.as_mut().expect("created above");
        let offset = mirror.next_offset;
        static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
        let mut written = 0u64;
        while written < size {
            let n = (size - written).min(ZEROS.len() as u64) as usize;
            // SAFETY: writes from a static buffer of at least `n` bytes.
            let r = unsafe {
                libc::pwrite(
                    mirror.file.as_raw_fd(),
                    ZEROS.as_ptr().cast(),
                    n,
                    (offset + written) as libc::off_t,
                )
            };
            if r <= 0 {
                punch(&mirror.file, offset, written);
                return Err(Refused(CL_OUT_OF_HOST_MEMORY));
            }
            written += r as u64;
        }
        mirror.next_offset += size;
        Ok((offset, size))
    }

    /// Makes `mem` resident on the context's first device and a shadow of its size
    /// resident on each other one, within each device's capacity.
    fn make_resident(
        &mut self,
        context: cl_context,
        mem: cl_mem,
        devices: &[usize],
        held: &mut Held,
    ) -> Result<(), Refused> {
        let size = held.size;
        for &d in devices {
            if self.resident.get(&d).copied().unwrap_or(0) + size > self.capacity(d) {
                return Err(Refused(CL_OUT_OF_HOST_MEMORY));
            }
        }
        let queues = self.queues(context, devices)?;
        let next = self.next;
        for (i, (&device, &queue)) in devices.iter().zip(&queues).enumerate() {
            let target = if i == 0 {
                mem
            } else {
                let mut status = CL_SUCCESS;
                // SAFETY: a live context; no host pointer.
                let shadow = unsafe {
                    next.clCreateBuffer.map_or(ptr::null_mut(), |f| {
                        f(
                            context,
                            CL_MEM_READ_WRITE,
                            size as usize,
                            ptr::null_mut(),
                            &mut status,
                        )
                    })
                };
                if shadow.is_null() {
                    self.undo(held);
                    return Err(Refused(CL_OUT_OF_HOST_MEMORY));
                }
                held.shadows.push(shadow as usize);
                shadow
            };
            let pattern = [0u8; 4];
            let pattern_size = if size % 4 == 0 { 4 } else { 1 };
            // SAFETY: a live queue and buffer of this context; the pattern outlives
            // the blocking finish below.
            let status = unsafe {
                next.clEnqueueFillBuffer.map_or(CL_INVALID_OPERATION, |f| {
                    f(
                        queue as cl_command_queue,
                        target,
                        pattern.as_ptr().cast(),
                        pattern_size,
                        0,
                        size as usize,
                        0,
                        ptr::null(),
                        ptr::null_mut(),
                    )
                })
            };
            // SAFETY: a live queue.
            let finished = unsafe {
                next.clFinish
                    .map_or(CL_INVALID_OPERATION, |f| f(queue as cl_command_queue))
            };
            if status != CL_SUCCESS || finished != CL_SUCCESS {
                self.undo(held);
                return Err(Refused(CL_OUT_OF_HOST_MEMORY));
            }
            *self.resident.entry(device).or_default() += size;
            held.resident_on.push(device);
        }
        Ok(())
    }

    /// The layer's own queue on each device of a context, made once.
    fn queues(&mut self, context: cl_context, devices: &[usize]) -> Result<Vec<usize>, Refused> {
        let next = self.next;
        let ctx = self.contexts.entry(context as usize).or_default();
        if ctx.queues.len() == devices.len() {
            return Ok(ctx.queues.clone());
        }
        for &device in &devices[ctx.queues.len()..] {
            let mut status = CL_SUCCESS;
            // SAFETY: a live context and one of its devices; default properties.
            let queue = unsafe {
                next.clCreateCommandQueueWithProperties
                    .map_or(ptr::null_mut(), |f| {
                        f(context, device as cl_device_id, ptr::null(), &mut status)
                    })
            };
            if queue.is_null() {
                return Err(Refused(CL_OUT_OF_HOST_MEMORY));
            }
            ctx.queues.push(queue as usize);
        }
        Ok(ctx.queues.clone())
    }

    /// Releases what the layer holds for a buffer (leak's block stays).
    fn undo(&mut self, held: &mut Held) {
        held.fds.clear();
        if std::mem::take(&mut held.budgeted) {
            self.budget_used -= held.size;
        }
        if let Some((stop, thread)) = held.thread.take() {
            stop.store(true, Ordering::Release);
            thread.thread().unpark();
            let _ = thread.join();
        }
        if let Some((address, length)) = held.locked.take() {
            // SAFETY: a mapping lock_block made and only this buffer holds.
            unsafe {
                libc::munlock(address as *const libc::c_void, length);
                libc::munmap(address as *mut libc::c_void, length);
            }
        }
        if let (Some((offset, size)), Some(mirror)) = (held.mirror.take(), &self.mirror) {
            punch(&mirror.file, offset, size);
            self.mirror_bytes -= size;
        }
        for shadow in held.shadows.drain(..) {
            // SAFETY: created by the layer, released once.
            unsafe { self.next.clReleaseMemObject.map(|f| f(shadow as cl_mem)) };
        }
        for device in held.resident_on.drain(..) {
            if let Some(r) = self.resident.get_mut(&device) {
                *r = r.saturating_sub(held.size);
            }
        }
    }

    /// The application releases a buffer: drop what the layer holds for it, when
    /// this is its last reference.
    pub fn forget(&mut self, mem: cl_mem) {
        let mut count: cl_uint = 0;
        // SAFETY: a live memory object; the value is a cl_uint.
        unsafe {
            self.next.clGetMemObjectInfo.map(|f| {
                f(
                    mem,
                    CL_MEM_REFERENCE_COUNT,
                    std::mem::size_of::<cl_uint>(),
                    (&mut count as *mut cl_uint).cast(),
                    ptr::null_mut(),
                )
            })
        };
        if count > 1 {
            return;
        }
        if let Some(mut held) = self.buffers.remove(&(mem as usize)) {
            self.undo(&mut held);
        }
    }

    /// The application releases a context: drop the layer's queues when only they
    /// still hold it.
    pub fn forget_context(&mut self, context: cl_context) {
        let Some(ctx) = self.contexts.get(&(context as usize)) else {
            return;
        };
        let mut count: cl_uint = 0;
        // SAFETY: a live context; the value is a cl_uint.
        unsafe {
            self.next.clGetContextInfo.map(|f| {
                f(
                    context,
                    CL_CONTEXT_REFERENCE_COUNT,
                    std::mem::size_of::<cl_uint>(),
                    (&mut count as *mut cl_uint).cast(),
                    ptr::null_mut(),
                )
            })
        };
        if count as usize > 1 + ctx.queues.len() {
            return;
        }
        if let Some(ctx) = self.contexts.remove(&(context as usize)) {
            for queue in ctx.queues {
                // SAFETY: created by the layer, released once.
                unsafe {
                    self.next
                        .clReleaseCommandQueue
                        .map(|f| f(queue as cl_command_queue))
                };
            }
        }
        self.buffers.retain(|_, h| h.context != context as usize);
    }

    /// The device memory the layer reports, when it overrides it.
    pub fn device_memory(&self) -> Option<u64> {
        self.settings.as_ref().and_then(|s| s.device_memory)
    }
}

/// A private anonymous mapping of at least `size` bytes, locked in memory.
fn lock_block(size: u64) -> Result<(usize, usize), Refused> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let length = (size as usize).max(1).div_ceil(page) * page;
    // SAFETY: a fresh anonymous mapping; no file, no fixed address.
    let address = unsafe {
        libc::mmap(
            ptr::null_mut(),
            length,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if address == libc::MAP_FAILED {
        return Err(Refused(CL_OUT_OF_HOST_MEMORY));
    }
    // SAFETY: the mapping just made, `length` bytes.
    if unsafe { libc::mlock(address, length) } != 0 {
        // SAFETY: as above; unmapped once.
        unsafe { libc::munmap(address, length) };
        return Err(Refused(CL_OUT_OF_HOST_MEMORY));
    }
    Ok((address as usize, length))
}

/// Frees a region of the memfd (its pages leave Shmem).
fn punch(file: &OwnedFd, offset: u64, size: u64) {
    if size == 0 {
        return;
    }
    // SAFETY: punching a hole in a file the layer owns.
    unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            size as libc::off_t,
        )
    };
}
