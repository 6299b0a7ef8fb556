//! Reading a `/proc` file the reader keeps open, and picking figures out of its
//! `Key: value` lines, at the price of a sample: into a buffer made once (zeroing a
//! fresh 8 KiB per read cost more than parsing it), one read where one is enough, one
//! pass over the lines.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Bytes of the reader's buffer: `status` and `meminfo` are 1.5 KiB on today's
/// kernels.
pub(super) const SCRATCH: usize = 8192;

/// Reads `file` from its start into `buf` (cut at its length) and returns the bytes
/// read. For the small `/proc` files read this way (`statm`, `status`, `meminfo`:
/// whole within the buffer) one read gives all there is: a read shorter than the
/// room left is the end, and no second read is made to hear so.
pub(super) fn read_into(file: Option<&File>, buf: &mut [u8]) -> usize {
    let Some(file) = file else { return 0 };
    let mut len = 0;
    while len < buf.len() {
        match file.read_at(&mut buf[len..], len as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                len += n;
                if len < buf.len() {
                    break;
                }
            }
        }
    }
    len
}

/// The first number of each `key:` line, in the order of `keys`, in one pass that
/// stops once every key is found.
pub(super) fn fields<const K: usize>(text: &[u8], keys: [&str; K]) -> [Option<u64>; K] {
    let mut found = [None; K];
    let mut left = K;
    for line in text.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let Some(i) = keys.iter().position(|k| k.as_bytes() == &line[..colon]) else {
            continue;
        };
        if found[i].is_some() {
            continue;
        }
        let digits = line[colon + 1..]
            .iter()
            .skip_while(|b| b.is_ascii_whitespace())
            .take_while(|b| b.is_ascii_digit());
        found[i] = Some(digits.fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0')));
        left -= 1;
        if left == 0 {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_found_in_one_pass_in_the_order_asked() {
        let text = b"MemTotal:       100 kB\nMemFree:  7 kB\nMemAvailable: 42 kB\nShmem:\t3 kB\nThreads:\t12\n";
        assert_eq!(
            fields(
                text,
                ["MemAvailable", "MemFree", "Shmem", "Threads", "VmLck"]
            ),
            [Some(42), Some(7), Some(3), Some(12), None]
        );
        // A key is the whole name before the colon: `Mem` is not `MemFree`.
        assert_eq!(fields(text, ["Mem"]), [None]);
    }

    #[test]
    fn a_file_is_read_whole_and_cut_at_the_buffer() {
        let dir = std::env::temp_dir().join(format!("clmulti-text-{}", std::process::id()));
        std::fs::write(&dir, b"0123456789").unwrap();
        let file = File::open(&dir).unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(read_into(Some(&file), &mut buf), 4);
        let mut buf = [0u8; 64];
        assert_eq!(read_into(Some(&file), &mut buf), 10);
        assert_eq!(&buf[..10], b"0123456789");
        assert_eq!(read_into(None, &mut buf), 0);
        std::fs::remove_file(&dir).unwrap();
    }
}
