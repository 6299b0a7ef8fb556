use super::*;
use crate::config::{Config, B580};

struct FakeHost;
impl Host for FakeHost {
    fn new_dmabuf_fd(&self, _: bool) -> Result<i32, Errno> {
        Ok(77)
    }
    fn now_ns(&self) -> u64 {
        1_000_000_000
    }
    fn pin_pages(&self, _: u64, _: u64, _: bool) {}
}

fn driver(devices: usize) -> Driver {
    let mut d = Driver::new(Config::of(&B580, devices, 12 << 30, 32 << 30));
    for i in 0..devices {
        d.open(5 + i as i32, i);
    }
    d
}

fn call<T>(d: &mut Driver, fd: i32, request: u64, arg: &mut T) -> Result<i32, Errno> {
    // SAFETY: `arg` is the request's structure with valid embedded pointers.
    match unsafe { render_ioctl(d, &FakeHost, fd, request, (arg as *mut T).cast()) } {
        Ok(Reply::Done(v)) => Ok(v),
        Ok(Reply::Wait(w)) => w.wait(&FakeHost),
        Err(e) => Err(e),
    }
}

fn query(d: &mut Driver, id: u32) -> Result<Vec<u8>, Errno> {
    let mut q = XeDeviceQuery {
        query: id,
        ..Default::default()
    };
    call(d, 5, DRM_IOCTL_XE_DEVICE_QUERY, &mut q)?;
    let mut data = vec![0u8; q.size as usize];
    q.data = data.as_mut_ptr() as u64;
    call(d, 5, DRM_IOCTL_XE_DEVICE_QUERY, &mut q)?;
    Ok(data)
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(data[at..at + 8].try_into().unwrap())
}

fn create(d: &mut Driver, fd: i32, size: u64, placement: u32, flags: u32) -> Result<u32, Errno> {
    let mut c = XeGemCreate {
        size,
        placement,
        flags,
        cpu_caching: DRM_XE_GEM_CPU_CACHING_WC,
        ..Default::default()
    };
    call(d, fd, DRM_IOCTL_XE_GEM_CREATE, &mut c)?;
    Ok(c.handle)
}

fn vm(d: &mut Driver, fd: i32) -> u32 {
    let mut c = XeVmCreate {
        flags: DRM_XE_VM_CREATE_FLAG_LR_MODE,
        ..Default::default()
    };
    call(d, fd, DRM_IOCTL_XE_VM_CREATE, &mut c).unwrap();
    c.vm_id
}

/// One bind operation `(op, handle)` over `(address, range)`, with a user fence.
fn bind(
    d: &mut Driver,
    (fd, vm): (i32, u32),
    (op, obj): (u32, u32),
    (addr, range): (u64, u64),
    fence: &mut u64,
) -> Result<i32, Errno> {
    let sync = XeSync {
        sync_type: DRM_XE_SYNC_TYPE_USER_FENCE,
        flags: DRM_XE_SYNC_FLAG_SIGNAL,
        addr: fence as *mut u64 as u64,
        timeline_value: 7,
        ..Default::default()
    };
    let mut b = XeVmBind {
        vm_id: vm,
        num_binds: 1,
        bind: XeVmBindOp {
            obj,
            op,
            addr,
            range,
            flags: DRM_XE_VM_BIND_FLAG_IMMEDIATE,
            ..Default::default()
        },
        num_syncs: 1,
        syncs: &sync as *const XeSync as u64,
        ..Default::default()
    };
    call(d, fd, DRM_IOCTL_XE_VM_BIND, &mut b)
}

#[test]
fn the_version_the_config_and_the_regions_are_a_b580s_on_xe() {
    let mut d = driver(1);
    let mut name = [0u8; 2];
    let mut v = DrmVersionArg::default();
    v.0.name = name.as_mut_ptr();
    v.0.name_len = 2;
    call(&mut d, 5, DRM_IOCTL_VERSION, &mut v).unwrap();
    assert_eq!(&name, b"xe");
    let config = query(&mut d, DRM_XE_DEVICE_QUERY_CONFIG).unwrap();
    assert_eq!(u64_at(&config, 8) & 0xffff, 0xe20b);
    assert_eq!(u64_at(&config, 8 + 8 * 3), 48, "VA bits");
    let regions = query(&mut d, DRM_XE_DEVICE_QUERY_MEM_REGIONS).unwrap();
    assert_eq!(u32::from_ne_bytes(regions[0..4].try_into().unwrap()), 2);
    assert_eq!(u64_at(&regions, 8 + 88 + 8), 12 << 30, "VRAM");
    let gts = query(&mut d, DRM_XE_DEVICE_QUERY_GT_LIST).unwrap();
    assert_eq!(gts.len(), 8 + 2 * 96);
    // A wrong size is refused, as xe refuses it.
    let mut q = XeDeviceQuery {
        query: DRM_XE_DEVICE_QUERY_ENGINES,
        size: 3,
        data: regions.as_ptr() as u64,
        ..Default::default()
    };
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_XE_DEVICE_QUERY, &mut q),
        Err(libc::EINVAL)
    );
    q.query = 99;
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_XE_DEVICE_QUERY, &mut q),
        Err(libc::EINVAL)
    );
}

#[test]
fn deferred_objects_take_pages_at_their_first_bind_and_others_at_creation() {
    let mut d = driver(1);
    let eager = create(&mut d, 5, 1 << 20, 0b10, 0).unwrap();
    let lazy = create(
        &mut d,
        5,
        1 << 20,
        0b10,
        DRM_XE_GEM_CREATE_FLAG_DEFER_BACKING,
    )
    .unwrap();
    let local = |d: &Driver| d.counts().regions[&(0, crate::model::Region::Local)];
    assert_eq!(local(&d).objects, 2);
    assert_eq!(local(&d).deferred, 1);
    assert_eq!(local(&d).resident_bytes, 1 << 20, "only the eager one");
    let vm = vm(&mut d, 5);
    let mut fence = 0u64;
    bind(
        &mut d,
        (5, vm),
        (DRM_XE_VM_BIND_OP_MAP, lazy),
        (0x10_0000, 1 << 20),
        &mut fence,
    )
    .unwrap();
    assert_eq!(fence, 7, "the bind's user fence is written");
    assert_eq!(local(&d).resident_bytes, 2 << 20);
    assert_eq!(d.counts().xe.binds.live, 1);
    // Closing the handle leaves the bound object alive until it is unbound.
    let mut close = DrmGemClose {
        handle: lazy,
        pad: 0,
    };
    call(&mut d, 5, DRM_IOCTL_GEM_CLOSE, &mut close).unwrap();
    assert_eq!(local(&d).objects, 2);
    bind(
        &mut d,
        (5, vm),
        (DRM_XE_VM_BIND_OP_UNMAP, 0),
        (0x10_0000, 1 << 20),
        &mut fence,
    )
    .unwrap();
    assert_eq!(local(&d).objects, 1);
    assert_eq!(d.counts().xe.binds.live, 0);
    let _ = eager;
}

#[test]
fn creation_is_checked_as_xe_checks_it() {
    let mut d = driver(1);
    assert_eq!(
        create(&mut d, 5, 1 << 20, 0, 0),
        Err(libc::EINVAL),
        "no placement"
    );
    assert_eq!(
        create(&mut d, 5, 1 << 20, 0b100, 0),
        Err(libc::EINVAL),
        "no third region"
    );
    assert_eq!(
        create(&mut d, 5, 1000, 0b10, 0),
        Err(libc::EINVAL),
        "not page-sized"
    );
    assert_eq!(create(&mut d, 5, 13 << 30, 0b10, 0), Err(libc::E2BIG));
    let mut wb = XeGemCreate {
        size: 4096,
        placement: 0b10,
        cpu_caching: DRM_XE_GEM_CPU_CACHING_WB,
        ..Default::default()
    };
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_XE_GEM_CREATE, &mut wb),
        Err(libc::EINVAL),
        "WB in VRAM"
    );
    wb.placement = 0b01;
    call(&mut d, 5, DRM_IOCTL_XE_GEM_CREATE, &mut wb).unwrap();
}

#[test]
fn a_bind_splits_what_it_overlaps_and_an_exported_object_is_imported_on_a_peer() {
    let mut d = driver(2);
    let a = create(&mut d, 5, 3 << 12, 0b01, 0).unwrap();
    let vm = vm(&mut d, 5);
    let mut fence = 0;
    bind(
        &mut d,
        (5, vm),
        (DRM_XE_VM_BIND_OP_MAP, a),
        (0x1000, 3 << 12),
        &mut fence,
    )
    .unwrap();
    // Unbinding the middle page leaves two mappings of the object.
    bind(
        &mut d,
        (5, vm),
        (DRM_XE_VM_BIND_OP_UNMAP, 0),
        (0x2000, 0x1000),
        &mut fence,
    )
    .unwrap();
    let views = d.xe_views(5, vm).unwrap();
    let spans: Vec<(u64, u64)> = views.iter().map(|v| (v.gpu_address, v.size)).collect();
    assert_eq!(spans, [(0x1000, 0x1000), (0x3000, 0x1000)]);
    assert_eq!(d.counts().xe.binds.live, 2);
    let mut prime = DrmPrimeHandle {
        handle: a,
        flags: DRM_CLOEXEC,
        fd: -1,
    };
    call(&mut d, 5, DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut prime).unwrap();
    assert_eq!(prime.fd, 77);
    let mut import = DrmPrimeHandle {
        handle: 0,
        flags: 0,
        fd: 77,
    };
    call(&mut d, 6, DRM_IOCTL_PRIME_FD_TO_HANDLE, &mut import).unwrap();
    assert_eq!(d.counts().imports.live, 1);
    let usage = d.xe_client_usage(6).unwrap();
    assert_eq!(
        usage.regions["gtt"].total,
        3 << 12,
        "the importer's own object, in GTT"
    );
}

#[test]
fn a_vm_with_a_queue_stays_and_a_fence_wait_holds_or_times_out() {
    let mut d = driver(1);
    let vm = vm(&mut d, 5);
    let eci = XeEngineClassInstance {
        engine_class: DRM_XE_ENGINE_CLASS_COMPUTE,
        ..Default::default()
    };
    let mut q = XeExecQueueCreate {
        width: 1,
        num_placements: 1,
        vm_id: vm,
        instances: &eci as *const _ as u64,
        ..Default::default()
    };
    call(&mut d, 5, DRM_IOCTL_XE_EXEC_QUEUE_CREATE, &mut q).unwrap();
    let mut destroy = XeVmDestroy {
        vm_id: vm,
        ..Default::default()
    };
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_XE_VM_DESTROY, &mut destroy),
        Err(libc::EBUSY)
    );
    let fence = 5u64;
    let mut w = XeWaitUserFence {
        addr: &fence as *const u64 as u64,
        op: DRM_XE_UFENCE_WAIT_OP_GTE,
        value: 5,
        mask: u64::MAX,
        timeout: 1000,
        ..Default::default()
    };
    call(&mut d, 5, DRM_IOCTL_XE_WAIT_USER_FENCE, &mut w).unwrap();
    w.value = 6;
    w.timeout = 0;
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_XE_WAIT_USER_FENCE, &mut w),
        Err(libc::ETIME)
    );
    w.addr += 4;
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_XE_WAIT_USER_FENCE, &mut w),
        Err(libc::EINVAL)
    );
}

#[test]
fn the_b580_is_xes_model_and_its_engines_come_from_the_table() {
    use crate::config::{Hardware, Kernel};
    for model in clmulti_contract::kmd_emu::MODELS {
        assert_eq!(
            Hardware::of(model).model,
            model,
            "{} has its entry",
            model.key
        );
    }
    assert_eq!(B580.kernel(), Kernel::Xe);
    let mut d = driver(1);
    // Video and video-enhance engines on the media GT (1), the others on the main GT.
    let engines = query(&mut d, DRM_XE_DEVICE_QUERY_ENGINES).unwrap();
    let listed: Vec<[u16; 3]> = engines[8..]
        .chunks(32)
        .map(|e| [0, 2, 4].map(|at| u16::from_ne_bytes([e[at], e[at + 1]])))
        .collect();
    assert_eq!(listed.len(), B580.engines.len());
    assert!(listed.contains(&[DRM_XE_ENGINE_CLASS_COMPUTE, 0, 0]));
    assert!(listed.contains(&[DRM_XE_ENGINE_CLASS_VIDEO_DECODE, 1, 1]));
}
