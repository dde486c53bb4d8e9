//! The log's entries: how many units are counted and which one is the
//! k-th, and how units are recorded (one entry each, a counted entry, or
//! joined with PRECISION), dropped when they leave, and taken back.

use super::times::{reserve, shrink_if_sparse, Room};
use super::{nanos, SlideParams, SlideState, COUNT_FROM, NS_PER_US};
use crate::core::Nanos;

impl SlideState {
    /// The instant the log is read and written at for a call at `now`:
    /// `now`, or the log's clock if `now` is before it (the clock went
    /// back).
    pub(super) fn read_at(&self, now: Nanos) -> Nanos {
        if self.times.is_empty() {
            now
        } else {
            now.max(self.clock)
        }
    }

    /// The instant of an entry kept at `us`: its microsecond, or the clock
    /// in the clock's own microsecond.
    pub(super) fn instant(&self, us: u64) -> Nanos {
        nanos(us).min(self.clock)
    }

    /// How many entries at the front have left by `at`: those whose
    /// instant is at or before `at - window`.
    #[inline]
    pub(super) fn expired_at(&self, at: Nanos, window: Nanos) -> usize {
        // Before `window` has passed since the epoch nothing can have left.
        let Some(cutoff) = at.get().checked_sub(window.get()) else {
            return 0;
        };
        if self.clock.get() <= cutoff {
            // Every instant is at or before the clock.
            return self.times.len();
        }
        // The others are at their microseconds: `e` has left when
        // `e * 1000 <= cutoff` (the clock's microsecond, after the cutoff,
        // is not among them).
        self.times.leading_at_most(cutoff / NS_PER_US)
    }

    /// Units held.
    pub(super) fn units(&self) -> u64 {
        let extra = self
            .counts
            .as_ref()
            .map_or(0, |c| c.end.wrapping_sub(c.origin));
        self.times.len() as u64 + u64::from(extra)
    }

    /// Units held in the entries before index `index`.
    #[inline]
    pub(super) fn units_before(&self, index: usize) -> u64 {
        let Some(c) = &self.counts else {
            return index as u64;
        };
        let k = c
            .records
            .partition_point(|&(seq, _)| (seq.wrapping_sub(c.front) as usize) < index);
        let sum = c.records.get(k).map_or(c.end, |&(_, before)| before);
        index as u64 + u64::from(sum.wrapping_sub(c.origin))
    }

    /// The index of the entry holding the unit of rank `rank` (0 for the
    /// oldest unit held).
    pub(in crate::core) fn entry_of_unit(&self, rank: u64) -> usize {
        let as_index = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let Some(c) = &self.counts else {
            return as_index(rank);
        };
        // The units before a counted entry: its index plus the extra units
        // of the counted entries before it.
        let before = |&(seq, sum): &(u32, u32)| {
            u64::from(seq.wrapping_sub(c.front)) + u64::from(sum.wrapping_sub(c.origin))
        };
        let k = c.records.partition_point(|r| before(r) <= rank);
        let Some(k) = k.checked_sub(1) else {
            // Before the first counted entry, one unit per entry.
            return as_index(rank);
        };
        let record = c.records[k];
        let index = u64::from(record.0.wrapping_sub(c.front));
        let after = c.records.get(k + 1).map_or(c.end, |&(_, sum)| sum);
        let count = u64::from(after.wrapping_sub(record.1)) + 1;
        let first = before(&record);
        if rank < first + count {
            as_index(index)
        } else {
            // In the entries of one unit after it.
            as_index(index + 1 + (rank - first - count))
        }
    }

    /// The count of the entry at `index` (O(log n); for whole-log walks
    /// `encode` does better).
    pub(super) fn count_at(&self, index: usize) -> u64 {
        self.units_before(index + 1) - self.units_before(index)
    }

    /// Whether the entry at `index` is counted, for one of the two newest.
    pub(super) fn is_counted_near_back(&self, index: usize) -> bool {
        self.counts.as_ref().is_some_and(|c| {
            c.records
                .back()
                .is_some_and(|&(seq, _)| seq.wrapping_sub(c.front) as usize == index)
        })
    }

    /// Appends an entry at `t` (µs, not before the newest) holding `count`
    /// units (at least 1).
    pub(super) fn push_entry(&mut self, t: u64, count: u64, room: Room) {
        self.times.push(t, room);
        if count > 1 {
            let index = (self.times.len() - 1) as u32;
            let c = self.counts.get_or_insert_with(Box::default);
            reserve(&mut c.records, 1, room);
            c.records.push_back((c.front.wrapping_add(index), c.end));
            c.end = c.end.wrapping_add((count - 1) as u32);
            c.first = t;
        }
    }

    /// The instant (µs) of the newest entry's first unit: its own instant
    /// unless it joined later units (PRECISION). `None` when empty.
    pub(super) fn first_of_newest(&self) -> Option<u64> {
        let newest = self.times.back()?;
        let len = self.times.len();
        match &self.counts {
            Some(c) if self.is_counted_near_back(len - 1) => Some(c.first.min(newest)),
            _ => Some(newest),
        }
    }

    /// Records `quantity` units at `t` (µs, not before the newest entry)
    /// with PRECISION `d` (> 0): they join the newest entry when `t` is
    /// less than `d` after its first unit, else they start an entry of
    /// their own (one entry, whatever the quantity).
    pub(super) fn record_within(&mut self, t: u64, quantity: u64, d: Nanos, room: Room) {
        if quantity == 0 {
            return;
        }
        match self.first_of_newest() {
            Some(first) if t.saturating_sub(first).saturating_mul(NS_PER_US) < d.get() => {
                self.join(t, quantity, room);
            }
            _ => self.push_entry(t, quantity, room),
        }
    }

    /// RL.CHARGE's recording of `quantity` units at `t` (µs, not before
    /// the newest entry) under `params`: as `record` (exact) or
    /// `record_within` (PRECISION) would, unless that takes the log past
    /// its bound of entries; then they join the newest entry.
    pub(super) fn charge_at(&mut self, t: u64, quantity: u64, params: &SlideParams) {
        let d = params.precision;
        let mut bound = params.limit;
        if d > Nanos::ZERO {
            bound = bound.min((params.window.get() / d.get()).saturating_add(1));
        }
        let bound = usize::try_from(bound).unwrap_or(usize::MAX);
        let room = Room {
            limit: bound,
            tight: d > Nanos::ZERO,
        };
        // `record` adds at most two entries (below COUNT_FROM units, one
        // a unit), `record_within` at most one.
        let adds = if d > Nanos::ZERO { 1 } else { 2 };
        if self.times.len().saturating_add(adds) <= bound {
            if d == Nanos::ZERO {
                self.record(t, quantity, room);
            } else {
                self.record_within(t, quantity, d, room);
            }
        } else if self.times.is_empty() {
            // A limit of 1: the units are one entry, however few.
            self.push_entry(t, quantity, room);
        } else {
            self.join(t, quantity, room);
        }
    }

    /// Adds `quantity` units to the newest entry (there is one) and moves
    /// its instant to `t` (µs, not before it); its first unit stays.
    fn join(&mut self, t: u64, quantity: u64, room: Room) {
        let len = self.times.len();
        let Some(first) = self.first_of_newest() else {
            return;
        };
        if self.is_counted_near_back(len - 1) {
            // The usual case: a counted newest entry, moved in place.
            if self.times.set_back(t) {
                if let Some(c) = self.counts.as_mut() {
                    c.end = c.end.wrapping_add(quantity as u32);
                    c.joined = true;
                }
                return;
            }
        }
        // Take the newest entry out and push it back at `t` with its units
        // and the new ones (the push may rebase or change the mode).
        let count = self.count_at(len - 1);
        if self.is_counted_near_back(len - 1) {
            if let Some(c) = self.counts.as_mut() {
                if let Some((_, before)) = c.records.pop_back() {
                    c.end = before;
                }
            }
        }
        self.times.truncate(len - 1);
        self.push_entry(t, count.saturating_add(quantity), room);
        if let Some(c) = self.counts.as_mut() {
            c.first = first;
            c.joined = true;
        }
    }

    /// After a refund took whole entries from the back: the new newest
    /// entry's first unit is not known if it may have joined units, so it
    /// is taken at the previous entry's instant (or 0), which is never
    /// after it. Earlier than the truth only means fewer units join it:
    /// a unit is still never counted more than PRECISION late.
    fn forget_first_of_newest(&mut self) {
        let len = self.times.len();
        if len == 0 || !self.is_counted_near_back(len - 1) {
            return;
        }
        let previous = len.checked_sub(2).and_then(|i| self.times.get(i));
        let own = self.times.back().unwrap_or(0);
        if let Some(c) = self.counts.as_mut() {
            c.first = if c.joined { previous.unwrap_or(0) } else { own };
        }
    }

    /// Records `quantity` units at `t` (µs, not before the newest entry):
    /// into the newest entry if it is counted and at `t`, into one counted
    /// entry if that makes [`COUNT_FROM`] units at `t` or more (taking in
    /// the single-unit entries at `t`), else one entry per unit.
    pub(super) fn record(&mut self, t: u64, quantity: u64, room: Room) {
        if quantity == 0 {
            return;
        }
        // The usual case first: one unit, in a microsecond of its own,
        // appended to the tail in the struct.
        if quantity == 1 && self.times.push_after_back(t, room) {
            return;
        }
        let len = self.times.len();
        if self.times.back() == Some(t) {
            if self.is_counted_near_back(len - 1) {
                if let Some(c) = self.counts.as_mut() {
                    c.end = c.end.wrapping_add(quantity as u32);
                }
                return;
            }
            let twin = len >= 2
                && self.times.get(len - 2) == Some(t)
                && !self.is_counted_near_back(len - 2);
            let singles: usize = if twin { 2 } else { 1 };
            if singles as u64 + quantity >= COUNT_FROM {
                self.times.truncate(len - singles);
                self.push_entry(t, singles as u64 + quantity, room);
                return;
            }
        } else if quantity >= COUNT_FROM {
            self.push_entry(t, quantity, room);
            return;
        }
        for _ in 0..quantity {
            self.push_entry(t, 1, room);
        }
    }

    /// Drops the `n` oldest entries.
    pub(super) fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.times.drop_front(n);
        if let Some(c) = self.counts.as_mut() {
            let k = c
                .records
                .partition_point(|&(seq, _)| (seq.wrapping_sub(c.front) as usize) < n);
            c.records.drain(..k);
            c.origin = c.records.front().map_or(c.end, |&(_, before)| before);
            c.front = c.front.wrapping_add(n as u32);
            if c.records.is_empty() {
                self.counts = None;
            }
        }
    }

    /// Keeps the `keep` oldest units, removing the newest others.
    pub(super) fn keep_units(&mut self, keep: u64) {
        if keep >= self.units() {
            return;
        }
        if keep == 0 {
            self.times.truncate(0);
            self.counts = None;
            return;
        }
        let last = self.entry_of_unit(keep - 1);
        let in_last = keep - self.units_before(last);
        let newest_kept = last + 1 == self.times.len();
        self.times.truncate(last + 1);
        if let Some(c) = self.counts.as_mut() {
            let k = c
                .records
                .partition_point(|&(seq, _)| (seq.wrapping_sub(c.front) as usize) <= last);
            if let Some(&(_, before)) = c.records.get(k) {
                c.end = before;
            }
            c.records.truncate(k);
            if let Some(&(seq, before)) = c.records.back() {
                if seq.wrapping_sub(c.front) as usize == last {
                    // The entry keeps `in_last` of its units.
                    c.end = before.wrapping_add((in_last - 1) as u32);
                    if in_last == 1 {
                        c.records.pop_back();
                    }
                }
            }
            if c.records.is_empty() {
                self.counts = None;
            }
        }
        if !newest_kept {
            self.forget_first_of_newest();
        }
    }

    #[inline]
    pub(super) fn shrink_if_sparse(&mut self) {
        self.times.shrink_if_sparse();
        if let Some(c) = self.counts.as_mut() {
            shrink_if_sparse(&mut c.records);
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.times.shrink_to_fit();
        if let Some(c) = self.counts.as_mut() {
            c.records.shrink_to_fit();
        }
    }
}
