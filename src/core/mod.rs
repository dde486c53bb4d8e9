//! The kinds of limit, free of Redis: no `redis_module` import, no clock, no
//! I/O. Every function here takes the current time as an argument, so all
//! of it is deterministic and unit-tested without a server.
//!
//! Each kind is one module (a file, or a folder: `slide/`) and one
//! implementation of [`Kind`]: its state, its parameters (described by
//! [`Kind::PARAMS`], validated by [`Kind::params`]), the pure decision
//! and the persisted encoding. The glue is generic over the trait and never
//! names a kind; adding one is a module here plus a row in the table of
//! `kinds.rs` (docs/DESIGN.md#one-table-of-kinds). Their tests are in
//! `tests/`.
#![forbid(unsafe_code)]

pub mod block;
pub mod codec;
pub mod decision;
pub mod lease;
pub mod quota;
pub mod slice;
pub mod slide;
#[cfg(test)]
mod tests;
pub mod throttle;
pub mod time;
pub mod top;
pub mod wait;

pub use decision::{binding, plain_binding, Decision, Retry};
pub use time::{Nanos, TimeUnit};

/// The longest period or window any algorithm accepts: ten years of 365
/// days. Durations above it are refused, which keeps every instant the
/// algorithms compute far below `Nanos::MAX`.
pub const MAX_DURATION: Nanos = Nanos::new(MAX_DURATION_SECONDS * 1_000_000_000);
/// [`MAX_DURATION`] in whole seconds.
pub const MAX_DURATION_SECONDS: u64 = 315_360_000;

/// One kind of limit, seen from its state: what one key holds.
///
/// A missing key is the `Default` state: deciding on it is deciding on an
/// empty limiter. Deciding is pure; an allowed request that takes units
/// returns an update, which `apply` records on the same state. Inside Redis
/// a command runs atomically, so no compare-and-swap is needed between the
/// two. Everything the glue needs to register, parse, document, persist and
/// count a kind is here: a new kind is a file in `core` and a row in the
/// table of `kinds.rs` (docs/DESIGN.md#one-table-of-kinds).
pub trait Kind: Clone + Default + Sized + 'static {
    /// The validated parameters of one call.
    type Params: Copy;
    /// What an allowed request that takes units changes.
    type Update;

    /// The kind's name: its command is `RL.<NAME>`, and it is the word that
    /// starts a limit of this kind in a command that takes several. Its
    /// lower case names the kind in RL.INSPECT and in INFO.
    const NAME: &'static str;
    /// The name `TYPE key` answers for a key holding this state: exactly
    /// nine characters, as Redis requires.
    const TYPE_NAME: &'static str;
    /// The RDB encoding version of `encode`'s format.
    const ENCODING_VERSION: i32 = 1;
    /// The first byte of the state-carrying payload (`RL.STATE`), naming
    /// the type and the format of `encode`.
    const TAG: u8;
    /// Older formats of this type that `decode_legacy` still reads
    /// (payloads in files written by earlier releases), each as its RDB
    /// encoding version and its `RL.STATE` tag; by default none. Tags are
    /// unique across all types and formats.
    const LEGACY: &'static [(i32, u8)] = &[];
    /// The parameters that follow the key, in order.
    const PARAMS: &'static [Param];
    /// Optional keyword parameters that may follow them, each a keyword
    /// (its `name`, any case) and one value; by default none.
    const OPTIONS: &'static [Param] = &[];
    /// Whether a request names what it takes (a lease id): the single
    /// command then takes the id after the parameters, and a several-limit
    /// call takes it as its `ID` option.
    const TAKES_ID: bool = false;
    /// Whether RL.REFUND may give units back to this kind.
    const REFUNDS: bool = true;
    /// Whether a request may wait for its turn (MAXWAIT): the kind then
    /// answers `turn` and `book`. By default it may not.
    const WAITS: bool = false;
    /// Whether a change reaches replicas and the AOF as the resulting state
    /// (`RL.STATE key payload PXAT ms`) rather than as the command with the
    /// master's clock: for a kind whose decision reads data that another
    /// node might hold in another version (RL.QUOTA's time-zone rules), so
    /// that no replica recomputes it (docs/DESIGN.md#replication).
    const REPLICATES_STATE: bool = false;
    /// COMMAND DOCS: what the command does, its complexity, and the module
    /// version that introduced it.
    const SUMMARY: &'static str;
    const COMPLEXITY: &'static str;
    const SINCE: &'static str;

    /// The parameters from the values of `PARAMS` then `OPTIONS`
    /// (`Value::Absent` for an option not given), each already within its
    /// own range, durations in nanoseconds. `ParamError::Param` indexes
    /// that same sequence.
    fn params(values: &[Value<'_>]) -> Result<Self::Params, ParamError>;

    /// Decides a request for `quantity` units at `now` (`quantity = 0` is a
    /// peek). Returns the decision and, only when the request is allowed and
    /// takes at least one unit, the update to `apply`.
    fn decide(
        &self,
        now: Nanos,
        params: &Self::Params,
        quantity: u64,
    ) -> (Decision, Option<Self::Update>);

    /// `decide` for a request that names what it takes (`id`, empty when
    /// none was given); kinds without `TAKES_ID` ignore it.
    fn decide_as(
        &self,
        now: Nanos,
        params: &Self::Params,
        quantity: u64,
        _id: &[u8],
    ) -> (Decision, Option<Self::Update>) {
        self.decide(now, params, quantity)
    }

    /// For a kind that `WAITS`: the instant from which a request of
    /// `quantity` units fits, if nothing else is recorded meanwhile (`now`
    /// when it fits at once, never earlier); `None` when it can never fit
    /// (and for every other kind).
    fn turn(&self, _now: Nanos, _params: &Self::Params, _quantity: u64) -> Option<Nanos> {
        None
    }

    /// For a kind that `WAITS`: the request granted for a turn at `at`, at
    /// or after its own `turn` (several limits wait for the latest of
    /// theirs): decided and recorded as a request allowed at the instant
    /// `at`, measured from `now`. The decision is allowed, its `retry` the
    /// request's own turn (`Retry::Turn`), its remaining and reset after
    /// the booking. Other kinds decide as `decide` does.
    fn book(
        &self,
        now: Nanos,
        _at: Nanos,
        params: &Self::Params,
        quantity: u64,
    ) -> (Decision, Option<Self::Update>) {
        self.decide(now, params, quantity)
    }

    /// Records an update that `decide` produced on this same state.
    fn apply(&mut self, update: Self::Update);

    /// How long a refusal under these parameters blocks the key (the
    /// `BLOCK` option, [`block`]); `None` without it, and always for a
    /// kind that takes no BLOCK.
    fn block_of(_params: &Self::Params) -> Option<Nanos> {
        None
    }

    /// The end of the block this state holds (it blocks while `now` is
    /// before it); `Nanos::ZERO` when none was ever started. Kinds that
    /// take no BLOCK hold none.
    fn blocked_until(&self) -> Nanos {
        Nanos::ZERO
    }

    /// Sets the end of the state's block (`Nanos::ZERO`: none). Called
    /// only for kinds whose parameters can carry a block.
    fn set_blocked_until(&mut self, _end: Nanos) {}

    /// Gives back up to `quantity` recorded units at `now` (a request that
    /// failed downstream): the newest units go first, and nothing is ever
    /// given back that was not recorded, so the state never counts fewer
    /// units than were taken and not refunded. A state left with nothing
    /// counted under `params` is equivalent to a missing key. Called only
    /// for kinds with `REFUNDS`.
    fn refund(&mut self, now: Nanos, params: &Self::Params, quantity: u64);

    /// Records `quantity` units (at least 1) at `now` unconditionally, as
    /// an allowed request of that quantity records them, even where that
    /// takes the key over its limit (RL.CHARGE: a cost known afterwards).
    /// A key over its limit is in debt: `decide` limits every request
    /// until enough has left, and its `retry` counts the debt exactly.
    /// Memory stays within what allowed requests may take. Refused, with
    /// nothing recorded, only when a counter would pass its maximum.
    /// Called only for kinds with `REFUNDS`.
    fn charge(
        &mut self,
        now: Nanos,
        params: &Self::Params,
        quantity: u64,
    ) -> Result<(), ChargeError>;

    /// What the state holds at `now`, in a user's words: field-value pairs
    /// for RL.INSPECT. Needs no parameters.
    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)>;

    /// The canonical byte encoding, shared by RDB, AOF rewrite and DEBUG
    /// DIGEST. It is a promise: saved files must keep loading.
    fn encode(&self) -> Vec<u8>;

    /// What RDB saves at `now`: the encoding, followed by the block
    /// trailer when the state is blocked at `now` (a state holding no
    /// unexpired block saves exactly `encode`'s bytes:
    /// docs/DESIGN.md#persistence).
    fn persist(&self, now: Nanos) -> Vec<u8> {
        let mut bytes = self.encode();
        block::append_trailer(self, now, &mut bytes);
        bytes
    }

    /// Reads what `persist` wrote: a state, with its block if it has the
    /// trailer.
    fn restore(bytes: &[u8]) -> Result<Self, DecodeError> {
        block::restore(bytes)
    }

    /// The payload of `RL.STATE` at `now`: `TAG`, then what `persist`
    /// writes.
    fn tagged(&self, now: Nanos) -> Vec<u8> {
        let body = self.persist(now);
        let mut out = Vec::with_capacity(body.len() + 1);
        out.push(Self::TAG);
        out.extend_from_slice(&body);
        out
    }

    /// Reads what `encode` wrote, validating everything: a payload no valid
    /// state encodes to is refused, never trusted.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError>;

    /// Reads a payload of the older format named by `tag`, one of
    /// `LEGACY`'s, with the same rigour as `decode`, into today's state.
    fn decode_legacy(_tag: u8, _bytes: &[u8]) -> Result<Self, DecodeError> {
        Err(DecodeError::Invalid("no such format"))
    }

    /// Reads a payload of the format named by `tag`: `TAG` (today's
    /// format, with or without the block trailer) or one of `LEGACY`'s.
    fn decode_tagged(tag: u8, bytes: &[u8]) -> Result<Self, DecodeError> {
        if tag == Self::TAG {
            Self::restore(bytes)
        } else if Self::LEGACY.iter().any(|&(_, t)| t == tag) {
            Self::decode_legacy(tag, bytes)
        } else {
            Err(DecodeError::Invalid("no such format"))
        }
    }

    /// Bytes this state occupies, computed from what it allocated.
    fn mem_usage(&self) -> usize;

    /// The state a plain string value stands for, when this kind adopts
    /// such keys (RL.THROTTLE reads redis-cell's keys under the
    /// `cell-alias` option); by default none.
    fn adopt(_string: &[u8]) -> Option<Self> {
        None
    }
}

/// One value of RL.INSPECT's reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Detail {
    Integer(i64),
    Integers(Vec<i64>),
    /// A string of any bytes (a bulk string).
    Bytes(Vec<u8>),
    /// A nested array.
    List(Vec<Detail>),
}

/// A duration in whole milliseconds, rounded up, for RL.INSPECT.
pub fn millis(d: Nanos) -> i64 {
    i64::try_from(d.ceil_in(TimeUnit::Millis)).unwrap_or(i64::MAX)
}

/// One parameter of a kind: its name (as errors and COMMAND DOCS show it,
/// and, for an option, its keyword) and what it may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub kind: ParamKind,
}

impl Param {
    /// An integer in `min..=max`.
    pub const fn integer(name: &'static str, min: u64, max: u64) -> Param {
        Param::capped(name, min, max, None)
    }

    /// An integer in `min..=max` that the configuration may cap lower.
    pub const fn capped(name: &'static str, min: u64, max: u64, ceiling: Option<Ceiling>) -> Param {
        Param {
            name,
            kind: ParamKind::Integer { min, max, ceiling },
        }
    }

    pub const fn of(name: &'static str, kind: ParamKind) -> Param {
        Param { name, kind }
    }
}

/// What a parameter is, which gives its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// An integer in `min..=max`; a `ceiling` is a lower maximum that the
    /// server's configuration may set for clients.
    Integer {
        min: u64,
        max: u64,
        ceiling: Option<Ceiling>,
    },
    /// A duration in the call's unit (seconds, or milliseconds with `MS`),
    /// from 1 to [`MAX_DURATION`].
    Duration,
    /// A duration as above that may also be 0.
    DurationOrZero,
    /// One of these words, any case; its value is the word's index.
    Word(&'static [&'static str]),
    /// Any bytes, 1 to `max` of them, which `Kind::params` checks.
    Text { max: usize },
}

/// The value of one parameter, validated against its `ParamKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// An integer, a duration in nanoseconds or a word's index.
    Number(u64),
    Text(&'a [u8]),
    /// An option that was not given.
    Absent,
}

impl Value<'_> {
    /// The number, or 0 for a text or an absent option.
    pub fn number(self) -> u64 {
        match self {
            Value::Number(n) => n,
            Value::Text(_) | Value::Absent => 0,
        }
    }

    /// The first `N` values as numbers; an error naming the first missing
    /// one when there are fewer.
    pub fn numbers<const N: usize>(values: &[Value<'_>]) -> Result<[u64; N], ParamError> {
        let mut out = [0; N];
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = values.get(i).ok_or(ParamError::Param(i))?.number();
        }
        Ok(out)
    }
}

/// A bound of the server's configuration on a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ceiling {
    /// `max-slide-limit`: the largest RL.SLIDE limit.
    SlideLimit,
    /// `max-slices`: the largest RL.SLICE slice count.
    Slices,
}

/// Why `Kind::params` refused values that are each in range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// The parameter at this index of `PARAMS` then `OPTIONS` is out of
    /// its range.
    Param(usize),
    /// The parameters together break a rule, stated by the text.
    Joint(&'static str),
    /// A value that names nothing this kind knows, with the message to
    /// show (without `ERR `), such as an unknown time zone.
    Unknown(String),
}

/// Why a charge was refused: it would take a counter of the key past its
/// maximum, which the text states (it follows `quantity` in the error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChargeError(pub &'static str);

/// Why a persisted state (an RDB payload or an AOF state blob) was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The payload ended before the state did, or had bytes after it.
    Length,
    /// A field holds a value that no valid state can hold.
    Invalid(&'static str),
}
