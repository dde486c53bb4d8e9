//! The instants of the log's entries: the newest few in the struct (the
//! **tail**), the older ones in a ring in one of two modes, narrow (`u32`
//! offsets from a base) or wide (`u64` instants); how entries move from
//! the tail to the ring, and how the ring grows and shrinks.

use std::collections::{TryReserveError, VecDeque};
use std::mem;

use super::NARROW_SPAN;

/// Entries the tail holds: 7 offsets, their base and length make the
/// log's struct 96 bytes (a unit test holds it there). 15, in 128 bytes,
/// measured no faster on random keys, and costs every key 32 bytes more.
pub(in crate::core) const TAIL: usize = 7;

/// The instants of the entries, in µs since the epoch, oldest first: the
/// ring's, then the tail's.
///
/// An entry is appended to the tail while the tail has room for it and it
/// is within `u32::MAX` µs of the tail's base; otherwise the tail's entries
/// move to the ring in one batch. A call that records a unit thus writes
/// to the struct alone, and the ring's allocation is touched once every
/// [`TAIL`] entries (and when entries are dropped, counted or taken back):
/// on a key that is not in the cache, one cache miss less per call. An
/// entry too far from the tail's base (more than 71 minutes) goes to the
/// ring with the tail, where the ring's modes deal with long spans.
/// Entries are named by their index in the whole sequence, so moving them
/// from the tail to the ring changes no index.
#[derive(Clone, Debug, Default)]
pub(super) struct Times {
    ring: Ring,
    tail: Tail,
}

/// The older entries, in one of two modes.
#[derive(Clone, Debug)]
enum Ring {
    /// Offsets from `base`: every instant in `base ..= base + u32::MAX`.
    Narrow { base: u64, offsets: VecDeque<u32> },
    /// The instants themselves.
    Wide(VecDeque<u64>),
}

/// The newest entries, at most [`TAIL`]: offsets from `base`, which is at
/// or before the oldest of them.
#[derive(Clone, Copy, Debug, Default)]
struct Tail {
    base: u64,
    offsets: [u32; TAIL],
    len: u8,
}

impl Default for Ring {
    fn default() -> Ring {
        Ring::Narrow {
            base: 0,
            offsets: VecDeque::new(),
        }
    }
}

impl Times {
    /// No entries, and a narrow ring with room for `entries` (decoding).
    pub(super) fn with_capacity(entries: usize) -> Result<Times, TryReserveError> {
        let mut offsets = VecDeque::new();
        offsets.try_reserve_exact(entries)?;
        Ok(Times {
            ring: Ring::Narrow { base: 0, offsets },
            tail: Tail::default(),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.ring.len() + self.tail.len()
    }

    /// The instant of the entry at `index`, in µs.
    pub(super) fn get(&self, index: usize) -> Option<u64> {
        let in_ring = self.ring.len();
        match index.checked_sub(in_ring) {
            None => self.ring.get(index),
            Some(i) => self.tail.get(i),
        }
    }

    pub(super) fn front(&self) -> Option<u64> {
        self.ring.front().or_else(|| self.tail.front())
    }

    #[inline]
    pub(super) fn back(&self) -> Option<u64> {
        self.tail.back().or_else(|| self.ring.back())
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.ring.iter().chain(self.tail.iter())
    }

    /// How many entries at the front are at or before `cutoff` (µs).
    #[inline]
    pub(super) fn leading_at_most(&self, cutoff: u64) -> usize {
        let in_ring = self.ring.len();
        let n = self.ring.leading_at_most(cutoff);
        if n < in_ring {
            n
        } else {
            n + self.tail.leading_at_most(cutoff)
        }
    }

    pub(super) fn drop_front(&mut self, n: usize) {
        let in_ring = self.ring.len();
        if n < in_ring {
            self.ring.drop_front(n);
        } else {
            self.ring.clear();
            self.tail.drop_front(n - in_ring);
        }
    }

    /// Moves the newest entry to `t` (µs, not before it) if it can be held
    /// where it is; answers whether it was.
    pub(super) fn set_back(&mut self, t: u64) -> bool {
        if self.tail.len() > 0 {
            self.tail.set_back(t)
        } else {
            self.ring.set_back(t)
        }
    }

    pub(super) fn truncate(&mut self, len: usize) {
        let in_ring = self.ring.len();
        match len.checked_sub(in_ring) {
            Some(in_tail) => self.tail.truncate(in_tail),
            None => {
                self.tail.truncate(0);
                if len == 0 {
                    self.ring.clear();
                } else {
                    self.ring.truncate(len);
                }
            }
        }
    }

    /// Appends `t` (µs, after the newest entry) to the tail if the tail
    /// has room and reach for it and holds the newest entry: the usual
    /// case of a call, which touches only the struct. Answers whether it
    /// did.
    #[inline]
    pub(super) fn push_after_back(&mut self, t: u64) -> bool {
        self.tail.push_after_back(t)
    }

    /// Appends `t` (µs, not before the newest entry): to the tail, or, when
    /// the tail is full or `t` is out of its reach, the tail's entries
    /// first to the ring (see `Times`).
    pub(super) fn push(&mut self, t: u64, room: Room) {
        if self.tail.push(t) {
            return;
        }
        let in_reach = offset_of(self.tail.base, t).is_some();
        self.ring.append(&self.tail, room);
        self.tail.truncate(0);
        if !(in_reach && self.tail.push(t)) {
            self.ring.push(t, room);
        }
    }

    /// Whether the ring is wide.
    #[cfg(test)]
    pub(super) fn is_wide(&self) -> bool {
        matches!(self.ring, Ring::Wide(_))
    }

    /// The base of a narrow ring; `None` when wide.
    #[cfg(test)]
    pub(super) fn narrow_base(&self) -> Option<u64> {
        match self.ring {
            Ring::Narrow { base, .. } => Some(base),
            Ring::Wide(_) => None,
        }
    }

    /// Entries the ring has room for.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Entries in the tail.
    #[cfg(test)]
    pub(super) fn in_tail(&self) -> usize {
        self.tail.len()
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.ring.heap_bytes()
    }

    pub(super) fn shrink_if_sparse(&mut self) {
        self.ring.shrink_if_sparse();
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.ring.shrink_to_fit();
    }
}

impl Tail {
    fn len(&self) -> usize {
        usize::from(self.len)
    }

    fn entries(&self) -> &[u32] {
        self.offsets.get(..self.len()).unwrap_or(&[])
    }

    fn at(&self, offset: u32) -> u64 {
        self.base.saturating_add(u64::from(offset))
    }

    fn get(&self, index: usize) -> Option<u64> {
        self.entries().get(index).map(|&o| self.at(o))
    }

    fn front(&self) -> Option<u64> {
        self.entries().first().map(|&o| self.at(o))
    }

    #[inline]
    fn back(&self) -> Option<u64> {
        self.entries().last().map(|&o| self.at(o))
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries().iter().map(|&o| self.at(o))
    }

    #[inline]
    fn leading_at_most(&self, cutoff: u64) -> usize {
        match cutoff.checked_sub(self.base) {
            None => 0,
            Some(d) => match u32::try_from(d) {
                Ok(o) => self.entries().partition_point(|&x| x <= o),
                Err(_) => self.len(),
            },
        }
    }

    fn drop_front(&mut self, n: usize) {
        let len = self.len();
        if n >= len {
            self.len = 0;
        } else {
            self.offsets.copy_within(n..len, 0);
            self.len = (len - n) as u8;
        }
    }

    fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.len = len as u8;
        }
    }

    fn set_back(&mut self, t: u64) -> bool {
        let len = self.len();
        match (
            offset_of(self.base, t),
            self.offsets.get_mut(len.wrapping_sub(1)),
        ) {
            (Some(offset), Some(back)) if len > 0 => {
                *back = offset;
                true
            }
            _ => false,
        }
    }

    /// Appends `t` (not before the newest entry) if there is room and it is
    /// in reach; an empty tail takes its base from it.
    fn push(&mut self, t: u64) -> bool {
        let len = self.len();
        if len == 0 {
            self.base = t;
        }
        match (offset_of(self.base, t), self.offsets.get_mut(len)) {
            (Some(offset), Some(slot)) => {
                *slot = offset;
                self.len += 1;
                true
            }
            _ => false,
        }
    }

    /// `push`, only if the tail is not empty and `t` is after its newest
    /// entry.
    #[inline]
    fn push_after_back(&mut self, t: u64) -> bool {
        let len = self.len();
        let (Some(&newest), Some(offset)) = (self.entries().last(), offset_of(self.base, t)) else {
            return false;
        };
        match self.offsets.get_mut(len) {
            Some(slot) if offset != newest => {
                *slot = offset;
                self.len += 1;
                true
            }
            _ => false,
        }
    }
}

impl Ring {
    fn len(&self) -> usize {
        match self {
            Ring::Narrow { offsets, .. } => offsets.len(),
            Ring::Wide(times) => times.len(),
        }
    }

    /// The instant of the entry at `index`, in µs.
    fn get(&self, index: usize) -> Option<u64> {
        match self {
            Ring::Narrow { base, offsets } => offsets
                .get(index)
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Ring::Wide(times) => times.get(index).copied(),
        }
    }

    fn front(&self) -> Option<u64> {
        match self {
            Ring::Narrow { base, offsets } => offsets
                .front()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Ring::Wide(times) => times.front().copied(),
        }
    }

    fn back(&self) -> Option<u64> {
        match self {
            Ring::Narrow { base, offsets } => offsets
                .back()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Ring::Wide(times) => times.back().copied(),
        }
    }

    fn iter(&self) -> RingIter<'_> {
        match self {
            Ring::Narrow { base, offsets } => RingIter::Narrow(*base, offsets.iter()),
            Ring::Wide(times) => RingIter::Wide(times.iter()),
        }
    }

    /// How many entries at the front are at or before `cutoff` (µs).
    fn leading_at_most(&self, cutoff: u64) -> usize {
        match self {
            Ring::Narrow { base, offsets } => match cutoff.checked_sub(*base) {
                None => 0,
                Some(offset) => match u32::try_from(offset) {
                    Ok(offset) => leading_at_most(offsets, offset),
                    Err(_) => offsets.len(),
                },
            },
            Ring::Wide(times) => leading_at_most(times, cutoff),
        }
    }

    fn drop_front(&mut self, n: usize) {
        match self {
            Ring::Narrow { offsets, .. } => drop_front(offsets, n),
            Ring::Wide(times) => drop_front(times, n),
        }
    }

    /// Drops every entry; an empty ring is narrow (a wide one frees its
    /// buffer: the next entries decide the mode again).
    fn clear(&mut self) {
        match self {
            Ring::Narrow { offsets, .. } => offsets.clear(),
            Ring::Wide(_) => *self = Ring::default(),
        }
    }

    /// Appends the tail's entries (not before the newest entry), reserving
    /// room for all of them at once when a narrow ring reaches them.
    fn append(&mut self, tail: &Tail, room: Room) {
        let (Some(oldest), Some(newest)) = (tail.front(), tail.back()) else {
            return;
        };
        if let Ring::Narrow { base, offsets } = self {
            if offsets.is_empty() {
                *base = oldest;
            }
            let base = *base;
            if offset_of(base, newest).is_some() {
                reserve(offsets, tail.len(), room);
                offsets.extend(tail.iter().map(|t| offset_of(base, t).unwrap_or(u32::MAX)));
                return;
            }
        }
        for t in tail.iter() {
            self.push(t, room);
        }
    }

    /// Moves the newest entry to `t` (µs, not before it) if the ring holds
    /// it as it is; answers whether it did.
    fn set_back(&mut self, t: u64) -> bool {
        match self {
            Ring::Narrow { base, offsets } => match (offset_of(*base, t), offsets.back_mut()) {
                (Some(offset), Some(back)) => {
                    *back = offset;
                    true
                }
                _ => false,
            },
            Ring::Wide(times) => match times.back_mut() {
                Some(back) => {
                    *back = t;
                    true
                }
                None => false,
            },
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            Ring::Narrow { offsets, .. } => offsets.truncate(len),
            Ring::Wide(times) => times.truncate(len),
        }
    }

    /// Appends `t` (µs, not before the newest entry), changing the base or
    /// the mode when a narrow ring cannot hold it or a wide one could be
    /// narrow (see the module doc).
    fn push(&mut self, t: u64, room: Room) {
        if let Ring::Narrow { base, offsets } = self {
            if offsets.is_empty() {
                *base = t;
            }
            if let Some(offset) = offset_of(*base, t) {
                reserve(offsets, 1, room);
                offsets.push_back(offset);
                return;
            }
        }
        let oldest = self.front().unwrap_or(t);
        if t.saturating_sub(oldest) <= NARROW_SPAN {
            self.narrow_on(oldest, room);
        } else {
            self.widen(room);
        }
        match self {
            Ring::Narrow { base, offsets } => {
                reserve(offsets, 1, room);
                offsets.push_back(offset_of(*base, t).unwrap_or(u32::MAX));
            }
            Ring::Wide(times) => {
                reserve(times, 1, room);
                times.push_back(t);
            }
        }
    }

    /// Makes the ring narrow with base `base`, the oldest entry: rebases a
    /// narrow ring in place, rewrites a wide one.
    fn narrow_on(&mut self, base: u64, room: Room) {
        match self {
            Ring::Narrow {
                base: current,
                offsets,
            } => {
                let shift = offset_of(*current, base).unwrap_or(0);
                let (a, b) = offsets.as_mut_slices();
                for offset in a.iter_mut().chain(b.iter_mut()) {
                    *offset = offset.saturating_sub(shift);
                }
                *current = base;
            }
            Ring::Wide(times) => {
                let mut offsets = VecDeque::new();
                reserve(&mut offsets, times.len() + 1, room);
                offsets.extend(
                    times
                        .iter()
                        .map(|&t| offset_of(base, t).unwrap_or(u32::MAX)),
                );
                *self = Ring::Narrow { base, offsets };
            }
        }
    }

    /// Makes the ring wide.
    fn widen(&mut self, room: Room) {
        if let Ring::Narrow { base, offsets } = self {
            let mut times = VecDeque::new();
            reserve(&mut times, offsets.len() + 1, room);
            times.extend(offsets.iter().map(|&o| base.saturating_add(u64::from(o))));
            *self = Ring::Wide(times);
        }
    }

    /// Entries the ring has room for.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        match self {
            Ring::Narrow { offsets, .. } => offsets.capacity(),
            Ring::Wide(times) => times.capacity(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Ring::Narrow { offsets, .. } => offsets.capacity() * mem::size_of::<u32>(),
            Ring::Wide(times) => times.capacity() * mem::size_of::<u64>(),
        }
    }

    fn shrink_if_sparse(&mut self) {
        match self {
            Ring::Narrow { offsets, .. } => shrink_if_sparse(offsets),
            Ring::Wide(times) => shrink_if_sparse(times),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Ring::Narrow { offsets, .. } => offsets.shrink_to_fit(),
            Ring::Wide(times) => times.shrink_to_fit(),
        }
    }
}

/// The instants of a ring, oldest first, in µs.
enum RingIter<'a> {
    Narrow(u64, std::collections::vec_deque::Iter<'a, u32>),
    Wide(std::collections::vec_deque::Iter<'a, u64>),
}

impl Iterator for RingIter<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        match self {
            RingIter::Narrow(base, offsets) => offsets
                .next()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            RingIter::Wide(times) => times.next().copied(),
        }
    }
}

/// `t - base` as an offset, if it is one.
pub(super) fn offset_of(base: u64, t: u64) -> Option<u32> {
    t.checked_sub(base).and_then(|d| u32::try_from(d).ok())
}

/// How many values at the front of `ring` (nondecreasing) are `<= cutoff`:
/// O(1) when none or all are, else a galloping search from the front,
/// O(log k) for an answer of k.
pub(in crate::core) fn leading_at_most<T: Copy + Ord>(ring: &VecDeque<T>, cutoff: T) -> usize {
    let len = ring.len();
    match (ring.front(), ring.back()) {
        (Some(&oldest), Some(&newest)) if oldest <= cutoff => {
            if newest <= cutoff {
                return len;
            }
        }
        _ => return 0,
    }
    // ring[lo] <= cutoff < ring[hi]: gallop, then bisect.
    let (mut lo, mut hi) = (0, len - 1);
    let mut step = 1;
    while step < hi - lo {
        let probe = lo + step;
        if ring[probe] > cutoff {
            hi = probe;
            break;
        }
        lo = probe;
        step *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ring[mid] <= cutoff {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

fn drop_front<T>(ring: &mut VecDeque<T>, n: usize) {
    ring.drain(..n.min(ring.len()));
}

/// Up to this many entries a ring's planned capacity is a power of two.
const SMALL_RING: usize = 64;

/// The capacity planned for `needed` entries: the next power of two (at
/// least 4) while that is at most `SMALL_RING`, else 1/16 more, rounded
/// up to a multiple of 4. A short log, which most keys hold, is allocated
/// 5 times on its way to 64 entries instead of 16 (a reallocation costs
/// more than the rest of a call); a long one keeps its few bytes a unit.
fn planned(needed: usize) -> usize {
    if needed <= SMALL_RING {
        return needed.next_power_of_two().max(4);
    }
    let more = needed.saturating_add(needed / 16);
    more.checked_next_multiple_of(4).unwrap_or(more)
}

/// How a ring grows: never past `limit` entries unless the entries
/// themselves need it, and either to the planned capacity (a log of one
/// entry per unit, which fills in steps of a unit) or **tightly**, a
/// quarter more than needed, no rounding (a log with PRECISION, whose few
/// entries each hold many units: two entries take two slots, not four).
#[derive(Clone, Copy, Debug)]
pub(super) struct Room {
    pub(super) limit: usize,
    pub(super) tight: bool,
}

impl Room {
    /// No bound but the entries' (decoding).
    pub(super) const UNBOUNDED: Room = Room {
        limit: usize::MAX,
        tight: false,
    };
}

/// Makes room for `additional` more entries: the planned capacity (or the
/// tight one), but never past `room.limit` unless the entries themselves
/// need it.
#[inline]
pub(super) fn reserve<T>(ring: &mut VecDeque<T>, additional: usize, room: Room) {
    if ring.len().saturating_add(additional) > ring.capacity() {
        grow(ring, additional, room);
    }
}

#[cold]
#[inline(never)]
fn grow<T>(ring: &mut VecDeque<T>, additional: usize, room: Room) {
    let len = ring.len();
    let needed = len.saturating_add(additional);
    let target = if room.tight {
        needed.saturating_add(needed / 4)
    } else {
        planned(needed)
    };
    let target = target.min(room.limit).max(needed);
    ring.reserve_exact(target - len);
}

/// Shrinks a ring holding more than twice the capacity planned for its
/// length (plus 8 entries) back to that: amortized O(1), as the length
/// must then halve, or grow past the planned capacity, before the next
/// reallocation; and a length that wavers (traffic does) does not
/// reallocate at every wave.
pub(super) fn shrink_if_sparse<T>(ring: &mut VecDeque<T>) {
    let planned = planned(ring.len());
    if ring.capacity() > planned.saturating_mul(2).saturating_add(8) {
        ring.shrink_to(planned);
    }
}
