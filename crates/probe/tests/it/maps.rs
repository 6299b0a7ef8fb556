//! The mapping count on the real `/proc`: walked with `PROCMAP_QUERY` where the
//! kernel answers it, read from the text otherwise; either way the text's line count.

use clmulti_probe::UsageReader;

fn text_lines() -> u64 {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count() as u64
}

/// The reader's count beside the text's, taken when no mapping came or went between.
fn counted_and_text(reader: &UsageReader) -> (u64, u64) {
    loop {
        let before = text_lines();
        let counted = reader.memory_maps();
        if text_lines() == before {
            return (counted, before);
        }
    }
}

#[test]
fn the_mapping_count_is_the_line_count_of_the_text_and_follows_new_mappings() {
    let reader = UsageReader::open();
    let (counted, text) = counted_and_text(&reader);
    assert_eq!(counted, text);
    // Three pages, the middle one made inaccessible: at least two new mappings
    // (more where a neighbour cannot merge), and the count follows the text.
    let page = 4096;
    // SAFETY: a fresh anonymous mapping, unmapped below; nothing else uses it.
    let region = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            3 * page,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(region, libc::MAP_FAILED);
    // SAFETY: the middle page of the mapping made above.
    let protected =
        unsafe { libc::mprotect(region.cast::<u8>().add(page).cast(), page, libc::PROT_NONE) };
    assert_eq!(protected, 0);
    let (with, text_with) = counted_and_text(&reader);
    // SAFETY: unmapping the region mapped above, once.
    unsafe { libc::munmap(region, 3 * page) };
    assert_eq!(with, text_with);
    assert!(with >= counted + 2, "{counted} then {with}");
}
