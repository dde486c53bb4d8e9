//! The one flow every command shares: the entry (typed context and
//! arguments, errors, INFO counters, panics caught), the errors, and what
//! a change of a key entails (expiry, WATCH, propagation).
//!
//! What reaches the replicas and the AOF is never the command as the client
//! sent it but its canonical time-carrying form,
//! `<prefix>.X <arguments as sent> AT <master's clock in ns>`, so that a
//! replica, an AOF replay and a restart reach the master's exact state
//! (docs/DESIGN.md#replication). Only changes are propagated; peeks
//! (quantity 0) change nothing.

use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use arrayvec::ArrayVec;

use super::info::{self, Stat};
use crate::args::{self, ArgError};
use crate::core::{Detail, Nanos};
use crate::kinds::Listed;
use crate::server::{Argv, Ctx, Held, Key};
use crate::stats::Call;
use crate::{config, replication};

/// RL.INSPECT's fields of a state.
pub type Details = Vec<(&'static str, Detail)>;

/// Why a command failed; `reply` sends the error.
pub enum Error {
    Arity,
    Arg(ArgError),
    WrongType,
    /// A payload of `RL.STATE` that does not decode.
    BadState,
    StateFromClient,
    /// Something the module's own logic rules out went wrong: a bug. The
    /// text says which, so that a report names it.
    Internal(&'static CStr),
}

impl From<ArgError> for Error {
    fn from(e: ArgError) -> Error {
        Error::Arg(e)
    }
}

impl Error {
    /// The server refused to store a value in a key opened for writing.
    pub(super) const NOT_STORED: Error = Error::Internal(
        c"ERR internal error: the server refused to store the value (please report it)",
    );
    /// The server refused to delete a key opened for writing.
    const NOT_DELETED: Error = Error::Internal(
        c"ERR internal error: the server refused to delete the key (please report it)",
    );

    fn reply(self, ctx: Ctx) {
        match self {
            Error::Arity => ctx.reply_wrong_arity(),
            Error::Arg(e) => ctx.reply_error(&e.message()),
            Error::WrongType => ctx
                .reply_error(c"WRONGTYPE Operation against a key holding the wrong kind of value"),
            Error::BadState => {
                ctx.reply_error(c"ERR RL.STATE payload is not a valid limiter state")
            }
            Error::StateFromClient => {
                ctx.reply_error(c"ERR RL.STATE is accepted only from the master or the AOF")
            }
            Error::Internal(message) => ctx.reply_error(message),
        }
    }
}

/// How a command ended, for the INFO counters.
pub(super) enum Outcome {
    Allowed,
    Limited,
    /// Sent by the master or read from the AOF: not a client call.
    FromMasterOrAof,
    /// Only asked where the keys are: not a call.
    KeyPositions,
    /// Answered, with no allowed/limited outcome.
    Answered,
}

impl Outcome {
    /// A decision's outcome: a client's call allowed or limited, or a
    /// command that carried the master's clock (`at`).
    pub(super) fn of(at: Option<Nanos>, limited: bool) -> Outcome {
        match (at, limited) {
            (Some(_), _) => Outcome::FromMasterOrAof,
            (None, false) => Outcome::Allowed,
            (None, true) => Outcome::Limited,
        }
    }
}

/// The state for a key that holds no `L`: the empty one, or, when it holds
/// another type (`other`), one adopted from it (`Kind::adopt`, only
/// under `cell-alias`), else WRONGTYPE.
pub(super) fn new_state<L: Listed>(key: &Key, other: bool) -> Result<L, Error> {
    if !other {
        return Ok(L::default());
    }
    let adopted = match config::cell_alias() {
        true => key.string().and_then(L::adopt),
        false => None,
    };
    adopted.ok_or(Error::WrongType)
}

/// Stores a new state in a key opened for writing.
pub(super) fn store<L: Listed>(key: &mut Key, state: L) -> Result<(), Error> {
    match key.set(L::module_type(), state) {
        true => Ok(()),
        false => Err(Error::NOT_STORED),
    }
}

/// After an allowed request recorded its units (or a refund gave some
/// back): WATCH hears of the change, and the key's expiry moves out to the
/// moment its state is back to empty under these parameters, when that is
/// later. It never moves earlier: units recorded under a longer window are
/// still counted by that window, so the key must outlive them. A key
/// without an expiry (a new one) gets one (docs/DESIGN.md#lifetime).
pub(super) fn recorded(key: &Key, reset_at: Nanos) {
    expire_later(key, reset_at, true);
    key.signal_modified();
}

/// A limited request under parameters that keep the recorded units longer
/// than the key's expiry (a longer window): the key must live that long,
/// or its units would be forgotten early. True when the expiry moved. A
/// key adopted from another type's state is never in this case: it records
/// nothing when limited.
pub(super) fn extend_expiry(key: &Key, reset_at: Nanos) -> bool {
    let moved = expire_later(key, reset_at, false);
    if moved {
        key.signal_modified();
    }
    moved
}

/// Moves the key's expiry out to `reset_at` when that is later than the
/// one it has; a key without one gets it only when `or_none`. True when it
/// moved.
fn expire_later(key: &Key, reset_at: Nanos, or_none: bool) -> bool {
    let reset_ms = unix_ms_ceil(reset_at);
    let later = key.expire_ms().map_or(or_none, |expire| expire < reset_ms);
    if later {
        key.expire_at_ms(reset_ms);
    }
    later
}

/// Deletes a key whose state is back to empty, telling WATCH.
pub(super) fn delete(key: &mut Key) -> Result<(), Error> {
    if !key.delete() {
        return Err(Error::NOT_DELETED);
    }
    key.signal_modified();
    Ok(())
}

/// Sends the change the running command made to the replicas and the AOF,
/// as `RL.<name> <arguments after the name> AT <now>`. A command from the
/// master or the AOF already carries its clock (`at`); when nothing replays
/// the stream, the clock is not needed (see `replication`).
pub(super) fn propagate<'a>(
    ctx: Ctx<'a>,
    name: &str,
    argv: Argv<'a>,
    at: Option<Nanos>,
    now: Nanos,
) {
    if at.is_none() && replication::needs_clock() {
        let at = i64::try_from(now.get()).unwrap_or(i64::MAX);
        // The canonical name, also for a call through the CL.THROTTLE alias.
        let mut buf = [0u8; 64];
        match command_name(config::prefix(), name, &mut buf) {
            Some(name) => ctx.replicate_with_time(name, argv.skip(1), at),
            None => ctx.replicate_verbatim(),
        }
    } else {
        ctx.replicate_verbatim();
    }
}

/// Sends the change of `key`, which holds `L` (or was deleted), to the
/// replicas and the AOF: as the command with the master's clock
/// (`propagate`), or, for a kind that replicates its state, as the state
/// itself (`RL.STATE key payload PXAT ms`, or `DEL key`).
pub(super) fn propagate_change<'a, L: Listed>(
    ctx: Ctx<'a>,
    key: &mut Key<'a>,
    name: &str,
    argv: Argv<'a>,
    at: Option<Nanos>,
    now: Nanos,
) {
    if !L::REPLICATES_STATE {
        propagate(ctx, name, argv, at, now);
    } else if at.is_some() || !replication::needs_clock() {
        ctx.replicate_verbatim();
    } else {
        replicate_state::<L>(ctx, key, now);
    }
}

/// `RL.STATE key payload PXAT ms` for the state `key` holds, or `DEL key`
/// when it holds none.
pub(super) fn replicate_state<'a, L: Listed>(ctx: Ctx<'a>, key: &mut Key<'a>, now: Nanos) {
    let expire = key.expire_ms();
    let payload = match key.value(L::module_type()) {
        Held::Ours(state) => state.tagged(now),
        _ => return ctx.replicate_delete(key),
    };
    ctx.replicate_state(key, &payload, expire);
}

/// `<prefix>.<name>` as a C string in `buf`, without allocating; `None`
/// if too long.
fn command_name<'b>(prefix: &str, name: &str, buf: &'b mut [u8; 64]) -> Option<&'b CStr> {
    let dot = prefix.len();
    let len = dot + 1 + name.len();
    if len >= buf.len() {
        return None;
    }
    buf[..dot].copy_from_slice(prefix.as_bytes());
    buf[dot] = b'.';
    buf[dot + 1..len].copy_from_slice(name.as_bytes());
    buf[len] = 0;
    CStr::from_bytes_with_nul(&buf[..=len]).ok()
}

pub(super) fn unix_ms_ceil(at: Nanos) -> i64 {
    i64::try_from(at.get().div_ceil(1_000_000)).unwrap_or(i64::MAX)
}

/// The bytes of the arguments from `from` on, into `words` (which the
/// caller keeps on its stack: returning the collection by value would copy
/// all of its capacity), without allocating; more than `N` of them is an
/// error naming the first one too many (so the collection never overflows).
#[inline]
pub(super) fn arg_bytes<'a, const N: usize>(
    argv: Argv<'a>,
    from: usize,
    words: &mut ArrayVec<&'a [u8], N>,
) -> Result<(), Error> {
    if argv.len() > from + N {
        let extra = args::printable(argv.bytes(from + N));
        return Err(Error::Arg(ArgError::Extra(extra)));
    }
    words.clear();
    for word in argv.bytes_from(from) {
        words.push(word);
    }
    Ok(())
}

/// The entry of every command: replies with the error if there is one,
/// counts the call in INFO row `stat`, and catches a panic (a bug; none is
/// reachable by design) so that it cannot abort the server.
#[inline]
pub(super) fn entry<'a>(
    ctx: Ctx<'a>,
    argv: Argv<'a>,
    stat: Option<Stat>,
    f: impl FnOnce(Ctx<'a>, Argv<'a>) -> Result<Outcome, Error>,
) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let result = f(ctx, argv);
        if let Some(stat) = stat {
            match result {
                Ok(Outcome::Allowed) => info::record(stat, Call::Allowed),
                Ok(Outcome::Limited) => info::record(stat, Call::Limited),
                Ok(Outcome::Answered) => info::record(stat, Call::Answered),
                Ok(Outcome::FromMasterOrAof | Outcome::KeyPositions) => {}
                Err(_) => info::record(stat, Call::Error),
            }
        }
        if let Err(e) = result {
            e.reply(ctx);
        }
    }));
    if outcome.is_err() {
        ctx.reply_error(c"ERR internal error in the ratelimit module, see the server log");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_names_become_c_strings_without_allocating() {
        let mut buf = [0u8; 64];
        assert_eq!(
            command_name("RL", "THROTTLE", &mut buf),
            Some(c"RL.THROTTLE")
        );
        let mut buf = [0u8; 64];
        assert_eq!(
            command_name("my_rl", "ALLOW", &mut buf),
            Some(c"my_rl.ALLOW")
        );
        let mut buf = [0u8; 64];
        assert_eq!(command_name("RL", &"X".repeat(61), &mut buf), None);
    }
}
