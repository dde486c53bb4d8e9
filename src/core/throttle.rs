//! GCRA, the generic cell rate algorithm, exact in integers.
//!
//! A limiter allows `count` units per `period`, with bursts of up to
//! `max_burst` extra units. Its domain words:
//!
//! - **emission interval** `T = period / count`: the time one unit costs;
//! - **capacity** `max_burst + 1`: the most units that can pass at once;
//! - **tolerance** `τ = T × capacity`: how far ahead of `now` the limiter may
//!   already have "spent" time;
//! - **theoretical arrival time** (TAT): the instant at which the limiter
//!   would be back to full capacity. It is the whole state.
//!
//! A request of `quantity` units costs `I = T × quantity`. It is allowed when
//! `max(now, tat) + I - now <= τ`, and then the TAT moves to `max(now, tat) + I`.
//!
//! Worked example: 30 units per 60 s with max_burst 15 gives `T` = 2 s,
//! capacity 16, `τ` = 32 s. On an empty key at `now` = 0 a request for one
//! unit sets the TAT to 2 s: allowed, remaining 15, reset after 2 s. Sixteen
//! such requests at `now` = 0 bring the TAT to 32 s; the seventeenth would
//! bring it to 34 s, past `τ`, so it is limited with retry after 2 s.
//!
//! `T` is rarely a whole number of nanoseconds (1 per 3 s is 333,333,333⅓ ns),
//! and rounding it in either direction breaks something: up, a burst of
//! `capacity` units no longer fits; down, the rate creeps above `count/period`.
//! So every time here is scaled by `count`: in units of `1/count` ns, `T` is
//! exactly `period` ns and `τ` is exactly `capacity × period`. The TAT is
//! stored exactly as whole nanoseconds plus a fraction `frac / den` of one.

use std::num::NonZeroU32;

use super::codec::{Reader, Writer};
use super::time::Nanos;
use super::{
    block, millis, ChargeError, Decision, DecodeError, Detail, Kind, Param, ParamError, ParamKind,
    Retry, Value, MAX_DURATION,
};

/// The largest `max_burst`. (A request's quantity has its own bound in the
/// argument parser; here a quantity above the capacity is simply one that
/// can never fit, and only `min(quantity, capacity)` enters the arithmetic.)
pub const MAX_BURST: u64 = 1_000_000_000_000;
/// The largest `count`: it is the denominator of the stored fraction.
pub const MAX_COUNT: u64 = u32::MAX as u64;
/// The longest tolerance `τ = (max_burst + 1) × period / count`: one
/// hundred years. A burst may not borrow more time than this, which keeps
/// every TAT far below `Nanos::MAX`.
pub const MAX_TOLERANCE: Nanos = Nanos::new(10 * MAX_DURATION.get());
/// The rule `MAX_TOLERANCE` sets, as the error message states it.
const TOLERANCE_RULE: &str =
    "(max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)";

/// The bound of a charge, as its error states it after `quantity`.
const CHARGE_RULE: &str = "would put the TAT more than 315360000 seconds (10 years) ahead of now";

/// Validated GCRA parameters: `count` units per `period`, burst `max_burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThrottleParams {
    capacity: u64,
    count: u32,
    /// `period` in ns, which is also `T` in scaled units.
    period: u64,
    /// `τ` in scaled units: `capacity × period`.
    tolerance: u128,
    /// BLOCK: how long a refusal blocks the key.
    block: block::Penalty,
}

/// Why `ThrottleParams::new` refused its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottleParamError {
    MaxBurst,
    Count,
    Period,
    /// Each argument is in range, but together they let a burst borrow more
    /// than `MAX_TOLERANCE`.
    Tolerance,
}

impl ThrottleParams {
    pub fn new(
        max_burst: u64,
        count: u64,
        period: Nanos,
    ) -> Result<ThrottleParams, ThrottleParamError> {
        if max_burst > MAX_BURST {
            return Err(ThrottleParamError::MaxBurst);
        }
        let count = match u32::try_from(count) {
            Ok(c) if c > 0 => c,
            _ => return Err(ThrottleParamError::Count),
        };
        if period == Nanos::ZERO || period > MAX_DURATION {
            return Err(ThrottleParamError::Period);
        }
        let capacity = max_burst + 1;
        let period = period.get();
        let tolerance = u128::from(capacity) * u128::from(period);
        // τ in nanoseconds is tolerance / count.
        if tolerance > u128::from(MAX_TOLERANCE.get()) * u128::from(count) {
            return Err(ThrottleParamError::Tolerance);
        }
        Ok(ThrottleParams {
            capacity,
            count,
            period,
            tolerance,
            block: block::Penalty::NONE,
        })
    }

    /// The same parameters with the BLOCK option (`None`: without).
    #[cfg(test)]
    pub fn with_block(self, block: Option<Nanos>) -> ThrottleParams {
        ThrottleParams {
            block: block::Penalty::new(block),
            ..self
        }
    }

    /// `count` as a TAT's denominator (it is at least 1).
    fn den(&self) -> NonZeroU32 {
        NonZeroU32::new(self.count).unwrap_or(NonZeroU32::MIN)
    }

    fn scale(&self, t: Nanos) -> u128 {
        u128::from(t.get()) * u128::from(self.count)
    }

    /// A scaled duration back in nanoseconds, rounded up. (Divisions on
    /// u64 when the value fits, which is the usual case: a 128-bit division
    /// costs several times more.)
    fn unscale_ceil(&self, scaled: u128) -> Nanos {
        match u64::try_from(scaled) {
            Ok(small) => Nanos::new(small.div_ceil(u64::from(self.count))),
            Err(_) => Nanos::saturating_from_u128(scaled.div_ceil(u128::from(self.count))),
        }
    }

    /// How many whole emission intervals fit in a scaled duration.
    fn intervals(&self, scaled: u128) -> u128 {
        match u64::try_from(scaled) {
            Ok(small) => u128::from(small / self.period),
            Err(_) => scaled / u128::from(self.period),
        }
    }
}

/// A THROTTLE key's state: its TAT, and the end of its block for a key
/// that was blocked (BLOCK). 16 bytes, as before BLOCK: a key never
/// blocked holds its TAT in place; a blocked one holds both in a box of
/// their own, which only blocked keys pay for.
#[derive(Clone, Debug)]
pub struct ThrottleState(Repr);

#[derive(Clone, Debug)]
enum Repr {
    Open(Tat),
    /// The TAT and the end of the block (never zero).
    Blocked(Box<(Tat, Nanos)>),
}

// The layout the comment above promises: `Blocked`'s box sits beside the
// denominator, whose zero (which no TAT holds) tells the two apart.
const _: () = assert!(std::mem::size_of::<ThrottleState>() == 16);

/// The theoretical arrival time, exactly: `whole + frac / den` nanoseconds,
/// with `den` the `count` in force when it was stored and `frac < den`.
/// The state of a missing key is the TAT 0 (the epoch), which is never
/// ahead of `now`: a full limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tat {
    whole: Nanos,
    frac: u32,
    den: NonZeroU32,
}

impl Default for ThrottleState {
    fn default() -> ThrottleState {
        ThrottleState::from_nanos(Nanos::ZERO)
    }
}

/// Two states are equal when their TATs and their blocks' ends are.
impl PartialEq for ThrottleState {
    fn eq(&self, other: &ThrottleState) -> bool {
        self.tat() == other.tat() && self.blocked_until() == other.blocked_until()
    }
}

impl Eq for ThrottleState {}

impl std::hash::Hash for ThrottleState {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.tat().hash(state);
        self.blocked_until().hash(state);
    }
}

impl ThrottleState {
    /// A TAT of whole nanoseconds, as redis-cell stores it.
    pub fn from_nanos(whole: Nanos) -> ThrottleState {
        ThrottleState(Repr::Open(Tat {
            whole,
            frac: 0,
            den: NonZeroU32::MIN,
        }))
    }

    #[inline(always)]
    fn tat(&self) -> &Tat {
        match &self.0 {
            Repr::Open(tat) => tat,
            Repr::Blocked(both) => &both.0,
        }
    }

    /// This state with its TAT replaced by `tat` (its block kept).
    fn with_tat(&mut self, tat: Tat) {
        match &mut self.0 {
            Repr::Open(t) => *t = tat,
            Repr::Blocked(both) => both.0 = tat,
        }
    }

    fn of(tat: Tat) -> ThrottleState {
        ThrottleState(Repr::Open(tat))
    }

    /// The TAT in units of `1/count` ns. Stored under another `count`, the
    /// fraction is rounded up: the limiter forgets nothing it recorded.
    #[inline]
    fn scaled(&self, params: &ThrottleParams) -> u128 {
        self.tat().scaled(params)
    }
}

impl Tat {
    fn scaled(&self, params: &ThrottleParams) -> u128 {
        let c = u128::from(params.count);
        let frac = if self.den.get() == params.count {
            u128::from(self.frac)
        } else {
            (u128::from(self.frac) * c).div_ceil(u128::from(self.den.get()))
        };
        u128::from(self.whole.get()) * c + frac
    }

    fn from_scaled(scaled: u128, params: &ThrottleParams) -> Tat {
        let c = u128::from(params.count);
        Tat {
            whole: Nanos::saturating_from_u128(scaled / c),
            // The remainder is below `count`, which is a u32.
            frac: u32::try_from(scaled % c).unwrap_or(u32::MAX),
            den: params.den(),
        }
    }

    /// The TAT `ahead` scaled units after `now` (exactly: `now` is whole).
    fn after(now: Nanos, ahead: u128, params: &ThrottleParams) -> Tat {
        let c = params.count;
        let (whole, frac) = match u64::try_from(ahead) {
            Ok(small) => (
                now.saturating_add(Nanos::new(small / u64::from(c))),
                // The remainder is below `count`, a u32.
                u32::try_from(small % u64::from(c)).unwrap_or(0),
            ),
            Err(_) => {
                let c = u128::from(c);
                (
                    now.saturating_add(Nanos::saturating_from_u128(ahead / c)),
                    u32::try_from(ahead % c).unwrap_or(0),
                )
            }
        };
        Tat {
            whole,
            frac,
            den: params.den(),
        }
    }

    /// The TAT rounded up to whole ns: within a nanosecond, never early.
    fn ceil(&self) -> Nanos {
        self.whole
            .saturating_add(Nanos::new(u64::from(self.frac > 0)))
    }
}

#[cfg(test)]
impl ThrottleState {
    /// A TAT of these parts, even parts no valid state holds but a zero
    /// denominator.
    pub(super) fn from_parts(whole: Nanos, frac: u32, den: u32) -> ThrottleState {
        ThrottleState::of(Tat {
            whole,
            frac,
            den: NonZeroU32::new(den).expect("a test's denominator is not zero"),
        })
    }

    /// The parts: `(whole, frac, den)`.
    pub(super) fn parts(&self) -> (Nanos, u32, u32) {
        let tat = self.tat();
        (tat.whole, tat.frac, tat.den.get())
    }
}

impl Kind for ThrottleState {
    type Params = ThrottleParams;
    /// The TAT to store.
    type Update = Tat;

    const NAME: &'static str = "THROTTLE";
    const TYPE_NAME: &'static str = "rl-gcra--";
    const TAG: u8 = b'G';
    const SUMMARY: &'static str = "GCRA rate limiter, compatible with redis-cell's CL.THROTTLE. Replies limited, limit, remaining, retry_after, reset_after.";
    const COMPLEXITY: &'static str = "O(1)";
    const SINCE: &'static str = "0.1.0";
    const WAITS: bool = true;
    const PARAMS: &'static [Param] = &[
        Param::integer("max_burst", 0, MAX_BURST),
        Param::integer("count", 1, MAX_COUNT),
        Param::of("period", ParamKind::Duration),
    ];
    const OPTIONS: &'static [Param] = &[block::BLOCK];

    /// A redis-cell key: its TAT as a decimal count of nanoseconds, which
    /// RL.THROTTLE adopts under the `cell-alias` option.
    fn adopt(string: &[u8]) -> Option<ThrottleState> {
        let text = std::str::from_utf8(string).ok()?;
        Some(ThrottleState::from_nanos(Nanos::new(
            text.parse::<u64>().ok()?,
        )))
    }

    fn params(values: &[Value<'_>]) -> Result<ThrottleParams, ParamError> {
        let [max_burst, count, period] = Value::numbers(values)?;
        let mut params =
            ThrottleParams::new(max_burst, count, Nanos::new(period)).map_err(|e| match e {
                ThrottleParamError::MaxBurst => ParamError::Param(0),
                ThrottleParamError::Count => ParamError::Param(1),
                ThrottleParamError::Period => ParamError::Param(2),
                ThrottleParamError::Tolerance => ParamError::Joint(TOLERANCE_RULE),
            })?;
        params.block = block::option(values, 3);
        Ok(params)
    }

    fn block_of(params: &ThrottleParams) -> Option<Nanos> {
        params.block.get()
    }

    #[inline(always)]
    fn blocked_until(&self) -> Nanos {
        match &self.0 {
            Repr::Open(_) => Nanos::ZERO,
            Repr::Blocked(both) => both.1,
        }
    }

    fn set_blocked_until(&mut self, end: Nanos) {
        let tat = *self.tat();
        self.0 = match end {
            Nanos::ZERO => Repr::Open(tat),
            end => Repr::Blocked(Box::new((tat, end))),
        };
    }

    /// Decides a request against this TAT (the default, 0, for a missing
    /// key). The update, when the request is allowed and takes at least one
    /// unit, is the TAT to store.
    fn decide(
        &self,
        now: Nanos,
        params: &ThrottleParams,
        quantity: u64,
    ) -> (Decision, Option<Tat>) {
        let now_s = params.scale(now);
        let tat_s = self.scaled(params);
        let ttl_before = tat_s.saturating_sub(now_s);

        let fits = quantity <= params.capacity;
        // With quantity <= capacity the increment is at most τ, so no overflow.
        let new_tat_s = tat_s.max(now_s)
            + u128::from(quantity.min(params.capacity)) * u128::from(params.period);
        let ttl_after = new_tat_s - now_s;
        let limited = !fits || ttl_after > params.tolerance;

        let ttl = if limited { ttl_before } else { ttl_after };
        let remaining = params.intervals(params.tolerance.saturating_sub(ttl));
        let retry = if !fits {
            Retry::Never
        } else if limited {
            Retry::At(now.saturating_add(params.unscale_ceil(ttl_after - params.tolerance)))
        } else {
            Retry::NotLimited
        };
        // An allowed request that takes units resets when its new TAT,
        // rounded up to whole nanoseconds, is reached: from the TAT's own
        // quotient and remainder, one division instead of two.
        let (reset_at, update) = if !limited && quantity > 0 {
            let tat = Tat::after(now, ttl_after, params);
            (tat.ceil(), Some(tat))
        } else {
            (now.saturating_add(params.unscale_ceil(ttl)), None)
        };
        let decision = Decision {
            limited,
            limit: params.capacity,
            remaining: u64::try_from(remaining)
                .unwrap_or(u64::MAX)
                .min(params.capacity),
            retry,
            reset_at,
        };
        (decision, update)
    }

    /// The instant the request's new TAT is at most `τ` ahead: `now`, or
    /// `new_tat - τ` (rounded up to the ns) when the limiter is full.
    fn turn(&self, now: Nanos, params: &ThrottleParams, quantity: u64) -> Option<Nanos> {
        if quantity > params.capacity {
            return None;
        }
        let now_s = params.scale(now);
        // With quantity <= capacity the increment is at most τ, so no overflow.
        let ahead = self.scaled(params).max(now_s)
            + u128::from(quantity) * u128::from(params.period)
            - now_s;
        Some(match ahead.saturating_sub(params.tolerance) {
            0 => now,
            late => now.saturating_add(params.unscale_ceil(late)),
        })
    }

    /// Books the request for its turn: the new TAT is `max(at, TAT) + I`,
    /// as for a request allowed at the instant `at` it goes. At its own
    /// turn that is `TAT + I` (the turn is at most the TAT; only when
    /// `quantity` is the whole capacity can the turn, rounded up to the ns,
    /// pass the TAT, by less than 1 ns); at a later one (another limit's
    /// turn), a request arriving then. So every turn handed out is at most
    /// `τ` behind its TAT and the TATs grow by `I` a turn: the turns never
    /// exceed the rate and the burst.
    fn book(
        &self,
        now: Nanos,
        at: Nanos,
        params: &ThrottleParams,
        quantity: u64,
    ) -> (Decision, Option<Tat>) {
        let Some(own) = self.turn(now, params, quantity) else {
            return self.decide(now, params, quantity);
        };
        if quantity == 0 {
            let (decision, _) = self.decide(now, params, 0);
            let decision = Decision {
                limited: false,
                retry: Retry::Turn(own),
                ..decision
            };
            return (decision, None);
        }
        let now_s = params.scale(now);
        let tat_s = self.scaled(params);
        let start_s = tat_s.max(params.scale(at.max(own)));
        // quantity <= capacity (`turn` answered): the increment is at most τ.
        let ahead = start_s + u128::from(quantity) * u128::from(params.period) - now_s;
        let remaining = params.intervals(params.tolerance.saturating_sub(ahead));
        let tat = Tat::after(now, ahead, params);
        let decision = Decision {
            limited: false,
            limit: params.capacity,
            remaining: u64::try_from(remaining)
                .unwrap_or(u64::MAX)
                .min(params.capacity),
            retry: Retry::Turn(own),
            reset_at: tat.ceil(),
        };
        (decision, Some(tat))
    }

    /// Stores the new TAT; a block that has ended goes (an update is made
    /// only on a key not blocked).
    fn apply(&mut self, update: Tat) {
        *self = ThrottleState::of(update);
    }

    /// Moves the TAT back by `quantity × T`, never before `now`.
    fn refund(&mut self, now: Nanos, params: &ThrottleParams, quantity: u64) {
        let now_s = params.scale(now);
        let tat_s = self.scaled(params);
        if tat_s <= now_s {
            return;
        }
        let back = u128::from(quantity.min(params.capacity)) * u128::from(params.period);
        self.with_tat(Tat::from_scaled(
            tat_s.saturating_sub(back).max(now_s),
            params,
        ));
    }

    /// Moves the TAT to `max(now, TAT) + quantity × T`, past the tolerance
    /// if need be (a debt that time pays back); refused when that puts it
    /// more than [`MAX_DURATION`] ahead of `now`, or past `Nanos::MAX`.
    fn charge(
        &mut self,
        now: Nanos,
        params: &ThrottleParams,
        quantity: u64,
    ) -> Result<(), ChargeError> {
        let now_s = params.scale(now);
        let ahead = self
            .scaled(params)
            .saturating_sub(now_s)
            .checked_add(u128::from(quantity) * u128::from(params.period))
            .filter(|&ahead| ahead <= params.scale(MAX_DURATION))
            // Nor past the last instant a TAT holds (in 2554).
            .filter(|&ahead| now_s + ahead <= params.scale(Nanos::MAX))
            .ok_or(ChargeError(CHARGE_RULE))?;
        self.with_tat(Tat::after(now, ahead, params));
        Ok(())
    }

    /// `tat_ahead_ms`: how far the TAT is ahead of now, which is the time
    /// until the limiter is full again (0: it is); `tat_unix_ms`: the TAT.
    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        let tat = self.tat().ceil();
        vec![
            (
                "tat_ahead_ms",
                Detail::Integer(millis(tat.saturating_sub(now))),
            ),
            ("tat_unix_ms", Detail::Integer(millis(tat))),
        ]
    }

    /// Canonical encoding: whole ns (u64), fraction (u32), denominator
    /// (u32), little-endian: 16 bytes.
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(16);
        let tat = self.tat();
        w.u64(tat.whole.get()).u32(tat.frac).u32(tat.den.get());
        w.into_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<ThrottleState, DecodeError> {
        let mut r = Reader::new(bytes);
        let (whole, frac, den) = (Nanos::new(r.u64()?), r.u32()?, r.u32()?);
        r.finish()?;
        let Some(den) = NonZeroU32::new(den) else {
            return Err(DecodeError::Invalid("denominator is zero"));
        };
        let tat = Tat { whole, frac, den };
        if tat.frac >= tat.den.get() {
            return Err(DecodeError::Invalid(
                "fraction is not below its denominator",
            ));
        }
        Ok(ThrottleState::of(tat))
    }

    /// The state, and for a blocked key its box.
    fn mem_usage(&self) -> usize {
        let boxed = match self.0 {
            Repr::Open(_) => 0,
            Repr::Blocked(_) => std::mem::size_of::<(Tat, Nanos)>(),
        };
        std::mem::size_of::<ThrottleState>() + boxed
    }
}
