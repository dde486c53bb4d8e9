//! The commands: their table, the entry every handler goes through, and
//! what they share (errors, expiry, propagation).
//!
//! - `limiter`: `RL.<NAME>`, one per kind, all running the one flow of
//!   `limiter::limit`: parse, open the key, read the clock once, decide,
//!   store, expire, propagate, reply;
//! - `several`: RL.ALLOW and RL.PEEK;
//! - `keys`: RL.INSPECT, RL.REFUND, RL.RELEASE and the internal RL.STATE.
//!
//! What reaches the replicas and the AOF is never the command as the client
//! sent it but its canonical time-carrying form,
//! `RL.X <arguments as sent> AT <master's clock in ns>`, so that a
//! replica, an AOF replay and a restart reach the master's exact state
//! (docs/DESIGN.md#replication). Only changes are propagated; peeks
//! (quantity 0) change nothing.

mod keys;
mod limiter;
mod several;

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use arrayvec::ArrayVec;
use redis_module::raw;

pub use keys::{inspect_key, restore};
pub use limiter::{commit, limiter_command};

use crate::args::{self, ArgError};
use crate::core::{Detail, Nanos};
use crate::kinds::{Kind, KINDS};
use crate::registration::CommandSpec;
use crate::server::{self, Argv, Ctx, Key};
use crate::{config, replication, stats};

/// RL.INSPECT's fields of a state.
pub type Details = Vec<(&'static str, Detail)>;

/// The module's commands: one per kind, then the several-limit ones, then
/// those about one key.
pub fn commands() -> Vec<CommandSpec> {
    let mut commands: Vec<CommandSpec> = KINDS.iter().map(|k| (k.command)()).collect();
    commands.push(several::allow_command());
    commands.push(several::peek_command());
    commands.push(keys::inspect_command());
    commands.push(keys::refund_command());
    commands.push(keys::release_command());
    commands.push(keys::state_command());
    commands
}

/// Registers every command; with `cell-alias`, RL.THROTTLE again under
/// redis-cell's name.
pub fn register(api: &server::Api, ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    for spec in commands() {
        crate::registration::register(api, ctx, &spec)?;
    }
    if config::cell_alias() {
        crate::registration::register(api, ctx, &limiter::cell_alias()).map_err(|_| {
            "CL.THROTTLE already exists (is redis-cell loaded too?): unload it, or load ratelimit without cell-alias".to_string()
        })?;
    }
    Ok(())
}

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
    const NOT_STORED: Error = Error::Internal(
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
enum Outcome {
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
    fn of(at: Option<Nanos>, limited: bool) -> Outcome {
        match (at, limited) {
            (Some(_), _) => Outcome::FromMasterOrAof,
            (None, false) => Outcome::Allowed,
            (None, true) => Outcome::Limited,
        }
    }
}

/// The state for a key that holds no `L`: the empty one, or, when it holds
/// another type (`other`), one adopted from it (`Limiter::adopt`, only
/// under `cell-alias`), else WRONGTYPE.
fn new_state<L: Kind>(key: &Key, other: bool) -> Result<L, Error> {
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
fn store<L: Kind>(key: &mut Key, state: L) -> Result<(), Error> {
    match crate::types::store(key, state) {
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
fn recorded(key: &Key, reset_at: Nanos) {
    expire_later(key, reset_at, true);
    key.signal_modified();
}

/// A limited request under parameters that keep the recorded units longer
/// than the key's expiry (a longer window): the key must live that long,
/// or its units would be forgotten early. True when the expiry moved. A
/// key adopted from another type's state is never in this case: it records
/// nothing when limited.
fn extend_expiry(key: &Key, reset_at: Nanos) -> bool {
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
fn delete(key: &mut Key) -> Result<(), Error> {
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
fn propagate<'a>(ctx: Ctx<'a>, name: &str, argv: Argv<'a>, at: Option<Nanos>, now: Nanos) {
    if at.is_none() && replication::needs_clock() {
        let at = i64::try_from(now.get()).unwrap_or(i64::MAX);
        // The canonical name, also for a call through the CL.THROTTLE alias.
        let mut buf = [0u8; 32];
        match command_name(name, &mut buf) {
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
fn propagate_change<'a, L: Kind>(
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
        replicate_state::<L>(ctx, key);
    }
}

/// `RL.STATE key payload PXAT ms` for the state `key` holds, or `DEL key`
/// when it holds none.
fn replicate_state<'a, L: Kind>(ctx: Ctx<'a>, key: &mut Key<'a>) {
    let expire = key.expire_ms();
    let payload = match key.value(L::module_type()) {
        server::Held::Ours(state) => crate::types::tagged(state),
        _ => return ctx.replicate_delete(key),
    };
    ctx.replicate_state(key, &payload, expire);
}

/// `RL.<name>` as a C string in `buf`, without allocating; `None` if too
/// long.
fn command_name<'b>(name: &str, buf: &'b mut [u8; 32]) -> Option<&'b CStr> {
    let len = 3 + name.len();
    if len >= buf.len() {
        return None;
    }
    buf[..3].copy_from_slice(b"RL.");
    buf[3..len].copy_from_slice(name.as_bytes());
    buf[len] = 0;
    CStr::from_bytes_with_nul(&buf[..=len]).ok()
}

fn unix_ms_ceil(at: Nanos) -> i64 {
    i64::try_from(at.get().div_ceil(1_000_000)).unwrap_or(i64::MAX)
}

/// The bytes of the arguments from `from` on, into `words` (which the
/// caller keeps on its stack: returning the collection by value would copy
/// all of its capacity), without allocating; more than `N` of them is an
/// error naming the first one too many (so the collection never overflows).
#[inline]
fn arg_bytes<'a, const N: usize>(
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

/// The entry of every command: makes the typed context and arguments,
/// replies with the error if there is one, counts the call in INFO row
/// `stat`, and catches a panic (a bug; none is reachable by design) so that
/// it cannot abort the server.
fn entry(
    raw_ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    stat: Option<stats::Stat>,
    f: impl for<'a> FnOnce(Ctx<'a>, Argv<'a>) -> Result<Outcome, Error>,
) -> c_int {
    // Commands are registered only after the API table resolved.
    let Some(api) = server::api() else {
        return raw::REDISMODULE_ERR as c_int;
    };
    // SAFETY: the server's arguments to a command handler.
    unsafe {
        server::with_command(raw_ctx, argv, argc, api, |ctx, argv| {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let result = f(ctx, argv);
                if let Some(stat) = stat {
                    match result {
                        Ok(Outcome::Allowed) => stats::record(stat, stats::Call::Allowed),
                        Ok(Outcome::Limited) => stats::record(stat, stats::Call::Limited),
                        Ok(Outcome::Answered) => stats::record(stat, stats::Call::Answered),
                        Ok(Outcome::FromMasterOrAof | Outcome::KeyPositions) => {}
                        Err(_) => stats::record(stat, stats::Call::Error),
                    }
                }
                if let Err(e) = result {
                    e.reply(ctx);
                }
            }));
            if outcome.is_err() {
                ctx.reply_error(c"ERR internal error in the ratelimit module, see the server log");
            }
        })
    };
    raw::REDISMODULE_OK as c_int
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::slice::SliceWindow;
    use crate::core::slide::SlideLog;
    use crate::core::throttle::Tat;

    #[test]
    fn command_names_become_c_strings_without_allocating() {
        let mut buf = [0u8; 32];
        assert_eq!(command_name("THROTTLE", &mut buf), Some(c"RL.THROTTLE"));
        let mut buf = [0u8; 32];
        assert_eq!(command_name(&"X".repeat(29), &mut buf), None);
    }

    #[test]
    fn every_kind_has_its_command_first() {
        let names: Vec<String> = commands().into_iter().map(|c| c.name).collect();
        let mut expected: Vec<String> = KINDS.iter().map(|k| format!("RL.{}", k.name)).collect();
        expected.extend(
            [
                "RL.ALLOW",
                "RL.PEEK",
                "RL.INSPECT",
                "RL.REFUND",
                "RL.RELEASE",
                "RL.STATE",
            ]
            .map(String::from),
        );
        assert_eq!(names, expected);
    }

    #[test]
    fn every_limiter_row_describes_its_parameters() {
        let throttle = limiter_command::<Tat>();
        assert_eq!(throttle.name, "RL.THROTTLE");
        assert_eq!(throttle.arity, -5);
        let names: Vec<&str> = throttle.args.iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            ["key", "max_burst", "count", "period", "quantity", "ms"]
        );
        assert_eq!(limiter_command::<SliceWindow>().arity, -5);
        assert_eq!(limiter_command::<SlideLog>().arity, -4);
    }
}
