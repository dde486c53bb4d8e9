//! RL.THROTTLE (GCRA) across its documented ranges: `max_burst` up to
//! 10^12, `count` up to 2^32 - 1, periods from 1 ns to ten years, the
//! tolerance up to 100 years, quantities up to 10^12, the clock going
//! backwards, and the parameters changing between calls.
//!
//! The model, `Exact`, is docs/DESIGN.md#throttle written out
//! in exact rational arithmetic: every instant and duration is a rational
//! number of nanoseconds, kept as a `u128` numerator over one denominator
//! that every count of the run divides. It is compared with the code on
//! all five fields: the decision's instants to the nanosecond (rounded up)
//! and the replies in milliseconds and in seconds (rounded up from the
//! exact value, not from the nanoseconds).

use proptest::prelude::*;

use crate::core::tests::{
    assert_retry_promise, choice, marks_of, move_clock, pick, quantity, start_instant, Choice,
};
use crate::core::throttle::{
    ThrottleParamError, ThrottleParams, ThrottleState, MAX_BURST, MAX_COUNT, MAX_TOLERANCE,
};
use crate::core::{Decision, Kind, Nanos, Retry, TimeUnit, MAX_DURATION};

const MS: u64 = 1_000_000;

/// The divisors of 2^32 - 1 = 3 × 5 × 17 × 257 × 65537 (`MAX_COUNT`): runs
/// that change the count take it from these, so that one denominator,
/// `MAX_COUNT`, holds every TAT exactly.
fn divisors() -> Vec<u64> {
    let primes = [3u64, 5, 17, 257, 65_537];
    (0..1u32 << primes.len())
        .map(|set| {
            primes
                .iter()
                .enumerate()
                .filter(|&(i, _)| set & (1 << i) != 0)
                .map(|(_, &p)| p)
                .product()
        })
        .collect()
}

/// One call's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rate {
    burst: u64,
    count: u64,
    /// ns
    period: u64,
}

impl Rate {
    /// Parameters with this `count`, a period anywhere from 1 ns to ten
    /// years (often whole milliseconds or seconds, as the commands send),
    /// and a burst up to the largest the 100-year tolerance allows.
    fn new(count: u64, period: Choice, burst: Choice) -> Rate {
        let max = MAX_DURATION.get();
        let raw = 1 + pick(max - 1, period);
        let period = match period.0 / 64 {
            1 => raw.next_multiple_of(MS).min(max),
            2 => raw.next_multiple_of(1_000 * MS).min(max),
            _ => raw,
        };
        // (max_burst + 1) × period / count <= 100 years.
        let most = u128::from(MAX_TOLERANCE.get()) * u128::from(count) / u128::from(period) - 1;
        let most = u64::try_from(most).unwrap_or(u64::MAX).min(MAX_BURST);
        if most < MAX_BURST {
            assert_eq!(
                ThrottleParams::new(most + 1, count, Nanos::new(period)),
                Err(ThrottleParamError::Tolerance),
                "one more burst passes the 100-year tolerance"
            );
        }
        Rate {
            burst: pick(most, burst),
            count,
            period,
        }
    }

    fn params(&self) -> ThrottleParams {
        ThrottleParams::new(self.burst, self.count, Nanos::new(self.period))
            .expect("valid by construction")
    }

    fn capacity(&self) -> u64 {
        self.burst + 1
    }

    /// The emission interval, rounded up to whole ns.
    fn interval(&self) -> u64 {
        self.period.div_ceil(self.count)
    }

    /// The tolerance, rounded up to whole ns.
    fn tolerance(&self) -> u64 {
        let t = u128::from(self.capacity()) * u128::from(self.period);
        u64::try_from(t.div_ceil(u128::from(self.count))).expect("at most 100 years")
    }
}

/// How the runs pick counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counts {
    /// One count, anywhere in `1..=MAX_COUNT`, for the whole run.
    Fixed,
    /// A divisor of `MAX_COUNT` at every change.
    Divisors,
    /// Anywhere in `1..=MAX_COUNT` at every change.
    Any,
}

impl Counts {
    fn pick(self, c: Choice) -> u64 {
        match self {
            Counts::Fixed | Counts::Any => 1 + pick(MAX_COUNT - 1, c),
            Counts::Divisors => {
                let all = divisors();
                all[(c.1 % all.len() as u64) as usize]
            }
        }
    }
}

/// What a call changes: the clock, the quantity, and sometimes the
/// parameters (count, period, burst).
#[derive(Clone, Debug)]
struct Step {
    time: Choice,
    quantity: Choice,
    change: Option<(Choice, Choice, Choice)>,
}

#[derive(Clone, Debug)]
struct Run {
    start: u64,
    first: (Choice, Choice, Choice),
    steps: Vec<Step>,
}

/// Runs of up to 63 calls; with `changes`, a quarter of the calls bring
/// new parameters.
fn runs(changes: bool) -> impl Strategy<Value = Run> {
    let start = start_instant();
    let step = (
        choice(),
        choice(),
        prop::option::weighted(0.25, (choice(), choice(), choice())),
    )
        .prop_map(move |(time, quantity, change)| Step {
            time,
            quantity,
            change: change.filter(|_| changes),
        });
    (
        start,
        (choice(), choice(), choice()),
        prop::collection::vec(step, 1..64),
    )
        .prop_map(|(start, first, steps)| Run {
            start,
            first,
            steps,
        })
}

/// One call as the code saw it.
struct Call<'a> {
    /// The key before the call.
    key: &'a ThrottleState,
    now: u64,
    p: Rate,
    quantity: u64,
    decision: Decision,
}

/// Replays a run on one key, calling `check` on every call before its
/// update is stored.
fn replay(run: &Run, counts: Counts, mut check: impl FnMut(&Call)) {
    let mut p = Rate::new(counts.pick(run.first.0), run.first.1, run.first.2);
    let mut key = ThrottleState::default();
    let mut now = run.start;
    let mut last: Option<Decision> = None;
    for step in &run.steps {
        if let Some((count, period, burst)) = step.change {
            let count = match counts {
                Counts::Fixed => p.count,
                _ => counts.pick(count),
            };
            p = Rate::new(count, period, burst);
        }
        let marks = marks_of(last.as_ref());
        now = move_clock(now, step.time, p.interval(), p.tolerance(), &marks);
        let remaining = last.map_or(p.capacity(), |d| d.remaining);
        let quantity = quantity(step.quantity, p.capacity(), remaining);
        let (decision, update) = key.decide(Nanos::new(now), &p.params(), quantity);
        assert!(decision.remaining <= decision.limit);
        assert_eq!(update.is_some(), !decision.limited && quantity > 0);
        check(&Call {
            key: &key,
            now,
            p,
            quantity,
            decision,
        });
        if let Some(tat) = update {
            key.apply(tat);
        }
        last = Some(decision);
    }
}

/// What docs/DESIGN.md#throttle says the reply is, with durations exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Answer {
    limited: bool,
    limit: u64,
    remaining: u64,
    retry_after: Wait,
    /// `reset_after`, as a numerator over the model's denominator.
    reset_after: u128,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    NotLimited,
    Never,
    /// `retry_after`, as a numerator over the model's denominator.
    For(u128),
}

/// The design's GCRA in exact rationals: every time is a numerator over `den`.
struct Exact {
    den: u128,
    /// The stored TAT; `None` for a missing key.
    tat: Option<u128>,
    /// Read the TAT rounded up to a whole multiple of `1/count` ns. The design's
    /// TAT is exact whatever the count; a key stores it as a fraction over
    /// the count it was written with, which under another count the module
    /// rounds up ("the limiter forgets nothing it recorded"). The rounding
    /// is the one rule here that is the module's own (docs/DESIGN.md#parameter-changes); under a fixed
    /// count it changes nothing (every TAT is a multiple of `1/count`).
    round_to_count: bool,
}

impl Exact {
    fn new(den: u128, round_to_count: bool) -> Exact {
        Exact {
            den,
            tat: None,
            round_to_count,
        }
    }

    /// The answer to a request, and the TAT to store when it takes units.
    fn decide(&self, now: u64, p: &Rate, quantity: u64) -> (Answer, Option<u128>) {
        let den = self.den;
        let count = u128::from(p.count);
        assert_eq!(den % count, 0, "the denominator holds 1/count");
        let capacity = p.capacity();
        // T = period / count, τ = T × (max_burst + 1), I = T × quantity.
        let t = u128::from(p.period) * (den / count);
        let tau = t * u128::from(capacity);
        // Saturating only for a quantity that can never fit: I > τ anyway.
        let i = t.saturating_mul(u128::from(quantity));
        let now = u128::from(now) * den;
        // tat = stored TAT, or now when the key is missing.
        let tat = match self.tat {
            None => now,
            Some(tat) if self.round_to_count => tat.next_multiple_of(den / count),
            Some(tat) => tat,
        };
        // new_tat = max(now, tat) + I; allow_at = new_tat - τ;
        // limited = now < allow_at.
        let new_tat = now.max(tat).saturating_add(i);
        let limited = now + tau < new_tat;
        // allowed: ttl = new_tat - now; limited: ttl = max(0, tat - now).
        let ttl = if limited {
            tat.saturating_sub(now)
        } else {
            new_tat - now
        };
        // retry_after = allow_at - now, or -1 when I > τ.
        let retry_after = if !limited {
            Wait::NotLimited
        } else if i > tau {
            Wait::Never
        } else {
            Wait::For(new_tat - tau - now)
        };
        // remaining = clamp(floor((τ - ttl) / T), 0, capacity).
        let remaining = (tau.saturating_sub(ttl) / t).min(u128::from(capacity));
        let answer = Answer {
            limited,
            limit: capacity,
            remaining: u64::try_from(remaining).expect("at most the capacity"),
            retry_after,
            reset_after: ttl,
        };
        let store = (!limited && quantity > 0).then_some(new_tat);
        (answer, store)
    }

    /// Checks the code's decision against `answer`, field by field.
    fn check(&self, answer: &Answer, call: &Call) {
        let d = &call.decision;
        let now = call.now;
        let what = format!(
            "at {now} ns, {:?}, quantity {}: {d:?} vs {answer:?}",
            call.p, call.quantity
        );
        assert_eq!(d.limited, answer.limited, "limited; {what}");
        assert_eq!(d.limit, answer.limit, "limit; {what}");
        assert_eq!(d.remaining, answer.remaining, "remaining; {what}");
        // The decision's instants: now + the exact durations, rounded up
        // to whole nanoseconds.
        let at = |x: u128| {
            let ns = u64::try_from(x.div_ceil(self.den)).expect("in range");
            Nanos::new(now + ns)
        };
        let retry = match answer.retry_after {
            Wait::NotLimited => Retry::NotLimited,
            Wait::Never => Retry::Never,
            Wait::For(x) => Retry::At(at(x)),
        };
        assert_eq!(d.retry, retry, "retry; {what}");
        assert_eq!(d.reset_at, at(answer.reset_after), "reset; {what}");
        // The replies: the exact durations rounded up to the unit.
        for unit in [TimeUnit::Millis, TimeUnit::Seconds] {
            let per = self.den * u128::from(unit.nanos());
            let time = |x: u128| i64::try_from(x.div_ceil(per)).expect("in range");
            let retry_after = match answer.retry_after {
                Wait::For(x) => time(x),
                Wait::NotLimited | Wait::Never => -1,
            };
            let expected = [
                i64::from(answer.limited),
                i64::try_from(answer.limit).expect("in range"),
                i64::try_from(answer.remaining).expect("in range"),
                retry_after,
                time(answer.reset_after),
            ];
            assert_eq!(d.reply(Nanos::new(now), unit), expected, "{unit:?}; {what}");
        }
    }
}

/// 1/3 ms + 1/5 ms is 8/15 ms, so with 15 per ms and a capacity of 9 a
/// ninth fifteenth fits exactly, in the design's exact arithmetic. The module
/// stores the TAT as a fraction over the count it was written with; under
/// the second count it rounds 1/3 ms up to the next fifth of a nanosecond,
/// and the request is limited for the 1/15 ns that rounding added. This
/// pins that rule: conservative, less than a nanosecond per count change
/// (the property `count_changes_only_round_the_tat_up` bounds it), and the
/// price of a fixed-size state, as exact sums of fractions over different
/// counts need ever larger denominators.
#[test]
fn a_count_change_rounds_the_tat_up_by_less_than_a_nanosecond() {
    let now = Nanos::new(1_700_000_000_000_000_000);
    let mut key = ThrottleState::default();
    for count in [3, 5] {
        let p = ThrottleParams::new(8, count, Nanos::new(MS)).unwrap();
        let (d, update) = key.decide(now, &p, 1);
        assert!(!d.limited);
        key.apply(update.unwrap());
    }
    let fifteenths = Rate {
        burst: 8,
        count: 15,
        period: MS,
    };
    let mut exact = Exact::new(15, false);
    for count in [3, 5] {
        let p = Rate {
            count,
            ..fifteenths
        };
        let (_, store) = exact.decide(now.get(), &p, 1);
        exact.tat = store;
    }
    assert_eq!(exact.tat, Some((now.get() as u128) * 15 + 8_000_000));
    let (answer, _) = exact.decide(now.get(), &fifteenths, 1);
    assert!(!answer.limited, "exact: 8/15 + 1/15 = 9/15 ms fits");
    let (d, _) = key.decide(now, &fifteenths.params(), 1);
    assert!(d.limited, "the module: limited by the rounding");
    assert_eq!(d.retry, Retry::At(Nanos::new(now.get() + 1)));
}

proptest! {
    /// All five fields equal the exact formulas of docs/DESIGN.md#throttle, with the count fixed
    /// per run (anywhere up to 2^32 - 1) and the period (1 ns to ten years)
    /// and the burst (up to 10^12 or the 100-year tolerance) changing
    /// between calls, quantities up to 10^12 and the clock going back.
    #[test]
    fn matches_the_exact_model(run in runs(true)) {
        // The run's one count is the denominator: replay picks it the same way.
        let den = u128::from(Counts::Fixed.pick(run.first.0));
        let mut model = Exact::new(den, false);
        replay(&run, Counts::Fixed, |call| {
            let (answer, store) = model.decide(call.now, &call.p, call.quantity);
            model.check(&answer, call);
            if store.is_some() {
                model.tat = store;
            }
        });
    }

    /// With the count changing too (to any divisor of 2^32 - 1, 1 and
    /// 2^32 - 1 included), all five fields equal the exact model with the
    /// module's one rule for a changed count (the TAT read rounded up to
    /// `1/count` ns). And that rule costs little and only in the safe
    /// direction: beside it runs the design's TAT without any rounding, fed the
    /// same admissions; it is never later than the module's, less than 1
    /// ns earlier per count change, and it allows whatever the module
    /// allows.
    #[test]
    fn count_changes_only_round_the_tat_up(run in runs(true)) {
        let den = u128::from(MAX_COUNT);
        let mut model = Exact::new(den, true);
        let mut unrounded = Exact::new(den, false);
        let mut changes = 0u128;
        let mut count = None;
        replay(&run, Counts::Divisors, |call| {
            if count.is_some_and(|c| c != call.p.count) {
                changes += 1;
            }
            count = Some(call.p.count);
            let (answer, store) = model.decide(call.now, &call.p, call.quantity);
            model.check(&answer, call);
            let (exact, exact_store) = unrounded.decide(call.now, &call.p, call.quantity);
            assert!(answer.limited || !exact.limited, "exact limits what the module allows");
            if store.is_some() {
                model.tat = store;
                unrounded.tat = exact_store;
            }
            let (rounded, exact) = (model.tat.unwrap_or(0), unrounded.tat.unwrap_or(0));
            assert!(exact <= rounded, "rounded down");
            assert!(rounded - exact < changes.max(1) * den, "{} ns after {changes} changes", (rounded - exact) as f64 / den as f64);
            if changes == 0 {
                assert_eq!(rounded, exact);
            }
        });
    }

    /// The promise of docs/DESIGN.md#reply at every range: the same request is allowed at the
    /// instant `Retry::At` names and limited a nanosecond earlier, and
    /// waiting the rounded-up `retry_after` of the reply, in milliseconds
    /// or in seconds, is enough. Every parameter changes between calls.
    #[test]
    fn waiting_retry_after_is_enough(run in runs(true)) {
        replay(&run, Counts::Any, |call| {
            let p = call.p.params();
            assert_retry_promise(call.key, &p, call.now, call.quantity, call.p.capacity(), &call.decision);
        });
    }

    /// Over any span of call instants `[a, b]`, even with the clock going
    /// back and forth, the units admitted are at most the capacity plus
    /// the rate over the span: `capacity + (b - a) × count / period`.
    /// Parameters fixed per run, anywhere in their ranges.
    #[test]
    fn no_span_admits_more_than_capacity_plus_rate(run in runs(false)) {
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        let mut params = None;
        replay(&run, Counts::Fixed, |call| {
            params = Some(call.p);
            if !call.decision.limited && call.quantity > 0 {
                admitted.push((call.now, call.quantity));
            }
        });
        let p = params.unwrap();
        admitted.sort_unstable();
        for (i, &(a, _)) in admitted.iter().enumerate() {
            let mut units = 0u128;
            for &(b, q) in &admitted[i..] {
                units += u128::from(q);
                let allowed = u128::from(p.capacity()) * u128::from(p.period)
                    + u128::from(b - a) * u128::from(p.count);
                prop_assert!(units * u128::from(p.period) <= allowed, "{} units in [{}, {}], {:?}", units, a, b, p);
            }
        }
    }
}
