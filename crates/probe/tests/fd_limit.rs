//! Reading process usage at the descriptor limit: its own process, because it
//! exhausts the descriptor table.

use clmulti_probe::{ProcessUsage, UsageReader};

#[test]
fn a_reader_counts_descriptors_even_when_none_is_left() {
    let reader = UsageReader::open();
    let first = reader.read();
    let file = std::fs::File::open("/proc/self/status").unwrap();
    assert_eq!(reader.read().process.open_fds, first.process.open_fds + 1);
    drop(file);
    let p = first.process;
    assert!(p.rss_bytes > 0 && p.virtual_bytes >= p.rss_bytes && p.memory_maps > Some(5));
    let system = first.system.expect("/proc/meminfo");
    assert!(system.available_bytes > Some(0) && system.free_bytes > 0);

    let before = reader.read().process.open_fds;
    // Fill the descriptor table up to a low soft limit, then read again.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid rlimit struct.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    let saved = lim;
    lim.rlim_cur = (before + 40).min(lim.rlim_max);
    // SAFETY: lowering the soft limit of this test process, restored below.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    let mut held = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        held.push(f);
    }
    let at_limit = reader.read().process;
    let light_at_limit = reader.read_light().process;
    let fresh = ProcessUsage::read();
    drop(held);
    // SAFETY: restoring the saved limit.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &saved) };
    assert!(
        at_limit.open_fds >= before + 30,
        "{} then {}",
        before,
        at_limit.open_fds
    );
    assert!(at_limit.memory_maps > Some(5) && at_limit.rss_bytes > 0);
    // The thread count of a light reading takes no descriptor either.
    assert!(light_at_limit.threads >= 1 && light_at_limit.threads == at_limit.threads);
    assert_eq!(
        fresh.open_fds, 0,
        "opening /proc at the limit fails: the reason UsageReader exists"
    );
}
