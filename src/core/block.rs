//! BLOCK: after a refusal, keep refusing for a while
//! (docs/DESIGN.md#block).
//!
//! A kind that takes the option lists [`BLOCK`] among its `OPTIONS`, keeps
//! the end of its block in its state (`Kind::blocked_until`) and gives the
//! option's value back through `Kind::block_of`. Everything else is here,
//! the same for every kind: [`check`] applies the block to the kind's own decision, the
//! `refund` and `charge` wrappers keep a block, and the block trailer
//! carries it in saved payloads. Worked example: `RL.THROTTLE k 0 1 60
//! BLOCK 600` (one unit a minute) at `now` = 0 takes the unit; at 10 s the
//! next request is refused (its own retry at 60 s) and blocks the key until
//! 610 s: it answers `retry_after` 600, and so does every request until
//! then, which records nothing and does not extend the block. At 610 s the
//! limiter goes on from its TAT (60 s, long passed): allowed.

use super::codec::{Reader, Writer};
use super::{ChargeError, Decision, DecodeError, Kind, Nanos, Param, ParamKind, Retry};

/// The `BLOCK b` option of a kind that takes it: a duration in the call's
/// unit, 1 to the maximum time.
pub const BLOCK: Param = Param::of("BLOCK", ParamKind::Duration);

/// Whether a kind takes [`BLOCK`] (it is among its `OPTIONS`).
pub const fn takes_block(options: &[Param]) -> bool {
    let mut i = 0;
    while i < options.len() {
        if same_name(options[i].name, BLOCK.name) {
            return true;
        }
        i += 1;
    }
    false
}

const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The end of the block `state` holds at `now`, if it is blocked.
#[inline]
pub fn blocked_at<K: Kind>(state: &K, now: Nanos) -> Option<Nanos> {
    let end = state.blocked_until();
    (end > now).then_some(end)
}

/// A request decided with its block: the decision, the update an allowed
/// request records, and the block a refusal starts (the tests' and fuzz
/// targets' view of [`check`]).
#[cfg(any(test, fuzzing))]
#[derive(Debug)]
pub struct Blocking<U> {
    pub decision: Decision,
    /// As `Kind::decide`'s; never on a blocked key.
    pub update: Option<U>,
    /// The end of the block this refusal starts (quantity >= 1, refused by
    /// a limit with BLOCK, on a key not blocked yet, and not a request that
    /// can never fit).
    pub starts: Option<Nanos>,
    /// Whether the key was blocked already (the refusal is the block's).
    pub blocked: bool,
}

/// Decides a request for `quantity` units at `now`, the block included:
///
/// - on a key blocked at `now`: limited, remaining 0, nothing recorded;
///   `retry` the later of the block's end and the limiter's own retry (a
///   peek the limiter allows: the block's end; one that can never fit:
///   never), and
///   `reset_at` never before the block's end;
/// - a refusal of at least one unit by a limit with `BLOCK b` (not one
///   that can never fit) starts a block until `now + b` (saturating), and
///   already answers as a blocked key does;
/// - otherwise the kind's own decision.
#[cfg(any(test, fuzzing))]
pub fn decide<K: Kind>(
    state: &K,
    now: Nanos,
    params: &K::Params,
    quantity: u64,
    id: &[u8],
) -> Blocking<K::Update> {
    decide_from(
        state,
        now,
        params,
        quantity,
        id,
        state.decide_as(now, params, quantity, id),
    )
}

/// `decide` from the kind's own decision and update (`Kind::decide_as`,
/// or a MAXWAIT booking, which a blocked key never makes).
#[cfg(any(test, fuzzing))]
pub fn decide_from<K: Kind>(
    state: &K,
    now: Nanos,
    params: &K::Params,
    quantity: u64,
    id: &[u8],
    (decision, update): (Decision, Option<K::Update>),
) -> Blocking<K::Update> {
    match check(state, now, params, quantity, id, &decision) {
        None => Blocking {
            decision,
            update,
            starts: None,
            blocked: false,
        },
        Some(held) => Blocking {
            decision: held.decision,
            update: None,
            starts: held.starts,
            blocked: held.starts.is_none(),
        },
    }
}

/// A decision the block changed: a request on a blocked key, or the
/// refusal that starts a block.
#[derive(Clone, Copy, Debug)]
pub struct Held {
    pub decision: Decision,
    /// The end of the block the refusal starts; `None`: the key was
    /// blocked already.
    pub starts: Option<Nanos>,
}

/// What the key's block makes of the kind's own `decision` of a request
/// (`decide`'s rules): `None` when it changes nothing, as for every call
/// on a key not blocked that is allowed or refused without BLOCK. That
/// case costs one comparison with the state's block and one look at the
/// decision (no copy of the decision or of its update), so that calls
/// without BLOCK cost what they did before it.
#[inline(always)]
pub fn check<K: Kind>(
    state: &K,
    now: Nanos,
    params: &K::Params,
    quantity: u64,
    id: &[u8],
    decision: &Decision,
) -> Option<Held> {
    if state.blocked_until() > now {
        return Some(on_blocked(state, now, params, quantity, id, decision));
    }
    if decision.limited {
        return starting::<K>(now, params, quantity, decision);
    }
    None
}

/// A request on a key blocked at `now`: limited, remaining 0, retry the
/// later of the block's end and the limiter's own.
#[cold]
#[inline(never)]
fn on_blocked<K: Kind>(
    state: &K,
    now: Nanos,
    params: &K::Params,
    quantity: u64,
    id: &[u8],
    decision: &Decision,
) -> Held {
    let end = state.blocked_until();
    // The limiter's own answer for a request that records nothing: an
    // allowed one's reset counts the units it would have taken.
    let own = match decision.limited {
        true => *decision,
        false => state.decide_as(now, params, 0, id).0,
    };
    Held {
        decision: held(own, end, quantity),
        starts: None,
    }
}

/// A refusal of at least one unit by a limit with BLOCK (not one that can
/// never fit) starts a block until `now + b`.
#[inline]
fn starting<K: Kind>(
    now: Nanos,
    params: &K::Params,
    quantity: u64,
    decision: &Decision,
) -> Option<Held> {
    let b = K::block_of(params)?;
    if quantity == 0 || decision.retry == Retry::Never {
        return None;
    }
    let end = now.saturating_add(b);
    Some(Held {
        decision: held(*decision, end, quantity),
        starts: Some(end),
    })
}

/// What a peek answers at `now`, the block included.
pub fn peek<K: Kind>(state: &K, now: Nanos, params: &K::Params) -> Decision {
    let (decision, _) = state.decide_as(now, params, 0, b"");
    check(state, now, params, 0, b"", &decision).map_or(decision, |held| held.decision)
}

/// A decision on a key blocked until `end`.
fn held(own: Decision, end: Nanos, quantity: u64) -> Decision {
    let retry = match own.retry {
        Retry::Never if quantity > 0 => Retry::Never,
        Retry::At(at) | Retry::Turn(at) => Retry::At(at.max(end)),
        Retry::NotLimited | Retry::Never => Retry::At(end),
    };
    Decision {
        limited: true,
        remaining: 0,
        retry,
        reset_at: own.reset_at.max(end),
        ..own
    }
}

/// `Kind::inspect`, followed while the key is blocked by `blocked_until`:
/// the block's end, Unix ms rounded up.
pub fn inspect<K: Kind>(state: &K, now: Nanos) -> Vec<(&'static str, super::Detail)> {
    let mut details = state.inspect(now);
    if let Some(end) = blocked_at(state, now) {
        let ms = i64::try_from(end.get().div_ceil(1_000_000)).unwrap_or(i64::MAX);
        details.push(("blocked_until", super::Detail::Integer(ms)));
    }
    details
}

/// `Kind::refund`, keeping the state's block (RL.REFUND lifts none).
pub fn refund<K: Kind>(state: &mut K, now: Nanos, params: &K::Params, quantity: u64) {
    let end = state.blocked_until();
    state.refund(now, params, quantity);
    state.set_blocked_until(end);
}

/// `Kind::charge`, keeping the state's block (RL.CHARGE lifts none).
pub fn charge<K: Kind>(
    state: &mut K,
    now: Nanos,
    params: &K::Params,
    quantity: u64,
) -> Result<(), ChargeError> {
    let end = state.blocked_until();
    let charged = state.charge(now, params, quantity);
    state.set_blocked_until(end);
    charged
}

/// The block trailer's length: the block's end (u64 ns, little-endian,
/// never 0), then its mark, a 0 byte.
pub const TRAILER: usize = 9;

/// The trailer's last byte. A 0 there is what makes every older build
/// refuse the payload: each format but RL.SLIDE's knows its own length
/// and refuses bytes after it; RL.SLIDE's reads an optional varint at the
/// end, which the trailer cannot be (a varint of more than one byte never
/// ends in 0, and a shorter one leaves bytes after it).
const MARK: u8 = 0;

/// Appends the block trailer to `encode`'s bytes when `state` is blocked at
/// `now`; a state that is not keeps today's bytes exactly.
pub fn append_trailer<K: Kind>(state: &K, now: Nanos, bytes: &mut Vec<u8>) {
    if let Some(end) = blocked_at(state, now) {
        let mut w = Writer::with_capacity(TRAILER);
        w.u64(end.get());
        bytes.extend_from_slice(&w.into_bytes());
        bytes.push(MARK);
    }
}

/// Reads `encode`'s bytes, or `encode`'s bytes followed by the block
/// trailer (for a kind that takes BLOCK), validating both.
pub fn restore<K: Kind>(bytes: &[u8]) -> Result<K, DecodeError> {
    let plain = K::decode(bytes);
    if plain.is_ok() || !takes_block(K::OPTIONS) {
        return plain;
    }
    let Some((body, trailer)) = bytes.split_last_chunk::<TRAILER>() else {
        return plain;
    };
    if trailer[TRAILER - 1] != MARK {
        return plain;
    }
    let mut r = Reader::new(&trailer[..TRAILER - 1]);
    let end = r.u64()?;
    r.finish()?;
    if end == 0 {
        return Err(DecodeError::Invalid("block ends at 0"));
    }
    let mut state = K::decode(body)?;
    state.set_blocked_until(Nanos::new(end));
    Ok(state)
}

/// The BLOCK option's value among a kind's `params` values, at `index`
/// (its place after the parameters and the options before it).
#[inline]
pub fn option(values: &[super::Value<'_>], index: usize) -> Penalty {
    match values.get(index) {
        Some(super::Value::Number(ns)) => Penalty(std::num::NonZeroU64::new(*ns)),
        _ => Penalty::NONE,
    }
}

/// A BLOCK option's value as a kind's parameters keep it, in 8 bytes (a
/// spec is copied a few times per call): `None` without the option (a
/// block lasts at least 1 ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Penalty(Option<std::num::NonZeroU64>);

impl Penalty {
    /// No BLOCK option.
    pub const NONE: Penalty = Penalty(None);

    /// The option's value (`None`, or zero: without).
    #[cfg(test)]
    pub fn new(block: Option<Nanos>) -> Penalty {
        Penalty(block.and_then(|b| std::num::NonZeroU64::new(b.get())))
    }

    /// How long a refusal blocks the key.
    #[inline]
    pub fn get(self) -> Option<Nanos> {
        self.0.map(|b| Nanos::new(b.get()))
    }
}
