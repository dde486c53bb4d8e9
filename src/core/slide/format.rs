//! RL.SLIDE's saved formats: today's (tag `M`, RDB encoding version 2),
//! and the first (tag `L`, version 1), which is still read.

use std::mem;

use super::times::{Room, Times, TAIL};
use super::{first_ns_of, micros_up, SlideState, MAX_LIMIT, MAX_MICROS, MAX_UNITS, V1_TAG};
use crate::core::codec::{Reader, Writer};
use crate::core::{DecodeError, Nanos};

impl SlideState {
    /// Canonical encoding (tag `M`, RDB encoding version 2), all varints
    /// (`codec::Writer::varint`):
    ///
    /// ```text
    /// n                         the number of entries
    /// n times:
    ///   (delta << 1) | counted  delta: µs since the previous entry (for
    ///                           the first, since the epoch)
    ///   count - 2               only when counted (count >= 2)
    /// if n > 0:
    ///   clock - first           ns; first: the first nanosecond of the
    ///                           newest entry's µs, (µs - 1) * 1000 + 1
    /// only if entries may have joined units (PRECISION):
    ///   newest - first          µs: how long before the newest entry's
    ///                           instant its first unit came (0 when it
    ///                           is an entry of one unit)
    /// ```
    ///
    /// Dense traffic takes one or two bytes an entry, and no entry more
    /// than it takes in memory; the clock usually one or two bytes. The
    /// mode, base and capacity are not part of it. The last field is
    /// written only once a counted entry may have joined units, so a key
    /// that never used PRECISION encodes as it did before the option.
    pub(super) fn encode_v2(&self) -> Vec<u8> {
        let n = self.times.len();
        let mut w = Writer::with_capacity(10 + 2 * n);
        w.varint(n as u64);
        let mut records = self
            .counts
            .as_ref()
            .map(|c| (c, c.records.iter().peekable()));
        let mut previous = 0;
        for (i, t) in self.times.iter().enumerate() {
            let mut count = 1;
            if let Some((c, iter)) = records.as_mut() {
                if let Some(&&(seq, before)) = iter.peek() {
                    if seq.wrapping_sub(c.front) as usize == i {
                        iter.next();
                        let after = iter.peek().map_or(c.end, |&&(_, next)| next);
                        count = u64::from(after.wrapping_sub(before)) + 1;
                    }
                }
            }
            let delta = t.saturating_sub(previous);
            w.varint((delta << 1) | u64::from(count > 1));
            if count > 1 {
                w.varint(count - 2);
            }
            previous = t;
        }
        if n > 0 {
            w.varint(self.clock.get().saturating_sub(first_ns_of(previous)));
        }
        if self.counts.as_ref().is_some_and(|c| c.joined) {
            let first = self.first_of_newest().unwrap_or(previous);
            w.varint(previous.saturating_sub(first));
        }
        w.into_bytes()
    }

    /// Decodes what `encode` wrote, validating everything: the exact
    /// length, at most `MAX_LIMIT` entries and `MAX_UNITS` units, instants and the
    /// clock within range. Every entry takes at least a byte, so what is
    /// reserved is bounded by the payload's own length (at most 8 bytes of
    /// memory per byte).
    pub(super) fn decode_v2(bytes: &[u8]) -> Result<SlideState, DecodeError> {
        let mut r = Reader::new(bytes);
        let n = r.varint()?;
        if n > MAX_LIMIT {
            return Err(DecodeError::Invalid(
                "slide log holds more entries than any limit",
            ));
        }
        let n = usize::try_from(n).map_err(|_| DecodeError::Length)?;
        if n > r.remaining() {
            return Err(DecodeError::Length);
        }
        let mut log = SlideState::with_capacity(n)?;
        let mut previous = 0u64;
        let mut units = 0u64;
        for _ in 0..n {
            let word = r.varint()?;
            let t = previous
                .checked_add(word >> 1)
                .filter(|&t| t <= MAX_MICROS)
                .ok_or(DecodeError::Invalid("slide log instant out of range"))?;
            let count = if word & 1 == 1 {
                r.varint()?.saturating_add(2)
            } else {
                1
            };
            units = units.saturating_add(count);
            if units > MAX_UNITS {
                return Err(DecodeError::Invalid(
                    "slide log holds more units than a log can",
                ));
            }
            log.push_entry(t, count, Room::UNBOUNDED);
            previous = t;
        }
        if n > 0 {
            let clock = first_ns_of(previous)
                .checked_add(r.varint()?)
                .ok_or(DecodeError::Invalid("slide log clock out of range"))?;
            log.clock = Nanos::new(clock);
        }
        if r.remaining() > 0 {
            log.decode_first(r.varint()?)?;
        }
        r.finish()?;
        log.shrink_to_fit();
        Ok(log)
    }

    /// The first format (tag `L`, RDB encoding version 1): the number of
    /// units (`u64`), then each unit's instant in ns (`u64`), oldest first.
    /// Validated as it always was (exact length, at most `MAX_LIMIT` units,
    /// never decreasing), then each instant is rounded up to the
    /// microsecond: a unit may leave up to 1 µs later than before, never
    /// earlier; the newest instant becomes the clock, so the newest units
    /// leave exactly as before. Units sharing a microsecond become one
    /// entry from [`COUNT_FROM`](super::COUNT_FROM) on, as if recorded
    /// today.
    pub(super) fn decode_v1(tag: u8, bytes: &[u8]) -> Result<SlideState, DecodeError> {
        if tag != V1_TAG {
            return Err(DecodeError::Invalid("no such format"));
        }
        let mut r = Reader::new(bytes);
        let count = r.u64()?;
        if count > MAX_LIMIT {
            return Err(DecodeError::Invalid(
                "slide log holds more units than any limit",
            ));
        }
        let count = usize::try_from(count).map_err(|_| DecodeError::Length)?;
        if count.checked_mul(mem::size_of::<u64>()) != Some(r.remaining()) {
            return Err(DecodeError::Length);
        }
        let mut log = SlideState::with_capacity(count)?;
        let mut previous = 0;
        for _ in 0..count {
            let entry = r.u64()?;
            if entry < previous {
                return Err(DecodeError::Invalid("slide log timestamps decrease"));
            }
            log.record(micros_up(Nanos::new(entry)), 1, Room::UNBOUNDED);
            previous = entry;
        }
        log.clock = Nanos::new(previous);
        r.finish()?;
        log.shrink_to_fit();
        Ok(log)
    }

    /// An empty log with room for `entries`: in its ring, those that will
    /// not be in the tail once all are appended (the newest, up to
    /// [`TAIL`](super::times::TAIL), stay in the struct).
    fn with_capacity(entries: usize) -> Result<SlideState, DecodeError> {
        let in_tail = entries.saturating_sub(1) % TAIL + 1;
        let times = Times::with_capacity(entries.saturating_sub(in_tail))
            .map_err(|_| DecodeError::Invalid("slide log too large to allocate"))?;
        Ok(SlideState {
            times,
            counts: None,
            clock: Nanos::ZERO,
            blocked: Nanos::ZERO,
        })
    }

    /// Sets the newest entry's first unit from the last field of the
    /// encoding (`newest - first`, µs), refusing what no log holds: a
    /// first unit before the previous entry, or apart from an entry of
    /// one unit.
    fn decode_first(&mut self, back: u64) -> Result<(), DecodeError> {
        let bad = DecodeError::Invalid("slide log first unit out of range");
        let len = self.times.len();
        let newest = self.times.back().ok_or(bad)?;
        let first = newest.checked_sub(back).ok_or(bad)?;
        let previous = len.checked_sub(2).and_then(|i| self.times.get(i));
        if previous.is_some_and(|p| first < p) {
            return Err(bad);
        }
        let counted = self.is_counted_near_back(len - 1);
        let c = self.counts.as_mut().ok_or(bad)?;
        if !counted && back != 0 {
            return Err(bad);
        }
        c.joined = true;
        if counted {
            c.first = first;
        }
        Ok(())
    }
}
