//! RL.SLIDE across its documented ranges: limits up to and near the
//! configured maximum (10^6) and now and then the hard one (10^8), windows
//! from 1 ns to ten years, quantities up to 10^12, the clock going
//! backwards, and the limit and the window changing between calls.
//!
//! The model, `Log`, keeps every admitted request as `(instant, units)`
//! and computes each answer by brute force from the definitions of docs/DESIGN.md#slide, so it
//! stays fast whatever the limit: `used(t)` sums the records in
//! `(t - window, t]`, `retry_after` is the first instant some record leaves
//! after which the request fits. Three rules are the module's own (docs/DESIGN.md#departures),
//! and the model states them: the log keeps each instant rounded up to the
//! microsecond, except in the microsecond of its clock (the instant it was
//! last written at), where it keeps the clock; a call never reads or
//! writes before the clock; and an allowed request first forgets the
//! records that left at the instant it reads (which a later, longer window
//! then no longer sees).
//!
//! A second property holds the rounding to its promise without the first
//! rule: against the same units at their exact instants, every answer is
//! the exact one or at most a microsecond later, never earlier.

use proptest::prelude::*;

use crate::args::Bounds;
use crate::core::slide::{SlideParams, SlideState, MAX_LIMIT};
use crate::core::tests::{
    assert_retry_promise, choice, marks_of, move_clock, pick, quantity, spec_reply, start_instant,
    Choice,
};
use crate::core::{Decision, Kind, Nanos, Retry, TimeUnit, MAX_DURATION};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// The largest limit a client may set by default (`max-slide-limit`).
const CONFIGURED: u64 = Bounds::DEFAULT.max_slide_limit;

/// One call's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slide {
    limit: u64,
    /// ns
    window: u64,
}

impl Slide {
    /// A limit up to the configured maximum (one time in 16 the hard one),
    /// and a window from 1 ns to ten years (often whole ms or seconds).
    fn new(limit: Choice, window: Choice) -> Slide {
        let limit = if limit.0 % 16 == 15 {
            MAX_LIMIT
        } else {
            1 + pick(CONFIGURED - 1, limit)
        };
        let max = MAX_DURATION.get();
        let raw = 1 + pick(max - 1, window);
        let window = match window.0 / 64 {
            1 => raw.next_multiple_of(MS).min(max),
            2 => raw.next_multiple_of(1_000 * MS).min(max),
            _ => raw,
        };
        Slide { limit, window }
    }

    fn params(&self) -> SlideParams {
        SlideParams::new(self.limit, Nanos::new(self.window)).expect("valid by construction")
    }
}

/// What a call changes: the clock, the quantity, and sometimes the limit
/// or the window.
#[derive(Clone, Debug)]
struct Step {
    time: Choice,
    quantity: Choice,
    limit: Option<Choice>,
    window: Option<Choice>,
}

#[derive(Clone, Debug)]
struct Run {
    start: u64,
    first: (Choice, Choice),
    steps: Vec<Step>,
}

/// Runs of up to 47 calls; a fifth of the calls bring a new limit and,
/// with `window_changes`, a fifth a new window.
fn runs(window_changes: bool) -> impl Strategy<Value = Run> {
    let start = start_instant();
    let step = (
        choice(),
        choice(),
        prop::option::weighted(0.2, choice()),
        prop::option::weighted(0.2, choice()),
    )
        .prop_map(move |(time, quantity, limit, window)| Step {
            time,
            quantity,
            limit,
            window: window.filter(|_| window_changes),
        });
    (
        start,
        (choice(), choice()),
        prop::collection::vec(step, 1..48),
    )
        .prop_map(|(start, first, steps)| Run {
            start,
            first,
            steps,
        })
}

/// One call as the code saw it.
struct Call<'a> {
    /// The log before the call.
    log: &'a SlideState,
    now: u64,
    p: Slide,
    quantity: u64,
    decision: Decision,
}

/// Replays a run on one key, calling `check` on every call before its
/// update is recorded; returns the log at the end.
fn replay(run: &Run, mut check: impl FnMut(&Call)) -> SlideState {
    let mut p = Slide::new(run.first.0, run.first.1);
    let mut log = SlideState::default();
    let mut now = run.start;
    let mut last: Option<Decision> = None;
    let mut recorded: Vec<u64> = Vec::new();
    for step in &run.steps {
        let changed = Slide::new(
            step.limit.unwrap_or_default(),
            step.window.unwrap_or_default(),
        );
        if step.limit.is_some() {
            p.limit = changed.limit;
        }
        if step.window.is_some() {
            p.window = changed.window;
        }
        // Marks: what the last decision named, and when the last few
        // recorded requests leave the window.
        let mut marks = marks_of(last.as_ref());
        marks.extend(recorded.iter().rev().take(4).map(|&at| at + p.window));
        now = move_clock(now, step.time, (p.window / 16).max(1), p.window, &marks);
        let remaining = last.map_or(p.limit, |d| d.remaining);
        let quantity = quantity(step.quantity, p.limit, remaining);
        let (decision, update) = log.decide(Nanos::new(now), &p.params(), quantity);
        assert!(decision.remaining <= decision.limit);
        assert_eq!(update.is_some(), !decision.limited && quantity > 0);
        check(&Call {
            log: &log,
            now,
            p,
            quantity,
            decision,
        });
        if let Some(update) = update {
            log.apply(update);
            // An allowed request resets when its units leave.
            recorded.push(decision.reset_at.get() - p.window);
        }
        last = Some(decision);
    }
    log
}

/// The admitted requests, oldest first, and the answers docs/DESIGN.md#slide gives from them.
#[derive(Default)]
struct Log {
    /// (instant rounded up to the µs, units)
    records: Vec<(u64, u64)>,
    /// The instant of the last admitted request.
    clock: u64,
}

impl Log {
    /// `used(t)`: the units recorded in `(t - window, t]`, each at its
    /// kept instant or the clock, whichever is earlier (never after `t`:
    /// the log is not read before its clock).
    fn used(&self, t: u64, window: u64) -> u64 {
        self.records
            .iter()
            .filter(|&&(at, _)| t < at.min(self.clock) + window)
            .map(|&(_, units)| units)
            .sum()
    }

    /// The decision, and the instant to record the units at when it
    /// takes them.
    fn decide(&self, now: u64, p: &Slide, quantity: u64) -> (Decision, Option<u64>) {
        let (limit, window) = (p.limit, p.window);
        let newest = self.records.last().map(|&(at, _)| at.min(self.clock));
        // The module's rule: never read or write before the clock.
        let read = |t: u64| newest.map_or(t, |_| t.max(self.clock));
        let at = read(now);
        let used = self.used(at, window);
        // reset_after = newest entry + window - now, or 0 when nothing is
        // counted.
        let reset_at = match newest {
            Some(n) if used > 0 => n + window,
            _ => now,
        };
        let remaining = limit.saturating_sub(used);
        let mut decision = Decision {
            limited: true,
            limit,
            remaining,
            retry: Retry::Never,
            reset_at: Nanos::new(reset_at),
        };
        // quantity > limit: never (retry_after -1).
        if quantity > limit {
            return (decision, None);
        }
        // allowed = used(now) + quantity <= limit.
        if used + quantity <= limit {
            decision.limited = false;
            decision.remaining = limit - used - quantity;
            decision.retry = Retry::NotLimited;
            if quantity > 0 {
                decision.reset_at = Nanos::new(at + window);
                return (decision, Some(at));
            }
            return (decision, None);
        }
        // retry_after = smallest d with used(now + d) + quantity <= limit:
        // the instants where used drops are those where a record leaves.
        let retry = self
            .records
            .iter()
            .map(|&(at, _)| at.min(self.clock) + window)
            .filter(|&leave| self.used(read(leave), window) + quantity <= limit)
            .min()
            .expect("a quantity within the limit fits once everything left");
        decision.retry = Retry::At(Nanos::new(retry));
        (decision, None)
    }

    /// Records `quantity` units at `at` (kept rounded up to the µs, the
    /// clock moving to `at`), forgetting first what left the window at
    /// `at` (the module's rule).
    fn record(&mut self, at: u64, window: u64, quantity: u64) {
        let clock = self.clock;
        self.records.retain(|&(t, _)| t.min(clock) + window > at);
        self.records.push((at.div_ceil(US) * US, quantity));
        self.clock = at;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// All five fields equal the model's, in both units, with the limit
    /// and the window changing and the clock going back; and the log at
    /// the end encodes and decodes to itself.
    #[test]
    fn matches_the_model(run in runs(true)) {
        let mut model = Log::default();
        let log = replay(&run, |call| {
            let (expected, record) = model.decide(call.now, &call.p, call.quantity);
            let what = format!("at {}, {:?}, quantity {}", call.now, call.p, call.quantity);
            assert_eq!(call.decision, expected, "{what}");
            for unit in [TimeUnit::Millis, TimeUnit::Seconds] {
                let now = Nanos::new(call.now);
                assert_eq!(call.decision.reply(now, unit), spec_reply(&expected, call.now, unit), "{unit:?}, {what}");
            }
            if let Some(at) = record {
                model.record(at, call.p.window, call.quantity);
            }
        });
        let held: u64 = model.records.iter().map(|&(_, units)| units).sum();
        prop_assert_eq!(log.len() as u64, held);
        prop_assert_eq!(SlideState::decode(&log.encode()), Ok(log));
    }

    /// The promise of docs/DESIGN.md#reply: the same request is allowed at the instant
    /// `Retry::At` names and limited a nanosecond earlier; waiting the
    /// rounded-up reply, in milliseconds or seconds, is enough.
    #[test]
    fn waiting_retry_after_is_enough(run in runs(true)) {
        replay(&run, |call| {
            let p = call.p.params();
            assert_retry_promise(call.log, &p, call.now, call.quantity, call.p.limit, &call.decision);
        });
    }

    /// Never more than `limit` units in any window `(t - window, t]` of
    /// the instants they were taken at (the call's, or the log's clock
    /// when the clock went back), exactly: the window fixed per run, the
    /// limit changing (the limit in force at the window's last admission
    /// bounds it).
    #[test]
    fn never_more_than_limit_in_any_window(run in runs(false)) {
        let mut admitted: Vec<(u64, u64, u64)> = Vec::new(); // (at, units, limit)
        let mut window = 0;
        replay(&run, |call| {
            window = call.p.window;
            if call.quantity > 0 && !call.decision.limited {
                let at = call.decision.reset_at.get() - window;
                let newest = admitted.last().map_or(0, |&(t, _, _)| t);
                assert_eq!(at, call.now.max(newest), "taken at the call, or the log's clock");
                admitted.push((at, call.quantity, call.p.limit));
            }
        });
        for (i, &(t, _, limit)) in admitted.iter().enumerate() {
            let units: u64 = admitted[..=i]
                .iter()
                .filter(|&&(at, _, _)| at + window > t)
                .map(|&(_, units, _)| units)
                .sum();
            prop_assert!(units <= limit, "{} units in the window ending at {}", units, t);
        }
    }
}

/// A run for `exact_to_the_microsecond`: one limit and one window, the
/// clock only moving forward.
fn forward_runs() -> impl Strategy<Value = (Run, Choice, Choice)> {
    (runs(false), choice(), choice())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The promise of rounding to the microsecond, against the exact
    /// log: the same units (those the code admitted) at the exact instants
    /// they were taken at. With the clock moving forward and fixed
    /// parameters, `used` is at least the exact one and at most what the
    /// exact log counts when every unit leaves 1 µs later; `retry_after`
    /// and `reset_after` name the exact instant or one less than 1 µs
    /// later, never an earlier one; and units taken now leave a window
    /// later, rounded up to the µs.
    #[test]
    fn exact_to_the_microsecond((run, limit, window) in forward_runs()) {
        let p = Slide::new(limit, window);
        let params = p.params();
        let w = u128::from(p.window);
        let mut log = SlideState::default();
        // The units taken: (exact instant, units).
        let mut taken: Vec<(u64, u64)> = Vec::new();
        let mut now = run.start;
        let mut last: Option<Decision> = None;
        for step in &run.steps {
            let mut marks = marks_of(last.as_ref());
            for &(at, _) in taken.iter().rev().take(4) {
                marks.push(at.saturating_add(p.window));
                marks.push(at.saturating_add(p.window).div_ceil(US) * US);
            }
            now = move_clock(now, step.time, (p.window / 16).max(1), p.window, &marks).max(now);
            let remaining = last.map_or(p.limit, |d| d.remaining);
            let quantity = quantity(step.quantity, p.limit, remaining);

            // Units counted at `t` if each leaves `late` ns after its
            // exact moment.
            let counted = |t: u64, late: u128| -> u64 {
                taken
                    .iter()
                    .filter(|&&(at, _)| u128::from(t) < u128::from(at) + w + late)
                    .map(|&(_, units)| units)
                    .sum()
            };
            let (peek, _) = log.decide(Nanos::new(now), &params, 0);
            let used = p.limit - peek.remaining;
            prop_assert!(counted(now, 0) <= used && used <= counted(now, 999), "used {} at {}", used, now);
            // reset_after: the newest unit's exact leave time, or up to
            // 999 ns later.
            let exact_reset = taken
                .last()
                .map_or(u128::from(now), |&(at, _)| u128::from(now).max(u128::from(at) + w));
            let reset = u128::from(peek.reset_at.get());
            prop_assert!(exact_reset <= reset && reset < exact_reset + 1_000, "reset {} vs exact {}", reset, exact_reset);

            let (decision, update) = log.decide(Nanos::new(now), &params, quantity);
            if let Retry::At(at) = decision.retry {
                // The exact log fits the request now, or when a unit
                // leaves; the code at that instant or up to 999 ns later.
                let fits = |t: u64| counted(t, 0) + quantity <= p.limit;
                let exact = if fits(now) {
                    u128::from(now)
                } else {
                    taken
                        .iter()
                        .map(|&(at, _)| u128::from(at) + w)
                        .filter(|&leave| leave > u128::from(now))
                        .filter(|&leave| u64::try_from(leave).is_ok_and(fits))
                        .min()
                        .expect("the exact log fits eventually")
                };
                let at = u128::from(at.get());
                prop_assert!(exact <= at && at < exact + 1_000, "retry at {} vs exact {}", at, exact);
            }
            if let Some(update) = update {
                log.apply(update);
                let kept = u128::from(decision.reset_at.get()) - w;
                prop_assert!(u128::from(now) <= kept && kept < u128::from(now) + 1_000);
                taken.push((now, quantity));
            }
            last = Some(decision);
        }
    }
}
