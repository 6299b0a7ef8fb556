use super::*;
use clmulti_drm_uapi::{I915_MEMORY_CLASS_DEVICE as DEVICE, I915_MEMORY_CLASS_SYSTEM as SYSTEM};

fn driver(devices: usize, local: u64) -> Driver {
    Driver::new(Config::new(devices, local, 64 << 30))
}

#[test]
fn sizes_round_to_the_regions_page_and_a_too_large_object_is_refused_at_creation() {
    let mut d = driver(1, 1 << 30);
    d.open(10, 0);
    assert_eq!(d.create(10, 1, &[(SYSTEM, 0)]).unwrap(), (1, 4096));
    assert_eq!(d.create(10, 1, &[(DEVICE, 0)]).unwrap(), (2, 64 << 10));
    assert_eq!(
        d.create(10, (1 << 30) + 1, &[(DEVICE, 0)]),
        Err(libc::E2BIG)
    );
    assert_eq!(d.create(10, 0, &[(DEVICE, 0)]), Err(libc::EINVAL));
    assert_eq!(d.create(10, 4096, &[(DEVICE, 1)]), Err(libc::EINVAL));
    assert_eq!(d.create(11, 4096, &[]), Err(libc::EBADF));
    let local = d.counts().regions[&(0, Region::Local)];
    assert_eq!(
        (local.objects, local.bytes, local.resident_bytes),
        (1, 64 << 10, 0)
    );
}

#[test]
fn an_exported_object_lives_until_its_last_handle_and_descriptor_are_gone() {
    let mut d = driver(2, 1 << 30);
    d.open(10, 0);
    d.open(11, 1);
    let (handle, _) = d.create(10, 1 << 20, &[(SYSTEM, 0)]).unwrap();
    let object = d.export(10, handle).unwrap();
    d.exported(object, 20);
    let imported = d.import(11, 20).unwrap();
    assert_eq!(
        d.import(11, 20).unwrap(),
        imported,
        "one handle per file and object"
    );
    assert_eq!((d.counts().exports.live, d.counts().imports.live), (1, 1));
    d.close_handle(10, handle).unwrap();
    d.forget(20);
    assert_eq!(
        d.counts().regions[&(0, Region::System)].objects,
        1,
        "the import holds it"
    );
    d.close_handle(11, imported).unwrap();
    assert_eq!(d.counts().regions[&(0, Region::System)].objects, 0);
    assert_eq!((d.counts().exports.live, d.counts().imports.live), (0, 0));
    assert_eq!((d.counts().exports.total, d.counts().imports.total), (1, 1));
}

#[test]
fn closing_a_file_releases_its_handles_but_not_what_a_descriptor_still_holds() {
    let mut d = driver(1, 1 << 30);
    d.open(10, 0);
    let (handle, _) = d.create(10, 4096, &[]).unwrap();
    let object = d.export(10, handle).unwrap();
    d.exported(object, 21);
    d.dup(10, 12);
    d.forget(10);
    assert_eq!(d.counts().files.live, 1, "the dup keeps the file open");
    d.forget(12);
    assert_eq!(d.counts().files.live, 0);
    assert_eq!(d.counts().regions[&(0, Region::System)].objects, 1);
    d.forget(21);
    assert_eq!(d.counts().regions[&(0, Region::System)].objects, 0);
}

#[test]
fn pages_are_taken_at_first_use_and_a_full_device_evicts_before_it_fails() {
    let mut d = driver(1, 4 << 20);
    d.open(10, 0);
    let handles: Vec<u32> = (0..6)
        .map(|_| d.create(10, 1 << 20, &[(DEVICE, 0)]).unwrap().0)
        .collect();
    assert_eq!(d.counts().regions[&(0, Region::Local)].resident_bytes, 0);
    for &h in &handles {
        d.execute(10, &[(h, 0)]).unwrap();
    }
    let local = d.counts().regions[&(0, Region::Local)];
    assert_eq!(local.resident_bytes, 4 << 20, "never more than the region");
    assert_eq!(d.counts().evictions, 2);
    // A working set larger than the region cannot be made resident.
    let all: Vec<(u32, u64)> = handles.iter().map(|&h| (h, 0)).collect();
    assert_eq!(d.execute(10, &all).unwrap_err(), libc::ENOSPC);
}

#[test]
fn a_mapping_keeps_its_object_and_offsets_are_valid_only_for_holders() {
    let mut d = driver(2, 1 << 30);
    d.open(10, 0);
    d.open(11, 1);
    let (handle, _) = d.create(10, 8192, &[(SYSTEM, 0)]).unwrap();
    let offset = d.mmap_offset(10, handle).unwrap();
    assert_eq!(d.mmap_offset(10, handle).unwrap(), offset);
    assert_eq!(d.object_at_offset(11, offset).unwrap_err(), libc::EACCES);
    let (object, size) = d.object_at_offset(10, offset).unwrap();
    assert_eq!(size, 8192);
    d.mapped(object, 0x10000, 8192);
    d.close_handle(10, handle).unwrap();
    assert_eq!(d.counts().maps.live, 1);
    assert_eq!(d.counts().regions[&(0, Region::System)].objects, 1);
    d.unmapped(0x10000, 8192);
    assert_eq!(d.counts().regions[&(0, Region::System)].objects, 0);
    assert_eq!(d.counts().maps, Tally { live: 0, total: 1 });
}

#[test]
fn fdinfo_figures_count_shared_and_resident_bytes_per_region() {
    let mut d = driver(2, 1 << 30);
    d.open(10, 0);
    d.open(11, 1);
    let (a, _) = d.create(10, 1 << 20, &[(SYSTEM, 0)]).unwrap();
    let (b, _) = d.create(10, 1 << 20, &[(DEVICE, 0)]).unwrap();
    let object = d.export(10, a).unwrap();
    d.exported(object, 30);
    d.import(11, 30).unwrap();
    d.execute(10, &[(b, 0)]).unwrap();
    let usage = d.client_usage(10).unwrap();
    let system = usage.regions[&Region::System];
    let local = usage.regions[&Region::Local];
    assert_eq!(
        (system.total, system.shared, system.resident),
        (1 << 20, 1 << 20, 0)
    );
    assert_eq!(
        (local.total, local.shared, local.resident),
        (1 << 20, 0, 1 << 20)
    );
    let peer = d.client_usage(11).unwrap();
    assert_eq!(
        peer.regions[&Region::System].total,
        1 << 20,
        "the import counts there too"
    );
    assert_ne!(usage.client_id, peer.client_id);
}
