//! The commands, and the table that registers them.
//!
//! Every limiter command runs the one flow of [`limit`]: parse, open the
//! key, read the clock once, decide, store, expire, propagate, reply. It is
//! generic over the algorithm (`core::Limiter` plus its stored type), so the
//! commands differ only by their row in [`commands`].
//!
//! What reaches the replicas and the AOF is never the command as the client
//! sent it but its canonical time-carrying form,
//! `RL.X <arguments as sent> AT <master's clock in ns>`, so that a
//! replica, an AOF replay and a restart reach the master's exact state. A
//! request changes the key when it is allowed and takes units; a limited
//! request changes it only when it runs under a longer window than the key
//! was written with, which moves the expiry out (see `limit`). Only those
//! changes are propagated; peeks (quantity 0) change nothing.

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::args::{self, ArgError, Request};
use crate::core::gcra::Tat;
use crate::core::slice::SliceWindow;
use crate::core::slide::SlideLog;
use crate::core::{Limiter, Nanos};
use crate::registration::{Access, ArgSpec, ArgType, CommandSpec, Keys};
use crate::server::{self, Args, Ctx, Held, Key};
use crate::stats;
use crate::types::{self, Stored};
use crate::{clock, config, replication};

/// The module's commands: one row per limiter, then the internal ones.
pub fn commands() -> Vec<CommandSpec> {
    vec![
        limiter::<Tat>(
            "GCRA rate limiter, compatible with redis-cell's CL.THROTTLE. Replies limited, limit, remaining, retry_after, reset_after.",
            "O(1)",
        ),
        limiter::<SlideLog>(
            "Exact sliding-log rate limiter. Replies limited, limit, remaining, retry_after, reset_after.",
            "O(log N) at worst in the N units held; O(1) amortized per unit recorded",
        ),
        limiter::<SliceWindow>(
            "Sliding window of time slices that never over-admits. Replies limited, limit, remaining, retry_after, reset_after.",
            "O(1) amortized",
        ),
        state_command(),
    ]
}

/// `RL.<NAME> key <the algorithm's numbers> [quantity] [MS]`
fn limiter<L: Stored>(summary: &'static str, complexity: &'static str) -> CommandSpec {
    let mut args = vec![ArgSpec::new("key", ArgType::Key)];
    args.extend(L::ARGS.iter().map(|arg| ArgSpec::integer(arg.name)));
    args.push(ArgSpec::integer("quantity").optional());
    args.push(ArgSpec::flag("ms", "MS").optional());
    CommandSpec {
        name: format!("RL.{}", L::NAME),
        handler: rl_limiter::<L>,
        flags: "write deny-oom fast",
        acl: "write fast",
        arity: -(2 + L::ARGS.len() as c_int),
        summary,
        complexity,
        since: "0.1.0",
        keys: Keys::One {
            pos: 1,
            access: Access::ReadUpdate,
        },
        args,
    }
}

/// `RL.STATE key payload`, the form AOF rewrite writes.
fn state_command() -> CommandSpec {
    CommandSpec {
        name: "RL.STATE".to_string(),
        handler: rl_state,
        flags: "write",
        acl: "write",
        arity: 3,
        summary: "Internal: sets a key to a limiter state, as AOF rewrite writes it. Accepted only from the master or the AOF.",
        complexity: "O(N) in the size of the state",
        since: "0.1.0",
        keys: Keys::One {
            pos: 1,
            access: Access::Overwrite,
        },
        args: vec![
            ArgSpec::new("key", ArgType::Key),
            ArgSpec::new("payload", ArgType::String),
        ],
    }
}

/// Registers every command; with `cell-alias`, RL.THROTTLE again under
/// redis-cell's name.
pub fn register(api: &server::Api, ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    for spec in commands() {
        crate::registration::register(api, ctx, &spec)?;
    }
    if config::cell_alias() {
        let alias = CommandSpec {
            name: "CL.THROTTLE".to_string(),
            summary: "RL.THROTTLE under redis-cell's name (the cell-alias option): same arguments, same reply.",
            ..limiter::<Tat>("", "O(1)")
        };
        crate::registration::register(api, ctx, &alias).map_err(|_| {
            "CL.THROTTLE already exists (is redis-cell loaded too?): unload it, or load ratelimit without cell-alias".to_string()
        })?;
    }
    Ok(())
}

/// Why a command failed; `reply` sends the error.
enum Error {
    Arity,
    Arg(ArgError),
    WrongType,
    /// The server refused to store a value; never expected.
    Store,
    /// A payload of `RL.STATE` that does not decode.
    BadState,
    StateFromClient,
}

impl From<ArgError> for Error {
    fn from(e: ArgError) -> Error {
        Error::Arg(e)
    }
}

impl Error {
    fn reply(self, ctx: Ctx) {
        match self {
            Error::Arity => ctx.reply_wrong_arity(),
            Error::Arg(e) => ctx.reply_error(&e.message()),
            Error::WrongType => ctx
                .reply_error(c"WRONGTYPE Operation against a key holding the wrong kind of value"),
            Error::Store => ctx.reply_error(c"ERR the server refused to store the value"),
            Error::BadState => {
                ctx.reply_error(c"ERR RL.STATE payload is not a valid limiter state")
            }
            Error::StateFromClient => {
                ctx.reply_error(c"ERR RL.STATE is accepted only from the master or the AOF")
            }
        }
    }
}

/// How a command ended, for the INFO counters.
enum Outcome {
    Allowed,
    Limited,
    /// Sent by the master or read from the AOF: not a client call.
    FromMasterOrAof,
}

/// `RL.<NAME> key <numbers> [quantity] [MS]`: the handler of every limiter.
extern "C" fn rl_limiter<L: Stored>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    entry(ctx, argv, argc, Some(L::STAT), |ctx, args| {
        let numbers = numbers(args, L::ARGS.len())?;
        let request =
            args::limiter::<L>(&numbers, || ctx.is_from_master_or_aof(), config::bounds())?;
        limit::<L>(ctx, args, request)
    })
}

/// The flow every limiter command shares.
fn limit<'a, L: Stored>(
    ctx: Ctx<'a>,
    args: Args<'a>,
    request: Request<L::Params>,
) -> Result<Outcome, Error> {
    // Only a request that takes units can change the key.
    let takes = request.quantity > 0;
    let mut key = ctx.open_key(args, 1, takes);
    let now = request.at.unwrap_or_else(clock::now);
    let decision = match key.value(L::module_type()) {
        Held::Ours(state) => {
            let (decision, update) = state.decide(now, &request.params, request.quantity);
            match update {
                Some(update) => {
                    state.apply(update);
                    recorded::<L>(ctx, &key, args, &request, now, decision.reset_at);
                }
                None if decision.limited && takes => {
                    extend_expiry::<L>(ctx, &key, args, &request, now, decision.reset_at);
                }
                None => {}
            }
            decision
        }
        Held::Nothing => {
            let mut state = L::default();
            let (decision, update) = state.decide(now, &request.params, request.quantity);
            if let Some(update) = update {
                state.apply(update);
                store(&mut key, state)?;
                recorded::<L>(ctx, &key, args, &request, now, decision.reset_at);
            }
            decision
        }
        Held::Other => {
            let mut state = L::adopt(&key).ok_or(Error::WrongType)?;
            let (decision, update) = state.decide(now, &request.params, request.quantity);
            if let Some(update) = update {
                state.apply(update);
                store(&mut key, state)?;
                recorded::<L>(ctx, &key, args, &request, now, decision.reset_at);
            }
            decision
        }
    };
    if decision.limited {
        key.notify(c"rl.limited");
    }
    ctx.reply_integers(&decision.reply(now, request.unit));
    Ok(match (request.at, decision.limited) {
        (Some(_), _) => Outcome::FromMasterOrAof,
        (None, false) => Outcome::Allowed,
        (None, true) => Outcome::Limited,
    })
}

fn store<L: Stored>(key: &mut Key, state: L) -> Result<(), Error> {
    if types::store(key, state) {
        Ok(())
    } else {
        Err(Error::Store)
    }
}

/// After an allowed request recorded its units: the key expires when its
/// state is back to empty; the change goes to WATCH, replicas and the AOF.
fn recorded<'a, L: Limiter>(
    ctx: Ctx<'a>,
    key: &Key<'a>,
    args: Args<'a>,
    request: &Request<L::Params>,
    now: Nanos,
    reset_at: Nanos,
) {
    key.expire_at_ms(unix_ms_ceil(reset_at));
    key.signal_modified();
    propagate::<L>(ctx, args, request, now);
}

/// A limited request under parameters that keep the recorded units longer
/// than the key's expiry (a longer window): the key must live that long,
/// or its units would be forgotten early. A key created by another type's
/// state (adopted) is never in this case: it records nothing when limited.
fn extend_expiry<'a, L: Stored>(
    ctx: Ctx<'a>,
    key: &Key<'a>,
    args: Args<'a>,
    request: &Request<L::Params>,
    now: Nanos,
    reset_at: Nanos,
) {
    let reset_ms = unix_ms_ceil(reset_at);
    if key.expire_ms().is_some_and(|expire| expire < reset_ms) {
        key.expire_at_ms(reset_ms);
        key.signal_modified();
        propagate::<L>(ctx, args, request, now);
    }
}

/// Sends the change the running command made to the replicas and the AOF.
/// A command from the master or the AOF already carries its clock; when
/// nothing replays the stream, the clock is not needed (see `replication`).
fn propagate<'a, L: Limiter>(
    ctx: Ctx<'a>,
    args: Args<'a>,
    request: &Request<L::Params>,
    now: Nanos,
) {
    if request.at.is_none() && replication::needs_clock(ctx.flags()) {
        let at = i64::try_from(now.get()).unwrap_or(i64::MAX);
        // The canonical name, also for a call through the CL.THROTTLE alias.
        let mut buf = [0u8; 32];
        match command_name(L::NAME, &mut buf) {
            Some(name) => ctx.replicate_with_time(name, args.skip(1), at),
            None => ctx.replicate_verbatim(),
        }
    } else {
        ctx.replicate_verbatim();
    }
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

/// `RL.STATE key payload`: sets a key to a limiter state, as AOF rewrite
/// writes it. Only the master and the AOF may send it.
extern "C" fn rl_state(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    entry(ctx, argv, argc, None, |ctx, args| {
        if args.len() != 3 {
            return Err(Error::Arity);
        }
        if !ctx.is_from_master_or_aof() {
            return Err(Error::StateFromClient);
        }
        let payload = args.bytes(2);
        let mut key = ctx.open_key(args, 1, true);
        match payload.split_first() {
            Some((&Tat::TAG, body)) => restore::<Tat>(&mut key, body),
            Some((&SlideLog::TAG, body)) => restore::<SlideLog>(&mut key, body),
            Some((&SliceWindow::TAG, body)) => restore::<SliceWindow>(&mut key, body),
            _ => Err(Error::BadState),
        }?;
        key.signal_modified();
        ctx.reply_ok();
        Ok(Outcome::FromMasterOrAof)
    })
}

fn restore<T: Stored>(key: &mut Key, body: &[u8]) -> Result<(), Error> {
    let state = T::decode(body).map_err(|_| Error::BadState)?;
    store(key, state)
}

/// The most arguments after the key that any valid call has, and then some.
const MAX_NUMBERS: usize = 8;

/// The arguments after the key, as bytes, without allocating. `required`
/// is the number of the algorithm's numbers.
fn numbers<'a>(args: Args<'a>, required: usize) -> Result<ArgsBuf<'a>, Error> {
    if args.len() < 2 + required {
        return Err(Error::Arity);
    }
    let rest = args.skip(2);
    if rest.len() > MAX_NUMBERS {
        return Err(Error::Arg(ArgError::Unknown(args::printable(
            rest.bytes(MAX_NUMBERS),
        ))));
    }
    let mut buf = ArgsBuf {
        items: [&[]; MAX_NUMBERS],
        len: rest.len(),
    };
    for (i, slot) in buf.items.iter_mut().take(rest.len()).enumerate() {
        *slot = rest.bytes(i);
    }
    Ok(buf)
}

/// Borrowed argument bytes, valid while the command runs.
struct ArgsBuf<'a> {
    items: [&'a [u8]; MAX_NUMBERS],
    len: usize,
}

impl<'a> std::ops::Deref for ArgsBuf<'a> {
    type Target = [&'a [u8]];
    fn deref(&self) -> &Self::Target {
        &self.items[..self.len]
    }
}

/// The entry of every command: makes the typed context and arguments,
/// replies with the error if there is one, counts the call, and catches a
/// panic (a bug; none is reachable by design) so that it cannot abort the
/// server.
fn entry(
    raw_ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    stat: Option<stats::Row>,
    f: impl for<'a> FnOnce(Ctx<'a>, Args<'a>) -> Result<Outcome, Error>,
) -> c_int {
    // Commands are registered only after the API table resolved.
    let Some(api) = server::api() else {
        return raw::REDISMODULE_ERR as c_int;
    };
    // SAFETY: the server's arguments to a command handler.
    unsafe {
        server::with_command(raw_ctx, argv, argc, api, |ctx, args| {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let result = f(ctx, args);
                if let Some(stat) = stat {
                    match result {
                        Ok(Outcome::Allowed) => stats::record(stat, Some(false)),
                        Ok(Outcome::Limited) => stats::record(stat, Some(true)),
                        Ok(Outcome::FromMasterOrAof) => {}
                        Err(_) => stats::record(stat, None),
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

    #[test]
    fn command_names_become_c_strings_without_allocating() {
        let mut buf = [0u8; 32];
        assert_eq!(command_name("THROTTLE", &mut buf), Some(c"RL.THROTTLE"));
        let mut buf = [0u8; 32];
        assert_eq!(command_name(&"X".repeat(29), &mut buf), None);
    }

    #[test]
    fn every_limiter_row_describes_its_numbers() {
        let names: Vec<String> = commands().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["RL.THROTTLE", "RL.SLIDE", "RL.SLICE", "RL.STATE"]);
        let throttle = limiter::<Tat>("", "");
        assert_eq!(throttle.name, "RL.THROTTLE");
        assert_eq!(throttle.arity, -5);
        let names: Vec<&str> = throttle.args.iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            ["key", "max_burst", "count", "period", "quantity", "ms"]
        );
        assert_eq!(limiter::<SliceWindow>("", "").arity, -5);
        assert_eq!(limiter::<SlideLog>("", "").arity, -4);
    }
}
