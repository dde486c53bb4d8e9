//! `RL.SLICE`: a sliding window of time slices, in fixed memory.
//!
//! # The words
//!
//! - **Window** `W`: the length of time a limit applies to, in nanoseconds.
//! - **Slices** `S`: the window is cut into `S` equal **slices aligned to the
//!   Unix epoch**. The **index** of instant `t` is `idx(t) = floor(t × S / W)`,
//!   computed exactly (128-bit products), so `W` need not be a multiple of
//!   `S`. Slice `j` **starts** at `start(j) = ceil(j × W / S)`, the first
//!   nanosecond whose index is `j`. Every slice is at least 1 ns long
//!   (`W >= S`), some may be 1 ns longer than others.
//! - **Counter**: the units recorded in one slice. The state keeps `S + 1` of
//!   them in a ring (slice `j` lives at position `j mod (S + 1)`), the
//!   head's beside the ring (see Cost).
//! - **Head**: the newest slice the state holds; its counter is never zero.
//! - **Counted**: a unit recorded in slice `j` is counted until slice
//!   `j + S + 1` starts, so at `now` the counted slices are
//!   `idx(now) - S ..= idx(now)`, all `S + 1` counters.
//!
//! # Why `S + 1` counters: never more than `limit` in any window
//!
//! A unit recorded at `t` is counted until `start(idx(t) + S + 1)`, which is
//! always later than `t + W` (`idx(t) > t × S / W - 1`). Take any closed
//! interval `[a, a + W]` and the last request admitted in it, at `t_last`:
//! every unit admitted in `[a, t_last]` was recorded at some `t >= a`, so it is
//! still counted at `t_last <= a + W <= t + W`, and the admission checked
//! `used + quantity <= limit`. So the interval never holds more than `limit`.
//!
//! Worked example: limit 3, window 1 s, 4 slices of 250 ms. Three units at
//! 0.2 s land in slice 0 and are counted until slice 5 starts at 1.25 s: a
//! request at 1.0 s is limited and told to retry at 1.25 s, when it is
//! allowed. A plain "sliding window counter" that kept only `S` counters
//! (`idx(now) - S + 1 ..= idx(now)`) would drop slice 0 at 1.0 s and admit three
//! more units there: six units within 0.8 s. With `slices = 1` the same rule
//! keeps two counters and has no fixed-window double burst at the boundary.
//!
//! The price of fixed memory is that a unit can stay counted for up to
//! `W + W / S`: a request may be limited that the exact log (`RL.SLIDE`) would
//! allow, and `retry_after` says exactly when the oldest slice drops out.
//!
//! # Cost
//!
//! Memory is `S + 1` 32-bit counters plus a constant, allocated on the first
//! recorded unit. A call in the head slice (a busy key) is O(1): the state
//! keeps the running `total` of its counters, and the head's counter beside
//! it, so such a call touches neither the ring nor its memory (the ring is a
//! second allocation: on a key that is not in the cache, one miss less than
//! a counter written in place). When time has moved on to a
//! newer slice, only the slices that expired since the head are looked at,
//! never more than `S + 1` however long the key was idle. The retry search
//! starts at the oldest non-empty slice (a derived field kept by `apply`), so
//! `quantity = 1` on a saturated limiter is O(1); a larger quantity may walk
//! up to `S + 1` counters.
//!
//! # Clock going backwards, parameter changes
//!
//! The state never counts from a slice older than its head: decisions use the
//! effective index `max(idx(now), head)`, while the instants in the
//! `Decision` stay absolute. When the window or the slice count of an existing
//! key changes, every old counter moves to the new slice that contains the old
//! slice's last instant, so no unit is forgotten early. The new head is where
//! the old head moves. A counter that lands more than `S` slices before it
//! moves up to the oldest slice the new ring holds instead of being dropped:
//! it may still be live at `now` (the new head can lie up to one old slice
//! ahead of `now`), and the old geometry would have counted it at least that
//! long anyway. Expired units then drop out as usual. A limit change needs
//! nothing: the state does not depend on the limit.

use std::mem;
use std::ops::Range;

use super::codec::{Reader, Writer};
use super::decision::{Decision, Retry};
use super::time::Nanos;
use super::{
    block, millis, Ceiling, ChargeError, DecodeError, Detail, Kind, Param, ParamError, ParamKind,
    Value, MAX_DURATION,
};

/// The most slices a window may have.
pub const MAX_SLICES: u64 = 1_000_000;
/// The largest limit: a counter is a `u32`. Only RL.CHARGE takes the
/// counters past the limit, never past this.
pub const MAX_LIMIT: u64 = u32::MAX as u64;
/// The bound of a charge, as its error states it after `quantity`.
const CHARGE_RULE: &str = "would take the units a SLICE key holds past 4294967295";

/// The parameters of one `RL.SLICE` call, valid by construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceParams {
    limit: u64,
    geometry: Geometry,
    /// BLOCK: how long a refusal blocks the key.
    block: block::Penalty,
}

impl SliceParams {
    /// `None` unless `1 <= limit <= MAX_LIMIT`, `1 <= slices <= MAX_SLICES`
    /// and `slices` ns `<= window <= MAX_DURATION`.
    pub fn new(limit: u64, window: Nanos, slices: u64) -> Option<SliceParams> {
        let geometry = Geometry::new(window.get(), slices)?;
        (1..=MAX_LIMIT).contains(&limit).then_some(SliceParams {
            limit,
            geometry,
            block: block::Penalty::NONE,
        })
    }

    /// The same parameters with the BLOCK option (`None`: without).
    #[cfg(test)]
    pub fn with_block(self, block: Option<Nanos>) -> SliceParams {
        SliceParams {
            block: block::Penalty::new(block),
            ..self
        }
    }
}

#[cfg(test)]
impl SliceParams {
    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn window(&self) -> Nanos {
        Nanos::new(self.geometry.window)
    }

    pub fn slices(&self) -> u64 {
        self.geometry.slices
    }
}

/// How time is cut: a window of `window` ns in `slices` epoch-aligned slices.
/// Valid (see `Geometry::new`) except in an empty state, where it is zero and
/// unused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Geometry {
    window: u64,
    slices: u64,
}

impl Geometry {
    pub(super) fn new(window: u64, slices: u64) -> Option<Geometry> {
        let valid =
            (1..=MAX_SLICES).contains(&slices) && (slices..=MAX_DURATION.get()).contains(&window);
        valid.then_some(Geometry { window, slices })
    }

    /// Counters in the ring: `S + 1`.
    fn ring_len(self) -> u64 {
        self.slices.saturating_add(1)
    }

    /// The slice length when the window divides evenly, the common case,
    /// which needs no 128-bit division.
    fn even_len(self) -> Option<u64> {
        let len = self.window.checked_div(self.slices)?;
        (len > 0 && len * self.slices == self.window).then_some(len)
    }

    /// `idx(t) = floor(t × S / W)`; never more than `t`, since `S <= W`.
    pub(super) fn index(self, t: Nanos) -> u64 {
        if let Some(len) = self.even_len() {
            return t.get() / len;
        }
        // t = q W + r: index = q S + floor(r S / W), in 64 bits while r S
        // fits (a window of seconds and up to thousands of slices).
        if let (Some(q), Some(r)) = (
            t.get().checked_div(self.window),
            t.get().checked_rem(self.window),
        ) {
            if let (Some(rs), Some(qs)) = (r.checked_mul(self.slices), q.checked_mul(self.slices)) {
                return qs.saturating_add(rs / self.window);
            }
        }
        let product = u128::from(t.get()) * u128::from(self.slices);
        product
            .checked_div(u128::from(self.window))
            .map_or(u64::MAX, |i| u64::try_from(i).unwrap_or(u64::MAX))
    }

    /// `start(j) = ceil(j × W / S)`, the first instant of slice `j`
    /// (saturating at `Nanos::MAX`).
    pub(super) fn start(self, j: u64) -> Nanos {
        if let Some(len) = self.even_len() {
            return Nanos::new(j.saturating_mul(len));
        }
        if self.slices == 0 {
            return Nanos::MAX;
        }
        // j = q S + r: start = q W + ceil(r W / S), in 64 bits while r W
        // and q W fit.
        let (q, r) = (j / self.slices, j % self.slices);
        if let (Some(qw), Some(rw)) = (q.checked_mul(self.window), r.checked_mul(self.window)) {
            return Nanos::new(qw.saturating_add(rw.div_ceil(self.slices)));
        }
        let product = u128::from(j) * u128::from(self.window);
        Nanos::saturating_from_u128(product.div_ceil(u128::from(self.slices)))
    }
}

/// The state of one `RL.SLICE` key.
///
/// Empty (no unit recorded, nothing allocated) or: a geometry, the head, and
/// the `S + 1` counters of slices `head - S ..= head`, whose sum is `total`.
/// Slices before the epoch (negative indexes) are always zero.
///
/// The head's counter lives in the struct (`head_count`), not in the ring,
/// whose slot for the head stays zero: a call in the head slice, the usual
/// one, reads and writes this struct only, not the ring, a second
/// allocation (one memory access less on a key that is not in the cache).
/// The counter moves to the ring when the head moves on.
#[derive(Clone, Debug, Default)]
pub struct SliceState {
    geometry: Geometry,
    /// Absolute index of the newest slice held; its counter is not zero.
    head: u64,
    /// Sum of all counters (`head_count` included), at most `MAX_LIMIT`.
    total: u32,
    /// The head slice's counter.
    head_count: u32,
    /// Ring of `S + 1` counters, slice `j` at `j mod (S + 1)`, the head's
    /// slot zero; empty when nothing is recorded.
    counters: Box<[u32]>,
    /// Derived, not persisted: absolute index of the oldest non-empty slice.
    oldest: u64,
    /// The end of the key's block (BLOCK); zero: none was started.
    blocked: Nanos,
}

/// Equal logical content: geometry, head and counters (the derived fields
/// follow from them).
impl PartialEq for SliceState {
    fn eq(&self, other: &SliceState) -> bool {
        self.geometry == other.geometry
            && self.head == other.head
            && self.head_count == other.head_count
            && self.counters == other.counters
            && self.blocked == other.blocked
    }
}

impl Eq for SliceState {}

/// What an allowed request records: `quantity` units in slice `head`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceUpdate {
    geometry: Geometry,
    head: u64,
    quantity: u32,
    /// On a parameter change: the state moved to the new geometry, which
    /// replaces the current one before the units are recorded.
    /// (Boxed: rare, and it keeps the update small.)
    rebased: Option<Box<SliceState>>,
}

impl SliceState {
    /// An empty state; allocates nothing.
    pub fn new() -> SliceState {
        SliceState::default()
    }
}

impl Kind for SliceState {
    type Params = SliceParams;
    type Update = SliceUpdate;

    const NAME: &'static str = "SLICE";
    const TYPE_NAME: &'static str = "rl-slice-";
    const TAG: u8 = b'S';
    const SUMMARY: &'static str = "Sliding window of time slices that never over-admits. Replies limited, limit, remaining, retry_after, reset_after.";
    const COMPLEXITY: &'static str = "O(1) amortized";
    const SINCE: &'static str = "0.1.0";
    const PARAMS: &'static [Param] = &[
        Param::integer("limit", 1, MAX_LIMIT),
        Param::of("window", ParamKind::Duration),
        Param::capped("slices", 1, MAX_SLICES, Some(Ceiling::Slices)),
    ];
    const OPTIONS: &'static [Param] = &[block::BLOCK];

    fn params(values: &[Value<'_>]) -> Result<SliceParams, ParamError> {
        let [limit, window, slices] = Value::numbers(values)?;
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ParamError::Param(0));
        }
        if !(1..=MAX_SLICES).contains(&slices) {
            return Err(ParamError::Param(2));
        }
        let mut params =
            SliceParams::new(limit, Nanos::new(window), slices).ok_or(ParamError::Param(1))?;
        params.block = block::option(values, 3);
        Ok(params)
    }

    fn block_of(params: &SliceParams) -> Option<Nanos> {
        params.block.get()
    }

    fn blocked_until(&self) -> Nanos {
        self.blocked
    }

    fn set_blocked_until(&mut self, end: Nanos) {
        self.blocked = end;
    }

    /// Decides one request at `now`. Pure: returns `Some(update)` only when
    /// the request is allowed and `quantity > 0`.
    fn decide(
        &self,
        now: Nanos,
        params: &SliceParams,
        quantity: u64,
    ) -> (Decision, Option<SliceUpdate>) {
        if self.is_empty() || self.geometry == params.geometry {
            return self.decide_in_place(now, params, quantity);
        }
        // The rare path: the window or the slice count changed.
        let rebased = self.rebucketed(params.geometry);
        let (decision, update) = rebased.decide_in_place(now, params, quantity);
        let update = update.map(|update| SliceUpdate {
            rebased: Some(Box::new(rebased)),
            ..update
        });
        (decision, update)
    }

    /// Records what `decide` allowed. O(1) in the head slice; moving to a
    /// newer slice clears the expired ones (at most `S + 1`).
    fn apply(&mut self, update: SliceUpdate) {
        let SliceUpdate {
            geometry,
            head,
            quantity,
            rebased,
        } = update;
        if let Some(state) = rebased {
            *self = *state;
        } else if !self.is_empty() && self.geometry != geometry {
            // Not produced by `decide` on this state; stay consistent anyway.
            *self = self.rebucketed(geometry);
        }
        if quantity == 0 {
            return;
        }
        if self.is_empty() {
            let Ok(len) = usize::try_from(geometry.ring_len()) else {
                return;
            };
            *self = SliceState {
                geometry,
                head,
                total: 0,
                head_count: 0,
                counters: vec![0; len].into_boxed_slice(),
                oldest: head,
                blocked: Nanos::ZERO,
            };
        }
        self.advance(head);
        let was_empty = self.total == 0;
        let added = self.total.saturating_add(quantity) - self.total;
        self.head_count += added;
        self.total += added;
        if was_empty {
            self.oldest = self.head;
        }
    }

    /// Adds `quantity` units to the current slice, as an allowed request
    /// would (on the geometry of `params`), whatever the limit: the same
    /// decision under the largest limit, which allows it exactly when the
    /// counters can hold it.
    fn charge(
        &mut self,
        now: Nanos,
        params: &SliceParams,
        quantity: u64,
    ) -> Result<(), ChargeError> {
        let open = SliceParams {
            limit: MAX_LIMIT,
            ..*params
        };
        match self.decide(now, &open, quantity) {
            (decision, Some(update)) if !decision.limited => {
                self.apply(update);
                Ok(())
            }
            _ => Err(ChargeError(CHARGE_RULE)),
        }
    }

    /// Takes up to `quantity` units from the newest non-empty slices (on
    /// the geometry of `params`, moved there first as `decide` would). The
    /// head moves back to the newest slice that still holds a unit; a state
    /// left without units is empty.
    fn refund(&mut self, _now: Nanos, params: &SliceParams, quantity: u64) {
        if self.is_empty() {
            return;
        }
        if self.geometry != params.geometry {
            *self = self.rebucketed(params.geometry);
            if self.is_empty() {
                return;
            }
        }
        // The head's counter goes to the ring for the walk, and the new
        // head's comes back out of it after.
        self.store_head();
        let mut left = quantity;
        let mut newest_kept = None;
        let first_held = self.head.saturating_sub(self.geometry.slices);
        let mut j = self.head;
        loop {
            let at = self.position(j);
            if let Some(counter) = self.counters.get_mut(at) {
                // `taken` is at most the counter, a u32.
                let taken = u32::try_from(u64::from(*counter).min(left)).unwrap_or(0);
                *counter -= taken;
                left -= u64::from(taken);
                self.total = self.total.saturating_sub(taken);
                if *counter > 0 && newest_kept.is_none() {
                    newest_kept = Some(j);
                }
            }
            if left == 0 && newest_kept.is_some() || j == first_held {
                break;
            }
            j -= 1;
        }
        match newest_kept {
            // The slices between the new head and the old one are empty, so
            // the ring positions they free hold no unit of an older slice.
            Some(head) if self.total > 0 => {
                self.head = head;
                self.load_head();
            }
            _ => *self = SliceState::new(),
        }
    }

    /// `window_ms`, `slices`, `units` (held, all slices), and `counts`:
    /// the units of each slice held, newest first, `slices + 1` of them;
    /// `head_age_ms`: how long ago the newest slice began.
    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        let int = |n: u64| Detail::Integer(i64::try_from(n).unwrap_or(i64::MAX));
        let mut counts: Vec<i64> = self
            .slots(self.head.saturating_sub(self.geometry.slices), self.head)
            .map(|(_, count)| i64::from(count))
            .collect();
        counts.reverse();
        vec![
            (
                "window_ms",
                Detail::Integer(millis(Nanos::new(self.geometry.window))),
            ),
            ("slices", int(self.geometry.slices)),
            ("units", int(u64::from(self.total))),
            (
                "head_age_ms",
                Detail::Integer(millis(now.saturating_sub(self.geometry.start(self.head)))),
            ),
            ("counts", Detail::Integers(counts)),
        ]
    }

    /// Bytes held: the struct and its counters.
    fn mem_usage(&self) -> usize {
        std::mem::size_of::<SliceState>() + std::mem::size_of_val(&*self.counters)
    }

    /// Canonical encoding, little-endian: `window`, `slices`, `head` (u64
    /// each), then the `S + 1` counters (u32 each) in slice order, oldest
    /// (`head - S`) first. An empty state is `0, 0, 0` with no counters.
    fn encode(&self) -> Vec<u8> {
        let mut writer = Writer::with_capacity(24 + 4 * self.counters.len());
        writer
            .u64(self.geometry.window)
            .u64(self.geometry.slices)
            .u64(self.head);
        if !self.is_empty() {
            // Oldest first: the head's slot, zero in the ring, comes last.
            let oldest_at = (self.position(self.head) + 1) % self.counters.len();
            let (newer, older) = self.counters.split_at(oldest_at.min(self.counters.len()));
            for &count in older.iter().chain(newer).take(self.counters.len() - 1) {
                writer.u32(count);
            }
            writer.u32(self.head_count);
        }
        writer.into_bytes()
    }

    /// Reads what `encode` wrote, validating everything: the geometry, the
    /// head, the exact length before allocating, that slices before the
    /// epoch are zero, that the head slice holds a unit and the total fits.
    fn decode(bytes: &[u8]) -> Result<SliceState, DecodeError> {
        let mut reader = Reader::new(bytes);
        let window = reader.u64()?;
        let slices = reader.u64()?;
        let head = reader.u64()?;
        if slices == 0 {
            if window != 0 || head != 0 {
                return Err(DecodeError::Invalid("empty slice state with a geometry"));
            }
            reader.finish()?;
            return Ok(SliceState::new());
        }
        let geometry = Geometry::new(window, slices)
            .ok_or(DecodeError::Invalid("slice geometry out of range"))?;
        if head > geometry.index(Nanos::MAX) {
            return Err(DecodeError::Invalid("slice head out of range"));
        }
        let len = geometry.ring_len();
        if u64::try_from(reader.remaining()).ok() != Some(len * 4) {
            return Err(DecodeError::Length);
        }
        let len = usize::try_from(len).map_err(|_| DecodeError::Length)?;
        let mut counters = Vec::with_capacity(len);
        for _ in 0..len {
            counters.push(reader.u32()?);
        }
        reader.finish()?;
        let total: u64 = counters.iter().map(|&c| u64::from(c)).sum();
        if total == 0 {
            return Err(DecodeError::Invalid("slice state without units"));
        }
        let Ok(total) = u32::try_from(total) else {
            return Err(DecodeError::Invalid("slice total over the limit range"));
        };
        if counters.last() == Some(&0) {
            return Err(DecodeError::Invalid("slice head without units"));
        }
        let before_epoch = usize::try_from(slices.saturating_sub(head)).unwrap_or(usize::MAX);
        if counters.iter().take(before_epoch).any(|&c| c != 0) {
            return Err(DecodeError::Invalid("slice counter before the epoch"));
        }
        let oldest_at = usize::try_from((head % len as u64 + 1) % len as u64).unwrap_or(0);
        counters.rotate_right(oldest_at);
        let mut state = SliceState {
            geometry,
            head,
            total,
            head_count: 0,
            counters: counters.into_boxed_slice(),
            oldest: 0,
            blocked: Nanos::ZERO,
        };
        state.load_head();
        state.oldest = state.first_non_empty(head.saturating_sub(slices));
        Ok(state)
    }
}

impl SliceState {
    /// No unit recorded (units that merely expired still count as recorded;
    /// the key's expiry removes them).
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }

    /// `decide` for a state that is empty or already has `params`' geometry.
    fn decide_in_place(
        &self,
        now: Nanos,
        params: &SliceParams,
        quantity: u64,
    ) -> (Decision, Option<SliceUpdate>) {
        let geometry = params.geometry;
        let limit = params.limit;
        let slices = geometry.slices;
        let current = if self.is_empty() {
            geometry.index(now)
        } else {
            geometry.index(now).max(self.head)
        };
        let first_counted = current.saturating_sub(slices);
        let used = self.used_from(first_counted);
        // The instant slice `j`'s units stop being counted, computed only
        // where the reply needs it (once a call): with a window that the
        // slices do not divide evenly, it costs two divisions.
        let end_of = |j: u64| geometry.start(j.saturating_add(slices).saturating_add(1));
        // When the head slice is counted it is the newest non-empty one.
        let reset_held = || match used {
            0 => now,
            _ => end_of(self.head),
        };

        if quantity <= limit && used + quantity <= limit {
            let update = (quantity > 0).then(|| SliceUpdate {
                geometry,
                head: current,
                quantity: u32::try_from(quantity).unwrap_or(u32::MAX),
                rebased: None,
            });
            let reset_at = if quantity > 0 {
                end_of(current)
            } else {
                reset_held()
            };
            let decision = Decision {
                limited: false,
                limit,
                remaining: limit - used - quantity,
                retry: Retry::NotLimited,
                reset_at,
            };
            return (decision, update);
        }

        let retry = if quantity > limit {
            Retry::Never
        } else {
            Retry::At(self.retry_at(first_counted, used + quantity - limit))
        };
        let decision = Decision {
            limited: true,
            limit,
            remaining: limit.saturating_sub(used),
            retry,
            reset_at: reset_held(),
        };
        (decision, None)
    }

    /// Units in slices `first_counted ..= head`. O(1) unless slices between
    /// the oldest non-empty one and `first_counted` have expired, which are
    /// then summed (at most `S + 1`).
    fn used_from(&self, first_counted: u64) -> u64 {
        if self.is_empty() || first_counted > self.head {
            return 0;
        }
        if first_counted <= self.oldest {
            return u64::from(self.total);
        }
        let expired: u64 = self
            .slots(self.oldest, first_counted - 1)
            .map(|(_, count)| u64::from(count))
            .sum();
        u64::from(self.total).saturating_sub(expired)
    }

    /// The instant the oldest counted slices holding `need` units have all
    /// stopped being counted. Slice `j` stops at `start(j + S + 1)`.
    fn retry_at(&self, first_counted: u64, need: u64) -> Nanos {
        let after = |j: u64| {
            let end = j.saturating_add(self.geometry.slices).saturating_add(1);
            self.geometry.start(end)
        };
        let mut freed = 0u64;
        for (j, count) in self.slots(first_counted.max(self.oldest), self.head) {
            freed += u64::from(count);
            if freed >= need {
                return after(j);
            }
        }
        after(self.head)
    }

    /// Moves the head to slice `head`, clearing the slices that stop being
    /// counted: those whose ring positions the new slices reuse.
    fn advance(&mut self, head: u64) {
        if head <= self.head {
            return;
        }
        let len = self.counters.len();
        let gap = head - self.head;
        if gap >= len as u64 {
            self.counters.fill(0);
            self.total = 0;
            self.head_count = 0;
        } else {
            self.store_head();
            let from = self.position(self.head + 1);
            for run in runs(len, from, gap as usize) {
                for counter in &mut self.counters[run] {
                    self.total = self.total.saturating_sub(*counter);
                    *counter = 0;
                }
            }
        }
        // The new head's slot was just cleared: its counter is zero.
        self.head = head;
        let first_counted = head.saturating_sub(self.geometry.slices);
        if self.total == 0 {
            self.oldest = head;
        } else if self.oldest < first_counted {
            self.oldest = self.first_non_empty(first_counted);
        }
    }

    /// This state moved to `geometry` (see the module doc): each counter goes
    /// to the new slice holding its old slice's last instant, or to the
    /// oldest slice held if that is older. Allocates a new ring; the old one
    /// is walked once. A pure function of the state, so a decision made on it
    /// (and its retry instant) holds until the state changes.
    fn rebucketed(&self, geometry: Geometry) -> SliceState {
        let old = self.geometry;
        let moved =
            |j: u64| geometry.index(old.start(j.saturating_add(1)).saturating_sub(Nanos::new(1)));
        let head = moved(self.head);
        let oldest_held = head.saturating_sub(geometry.slices);
        let Ok(len) = usize::try_from(geometry.ring_len()) else {
            return SliceState::new();
        };
        let mut counters = vec![0u32; len];
        let mut total = 0u32;
        for (j, count) in self.slots(self.oldest, self.head) {
            if count == 0 {
                continue;
            }
            let at = position(moved(j).max(oldest_held), len);
            if let Some(counter) = counters.get_mut(at) {
                *counter = counter.saturating_add(count);
            }
            total = total.saturating_add(count);
        }
        if total == 0 {
            return SliceState::new();
        }
        let mut state = SliceState {
            geometry,
            head,
            total,
            head_count: 0,
            counters: counters.into_boxed_slice(),
            oldest: 0,
            blocked: self.blocked,
        };
        state.load_head();
        state.oldest = state.first_non_empty(oldest_held);
        state
    }

    /// The first non-empty slice from `from` on (the head when none is).
    fn first_non_empty(&self, from: u64) -> u64 {
        self.slots(from, self.head)
            .find(|&(_, count)| count > 0)
            .map_or(self.head, |(j, _)| j)
    }

    /// Ring position of slice `j`.
    fn position(&self, j: u64) -> usize {
        position(j, self.counters.len())
    }

    /// Moves the head's counter into its ring slot (before the head moves).
    fn store_head(&mut self) {
        let at = self.position(self.head);
        if let Some(slot) = self.counters.get_mut(at) {
            *slot = mem::take(&mut self.head_count);
        }
    }

    /// Takes the head's counter out of its ring slot (after the head moved
    /// to a slice whose counter is in the ring).
    fn load_head(&mut self) {
        let at = self.position(self.head);
        if let Some(slot) = self.counters.get_mut(at) {
            self.head_count = mem::take(slot);
        }
    }

    /// Slices `from ..= to` with their counters, clipped to the slices held
    /// (`head - S ..= head`): at most `S + 1` items.
    fn slots(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, u32)> + '_ {
        let len = self.counters.len();
        let first_held = self.head.saturating_sub((len as u64).saturating_sub(1));
        let (from, to) = (from.max(first_held), to.min(self.head));
        let count = if len == 0 || from > to {
            0
        } else {
            usize::try_from(to - from).map_or(len, |n| n.saturating_add(1))
        };
        let [first, second] = runs(len, self.position(from), count);
        let counts = self.counters[first]
            .iter()
            .chain(&self.counters[second])
            .copied();
        let head = (self.head, self.head_count);
        (from..=to)
            .zip(counts)
            .map(move |(j, count)| if j == head.0 { head } else { (j, count) })
    }
}

/// Position of slice `j` in a ring of `len` counters.
fn position(j: u64, len: usize) -> usize {
    match u64::try_from(len) {
        Ok(len) if len > 0 => usize::try_from(j % len).unwrap_or(0),
        _ => 0,
    }
}

/// The ring positions of `count` consecutive slices from position `at`: at
/// most two runs, always inside `0..len`.
fn runs(len: usize, at: usize, count: usize) -> [Range<usize>; 2] {
    let at = at.min(len);
    let count = count.min(len);
    let end = at.saturating_add(count).min(len);
    [at..end, 0..count - (end - at)]
}

#[cfg(test)]
impl SliceState {
    /// Test-only: the derived and running fields agree with the counters.
    pub(super) fn check_invariants(&self) {
        if self.is_empty() {
            assert_eq!(self.total, 0);
            assert_eq!(self.geometry, Geometry::default());
            return;
        }
        assert_eq!(self.counters.len() as u64, self.geometry.slices + 1);
        assert_eq!(self.counters[self.position(self.head)], 0, "head's slot");
        let sum: u64 = self.counters.iter().map(|&c| u64::from(c)).sum();
        let sum = sum + u64::from(self.head_count);
        assert_eq!(u64::from(self.total), sum, "running total");
        assert!(self.total > 0);
        assert!(self.head_count > 0, "head slice holds units");
        let first_held = self.head.saturating_sub(self.geometry.slices);
        let oldest = self
            .slots(first_held, self.head)
            .find(|&(_, count)| count > 0)
            .unwrap()
            .0;
        assert_eq!(self.oldest, oldest, "oldest non-empty slice");
    }

    /// The running total of the counters.
    pub(super) fn total(&self) -> u32 {
        self.total
    }

    /// The oldest non-empty slice (derived).
    pub(super) fn oldest(&self) -> u64 {
        self.oldest
    }
}
