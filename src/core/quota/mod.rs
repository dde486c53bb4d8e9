//! RL.QUOTA: calendar quotas. At most `limit` units in each period of a
//! calendar unit (minute, hour, day, ISO week, month, year) on a zone's
//! local clock; the count starts from 0 when a period starts.
//!
//! Domain words:
//!
//! - **period**: `[start, end)` of the unit that contains an instant, on
//!   the zone's clock, daylight-saving changes included (see `calendar`
//!   for where exactly a period starts; `zone` for the zones).
//! - **used**: the units the key recorded, all counted together.
//! - **last**: the latest instant at which the key recorded units.
//! - **until**: the instant until which `used` counts under the key's own
//!   unit and zone, stored when the key records. It is the end of the
//!   period of `last` (`end`), or later after a change of unit or zone
//!   (below). From `until` on the key counts nothing under its own unit
//!   and zone; its expiry is the latest reset a call reported, which is
//!   `until` unless a call under another unit or zone reported a later
//!   one (below).
//!
//! Worked example: 500 per DAY in `Europe/Berlin`. A first unit at
//! 2026-03-28 10:00 UTC records used 1, start 2026-03-27 23:00 UTC (local
//! midnight, +01:00), end = until 2026-03-28 23:00 UTC; the reply says
//! remaining 499, reset after 13 h. Every further call that day compares
//! `now < end`, checks the unit and zone, and adds: no calendar arithmetic.
//! The next day starts at 23:00 UTC and, the clocks going forward at
//! 02:00 local, lasts 23 hours: its first unit stores end 2026-03-29
//! 22:00 UTC.
//!
//! **Changing the unit or the zone** on a key never forgets a unit early.
//! A unit recorded at `t` belongs, under any unit and zone, to the period
//! that contains `t`. So under a call's unit and zone `P` other than the
//! key's, the key's units count until `max(until, end of P's period of
//! last)`: their own end, or the end of the new period they fall in,
//! whichever is later (`last` stands for every recorded unit: no unit was
//! recorded after it, and a later instant's period never ends earlier).
//! Under the key's own unit and zone that is `until`. When such a call
//! records, the key takes `P`, its period becomes `P`'s period of
//! `max(last, now)`, and `until` the later of that period's end and the
//! old units' deadline: one counter, counted until the later of the two.
//! Example: 10 units per MONTH, then 3 per DAY on the 20th: the month's
//! units count until the month ends, so the day's quota is spent until
//! then; the other way round, units of a day count until the month's end
//! (the month they fall in). A limited call or a peek changes nothing but
//! reports that deadline as its reset, which is what the glue needs to keep
//! the key that long.
//!
//! Instants are `Nanos` (1970 to 2554). `now` is read as at most
//! `Nanos::MAX - 1`, so that it always lies inside a period whose end,
//! clamped to `Nanos::MAX`, is later.

mod calendar;
mod zone;

pub use calendar::{period, CalendarUnit};
pub use zone::{tzdb_version, Zone, MAX_ZONE_NAME};

use super::codec::{Reader, Writer};
use super::{
    block, millis, ChargeError, Decision, DecodeError, Detail, Kind, Nanos, Param, ParamError,
    ParamKind, Retry, Value,
};

/// The largest `limit`: 10^15.
pub const MAX_LIMIT: u64 = 1_000_000_000_000_000;
/// The most units a period may hold: 10^18. Only RL.CHARGE takes `used`
/// past the limit (a debt until the period ends).
pub const MAX_USED: u64 = 1_000_000_000_000_000_000;
/// The bound of a charge, as its error states it after `quantity`.
const CHARGE_RULE: &str = "would take the period's used units past 1000000000000000000";
/// The longest span a stored key may cover, from the start of its period
/// to its end and from its last unit to `until`: 370 days, a leap year and
/// the largest jump a zone's clock ever made (a day), rounded up. Longer
/// spans are refused when decoding.
pub const MAX_PERIOD: Nanos = Nanos::new(370 * 86_400 * 1_000_000_000);
/// The latest `now` the quota reads (later instants read as this one).
const LAST_INSTANT: Nanos = Nanos::new(u64::MAX - 1);

/// Validated parameters of one call: `limit` units per `unit` in `zone`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotaParams {
    /// 1 to [`MAX_LIMIT`].
    pub limit: u64,
    pub unit: CalendarUnit,
    pub zone: Zone,
    /// BLOCK: how long a refusal blocks the key.
    pub block: block::Penalty,
}

/// What a calendar-quota key holds. The default, nothing used, is a
/// missing key.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct QuotaState {
    used: u64,
    /// The period of `last` under `unit` and `zone`: `start <= last < end`.
    start: Nanos,
    end: Nanos,
    /// `used` counts until then, under `unit` and `zone`; `end <= until`.
    until: Nanos,
    last: Nanos,
    unit: CalendarUnit,
    zone: Zone,
    /// The end of the key's block (BLOCK); zero: none was started.
    blocked: Nanos,
}

/// What an allowed request that takes units records: the key's next state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaUpdate(QuotaState);

impl QuotaState {
    /// Decides a request for `quantity` units at `now` (0 is a peek).
    ///
    /// Returns the decision and, when the request is allowed and takes
    /// units, the update to `apply`. `remaining` is `limit - used` after
    /// the call (0 when a lowered limit is below `used`); a limited request
    /// retries when its units stop counting, or never when `quantity >
    /// limit`; the reset is the instant everything used stops counting,
    /// or `now` when nothing is.
    pub fn decide(
        &self,
        now: Nanos,
        params: &QuotaParams,
        quantity: u64,
    ) -> (Decision, Option<QuotaUpdate>) {
        let now = now.min(LAST_INSTANT);
        let deadline = self.counted_until(now, params);
        let used = if deadline.is_some() { self.used } else { 0 };
        let fits = quantity <= params.limit;
        let allowed = fits && used.saturating_add(quantity) <= params.limit;
        let update =
            (allowed && quantity > 0).then(|| self.record(now, params, quantity, deadline));
        let after = if allowed { used + quantity } else { used };
        let reset_at = match (&update, deadline) {
            (Some(update), _) => update.0.until,
            (None, Some(deadline)) => deadline,
            (None, None) => now,
        };
        let retry = if !fits {
            Retry::Never
        } else if !allowed {
            // Limited while fitting: units are counted, so a deadline exists.
            Retry::At(deadline.unwrap_or(now))
        } else {
            Retry::NotLimited
        };
        let decision = Decision {
            limited: !allowed,
            limit: params.limit,
            remaining: params.limit.saturating_sub(after),
            retry,
            reset_at,
        };
        (decision, update)
    }

    /// Records an update that `decide` produced on this same state.
    pub fn apply(&mut self, update: QuotaUpdate) {
        *self = update.0;
    }

    /// Gives back up to `quantity` of the units that count at `now` under
    /// `params` (the current period's); never below 0, and nothing once
    /// they stopped counting. A key left with 0 used is as good as
    /// missing: `decide` then resets at `now`.
    pub fn refund(&mut self, now: Nanos, params: &QuotaParams, quantity: u64) {
        let now = now.min(LAST_INSTANT);
        if self.counted_until(now, params).is_some() {
            self.used -= quantity.min(self.used);
        }
    }

    /// Records `quantity` units at `now` as an allowed request would,
    /// whatever the limit; refused when `used` would pass [`MAX_USED`].
    pub fn charge(
        &mut self,
        now: Nanos,
        params: &QuotaParams,
        quantity: u64,
    ) -> Result<(), ChargeError> {
        let now = now.min(LAST_INSTANT);
        let deadline = self.counted_until(now, params);
        let used = if deadline.is_some() { self.used } else { 0 };
        if used.checked_add(quantity).is_none_or(|u| u > MAX_USED) {
            return Err(ChargeError(CHARGE_RULE));
        }
        let update = self.record(now, params, quantity, deadline);
        self.apply(update);
        Ok(())
    }

    /// Whether nothing counts at `now` under the key's own unit and zone.
    /// (Another unit or zone may count the units a little longer, until
    /// the end of its period that holds `last`; `decide` under it reports
    /// that deadline as its reset.)
    pub fn is_empty_at(&self, now: Nanos) -> bool {
        self.used == 0 || now.min(LAST_INSTANT) >= self.until
    }

    /// RL.INSPECT's fields: `unit` and `zone` (names), `used` (what counts
    /// at `now`), `start` of the current period and `end`, the instant
    /// `used` stops counting (Unix ms; `end` lies past the current period
    /// only after a change of unit or zone).
    pub fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        let used = if self.is_empty_at(now) { 0 } else { self.used };
        vec![
            ("unit", Detail::Bytes(self.unit.name().as_bytes().to_vec())),
            ("zone", Detail::Bytes(self.zone.name().into_bytes())),
            (
                "used",
                Detail::Integer(i64::try_from(used).unwrap_or(i64::MAX)),
            ),
            ("start", Detail::Integer(millis(self.start))),
            ("end", Detail::Integer(millis(self.until))),
        ]
    }

    /// Canonical encoding, format `Q` (RDB, AOF rewrite, DEBUG DIGEST):
    ///
    /// ```text
    /// varint used
    /// u64    start (Unix ns, little-endian)
    /// varint end - start        (1 ns to MAX_PERIOD)
    /// varint until - end
    /// varint last - start       (below end - start)
    /// varint unit               (its index in CalendarUnit::WORDS)
    /// varint length of the zone's name (1 to MAX_ZONE_NAME)
    /// bytes  the zone's canonical name (Zone::name)
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        let name = self.zone.name();
        let mut w = Writer::with_capacity(24 + name.len());
        w.varint(self.used)
            .u64(self.start.get())
            .varint(self.end.get() - self.start.get())
            .varint(self.until.get() - self.end.get())
            .varint(self.last.get() - self.start.get())
            .varint(self.unit.index() as u64)
            .varint(name.len() as u64);
        let mut bytes = w.into_bytes();
        bytes.extend_from_slice(name.as_bytes());
        bytes
    }

    /// Reads what `encode` wrote, refusing anything no state encodes to:
    /// `used` above [`MAX_USED`], an empty or reversed period, spans
    /// above [`MAX_PERIOD`], instants past `Nanos::MAX`, `last` outside
    /// the period, an unknown unit, a zone name that is empty, too long,
    /// not in its canonical spelling or not a name at all, and bytes left
    /// over.
    ///
    /// A well-formed zone name that this build's database does not know (a
    /// key written by a build with a newer database) is kept as
    /// [`Zone::UNKNOWN`]: the stored `until` still decides, and the next
    /// call, under whatever zone it names, counts the units until then (or
    /// later, under the change rule) and records under its own zone. The
    /// name itself is not kept: the key re-encodes as `Etc/Unknown`.
    pub fn decode(bytes: &[u8]) -> Result<QuotaState, DecodeError> {
        let mut r = Reader::new(bytes);
        let used = r.varint()?;
        let start = r.u64()?;
        let span = r.varint()?;
        let extra = r.varint()?;
        let last = r.varint()?;
        let unit = r.varint()?;
        let name_len = r.varint()?;
        let at = bytes.len() - r.remaining();
        let name = usize::try_from(name_len)
            .ok()
            .and_then(|len| bytes.get(at..at.checked_add(len)?))
            .ok_or(DecodeError::Length)?;
        if at + name.len() != bytes.len() {
            return Err(DecodeError::Length);
        }
        if used > MAX_USED {
            return Err(DecodeError::Invalid(
                "used is above the most a period holds",
            ));
        }
        if span == 0 || span > MAX_PERIOD.get() {
            return Err(DecodeError::Invalid(
                "period is empty or longer than a year",
            ));
        }
        if last >= span {
            return Err(DecodeError::Invalid("last unit is outside its period"));
        }
        if (span - last).saturating_add(extra) > MAX_PERIOD.get() {
            return Err(DecodeError::Invalid("units count for longer than a year"));
        }
        let end = start
            .checked_add(span)
            .ok_or(DecodeError::Invalid("period ends past the last instant"))?;
        let until = end
            .checked_add(extra)
            .ok_or(DecodeError::Invalid("units count past the last instant"))?;
        let unit = usize::try_from(unit)
            .ok()
            .and_then(CalendarUnit::from_index)
            .ok_or(DecodeError::Invalid("unknown calendar unit"))?;
        if name.is_empty() || name.len() > MAX_ZONE_NAME {
            return Err(DecodeError::Invalid("zone name is empty or too long"));
        }
        let zone = Zone::stored(name).ok_or(DecodeError::Invalid("not a zone name"))?;
        Ok(QuotaState {
            used,
            start: Nanos::new(start),
            end: Nanos::new(end),
            until: Nanos::new(until),
            last: Nanos::new(start + last),
            unit,
            zone,
            blocked: Nanos::ZERO,
        })
    }

    /// Bytes this state occupies: it allocates nothing.
    pub fn mem_usage(&self) -> usize {
        std::mem::size_of::<QuotaState>()
    }

    /// The instant until which the recorded units count under `params`'
    /// unit and zone, when they still count at `now`; `None` when nothing
    /// counts. The hot path (the key's own unit and zone) compares with
    /// the stored `until` and computes nothing.
    fn counted_until(&self, now: Nanos, params: &QuotaParams) -> Option<Nanos> {
        if self.used == 0 {
            return None;
        }
        let deadline = if self.unit == params.unit && self.zone == params.zone {
            self.until
        } else {
            self.until
                .max(period(self.last, params.unit, params.zone).1)
        };
        (now < deadline).then_some(deadline)
    }

    /// The state after recording `quantity` units at `now` under `params`,
    /// given the recorded units' deadline (`None`: nothing counts).
    fn record(
        &self,
        now: Nanos,
        params: &QuotaParams,
        quantity: u64,
        deadline: Option<Nanos>,
    ) -> QuotaUpdate {
        let QuotaParams { unit, zone, .. } = *params;
        let Some(deadline) = deadline else {
            // A new period: its end is computed now, once, and stored.
            let (start, end) = period(now, unit, zone);
            return QuotaUpdate(QuotaState {
                used: quantity,
                start,
                end,
                until: end,
                last: now,
                unit,
                zone,
                blocked: Nanos::ZERO,
            });
        };
        // A clock that went back records at the latest instant seen.
        let last = self.last.max(now);
        let used = self.used + quantity;
        if unit == self.unit && zone == self.zone && last < self.end {
            // The hot path: the same period, nothing to compute.
            return QuotaUpdate(QuotaState {
                used,
                last,
                ..self.clone()
            });
        }
        let (start, end) = period(last, unit, zone);
        QuotaUpdate(QuotaState {
            used,
            start,
            end,
            until: deadline.max(end),
            last,
            unit,
            zone,
            blocked: Nanos::ZERO,
        })
    }
}

impl Kind for QuotaState {
    type Params = QuotaParams;
    type Update = QuotaUpdate;

    const NAME: &'static str = "QUOTA";
    const TYPE_NAME: &'static str = "rl-quota-";
    const TAG: u8 = b'Q';
    const PARAMS: &'static [Param] = &[
        Param::integer("limit", 1, MAX_LIMIT),
        Param::of("unit", ParamKind::Word(&CalendarUnit::WORDS)),
    ];
    const OPTIONS: &'static [Param] = &[
        Param::of(
            "TZ",
            ParamKind::Text {
                max: zone::MAX_ZONE_NAME,
            },
        ),
        block::BLOCK,
    ];
    const REPLICATES_STATE: bool = true;
    const SUMMARY: &'static str = "Calendar quota (minute to year) in a time zone. Replies limited, limit, remaining, retry_after, reset_after.";
    const COMPLEXITY: &'static str =
        "O(1) within a period; O(log R) in the zone's rules when a period starts";
    const SINCE: &'static str = "0.3.0";

    fn params(values: &[Value<'_>]) -> Result<QuotaParams, ParamError> {
        let [limit, unit] = Value::numbers(values)?;
        let unit = usize::try_from(unit)
            .ok()
            .and_then(CalendarUnit::from_index)
            .ok_or(ParamError::Param(1))?;
        let zone = match values.get(2) {
            Some(Value::Text(name)) => Zone::parse(name).map_err(ParamError::Unknown)?,
            _ => Zone::UTC,
        };
        Ok(QuotaParams {
            limit,
            unit,
            zone,
            block: block::option(values, 3),
        })
    }

    fn block_of(params: &QuotaParams) -> Option<Nanos> {
        params.block.get()
    }

    fn blocked_until(&self) -> Nanos {
        self.blocked
    }

    fn set_blocked_until(&mut self, end: Nanos) {
        self.blocked = end;
    }

    fn decide(
        &self,
        now: Nanos,
        params: &QuotaParams,
        quantity: u64,
    ) -> (Decision, Option<QuotaUpdate>) {
        QuotaState::decide(self, now, params, quantity)
    }

    fn apply(&mut self, update: QuotaUpdate) {
        QuotaState::apply(self, update)
    }

    fn refund(&mut self, now: Nanos, params: &QuotaParams, quantity: u64) {
        QuotaState::refund(self, now, params, quantity)
    }

    fn charge(
        &mut self,
        now: Nanos,
        params: &QuotaParams,
        quantity: u64,
    ) -> Result<(), ChargeError> {
        QuotaState::charge(self, now, params, quantity)
    }

    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        QuotaState::inspect(self, now)
    }

    fn encode(&self) -> Vec<u8> {
        QuotaState::encode(self)
    }

    fn decode(bytes: &[u8]) -> Result<QuotaState, DecodeError> {
        QuotaState::decode(bytes)
    }

    fn mem_usage(&self) -> usize {
        QuotaState::mem_usage(self)
    }
}
