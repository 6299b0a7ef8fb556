//! Counting every traced call by kind, at a cost below the noise of the calls
//! counted: each thread adds to a table of its own, with plain loads and stores (one
//! thread writes a table, so no atomic read-modify-write and no lock), claimed from a
//! fixed pool at its first count and handed on when it exits; readers sum every
//! table. Threads beyond the pool, or past their own end, share one table through
//! atomic adds.
//!
//! A thread can also mark itself as the host program's own ([`set_own`]): while
//! marked, its calls are neither counted nor recorded, so a program's readings of
//! `/proc` (and whatever a preloaded library does to answer them) are never charged
//! to the runtime it measures.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Per-thread tables in the pool.
const TABLES: usize = 64;
/// Keys one thread's table holds (kinds, and DRM requests by driver and region: a
/// runtime uses a few dozen); a key past them goes to the shared table.
const SLOTS: usize = 128;
/// Keys the shared table holds.
const SHARED_SLOTS: usize = 1024;

/// Where a key starts probing in a table of `slots` (a power of two).
#[inline]
fn start(key: u64, slots: usize) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & (slots - 1)
}

/// One thread's table: only its owner writes it, readers load.
struct Table {
    claimed: AtomicBool,
    keys: [AtomicU64; SLOTS],
    values: [AtomicU64; SLOTS],
}

impl Table {
    const fn new() -> Self {
        Table {
            claimed: AtomicBool::new(false),
            keys: [const { AtomicU64::new(0) }; SLOTS],
            values: [const { AtomicU64::new(0) }; SLOTS],
        }
    }

    /// Adds one to `key`; false when the table is full. Only the owner calls it.
    #[inline]
    fn add(&self, key: u64) -> bool {
        let mut slot = start(key, SLOTS);
        for _ in 0..SLOTS {
            let here = self.keys[slot].load(Ordering::Relaxed);
            if here == key {
                let value = &self.values[slot];
                value.store(value.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                return true;
            }
            if here == 0 {
                // The value before the key: a reader that sees the key sees it.
                self.values[slot].store(1, Ordering::Relaxed);
                self.keys[slot].store(key, Ordering::Release);
                return true;
            }
            slot = (slot + 1) & (SLOTS - 1);
        }
        false
    }
}

static POOL: [Table; TABLES] = [const { Table::new() }; TABLES];

/// A count per key shared by every thread: open addressing, atomic adds.
#[allow(missing_debug_implementations)]
pub struct Counts {
    keys: [AtomicU64; SHARED_SLOTS],
    values: [AtomicU64; SHARED_SLOTS],
}

impl Counts {
    /// An empty table.
    pub const fn new() -> Self {
        Self {
            keys: [const { AtomicU64::new(0) }; SHARED_SLOTS],
            values: [const { AtomicU64::new(0) }; SHARED_SLOTS],
        }
    }

    /// Adds one to `key` (nonzero); a full table drops the count.
    pub fn add(&self, key: u64) {
        let mut slot = start(key, SHARED_SLOTS);
        for _ in 0..SHARED_SLOTS {
            match self.keys[slot].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.values[slot].fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(existing) if existing == key => {
                    self.values[slot].fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(_) => slot = (slot + 1) & (SHARED_SLOTS - 1),
            }
        }
    }

    /// Every key with its count.
    pub fn snapshot(&self) -> Vec<(u64, u64)> {
        pairs(&self.keys, &self.values).collect()
    }
}

impl Default for Counts {
    fn default() -> Self {
        Self::new()
    }
}

fn pairs<'a>(
    keys: &'a [AtomicU64],
    values: &'a [AtomicU64],
) -> impl Iterator<Item = (u64, u64)> + 'a {
    keys.iter().zip(values).filter_map(|(k, v)| {
        let key = k.load(Ordering::Acquire);
        (key != 0).then(|| (key, v.load(Ordering::Relaxed)))
    })
}

static SHARED: Counts = Counts::new();

/// No table claimed yet.
const UNCLAIMED: usize = usize::MAX;
/// The pool was empty: this thread counts in the shared table.
const NONE_LEFT: usize = usize::MAX - 1;

/// What the tracer keeps per thread.
struct Local {
    /// The host program's own thread (or section of one): not counted, not recorded.
    own: Cell<bool>,
    /// The index of this thread's table in the pool.
    table: Cell<usize>,
}

impl Drop for Local {
    fn drop(&mut self) {
        // The counts stay where they are (readers still sum them); the next thread
        // that needs a table continues in it.
        if let Some(table) = POOL.get(self.table.get()) {
            table.claimed.store(false, Ordering::Release);
        }
    }
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            own: Cell::new(false),
            table: Cell::new(UNCLAIMED),
        }
    };
}

fn claim() -> usize {
    POOL.iter()
        .position(|t| {
            t.claimed
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })
        .unwrap_or(NONE_LEFT)
}

/// Counts one call under `key` on this thread, unless the thread is marked as the
/// program's own.
#[inline]
pub fn count(key: u64) {
    let counted = LOCAL.try_with(|local| {
        if local.own.get() {
            return;
        }
        let mut index = local.table.get();
        if index == UNCLAIMED {
            index = claim();
            local.table.set(index);
        }
        if !POOL.get(index).is_some_and(|t| t.add(key)) {
            SHARED.add(key);
        }
    });
    // Past the thread's end (its locals gone): the shared table.
    if counted.is_err() {
        SHARED.add(key);
    }
}

/// Whether this thread is marked as the host program's own.
#[inline]
pub fn own() -> bool {
    LOCAL.try_with(|l| l.own.get()).unwrap_or(false)
}

/// Marks (or unmarks) this thread as the program's own; returns what it was.
pub fn set_own(on: bool) -> bool {
    LOCAL.try_with(|l| l.own.replace(on)).unwrap_or(false)
}

/// Every key counted so far, summed over the threads (unsorted, one entry a key).
pub fn snapshot() -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = POOL
        .iter()
        .flat_map(|t| pairs(&t.keys, &t.values))
        .chain(SHARED.snapshot())
        .collect();
    all.sort_unstable();
    all.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_keep_each_key_apart_and_survive_collisions() {
        let counts = Counts::new();
        for key in 1..=300u64 {
            for _ in 0..key % 5 + 1 {
                counts.add(key);
            }
        }
        let snapshot = counts.snapshot();
        assert_eq!(snapshot.len(), 300);
        assert!(snapshot.iter().all(|&(k, v)| v == k % 5 + 1));
    }

    #[test]
    fn threads_count_apart_and_the_sum_is_every_call() {
        // Keys no other test uses; more keys than one table holds, on more threads
        // than stay alive at once.
        let base = 7u64 << 48;
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(move || {
                    for key in 1..=(SLOTS as u64 + 20) {
                        for _ in 0..3 {
                            count(base + key);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mine: Vec<(u64, u64)> = snapshot()
            .into_iter()
            .filter(|(k, _)| k >> 48 == 7)
            .collect();
        assert_eq!(mine.len(), SLOTS + 20);
        assert!(mine.iter().all(|&(_, v)| v == 8 * 3), "{mine:?}");
    }

    #[test]
    fn a_thread_marked_as_the_programs_own_is_not_counted() {
        let key = 9u64 << 48;
        count(key);
        assert!(!set_own(true));
        count(key);
        assert!(own());
        assert!(set_own(false));
        count(key);
        let counted = snapshot().into_iter().find(|(k, _)| *k == key);
        assert_eq!(counted, Some((key, 2)));
    }
}
