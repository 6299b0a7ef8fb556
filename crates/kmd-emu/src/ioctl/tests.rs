use super::*;

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

fn call<T>(driver: &mut Driver, fd: i32, request: u64, arg: &mut T) -> Result<i32, Errno> {
    // SAFETY: `arg` is the request's structure; these tests pass no embedded
    // pointers but valid ones.
    unsafe { render_ioctl(driver, &FakeHost, fd, request, (arg as *mut T).cast()) }
}

#[test]
fn the_version_and_the_chipset_are_an_a770s_on_i915() {
    let mut d = Driver::new(Config::new(1, 16 << 30, 32 << 30));
    d.open(5, 0);
    let mut name = [0u8; 5];
    let mut v = DrmVersion {
        version_major: 0,
        version_minor: 0,
        version_patchlevel: 0,
        name_len: 4,
        name: name.as_mut_ptr(),
        date_len: 0,
        date: std::ptr::null_mut(),
        desc_len: 0,
        desc: std::ptr::null_mut(),
    };
    call(&mut d, 5, DRM_IOCTL_VERSION, &mut v).unwrap();
    assert_eq!(&name[..4], b"i915");
    assert_eq!(v.desc_len, "Intel Graphics".len());
    let mut value = 0i32;
    let mut get = GetParam {
        param: I915_PARAM_CHIPSET_ID,
        value: &mut value,
    };
    call(&mut d, 5, DRM_IOCTL_I915_GETPARAM, &mut get).unwrap();
    assert_eq!(value, 0x56a0);
    get.param = 9999;
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_I915_GETPARAM, &mut get),
        Err(libc::EINVAL)
    );
    assert_eq!(call(&mut d, 5, 0xdead, &mut get), Err(libc::ENOTTY));
}

#[test]
fn queries_answer_in_two_passes_and_unknown_ones_put_the_errno_in_the_length() {
    let config = Config::new(1, 16 << 30, 32 << 30);
    let mut items = [
        QueryItem {
            query_id: DRM_I915_QUERY_MEMORY_REGIONS,
            length: 0,
            flags: 0,
            data_ptr: 0,
        },
        QueryItem {
            query_id: 42,
            length: 0,
            flags: 0,
            data_ptr: 0,
        },
        QueryItem {
            query_id: DRM_I915_QUERY_TOPOLOGY_INFO,
            length: 0,
            flags: 0,
            data_ptr: 0,
        },
    ];
    let q = Query {
        num_items: 3,
        flags: 0,
        items_ptr: items.as_mut_ptr() as u64,
    };
    // SAFETY: three valid items without data pointers (the size pass).
    unsafe { query(&config, &q).unwrap() };
    assert_eq!(items[0].length, 16 + 2 * 88);
    assert_eq!(items[1].length, -libc::EINVAL);
    assert_eq!(items[2].length, 16 + 1 + 4 + 32 * 2);
    let mut data = vec![0u8; items[0].length as usize];
    items[0].data_ptr = data.as_mut_ptr() as u64;
    let q = Query {
        num_items: 1,
        flags: 0,
        items_ptr: items.as_mut_ptr() as u64,
    };
    // SAFETY: the item's buffer holds the length it states.
    unsafe { query(&config, &q).unwrap() };
    let local_class = u16::from_ne_bytes([data[16 + 88], data[16 + 89]]);
    let local_size = u64::from_ne_bytes(data[16 + 88 + 8..16 + 88 + 16].try_into().unwrap());
    assert_eq!(
        (local_class, local_size),
        (I915_MEMORY_CLASS_DEVICE, 16 << 30)
    );
}

#[test]
fn export_takes_a_descriptor_from_the_host_and_fails_as_the_host_does() {
    struct Full;
    impl Host for Full {
        fn new_dmabuf_fd(&self, _: bool) -> Result<i32, Errno> {
            Err(libc::EMFILE)
        }
        fn now_ns(&self) -> u64 {
            0
        }
        fn pin_pages(&self, _: u64, _: u64, _: bool) {}
    }
    let mut d = Driver::new(Config::new(2, 16 << 30, 32 << 30));
    d.open(5, 0);
    let (handle, _) = d.create(5, 4096, &[]).unwrap();
    let mut prime = DrmPrimeHandle {
        handle,
        flags: DRM_CLOEXEC,
        fd: -1,
    };
    call(&mut d, 5, DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut prime).unwrap();
    assert_eq!(prime.fd, 77);
    assert!(d.is_dmabuf(77));
    // SAFETY: a valid prime struct.
    let full = unsafe {
        render_ioctl(
            &mut d,
            &Full,
            5,
            DRM_IOCTL_PRIME_HANDLE_TO_FD,
            (&mut prime as *mut DrmPrimeHandle).cast(),
        )
    };
    assert_eq!(full, Err(libc::EMFILE));
    assert_eq!(d.counts().exports.live, 1);
}

fn adl_s(devices: usize) -> Driver {
    let mut d = Driver::new(Config::of(
        &crate::config::ADL_S,
        devices,
        16 << 30,
        32 << 30,
    ));
    d.open(5, 0);
    d
}

fn param(d: &mut Driver, param: i32) -> i32 {
    let mut value = 0i32;
    let mut get = GetParam {
        param,
        value: &mut value,
    };
    call(d, 5, DRM_IOCTL_I915_GETPARAM, &mut get).unwrap();
    value
}

/// One query item, both passes.
fn query_item(config: &Config, id: u64) -> Vec<u8> {
    let mut item = QueryItem {
        query_id: id,
        length: 0,
        flags: 0,
        data_ptr: 0,
    };
    let pass = |item: &mut QueryItem| {
        let q = Query {
            num_items: 1,
            flags: 0,
            items_ptr: item as *mut QueryItem as u64,
        };
        // SAFETY: one valid item whose data pointer is null or holds its length.
        unsafe { query(config, &q).unwrap() };
    };
    pass(&mut item);
    assert!(item.length > 0, "query {id}: {}", item.length);
    let mut data = vec![0u8; item.length as usize];
    item.data_ptr = data.as_mut_ptr() as u64;
    pass(&mut item);
    data
}

#[test]
fn an_alder_lake_s_is_a_gen12_integrated_gpu_of_32_eus_with_system_memory_only() {
    let mut d = adl_s(2);
    assert_eq!(param(&mut d, I915_PARAM_CHIPSET_ID), 0x4680);
    assert_eq!(param(&mut d, I915_PARAM_EU_TOTAL), 32);
    assert_eq!(param(&mut d, I915_PARAM_SUBSLICE_TOTAL), 2);
    assert_eq!(param(&mut d, I915_PARAM_SUBSLICE_MASK), 0b11);
    assert_eq!(param(&mut d, I915_PARAM_CS_TIMESTAMP_FREQUENCY), 19_200_000);
    assert_eq!(param(&mut d, 14), 1, "HAS_LLC: integrated");
    assert_eq!(d.config.devices[1].bdf, "0000:00:03.0");
    assert_eq!(d.config.devices[0].local_bytes, 0, "no device memory");
    // Topology: 1 slice, room for 6 dual-subslices of 16 EUs, the first 2 enabled.
    let topology = query_item(&d.config, DRM_I915_QUERY_TOPOLOGY_INFO);
    let header: Vec<u16> = topology[..16]
        .chunks(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(header, [0, 1, 6, 16, 1, 1, 2, 2]);
    assert_eq!(&topology[16..19], &[1, 0b11, 0xff]);
    assert_eq!(topology[19..].iter().filter(|&&b| b == 0xff).count(), 3);
    assert_eq!(topology.len(), 16 + 1 + 1 + 6 * 2);
    // Memory regions: system memory alone.
    let regions = query_item(&d.config, DRM_I915_QUERY_MEMORY_REGIONS);
    assert_eq!(regions.len(), 16 + 88);
    assert_eq!(u32::from_ne_bytes(regions[..4].try_into().unwrap()), 1);
    assert_eq!(
        u16::from_ne_bytes([regions[16], regions[17]]),
        I915_MEMORY_CLASS_SYSTEM
    );
    // Engines: render, copy, two video, one video-enhance; no compute engine.
    let engines = query_item(&d.config, DRM_I915_QUERY_ENGINE_INFO);
    assert_eq!(u32::from_ne_bytes(engines[..4].try_into().unwrap()), 5);
    let classes: Vec<u16> = (0..5)
        .map(|i| u16::from_ne_bytes([engines[16 + 56 * i], engines[17 + 56 * i]]))
        .collect();
    assert!(!classes.contains(&I915_ENGINE_CLASS_COMPUTE), "{classes:?}");
    // Device memory is no region to create in.
    assert_eq!(
        d.create(5, 4096, &[(I915_MEMORY_CLASS_DEVICE, 0)]),
        Err(libc::EINVAL)
    );
    assert!(d.create(5, 4096, &[(I915_MEMORY_CLASS_SYSTEM, 0)]).is_ok());
}

#[test]
fn tiling_is_kept_where_fences_exist_and_refused_on_an_a770() {
    let mut d = adl_s(1);
    let (handle, _) = d.create(5, 1 << 20, &[]).unwrap();
    let mut set = GemSetTiling {
        handle,
        tiling_mode: I915_TILING_Y,
        stride: 100,
        swizzle_mode: 9,
    };
    assert_eq!(
        call(&mut d, 5, DRM_IOCTL_I915_GEM_SET_TILING, &mut set),
        Err(libc::EINVAL),
        "a Y-tiled pitch is a multiple of 128 bytes"
    );
    set.stride = 4096;
    call(&mut d, 5, DRM_IOCTL_I915_GEM_SET_TILING, &mut set).unwrap();
    assert_eq!((set.stride, set.swizzle_mode), (4096, 0));
    let mut get = GemGetTiling {
        handle,
        tiling_mode: 0,
        swizzle_mode: 9,
        phys_swizzle_mode: 9,
    };
    call(&mut d, 5, DRM_IOCTL_I915_GEM_GET_TILING, &mut get).unwrap();
    assert_eq!((get.tiling_mode, get.swizzle_mode), (I915_TILING_Y, 0));
    set.tiling_mode = I915_TILING_NONE;
    call(&mut d, 5, DRM_IOCTL_I915_GEM_SET_TILING, &mut set).unwrap();
    assert_eq!(set.stride, 0, "linear keeps no pitch");
    let mut a770 = Driver::new(Config::new(1, 16 << 30, 32 << 30));
    a770.open(5, 0);
    let (handle, _) = a770.create(5, 1 << 20, &[]).unwrap();
    set.handle = handle;
    assert_eq!(
        call(&mut a770, 5, DRM_IOCTL_I915_GEM_SET_TILING, &mut set),
        Err(libc::EOPNOTSUPP)
    );
}

/// A host that records the pages it is asked to pin.
#[derive(Default)]
struct Pins(std::cell::RefCell<Vec<(u64, u64, bool)>>);
impl Host for Pins {
    fn new_dmabuf_fd(&self, _: bool) -> Result<i32, Errno> {
        Ok(77)
    }
    fn now_ns(&self) -> u64 {
        0
    }
    fn pin_pages(&self, address: u64, size: u64, writable: bool) {
        self.0.borrow_mut().push((address, size, writable));
    }
}

#[test]
fn a_userptr_objects_pages_are_pinned_at_its_first_submission_only() {
    let mut d = Driver::new(Config::new(1, 16 << 30, 32 << 30));
    d.open(5, 0);
    let context = d.context_create(5, 0).unwrap();
    let mut user = vec![0u8; 3 * 4096];
    let address = (user.as_mut_ptr() as u64).next_multiple_of(4096);
    let mut userptr = GemUserptr {
        user_ptr: address,
        user_size: 4096,
        flags: 0,
        handle: 0,
    };
    call(&mut d, 5, DRM_IOCTL_I915_GEM_USERPTR, &mut userptr).unwrap();
    let (batch, _) = d.create(5, 4096, &[]).unwrap();
    let objects = [userptr.handle, batch].map(|handle| ExecObject2 {
        handle,
        relocation_count: 0,
        relocs_ptr: 0,
        alignment: 0,
        offset: 0,
        flags: 0,
        rsvd1: 0,
        rsvd2: 0,
    });
    let exec = Execbuffer2 {
        buffers_ptr: objects.as_ptr() as u64,
        buffer_count: 2,
        batch_start_offset: 0,
        batch_len: 0,
        dr1: 0,
        dr4: 0,
        num_cliprects: 0,
        cliprects_ptr: 0,
        flags: 0,
        rsvd1: u64::from(context),
        rsvd2: 0,
    };
    let pins = Pins::default();
    for _ in 0..2 {
        // SAFETY: two valid exec objects.
        unsafe { execbuffer(&mut d, &pins, 5, &exec).unwrap() };
    }
    assert_eq!(*pins.0.borrow(), [(address, 4096, true)], "once, writable");
    drop(user);
}
