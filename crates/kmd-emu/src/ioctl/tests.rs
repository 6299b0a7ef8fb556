use super::*;

struct FakeHost;
impl Host for FakeHost {
    fn new_dmabuf_fd(&self, _: bool) -> Result<i32, Errno> {
        Ok(77)
    }
    fn now_ns(&self) -> u64 {
        1_000_000_000
    }
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
