//! RL.LEASE against a naive model (`Model`), and the `retry_after` promise.

use super::*;

/// The leases of docs/DESIGN.md#lease, by brute force: id -> (weight, expiry).
#[derive(Clone, Debug, Default)]
struct Model {
    leases: BTreeMap<Vec<u8>, (u64, u64)>,
}

impl Model {
    /// The weight held at `t` by the leases but `except`'s.
    fn held(&self, t: u64, except: &[u8]) -> u64 {
        self.leases
            .iter()
            .filter(|&(id, &(_, expiry))| t < expiry && id.as_slice() != except)
            .map(|(_, &(weight, _))| weight)
            .sum()
    }

    /// The latest expiry after `now` of the leases but `except`'s, or `now`.
    fn latest(&self, now: u64, except: &[u8]) -> u64 {
        self.leases
            .iter()
            .filter(|&(id, _)| id.as_slice() != except)
            .map(|(_, &(_, expiry))| expiry)
            .fold(now, u64::max)
    }

    /// The decision, and the expiry of the lease to record when granted.
    fn decide(&self, now: u64, p: &LeaseParams, id: &[u8], q: u64) -> (Decision, Option<u64>) {
        let limit = p.limit;
        let held = self.held(now, b"");
        let others = self.held(now, id);
        let mut d = Decision {
            limited: true,
            limit,
            remaining: limit.saturating_sub(held),
            retry: Retry::Never,
            reset_at: Nanos::new(self.latest(now, b"")),
        };
        if q > limit {
            return (d, None);
        }
        if others + q > limit {
            // The first expiry of another lease after which it fits.
            let at = self
                .leases
                .iter()
                .filter(|&(other, &(_, expiry))| other.as_slice() != id && expiry > now)
                .map(|(_, &(_, expiry))| expiry)
                .filter(|&t| self.held(t, id) + q <= limit)
                .min()
                .expect("fits once every other lease expired");
            d.retry = Retry::At(Nanos::new(at));
            return (d, None);
        }
        d.limited = false;
        d.retry = Retry::NotLimited;
        if q == 0 {
            return (d, None);
        }
        let expiry = now + p.ttl.get();
        d.remaining = limit - others - q;
        d.reset_at = Nanos::new(expiry.max(self.latest(now, id)));
        let recorded = (1..=MAX_ID_LEN).contains(&id.len());
        (d, recorded.then_some(expiry))
    }

    fn forget_expired(&mut self, now: u64) {
        self.leases.retain(|_, &mut (_, expiry)| expiry > now);
    }

    fn record(&mut self, now: u64, id: &[u8], q: u64, expiry: u64) {
        self.forget_expired(now);
        self.leases.insert(id.to_vec(), (q, expiry));
    }

    /// A release of an unexpired lease drops the expired ones with it; a
    /// release that releases nothing changes nothing.
    fn release(&mut self, now: u64, id: &[u8]) -> bool {
        if self.leases.get(id).is_none_or(|&(_, expiry)| expiry <= now) {
            return false;
        }
        self.forget_expired(now);
        self.leases.remove(id).is_some()
    }

    /// The leases in the canonical order: by expiry, then id.
    fn sorted(&self) -> Vec<(Vec<u8>, u64, u64)> {
        let mut all: Vec<_> = self
            .leases
            .iter()
            .map(|(id, &(weight, expiry))| (id.clone(), weight, expiry))
            .collect();
        all.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
        all
    }

    /// RL.INSPECT's fields.
    fn inspect(&self, now: u64) -> Vec<(&'static str, Detail)> {
        let unexpired: Vec<_> = self.sorted().into_iter().filter(|l| l.2 > now).collect();
        let holders = unexpired
            .iter()
            .take(MAX_HOLDERS)
            .map(|(id, weight, expiry)| {
                Detail::List(vec![
                    Detail::Bytes(id.clone()),
                    Detail::Integer(i64::try_from(*weight).expect("small")),
                    Detail::Integer(i64::try_from((expiry - now).div_ceil(MS)).expect("small")),
                ])
            })
            .collect();
        vec![
            (
                "held",
                Detail::Integer(i64::try_from(self.held(now, b"")).expect("small")),
            ),
            ("leases", Detail::Integer(unexpired.len() as i64)),
            ("holders", Detail::List(holders)),
        ]
    }
}

/// The ids of the runs: mostly five short ones (so that leases renew
/// and contend), now and then ids of 16, 127 and 128 bytes, and with kind
/// 0 and 1 an empty one and one over 128 bytes (decided, never recorded).
/// With `many`, one of 400.
fn id_of((kind, seed): Choice, many: bool) -> Vec<u8> {
    let short: [&[u8]; 5] = [b"a", b"b", b"c", b"ab", b"\0"];
    match kind % 16 {
        0 => Vec::new(),
        1 => vec![1; MAX_ID_LEN + 1],
        _ if many => format!("id-{}", seed % 400).into_bytes(),
        2 => b"job-000000000001".to_vec(),
        3 => vec![0xff; MAX_ID_LEN],
        4 => vec![7; MAX_ID_LEN - 1],
        _ => short[(seed % short.len() as u64) as usize].to_vec(),
    }
}

/// A limit: half the time 1 to 8 (leases contend), else anywhere up to
/// `MAX_LIMIT`.
fn limit_of(c: Choice) -> u64 {
    if c.0.is_multiple_of(2) {
        1 + c.1 % 8
    } else {
        1 + pick(MAX_LIMIT - 1, c)
    }
}

/// A ttl from 1 ns to `MAX_DURATION`, often whole milliseconds or seconds,
/// a third of the time at most a minute.
fn ttl_of(c: Choice) -> u64 {
    let max = MAX_DURATION.get();
    let raw = match c.0 % 3 {
        0 => 1 + pick(60 * S - 1, c),
        _ => 1 + pick(max - 1, c),
    };
    match c.0 / 64 {
        1 => raw.next_multiple_of(MS).min(max),
        2 => raw.next_multiple_of(S).min(max),
        _ => raw,
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// RL.LEASE: decide, and record when granted.
    Lease,
    /// RL.RELEASE.
    Release,
    /// Decide only (RL.PEEK, or RL.ALLOW refused by another limit).
    Peek,
}

#[derive(Clone, Debug)]
struct Step {
    time: Choice,
    op: u8,
    id: Choice,
    quantity: Choice,
    limit: Option<Choice>,
    ttl: Option<Choice>,
}

#[derive(Clone, Debug)]
struct Run {
    start: u64,
    limit: Choice,
    ttl: Choice,
    steps: Vec<Step>,
}

/// Runs of `steps` calls; with `changes`, a fifth of the calls bring a
/// new limit and a fifth a new ttl.
fn runs(changes: bool, steps: std::ops::Range<usize>) -> impl Strategy<Value = Run> {
    let step = (
        choice(),
        any::<u8>(),
        choice(),
        choice(),
        prop::option::weighted(0.2, choice()),
        prop::option::weighted(0.2, choice()),
    )
        .prop_map(move |(time, op, id, quantity, limit, ttl)| Step {
            time,
            op,
            id,
            quantity,
            limit: limit.filter(|_| changes),
            ttl: ttl.filter(|_| changes),
        });
    (
        start_instant(),
        choice(),
        choice(),
        prop::collection::vec(step, steps),
    )
        .prop_map(|(start, limit, ttl, steps)| Run {
            start,
            limit,
            ttl,
            steps,
        })
}

/// One decision as the code made it.
struct Call<'a> {
    /// The state before the call.
    state: &'a LeaseState,
    now: u64,
    p: LeaseParams,
    id: &'a [u8],
    quantity: u64,
    decision: Decision,
}

/// Replays a run on one key and on the model, comparing them after every
/// call (decisions, releases, the leases kept, RL.INSPECT, emptiness),
/// and calls `check` on every decision; returns the state at the end.
/// With `many`, ids come from a pool of 400 and most calls are grants.
fn replay(run: &Run, many: bool, mut check: impl FnMut(&Call)) -> LeaseState {
    let mut state = LeaseState::default();
    let mut model = Model::default();
    let mut now = run.start;
    let mut last: Option<Decision> = None;
    // Many leases need a large limit, and a ttl of at least 1 ms.
    let limit_of = |c: Choice| {
        if many {
            limit_of(c).max(400)
        } else {
            limit_of(c)
        }
    };
    let ttl_of = |c: Choice| if many { ttl_of(c).max(MS) } else { ttl_of(c) };
    let (mut limit, mut ttl) = (limit_of(run.limit), ttl_of(run.ttl));
    for step in &run.steps {
        limit = step.limit.map_or(limit, limit_of);
        ttl = step.ttl.map_or(ttl, ttl_of);
        let p = params(limit, ttl);
        let mut marks = marks_of(last.as_ref());
        marks.extend(model.leases.values().take(4).map(|&(_, expiry)| expiry));
        // Half the steps move the clock a little forward, so that leases
        // live long enough to be renewed; the others as `move_clock`
        // likes, back included. With `many`, leases pile up: the clock
        // moves by less than a microsecond, forward or (one time in
        // eight) back, or (one time in sixteen) by up to 3/16 of the ttl.
        let (kind, seed) = step.time;
        let time = match (many, kind % 16) {
            (true, 0..=12) => (1, seed),
            (true, 13) => (2, seed),
            (true, _) => (10, seed),
            (false, 0..=3) => (2, seed),
            (false, _) => step.time,
        };
        now = move_clock(now, time, (ttl / 16).max(1), ttl, &marks);
        let op = match (many, step.op % 8) {
            (true, 0..=5) | (false, 0..=4) => Op::Lease,
            (true, 6) | (false, 5) => Op::Release,
            _ => Op::Peek,
        };
        let id = id_of(step.id, many);
        let what = format!("{op:?} {id:?} at {now}, {p:?}");
        if let Op::Release = op {
            let released = state.release(Nanos::new(now), &id);
            assert_eq!(released, model.release(now, &id), "{what}");
        } else {
            let remaining = last.map_or(limit, |d| d.remaining);
            // A peek, a few units, or any quantity (`quantity`'s edges;
            // not with `many`: a lease of the whole limit would keep the
            // others out).
            let (kind, seed) = step.quantity;
            let quantity = match (many, kind % 4) {
                (_, 0) => 0,
                (true, _) | (false, 1 | 2) => 1 + seed % limit.min(3),
                (false, _) => quantity(step.quantity, limit, remaining),
            };
            let (decision, update) = state.decide(Nanos::new(now), &p, &id, quantity);
            let (expected, record) = model.decide(now, &p, &id, quantity);
            let what = format!("{what}, quantity {quantity}");
            assert_eq!(decision, expected, "{what}");
            for unit in [TimeUnit::Millis, TimeUnit::Seconds] {
                let reply = decision.reply(Nanos::new(now), unit);
                assert_eq!(reply, spec_reply(&expected, now, unit), "{unit:?}, {what}");
            }
            assert_eq!(update.is_some(), record.is_some(), "{what}");
            check(&Call {
                state: &state,
                now,
                p,
                id: &id,
                quantity,
                decision,
            });
            if let (Op::Lease, Some(update), Some(expiry)) = (op, update, record) {
                state.apply(update);
                model.record(now, &id, quantity, expiry);
            }
            last = Some(decision);
        }
        state.check();
        assert_eq!(leases_of(&state), model.sorted(), "{what}");
        assert_eq!(state.inspect(Nanos::new(now)), model.inspect(now), "{what}");
        let empty = model.held(now, b"") == 0;
        assert_eq!(state.is_empty_at(Nanos::new(now)), empty, "{what}");
    }
    state
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every decision equals the model's, in both units; releases, the
    /// leases kept and RL.INSPECT too, with the limit and the ttl
    /// changing and the clock going back; the state at the end encodes
    /// and decodes to itself.
    #[test]
    fn matches_the_model(run in runs(true, 1..48)) {
        let state = replay(&run, false, |_| {});
        prop_assert_eq!(LeaseState::decode(&state.encode()), Ok(state));
    }

    /// The promise of docs/DESIGN.md#reply: the same request is allowed at the instant
    /// `Retry::At` names and limited a nanosecond earlier; waiting the
    /// rounded-up reply, in milliseconds or seconds, is enough;
    /// `Retry::Never` only for a quantity over the limit.
    #[test]
    fn waiting_retry_after_is_enough(run in runs(true, 1..48)) {
        replay(&run, false, |call| {
            let decide = |at: u64| call.state.decide(Nanos::new(at), &call.p, call.id, call.quantity).0;
            match call.decision.retry {
                Retry::At(at) => {
                    let at = at.get();
                    assert!(at > call.now);
                    assert!(!decide(at).limited, "still limited at the promised {at}");
                    assert!(decide(at - 1).limited, "already allowed at {}", at - 1);
                    for unit in [TimeUnit::Millis, TimeUnit::Seconds] {
                        let wait = call.decision.reply(Nanos::new(call.now), unit)[3];
                        let then = call.now + u64::try_from(wait).unwrap() * unit.nanos();
                        assert!(!decide(then).limited, "limited after waiting {wait} {unit:?}");
                    }
                }
                Retry::Never => assert!(call.quantity > call.p.limit),
                Retry::NotLimited => assert!(!call.decision.limited),
                Retry::Turn(_) => panic!("decide answered a turn"),
            }
        });
    }

    /// With one limit, the clock going back or not, the key never holds
    /// more than the limit: every lease kept counts at any instant before
    /// the last grant's (none expired there), so what they weigh together
    /// is the most ever held at once.
    #[test]
    fn never_more_than_the_limit(run in runs(false, 1..48)) {
        let limit = limit_of(run.limit);
        let state = replay(&run, false, |call| {
            let kept: u64 = call.state.iter().map(|(_, weight, _)| weight).sum();
            assert!(kept <= limit, "{kept} held under a limit of {limit}");
        });
        let kept: u64 = state.iter().map(|(_, weight, _)| weight).sum();
        prop_assert!(kept <= limit);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Hundreds of leases (ids from a pool of 400, mostly grants), so the
    /// tree grows deep and records move: still the model's answers.
    #[test]
    fn many_leases_match_the_model(run in runs(true, 200..400)) {
        let state = replay(&run, true, |_| {});
        prop_assert_eq!(LeaseState::decode(&state.encode()), Ok(state));
    }
}

#[test]
fn the_last_lease_renewed_in_place_keeps_the_order() {
    // The last lease in order renewed with its weight stays in the tree
    // where it is (`LeaseState::apply`'s shortcut); with another weight, an
    // earlier expiry (a clock gone back) or a lease after it, it moves.
    // Each step is checked against the model of the same calls.
    let p = params(10, 10 * S);
    let mut state = LeaseState::default();
    let mut model = Model::default();
    let calls: [(u64, &[u8], u64); 12] = [
        (0, b"a", 1),
        (1, b"a", 1), // alone: first and last, renewed in place
        (2, b"b", 2),
        (3, b"b", 2), // the last, same weight: in place
        (4, b"b", 3), // another weight: moves
        (5, b"a", 1), // the first: moves to the end
        (5, b"a", 1), // the same instant: in place, expiry unchanged
        (4, b"a", 1), // a clock gone back: an earlier expiry, moves
        (6, b"c", 1),
        (7, b"c", 1),
        (8, b"a", 1),
        (9, b"a", 1),
    ];
    for (at, id, q) in calls {
        let now = NOW + at * S;
        let (expected, expiry) = model.decide(now, &p, id, q);
        let got = take(&mut state, now, &p, id, q);
        assert_eq!(got, expected, "at {at} s, {id:?}");
        if let Some(expiry) = expiry {
            model.record(now, id, q, expiry);
        }
        state.check();
        assert_eq!(leases_of(&state), model.sorted(), "at {at} s, {id:?}");
    }
}
