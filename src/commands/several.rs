//! RL.ALLOW and RL.PEEK: several limits, one decision
//! (docs/DESIGN.md#several-limits).

use arrayvec::ArrayVec;

use super::flow::{arg_bytes, entry, propagate, recorded, Error, Outcome};
use super::info::{self, Stat, Tally};
use super::single::{
    count_block, doc_options, doc_param, Ask, BlockRecord, Commit, DecideKey, ExtendKey,
    PrefetchKey, ReplicateState, StartBlock, TurnKey,
};
use crate::args::{self, LimitSpec, MAX_KEYS};
use crate::core::{wait, Decision, Nanos, Retry};
use crate::kinds::{Row, Staged, KINDS};
use crate::server::{
    handler, Access, ArgType, Argv, Command, CommandDef, Ctx, DocArg, Handler, Key, Keys,
};
use crate::{clock, config, replication};

/// `RL.ALLOW numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS] [MAXWAIT w] [ID id]`
pub fn allow_command() -> CommandDef {
    several_command(
        "ALLOW",
        handler::<Allow>,
        "write deny-oom fast",
        "write fast",
        Access::ReadUpdate,
        "Several limits, one atomic all-or-nothing decision. Replies the binding limit's five fields, its index, and every limit's five fields.",
    )
}

/// `RL.PEEK numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS] [MAXWAIT w] [ID id]`
pub fn peek_command() -> CommandDef {
    several_command(
        "PEEK",
        handler::<Peek>,
        "readonly fast",
        "read fast",
        Access::ReadOnly,
        "What RL.ALLOW with the same arguments would answer now, changing nothing. Works on replicas and in read-only contexts.",
    )
}

fn several_command(
    name: &'static str,
    handler: Handler,
    flags: &'static str,
    acl: &'static str,
    access: Access,
    summary: &'static str,
) -> CommandDef {
    let mut args = vec![
        DocArg::integer("numkeys"),
        DocArg::new("key", ArgType::Key).multiple(),
        spec_doc().multiple(),
        DocArg::integer("quantity").token("QUANTITY").optional(),
        DocArg::flag("ms", "MS").optional(),
        DocArg::integer("maxwait").token("MAXWAIT").optional(),
    ];
    if KINDS.iter().any(|k| k.takes_id) {
        args.push(DocArg::new("id", ArgType::String).token("ID").optional());
    }
    CommandDef {
        name: format!("{}.{name}", config::prefix()),
        handler,
        flags,
        acl,
        arity: -6,
        summary,
        complexity: "O(N) in the number of limits, each as its single command",
        since: "0.2.0",
        keys: Keys::Counted { pos: 1, access },
        args,
    }
}

/// A `spec` argument as COMMAND DOCS shows it: one of the kinds, each a
/// block of its word, parameters and options, then a several-limit spec's
/// own options (`UNITS n`, `SHADOW`).
pub(super) fn spec_doc() -> DocArg {
    spec_doc_of(|_| true, true)
}

/// The `spec` of RL.REFUND and RL.CHARGE: the kinds that give back units,
/// without BLOCK.
pub(super) fn refund_spec_doc() -> DocArg {
    spec_doc_of(|k| k.refunds, false)
}

fn spec_doc_of(takes: fn(&Row) -> bool, several: bool) -> DocArg {
    DocArg::new(
        "spec",
        ArgType::OneOf(
            KINDS
                .iter()
                .filter(|k| takes(k))
                .map(|k| {
                    let mut block = vec![DocArg::flag("algorithm", k.name)];
                    block.extend(k.params.iter().map(doc_param));
                    block.extend(
                        doc_options(k.options)
                            .filter(|o| several || o.name != crate::core::block::BLOCK.name),
                    );
                    if several {
                        block.push(DocArg::integer("units").token("UNITS").optional());
                        block.push(DocArg::flag("shadow", "SHADOW").optional());
                    }
                    DocArg::new(k.name, ArgType::Block(block))
                })
                .collect(),
        ),
    )
}

/// RL.ALLOW.
struct Allow;

impl Command for Allow {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, Some(Stat::ALLOW), |ctx, argv| {
            several(ctx, argv, true)
        });
    }
}

/// RL.PEEK.
struct Peek;

impl Command for Peek {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, Some(Stat::PEEK), |ctx, argv| {
            several(ctx, argv, false)
        });
    }
}

/// The most arguments a several-limit call can have: the name, numkeys,
/// 16 keys, 16 specs of at most 5 words and their own options (UNITS n,
/// SHADOW, BLOCK b), QUANTITY q, MS, MAXWAIT w, ID id, AT ns.
const MAX_SEVERAL_ARGS: usize = 2 + MAX_KEYS * 11 + 9;

/// One limit of a several-limit call: its open key and what it would
/// record. Its decision is kept apart, in the order of the limits, for the
/// binding limit and the reply.
struct Limit<'a> {
    key: Key<'a>,
    staged: Staged,
    /// Whether the call changed the key.
    changed: bool,
    /// What the key's block made of its decision, if anything: a key
    /// blocked already, or the end of the block the refusal starts
    /// (`block::Held::starts`).
    blocked: BlockRecord,
}

/// The flow of RL.ALLOW (`write`) and RL.PEEK: decide every limit at one
/// instant (with MAXWAIT, each booked at the call's turn); when every
/// enforced limit allows and the request takes units, record it on every
/// key whose limit allows (a SHADOW limit that would refuse records
/// nothing); otherwise record nothing (a refused RL.ALLOW still moves an
/// expiry out, per key, as the single commands do). One reply, one
/// propagation.
fn several<'a>(ctx: Ctx<'a>, argv: Argv<'a>, write: bool) -> Result<Outcome, Error> {
    if ctx.is_keys_position_request() {
        // Cluster routing and COMMAND GETKEYS: name the keys, nothing else.
        if let Ok(count) = args::numkeys(argv.bytes(1)) {
            (2..(2 + count).min(argv.len())).for_each(|pos| ctx.key_at(pos));
        }
        return Ok(Outcome::KeyPositions);
    }
    if argv.len() < 6 {
        return Err(Error::Arity);
    }
    // Every argument's bytes, read once, and every spec parsed once.
    let mut words = ArrayVec::<&[u8], { MAX_SEVERAL_ARGS - 1 }>::new();
    arg_bytes(argv, 1, &mut words)?;
    let mut specs = ArrayVec::new();
    let options = args::several(
        &words,
        write,
        || ctx.is_from_master_or_aof(),
        config::bounds(),
        &mut specs,
    )?;
    let takes = write && specs.iter().any(|l| l.quantity > 0);
    let now = options.at.unwrap_or_else(clock::now);
    let id = options.id.unwrap_or_default();
    let shadows = options.shadows;
    let enforced = |i: usize| shadows & (1 << i) == 0;

    // Open every key and ask for its value's memory, so that the waits
    // for values out of the cache overlap; then decide every limit,
    // staging what each would record.
    let mut limits: ArrayVec<Limit<'a>, MAX_KEYS> = ArrayVec::new();
    for (i, limit) in specs.iter().enumerate() {
        let mut key = ctx.open_key(argv, 2 + i, takes);
        limit.spec.visit(PrefetchKey { key: &mut key });
        // `count` is at most MAX_KEYS: the push cannot overflow.
        limits.push(Limit {
            key,
            staged: Staged::Nothing,
            changed: false,
            blocked: BlockRecord::NONE,
        });
    }
    // With MAXWAIT, the instant each limit books the request at (none:
    // decided as without it).
    let mut bookings: ArrayVec<Option<Nanos>, MAX_KEYS> = ArrayVec::new();
    if let Some(max_wait) = options.max_wait {
        let mut turns: ArrayVec<Option<Nanos>, MAX_KEYS> = ArrayVec::new();
        for (limit, spec) in limits.iter_mut().zip(&specs) {
            turns.push(spec.spec.visit(TurnKey {
                key: &mut limit.key,
                now,
                quantity: spec.quantity,
            })?);
        }
        let call = wait::call_turn(
            turns
                .iter()
                .copied()
                .enumerate()
                .map(|(i, t)| (t, enforced(i))),
            now,
            max_wait,
        );
        for &own in &turns {
            bookings.push(wait::booking(call, own, now, max_wait));
        }
    }
    let mut decisions: ArrayVec<Decision, MAX_KEYS> = ArrayVec::new();
    for (i, (limit, spec)) in limits.iter_mut().zip(&specs).enumerate() {
        let key = &mut limit.key;
        let ask = Ask {
            now,
            quantity: spec.quantity,
            id,
            stage: takes.then_some(&mut limit.staged),
            blocked: &mut limit.blocked,
        };
        let book = bookings.get(i).copied().flatten();
        decisions.push(spec.spec.visit(DecideKey { key, ask, book })?);
    }
    let allowed = decisions
        .iter()
        .enumerate()
        .all(|(i, d)| !d.limited || !enforced(i));

    if takes {
        for (limit, (spec, decision)) in limits.iter_mut().zip(specs.iter().zip(&decisions)) {
            let key = &mut limit.key;
            if allowed && !decision.limited {
                if limit.staged.take(Commit { key }, Ok(false))? {
                    recorded(key, decision.reset_at);
                    limit.changed = true;
                }
            } else if spec.quantity > 0 {
                // Every refusing limit with BLOCK blocks its own key; the
                // others only keep the expiry rule of a limited request.
                if let Some(end) = limit.blocked.starts() {
                    spec.spec.visit(StartBlock { key, end })?;
                    recorded(key, decision.reset_at);
                    limit.changed = true;
                } else {
                    limit.changed = spec.spec.visit(ExtendKey { key, now });
                }
                if decision.limited && !spec.shadow {
                    key.notify(c"rl.limited");
                    super::top::refused(ctx, key, now);
                }
                if options.at.is_none() {
                    count_block(limit.blocked.held());
                }
            }
        }
        if options.at.is_none() && (shadows != 0 || options.max_wait.is_some()) {
            count_events(&specs, &decisions, allowed, now);
        }
        if limits.iter().any(|l| l.changed) {
            propagate(ctx, "ALLOW", argv, options.at, now);
            if options.at.is_none() && replication::needs_clock() {
                for (limit, spec) in limits.iter_mut().zip(&specs) {
                    if limit.changed {
                        let key = &mut limit.key;
                        spec.spec.visit(ReplicateState { ctx, key, now });
                    }
                }
            }
        }
    }

    // Each limit's five fields, once; numkeys is 1 or more and one limit
    // at least is enforced, so there is a binding limit.
    let mut fields: ArrayVec<[i64; 5], MAX_KEYS> = ArrayVec::new();
    for decision in &decisions {
        fields.push(decision.reply(now, options.unit));
    }
    let binding = match shadows == 0 && options.max_wait.is_none() {
        true => crate::core::plain_binding(&decisions, !allowed),
        false => crate::core::binding(&decisions, enforced),
    };
    let binding = binding
        .and_then(|i| Some((i, fields.get(i)?)))
        .ok_or(Error::Internal(
            c"ERR internal error: no binding limit among the decisions (please report it)",
        ))?;
    ctx.reply_array(7);
    for &field in binding.1 {
        ctx.reply_integer(field);
    }
    ctx.reply_integer(binding.0 as i64 + 1);
    ctx.reply_array(fields.len());
    for five in &fields {
        ctx.reply_integers(five);
    }
    Ok(Outcome::of(options.at, !allowed))
}

/// INFO's counts of what an RL.ALLOW that takes units decided: a grant
/// for a turn later than now (`waits_granted`), and each SHADOW limit
/// that would have refused (`shadow_limited`, whatever the call's
/// outcome).
fn count_events(specs: &[LimitSpec], decisions: &[Decision], allowed: bool, now: Nanos) {
    let waited = decisions
        .iter()
        .any(|d| matches!(d.retry, Retry::Turn(t) if t > now));
    if allowed && waited {
        info::count(Tally::WaitGranted);
    }
    for (spec, decision) in specs.iter().zip(decisions) {
        if spec.shadow && decision.limited {
            info::count(Tally::ShadowLimited);
        }
    }
}
