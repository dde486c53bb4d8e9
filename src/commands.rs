//! The commands, and the table that registers them.
//!
//! Every limiter command runs the one flow of [`limit`]: parse, open the
//! key, read the clock once, decide, store, expire, propagate, reply. It is
//! generic over the algorithm (`core::Limiter` plus its stored type), so the
//! commands differ only by their row in [`ALGORITHMS`].
//!
//! What reaches the replicas and the AOF is never the command as the client
//! sent it but its canonical time-carrying form,
//! `RL.X <arguments as sent> AT <master's clock in ns>`, so that a
//! replica, an AOF replay and a restart reach the master's exact state. A
//! request changes the key when it is allowed and takes units; a limited
//! request changes it only when it runs under a longer window than the key
//! was written with, which moves the expiry out (see `limit`). Only those
//! changes are propagated; peeks (quantity 0) change nothing.

use std::ffi::{c_int, CStr, CString};
use std::mem::MaybeUninit;

use arrayvec::ArrayVec;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::args::{self, ArgError, Request};
use crate::core::gcra::Tat;
use crate::core::slice::SliceWindow;
use crate::core::slide::SlideLog;
use crate::core::{Decision, Detail, Nanos};
use crate::registration::{Access, ArgSpec, ArgType, CommandSpec, Keys};
use crate::server::{self, Args, Ctx, Held, Key};
use crate::stats;
use crate::types::{self, Stored};
use crate::{clock, config, replication};

/// The algorithms: one row each. Their commands, the state payloads of
/// `RL.STATE` and the spec words of RL.ALLOW / RL.PEEK all come from here.
pub const ALGORITHMS: &[Algorithm] = &[
    Algorithm::of::<Tat>(
        "GCRA rate limiter, compatible with redis-cell's CL.THROTTLE. Replies limited, limit, remaining, retry_after, reset_after.",
        "O(1)",
    ),
    Algorithm::of::<SlideLog>(
        "Exact sliding-log rate limiter. Replies limited, limit, remaining, retry_after, reset_after.",
        "O(log N) at worst in the N units held; O(1) amortized per unit recorded",
    ),
    Algorithm::of::<SliceWindow>(
        "Sliding window of time slices that never over-admits. Replies limited, limit, remaining, retry_after, reset_after.",
        "O(1) amortized",
    ),
];

/// The module's commands: one per algorithm, then the several-limit ones,
/// then the internal one.
pub fn commands() -> Vec<CommandSpec> {
    let mut commands: Vec<CommandSpec> = ALGORITHMS.iter().map(|a| (a.command)(a)).collect();
    commands.push(several_command(
        "RL.ALLOW",
        rl_allow,
        "write deny-oom fast",
        "write fast",
        Access::ReadUpdate,
        "Several limits, one atomic all-or-nothing decision. Replies the binding limit's five fields, its index, and every limit's five fields.",
    ));
    commands.push(several_command(
        "RL.PEEK",
        rl_peek,
        "readonly fast",
        "read fast",
        Access::ReadOnly,
        "What RL.ALLOW with the same arguments would answer now, changing nothing. Works on replicas and in read-only contexts.",
    ));
    commands.push(inspect_command());
    commands.push(refund_command());
    commands.push(state_command());
    commands
}

/// One algorithm, type-erased for the tables: what the commands that name
/// algorithms by word, or persisted states by tag, need of it.
pub struct Algorithm {
    pub syntax: args::SpecSyntax,
    tag: u8,
    summary: &'static str,
    complexity: &'static str,
    command: fn(&Algorithm) -> CommandSpec,
    restore: fn(&mut Key, u8, &[u8]) -> Result<(), Error>,
    legacy_tags: &'static [u8],
    decide: DecideKey,
    extend: for<'a> fn(&mut Key<'a>, &[u64], Nanos) -> Result<bool, Error>,
    inspect: for<'a> fn(&mut Key<'a>, Nanos) -> Option<Details>,
    refund: for<'a> fn(&mut Key<'a>, &[u64], Nanos, u64) -> Result<Refunded, Error>,
}

/// Decides one limit of a several-limit call (see `decide_key`).
type DecideKey =
    for<'a> fn(&mut Key<'a>, &[u64], Nanos, u64, Option<&mut Staged>) -> Result<Decision, Error>;
/// RL.INSPECT's fields of a state.
type Details = Vec<(&'static str, Detail)>;
/// A refund's answer (what a peek gives right after) and whether the key
/// changed.
type Refunded = (Decision, bool);

impl Algorithm {
    const fn of<L: Stored>(summary: &'static str, complexity: &'static str) -> Algorithm {
        Algorithm {
            syntax: args::SpecSyntax::of::<L>(),
            tag: L::TAG,
            summary,
            complexity,
            command: |a| limiter_command::<L>(a.summary, a.complexity),
            restore: restore::<L>,
            legacy_tags: L::LEGACY_TAGS,
            decide: decide_key::<L>,
            extend: extend_key::<L>,
            inspect: inspect_key::<L>,
            refund: refund_key::<L>,
        }
    }
}

/// `RL.<NAME> key <the algorithm's numbers> [quantity] [MS]`
fn limiter_command<L: Stored>(summary: &'static str, complexity: &'static str) -> CommandSpec {
    let mut args = vec![ArgSpec::new("key", ArgType::Key)];
    args.extend(L::ARGS.iter().map(|arg| ArgSpec::integer(arg.name)));
    args.push(ArgSpec::integer("quantity").optional());
    args.push(ArgSpec::flag("ms", "MS").optional());
    args.extend(options_doc(L::OPTIONS));
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

/// A `spec` argument as COMMAND DOCS shows it: one of the algorithms,
/// each a block of its word, numbers and options.
fn spec_doc() -> ArgSpec {
    ArgSpec::new(
        "spec",
        ArgType::OneOf(
            ALGORITHMS
                .iter()
                .map(|a| {
                    let mut block = vec![ArgSpec::flag("algorithm", a.syntax.name)];
                    block.extend(a.syntax.args.iter().map(|arg| ArgSpec::integer(arg.name)));
                    block.extend(options_doc(a.syntax.options));
                    ArgSpec::new(a.syntax.name, ArgType::Block(block))
                })
                .collect(),
        ),
    )
}

/// An algorithm's options as COMMAND DOCS shows them: an optional integer
/// introduced by its keyword.
fn options_doc(options: &'static [crate::core::Arg]) -> impl Iterator<Item = ArgSpec> {
    options.iter().map(|o| {
        let name: &'static str = o.name;
        ArgSpec::integer(name).token(name).optional()
    })
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
            ..limiter_command::<Tat>("", "O(1)")
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
                    recorded(&key, decision.reset_at);
                    propagate(ctx, L::NAME, args, request.at, now);
                }
                None => {
                    if decision.limited && takes && extend_expiry(&key, decision.reset_at) {
                        propagate(ctx, L::NAME, args, request.at, now);
                    }
                }
            }
            decision
        }
        held => {
            let other = matches!(held, Held::Other);
            let mut state = new_state::<L>(&key, other)?;
            let (decision, update) = state.decide(now, &request.params, request.quantity);
            if let Some(update) = update {
                state.apply(update);
                store(&mut key, state)?;
                recorded(&key, decision.reset_at);
                propagate(ctx, L::NAME, args, request.at, now);
            }
            decision
        }
    };
    if decision.limited {
        key.notify(c"rl.limited");
    }
    ctx.reply_integers(&decision.reply(now, request.unit));
    Ok(Outcome::of(request.at, decision.limited))
}

/// The state for a key that holds no `L`: the empty one, or, when it holds
/// another type (`other`), one adopted from it (`Stored::adopt`).
fn new_state<L: Stored>(key: &Key, other: bool) -> Result<L, Error> {
    if other {
        L::adopt(key).ok_or(Error::WrongType)
    } else {
        Ok(L::default())
    }
}

fn store<L: Stored>(key: &mut Key, state: L) -> Result<(), Error> {
    if types::store(key, state) {
        Ok(())
    } else {
        Err(Error::Store)
    }
}

/// After an allowed request recorded its units (or a refund gave some
/// back): WATCH hears of the change, and the key's expiry moves out to the
/// moment its state is back to empty under these parameters, when that is
/// later. It never moves earlier: units recorded under a longer window are
/// still counted by that window, so the key must outlive them. A key
/// without an expiry (a new one) gets one.
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

/// `RL.ALLOW` / `RL.PEEK` `numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS]`
fn several_command(
    name: &'static str,
    handler: crate::registration::Handler,
    flags: &'static str,
    acl: &'static str,
    access: Access,
    summary: &'static str,
) -> CommandSpec {
    let spec = spec_doc().multiple();
    CommandSpec {
        name: name.to_string(),
        handler,
        flags,
        acl,
        arity: -6,
        summary,
        complexity: "O(N) in the number of limits, each as its single command",
        since: "0.2.0",
        keys: Keys::Counted { pos: 1, access },
        args: vec![
            ArgSpec::integer("numkeys"),
            ArgSpec::new("key", ArgType::Key).multiple(),
            spec,
            ArgSpec::integer("quantity").token("QUANTITY").optional(),
            ArgSpec::flag("ms", "MS").optional(),
        ],
    }
}

/// `RL.ALLOW numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS]`
extern "C" fn rl_allow(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    entry(ctx, argv, argc, Some(stats::Row::Allow), |ctx, args| {
        several(ctx, args, true)
    })
}

/// `RL.PEEK numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS]`
extern "C" fn rl_peek(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    entry(ctx, argv, argc, Some(stats::Row::Peek), |ctx, args| {
        several(ctx, args, false)
    })
}

/// The flow of RL.ALLOW (`write`) and RL.PEEK: decide every limit at one
/// instant; when all allow and the request takes units, record it on every
/// key; otherwise record nothing (a refused RL.ALLOW still moves an expiry
/// out, per key, as the single commands do). One reply, one propagation.
fn several<'a>(ctx: Ctx<'a>, args: Args<'a>, write: bool) -> Result<Outcome, Error> {
    if ctx.is_keys_position_request() {
        // Cluster routing and COMMAND GETKEYS: name the keys, nothing else.
        if let Ok(count) = args::numkeys(args.bytes(1)) {
            (2..(2 + count).min(args.len())).for_each(|pos| ctx.key_at(pos));
        }
        return Ok(Outcome::KeyPositions);
    }
    if args.len() < 6 {
        return Err(Error::Arity);
    }
    // Every argument's bytes, read once.
    let argv = arg_bytes::<{ MAX_SEVERAL_ARGS - 1 }>(args, 1)?;
    let mut specs = ArrayVec::new();
    let options = args::several(
        &argv[..],
        &SPEC_SYNTAX,
        || ctx.is_from_master_or_aof(),
        config::bounds(),
        &mut specs,
    )?;
    let takes = write && options.quantity > 0;
    let now = options.at.unwrap_or_else(clock::now);

    // Open and decide every limit, staging what each would record.
    let mut limits: ArrayVec<Limit<'a>, { args::MAX_KEYS }> = ArrayVec::new();
    let mut decisions: ArrayVec<Decision, { args::MAX_KEYS }> = ArrayVec::new();
    for (i, spec) in specs.iter().enumerate() {
        let algorithm = ALGORITHMS.get(spec.algorithm).ok_or(Error::Store)?;
        let mut key = ctx.open_key(args, 2 + i, takes);
        let mut staged = Staged::EMPTY;
        let stage = takes.then_some(&mut staged);
        let decision = (algorithm.decide)(&mut key, spec.values(), now, options.quantity, stage)?;
        decisions.push(decision);
        limits.push(Limit { key, staged });
    }
    let allowed = decisions.iter().all(|d| !d.limited);

    if takes {
        let mut changed = false;
        for ((limit, spec), decision) in limits.iter_mut().zip(&specs).zip(&decisions) {
            let key = &mut limit.key;
            if allowed {
                limit.staged.commit(key)?;
                recorded(key, decision.reset_at);
                changed = true;
            } else {
                let algorithm = ALGORITHMS.get(spec.algorithm).ok_or(Error::Store)?;
                changed |= (algorithm.extend)(key, spec.values(), now)?;
                if decision.limited {
                    key.notify(c"rl.limited");
                }
            }
        }
        if changed {
            propagate(ctx, "ALLOW", args, options.at, now);
        }
    }
    let decisions = &decisions[..];

    // There is at least one limit: numkeys is 1 or more.
    let binding = crate::core::binding(decisions).ok_or(Error::Store)?;
    ctx.reply_array(7);
    for field in decisions[binding].reply(now, options.unit) {
        ctx.reply_integer(field);
    }
    ctx.reply_integer(binding as i64 + 1);
    ctx.reply_array(decisions.len());
    for decision in decisions {
        ctx.reply_integers(&decision.reply(now, options.unit));
    }
    Ok(Outcome::of(options.at, !allowed))
}

/// The most arguments a several-limit call can have: the name, numkeys,
/// 16 keys, 16 specs of at most 5 words, QUANTITY q, MS, AT ns.
const MAX_SEVERAL_ARGS: usize = 2 + args::MAX_KEYS * 6 + 5;

/// The most arguments RL.REFUND can have after its key: a spec of at most
/// a word, four numbers and two options with their values, the quantity,
/// MS, AT ns.
const MAX_REFUND_ARGS: usize = 1 + 4 + 4 + 1 + 1 + 2;

/// The spec words, from the table of algorithms.
const SPEC_SYNTAX: [args::SpecSyntax; ALGORITHMS.len()] = {
    let mut out = [ALGORITHMS[0].syntax; ALGORITHMS.len()];
    let mut i = 0;
    while i < ALGORITHMS.len() {
        out[i] = ALGORITHMS[i].syntax;
        i += 1;
    }
    out
};

/// One limit of a several-limit call: its open key, and what it would
/// record.
struct Limit<'a> {
    key: Key<'a>,
    staged: Staged,
}

/// Decides one limit of a several-limit call, changing nothing; stages the
/// update the limit would record when the call is allowed.
fn decide_key<L: Stored>(
    key: &mut Key,
    values: &[u64],
    now: Nanos,
    quantity: u64,
    stage: Option<&mut Staged>,
) -> Result<Decision, Error> {
    let params = L::params(values).map_err(|_| Error::Store)?;
    let (decision, update, state) = match key.value(L::module_type()) {
        Held::Ours(state) => {
            let (decision, update) = state.decide(now, &params, quantity);
            (decision, update, std::ptr::from_mut(state))
        }
        held => {
            let other = matches!(held, Held::Other);
            let state = new_state::<L>(key, other)?;
            let (decision, update) = state.decide(now, &params, quantity);
            (decision, update, std::ptr::null_mut())
        }
    };
    if let (Some(stage), Some(update)) = (stage, update) {
        stage.put::<L>(update, state);
    }
    Ok(decision)
}

/// The room a staged update has: the largest `Limiter::Update` (SLICE's,
/// which may carry a rebucketed state) must fit, which `Staged::put`
/// checks at compile time.
const STAGE_WORDS: usize = 5;

/// An update decided for one limit of a several-limit call and not yet
/// recorded: the algorithm's `Update`, kept in place without allocating,
/// with the state it is for and the functions that record or drop it.
/// Recording happens only when every limit allowed; otherwise the update
/// is dropped.
struct Staged {
    slot: MaybeUninit<[u64; STAGE_WORDS]>,
    /// The key's state the update was decided on, or null when the key
    /// held none (the update then goes to a new state). It stays valid
    /// while the key is open: no other limit of the call can name the same
    /// key, so nothing replaces the value before `commit`.
    state: *mut u8,
    /// Records the update: set, with `discard`, by `put` for the type in
    /// `slot`; `None` when nothing is staged.
    commit: Option<CommitStaged>,
    discard: unsafe fn(*mut u8),
}

/// Records a staged update (`commit_staged` for its type): the key, the
/// state, the slot.
type CommitStaged = unsafe fn(&mut Key, *mut u8, *mut u8) -> Result<(), Error>;

impl Staged {
    const EMPTY: Staged = Staged {
        slot: MaybeUninit::uninit(),
        state: std::ptr::null_mut(),
        commit: None,
        discard: discard_nothing,
    };

    fn put<L: Stored>(&mut self, update: L::Update, state: *mut L) {
        const {
            assert!(std::mem::size_of::<L::Update>() <= std::mem::size_of::<[u64; STAGE_WORDS]>());
            assert!(std::mem::align_of::<L::Update>() <= std::mem::align_of::<u64>());
        }
        self.clear();
        // SAFETY: the slot is large and aligned enough (checked above) and
        // holds nothing now.
        unsafe { self.slot.as_mut_ptr().cast::<L::Update>().write(update) };
        self.state = state.cast();
        self.commit = Some(commit_staged::<L>);
        self.discard = discard_staged::<L>;
    }

    /// Records the staged update on `key`, if there is one.
    fn commit(&mut self, key: &mut Key) -> Result<(), Error> {
        let Some(commit) = self.commit.take() else {
            return Ok(());
        };
        // SAFETY: `commit` was set by `put`, which wrote an update of the
        // type `commit` reads and the state it is for; taking `commit`
        // first hands the update over once.
        unsafe { commit(key, self.state, self.slot.as_mut_ptr().cast()) }
    }

    fn clear(&mut self) {
        if self.commit.take().is_some() {
            // SAFETY: as in `commit`; the update is dropped once.
            unsafe { (self.discard)(self.slot.as_mut_ptr().cast()) };
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.clear();
    }
}

unsafe fn discard_nothing(_: *mut u8) {}

/// # Safety
/// `slot` holds an `L::Update` written by `Staged::put`, read here once;
/// `state` is null or the `L` of `key` it was decided on, still held.
unsafe fn commit_staged<L: Stored>(
    key: &mut Key,
    state: *mut u8,
    slot: *mut u8,
) -> Result<(), Error> {
    // SAFETY: the caller's promise.
    let update = unsafe { slot.cast::<L::Update>().read() };
    // SAFETY: as above: the key's own state, which nothing else borrows.
    match unsafe { state.cast::<L>().as_mut() } {
        Some(state) => {
            state.apply(update);
            Ok(())
        }
        None => {
            let other = !key.is_empty();
            let mut state = new_state::<L>(key, other)?;
            state.apply(update);
            store(key, state)
        }
    }
}

/// # Safety
/// As `commit_staged`: the update is dropped once.
unsafe fn discard_staged<L: Stored>(slot: *mut u8) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::drop_in_place(slot.cast::<L::Update>()) };
}

/// In a refused several-limit call, the expiry rule of a limited request
/// for one key: true when its expiry moved out.
fn extend_key<L: Stored>(key: &mut Key, values: &[u64], now: Nanos) -> Result<bool, Error> {
    let params = L::params(values).map_err(|_| Error::Store)?;
    let reset_at = match key.value(L::module_type()) {
        Held::Ours(state) => state.decide(now, &params, 0).0.reset_at,
        _ => return Ok(false),
    };
    Ok(extend_expiry(key, reset_at))
}

/// `RL.INSPECT key`
fn inspect_command() -> CommandSpec {
    CommandSpec {
        name: "RL.INSPECT".to_string(),
        handler: rl_inspect,
        flags: "readonly",
        acl: "read",
        arity: 2,
        summary: "What a key of this module holds, in a user's words: type, ttl, memory and the state. Nil for a missing key.",
        complexity: "O(1), or O(slices) for an RL.SLICE key",
        since: "0.2.0",
        keys: Keys::One {
            pos: 1,
            access: Access::ReadOnly,
        },
        args: vec![ArgSpec::new("key", ArgType::Key)],
    }
}

/// `RL.REFUND key spec quantity [MS]`
fn refund_command() -> CommandSpec {
    let spec = spec_doc();
    CommandSpec {
        name: "RL.REFUND".to_string(),
        handler: rl_refund,
        flags: "write fast",
        acl: "write fast",
        arity: -6,
        summary: "Gives back up to quantity units the key recorded (the newest first). Replies the five fields a peek gives right after.",
        complexity: "O(1) amortized, O(slices) at worst for an RL.SLICE key",
        since: "0.2.0",
        keys: Keys::One {
            pos: 1,
            access: Access::ReadUpdate,
        },
        args: vec![
            ArgSpec::new("key", ArgType::Key),
            spec,
            ArgSpec::integer("quantity"),
            ArgSpec::flag("ms", "MS").optional(),
        ],
    }
}

/// `RL.INSPECT key`: field-value pairs (a map under RESP3), nil for a
/// missing key, WRONGTYPE for a key this module did not write.
extern "C" fn rl_inspect(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    entry(ctx, argv, argc, Some(stats::Row::Inspect), |ctx, args| {
        if args.len() != 2 {
            return Err(Error::Arity);
        }
        let now = clock::now();
        let mut key = ctx.open_key(args, 1, false);
        if key.is_empty() {
            ctx.reply_null();
            return Ok(Outcome::Answered);
        }
        let (name, details) = ALGORITHMS
            .iter()
            .find_map(|a| (a.inspect)(&mut key, now).map(|d| (a.syntax.name, d)))
            .ok_or(Error::WrongType)?;
        let ttl = key
            .expire_ms()
            .map_or(-1, |at| (at - unix_ms_ceil(now)).max(0));
        drop(key);
        let memory = ctx.memory_usage(args, 1).unwrap_or(-1);
        let kind = CString::new(name.to_ascii_lowercase()).unwrap_or_default();
        ctx.reply_map(3 + details.len());
        ctx.reply_simple(c"type");
        ctx.reply_simple(&kind);
        ctx.reply_simple(c"ttl");
        ctx.reply_integer(ttl);
        ctx.reply_simple(c"memory");
        ctx.reply_integer(memory);
        for (field, detail) in details {
            let field = CString::new(field).unwrap_or_default();
            ctx.reply_simple(&field);
            match detail {
                Detail::Integer(n) => ctx.reply_integer(n),
                Detail::Integers(list) => ctx.reply_integers(&list),
            }
        }
        Ok(Outcome::Answered)
    })
}

/// `RL.REFUND key spec quantity [MS]`
extern "C" fn rl_refund(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    entry(ctx, argv, argc, Some(stats::Row::Refund), |ctx, args| {
        if args.len() < 5 {
            return Err(Error::Arity);
        }
        let argv = arg_bytes::<MAX_REFUND_ARGS>(args, 2)?;
        let (spec, tail) = args::refund(
            &argv[..],
            &SPEC_SYNTAX,
            || ctx.is_from_master_or_aof(),
            config::bounds(),
        )?;
        let algorithm = ALGORITHMS.get(spec.algorithm).ok_or(Error::Store)?;
        let now = tail.at.unwrap_or_else(clock::now);
        let mut key = ctx.open_key(args, 1, tail.quantity > 0);
        let (decision, changed) = (algorithm.refund)(&mut key, spec.values(), now, tail.quantity)?;
        if changed {
            propagate(ctx, "REFUND", args, tail.at, now);
        }
        ctx.reply_integers(&decision.reply(now, tail.unit));
        Ok(Outcome::of(tail.at, decision.limited))
    })
}

/// RL.INSPECT's details of a key holding `L`'s state; `None` for another
/// type.
fn inspect_key<L: Stored>(key: &mut Key, now: Nanos) -> Option<Details> {
    match key.value(L::module_type()) {
        Held::Ours(state) => Some(state.inspect(now)),
        _ => None,
    }
}

/// Refunds on a key holding `L`'s state, and answers what a peek answers
/// right after; true when the key changed. A key left with nothing counted
/// is deleted; a missing key stays missing.
fn refund_key<L: Stored>(
    key: &mut Key,
    values: &[u64],
    now: Nanos,
    quantity: u64,
) -> Result<(Decision, bool), Error> {
    let params = L::params(values).map_err(|_| Error::Store)?;
    let state = match key.value(L::module_type()) {
        Held::Ours(state) => state,
        Held::Nothing => return Ok((L::default().decide(now, &params, 0).0, false)),
        Held::Other => return Err(Error::WrongType),
    };
    if quantity == 0 {
        return Ok((state.decide(now, &params, 0).0, false));
    }
    state.refund(now, &params, quantity);
    let decision = state.decide(now, &params, 0).0;
    if decision.reset_at <= now {
        if !key.delete() {
            return Err(Error::Store);
        }
        key.signal_modified();
    } else {
        recorded(key, decision.reset_at);
    }
    Ok((decision, true))
}

/// Sends the change the running command made to the replicas and the AOF,
/// as `RL.<name> <arguments after the name> AT <now>`. A command from the
/// master or the AOF already carries its clock (`at`); when nothing replays
/// the stream, the clock is not needed (see `replication`).
fn propagate<'a>(ctx: Ctx<'a>, name: &str, args: Args<'a>, at: Option<Nanos>, now: Nanos) {
    if at.is_none() && replication::needs_clock() {
        let at = i64::try_from(now.get()).unwrap_or(i64::MAX);
        // The canonical name, also for a call through the CL.THROTTLE alias.
        let mut buf = [0u8; 32];
        match command_name(name, &mut buf) {
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
        let (&tag, body) = payload.split_first().ok_or(Error::BadState)?;
        let algorithm = ALGORITHMS
            .iter()
            .find(|a| a.tag == tag || a.legacy_tags.contains(&tag))
            .ok_or(Error::BadState)?;
        (algorithm.restore)(&mut key, tag, body)?;
        key.signal_modified();
        ctx.reply_ok();
        Ok(Outcome::FromMasterOrAof)
    })
}

fn restore<T: Stored>(key: &mut Key, tag: u8, body: &[u8]) -> Result<(), Error> {
    let state = T::decode_tagged(tag, body).map_err(|_| Error::BadState)?;
    store(key, state)
}

/// The most arguments after the key that any valid call has, and then some.
const MAX_NUMBERS: usize = 8;

/// The arguments after the key, as bytes, without allocating. `required`
/// is the number of the algorithm's numbers.
fn numbers<'a>(args: Args<'a>, required: usize) -> Result<ArrayVec<&'a [u8], MAX_NUMBERS>, Error> {
    if args.len() < 2 + required {
        return Err(Error::Arity);
    }
    arg_bytes(args, 2)
}

/// The bytes of the arguments from `from` on, without allocating; more
/// than `N` of them is an error naming the first one too many (so the
/// collection below never overflows).
fn arg_bytes<'a, const N: usize>(
    args: Args<'a>,
    from: usize,
) -> Result<ArrayVec<&'a [u8], N>, Error> {
    if args.len() > from + N {
        let extra = args::printable(args.bytes(from + N));
        return Err(Error::Arg(ArgError::Unknown(extra)));
    }
    Ok((from..args.len()).map(|i| args.bytes(i)).collect())
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
        assert_eq!(
            names,
            [
                "RL.THROTTLE",
                "RL.SLIDE",
                "RL.SLICE",
                "RL.ALLOW",
                "RL.PEEK",
                "RL.INSPECT",
                "RL.REFUND",
                "RL.STATE"
            ]
        );
        let throttle = limiter_command::<Tat>("", "");
        assert_eq!(throttle.name, "RL.THROTTLE");
        assert_eq!(throttle.arity, -5);
        let names: Vec<&str> = throttle.args.iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            ["key", "max_burst", "count", "period", "quantity", "ms"]
        );
        assert_eq!(limiter_command::<SliceWindow>("", "").arity, -5);
        assert_eq!(limiter_command::<SlideLog>("", "").arity, -4);
    }
}
