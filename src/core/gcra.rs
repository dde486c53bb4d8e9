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

use super::codec::{Reader, Writer};
use super::time::Nanos;
use super::{
    millis, Arg, ArgKind, Decision, DecodeError, Detail, Limiter, ParamError, Retry, MAX_DURATION,
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

/// Validated GCRA parameters: `count` units per `period`, burst `max_burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcraParams {
    capacity: u64,
    count: u32,
    /// `period` in ns, which is also `T` in scaled units.
    period: u64,
    /// `τ` in scaled units: `capacity × period`.
    tolerance: u128,
}

/// Why `GcraParams::new` refused its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcraParamError {
    MaxBurst,
    Count,
    Period,
    /// Each argument is in range, but together they let a burst borrow more
    /// than `MAX_TOLERANCE`.
    Tolerance,
}

impl GcraParams {
    pub fn new(max_burst: u64, count: u64, period: Nanos) -> Result<GcraParams, GcraParamError> {
        if max_burst > MAX_BURST {
            return Err(GcraParamError::MaxBurst);
        }
        let count = match u32::try_from(count) {
            Ok(c) if c > 0 => c,
            _ => return Err(GcraParamError::Count),
        };
        if period == Nanos::ZERO || period > MAX_DURATION {
            return Err(GcraParamError::Period);
        }
        let capacity = max_burst + 1;
        let period = period.get();
        let tolerance = u128::from(capacity) * u128::from(period);
        // τ in nanoseconds is tolerance / count.
        if tolerance > u128::from(MAX_TOLERANCE.get()) * u128::from(count) {
            return Err(GcraParamError::Tolerance);
        }
        Ok(GcraParams {
            capacity,
            count,
            period,
            tolerance,
        })
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

/// The theoretical arrival time, exactly: `whole + frac / den` nanoseconds,
/// with `den` the `count` in force when it was stored and `frac < den`.
/// The state of a missing key is the TAT 0 (the epoch), which is never
/// ahead of `now`: a full limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tat {
    whole: Nanos,
    frac: u32,
    den: u32,
}

impl Default for Tat {
    fn default() -> Tat {
        Tat::from_nanos(Nanos::ZERO)
    }
}

impl Tat {
    /// The TAT in units of `1/count` ns. Stored under another `count`, the
    /// fraction is rounded up: the limiter forgets nothing it recorded.
    fn scaled(&self, params: &GcraParams) -> u128 {
        let c = u128::from(params.count);
        let frac = if self.den == params.count {
            u128::from(self.frac)
        } else {
            (u128::from(self.frac) * c).div_ceil(u128::from(self.den))
        };
        u128::from(self.whole.get()) * c + frac
    }

    fn from_scaled(scaled: u128, params: &GcraParams) -> Tat {
        let c = u128::from(params.count);
        Tat {
            whole: Nanos::saturating_from_u128(scaled / c),
            // The remainder is below `count`, which is a u32.
            frac: u32::try_from(scaled % c).unwrap_or(u32::MAX),
            den: params.count,
        }
    }

    /// The TAT `ahead` scaled units after `now` (exactly: `now` is whole).
    fn after(now: Nanos, ahead: u128, params: &GcraParams) -> Tat {
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
            den: params.count,
        }
    }

    /// A TAT of whole nanoseconds, as redis-cell stores it.
    pub fn from_nanos(whole: Nanos) -> Tat {
        Tat {
            whole,
            frac: 0,
            den: 1,
        }
    }
}

impl Limiter for Tat {
    type Params = GcraParams;
    /// The TAT to store.
    type Update = Tat;

    const NAME: &'static str = "THROTTLE";
    const TYPE_NAME: &'static str = "rl-gcra--";
    const TAG: u8 = b'G';
    const ARGS: &'static [Arg] = &[
        Arg {
            name: "max_burst",
            kind: ArgKind::Integer {
                min: 0,
                max: MAX_BURST,
                ceiling: None,
            },
        },
        Arg {
            name: "count",
            kind: ArgKind::Integer {
                min: 1,
                max: MAX_COUNT,
                ceiling: None,
            },
        },
        Arg {
            name: "period",
            kind: ArgKind::Duration,
        },
    ];

    fn params(values: &[u64]) -> Result<GcraParams, ParamError> {
        let &[max_burst, count, period] = values else {
            return Err(ParamError::Arg(values.len().min(2)));
        };
        GcraParams::new(max_burst, count, Nanos::new(period)).map_err(|e| match e {
            GcraParamError::MaxBurst => ParamError::Arg(0),
            GcraParamError::Count => ParamError::Arg(1),
            GcraParamError::Period => ParamError::Arg(2),
            GcraParamError::Tolerance => ParamError::Joint(TOLERANCE_RULE),
        })
    }

    /// Decides a request against this TAT (the default, 0, for a missing
    /// key). The update, when the request is allowed and takes at least one
    /// unit, is the TAT to store.
    fn decide(&self, now: Nanos, params: &GcraParams, quantity: u64) -> (Decision, Option<Tat>) {
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
        let decision = Decision {
            limited,
            limit: params.capacity,
            remaining: u64::try_from(remaining)
                .unwrap_or(u64::MAX)
                .min(params.capacity),
            retry,
            reset_at: now.saturating_add(params.unscale_ceil(ttl)),
        };
        let update = (!limited && quantity > 0).then(|| Tat::after(now, ttl_after, params));
        (decision, update)
    }

    fn apply(&mut self, update: Tat) {
        *self = update;
    }

    /// Moves the TAT back by `quantity × T`, never before `now`.
    fn refund(&mut self, now: Nanos, params: &GcraParams, quantity: u64) {
        let now_s = params.scale(now);
        let tat_s = self.scaled(params);
        if tat_s <= now_s {
            return;
        }
        let back = u128::from(quantity.min(params.capacity)) * u128::from(params.period);
        *self = Tat::from_scaled(tat_s.saturating_sub(back).max(now_s), params);
    }

    /// `tat_ahead_ms`: how far the TAT is ahead of now, which is the time
    /// until the limiter is full again (0: it is); `tat_unix_ms`: the TAT.
    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        // The TAT rounded up to whole ns: within a nanosecond, never early.
        let tat = self
            .whole
            .saturating_add(Nanos::new(u64::from(self.frac > 0)));
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
        w.u64(self.whole.get()).u32(self.frac).u32(self.den);
        w.into_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Tat, DecodeError> {
        let mut r = Reader::new(bytes);
        let tat = Tat {
            whole: Nanos::new(r.u64()?),
            frac: r.u32()?,
            den: r.u32()?,
        };
        r.finish()?;
        if tat.den == 0 {
            return Err(DecodeError::Invalid("denominator is zero"));
        }
        if tat.frac >= tat.den {
            return Err(DecodeError::Invalid(
                "fraction is not below its denominator",
            ));
        }
        Ok(tat)
    }

    fn mem_usage(&self) -> usize {
        std::mem::size_of::<Tat>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Unit;
    use proptest::prelude::*;

    /// Decides against a stored TAT, or a missing key (`None`).
    fn decide(
        tat: Option<&Tat>,
        now: Nanos,
        p: &GcraParams,
        quantity: u64,
    ) -> (Decision, Option<Tat>) {
        tat.copied().unwrap_or_default().decide(now, p, quantity)
    }

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    fn params(max_burst: u64, count: u64, period: Nanos) -> GcraParams {
        GcraParams::new(max_burst, count, period).unwrap()
    }

    /// Runs requests in order against one key, storing what `decide` returns.
    fn run(key: &mut Option<Tat>, now: u64, p: &GcraParams, quantity: u64) -> Decision {
        let (decision, update) = decide(key.as_ref(), Nanos::new(now), p, quantity);
        if let Some(tat) = update {
            *key = Some(tat);
        }
        decision
    }

    #[test]
    fn table_of_requests_in_seconds() {
        // One key, requests in order. Columns:
        // at (ms), max_burst, count, period (s), quantity
        //   => limited, limit, remaining, retry_after (s), reset_after (s)
        #[rustfmt::skip]
        type Case = (u64, u64, u64, u64, u64, [i64; 5]);
        let cases: &[Case] = &[
            // 30 per 60 s, burst 15: T = 2 s, capacity 16, τ = 32 s.
            (0, 15, 30, 60, 1, [0, 16, 15, -1, 2]),
            (0, 15, 30, 60, 14, [0, 16, 1, -1, 30]),
            (0, 15, 30, 60, 1, [0, 16, 0, -1, 32]),
            (0, 15, 30, 60, 1, [1, 16, 0, 2, 32]),
            // A peek reports without changing anything.
            (0, 15, 30, 60, 0, [0, 16, 0, -1, 32]),
            // 1.5 s later one unit is still 0.5 s away: rounded up to 1 s.
            (1_500, 15, 30, 60, 1, [1, 16, 0, 1, 31]),
            (2_000, 15, 30, 60, 1, [0, 16, 0, -1, 32]),
            // More than the capacity can never fit.
            (2_000, 15, 30, 60, 17, [1, 16, 0, -1, 32]),
            // Long idle: the key is as good as empty.
            (100_000, 15, 30, 60, 0, [0, 16, 16, -1, 0]),
            (100_000, 15, 30, 60, 16, [0, 16, 0, -1, 32]),
            // A smaller burst on the same key applies to what it recorded:
            // TAT is 32 s ahead, τ is now 2 s.
            (100_000, 0, 30, 60, 0, [1, 1, 0, 30, 32]),
            (130_000, 0, 30, 60, 1, [1, 1, 0, 2, 2]),
            (132_000, 0, 30, 60, 1, [0, 1, 0, -1, 2]),
        ];
        let mut key = None;
        for (i, &(at, burst, count, period, quantity, expect)) in cases.iter().enumerate() {
            let p = params(burst, count, Nanos::new(period * S));
            let d = run(&mut key, at * MS, &p, quantity);
            assert_eq!(
                d.reply(Nanos::new(at * MS), Unit::Seconds),
                expect,
                "case {i}"
            );
        }
    }

    #[test]
    fn redis_cell_published_cases() {
        // The case list redis-cell publishes for its own GCRA (capacity 5,
        // one unit per second), replayed here in milliseconds: the replies
        // agree wherever redis-cell is right. One key, requests in order.
        // at (ms), quantity => limited, limit, remaining, retry_after (ms), reset_after (ms)
        type Case = (u64, u64, [i64; 5]);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (0,     6, [1, 5, 5, -1, 0]),     // never fits
            (0,     1, [0, 5, 4, -1, 1_000]),
            (0,     1, [0, 5, 3, -1, 2_000]),
            (0,     1, [0, 5, 2, -1, 3_000]),
            (0,     1, [0, 5, 1, -1, 4_000]),
            (0,     1, [0, 5, 0, -1, 5_000]),
            (0,     1, [1, 5, 0, 1_000, 5_000]),
            (3_000, 1, [0, 5, 2, -1, 3_000]),
            (3_100, 1, [0, 5, 1, -1, 3_900]),
            (4_000, 1, [0, 5, 1, -1, 4_000]),
            (8_000, 1, [0, 5, 4, -1, 1_000]),
            (9_500, 1, [0, 5, 4, -1, 1_000]),
            (9_500, 0, [0, 5, 4, -1, 1_000]), // peek
            (9_500, 2, [0, 5, 2, -1, 3_000]),
            (9_500, 5, [1, 5, 2, 3_000, 3_000]),
        ];
        let p = params(4, 1, Nanos::new(S));
        let mut key = None;
        let start = 1_700_000_000 * S;
        for (i, &(at, quantity, expect)) in cases.iter().enumerate() {
            let now = start + at * MS;
            let d = run(&mut key, now, &p, quantity);
            assert_eq!(d.reply(Nanos::new(now), Unit::Millis), expect, "case {i}");
        }
    }

    #[test]
    fn thirds_of_a_second_are_exact() {
        // 3 per second, burst 1: a burst of two fits at once, which it would
        // not if T were rounded up to 333,333,334 ns.
        let p = params(1, 3, Nanos::new(S));
        let mut key = None;
        assert!(!run(&mut key, 0, &p, 1).limited);
        assert!(!run(&mut key, 0, &p, 1).limited);
        let d = run(&mut key, 0, &p, 1);
        assert!(d.limited);
        // The third unit fits exactly one third of a second later, rounded up.
        assert_eq!(d.retry, Retry::At(Nanos::new(333_333_334)));
        assert!(run(&mut key, 333_333_333, &p, 1).limited);
        assert!(!run(&mut key, 333_333_334, &p, 1).limited);
        // Over 1,000 s the rate is exactly 3 per second.
        let mut allowed = 0;
        for ms in 1_000..=1_001_000 {
            if !run(&mut key, ms * MS, &p, 1).limited {
                allowed += 1;
            }
        }
        // 3,000 for the 1,000 s, plus the full burst of 2 the key had at 1 s.
        assert_eq!(allowed, 3_002);
    }

    #[test]
    fn millisecond_periods_and_a_million_per_second() {
        let p = params(0, 1_000, Nanos::new(MS)); // 10^6 per second, T = 1 µs
        let mut key = None;
        let d = run(&mut key, 0, &p, 1);
        assert_eq!(d.reply(Nanos::ZERO, Unit::Millis), [0, 1, 0, -1, 1]);
        assert_eq!(d.reset_at, Nanos::new(1_000));
        let d = run(&mut key, 999, &p, 1);
        assert_eq!(d.retry, Retry::At(Nanos::new(1_000)));
        assert!(!run(&mut key, 1_000, &p, 1).limited);
    }

    #[test]
    fn a_clock_going_backwards_lets_nothing_more_through() {
        let p = params(0, 1, Nanos::new(S));
        let mut key = None;
        assert!(!run(&mut key, 10 * S, &p, 1).limited);
        let d = run(&mut key, 5 * S, &p, 1);
        assert!(d.limited);
        assert_eq!(d.reply(Nanos::new(5 * S), Unit::Seconds), [1, 1, 0, 6, 6]);
    }

    #[test]
    fn a_changed_count_rounds_the_stored_fraction_up() {
        let thirds = params(0, 3, Nanos::new(S));
        let mut key = None;
        run(&mut key, 0, &thirds, 1); // TAT = 333,333,333⅓ ns
        let halves = params(0, 2, Nanos::new(S));
        let d = run(&mut key, 0, &halves, 0);
        assert_eq!(d.reset_at, Nanos::new(333_333_334));
    }

    #[test]
    fn parameters_out_of_range_are_refused() {
        assert_eq!(
            GcraParams::new(MAX_BURST + 1, 1, Nanos::new(S)),
            Err(GcraParamError::MaxBurst)
        );
        assert_eq!(
            GcraParams::new(0, 0, Nanos::new(S)),
            Err(GcraParamError::Count)
        );
        assert_eq!(
            GcraParams::new(0, MAX_COUNT + 1, Nanos::new(S)),
            Err(GcraParamError::Count)
        );
        assert_eq!(
            GcraParams::new(0, 1, Nanos::ZERO),
            Err(GcraParamError::Period)
        );
        assert_eq!(
            GcraParams::new(0, 1, MAX_DURATION.saturating_add(Nanos::new(1))),
            Err(GcraParamError::Period)
        );
        assert_eq!(
            GcraParams::new(100, 1, MAX_DURATION),
            Err(GcraParamError::Tolerance)
        );
        assert!(GcraParams::new(MAX_BURST, MAX_COUNT, Nanos::new(S)).is_ok());
        assert!(GcraParams::new(0, 1, MAX_DURATION).is_ok());
    }

    #[test]
    fn decode_refuses_what_no_state_holds() {
        let tat = Tat {
            whole: Nanos::new(5),
            frac: 1,
            den: 3,
        };
        assert_eq!(Tat::decode(&tat.encode()), Ok(tat));
        let bytes = tat.encode();
        assert_eq!(Tat::decode(&bytes[..15]), Err(DecodeError::Length));
        assert_eq!(
            Tat::decode(&[bytes.as_slice(), &[0]].concat()),
            Err(DecodeError::Length)
        );
        let zero_den = Tat {
            whole: Nanos::new(5),
            frac: 0,
            den: 0,
        }
        .encode();
        assert!(matches!(
            Tat::decode(&zero_den),
            Err(DecodeError::Invalid(_))
        ));
        let big_frac = Tat {
            whole: Nanos::new(5),
            frac: 3,
            den: 3,
        }
        .encode();
        assert!(matches!(
            Tat::decode(&big_frac),
            Err(DecodeError::Invalid(_))
        ));
    }

    /// A naive GCRA over exact rationals, as a reference: the TAT is kept as
    /// a numerator over `count` with no shortcut at all.
    struct Reference {
        tat_num: Option<u128>, // TAT × count
    }

    impl Reference {
        fn request(&mut self, now: u64, burst: u64, count: u64, period: u64, q: u64) -> bool {
            let now_num = u128::from(now) * u128::from(count);
            let tat = self.tat_num.unwrap_or(now_num).max(now_num);
            let new_tat = tat + u128::from(q) * u128::from(period);
            let allowed =
                q <= burst + 1 && new_tat - now_num <= u128::from(burst + 1) * u128::from(period);
            if allowed && q > 0 {
                self.tat_num = Some(new_tat);
            }
            allowed
        }
    }

    fn scenario() -> impl Strategy<Value = (u64, u64, u64, Vec<(u64, u64)>)> {
        (
            0u64..20,
            1u64..50,
            1u64..5_000,
            proptest::collection::vec((0u64..3_000, 0u64..25), 1..200),
        )
    }

    proptest! {
        #[test]
        fn agrees_with_the_reference((burst, count, period_ms, steps) in scenario()) {
            let p = params(burst, count, Nanos::new(period_ms * MS));
            let mut key = None;
            let mut reference = Reference { tat_num: None };
            let mut now = 1_700_000_000 * S;
            for (step, q) in steps {
                now += step * MS / 7; // steps that are not whole milliseconds
                let d = run(&mut key, now, &p, q);
                prop_assert_eq!(!d.limited, reference.request(now, burst, count, period_ms * MS, q));
                prop_assert!(d.remaining <= d.limit);
            }
        }

        #[test]
        fn waiting_retry_after_is_enough((burst, count, period_ms, steps) in scenario(), unit_ms in prop::bool::ANY) {
            let unit = if unit_ms { Unit::Millis } else { Unit::Seconds };
            let p = params(burst, count, Nanos::new(period_ms * MS));
            let mut key = None;
            let mut now = 1_700_000_000 * S;
            for (step, q) in steps {
                now += step * MS / 3;
                let (d, update) = decide(key.as_ref(), Nanos::new(now), &p, q);
                if let Retry::At(at) = d.retry {
                    // Exactly at `at` it fits; a nanosecond earlier it does not.
                    prop_assert!(!decide(key.as_ref(), at, &p, q).0.limited);
                    prop_assert!(decide(key.as_ref(), Nanos::new(at.get() - 1), &p, q).0.limited);
                    // The rounded-up reply is enough too.
                    let waited = now + d.reply(Nanos::new(now), unit)[3] as u64 * unit.nanos();
                    prop_assert!(!decide(key.as_ref(), Nanos::new(waited), &p, q).0.limited);
                }
                if let Some(tat) = update {
                    key = Some(tat);
                }
            }
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = Tat::decode(&bytes);
        }

        #[test]
        fn any_stored_state_decides_without_panicking(
            whole in any::<u64>(),
            den in 1u32..,
            frac_seed in any::<u32>(),
            now in any::<u64>(),
            quantity in 0u64..=MAX_BURST + 2,
            count in 1u64..=MAX_COUNT,
        ) {
            let tat = Tat { whole: Nanos::new(whole), frac: frac_seed % den, den };
            let p = params(0, count, Nanos::new(S));
            let (d, update) = decide(Some(&tat), Nanos::new(now), &p, quantity);
            prop_assert!(d.remaining <= d.limit);
            if let Some(t) = update {
                prop_assert!(t.frac < t.den);
            }
        }

        #[test]
        fn no_interval_admits_more_than_capacity_plus_rate((burst, count, period_ms, steps) in scenario()) {
            let period = period_ms * MS;
            let p = params(burst, count, Nanos::new(period));
            let mut key = None;
            let mut now = 1_700_000_000 * S;
            let mut admitted: Vec<(u64, u64)> = Vec::new();
            for (step, q) in steps {
                now += step * MS / 5;
                if !run(&mut key, now, &p, q).limited && q > 0 {
                    admitted.push((now, q));
                }
            }
            // Over any interval [a, a + L], at most capacity + L × count / period units.
            for (i, &(start, _)) in admitted.iter().enumerate() {
                let mut units = 0u128;
                for &(t, q) in &admitted[i..] {
                    units += u128::from(q);
                    let span = u128::from(t - start);
                    prop_assert!(
                        units * u128::from(period) <= u128::from(burst + 1) * u128::from(period) + span * u128::from(count),
                        "{} units in {} ns", units, span
                    );
                }
            }
        }
    }
}
