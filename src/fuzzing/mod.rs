//! The entry points of the fuzz targets (`fuzz/`, cargo-fuzz with
//! libFuzzer) and of their replay in `cargo test`: each takes any bytes,
//! runs one of the module's decoders or readers on them, and then, on what
//! was accepted, what the commands do with it. None of them may panic: a
//! panic is a finding, either in the code it calls or in an invariant
//! checked here. The targets in `fuzz/fuzz_targets/` are one call each, so
//! that the replay (`tests::corpora_and_crashes_replay`, run by `make
//! test` on the stable toolchain) runs the very code the fuzzer ran.
//!
//! | target | reads |
//! |---|---|
//! | `state_throttle` ... `state_quota` | a kind's saved state (RDB, DUMP; a blocked key's with its block trailer), after an operation script |
//! | `rl_state` | RL.STATE's payload: a tag, then a state of the kind it names |
//! | `args_limiter` | `RL.<NAME>`'s arguments, for each kind |
//! | `args_several` | RL.ALLOW's and RL.PEEK's arguments and specs |
//! | `args_keys` | RL.REFUND's; `numkeys`, `AT`, `PXAT`, a lease id; a redis-cell key |
//! | `zone` | RL.QUOTA's time zone: a name or an offset |
//! | `lease_ids` | lease ids of any length and bytes, against a model |

use std::collections::HashMap;

use arrayvec::ArrayVec;

use crate::args::{self, Bounds, MAX_KEYS, MAX_QUANTITY};
use crate::core::lease::{LeaseParams, LeaseState, MAX_ID_LEN};
use crate::core::quota::{period, CalendarUnit, QuotaState, Zone, MAX_ZONE_NAME};
use crate::core::slice::SliceState;
use crate::core::slide::SlideState;
use crate::core::throttle::ThrottleState;
use crate::core::{
    block, Ceiling, Decision, Detail, Kind, Nanos, Param, ParamKind, Retry, TimeUnit, Value,
    MAX_DURATION_SECONDS,
};
use crate::kinds::{Listed, Visit, KINDS};

/// A target: any bytes in, a panic out only on a finding.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/<name>.rs` calls it and as
/// `fuzz/corpus/<name>/` holds its inputs.
pub const TARGETS: &[(&str, Target)] = &[
    ("state_throttle", state_throttle),
    ("state_slide", state_slide),
    ("state_slice", state_slice),
    ("state_lease", state_lease),
    ("state_quota", state_quota),
    ("rl_state", rl_state),
    ("args_limiter", args_limiter),
    ("args_several", args_several),
    ("args_keys", args_keys),
    ("zone", zone),
    ("lease_ids", lease_ids),
];

/// A clock of today (2023-11-14), where the calls of a script start unless
/// the script says otherwise.
const TODAY: u64 = 1_700_000_000_000_000_000;

/// Reads a script: bytes as small numbers, zeros once it is exhausted.
struct Script<'a> {
    bytes: &'a [u8],
}

impl<'a> Script<'a> {
    fn u8(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        let n = self.bytes.len().min(8);
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(head);
        u64::from_le_bytes(buf)
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// A value in `min..=max` that reaches the edges often.
    fn pick(&mut self, min: u64, max: u64) -> u64 {
        let span = max - min;
        match self.u8() % 6 {
            0 => min,
            1 => max,
            2 => min + (u64::from(self.u8()) % 16).min(span),
            3 => max - (u64::from(self.u8()) % 16).min(span),
            4 => {
                // Log-uniform: a random number of low bits.
                let bits = u32::from(self.u8()) % 65;
                let v = if bits == 0 {
                    0
                } else {
                    self.u64() >> (64 - bits)
                };
                min + v.min(span)
            }
            _ => match span.checked_add(1) {
                Some(n) => min + self.u64() % n,
                None => self.u64(),
            },
        }
    }
}

/// Splits a state target's input: its first byte is the length of the
/// operation script that follows; the rest is the payload.
fn script_and_payload(data: &[u8]) -> (Script<'_>, &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return (Script { bytes: &[] }, &[]);
    };
    let n = usize::from(n).min(rest.len());
    let (script, payload) = rest.split_at(n);
    (Script { bytes: script }, payload)
}

/// The words of an argument target's input: separated by `\n` (a word
/// holds any other byte).
fn words(data: &[u8]) -> Vec<&[u8]> {
    if data.is_empty() {
        return Vec::new();
    }
    data.split(|&b| b == b'\n').collect()
}

/// Time zones a script may pick: UTC, offsets and IANA names, among them
/// zones with half-hour daylight saving and with historical changes.
const ZONES: &[&[u8]] = &[
    b"UTC",
    b"+05:30",
    b"-18:00",
    b"+18:00",
    b"Europe/Paris",
    b"America/New_York",
    b"Australia/Lord_Howe",
    b"Pacific/Apia",
    b"Asia/Kathmandu",
    b"America/Sao_Paulo",
];

/// A value of parameter `p`, of the kind a command reads.
fn param_value(p: &Param, s: &mut Script) -> Value<'static> {
    match p.kind {
        // Mostly under the default configuration's ceiling (a slide limit
        // of a million, 86,400 slices), now and then up to the hard one;
        // slices mostly up to 1,000 (each is a counter a state holds and
        // encodes: tens of thousands of them slow every step down).
        ParamKind::Integer { min, max, ceiling } => {
            let max = match (ceiling, s.u8() % 8) {
                (Some(Ceiling::SlideLimit), 1..) => max.min(Bounds::DEFAULT.max_slide_limit),
                (Some(Ceiling::Slices), 1..=5) => max.min(1_000),
                (Some(Ceiling::Slices), 6..) => max.min(Bounds::DEFAULT.max_slices),
                _ => max,
            };
            Value::Number(s.pick(min, max))
        }
        ParamKind::Duration => Value::Number(duration(s, 1)),
        ParamKind::DurationOrZero => Value::Number(duration(s, 0)),
        ParamKind::Word(words) => Value::Number(u64::from(s.u8()) % words.len() as u64),
        ParamKind::Text { .. } => Value::Text(ZONES[usize::from(s.u8()) % ZONES.len()]),
    }
}

/// A duration as a command gives it: whole milliseconds (or seconds) from
/// `min_ms` to the longest, in nanoseconds.
fn duration(s: &mut Script, min_ms: u64) -> u64 {
    let ms = s.pick(min_ms, MAX_DURATION_SECONDS * 1_000);
    match s.u8() % 2 {
        0 => ms * 1_000_000,
        _ => (ms / 1_000).max(min_ms) * 1_000_000_000,
    }
}

/// Parameters of `L` made from a script, as valid as a command's; `None`
/// when the kind refuses the combination.
fn params_of<L: Kind>(s: &mut Script) -> Option<L::Params> {
    let mut values: Vec<Value<'static>> = L::PARAMS.iter().map(|p| param_value(p, s)).collect();
    for option in L::OPTIONS {
        values.push(match s.u8() % 2 {
            0 => Value::Absent,
            _ => param_value(option, s),
        });
    }
    L::params(&values).ok()
}

/// The promises of every decision: `remaining` within the limit, `retry`
/// set exactly when limited and later than `now`, an update only for an
/// allowed request that takes units, and a reply that keeps the same
/// bounds in either unit.
fn check_decision(d: &Decision, update: bool, now: Nanos, quantity: u64) {
    assert!(d.remaining <= d.limit, "remaining above the limit: {d:?}");
    assert_eq!(d.limited, d.retry != Retry::NotLimited, "{d:?}");
    if let Retry::At(at) = d.retry {
        // At `Nanos::MAX` (2554) instants saturate: a retry there is now.
        assert!(
            at > now || at == Nanos::MAX,
            "retry at {at:?}, not after now {now:?}: {d:?}"
        );
    }
    if update {
        assert!(
            !d.limited && quantity > 0,
            "an update for {quantity}: {d:?}"
        );
    }
    for unit in [TimeUnit::Seconds, TimeUnit::Millis] {
        let [limited, limit, remaining, retry, reset] = d.reply(now, unit);
        assert!((0..=1).contains(&limited));
        assert!(0 <= remaining && remaining <= limit, "{d:?}");
        assert!(retry >= -1 && reset >= 0, "{d:?}");
    }
}

/// The state survives persistence: it encodes to bytes that decode to the
/// same state, and encode again to the same bytes; its memory is counted.
/// (Not the empty state, a missing key, which is never stored.) Saved at
/// the epoch, so that a block is kept (its trailer, `block::TRAILER`); a
/// state without one saves exactly `encode`'s bytes.
fn check_round_trip<L: Kind + PartialEq>(state: &L) {
    if *state == L::default() {
        return;
    }
    let bytes = state.persist(Nanos::ZERO);
    if state.blocked_until() == Nanos::ZERO {
        assert_eq!(
            bytes,
            state.encode(),
            "an unblocked state saves another format"
        );
    }
    let back = match L::restore(&bytes) {
        Ok(back) => back,
        Err(e) => panic!(
            "a state's own encoding ({} bytes) is refused: {e:?}",
            bytes.len()
        ),
    };
    assert!(
        back == *state,
        "decodes to another state ({} bytes)",
        bytes.len()
    );
    assert_eq!(
        back.persist(Nanos::ZERO),
        bytes,
        "encodes differently after a round trip"
    );
    assert!(state.mem_usage() > 0);
    assert!(L::decode_tagged(L::TAG, &bytes).ok().as_ref() == Some(state));
}

/// At the instant a decision says the limiter is back to full capacity,
/// when the key expires, the state allows and limits as a missing key
/// does, with as many units remaining: the expiry forgets nothing that
/// still counts. (Its instants may differ: an RL.SLIDE log whose clock is
/// ahead of `now`, after the clock stepped back, records at its own
/// clock. Not at `Nanos::MAX`, in 2554, where instants saturate: a reset
/// beyond it reads as it.)
fn check_reset<L: Kind>(state: &L, params: &L::Params, d: &Decision, now: Nanos, id: &[u8]) {
    let at = d.reset_at.max(now);
    if at == Nanos::MAX {
        return;
    }
    for quantity in [0, 1, d.limit] {
        let kept = block::decide(state, at, params, quantity, id).decision;
        let empty = L::default().decide_as(at, params, quantity, id).0;
        assert_eq!(
            (kept.limited, kept.remaining),
            (empty.limited, empty.remaining),
            "at the reset instant {at:?} (now {now:?}) the state still counts, quantity {quantity}"
        );
    }
}

/// The retry promise: the same request fits at the instant `Retry::At`
/// names, if nothing else is recorded meanwhile (below `Nanos::MAX`,
/// where instants saturate).
fn check_retry<L: Kind>(state: &L, params: &L::Params, d: &Decision, quantity: u64, id: &[u8]) {
    if let Retry::At(at) = d.retry {
        if at == Nanos::MAX {
            return;
        }
        let then = block::decide(state, at, params, quantity, id).decision;
        assert!(
            !then.limited,
            "still limited at the promised {at:?}: {then:?}"
        );
    }
}

/// What the commands do with a state, driven by a script: decide and
/// apply (RL.<NAME>, RL.ALLOW), peek (RL.PEEK), refund (RL.REFUND),
/// charge (RL.CHARGE),
/// release (RL.RELEASE, through `release`), inspect (RL.INSPECT), the
/// expiry (`check_reset`) and persistence (`check_round_trip`) after each
/// change. At most 64 steps; returns the state they leave.
fn exercise<L: Kind + PartialEq>(
    mut state: L,
    s: &mut Script,
    release: impl Fn(&mut L, Nanos, &[u8]) -> bool,
) -> L {
    const IDS: &[&[u8]] = &[b"a", b"b", b"worker-17", b"\x00\xff", b""];
    let mut now = Nanos::new(match s.u8() % 5 {
        0 => TODAY,
        1 => 0,
        2 => TODAY + s.u64() % (1 << 50),
        3 => u64::MAX - s.u64() % (1 << 40),
        _ => s.u64(),
    });
    let mut params = None;
    let mut marks: Vec<Nanos> = Vec::new();
    for _ in 0..64 {
        if s.is_empty() && params.is_some() {
            break;
        }
        if params.is_none() || s.u8().is_multiple_of(8) {
            params = params_of::<L>(s).or(params);
            if params.is_none() {
                continue;
            }
        }
        let Some(p) = params.as_ref() else { continue };
        let id = IDS[usize::from(s.u8()) % IDS.len()];
        match s.u8() % 8 {
            // Decide and apply, as every limiter command does.
            0..=2 => {
                let limit = state.decide(now, p, 0).0.limit;
                let quantity = match s.u8() % 5 {
                    0 => 1,
                    1 => limit,
                    2 => limit.saturating_add(1).min(MAX_QUANTITY),
                    _ => s.pick(0, MAX_QUANTITY.min(limit.saturating_mul(2))),
                };
                let decided = block::decide(&state, now, p, quantity, id);
                let (d, update) = (decided.decision, decided.update);
                check_decision(&d, update.is_some(), now, quantity);
                if let Some(end) = decided.starts {
                    // A refusal that blocks: until `now + BLOCK`, never
                    // before its own retry's instant is in the answer.
                    assert!(d.limited && !decided.blocked && update.is_none());
                    assert!(end > now || end == Nanos::MAX, "{end:?} {now:?}");
                    assert!(d.reset_at >= end && d.remaining == 0, "{d:?}");
                    state.set_blocked_until(end);
                    check_round_trip(&state);
                    // (At `Nanos::MAX`, in 2554, the block ends at once.)
                    if end > now {
                        let again = block::decide(&state, now, p, quantity, id);
                        assert_eq!(
                            again.decision.retry, d.retry,
                            "a block answers as it started"
                        );
                        assert!(again.blocked && again.starts.is_none());
                    }
                }
                check_retry(&state, p, &d, quantity, id);
                if let Some(update) = update {
                    state.apply(update);
                    check_round_trip(&state);
                    let after = block::peek(&state, now, p);
                    assert_eq!(after.reset_at, d.reset_at, "the reset moved");
                }
                check_reset(&state, p, &d, now, id);
                marks.push(d.reset_at);
                if let Retry::At(at) = d.retry {
                    marks.push(at);
                }
            }
            // A peek, and RL.INSPECT.
            3 => {
                let decided = block::decide(&state, now, p, 0, id);
                let (d, update) = (decided.decision, decided.update);
                assert!(decided.starts.is_none(), "a peek started a block");
                check_decision(&d, update.is_some(), now, 0);
                check_reset(&state, p, &d, now, id);
                inspect_details(&block::inspect(&state, now));
                marks.push(d.reset_at);
            }
            // RL.REFUND: never fewer units remain than before.
            4 if L::REFUNDS => {
                let before = block::peek(&state, now, p);
                let blocked = state.blocked_until();
                block::refund(&mut state, now, p, s.pick(0, MAX_QUANTITY));
                assert_eq!(state.blocked_until(), blocked, "a refund lifted a block");
                let after = block::peek(&state, now, p);
                check_decision(&after, false, now, 0);
                assert!(
                    after.remaining >= before.remaining,
                    "{before:?} then {after:?}"
                );
                check_round_trip(&state);
                check_reset(&state, p, &after, now, id);
            }
            // RL.CHARGE: records or, past a counter's maximum, changes
            // nothing; never more units remain than before.
            5 if L::REFUNDS => {
                let before = block::peek(&state, now, p);
                let kept = state.clone();
                match block::charge(&mut state, now, p, s.pick(1, MAX_QUANTITY)) {
                    Ok(()) => {
                        assert_eq!(state.blocked_until(), kept.blocked_until());
                        let after = block::peek(&state, now, p);
                        check_decision(&after, false, now, 0);
                        assert!(
                            after.remaining <= before.remaining,
                            "{before:?} then {after:?}"
                        );
                        check_round_trip(&state);
                        check_reset(&state, p, &after, now, id);
                    }
                    Err(_) => assert!(state == kept, "a refused charge changed the state"),
                }
            }
            // RL.RELEASE: a release that releases nothing changes nothing.
            4 => {
                let before = state.clone();
                if !release(&mut state, now, id) {
                    assert!(state == before, "a release of nothing changed the state");
                }
                check_round_trip(&state);
            }
            // The clock moves: a little, a lot, back, or to an instant a
            // decision named (and just before it).
            _ => {
                let mark = marks
                    .get(usize::from(s.u8()) % marks.len().max(1))
                    .copied()
                    .unwrap_or(now);
                now = match s.u8() % 8 {
                    0 => now.saturating_add(Nanos::new(s.pick(0, 1_000_000_000))),
                    1 => now.saturating_add(Nanos::new(s.u64())),
                    2 => now.saturating_sub(Nanos::new(s.pick(0, 1_000_000_000))),
                    3 => now.saturating_sub(Nanos::new(s.u64())),
                    4 => mark,
                    5 => mark.saturating_sub(Nanos::new(1)),
                    6 => Nanos::new(s.u64()),
                    _ => now,
                };
            }
        }
    }
    state
}

/// Walks RL.INSPECT's details, as the reply writes them.
fn inspect_details(details: &[(&'static str, Detail)]) {
    fn walk(d: &Detail) -> usize {
        match d {
            Detail::Integer(_) | Detail::Bytes(_) => 1,
            Detail::Integers(list) => list.len(),
            Detail::List(list) => list.iter().map(walk).sum(),
        }
    }
    for (field, detail) in details {
        assert!(!field.is_empty());
        walk(detail);
    }
}

/// A kind's saved state: refused, or a state that round-trips and on
/// which the script's operations keep their promises. The script's first
/// byte picks the format among the kind's (`TAG`, then `LEGACY`'s), as
/// RDB load does by encoding version.
fn state<L: Kind + PartialEq>(data: &[u8], release: impl Fn(&mut L, Nanos, &[u8]) -> bool) {
    let (mut s, payload) = script_and_payload(data);
    let formats = 1 + L::LEGACY.len();
    let format = usize::from(s.u8()) % formats;
    let decoded = match format {
        0 => L::restore(payload),
        i => L::decode_legacy(L::LEGACY[i - 1].1, payload),
    };
    let Ok(state) = decoded else { return };
    check_round_trip(&state);
    if format == 0 && !renamed(&state) {
        // One encoding per state: what was accepted is what it encodes to.
        assert_eq!(
            state.persist(Nanos::ZERO),
            payload,
            "accepted a non-canonical encoding"
        );
    }
    exercise(state, &mut s, release);
}

/// Whether a state keeps a name other than the one it was read with: an
/// RL.QUOTA key naming a zone this build's database does not know, which
/// re-encodes as `Etc/Unknown` (`Zone::UNKNOWN`).
fn renamed<L: Kind>(state: &L) -> bool {
    let unknown = Detail::Bytes(b"Etc/Unknown".to_vec());
    state
        .inspect(Nanos::ZERO)
        .iter()
        .any(|(field, value)| *field == "zone" && *value == unknown)
}

fn no_release<L>(_: &mut L, _: Nanos, _: &[u8]) -> bool {
    false
}

fn lease_release(leases: &mut LeaseState, now: Nanos, id: &[u8]) -> bool {
    leases.release(now, id)
}

pub fn state_throttle(data: &[u8]) {
    state::<ThrottleState>(data, no_release);
}

pub fn state_slide(data: &[u8]) {
    state::<SlideState>(data, no_release);
}

pub fn state_slice(data: &[u8]) {
    state::<SliceState>(data, no_release);
}

pub fn state_lease(data: &[u8]) {
    state::<LeaseState>(data, lease_release);
}

pub fn state_quota(data: &[u8]) {
    state::<QuotaState>(data, no_release);
}

/// RL.STATE's payload (`RL.STATE key payload`): the tag names the kind and
/// the format, the rest is decoded as that; what is accepted round-trips
/// and goes through a short script made of its own bytes.
pub fn rl_state(data: &[u8]) {
    let Some((&tag, body)) = data.split_first() else {
        return;
    };
    // The command finds the kind in the table; so does this.
    let row = KINDS.iter().find(|k| k.reads_tag(tag)).map(|k| k.name);
    fn accept<L: Kind + PartialEq>(
        tag: u8,
        body: &[u8],
        row: Option<&str>,
        release: impl Fn(&mut L, Nanos, &[u8]) -> bool,
    ) -> bool {
        if tag != L::TAG && !L::LEGACY.iter().any(|&(_, t)| t == tag) {
            return false;
        }
        assert_eq!(
            row,
            Some(L::NAME),
            "the table reads tag {tag} as another kind"
        );
        if let Ok(state) = L::decode_tagged(tag, body) {
            check_round_trip(&state);
            exercise(state, &mut Script { bytes: body }, release);
        }
        true
    }
    let known = accept::<ThrottleState>(tag, body, row, no_release)
        || accept::<SlideState>(tag, body, row, no_release)
        || accept::<SliceState>(tag, body, row, no_release)
        || accept::<LeaseState>(tag, body, row, lease_release)
        || accept::<QuotaState>(tag, body, row, no_release);
    assert_eq!(known, row.is_some(), "tag {tag}");
}

/// The flags of an argument target's first byte: whether the call came
/// from the master or the AOF (which may send `AT`), and whether the
/// configured bounds are the defaults or the hard ones.
fn flags(first: u8) -> (bool, Bounds) {
    let trusted = first & 0x10 != 0;
    let bounds = match first & 0x20 {
        0 => Bounds::DEFAULT,
        _ => Bounds::HARD,
    };
    (trusted, bounds)
}

/// `RL.<NAME>`'s arguments after the key (the first byte picks the kind
/// and the flags): refused with a message, or a request that a new key
/// decides on and records, keeping every promise.
pub fn args_limiter(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let words = words(rest);
    match first % 5 {
        0 => limiter_args::<ThrottleState>(first, &words),
        1 => limiter_args::<SlideState>(first, &words),
        2 => limiter_args::<SliceState>(first, &words),
        3 => limiter_args::<LeaseState>(first, &words),
        _ => limiter_args::<QuotaState>(first, &words),
    }
}

/// The most words after the key that a limiter command passes to its
/// reader (more is an error before reading).
const MAX_LIMITER_WORDS: usize = 12;

fn limiter_args<L: Kind + PartialEq>(first: u8, words: &[&[u8]]) {
    let (trusted, bounds) = flags(first);
    let words = &words[..words.len().min(MAX_LIMITER_WORDS)];
    let request = match args::single::<L>(words, || trusted, bounds) {
        Ok(request) => request,
        Err(e) => {
            let _ = e.message();
            return;
        }
    };
    assert!(request.quantity <= MAX_QUANTITY);
    assert!(request.at.is_none() || trusted, "AT from a client");
    if L::TAKES_ID {
        assert!((1..=MAX_ID_LEN).contains(&request.id.len()));
    } else {
        assert!(request.id.is_empty());
    }
    let now = request.at.unwrap_or(Nanos::new(TODAY));
    decide_new::<L>(&request.params, now, request.quantity, request.id);
}

/// What a command does on a missing key with parameters it read: decide,
/// record, decide again; every decision keeps its promises.
fn decide_new<L: Kind>(params: &L::Params, now: Nanos, quantity: u64, id: &[u8]) {
    let mut state = L::default();
    let (d, update) = state.decide_as(now, params, quantity, id);
    check_decision(&d, update.is_some(), now, quantity);
    check_retry(&state, params, &d, quantity, id);
    if let Some(update) = update {
        state.apply(update);
        let bytes = state.encode();
        let back = L::decode(&bytes).expect("a new state's encoding decodes");
        assert_eq!(back.encode(), bytes);
    }
    check_reset(&state, params, &d, now, id);
    let (again, update) = state.decide_as(now, params, quantity, id);
    check_decision(&again, update.is_some(), now, quantity);
    inspect_details(&state.inspect(now));
}

/// RL.ALLOW's and RL.PEEK's arguments after the command name (the first
/// byte picks the command and the flags): refused with a message, or one
/// spec per key, each of which decides on a new key.
pub fn args_several(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (trusted, bounds) = flags(first);
    let write = first & 1 == 1;
    let words = words(rest);
    let mut specs = ArrayVec::new();
    let options = match args::several(&words, write, || trusted, bounds, &mut specs) {
        Ok(options) => options,
        Err(e) => {
            let _ = e.message();
            return;
        }
    };
    let keys = args::numkeys(words[0]).expect("numkeys was read");
    assert_eq!(specs.len(), keys);
    assert!(keys <= MAX_KEYS);
    assert!(options.quantity <= MAX_QUANTITY);
    assert!(options.at.is_none() || trusted, "AT from a client");
    assert!(specs.iter().any(|l| !l.shadow), "every spec SHADOW");
    let id = options.id.unwrap_or_default();
    let now = options.at.unwrap_or(Nanos::new(TODAY));
    for limit in &specs {
        assert!(limit.quantity <= MAX_QUANTITY);
        limit.spec.visit(DecideNew {
            now,
            quantity: limit.quantity,
            id,
        });
    }
}

/// `decide_new` for a spec of any kind.
struct DecideNew<'i> {
    now: Nanos,
    quantity: u64,
    id: &'i [u8],
}

impl Visit for DecideNew<'_> {
    type Out = ();

    fn visit<L: Listed>(self, params: &L::Params) {
        decide_new::<L>(params, self.now, self.quantity, self.id);
    }
}

/// Refunds on a new key of a spec's kind.
struct RefundNew {
    now: Nanos,
    quantity: u64,
}

impl Visit for RefundNew {
    type Out = ();

    fn visit<L: Listed>(self, params: &L::Params) {
        let mut state = L::default();
        if let Some(update) = state.decide(self.now, params, 1).1 {
            state.apply(update);
        }
        let before = state.decide(self.now, params, 0).0;
        state.refund(self.now, params, self.quantity);
        let after = state.decide(self.now, params, 0).0;
        check_decision(&after, false, self.now, 0);
        assert!(after.remaining >= before.remaining);
    }
}

/// The readers of the commands about one key (the first byte picks one):
/// RL.REFUND's arguments after the key, `numkeys`, `AT ns`, `PXAT ms`, a
/// lease id, an argument as an error shows it, and a redis-cell key's
/// value (RL.THROTTLE's adoption under `cell-alias`).
pub fn args_keys(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (trusted, bounds) = flags(first);
    match first % 8 {
        0 | 1 => {
            let words = words(rest);
            match args::refund(&words, || trusted, bounds) {
                Ok((spec, tail)) => {
                    assert!(tail.quantity <= MAX_QUANTITY);
                    assert!(tail.at.is_none() || trusted, "AT from a client");
                    let now = tail.at.unwrap_or(Nanos::new(TODAY));
                    spec.visit(RefundNew {
                        now,
                        quantity: tail.quantity,
                    });
                }
                Err(e) => {
                    let _ = e.message();
                }
            }
        }
        2 => {
            if let Ok(n) = args::numkeys(rest) {
                assert!((1..=MAX_KEYS).contains(&n));
            }
        }
        3 => {
            if let Ok(at) = args::at(rest) {
                assert_eq!(at.get().to_string().parse::<u64>().ok(), Some(at.get()));
            }
        }
        4 => {
            if let Ok(ms) = args::unix_ms(rest) {
                assert!(ms >= 0);
            }
        }
        5 => match args::id(rest) {
            Ok(id) => assert!((1..=MAX_ID_LEN).contains(&id.len()) && id == rest),
            Err(e) => assert!(rest.is_empty() || rest.len() > MAX_ID_LEN, "{e:?}"),
        },
        6 => {
            let text = args::printable(rest);
            assert!(text.len() <= 35 && text.bytes().all(|b| b.is_ascii_graphic()));
        }
        _ => {
            if let Some(tat) = ThrottleState::adopt(rest) {
                check_round_trip(&tat);
            }
        }
    }
}

/// RL.QUOTA's `TZ`: a zone parses back from its canonical name to itself,
/// and every calendar period in it holds the instant it was asked for.
pub fn zone(data: &[u8]) {
    let zone = match Zone::parse(data) {
        Ok(zone) => zone,
        Err(message) => {
            assert!(!message.is_empty());
            return;
        }
    };
    let name = zone.name();
    assert!(!name.is_empty() && name.len() <= MAX_ZONE_NAME, "{name}");
    assert_eq!(Zone::parse(name.as_bytes()), Ok(zone), "{name}");
    let seed = data.iter().fold(0u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    });
    for at in [0, 1, TODAY, TODAY + seed % (1 << 62), seed, u64::MAX] {
        let at = Nanos::new(at);
        for unit in (0..6).filter_map(CalendarUnit::from_index) {
            let (start, end) = period(at, unit, zone);
            assert!(start <= at, "{name} {unit:?} {at:?}: starts at {start:?}");
            assert!(
                at < end || end == Nanos::MAX,
                "{name} {unit:?} {at:?}: ends at {end:?}"
            );
        }
    }
}

/// Lease ids of every length and byte, against a model: each id is a
/// length byte and that many bytes (up to 255, beyond the longest id). A
/// command accepts an id of 1 to 128 bytes; every accepted id is granted
/// (the weights never reach the limit), renewed when named again, counted
/// in RL.INSPECT, and released once.
pub fn lease_ids(data: &[u8]) {
    let mut s = Script { bytes: data };
    let params = match LeaseParams::new(1_000_000, Nanos::new(60_000_000_000)) {
        Some(p) => p,
        None => unreachable!("valid parameters"),
    };
    let now = Nanos::new(TODAY);
    let mut leases = LeaseState::default();
    let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut ids = Vec::new();
    while !s.is_empty() && ids.len() < 200 {
        let len = usize::from(s.u8()).min(s.bytes.len());
        let (id, rest) = s.bytes.split_at(len);
        s.bytes = rest;
        let weight = 1 + u64::from(s.u8() % 4);
        ids.push(id);
        let accepted = args::id(id).is_ok();
        assert_eq!(accepted, (1..=MAX_ID_LEN).contains(&id.len()));
        let (d, update) = leases.decide_as(now, &params, weight, id);
        check_decision(&d, update.is_some(), now, weight);
        assert!(!d.limited);
        assert_eq!(update.is_some(), accepted, "id of {} bytes", id.len());
        if let Some(update) = update {
            leases.apply(update);
            model.insert(id.to_vec(), weight);
        }
        // RL.INSPECT lists up to 100 holders: every eighth grant.
        if ids.len() % 8 == 0 {
            check_model(&leases, &model, now);
        }
    }
    check_model(&leases, &model, now);
    check_round_trip(&leases);
    for id in ids {
        let held = model.remove(id).is_some();
        assert_eq!(leases.release(now, id), held, "id of {} bytes", id.len());
    }
    check_model(&leases, &model, now);
    assert!(leases.is_empty_at(now));
}

fn check_model(leases: &LeaseState, model: &HashMap<Vec<u8>, u64>, now: Nanos) {
    let details = leases.inspect(now);
    let field = |name: &str| details.iter().find(|(f, _)| *f == name).map(|(_, d)| d);
    let held: u64 = model.values().sum();
    assert_eq!(field("held"), Some(&Detail::Integer(held as i64)));
    assert_eq!(field("leases"), Some(&Detail::Integer(model.len() as i64)));
    let listed = leases.iter().filter(|&(_, _, expiry)| expiry > now).count();
    assert_eq!(listed, model.len());
}

#[cfg(test)]
mod tests;
