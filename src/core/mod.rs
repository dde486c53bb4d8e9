//! The rate-limiting algorithms, free of Redis: no `redis_module` import, no
//! clock, no I/O. Every function here takes the current time as an argument,
//! so all of it is deterministic and unit-tested without a server.

pub mod codec;
pub mod decision;
pub mod gcra;
pub mod slice;
pub mod slide;
pub mod time;

pub use decision::{Decision, Retry};
pub use time::{Nanos, Unit};

/// Why a persisted state (an RDB payload or an AOF state blob) was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The payload ended before the state did, or had bytes after it.
    Length,
    /// A field holds a value that no valid state can hold.
    Invalid(&'static str),
}
