//! The instants of the log's entries: the newest two in the struct (the
//! **tail**), the older ones in a ring in one of two modes, narrow (`u32`
//! offsets from a base) or wide (`u64` instants); how entries move from
//! the tail to the ring, and how the ring grows and shrinks.

use std::collections::{TryReserveError, VecDeque};
use std::mem;

use super::NARROW_SPAN;

/// Entries the tail holds: two offsets fill the 8 bytes that the log's
/// struct has left in one cache line (64 bytes; a unit test holds it
/// there). A longer tail with a base of its own (7 entries in 96 bytes, 15
/// in 128) makes the struct two cache lines, and on keys that are not in
/// the cache the second line cost about what the ring's did (README,
/// Performance).
pub(in crate::core) const TAIL: usize = 2;

/// A tail slot that holds no entry (an entry at this offset goes to the
/// ring).
const EMPTY: u32 = u32::MAX;

/// The instants of the entries, in µs since the epoch, oldest first: the
/// ring's, then the tail's.
///
/// The newest entries, up to [`TAIL`], are kept in the struct (the
/// **tail**) as offsets from the narrow ring's base; when the tail is full
/// they move to the ring in one batch. A call that records a unit thus
/// reads nothing of the ring's allocation (the newest entry is in the
/// struct) and writes to it one time in two: on a key that is not in the
/// cache, about a cache miss less per call. An entry the base does
/// not reach goes to the ring after the tail's, and the ring rebases or
/// turns wide as before; a wide ring keeps no tail. Entries are named by
/// their index in the whole sequence, so moving them from the tail to the
/// ring changes no index.
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

/// The newest entries, at most [`TAIL`]: offsets from the narrow ring's
/// base in the first slots, [`EMPTY`] in the others. Empty while the ring
/// is wide, and whenever the ring's base changes.
#[derive(Clone, Copy, Debug)]
struct Tail([u32; TAIL]);

impl Default for Ring {
    fn default() -> Ring {
        Ring::Narrow {
            base: 0,
            offsets: VecDeque::new(),
        }
    }
}

impl Default for Tail {
    fn default() -> Tail {
        Tail([EMPTY; TAIL])
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

    pub(super) fn is_empty(&self) -> bool {
        self.tail.is_empty() && self.ring.len() == 0
    }

    /// The narrow ring's base, which the tail's offsets are from (0 when
    /// wide: the tail is empty).
    fn base(&self) -> u64 {
        match self.ring {
            Ring::Narrow { base, .. } => base,
            Ring::Wide(_) => 0,
        }
    }

    fn in_tail(&self, offset: u32) -> u64 {
        self.base().saturating_add(u64::from(offset))
    }

    /// The instant of the entry at `index`, in µs.
    pub(super) fn get(&self, index: usize) -> Option<u64> {
        let in_ring = self.ring.len();
        match index.checked_sub(in_ring) {
            None => self.ring.get(index),
            Some(i) => self.tail.entries().get(i).map(|&o| self.in_tail(o)),
        }
    }

    pub(super) fn front(&self) -> Option<u64> {
        let first = || self.tail.entries().first().map(|&o| self.in_tail(o));
        self.ring.front().or_else(first)
    }

    #[inline]
    pub(super) fn back(&self) -> Option<u64> {
        match self.tail.back() {
            Some(o) => Some(self.in_tail(o)),
            None => self.ring.back(),
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let tail = self.tail.entries().iter().map(|&o| self.in_tail(o));
        self.ring.iter().chain(tail)
    }

    /// How many entries at the front are at or before `cutoff` (µs).
    #[inline]
    pub(super) fn leading_at_most(&self, cutoff: u64) -> usize {
        let in_ring = self.ring.len();
        let n = self.ring.leading_at_most(cutoff);
        if n < in_ring {
            return n;
        }
        let tail = self.tail.entries();
        n + match cutoff.checked_sub(self.base()) {
            None => 0,
            Some(d) => match u32::try_from(d) {
                Ok(offset) => tail.partition_point(|&o| o <= offset),
                Err(_) => tail.len(),
            },
        }
    }

    pub(super) fn drop_front(&mut self, n: usize) {
        match &mut self.ring {
            Ring::Narrow { offsets, .. } if n < offsets.len() => drop_front(offsets, n),
            Ring::Wide(times) if n < times.len() => drop_front(times, n),
            ring => {
                let in_ring = ring.len();
                // A narrow ring keeps its base, which the tail's offsets
                // are from.
                ring.clear();
                self.tail.drop_front(n - in_ring);
            }
        }
    }

    /// Moves the newest entry to `t` (µs, not before it) if it can be held
    /// where it is; answers whether it was.
    pub(super) fn set_back(&mut self, t: u64) -> bool {
        let len = self.tail.len();
        if len == 0 {
            return self.ring.set_back(t);
        }
        match (tail_offset(self.base(), t), self.tail.0.get_mut(len - 1)) {
            (Some(offset), Some(back)) => {
                *back = offset;
                true
            }
            _ => false,
        }
    }

    pub(super) fn truncate(&mut self, len: usize) {
        let in_ring = self.ring.len();
        match len.checked_sub(in_ring) {
            Some(in_tail) => self.tail.truncate(in_tail),
            None => {
                self.tail = Tail::default();
                if len == 0 {
                    self.ring.clear();
                } else {
                    self.ring.truncate(len);
                }
            }
        }
    }

    /// Appends `t` (µs, after the newest entry, which is in the tail) if
    /// the ring's base reaches it: the usual case of a call, which touches
    /// only the struct (and the ring, to move a full tail there). Answers
    /// whether it did.
    #[inline]
    pub(super) fn push_after_back(&mut self, t: u64, room: Room) -> bool {
        let Ring::Narrow { base, offsets } = &mut self.ring else {
            return false;
        };
        let len = self.tail.len();
        let (Some(&newest), Some(offset)) =
            (self.tail.0.get(len.wrapping_sub(1)), tail_offset(*base, t))
        else {
            return false;
        };
        if offset == newest {
            return false;
        }
        match self.tail.0.get_mut(len) {
            Some(slot) => *slot = offset,
            None => {
                flush(offsets, &mut self.tail, room);
                self.tail = Tail::one(offset);
            }
        }
        true
    }

    /// Appends `t` (µs, not before the newest entry): to the tail, after
    /// moving a full tail to the ring; or, when the ring's base does not
    /// reach it (or the ring is wide), to the ring, after the tail's
    /// entries, changing the base or the mode as needed (see the module
    /// doc).
    pub(super) fn push(&mut self, t: u64, room: Room) {
        if let Ring::Narrow { base, offsets } = &mut self.ring {
            if offsets.is_empty() && self.tail.is_empty() {
                *base = t;
            }
            if let Some(offset) = tail_offset(*base, t) {
                if !self.tail.push(offset) {
                    flush(offsets, &mut self.tail, room);
                    self.tail = Tail::one(offset);
                }
                return;
            }
            flush(offsets, &mut self.tail, room);
        }
        self.ring.push(t, room);
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
    pub(super) fn tail_len(&self) -> usize {
        self.tail.len()
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.ring.heap_bytes()
    }

    #[inline]
    pub(super) fn shrink_if_sparse(&mut self) {
        self.ring.shrink_if_sparse();
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.ring.shrink_to_fit();
    }
}

/// `t - base` as an offset the tail can hold.
fn tail_offset(base: u64, t: u64) -> Option<u32> {
    offset_of(base, t).filter(|&offset| offset != EMPTY)
}

/// Moves the tail's entries to the end of the narrow ring whose base they
/// are offsets from, in one reservation.
fn flush(offsets: &mut VecDeque<u32>, tail: &mut Tail, room: Room) {
    let entries = tail.entries();
    if !entries.is_empty() {
        reserve(offsets, entries.len(), room);
        for &offset in entries {
            offsets.push_back(offset);
        }
        *tail = Tail::default();
    }
}

impl Tail {
    fn one(offset: u32) -> Tail {
        let mut tail = Tail::default();
        tail.0[0] = offset;
        tail
    }

    /// The slots in use (the first ones).
    #[inline]
    fn len(&self) -> usize {
        self.0.iter().position(|&o| o == EMPTY).unwrap_or(TAIL)
    }

    fn is_empty(&self) -> bool {
        self.0[0] == EMPTY
    }

    /// The newest entry's offset.
    #[inline]
    fn back(&self) -> Option<u32> {
        self.0.iter().rev().find(|&&o| o != EMPTY).copied()
    }

    fn entries(&self) -> &[u32] {
        self.0.get(..self.len()).unwrap_or(&[])
    }

    /// Appends `offset` (not [`EMPTY`]) if there is room.
    fn push(&mut self, offset: u32) -> bool {
        let len = self.len();
        match self.0.get_mut(len) {
            Some(slot) => {
                *slot = offset;
                true
            }
            None => false,
        }
    }

    fn drop_front(&mut self, n: usize) {
        let len = self.len();
        let kept = len.saturating_sub(n);
        self.0.copy_within(len - kept..len, 0);
        self.truncate(kept);
    }

    fn truncate(&mut self, len: usize) {
        if let Some(rest) = self.0.get_mut(len..) {
            rest.fill(EMPTY);
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

    /// Drops every entry; an empty ring is narrow (a wide one frees its
    /// buffer: the next entries decide the mode again).
    fn clear(&mut self) {
        match self {
            Ring::Narrow { offsets, .. } => offsets.clear(),
            Ring::Wide(_) => *self = Ring::default(),
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

    #[inline]
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
#[inline]
pub(super) fn shrink_if_sparse<T>(ring: &mut VecDeque<T>) {
    // The planned capacity is at least the length: no need to plan it
    // while the capacity is at most twice the length plus 8.
    if ring.capacity() > ring.len().saturating_mul(2).saturating_add(8) {
        shrink_to_planned(ring);
    }
}

/// The rest of [`shrink_if_sparse`], out of line: the check above runs on
/// every call that drops entries, the shrinking seldom.
#[cold]
#[inline(never)]
fn shrink_to_planned<T>(ring: &mut VecDeque<T>) {
    let planned = planned(ring.len());
    if ring.capacity() > planned.saturating_mul(2).saturating_add(8) {
        ring.shrink_to(planned);
    }
}
