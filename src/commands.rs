//! The commands. Each one: parse, open the key, read the clock once, decide,
//! store, expire, replicate, reply.
//!
//! What reaches the replicas and the AOF is never the command as the client
//! sent it but its canonical time-carrying form,
//! `RL.X <arguments as sent> AT <master's clock in ns>`, so that a
//! replica, an AOF replay and a restart reach the master's exact state.
//! Only allowed requests that take units change anything; only they are
//! replicated.

use std::ffi::{c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use redis_module::raw;

use crate::args::{self, ArgError, Request};
use crate::core::gcra::{self, GcraParams, Tat};
use crate::core::slice::{SliceParams, SliceUpdate, SliceWindow};
use crate::core::slide::{SlideLog, SlideParams, SlideUpdate};
use crate::core::{Decision, Nanos};
use crate::server::{self, Ctx, Held, Key, RString};
use crate::stats::{self, Command};
use crate::types;
use crate::types::Stored;
use crate::{clock, config, replication};

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
            Error::Arity => server::reply_wrong_arity(ctx),
            Error::Arg(e) => server::reply_error(ctx, &e.message()),
            Error::WrongType => server::reply_error(
                ctx,
                c"WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            Error::Store => server::reply_error(ctx, c"ERR the server refused to store the value"),
            Error::BadState => {
                server::reply_error(ctx, c"ERR RL.STATE payload is not a valid limiter state")
            }
            Error::StateFromClient => server::reply_error(
                ctx,
                c"ERR RL.STATE is accepted only from the master or the AOF",
            ),
        }
    }
}

/// One algorithm as the commands see it: its state type, parameters and
/// the update an allowed request makes.
trait Limiter: Stored {
    type Params;
    type Update;
    const NAME: &'static CStr;
    fn decide(
        state: Option<&Self>,
        now: Nanos,
        params: &Self::Params,
        quantity: u64,
    ) -> (Decision, Option<Self::Update>);
    /// Applies an update that `decide` produced on this state.
    fn apply(&mut self, update: Self::Update);
    /// The state of a new key, from the update of its first request.
    fn fresh(update: Self::Update) -> Self;
    /// A state read from a key of another type that this command adopts;
    /// by default none.
    fn foreign(_key: &Key) -> Option<Self> {
        None
    }
}

impl Limiter for Tat {
    type Params = GcraParams;
    type Update = Tat;
    const NAME: &'static CStr = c"RL.THROTTLE";
    fn decide(
        state: Option<&Tat>,
        now: Nanos,
        params: &GcraParams,
        quantity: u64,
    ) -> (Decision, Option<Tat>) {
        gcra::decide(state, now, params, quantity)
    }
    fn apply(&mut self, update: Tat) {
        *self = update;
    }
    fn fresh(update: Tat) -> Tat {
        update
    }
    /// With the `cell-alias` option, a string holding redis-cell's state (the
    /// TAT in nanoseconds since the epoch) is taken over, so that switching
    /// from redis-cell keeps every limit.
    fn foreign(key: &Key) -> Option<Tat> {
        if !config::cell_alias() {
            return None;
        }
        let text = std::str::from_utf8(key.string()?).ok()?;
        Some(Tat::from_nanos(Nanos::new(text.parse::<u64>().ok()?)))
    }
}

impl Limiter for SlideLog {
    type Params = SlideParams;
    type Update = SlideUpdate;
    const NAME: &'static CStr = c"RL.SLIDE";
    fn decide(
        state: Option<&SlideLog>,
        now: Nanos,
        params: &SlideParams,
        quantity: u64,
    ) -> (Decision, Option<SlideUpdate>) {
        state
            .unwrap_or(&SlideLog::new())
            .decide(now, params, quantity)
    }
    fn apply(&mut self, update: SlideUpdate) {
        SlideLog::apply(self, update);
    }
    fn fresh(update: SlideUpdate) -> SlideLog {
        applied_to_empty(update)
    }
}

impl Limiter for SliceWindow {
    type Params = SliceParams;
    type Update = SliceUpdate;
    const NAME: &'static CStr = c"RL.SLICE";
    fn decide(
        state: Option<&SliceWindow>,
        now: Nanos,
        params: &SliceParams,
        quantity: u64,
    ) -> (Decision, Option<SliceUpdate>) {
        state
            .unwrap_or(&SliceWindow::new())
            .decide(now, params, quantity)
    }
    fn apply(&mut self, update: SliceUpdate) {
        SliceWindow::apply(self, update);
    }
    fn fresh(update: SliceUpdate) -> SliceWindow {
        applied_to_empty(update)
    }
}

/// A new key's state: its first update applied to an empty state.
fn applied_to_empty<L: Limiter + Default>(update: L::Update) -> L {
    let mut state = L::default();
    state.apply(update);
    state
}

/// `RL.THROTTLE key max_burst count period [quantity] [MS]`
pub extern "C" fn rl_throttle(ctx: Ctx, argv: *mut RString, argc: c_int) -> c_int {
    entry(ctx, argv, argc, Some(Command::Throttle), |ctx, argv| {
        let request = args::throttle(&numbers(argv, 5)?, || trusted(ctx))?;
        limit::<Tat>(ctx, argv, request)
    })
}

/// `RL.SLIDE key limit window [quantity] [MS]`
pub extern "C" fn rl_slide(ctx: Ctx, argv: *mut RString, argc: c_int) -> c_int {
    entry(ctx, argv, argc, Some(Command::Slide), |ctx, argv| {
        let request = args::slide(&numbers(argv, 4)?, || trusted(ctx), config::bounds())?;
        limit::<SlideLog>(ctx, argv, request)
    })
}

/// `RL.SLICE key limit window slices [quantity] [MS]`
pub extern "C" fn rl_slice(ctx: Ctx, argv: *mut RString, argc: c_int) -> c_int {
    entry(ctx, argv, argc, Some(Command::Slice), |ctx, argv| {
        let request = args::slice(&numbers(argv, 5)?, || trusted(ctx), config::bounds())?;
        limit::<SliceWindow>(ctx, argv, request)
    })
}

/// Whether the running command came from the master or the AOF.
fn trusted(ctx: Ctx) -> bool {
    server::from_master_or_aof(server::context_flags(ctx))
}

/// `RL.STATE key payload`: sets a key to a limiter state, as AOF rewrite
/// writes it. Only the master and the AOF may send it.
pub extern "C" fn rl_state(ctx: Ctx, argv: *mut RString, argc: c_int) -> c_int {
    entry(ctx, argv, argc, None, |ctx, argv| {
        if argv.len() != 3 {
            return Err(Error::Arity);
        }
        if !trusted(ctx) {
            return Err(Error::StateFromClient);
        }
        let payload = server::bytes(argv[2]);
        let key = Key::open(ctx, argv[1], true);
        match payload.split_first() {
            Some((&Tat::TAG, body)) => restore::<Tat>(&key, body),
            Some((&SlideLog::TAG, body)) => restore::<SlideLog>(&key, body),
            Some((&SliceWindow::TAG, body)) => restore::<SliceWindow>(&key, body),
            _ => Err(Error::BadState),
        }?;
        key.signal_modified();
        server::reply_ok(ctx);
        Ok(Outcome::Replayed)
    })
}

fn restore<T: Stored>(key: &Key, body: &[u8]) -> Result<(), Error> {
    let state = T::decode(body).map_err(|_| Error::BadState)?;
    if types::store(key, state) {
        Ok(())
    } else {
        Err(Error::Store)
    }
}

/// How a command ended, for the INFO counters.
enum Outcome {
    Allowed,
    Limited,
    /// Sent by the master or read from the AOF: not a client call.
    Replayed,
}

/// What the key holds, as the command sees it.
enum Current<L> {
    Missing,
    /// The key's value, owned by the server.
    Ours(NonNull<L>),
    /// A state taken over from a key of another type (see `foreign`).
    Adopted(L),
}

/// The flow every limiter command shares.
fn limit<L: Limiter>(
    ctx: Ctx,
    argv: &[RString],
    request: Request<L::Params>,
) -> Result<Outcome, Error> {
    // Only a request that takes units can change the key: `decide` returns
    // an update only then, so that is when the key is opened for writing.
    let key = Key::open(ctx, argv[1], request.quantity > 0);
    let mut current = match key.held::<L>(L::raw_type()) {
        Held::Nothing => Current::Missing,
        Held::Ours(ptr) => Current::Ours(ptr),
        Held::Other => Current::Adopted(L::foreign(&key).ok_or(Error::WrongType)?),
    };
    let now = request.at.unwrap_or_else(clock::now);
    let state = match &current {
        Current::Missing => None,
        // SAFETY: the key's live value; nothing else touches it while this
        // command runs.
        Current::Ours(ptr) => Some(unsafe { ptr.as_ref() }),
        Current::Adopted(state) => Some(state),
    };
    let (decision, update) = L::decide(state, now, &request.params, request.quantity);
    if let Some(update) = update {
        let stored = match current {
            // SAFETY: as above; the shared borrow ended with `decide`.
            Current::Ours(ref mut ptr) => {
                unsafe { ptr.as_mut() }.apply(update);
                true
            }
            Current::Missing => types::store(&key, L::fresh(update)),
            Current::Adopted(mut state) => {
                state.apply(update);
                types::store(&key, state)
            }
        };
        if !stored {
            return Err(Error::Store);
        }
        key.expire_at_ms(unix_ms_ceil(decision.reset_at));
        key.signal_modified();
        propagate(ctx, L::NAME, argv, &request, now);
    } else if decision.limited {
        // Limited under parameters that keep the recorded units longer
        // than the key's expiry (a longer window): the key must live that
        // long, or its units would be forgotten early. Peeks touch nothing.
        if let (Current::Ours(_), true) = (&current, request.quantity > 0) {
            let reset_ms = unix_ms_ceil(decision.reset_at);
            if key.expire_ms().is_some_and(|expire| expire < reset_ms) {
                key.expire_at_ms(reset_ms);
                propagate(ctx, L::NAME, argv, &request, now);
            }
        }
        key.notify(c"rl.limited");
    }
    server::reply_five(ctx, decision.reply(now, request.unit));
    Ok(match (request.at, decision.limited) {
        (Some(_), _) => Outcome::Replayed,
        (None, false) => Outcome::Allowed,
        (None, true) => Outcome::Limited,
    })
}

/// Sends the change the running command made to the replicas and the AOF.
/// A command from the master or the AOF already carries its clock; when
/// nothing replays the stream, the clock is not needed (see `replication`).
fn propagate<P>(ctx: Ctx, name: &CStr, argv: &[RString], request: &Request<P>, now: Nanos) {
    if request.at.is_none() && replication::needs_clock(server::context_flags(ctx)) {
        let at = i64::try_from(now.get()).unwrap_or(i64::MAX);
        server::replicate_with_time(ctx, name, &argv[1..], at);
    } else {
        server::replicate_verbatim(ctx);
    }
}

fn unix_ms_ceil(at: Nanos) -> i64 {
    i64::try_from(at.get().div_ceil(1_000_000)).unwrap_or(i64::MAX)
}

/// The most arguments after the key that any valid call has, and then some.
const MAX_NUMBERS: usize = 8;

/// The arguments after the key, as bytes, without allocating. `min_argc`
/// counts the command name and the key.
fn numbers<'a>(argv: &[RString], min_argc: usize) -> Result<ArgsBuf<'a>, Error> {
    if argv.len() < min_argc {
        return Err(Error::Arity);
    }
    let rest = &argv[2..];
    if rest.len() > MAX_NUMBERS {
        return Err(Error::Arg(ArgError::Unknown(args::printable(
            server::bytes(rest[MAX_NUMBERS]),
        ))));
    }
    let mut buf = ArgsBuf {
        items: [&[]; MAX_NUMBERS],
        len: rest.len(),
    };
    for (slot, &arg) in buf.items.iter_mut().zip(rest) {
        *slot = server::bytes(arg);
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

/// The entry of every command: turns argv into a slice, replies with the
/// error if there is one, and catches a panic (a bug; none is reachable by
/// design) so that it cannot abort the server.
fn entry(
    ctx: Ctx,
    argv: *mut RString,
    argc: c_int,
    stat: Option<Command>,
    f: impl FnOnce(Ctx, &[RString]) -> Result<Outcome, Error>,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let argv: &[RString] = match usize::try_from(argc) {
            // SAFETY: the server passes `argc` valid arguments at `argv`.
            Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
            _ => &[],
        };
        let result = f(ctx, argv);
        if let Some(stat) = stat {
            match result {
                Ok(Outcome::Allowed) => stats::record(stat, Some(false)),
                Ok(Outcome::Limited) => stats::record(stat, Some(true)),
                Ok(Outcome::Replayed) => {}
                Err(_) => stats::record(stat, None),
            }
        }
        if let Err(e) = result {
            e.reply(ctx);
        }
    }));
    if outcome.is_err() {
        server::reply_error(
            ctx,
            c"ERR internal error in the ratelimit module, see the server log",
        );
    }
    raw::REDISMODULE_OK as c_int
}

/// Registration data: name, handler, flags, arity, summary, arguments.
pub struct CommandSpec {
    pub name: &'static CStr,
    pub handler: extern "C" fn(Ctx, *mut RString, c_int) -> c_int,
    pub flags: &'static CStr,
    /// ACL categories, set where the server lets modules set them (7.2+).
    pub acl: &'static CStr,
    pub arity: c_int,
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// Arguments after the key: name, optional, token (a pure token when set).
    pub args: &'static [(&'static CStr, bool, Option<&'static CStr>)],
}

pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: c"RL.THROTTLE",
        handler: rl_throttle,
        flags: c"write deny-oom fast",
        acl: c"write fast",
        arity: -5,
        summary: c"GCRA rate limiter, compatible with redis-cell's CL.THROTTLE. Replies limited, limit, remaining, retry_after, reset_after.",
        complexity: c"O(1)",
        args: &[
            (c"max_burst", false, None),
            (c"count", false, None),
            (c"period", false, None),
            (c"quantity", true, None),
            (c"ms", true, Some(c"MS")),
        ],
    },
    CommandSpec {
        name: c"RL.SLIDE",
        handler: rl_slide,
        flags: c"write deny-oom fast",
        acl: c"write fast",
        arity: -4,
        summary: c"Exact sliding-log rate limiter. Replies limited, limit, remaining, retry_after, reset_after.",
        complexity: c"O(1) amortized for quantity 1; O(quantity) to record a larger quantity",
        args: &[
            (c"limit", false, None),
            (c"window", false, None),
            (c"quantity", true, None),
            (c"ms", true, Some(c"MS")),
        ],
    },
    CommandSpec {
        name: c"RL.SLICE",
        handler: rl_slice,
        flags: c"write deny-oom fast",
        acl: c"write fast",
        arity: -5,
        summary: c"Sliding window of time slices that never over-admits. Replies limited, limit, remaining, retry_after, reset_after.",
        complexity: c"O(1) amortized",
        args: &[
            (c"limit", false, None),
            (c"window", false, None),
            (c"slices", false, None),
            (c"quantity", true, None),
            (c"ms", true, Some(c"MS")),
        ],
    },
    CommandSpec {
        name: c"RL.STATE",
        handler: rl_state,
        flags: c"write",
        acl: c"write",
        arity: 3,
        summary: c"Internal: sets a key to a limiter state, as AOF rewrite writes it. Accepted only from the master or the AOF.",
        complexity: c"O(N) in the size of the state",
        args: &[(c"payload", false, None)],
    },
];

/// Registers every command with its key position and its COMMAND DOCS info.
pub fn register(ctx: Ctx) -> Result<(), CString> {
    for spec in COMMANDS {
        register_one(ctx, spec)?;
    }
    if config::cell_alias() {
        let alias = CommandSpec {
            name: c"CL.THROTTLE",
            summary: c"RL.THROTTLE under redis-cell's name (the cell-alias option): same arguments, same reply.",
            ..COMMANDS[0]
        };
        register_one(ctx, &alias).map_err(|_| {
            c"CL.THROTTLE already exists (is redis-cell loaded too?): unload it, or load ratelimit without cell-alias".to_owned()
        })?;
    }
    Ok(())
}

fn register_one(ctx: Ctx, spec: &CommandSpec) -> Result<(), CString> {
    let fail = |what: &str| {
        CString::new(format!("{what} {}", spec.name.to_string_lossy())).unwrap_or_default()
    };
    // SAFETY: registration calls during OnLoad with the load context; every
    // string is a static C string; the info structs live across the call,
    // which copies them.
    unsafe {
        let create =
            crate::api!(RedisModule_CreateCommand).ok_or_else(|| fail("no CreateCommand for"))?;
        if create(
            ctx,
            spec.name.as_ptr(),
            Some(spec.handler),
            spec.flags.as_ptr(),
            1,
            1,
            1,
        ) != raw::REDISMODULE_OK as c_int
        {
            return Err(fail("could not create"));
        }
        let command = crate::api!(RedisModule_GetCommand)
            .map_or(std::ptr::null_mut(), |f| f(ctx, spec.name.as_ptr()));
        let set_info =
            crate::api!(RedisModule_SetCommandInfo).ok_or_else(|| fail("no SetCommandInfo for"))?;
        if command.is_null() {
            return Err(fail("could not find"));
        }

        let mut key_specs: [raw::RedisModuleCommandKeySpec; 2] = std::mem::zeroed();
        key_specs[0].flags = u64::from(
            raw::REDISMODULE_CMD_KEY_RW
                | raw::REDISMODULE_CMD_KEY_ACCESS
                | raw::REDISMODULE_CMD_KEY_UPDATE,
        );
        key_specs[0].begin_search_type =
            raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        key_specs[0].bs.index.pos = 1;
        key_specs[0].find_keys_type =
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
        key_specs[0].fk.range.lastkey = 0;
        key_specs[0].fk.range.keystep = 1;
        key_specs[0].fk.range.limit = 0;

        let mut args: Vec<raw::RedisModuleCommandArg> = Vec::with_capacity(spec.args.len() + 2);
        let mut key_arg: raw::RedisModuleCommandArg = std::mem::zeroed();
        key_arg.name = c"key".as_ptr();
        key_arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY;
        key_arg.key_spec_index = 0;
        args.push(key_arg);
        for &(name, optional, token) in spec.args {
            let mut arg: raw::RedisModuleCommandArg = std::mem::zeroed();
            arg.name = name.as_ptr();
            arg.key_spec_index = -1;
            match token {
                Some(token) => {
                    arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN;
                    arg.token = token.as_ptr();
                }
                None if name == c"payload" => {
                    arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING
                }
                None => arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            }
            if optional {
                arg.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
            }
            args.push(arg);
        }
        args.push(std::mem::zeroed());

        let version = raw::RedisModuleCommandInfoVersion {
            version: 1,
            sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
            sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
            sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
        };
        let info = raw::RedisModuleCommandInfo {
            version: &version,
            summary: spec.summary.as_ptr(),
            complexity: spec.complexity.as_ptr(),
            since: c"0.1.0".as_ptr(),
            history: std::ptr::null_mut(),
            tips: std::ptr::null(),
            arity: spec.arity,
            key_specs: key_specs.as_mut_ptr(),
            args: args.as_mut_ptr(),
        };
        if set_info(command, &info) != raw::REDISMODULE_OK as c_int {
            return Err(fail("could not set the info of"));
        }
        // Redis 7.0 has no API for module ACL categories; 7.2+ and Valkey do.
        if let Some(set_acl) = crate::api!(RedisModule_SetCommandACLCategories) {
            if set_acl(command, spec.acl.as_ptr()) != raw::REDISMODULE_OK as c_int {
                return Err(fail("could not set the ACL categories of"));
            }
        }
    }
    Ok(())
}
