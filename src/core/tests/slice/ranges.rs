//! RL.SLICE across its documented ranges: up to 86,400 slices (the
//! configured maximum) and now and then the hard maximum of 10^6, windows
//! up to ten years, limits up to 2^32 - 1, quantities up to 10^12, the
//! clock going backwards, and the limit, the window and the slice count
//! changing between calls.
//!
//! The model, `Records`, keeps every admitted request as a record of its
//! instant, its slice index and its units, and computes each answer from
//! the definitions of docs/DESIGN.md#slice: `idx(t) = floor(t × slices / window)`, `start(j) =
//! ceil(j × window / slices)`, a unit recorded in slice `j` is counted
//! until slice `j + slices + 1` begins. It does not use the code's ring,
//! running sums or rebucketing. The design's rules for the two harder cases (docs/DESIGN.md#slice, #parameter-changes), as
//! the model reads them:
//!
//! - the clock going backwards: "the state never counts from a slice older
//!   than its head", so the current slice is `max(idx(now), head)`, where
//!   the head is the newest slice holding a unit, and new units are
//!   recorded there;
//! - a changed window or slice count: "moves each old counter to the new
//!   slice that contains the old slice's last instant, and counters that
//!   would land before the new counted range into its oldest slice". The
//!   counters are those of the slices the state holds (`head - slices ..=
//!   head`: older ones can never be counted again and are forgotten), and
//!   the new counted range is the one ending at the moved head. Until an
//!   allowed request stores it, the moved state is recomputed from the
//!   stored one at every call (a limited request or a peek changes
//!   nothing).

use proptest::prelude::*;

use crate::args::Bounds;
use crate::core::slice::{SliceParams, SliceState, MAX_LIMIT, MAX_SLICES};
use crate::core::tests::{
    assert_retry_promise, choice, marks_of, move_clock, pick, quantity, spec_reply, start_instant,
    Choice,
};
use crate::core::{Decision, Kind, Nanos, Retry, TimeUnit, MAX_DURATION};

/// The most slices a client may ask for by default (`max-slices`).
const CONFIGURED: u64 = Bounds::DEFAULT.max_slices;

/// One call's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slice {
    limit: u64,
    /// ns
    window: u64,
    slices: u64,
}

/// `idx(t) = floor(t × slices / window)`.
fn idx(t: u64, window: u64, slices: u64) -> u64 {
    let j = u128::from(t) * u128::from(slices) / u128::from(window);
    u64::try_from(j).expect("an index is at most its instant")
}

/// `start(j) = ceil(j × window / slices)`, the first instant of slice `j`.
fn start(j: u64, window: u64, slices: u64) -> u64 {
    let t = (u128::from(j) * u128::from(window)).div_ceil(u128::from(slices));
    u64::try_from(t).expect("in range")
}

impl Slice {
    /// A limit anywhere up to 2^32 - 1; up to the configured 86,400 slices
    /// (one time in 16 the hard maximum); a window from `slices` ns to ten
    /// years, often a whole multiple of the slice count.
    fn limit(c: Choice) -> u64 {
        1 + pick(MAX_LIMIT - 1, c)
    }

    fn geometry(slices: Choice, window: Choice) -> (u64, u64) {
        let slices = if slices.0 % 16 == 15 {
            MAX_SLICES
        } else {
            1 + pick(CONFIGURED - 1, slices)
        };
        let max = MAX_DURATION.get();
        let window = match window.0 / 64 {
            // Slices of whole nanoseconds: the common case.
            1 | 2 => slices * (1 + pick(max / slices - 1, window)),
            _ => slices + pick(max - slices, window),
        };
        (window, slices)
    }

    fn params(&self) -> SliceParams {
        SliceParams::new(self.limit, Nanos::new(self.window), self.slices)
            .expect("valid by construction")
    }

    fn idx(&self, t: u64) -> u64 {
        idx(t, self.window, self.slices)
    }

    fn start(&self, j: u64) -> u64 {
        start(j, self.window, self.slices)
    }
}

/// What a call changes: the clock, the quantity, and sometimes the limit
/// or the geometry (slices, window).
#[derive(Clone, Debug)]
struct Step {
    time: Choice,
    quantity: Choice,
    limit: Option<Choice>,
    geometry: Option<(Choice, Choice)>,
}

#[derive(Clone, Debug)]
struct Run {
    start: u64,
    first: (Choice, Choice, Choice),
    steps: Vec<Step>,
}

/// Runs of up to 47 calls; a fifth bring a new limit and, with
/// `geometry_changes`, a fifth a new window and slice count.
fn runs(geometry_changes: bool) -> impl Strategy<Value = Run> {
    let start = start_instant();
    let step = (
        choice(),
        choice(),
        prop::option::weighted(0.2, choice()),
        prop::option::weighted(0.2, (choice(), choice())),
    )
        .prop_map(move |(time, quantity, limit, geometry)| Step {
            time,
            quantity,
            limit,
            geometry: geometry.filter(|_| geometry_changes),
        });
    (
        start,
        (choice(), choice(), choice()),
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
    /// The state before the call.
    state: &'a SliceState,
    now: u64,
    p: Slice,
    quantity: u64,
    decision: Decision,
}

/// Replays a run on one key, calling `check` on every call before its
/// update is recorded; returns the state at the end.
fn replay(run: &Run, mut check: impl FnMut(&Call)) -> SliceState {
    let (window, slices) = Slice::geometry(run.first.1, run.first.2);
    let mut p = Slice {
        limit: Slice::limit(run.first.0),
        window,
        slices,
    };
    let mut state = SliceState::new();
    let mut now = run.start;
    let mut last: Option<Decision> = None;
    for step in &run.steps {
        if let Some(limit) = step.limit {
            p.limit = Slice::limit(limit);
        }
        if let Some((slices, window)) = step.geometry {
            (p.window, p.slices) = Slice::geometry(slices, window);
        }
        // Marks: what the last decision named, and the next slice
        // boundaries.
        let mut marks = marks_of(last.as_ref());
        let j = p.idx(now);
        marks.extend([p.start(j + 1), p.start(j + p.slices + 1)]);
        let slice = (p.window / p.slices).max(1);
        now = move_clock(now, step.time, slice, p.window, &marks);
        let remaining = last.map_or(p.limit, |d| d.remaining);
        let quantity = quantity(step.quantity, p.limit, remaining);
        let (decision, update) = state.decide(Nanos::new(now), &p.params(), quantity);
        assert!(decision.remaining <= decision.limit);
        assert_eq!(update.is_some(), !decision.limited && quantity > 0);
        check(&Call {
            state: &state,
            now,
            p,
            quantity,
            decision,
        });
        if let Some(update) = update {
            state.apply(update);
        }
        last = Some(decision);
    }
    state
}

/// One admitted request: its instant, the slice its units are counted in
/// (in the geometry of the state), its units.
#[derive(Clone, Copy, Debug)]
struct Record {
    at: u64,
    slice: u64,
    units: u64,
}

/// The admitted requests, and the geometry their slices are in.
#[derive(Clone, Debug, Default)]
struct Records {
    /// `(window, slices)`; `None` while nothing is recorded.
    geometry: Option<(u64, u64)>,
    records: Vec<Record>,
}

impl Records {
    /// The newest slice holding a unit.
    fn head(&self) -> Option<u64> {
        self.records.iter().map(|r| r.slice).max()
    }

    /// The records the state holds, in the geometry of `p`: moved there if
    /// it differs from the stored one.
    fn view(&self, p: &Slice) -> Records {
        let (Some((window, slices)), Some(head)) = (self.geometry, self.head()) else {
            return Records::default();
        };
        // Held: the slices head - slices ..= head.
        let held = self
            .records
            .iter()
            .filter(|r| r.slice + slices >= head)
            .copied();
        if (window, slices) == (p.window, p.slices) {
            for r in held.clone() {
                // Never counted for less than the rule of docs/DESIGN.md#parameter-changes gives a unit
                // recorded at its instant: no unit is forgotten early.
                assert!(r.slice >= p.idx(r.at), "{r:?} in {p:?}");
            }
            return Records {
                geometry: self.geometry,
                records: held.collect(),
            };
        }
        // The new slice holding the old slice's last instant.
        let moved = |j: u64| p.idx(start(j + 1, window, slices) - 1);
        let oldest = moved(head).saturating_sub(p.slices);
        let records = held
            .map(|r| Record {
                slice: moved(r.slice).max(oldest),
                ..r
            })
            .collect();
        Records {
            geometry: Some((p.window, p.slices)),
            records,
        }
    }

    /// The decision, and the records to store when it takes units.
    fn decide(&self, now: u64, p: &Slice, quantity: u64) -> (Decision, Option<Records>) {
        let view = self.view(p);
        let head = view.head();
        let limit = p.limit;
        // The current slice: never older than the head.
        let current = head.map_or(p.idx(now), |h| h.max(p.idx(now)));
        // Units counted at slice `c`: those of slices c - slices ..= c.
        let used_at = |c: u64| -> u64 {
            view.records
                .iter()
                .filter(|r| r.slice + p.slices >= c)
                .map(|r| r.units)
                .sum()
        };
        let used = used_at(current);
        // reset_after: until the newest non-empty slice stops being
        // counted, at start(j + slices + 1); 0 when nothing is counted.
        let newest = view
            .records
            .iter()
            .filter(|r| r.slice + p.slices >= current)
            .map(|r| r.slice)
            .max();
        let reset_at = newest.map_or(now, |j| p.start(j + p.slices + 1));
        let mut decision = Decision {
            limited: true,
            limit,
            remaining: limit.saturating_sub(used),
            retry: Retry::Never,
            reset_at: Nanos::new(reset_at),
        };
        if quantity > limit {
            return (decision, None);
        }
        if used + quantity <= limit {
            decision.limited = false;
            decision.remaining = limit - used - quantity;
            decision.retry = Retry::NotLimited;
            if quantity == 0 {
                return (decision, None);
            }
            decision.reset_at = Nanos::new(p.start(current + p.slices + 1));
            let mut stored = view;
            stored.geometry = Some((p.window, p.slices));
            stored.records.push(Record {
                at: now,
                slice: current,
                units: quantity,
            });
            return (decision, Some(stored));
        }
        // retry_after: the first instant a counted slice stops being
        // counted after which the request fits.
        let retry = view
            .records
            .iter()
            .filter(|r| r.slice + p.slices >= current)
            .map(|r| p.start(r.slice + p.slices + 1))
            .filter(|&t| used_at(head.map_or(p.idx(t), |h| h.max(p.idx(t)))) + quantity <= limit)
            .min()
            .expect("a quantity within the limit fits once everything left");
        decision.retry = Retry::At(Nanos::new(retry));
        (decision, None)
    }
}

proptest! {
    // A geometry change walks and allocates up to a million counters.
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// All five fields equal the model's, in both units, with the limit,
    /// the window and the slice count changing and the clock going back;
    /// and the state encodes and decodes to itself.
    #[test]
    fn matches_the_model(run in runs(true)) {
        let mut model = Records::default();
        let state = replay(&run, |call| {
            let (expected, stored) = model.decide(call.now, &call.p, call.quantity);
            let what = format!("at {}, {:?}, quantity {}", call.now, call.p, call.quantity);
            assert_eq!(call.decision, expected, "{what}");
            for unit in [TimeUnit::Millis, TimeUnit::Seconds] {
                let now = Nanos::new(call.now);
                assert_eq!(call.decision.reply(now, unit), spec_reply(&expected, call.now, unit), "{unit:?}, {what}");
            }
            if let Some(stored) = stored {
                model = stored;
            }
        });
        let decoded = SliceState::decode(&state.encode());
        prop_assert_eq!(decoded.as_ref(), Ok(&state));
    }

    /// The promise of docs/DESIGN.md#reply: the same request is allowed at the instant
    /// `Retry::At` names and limited a nanosecond earlier; waiting the
    /// rounded-up reply, in milliseconds or seconds, is enough.
    #[test]
    fn waiting_retry_after_is_enough(run in runs(true)) {
        replay(&run, |call| {
            let p = call.p.params();
            assert_retry_promise(call.state, &p, call.now, call.quantity, call.p.limit, &call.decision);
        });
    }

    /// Never more than `limit` units in any closed interval of length
    /// `window`, the geometry fixed per run and the limit changing (the
    /// limit at the interval's last admission bounds it). With the clock
    /// going back, a request is recorded in the head slice, so it counts
    /// as admitted at `max(now, the previous admission's instant)`.
    #[test]
    fn never_more_than_limit_in_any_window(run in runs(false)) {
        let mut admitted: Vec<(u64, u64, u64)> = Vec::new(); // (at, units, limit)
        let mut window = 0;
        replay(&run, |call| {
            window = call.p.window;
            if call.quantity > 0 && !call.decision.limited {
                let newest = admitted.last().map_or(0, |&(t, _, _)| t);
                admitted.push((call.now.max(newest), call.quantity, call.p.limit));
            }
        });
        for (i, &(t, _, limit)) in admitted.iter().enumerate() {
            let units: u64 = admitted[..=i]
                .iter()
                .filter(|&&(at, _, _)| at + window >= t)
                .map(|&(_, units, _)| units)
                .sum();
            prop_assert!(units <= limit, "{} units in [{}, {}]", units, t.saturating_sub(window), t);
        }
    }
}
