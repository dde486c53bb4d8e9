//! The rate-limiting algorithms, free of Redis: no `redis_module` import, no
//! clock, no I/O. Every function here takes the current time as an argument,
//! so all of it is deterministic and unit-tested without a server.
//!
//! Each algorithm is one file and one implementation of [`Limiter`]: its
//! state, its parameters (described by [`Limiter::ARGS`], validated by
//! [`Limiter::params`]), the pure decision and the persisted encoding. The
//! glue (`commands`, `types`, `args`) is generic over the trait and never
//! names an algorithm; adding one is a file here plus a line in the glue's
//! tables.

pub mod codec;
pub mod decision;
pub mod gcra;
pub mod quota;
pub mod slice;
pub mod slide;
#[cfg(test)]
mod tests;
pub mod time;

#[cfg(test)]
mod refund_tests;

pub use decision::{binding, Decision, Retry};
pub use time::{Nanos, Unit};

/// The longest period or window any algorithm accepts: ten years of 365
/// days. Durations above it are refused, which keeps every instant the
/// algorithms compute far below `Nanos::MAX`.
pub const MAX_DURATION: Nanos = Nanos::new(MAX_DURATION_SECONDS * 1_000_000_000);
/// [`MAX_DURATION`] in whole seconds.
pub const MAX_DURATION_SECONDS: u64 = 315_360_000;

/// One rate-limiting algorithm, seen from its state: what one key holds.
///
/// A missing key is the `Default` state: deciding on it is deciding on an
/// empty limiter. Deciding is pure; an allowed request that takes units
/// returns an update, which `apply` records on the same state. Inside Redis
/// a command runs atomically, so no compare-and-swap is needed between the
/// two.
pub trait Limiter: Clone + Default + Sized {
    /// The validated parameters of one call.
    type Params: Copy;
    /// What an allowed request that takes units changes.
    type Update;

    /// The algorithm's name: its command is `RL.<NAME>`, and it is the word
    /// that starts a limit of this kind in a command that takes several.
    const NAME: &'static str;
    /// The name `TYPE key` answers for a key holding this state: exactly
    /// nine characters, as Redis requires.
    const TYPE_NAME: &'static str;
    /// The first byte of the state-carrying payload (`RL.STATE`), naming
    /// the type and the format of `encode`.
    const TAG: u8;
    /// The tags of older formats of this type that `decode_legacy` still
    /// reads (payloads in files written by earlier releases); by default
    /// none. Tags are unique across all types and formats.
    const LEGACY_TAGS: &'static [u8] = &[];
    /// The numbers that follow the key, in order.
    const ARGS: &'static [Arg];
    /// Optional keyword arguments that may follow the numbers, each a
    /// keyword (its `name`, any case) and one value; by default none.
    const OPTIONS: &'static [Arg] = &[];

    /// The parameters from the values of `ARGS` then `OPTIONS` (0 for an
    /// option not given), each already within its own range, durations in
    /// nanoseconds. `ParamError::Arg` indexes that same sequence.
    fn params(values: &[u64]) -> Result<Self::Params, ParamError>;

    /// Decides a request for `quantity` units at `now` (`quantity = 0` is a
    /// peek). Returns the decision and, only when the request is allowed and
    /// takes at least one unit, the update to `apply`.
    fn decide(
        &self,
        now: Nanos,
        params: &Self::Params,
        quantity: u64,
    ) -> (Decision, Option<Self::Update>);

    /// Records an update that `decide` produced on this same state.
    fn apply(&mut self, update: Self::Update);

    /// Gives back up to `quantity` recorded units at `now` (a request that
    /// failed downstream): the newest units go first, and nothing is ever
    /// given back that was not recorded, so the state never counts fewer
    /// units than were taken and not refunded. A state left with nothing
    /// counted under `params` is equivalent to a missing key.
    fn refund(&mut self, now: Nanos, params: &Self::Params, quantity: u64);

    /// What the state holds at `now`, in a user's words: field-value pairs
    /// for RL.INSPECT. Needs no parameters.
    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)>;

    /// The canonical byte encoding, shared by RDB, AOF rewrite and DEBUG
    /// DIGEST. It is a promise: saved files must keep loading.
    fn encode(&self) -> Vec<u8>;

    /// Reads what `encode` wrote, validating everything: a payload no valid
    /// state encodes to is refused, never trusted.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError>;

    /// Reads a payload of the older format named by `tag`, one of
    /// `LEGACY_TAGS`, with the same rigour as `decode`, into today's state.
    fn decode_legacy(_tag: u8, _bytes: &[u8]) -> Result<Self, DecodeError> {
        Err(DecodeError::Invalid("no such format"))
    }

    /// Reads a payload of the format named by `tag`: `TAG` (today's
    /// format) or one of `LEGACY_TAGS`.
    fn decode_tagged(tag: u8, bytes: &[u8]) -> Result<Self, DecodeError> {
        if tag == Self::TAG {
            Self::decode(bytes)
        } else if Self::LEGACY_TAGS.contains(&tag) {
            Self::decode_legacy(tag, bytes)
        } else {
            Err(DecodeError::Invalid("no such format"))
        }
    }

    /// Bytes this state occupies, computed from what it allocated.
    fn mem_usage(&self) -> usize;
}

/// One value of RL.INSPECT's reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Detail {
    Integer(i64),
    Integers(Vec<i64>),
    /// A string of any bytes (a bulk string).
    Bytes(Vec<u8>),
}

/// A duration in whole milliseconds, rounded up, for RL.INSPECT.
pub fn millis(d: Nanos) -> i64 {
    i64::try_from(d.ceil_in(Unit::Millis)).unwrap_or(i64::MAX)
}

/// One number of an algorithm's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgKind,
}

/// What a number means, which gives its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
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
}

/// A bound of the server's configuration on an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ceiling {
    /// `max-slide-limit`: the largest RL.SLIDE limit.
    SlideLimit,
    /// `max-slices`: the largest RL.SLICE slice count.
    Slices,
}

/// Why `Limiter::params` refused numbers that are each in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// The argument at this index of `ARGS` is out of its range.
    Arg(usize),
    /// The arguments together break a rule, stated by the text.
    Joint(&'static str),
}

/// Why a persisted state (an RDB payload or an AOF state blob) was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The payload ended before the state did, or had bytes after it.
    Length,
    /// A field holds a value that no valid state can hold.
    Invalid(&'static str),
}
