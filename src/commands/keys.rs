//! The commands about one key of any kind: RL.INSPECT, RL.REFUND,
//! RL.CHARGE, and the internal RL.STATE that AOF rewrite writes.

use std::ffi::CString;

use arrayvec::ArrayVec;

use super::flow::{
    arg_bytes, delete, entry, propagate, propagate_change, recorded, store, unix_ms_ceil, Details,
    Error, Outcome,
};
use super::info::Stat;
use super::several::refund_spec_doc;
use crate::args::ArgError;
use crate::core::lease::LeaseState;
use crate::core::{block, Decision, Detail, Nanos};
use crate::kinds::{Listed, Visit, VisitKind, KINDS};
use crate::server::{
    handler, Access, ArgType, Argv, Command, CommandDef, Ctx, DocArg, Held, Key, Keys, Stored,
};
use crate::{args, clock, config};

/// `<prefix>.<name>`.
fn name(name: &str) -> String {
    format!("{}.{name}", config::prefix())
}

/// `RL.INSPECT key`
pub fn inspect_command() -> CommandDef {
    CommandDef {
        name: name("INSPECT"),
        handler: handler::<Inspect>,
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
        args: vec![DocArg::new("key", ArgType::Key)],
    }
}

/// `RL.REFUND key spec quantity [MS]`
pub fn refund_command() -> CommandDef {
    CommandDef {
        name: name("REFUND"),
        handler: handler::<Refund>,
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
            DocArg::new("key", ArgType::Key),
            refund_spec_doc(),
            DocArg::integer("quantity"),
            DocArg::flag("ms", "MS").optional(),
        ],
    }
}

/// `RL.CHARGE key spec quantity [MS]`
pub fn charge_command() -> CommandDef {
    CommandDef {
        name: name("CHARGE"),
        handler: handler::<Charge>,
        flags: "write deny-oom fast",
        acl: "write fast",
        arity: -6,
        summary: "Records quantity units unconditionally (a cost known afterwards), even past the limit: a key in debt limits every request until it is paid back. Replies the five fields a peek gives right after.",
        complexity: "O(1) amortized, O(slices) at worst for an RL.SLICE key",
        since: "0.4.0",
        keys: Keys::One {
            pos: 1,
            access: Access::ReadUpdate,
        },
        args: vec![
            DocArg::new("key", ArgType::Key),
            refund_spec_doc(),
            DocArg::integer("quantity"),
            DocArg::flag("ms", "MS").optional(),
        ],
    }
}

/// `RL.RELEASE key lease_id`
pub fn release_command() -> CommandDef {
    CommandDef {
        name: name("RELEASE"),
        handler: handler::<Release>,
        flags: "write fast",
        acl: "write fast",
        arity: -3,
        summary: "Releases the named lease of an RL.LEASE key. Replies 1 when a lease was released, 0 when the key holds no unexpired lease with that id.",
        complexity: "O(log N) in the N leases held",
        since: "0.3.0",
        keys: Keys::One {
            pos: 1,
            access: Access::ReadUpdate,
        },
        args: vec![
            DocArg::new("key", ArgType::Key),
            DocArg::new("lease_id", ArgType::String),
        ],
    }
}

/// `RL.STATE key payload [PXAT ms]`: the form AOF rewrite writes (without
/// PXAT), and the one that carries a state-replicating kind's change to
/// replicas and the AOF (with it).
pub fn state_command() -> CommandDef {
    CommandDef {
        name: name("STATE"),
        handler: handler::<State>,
        flags: "write",
        acl: "write",
        arity: -3,
        summary: "Internal: sets a key to a limiter state (and its expiry), as AOF rewrite and the master write it. Accepted only from the master or the AOF.",
        complexity: "O(N) in the size of the state",
        since: "0.1.0",
        keys: Keys::One {
            pos: 1,
            access: Access::Overwrite,
        },
        args: vec![
            DocArg::new("key", ArgType::Key),
            DocArg::new("payload", ArgType::String),
            DocArg::integer("unix-time-milliseconds")
                .token("PXAT")
                .optional(),
        ],
    }
}

/// `RL.INSPECT key`: field-value pairs (a map under RESP3), nil for a
/// missing key, WRONGTYPE for a key this module did not write.
struct Inspect;

impl Command for Inspect {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, Some(Stat::INSPECT), rl_inspect_call);
    }
}

fn rl_inspect_call<'a>(ctx: Ctx<'a>, argv: Argv<'a>) -> Result<Outcome, Error> {
    if argv.len() != 2 {
        return Err(Error::Arity);
    }
    let now = clock::now();
    let mut key = ctx.open_key(argv, 1, false);
    if key.is_empty() {
        ctx.reply_null();
        return Ok(Outcome::Answered);
    }
    let (name, details) = KINDS
        .iter()
        .find_map(|k| {
            k.visit(InspectKey { key: &mut key, now })
                .map(|d| (k.name, d))
        })
        .ok_or(Error::WrongType)?;
    let ttl = key
        .expire_ms()
        .map_or(-1, |at| (at - unix_ms_ceil(now)).max(0));
    drop(key);
    let memory = ctx.memory_usage(argv, 1).unwrap_or(-1);
    let kind = CString::new(name.to_ascii_lowercase()).unwrap_or_default();
    ctx.reply_map(3 + details.len());
    ctx.reply_simple(c"type");
    ctx.reply_simple(&kind);
    ctx.reply_simple(c"ttl");
    ctx.reply_integer(ttl);
    ctx.reply_simple(c"memory");
    ctx.reply_integer(memory);
    for (field, detail) in &details {
        let field = CString::new(*field).unwrap_or_default();
        ctx.reply_simple(&field);
        reply_detail(ctx, detail);
    }
    Ok(Outcome::Answered)
}

fn reply_detail(ctx: Ctx, detail: &Detail) {
    match detail {
        Detail::Integer(n) => ctx.reply_integer(*n),
        Detail::Integers(list) => ctx.reply_integers(list),
        Detail::Bytes(bytes) => ctx.reply_bytes(bytes),
        Detail::List(list) => {
            ctx.reply_array(list.len());
            list.iter().for_each(|d| reply_detail(ctx, d));
        }
    }
}

/// RL.INSPECT's details of a key holding the kind's state; `None` for
/// another type.
struct InspectKey<'k, 'a> {
    key: &'k mut Key<'a>,
    now: Nanos,
}

impl VisitKind for InspectKey<'_, '_> {
    type Out = Option<Details>;

    fn visit<L: Listed>(self) -> Option<Details> {
        match self.key.value(L::module_type()) {
            Held::Ours(state) => Some(block::inspect(state, self.now)),
            _ => None,
        }
    }
}

/// The most arguments RL.REFUND can have after its key: a spec of at most
/// a word, four parameters and two options with their values, the
/// quantity, MS, AT ns.
const MAX_REFUND_ARGS: usize = 1 + 4 + 4 + 1 + 1 + 2;

/// `RL.REFUND key spec quantity [MS]`
struct Refund;

impl Command for Refund {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, Some(Stat::REFUND), rl_refund_call);
    }
}

fn rl_refund_call<'a>(ctx: Ctx<'a>, argv: Argv<'a>) -> Result<Outcome, Error> {
    adjust_call(ctx, argv, Adjust::Refund)
}

/// `RL.CHARGE key spec quantity [MS]`
struct Charge;

impl Command for Charge {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, Some(Stat::CHARGE), rl_charge_call);
    }
}

fn rl_charge_call<'a>(ctx: Ctx<'a>, argv: Argv<'a>) -> Result<Outcome, Error> {
    adjust_call(ctx, argv, Adjust::Charge)
}

/// What RL.REFUND and RL.CHARGE do to one key: give units back, or record
/// them unconditionally. Both answer what a peek answers right after.
#[derive(Clone, Copy)]
enum Adjust {
    Refund,
    Charge,
}

/// The flow of RL.REFUND and RL.CHARGE: `key spec quantity [MS]`.
fn adjust_call<'a>(ctx: Ctx<'a>, argv: Argv<'a>, op: Adjust) -> Result<Outcome, Error> {
    if argv.len() < 5 {
        return Err(Error::Arity);
    }
    let mut words = ArrayVec::<&[u8], MAX_REFUND_ARGS>::new();
    arg_bytes(argv, 2, &mut words)?;
    let trusted = || ctx.is_from_master_or_aof();
    let (spec, tail) = match op {
        Adjust::Refund => args::refund(&words, trusted, config::bounds())?,
        Adjust::Charge => args::charge(&words, trusted, config::bounds())?,
    };
    let now = tail.at.unwrap_or_else(clock::now);
    let mut key = ctx.open_key(argv, 1, tail.quantity > 0);
    let decision = spec.visit(AdjustKey {
        ctx,
        argv,
        key: &mut key,
        at: tail.at,
        now,
        quantity: tail.quantity,
        op,
    })?;
    ctx.reply_integers(&decision.reply(now, tail.unit));
    Ok(Outcome::of(tail.at, decision.limited))
}

/// Adjusts a key holding `L`'s state, propagates the change, and answers
/// what a peek answers right after. A refund never creates a key (a
/// missing key stays missing); a charge creates a missing one, and a
/// refused charge changes nothing. A key left with nothing counted is
/// deleted.
struct AdjustKey<'k, 'a> {
    ctx: Ctx<'a>,
    argv: Argv<'a>,
    key: &'k mut Key<'a>,
    at: Option<Nanos>,
    now: Nanos,
    quantity: u64,
    op: Adjust,
}

impl Visit for AdjustKey<'_, '_> {
    type Out = Result<Decision, Error>;

    fn visit<L: Listed>(self, params: &L::Params) -> Self::Out {
        let (key, now, quantity) = (self.key, self.now, self.quantity);
        // Both keep the key's block (BLOCK), and answer a peek's reply,
        // the block included: a blocked key is never deleted.
        let charged = |state: &mut L| {
            block::charge(state, now, params, quantity)
                .map_err(|e| Error::Arg(ArgError::Charge(e.0)))
        };
        let (decision, name) = match (key.value(L::module_type()), self.op) {
            (Held::Other, _) => return Err(Error::WrongType),
            (Held::Nothing, Adjust::Refund) => return Ok(L::default().decide(now, params, 0).0),
            (Held::Ours(state), Adjust::Refund) => {
                if quantity == 0 {
                    return Ok(block::peek(state, now, params));
                }
                block::refund(state, now, params, quantity);
                (block::peek(state, now, params), "REFUND")
            }
            (Held::Ours(state), Adjust::Charge) => {
                charged(state)?;
                (block::peek(state, now, params), "CHARGE")
            }
            (Held::Nothing, Adjust::Charge) => {
                let mut state = L::default();
                charged(&mut state)?;
                let decision = state.decide(now, params, 0).0;
                store(key, state)?;
                (decision, "CHARGE")
            }
        };
        if decision.reset_at <= now {
            delete(key)?;
        } else {
            recorded(key, decision.reset_at);
        }
        propagate_change::<L>(self.ctx, key, name, self.argv, self.at, now);
        Ok(decision)
    }
}

/// `RL.STATE key payload [PXAT ms]`: sets a key to a limiter state, and
/// its expiry to `ms` when given. Only the master and the AOF may send it.
struct State;

impl Command for State {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, None, rl_state_call);
    }
}

fn rl_state_call<'a>(ctx: Ctx<'a>, argv: Argv<'a>) -> Result<Outcome, Error> {
    if argv.len() != 3 && argv.len() != 5 {
        return Err(Error::Arity);
    }
    if !ctx.is_from_master_or_aof() {
        return Err(Error::StateFromClient);
    }
    let pxat = match argv.len() {
        5 if argv.bytes(3).eq_ignore_ascii_case(b"PXAT") => Some(args::unix_ms(argv.bytes(4))?),
        5 => return Err(ArgError::Extra(args::printable(argv.bytes(3))).into()),
        _ => None,
    };
    let payload = argv.bytes(2);
    let mut key = ctx.open_key(argv, 1, true);
    let (&tag, body) = payload.split_first().ok_or(Error::BadState)?;
    let kind = KINDS
        .iter()
        .find(|k| k.reads_tag(tag))
        .ok_or(Error::BadState)?;
    kind.visit(Restore {
        key: &mut key,
        tag,
        body,
    })?;
    if let Some(ms) = pxat {
        key.expire_at_ms(ms);
    }
    key.signal_modified();
    // A replica's own AOF and sub-replicas hear of it as it came.
    ctx.replicate_verbatim();
    ctx.reply_ok();
    Ok(Outcome::FromMasterOrAof)
}

/// `RL.RELEASE key lease_id [AT ns]`: removes the named lease. `AT`
/// carries the master's clock (expired leases are dropped at that instant).
struct Release;

impl Command for Release {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, Some(Stat::RELEASE), rl_release_call);
    }
}

fn rl_release_call<'a>(ctx: Ctx<'a>, argv: Argv<'a>) -> Result<Outcome, Error> {
    let at = match argv.len() {
        3 => None,
        5 if argv.bytes(3).eq_ignore_ascii_case(b"AT") => {
            if !ctx.is_from_master_or_aof() {
                return Err(ArgError::AtFromClient.into());
            }
            Some(args::at(argv.bytes(4))?)
        }
        5 => return Err(ArgError::Extra(args::printable(argv.bytes(3))).into()),
        _ => return Err(Error::Arity),
    };
    let id = args::id(argv.bytes(2))?;
    let now = at.unwrap_or_else(clock::now);
    let mut key = ctx.open_key(argv, 1, true);
    let released = match key.value(LeaseState::module_type()) {
        Held::Ours(leases) => {
            let released = leases.release(now, id);
            if released {
                if leases.is_empty_at(now) {
                    delete(&mut key)?;
                } else {
                    key.signal_modified();
                }
                propagate(ctx, "RELEASE", argv, at, now);
            }
            released
        }
        Held::Nothing => false,
        Held::Other => return Err(Error::WrongType),
    };
    ctx.reply_integer(i64::from(released));
    Ok(match at {
        Some(_) => Outcome::FromMasterOrAof,
        None => Outcome::Answered,
    })
}

/// Sets a key to an `RL.STATE` payload of the kind.
struct Restore<'k, 'a, 'p> {
    key: &'k mut Key<'a>,
    tag: u8,
    body: &'p [u8],
}

impl VisitKind for Restore<'_, '_, '_> {
    type Out = Result<(), Error>;

    fn visit<L: Listed>(self) -> Self::Out {
        let state = L::decode_tagged(self.tag, self.body).map_err(|_| Error::BadState)?;
        store(self.key, state)
    }
}
