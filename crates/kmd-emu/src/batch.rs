//! Completing a submission without a GPU: the batch buffer's commands are read for
//! the memory writes the command streamer makes when work ends (PIPE_CONTROL and
//! MI_FLUSH_DW post-sync writes, MI_STORE_DATA_IMM, MI_STORE_REGISTER_MEM,
//! MI_COPY_MEM_MEM), and those are carried out. The runtime waits for exactly these
//! (its completion tags and timestamp packets); nothing else of the batch runs:
//! kernels, copies and fills change no memory.
//!
//! Encodings from Intel's public PRMs (Volume 2a, "Command Reference: Instructions")
//! as used by Xe-HPG (DG2): the command type in bits 31:29, the length field in bits
//! 7:0 counting dwords beyond two; MI commands below opcode 0x10 are one dword.

/// One object of the submission: where the GPU sees it and where the CPU does.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// GPU virtual address (48 bits, canonical form stripped).
    pub gpu_address: u64,
    /// Bytes.
    pub size: u64,
    /// The CPU's view of the same bytes, when the object is mapped (or userptr).
    pub cpu: Option<(usize, usize)>,
}

/// What reading a batch did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Memory writes carried out.
    pub writes: u64,
    /// Why reading stopped before `MI_BATCH_BUFFER_END`, if it did.
    pub stopped: Option<String>,
}

const MAX_DWORDS: usize = 1 << 20;
const ADDRESS_MASK: u64 = (1 << 48) - 1;

/// The memory of one submission.
#[derive(Debug)]
pub struct Memory<'a> {
    views: &'a [View],
    timestamp: u64,
}

impl<'a> Memory<'a> {
    /// Over `views`; `timestamp` is what timestamp writes store (GPU ticks).
    pub fn new(views: &'a [View], timestamp: u64) -> Self {
        Self { views, timestamp }
    }

    /// The CPU address of `len` bytes at GPU address `address`, when all of them are
    /// inside one mapped object.
    fn cpu(&self, address: u64, len: u64) -> Option<*mut u8> {
        let address = address & ADDRESS_MASK;
        self.views.iter().find_map(|v| {
            let start = v.gpu_address & ADDRESS_MASK;
            let offset = address.checked_sub(start)?;
            let (cpu, cpu_len) = v.cpu?;
            (offset + len <= v.size.min(cpu_len as u64)).then(|| (cpu + offset as usize) as *mut u8)
        })
    }

    fn read_dword(&self, address: u64) -> Option<u32> {
        let p = self.cpu(address, 4)?;
        // SAFETY: `cpu` returned a pointer with 4 bytes inside a live mapping of the
        // submission's objects; unaligned reads are allowed.
        Some(unsafe { std::ptr::read_unaligned(p.cast::<u32>()) })
    }

    fn write(&self, address: u64, value: u64, bytes: u64) -> bool {
        let Some(p) = self.cpu(address, bytes) else {
            return false;
        };
        // SAFETY: `cpu` checked that `bytes` bytes at `p` lie inside a live, writable
        // mapping of an object the submission names (what the GPU would write).
        unsafe {
            if bytes == 8 {
                std::ptr::write_unaligned(p.cast::<u64>(), value);
            } else {
                std::ptr::write_unaligned(p.cast::<u32>(), value as u32);
            }
        }
        true
    }

    /// Reads the batch at `start` and carries out its writes.
    // long: a state machine: one decoder, a match over the instructions a batch may hold
    pub fn run(&self, start: u64) -> Outcome {
        let mut outcome = Outcome::default();
        let mut pc = start;
        let mut returns: Vec<u64> = Vec::new();
        for _ in 0..MAX_DWORDS {
            let Some(header) = self.read_dword(pc) else {
                outcome.stopped = Some(format!("no CPU view of the batch at {pc:#x}"));
                return outcome;
            };
            let dw = |i: u64| self.read_dword(pc + 4 * i).unwrap_or(0);
            let qword = |i: u64| u64::from(dw(i)) | u64::from(dw(i + 1)) << 32;
            let len = command_length(header);
            match header >> 29 {
                0 => match (header >> 23) & 0x3f {
                    // MI_BATCH_BUFFER_END
                    0x0a => match returns.pop() {
                        Some(back) => {
                            pc = back;
                            continue;
                        }
                        None => return outcome,
                    },
                    // MI_BATCH_BUFFER_START: second level returns here at its end.
                    0x31 => {
                        if header & (1 << 22) != 0 {
                            returns.push(pc + 4 * len);
                        }
                        pc = qword(1) & !3;
                        continue;
                    }
                    // MI_STORE_DATA_IMM: a dword, or a qword when one longer.
                    0x20 => {
                        let bytes = if len >= 5 { 8 } else { 4 };
                        let value = if bytes == 8 {
                            qword(3)
                        } else {
                            u64::from(dw(3))
                        };
                        outcome.writes += u64::from(self.write(qword(1) & !3, value, bytes));
                    }
                    // MI_STORE_REGISTER_MEM: the timestamp registers read the clock.
                    0x24 => {
                        outcome.writes +=
                            u64::from(self.write(qword(2) & !3, self.timestamp & 0xffff_ffff, 4));
                    }
                    // MI_FLUSH_DW: post-sync operation in bits 15:14 of the header.
                    0x26 => {
                        let value = match (header >> 14) & 3 {
                            1 if len >= 5 => Some(qword(3)),
                            1 => Some(u64::from(dw(3))),
                            3 => Some(self.timestamp),
                            _ => None,
                        };
                        if let Some(value) = value {
                            outcome.writes += u64::from(self.write(qword(1) & !7, value, 8));
                        }
                    }
                    // MI_COPY_MEM_MEM: a dword from the source to the destination.
                    0x2e => {
                        if let Some(value) = self.read_dword(qword(3) & !3) {
                            outcome.writes +=
                                u64::from(self.write(qword(1) & !3, u64::from(value), 4));
                        }
                    }
                    _ => {}
                },
                // PIPE_CONTROL (GFXPIPE 3/2/0): post-sync operation in DW1 bits 15:14.
                3 if header & 0xffff_0000 == 0x7a00_0000 => {
                    let value = match (dw(1) >> 14) & 3 {
                        1 => Some(qword(4)),
                        2 => Some(0),
                        3 => Some(self.timestamp),
                        _ => None,
                    };
                    if let Some(value) = value {
                        outcome.writes += u64::from(self.write(qword(2) & !7, value, 8));
                    }
                }
                // COMPUTE_WALKER (GFXPIPE 3/2/2, CFE subopcode 2): its POSTSYNC_DATA
                // sits before the 8 dwords of inline data at its end.
                3 if header & 0xfffc_0000 == 0x7208_0000 && len >= 14 => {
                    let at = len - 8 - 5;
                    outcome.writes += self.walker_post_sync(pc + 4 * at, header & 0xff);
                }
                3 | 2 => {}
                other => {
                    outcome.stopped = Some(format!("unknown command type {other} at {pc:#x}"));
                    return outcome;
                }
            }
            pc += 4 * len;
        }
        outcome.stopped = Some(format!("no MI_BATCH_BUFFER_END within {MAX_DWORDS} dwords"));
        outcome
    }
}

impl Memory<'_> {
    /// A compute walker's post-sync operation (POSTSYNC_DATA at `at`: operation,
    /// address, immediate data): an immediate qword, or the four timestamps of a
    /// timestamp packet (context start, global start, context end, global end), 64
    /// bits each on Xe2 (a walker of 0x26 dwords) and 32 on Xe-HPG.
    fn walker_post_sync(&self, at: u64, length_field: u32) -> u64 {
        let Some(op) = self.read_dword(at) else {
            return 0;
        };
        let dw = |i: u64| self.read_dword(at + 4 * i).unwrap_or(0);
        let qword = |i: u64| u64::from(dw(i)) | u64::from(dw(i + 1)) << 32;
        let address = qword(1) & !7;
        match op & 3 {
            1 => u64::from(self.write(address, qword(3), 8)),
            3 => {
                let bytes = if length_field >= 0x26 { 8 } else { 4 };
                (0..4)
                    .map(|i| u64::from(self.write(address + i * bytes, self.timestamp, bytes)))
                    .sum()
            }
            _ => 0,
        }
    }
}

/// A command's length in dwords.
fn command_length(header: u32) -> u64 {
    match header >> 29 {
        // MI: opcodes below 0x10 (NOOP, ARB_CHECK, BATCH_BUFFER_END...) are one dword.
        0 if (header >> 23) & 0x3f < 0x10 => 1,
        // GFXPIPE single-dword commands (PIPELINE_SELECT): pipeline 1, opcode 1.
        3 if (header >> 27) & 3 == 1 && (header >> 24) & 7 == 1 => 1,
        _ => u64::from(header & 0xff) + 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: u64 = 0xffff_8000_0000_0000 | 0x1_0000;

    fn run(commands: &[u32], extra: &mut [u8]) -> (Outcome, Vec<u32>) {
        let mut batch = commands.to_vec();
        let batch_views = [
            View {
                gpu_address: GPU,
                size: (batch.len() * 4) as u64,
                cpu: Some((batch.as_mut_ptr() as usize, batch.len() * 4)),
            },
            View {
                gpu_address: 0x20_0000,
                size: extra.len() as u64,
                cpu: Some((extra.as_mut_ptr() as usize, extra.len())),
            },
        ];
        let outcome = Memory::new(&batch_views, 0x1234_5678_9abc).run(GPU);
        (outcome, batch)
    }

    #[test]
    fn pipe_control_and_flush_post_sync_writes_land_where_the_runtime_polls() {
        let mut tag = [0u8; 32];
        let commands = [
            0x0000_0000, // MI_NOOP
            0x7a00_0004,
            1 << 14,
            0x20_0000,
            0,
            41,
            0, // PIPE_CONTROL write immediate 41
            0x1300_4003,
            0x20_0008,
            0,
            42,
            0, // MI_FLUSH_DW post-sync write 42
            0x1000_0002,
            0x20_0010,
            0,
            43, // MI_STORE_DATA_IMM dword 43
            0x7a00_0004,
            3 << 14,
            0x20_0018,
            0,
            0,
            0,           // PIPE_CONTROL timestamp
            0x0500_0000, // MI_BATCH_BUFFER_END
        ];
        let (outcome, _) = run(&commands, &mut tag);
        assert_eq!(
            outcome,
            Outcome {
                writes: 4,
                stopped: None
            }
        );
        let word = |i: usize| u64::from_le_bytes(tag[i..i + 8].try_into().unwrap());
        assert_eq!(
            (word(0), word(8), word(16) & 0xffff_ffff, word(24)),
            (41, 42, 43, 0x1234_5678_9abc)
        );
    }

    #[test]
    fn a_second_level_batch_returns_and_an_unmapped_target_is_skipped() {
        let mut tag = [0u8; 8];
        let second = GPU + 4 * 8;
        let commands = [
            0x1880_0001 | 1 << 22,
            second as u32,
            (second >> 32) as u32, // BB_START 2nd level
            0x1000_0002,
            0x20_0000,
            0,
            7,           // STORE_DATA_IMM 7 after the return
            0x0500_0000, // END
            0x1000_0002,
            0x90_0000,
            0,
            9, // second level: a write nowhere mapped
            0x0500_0000,
        ];
        let (outcome, _) = run(&commands, &mut tag);
        assert_eq!(outcome.writes, 1);
        assert_eq!(outcome.stopped, None);
        assert_eq!(u32::from_le_bytes(tag[0..4].try_into().unwrap()), 7);
    }

    #[test]
    fn a_batch_without_its_end_stops_with_a_reason() {
        let mut tag = [0u8; 8];
        let (outcome, _) = run(&[0, 0, 0], &mut tag);
        assert!(outcome.stopped.unwrap().contains("no CPU view"));
        let (outcome, _) = run(&[0xe000_0000], &mut tag);
        assert!(outcome.stopped.unwrap().contains("unknown command type 7"));
    }

    #[test]
    fn a_compute_walkers_post_sync_writes_its_timestamp_packet_or_its_data() {
        let mut packet = [1u8; 40];
        let walker = |op: u32, length: u32| {
            let mut w = vec![0u32; length as usize + 2];
            w[0] = 0x7208_0000 | length;
            let at = w.len() - 8 - 5;
            w[at] = op;
            w[at + 1] = 0x20_0000;
            w[at + 3] = 99;
            w
        };
        // Xe2 (0x26): four 64-bit timestamps; NEO waits for context end to change.
        let mut commands = walker(3, 0x26);
        commands.push(0x0500_0000);
        let (outcome, _) = run(&commands, &mut packet);
        assert_eq!((outcome.writes, outcome.stopped), (4, None));
        let qword = |p: &[u8], i: usize| u64::from_le_bytes(p[i..i + 8].try_into().unwrap());
        assert_eq!(qword(&packet, 16), 0x1234_5678_9abc, "context end");
        assert_eq!(packet[32], 1, "nothing past the packet");
        let mut data = [0u8; 8];
        let mut commands = walker(1, 0x25);
        commands.push(0x0500_0000);
        let (outcome, _) = run(&commands, &mut data);
        assert_eq!(outcome.writes, 1);
        assert_eq!(qword(&data, 0), 99, "immediate data");
    }

    #[test]
    fn lengths_follow_the_header() {
        assert_eq!(command_length(0x0500_0000), 1);
        assert_eq!(command_length(0x7a00_0004), 6);
        assert_eq!(command_length(0x6904_0113), 1); // PIPELINE_SELECT
        assert_eq!(command_length(0x6101_0014), 22); // STATE_BASE_ADDRESS
    }
}
