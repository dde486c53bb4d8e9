//! Who is limited (RL.TOP): a fixed-size summary of the keys refused most
//! often recently, pure like the kinds (the time is a parameter).
//!
//! **Space-Saving** (Metwally, Agrawal and El Abbadi, 2005) with `k`
//! entries. A refusal of a key the summary holds adds one to its count; of
//! a key it does not hold, takes a free entry (count 1) or, when all `k`
//! are taken, the entry with the smallest count `m`: that key leaves, the
//! new one gets `m + 1`. So a count never underestimates a held key's
//! refusals and overestimates them by at most the smallest count in the
//! summary when the key entered (`m`, decayed since like everything); while
//! fewer than `k` distinct keys were refused, no entry was ever taken over
//! and every count is exact.
//!
//! **Decay.** Counts decay exponentially with a half-life `h`: a refusal
//! `t` ago weighs `2^(-t/h)`. Each entry keeps its count as of its own
//! last refusal (`at`) and is decayed lazily, when it is touched or read:
//! `count(now) = count(at) × 2^(-(now - at)/h)`. Between two refusals at
//! the same instant nothing decays (`2^0 = 1` exactly), so counts are exact
//! integers until time passes; a power of two is exact in binary floating
//! point, so `2^(-1)`, `2^(-2)`, ... halve exactly.
//!
//! **Order.** All counts decay by the same factor, so their order does not
//! change with time: entries are ordered by `level = log2(count(at)) + (at
//! - origin)/h`, which is `log2(count(now)) + (now - origin)/h` for every
//! `now`, a constant per entry until its next refusal. A min-heap on the
//! level finds the smallest count in O(1) and is repaired in O(log k) per
//! refusal; a hash table finds a key's entry in O(1). Levels live in the
//! log domain, so no scaled count ever overflows; to keep their precision
//! (absolute, as any float's, relative to their size) the `origin` moves up
//! to the present once it lags [`REBASE_HALF_LIVES`] half-lives behind,
//! which recomputes every level (O(k), rare).
//!
//! **Memory.** `k` entries at most; a key is held whole up to
//! [`MAX_KEY_BYTES`] bytes, a longer one as its first bytes, `...` and a
//! digest of the whole key (see [`held_key`]), so an entry takes at most
//! `MAX_KEY_BYTES` plus a fixed part ([`Summary::memory`] computes it).
//!
//! **Clock.** The summary's clock never goes back: a time before the
//! latest it saw counts as that latest time.

use std::borrow::Cow;
use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
use std::collections::hash_map::RandomState;

use super::Nanos;

/// The largest summary (`top-size`).
pub const MAX_SIZE: usize = 16_384;
/// The longest key held whole; a longer key is held as [`held_key`] says.
pub const MAX_KEY_BYTES: usize = 512;
/// How far, in half-lives, the levels' origin may lag behind the summary's
/// clock before it moves up (levels stay below about this, plus the log2
/// of the largest count, so they keep about 40 bits of precision).
pub const REBASE_HALF_LIVES: u64 = 1024;

/// The bytes of a long key kept before the marker and digest: with `...`
/// and 16 hex digits the held key is exactly [`MAX_KEY_BYTES`] long.
const KEPT_BYTES: usize = MAX_KEY_BYTES - 3 - 16;

/// One held key.
struct Entry {
    key: Box<[u8]>,
    hash: u64,
    /// The decayed count as of `at`: at least 1 (it was just refused).
    count: f64,
    /// The last refusal.
    at: Nanos,
    /// `log2(count) + (at - origin)/h`: orders the entries by their counts
    /// at any one instant.
    level: f64,
    /// The entry's position in the heap.
    slot: u32,
}

/// One line of RL.TOP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row<'s> {
    pub key: &'s [u8],
    /// The decayed count, rounded down.
    pub refusals: u64,
    /// The last refusal, Unix milliseconds (rounded down).
    pub last_ms: u64,
}

/// The summary: at most `capacity` entries.
pub struct Summary {
    capacity: usize,
    half_life: Nanos,
    entries: Vec<Entry>,
    /// Indices into `entries`, a binary min-heap on their levels.
    heap: Vec<u32>,
    /// Indices into `entries`, found by their key's hash.
    index: HashTable<u32>,
    hasher: RandomState,
    /// The latest time the summary saw.
    latest: Nanos,
    /// The time the levels count from.
    origin: Nanos,
}

impl Summary {
    /// An empty summary of `capacity` entries (at most [`MAX_SIZE`]; 0
    /// holds nothing) whose counts halve every `half_life` (at least 1 ns).
    pub fn new(capacity: usize, half_life: Nanos) -> Summary {
        Summary {
            capacity: capacity.min(MAX_SIZE),
            half_life: half_life.max(Nanos::new(1)),
            entries: Vec::new(),
            heap: Vec::new(),
            index: HashTable::new(),
            hasher: RandomState::new(),
            latest: Nanos::ZERO,
            origin: Nanos::ZERO,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn half_life(&self) -> Nanos {
        self.half_life
    }

    /// The entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Counts one refusal of `key` at `now`: O(1) for a held key's lookup,
    /// O(log k) to repair the heap. Nothing when the capacity is 0.
    pub fn record(&mut self, key: &[u8], now: Nanos) {
        if self.capacity == 0 {
            return;
        }
        let now = self.advance(now);
        let key = held_key(key);
        let hash = self.hash(&key);
        let entries = &self.entries;
        let found = self
            .index
            .find(hash, |&i| entries[i as usize].key[..] == key[..])
            .copied();
        let slot = if let Some(i) = found {
            let e = &mut self.entries[i as usize];
            e.count = decayed(e.count, e.at, now, self.half_life) + 1.0;
            e.at = now;
            e.level = level(e.count, now, self.origin, self.half_life);
            e.slot
        } else if self.entries.len() < self.capacity {
            let i = self.entries.len() as u32;
            let slot = self.heap.len() as u32;
            self.entries.push(Entry {
                key: key.into_owned().into_boxed_slice(),
                hash,
                count: 1.0,
                at: now,
                level: level(1.0, now, self.origin, self.half_life),
                slot,
            });
            self.heap.push(i);
            let entries = &self.entries;
            self.index
                .insert_unique(hash, i, |&j| entries[j as usize].hash);
            self.sift_up(slot as usize);
            return;
        } else {
            // Take over the entry with the smallest count.
            let Some(&i) = self.heap.first() else {
                return;
            };
            let old_hash = self.entries[i as usize].hash;
            if let Ok(entry) = self.index.find_entry(old_hash, |&j| j == i) {
                entry.remove();
            }
            let e = &mut self.entries[i as usize];
            e.count = decayed(e.count, e.at, now, self.half_life) + 1.0;
            e.at = now;
            e.level = level(e.count, now, self.origin, self.half_life);
            e.key = key.into_owned().into_boxed_slice();
            e.hash = hash;
            let entries = &self.entries;
            self.index
                .insert_unique(hash, i, |&j| entries[j as usize].hash);
            0
        };
        // The count grew: the entry can only move down the min-heap.
        self.sift_down(slot as usize);
    }

    /// The `count` largest counts at `now`, most first; ties: the later
    /// last refusal first, then the key's bytes ascending.
    pub fn top(&self, count: usize, now: Nanos) -> Vec<Row<'_>> {
        let now = now.max(self.latest);
        let mut rows: Vec<Row<'_>> = self
            .entries
            .iter()
            .map(|e| Row {
                key: &e.key,
                refusals: floor(decayed(e.count, e.at, now, self.half_life)),
                last_ms: e.at.get() / 1_000_000,
            })
            .collect();
        let order = |a: &Row<'_>, b: &Row<'_>| {
            b.refusals
                .cmp(&a.refusals)
                .then(b.last_ms.cmp(&a.last_ms))
                .then(a.key.cmp(b.key))
        };
        let count = count.min(rows.len());
        if count > 0 && count < rows.len() {
            rows.select_nth_unstable_by(count - 1, order);
            rows.truncate(count);
        }
        rows.sort_unstable_by(order);
        rows.truncate(count);
        rows
    }

    /// The smallest decayed count held at `now` (0 when empty or not
    /// full): what a key not held may have been refused at most.
    pub fn floor_count(&self, now: Nanos) -> f64 {
        if self.entries.len() < self.capacity {
            return 0.0;
        }
        let now = now.max(self.latest);
        self.heap.first().map_or(0.0, |&i| {
            let e = &self.entries[i as usize];
            decayed(e.count, e.at, now, self.half_life)
        })
    }

    /// A key's decayed count at `now`, unrounded, if held.
    pub fn count_of(&self, key: &[u8], now: Nanos) -> Option<f64> {
        let now = now.max(self.latest);
        let key = held_key(key);
        let entries = &self.entries;
        self.index
            .find(self.hash(&key), |&i| entries[i as usize].key[..] == key[..])
            .map(|&i| {
                let e = &entries[i as usize];
                decayed(e.count, e.at, now, self.half_life)
            })
    }

    /// A new capacity (capped at [`MAX_SIZE`]): growing keeps everything,
    /// shrinking keeps the entries with the largest counts; 0 frees all.
    pub fn resize(&mut self, capacity: usize) {
        let capacity = capacity.min(MAX_SIZE);
        self.capacity = capacity;
        if capacity == 0 {
            self.entries = Vec::new();
            self.heap = Vec::new();
            self.index = HashTable::new();
            return;
        }
        if self.entries.len() <= capacity {
            return;
        }
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| b.level.total_cmp(&a.level));
        entries.truncate(capacity);
        entries.shrink_to_fit();
        self.rebuild(entries);
    }

    /// A new half-life. Counts are decayed lazily from each entry's last
    /// refusal, so the new rate applies to every entry from its last
    /// refusal on (the levels are recomputed, O(k)).
    pub fn set_half_life(&mut self, half_life: Nanos) {
        let half_life = half_life.max(Nanos::new(1));
        if half_life == self.half_life {
            return;
        }
        self.half_life = half_life;
        self.relevel();
    }

    /// Bytes the summary holds on the heap, computed from its allocations
    /// (excluding the allocator's own rounding and headers), and the
    /// structure itself.
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Summary>()
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.heap.capacity() * std::mem::size_of::<u32>()
            + self.index.allocation_size()
            + self.entries.iter().map(|e| e.key.len()).sum::<usize>()
    }

    /// The summary's clock at `now`, moving the levels' origin up when it
    /// lags too far behind.
    fn advance(&mut self, now: Nanos) -> Nanos {
        let now = now.max(self.latest);
        self.latest = now;
        if self.entries.is_empty() {
            self.origin = now;
        } else if now.saturating_sub(self.origin).get() / self.half_life.get() >= REBASE_HALF_LIVES
        {
            self.origin = now;
            self.relevel();
        }
        now
    }

    /// Every level recomputed from the counts, and the heap rebuilt.
    fn relevel(&mut self) {
        let (origin, half_life) = (self.origin, self.half_life);
        for e in &mut self.entries {
            e.level = level(e.count, e.at, origin, half_life);
        }
        let entries = std::mem::take(&mut self.entries);
        self.rebuild(entries);
    }

    /// The heap and the index made anew for `entries`.
    fn rebuild(&mut self, entries: Vec<Entry>) {
        self.entries = entries;
        self.heap = (0..self.entries.len() as u32).collect();
        self.index = HashTable::with_capacity(self.entries.len());
        for (i, e) in self.entries.iter_mut().enumerate() {
            e.slot = i as u32;
        }
        let entries = &self.entries;
        for (i, e) in entries.iter().enumerate() {
            self.index
                .insert_unique(e.hash, i as u32, |&j| entries[j as usize].hash);
        }
        for slot in (0..self.heap.len() / 2).rev() {
            self.sift_down(slot);
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        let mut state = self.hasher.build_hasher();
        state.write(key);
        state.finish()
    }

    fn level_at(&self, slot: usize) -> f64 {
        self.entries[self.heap[slot] as usize].level
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.entries[self.heap[a] as usize].slot = a as u32;
        self.entries[self.heap[b] as usize].slot = b as u32;
    }

    fn sift_up(&mut self, mut slot: usize) {
        while slot > 0 {
            let parent = (slot - 1) / 2;
            if self.level_at(parent) <= self.level_at(slot) {
                break;
            }
            self.swap(parent, slot);
            slot = parent;
        }
    }

    fn sift_down(&mut self, mut slot: usize) {
        let len = self.heap.len();
        loop {
            let (left, right) = (2 * slot + 1, 2 * slot + 2);
            let mut least = slot;
            if left < len && self.level_at(left) < self.level_at(least) {
                least = left;
            }
            if right < len && self.level_at(right) < self.level_at(least) {
                least = right;
            }
            if least == slot {
                break;
            }
            self.swap(slot, least);
            slot = least;
        }
    }

    /// The heap's invariant, every entry's slot and index: for the tests.
    #[cfg(test)]
    pub fn check(&self) {
        assert_eq!(self.heap.len(), self.entries.len());
        assert_eq!(self.index.len(), self.entries.len());
        assert!(self.entries.len() <= self.capacity);
        for (slot, &i) in self.heap.iter().enumerate() {
            assert_eq!(self.entries[i as usize].slot as usize, slot);
            if slot > 0 {
                assert!(self.level_at((slot - 1) / 2) <= self.level_at(slot));
            }
        }
        for e in &self.entries {
            assert!(e.count >= 1.0 && e.key.len() <= MAX_KEY_BYTES);
            assert_eq!(self.hash(&e.key), e.hash);
        }
    }
}

/// A count as of `at`, decayed to `now` (not before `at`).
fn decayed(count: f64, at: Nanos, now: Nanos, half_life: Nanos) -> f64 {
    let elapsed = now.saturating_sub(at).get();
    if elapsed == 0 {
        return count;
    }
    count * (-(elapsed as f64) / half_life.get() as f64).exp2()
}

/// An entry's level: `log2(count) + (at - origin)/h`.
fn level(count: f64, at: Nanos, origin: Nanos, half_life: Nanos) -> f64 {
    let since = i128::from(at.get()) - i128::from(origin.get());
    count.log2() + since as f64 / half_life.get() as f64
}

/// A decayed count rounded down, as RL.TOP shows it.
fn floor(count: f64) -> u64 {
    // `as` saturates, and a NaN (unreachable: counts are finite) is 0.
    count.floor() as u64
}

/// The key as the summary holds it: whole up to [`MAX_KEY_BYTES`] bytes;
/// a longer one as its first 493 bytes, `...` and the 16 hexadecimal
/// digits of a 64-bit digest (FNV-1a) of the whole key, exactly
/// `MAX_KEY_BYTES` bytes in all, so that two long keys that share their
/// first bytes stay apart.
pub fn held_key(key: &[u8]) -> Cow<'_, [u8]> {
    if key.len() <= MAX_KEY_BYTES {
        return Cow::Borrowed(key);
    }
    let digest = key.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut held = Vec::with_capacity(MAX_KEY_BYTES);
    held.extend_from_slice(&key[..KEPT_BYTES]);
    held.extend_from_slice(b"...");
    held.extend_from_slice(format!("{digest:016x}").as_bytes());
    Cow::Owned(held)
}
