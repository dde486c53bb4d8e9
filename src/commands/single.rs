//! `RL.<NAME>`: the command of every kind, and the steps of a limit that
//! the several-limit commands share (decide one key, commit its update).

use std::ffi::c_int;
use std::marker::PhantomData;

use arrayvec::ArrayVec;

use super::flow::{
    arg_bytes, entry, extend_expiry, new_state, propagate_change, recorded, replicate_state, store,
    Error, Outcome,
};
use super::info::{self, Stat, Tally};
use crate::args::{self, Bounds, Request};
use crate::core::throttle::ThrottleState;
use crate::core::{block, Decision, Nanos, Param, ParamKind, Retry, TimeUnit};
use crate::kinds::{Listed, Staged, Visit, VisitUpdate};
use crate::server::{
    handler, Access, ArgType, Argv, Command, CommandDef, Ctx, DocArg, Held, Key, Keys,
};
use crate::{clock, config};

/// `RL.<NAME> key <parameters> [id] [quantity] [MS] [MAXWAIT w] [options]`
/// (MAXWAIT for a kind that `WAITS`)
pub fn single_command<L: Listed>() -> CommandDef {
    let mut args = vec![DocArg::new("key", ArgType::Key)];
    args.extend(L::PARAMS.iter().map(doc_param));
    if L::TAKES_ID {
        args.push(DocArg::new("lease_id", ArgType::String));
    }
    args.push(DocArg::integer("quantity").optional());
    args.push(DocArg::flag("ms", "MS").optional());
    if L::WAITS {
        args.push(DocArg::integer("maxwait").token("MAXWAIT").optional());
    }
    args.extend(doc_options(L::OPTIONS));
    CommandDef {
        name: format!("{}.{}", config::prefix(), L::NAME),
        handler: handler::<SingleCall<L>>,
        flags: "write deny-oom fast",
        acl: "write fast",
        arity: -(2 + L::PARAMS.len() as c_int + c_int::from(L::TAKES_ID)),
        summary: L::SUMMARY,
        complexity: L::COMPLEXITY,
        since: L::SINCE,
        keys: Keys::One {
            pos: 1,
            access: Access::ReadUpdate,
        },
        args,
    }
}

/// RL.THROTTLE again as redis-cell's `CL.THROTTLE` (the `cell-alias`
/// option).
pub fn cell_alias() -> CommandDef {
    CommandDef {
        name: "CL.THROTTLE".to_string(),
        summary: "RL.THROTTLE under redis-cell's name (the cell-alias option): same arguments, same reply.",
        ..single_command::<ThrottleState>()
    }
}

/// A parameter as COMMAND DOCS shows it.
pub(super) fn doc_param(param: &Param) -> DocArg {
    match param.kind {
        ParamKind::Word(words) => DocArg::new(
            param.name,
            ArgType::OneOf(words.iter().map(|&w| DocArg::flag(w, w)).collect()),
        ),
        ParamKind::Text { .. } => DocArg::new(param.name, ArgType::String),
        ParamKind::Integer { .. } | ParamKind::Duration | ParamKind::DurationOrZero => {
            DocArg::integer(param.name)
        }
    }
}

/// A kind's options as COMMAND DOCS shows them: optional, each introduced
/// by its keyword.
pub(super) fn doc_options(options: &'static [Param]) -> impl Iterator<Item = DocArg> {
    options
        .iter()
        .map(|o| doc_param(o).token(o.name).optional())
}

/// The most arguments after the key that any valid call has, and then
/// some: RL.THROTTLE's three parameters, quantity, MS, MAXWAIT w, BLOCK b
/// and AT ns are 11.
const MAX_ARGS: usize = 12;

/// `RL.<NAME> key <parameters> [id] [quantity] [MS] [options]`: the
/// command of every kind.
struct SingleCall<L>(PhantomData<L>);

impl<L: Listed> Command for SingleCall<L> {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        single_call::<L>(ctx, argv);
    }
}

#[inline]
fn single_call<L: Listed>(ctx: Ctx<'_>, argv: Argv<'_>) {
    entry(ctx, argv, Some(Stat::of::<L>()), |ctx, argv| {
        // Where the quantity goes, among the words after the key.
        let quantity_at = L::PARAMS.len() + usize::from(L::TAKES_ID);
        if argv.len() < 2 + quantity_at {
            return Err(Error::Arity);
        }
        let mut words = ArrayVec::<&[u8], MAX_ARGS>::new();
        arg_bytes(argv, 2, &mut words)?;
        // The key is opened before the words are parsed, and its value's
        // memory asked for, so that on a key out of the cache the wait
        // overlaps the parsing (docs/DESIGN.md#flow). Only a request that
        // takes units can change the key: a quantity of zero (all zeros
        // where the quantity goes) opens it for reading.
        let quantity = words.get(quantity_at).copied().unwrap_or_default();
        let peek = !quantity.is_empty() && quantity.iter().all(|&b| b == b'0');
        let mut key = ctx.open_key(argv, 1, !peek);
        key.prefetch(L::module_type());
        let Request {
            params,
            id,
            quantity,
            unit,
            at,
            max_wait,
        } = args::single::<L>(&words, || ctx.is_from_master_or_aof(), bounds::<L>())?;
        limit::<L>(
            ctx,
            argv,
            key,
            &params,
            Asked {
                id,
                quantity,
                unit,
                at,
                max_wait,
            },
        )
    })
}

/// The configured bounds, read only for a kind that has a parameter they
/// may cap (the others never look at them).
fn bounds<L: Listed>() -> Bounds {
    match const { args::capped(L::PARAMS) || args::capped(L::OPTIONS) } {
        true => config::bounds(),
        false => Bounds::HARD,
    }
}

/// What a request asks besides its parameters.
#[derive(Clone, Copy)]
struct Asked<'i> {
    id: &'i [u8],
    quantity: u64,
    unit: TimeUnit,
    at: Option<Nanos>,
    max_wait: Option<Nanos>,
}

/// Decides a request on `state`: as `Kind::decide_as`, or, with MAXWAIT
/// (`max_wait`), granted for its turn when that comes within the wait
/// (`Kind::turn`, `Kind::book`): recorded now, as an allowed request at
/// its turn.
#[inline]
fn decide_in<L: Listed>(
    state: &L,
    now: Nanos,
    params: &L::Params,
    request: &Asked<'_>,
) -> (Decision, Option<L::Update>) {
    let (quantity, id) = (request.quantity, request.id);
    // A blocked key refuses whatever MAXWAIT says (`block::check`
    // holds the kind's own decision).
    if let Some(max_wait) = request
        .max_wait
        .filter(|_| block::blocked_at(state, now).is_none())
    {
        let own = state.turn(now, params, quantity);
        if let Some(turn) = crate::core::wait::booking(None, own, now, max_wait) {
            return state.book(now, turn, params, quantity);
        }
    }
    state.decide_as(now, params, quantity, id)
}

/// The flow every limiter command shares.
fn limit<'a, L: Listed>(
    ctx: Ctx<'a>,
    argv: Argv<'a>,
    mut key: Key<'a>,
    params: &L::Params,
    request: Asked<'_>,
) -> Result<Outcome, Error> {
    let takes = request.quantity > 0;
    let now = request.at.unwrap_or_else(clock::now);
    let (quantity, id) = (request.quantity, request.id);
    // An allowed request records its units; a refusal that starts a block
    // (BLOCK) records the block, the one write a refusal makes. The key's
    // block changes the kind's decision only on a blocked key or a
    // refusal with BLOCK (`block::check`, `blocked` then).
    let (decision, blocked, changed) = match key.value(L::module_type()) {
        Held::Ours(state) => {
            let (mut decision, mut update) = decide_in(state, now, params, &request);
            let blocked = block::check(state, now, params, quantity, id, &decision);
            if let Some(b) = blocked {
                decision = b.decision;
                update = None;
            }
            let changed = match (update, blocked.and_then(|b| b.starts)) {
                (Some(update), _) => {
                    state.apply(update);
                    recorded(&key, decision.reset_at);
                    true
                }
                (None, Some(end)) => {
                    state.set_blocked_until(end);
                    recorded(&key, decision.reset_at);
                    true
                }
                (None, None) => decision.limited && takes && extend_expiry(&key, decision.reset_at),
            };
            (decision, blocked.map(|b| b.starts.is_some()), changed)
        }
        held => {
            let other = matches!(held, Held::Other);
            let mut state = new_state::<L>(&key, other)?;
            let (mut decision, mut update) = decide_in(&state, now, params, &request);
            let blocked = block::check(&state, now, params, quantity, id, &decision);
            if let Some(b) = blocked {
                decision = b.decision;
                update = None;
            }
            let starts = blocked.and_then(|b| b.starts);
            let changed = update.is_some() || starts.is_some();
            if let Some(update) = update {
                state.apply(update);
            }
            if let Some(end) = starts {
                state.set_blocked_until(end);
            }
            if changed {
                store(&mut key, state)?;
                recorded(&key, decision.reset_at);
            }
            (decision, blocked.map(|b| b.starts.is_some()), changed)
        }
    };
    if changed {
        propagate_change::<L>(ctx, &mut key, L::NAME, argv, request.at, now);
    }
    if decision.limited {
        key.notify(c"rl.limited");
        if takes {
            if request.at.is_none() {
                count_block(blocked);
            }
            super::top::refused(ctx, &key, now);
        }
    } else if request.max_wait.is_some()
        && takes
        && request.at.is_none()
        && matches!(decision.retry, Retry::Turn(t) if t > now)
    {
        info::count(Tally::WaitGranted);
    }
    ctx.reply_integers(&decision.reply(now, request.unit));
    Ok(Outcome::of(request.at, decision.limited))
}

/// Counts, in INFO, the block a client's refused request started
/// (`Some(true)`) or the refusal its key's block answered (`Some(false)`):
/// what `block::check` held, if anything.
pub(super) fn count_block(blocked: Option<bool>) {
    match blocked {
        Some(true) => info::block_started(),
        Some(false) => info::blocked_refusal(),
        None => {}
    }
}

/// What the key's block made of one limit's decision in a several-limit
/// call, in 8 bytes (a limit's record is moved a few times per call):
/// nothing, the refusal of a key blocked already, or the end of the block
/// its refusal starts. A block that starts ends at least a millisecond
/// after the call's instant, so neither 0 nor 1 is ever an end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BlockRecord(u64);

impl BlockRecord {
    /// The block changed nothing.
    pub const NONE: BlockRecord = BlockRecord(0);
    /// The key was blocked already.
    const ALREADY: BlockRecord = BlockRecord(1);

    /// `block::Held::starts`'s record.
    #[inline(always)]
    pub fn of(starts: Option<Nanos>) -> BlockRecord {
        match starts {
            Some(end) => BlockRecord(end.get().max(2)),
            None => BlockRecord::ALREADY,
        }
    }

    /// The end of the block the refusal starts, if it starts one.
    #[inline(always)]
    pub fn starts(self) -> Option<Nanos> {
        (self.0 > 1).then_some(Nanos::new(self.0))
    }

    /// What `count_block` counts: `Some(true)` for a block started,
    /// `Some(false)` for a key blocked already, `None` for nothing.
    #[inline(always)]
    pub fn held(self) -> Option<bool> {
        match self.0 {
            0 => None,
            1 => Some(false),
            _ => Some(true),
        }
    }
}

/// Decides one limit of a several-limit call on its open key, changing
/// nothing (with `book`, booked for a turn at that instant: MAXWAIT; a
/// key blocked at `now` refuses as without it); the update it would
/// record when the whole call is allowed is written to `stage` (when
/// given), not applied, and what the key's block made of the decision to
/// `blocked` (left as it is when the block changed nothing).
pub(super) struct DecideKey<'k, 'a, 'i> {
    pub key: &'k mut Key<'a>,
    pub ask: Ask<'k, 'i>,
    pub book: Option<Nanos>,
}

/// What `DecideKey` decides, and where its results go.
pub(super) struct Ask<'k, 'i> {
    pub now: Nanos,
    pub quantity: u64,
    pub id: &'i [u8],
    pub stage: Option<&'k mut Staged>,
    pub blocked: &'k mut BlockRecord,
}

impl Visit for DecideKey<'_, '_, '_> {
    type Out = Result<Decision, Error>;

    fn visit<L: Listed>(self, params: &L::Params) -> Self::Out {
        match self.key.value(L::module_type()) {
            Held::Ours(state) => Ok(decide_one(state, params, self.ask, self.book)),
            held => {
                let other = matches!(held, Held::Other);
                let state = new_state::<L>(self.key, other)?;
                Ok(decide_one(&state, params, self.ask, self.book))
            }
        }
    }
}

/// `DecideKey` on the key's state (or a new one).
#[inline(always)]
fn decide_one<L: Listed>(
    state: &L,
    params: &L::Params,
    d: Ask<'_, '_>,
    book: Option<Nanos>,
) -> Decision {
    let (now, quantity) = (d.now, d.quantity);
    let (mut decision, update) = match book {
        Some(at) if block::blocked_at(state, now).is_none() => {
            state.book(now, at, params, quantity)
        }
        _ => state.decide_as(now, params, quantity, d.id),
    };
    // The block's decision replaces the kind's in place (one return
    // value: the usual case moves nothing).
    match block::check(state, now, params, quantity, d.id, &decision) {
        Some(b) => {
            *d.blocked = BlockRecord::of(b.starts);
            decision = b.decision;
        }
        None => {
            if let (Some(update), Some(stage)) = (update, d.stage) {
                // Written in place: the enum is as large as the largest
                // update.
                *stage = L::staged(update);
            }
        }
    }
    decision
}

/// In a refused several-limit call, starts the block a refusing limit
/// with BLOCK starts on its key, open for writing (on its state, or on a
/// new one).
pub(super) struct StartBlock<'k, 'a> {
    pub key: &'k mut Key<'a>,
    pub end: Nanos,
}

impl Visit for StartBlock<'_, '_> {
    type Out = Result<(), Error>;

    fn visit<L: Listed>(self, _params: &L::Params) -> Self::Out {
        let key = self.key;
        match key.value(L::module_type()) {
            Held::Ours(state) => {
                state.set_blocked_until(self.end);
                Ok(())
            }
            held => {
                let other = matches!(held, Held::Other);
                let mut state = new_state::<L>(key, other)?;
                state.set_blocked_until(self.end);
                store(key, state)
            }
        }
    }
}

/// Records an update staged by `DecideKey` on the same key, still open
/// for writing: on the state it was decided on, or on a new one. True
/// once recorded.
pub(super) struct Commit<'k, 'a> {
    pub key: &'k mut Key<'a>,
}

impl VisitUpdate for Commit<'_, '_> {
    type Out = Result<bool, Error>;

    fn visit<L: Listed>(self, update: L::Update) -> Self::Out {
        let key = self.key;
        match key.value(L::module_type()) {
            Held::Ours(state) => state.apply(update),
            held => {
                let other = matches!(held, Held::Other);
                let mut state = new_state::<L>(key, other)?;
                state.apply(update);
                store(key, state)?;
            }
        }
        Ok(true)
    }
}

/// The turn of one limit of a several-limit call with MAXWAIT, on its
/// open key (`Kind::turn`): when the request fits, if ever.
pub(super) struct TurnKey<'k, 'a> {
    pub key: &'k mut Key<'a>,
    pub now: Nanos,
    pub quantity: u64,
}

impl Visit for TurnKey<'_, '_> {
    type Out = Result<Option<Nanos>, Error>;

    fn visit<L: Listed>(self, params: &L::Params) -> Self::Out {
        let (now, quantity) = (self.now, self.quantity);
        Ok(match self.key.value(L::module_type()) {
            Held::Ours(state) => state.turn(now, params, quantity),
            held => {
                let other = matches!(held, Held::Other);
                new_state::<L>(self.key, other)?.turn(now, params, quantity)
            }
        })
    }
}

/// Asks for the memory of a key's value, if it holds the spec's kind
/// (`Key::prefetch`), before a several-limit call decides its limits.
pub(super) struct PrefetchKey<'k, 'a> {
    pub key: &'k mut Key<'a>,
}

impl Visit for PrefetchKey<'_, '_> {
    type Out = ();

    fn visit<L: Listed>(self, _params: &L::Params) {
        self.key.prefetch(L::module_type());
    }
}

/// After a several-limit call changed a key, its state for the replicas
/// and the AOF when its kind replicates its state (the call itself went as
/// `RL.ALLOW ... AT ns`, which a replica runs first).
pub(super) struct ReplicateState<'k, 'a> {
    pub ctx: Ctx<'a>,
    pub key: &'k mut Key<'a>,
    pub now: Nanos,
}

impl Visit for ReplicateState<'_, '_> {
    type Out = ();

    fn visit<L: Listed>(self, _params: &L::Params) {
        if L::REPLICATES_STATE {
            replicate_state::<L>(self.ctx, self.key, self.now);
        }
    }
}

/// In a refused several-limit call, the expiry rule of a limited request
/// for one key: true when its expiry moved out.
pub(super) struct ExtendKey<'k, 'a> {
    pub key: &'k mut Key<'a>,
    pub now: Nanos,
}

impl Visit for ExtendKey<'_, '_> {
    type Out = bool;

    fn visit<L: Listed>(self, params: &L::Params) -> bool {
        let reset_at = match self.key.value(L::module_type()) {
            Held::Ours(state) => block::peek(state, self.now, params).reset_at,
            _ => return false,
        };
        extend_expiry(self.key, reset_at)
    }
}

#[cfg(test)]
mod block_record_test {
    use super::BlockRecord;
    use crate::core::Nanos;

    #[test]
    fn block_record_keeps_what_the_block_made() {
        assert_eq!(BlockRecord::NONE.held(), None);
        assert_eq!(BlockRecord::NONE.starts(), None);
        let already = BlockRecord::of(None);
        assert_eq!((already.held(), already.starts()), (Some(false), None));
        let end = Nanos::new(1_764_633_600_000_000_000);
        let starts = BlockRecord::of(Some(end));
        assert_eq!((starts.held(), starts.starts()), (Some(true), Some(end)));
    }
}
