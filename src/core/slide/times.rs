//! The instants of the log's entries: a ring in one of two modes, narrow
//! (`u32` offsets from a base) or wide (`u64` instants), and how the rings
//! of a log grow and shrink.

use std::collections::VecDeque;
use std::mem;

use super::NARROW_SPAN;

/// The instants of the entries, in µs since the epoch, in one of two modes.
#[derive(Clone, Debug)]
pub(super) enum Times {
    /// Offsets from `base`: every instant in `base ..= base + u32::MAX`.
    Narrow { base: u64, offsets: VecDeque<u32> },
    /// The instants themselves.
    Wide(VecDeque<u64>),
}

impl Default for Times {
    fn default() -> Times {
        Times::Narrow {
            base: 0,
            offsets: VecDeque::new(),
        }
    }
}

impl Times {
    pub(super) fn len(&self) -> usize {
        match self {
            Times::Narrow { offsets, .. } => offsets.len(),
            Times::Wide(times) => times.len(),
        }
    }

    /// The instant of the entry at `index`, in µs.
    pub(super) fn get(&self, index: usize) -> Option<u64> {
        match self {
            Times::Narrow { base, offsets } => offsets
                .get(index)
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Times::Wide(times) => times.get(index).copied(),
        }
    }

    pub(super) fn front(&self) -> Option<u64> {
        match self {
            Times::Narrow { base, offsets } => offsets
                .front()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Times::Wide(times) => times.front().copied(),
        }
    }

    pub(super) fn back(&self) -> Option<u64> {
        match self {
            Times::Narrow { base, offsets } => offsets
                .back()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Times::Wide(times) => times.back().copied(),
        }
    }

    pub(super) fn iter(&self) -> TimesIter<'_> {
        match self {
            Times::Narrow { base, offsets } => TimesIter::Narrow(*base, offsets.iter()),
            Times::Wide(times) => TimesIter::Wide(times.iter()),
        }
    }

    /// How many entries at the front are at or before `cutoff` (µs).
    pub(super) fn leading_at_most(&self, cutoff: u64) -> usize {
        match self {
            Times::Narrow { base, offsets } => match cutoff.checked_sub(*base) {
                None => 0,
                Some(offset) => match u32::try_from(offset) {
                    Ok(offset) => leading_at_most(offsets, offset),
                    Err(_) => offsets.len(),
                },
            },
            Times::Wide(times) => leading_at_most(times, cutoff),
        }
    }

    pub(super) fn drop_front(&mut self, n: usize) {
        match self {
            Times::Narrow { offsets, .. } => drop_front(offsets, n),
            Times::Wide(times) => drop_front(times, n),
        }
    }

    /// Moves the newest entry to `t` (µs, not before it) if the ring holds
    /// it as it is; answers whether it did.
    pub(super) fn set_back(&mut self, t: u64) -> bool {
        match self {
            Times::Narrow { base, offsets } => match (offset_of(*base, t), offsets.back_mut()) {
                (Some(offset), Some(back)) => {
                    *back = offset;
                    true
                }
                _ => false,
            },
            Times::Wide(times) => match times.back_mut() {
                Some(back) => {
                    *back = t;
                    true
                }
                None => false,
            },
        }
    }

    pub(super) fn truncate(&mut self, len: usize) {
        match self {
            Times::Narrow { offsets, .. } => offsets.truncate(len),
            Times::Wide(times) => times.truncate(len),
        }
    }

    /// Appends `t` (µs, not before the newest entry), changing the base or
    /// the mode when a narrow ring cannot hold it or a wide one could be
    /// narrow (see the module doc).
    pub(super) fn push(&mut self, t: u64, room: Room) {
        if let Times::Narrow { base, offsets } = self {
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
            Times::Narrow { base, offsets } => {
                reserve(offsets, 1, room);
                offsets.push_back(offset_of(*base, t).unwrap_or(u32::MAX));
            }
            Times::Wide(times) => {
                reserve(times, 1, room);
                times.push_back(t);
            }
        }
    }

    /// Makes the ring narrow with base `base`, the oldest entry: rebases a
    /// narrow ring in place, rewrites a wide one.
    fn narrow_on(&mut self, base: u64, room: Room) {
        match self {
            Times::Narrow {
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
            Times::Wide(times) => {
                let mut offsets = VecDeque::new();
                reserve(&mut offsets, times.len() + 1, room);
                offsets.extend(
                    times
                        .iter()
                        .map(|&t| offset_of(base, t).unwrap_or(u32::MAX)),
                );
                *self = Times::Narrow { base, offsets };
            }
        }
    }

    /// Makes the ring wide.
    fn widen(&mut self, room: Room) {
        if let Times::Narrow { base, offsets } = self {
            let mut times = VecDeque::new();
            reserve(&mut times, offsets.len() + 1, room);
            times.extend(offsets.iter().map(|&o| base.saturating_add(u64::from(o))));
            *self = Times::Wide(times);
        }
    }

    /// Entries the ring has room for.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        match self {
            Times::Narrow { offsets, .. } => offsets.capacity(),
            Times::Wide(times) => times.capacity(),
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            Times::Narrow { offsets, .. } => offsets.capacity() * mem::size_of::<u32>(),
            Times::Wide(times) => times.capacity() * mem::size_of::<u64>(),
        }
    }

    pub(super) fn shrink_if_sparse(&mut self) {
        match self {
            Times::Narrow { offsets, .. } => shrink_if_sparse(offsets),
            Times::Wide(times) => shrink_if_sparse(times),
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        match self {
            Times::Narrow { offsets, .. } => offsets.shrink_to_fit(),
            Times::Wide(times) => times.shrink_to_fit(),
        }
    }
}

/// The instants of a ring, oldest first, in µs.
pub(super) enum TimesIter<'a> {
    Narrow(u64, std::collections::vec_deque::Iter<'a, u32>),
    Wide(std::collections::vec_deque::Iter<'a, u64>),
}

impl Iterator for TimesIter<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        match self {
            TimesIter::Narrow(base, offsets) => offsets
                .next()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            TimesIter::Wide(times) => times.next().copied(),
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
