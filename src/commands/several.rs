//! RL.ALLOW and RL.PEEK: several limits, one decision
//! (docs/DESIGN.md#several-limits).

use arrayvec::ArrayVec;

use super::flow::{arg_bytes, entry, propagate, recorded, Error, Outcome};
use super::info::Stat;
use super::single::{
    doc_options, doc_param, Commit, DecideKey, ExtendKey, PrefetchKey, ReplicateState,
};
use crate::args::{self, MAX_KEYS};
use crate::core::Decision;
use crate::kinds::{Row, Staged, KINDS};
use crate::server::{
    handler, Access, ArgType, Argv, Command, CommandDef, Ctx, DocArg, Handler, Key, Keys,
};
use crate::{clock, config, replication};

/// `RL.ALLOW numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS] [ID id]`
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

/// `RL.PEEK numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS] [ID id]`
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
/// block of its word, parameters and options.
pub(super) fn spec_doc() -> DocArg {
    spec_doc_of(|_| true)
}

/// The `spec` of RL.REFUND and RL.CHARGE: the kinds that give back units.
pub(super) fn refund_spec_doc() -> DocArg {
    spec_doc_of(|k| k.refunds)
}

fn spec_doc_of(takes: fn(&Row) -> bool) -> DocArg {
    DocArg::new(
        "spec",
        ArgType::OneOf(
            KINDS
                .iter()
                .filter(|k| takes(k))
                .map(|k| {
                    let mut block = vec![DocArg::flag("algorithm", k.name)];
                    block.extend(k.params.iter().map(doc_param));
                    block.extend(doc_options(k.options));
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
/// 16 keys, 16 specs of at most 5 words, QUANTITY q, MS, ID id, AT ns.
const MAX_SEVERAL_ARGS: usize = 2 + MAX_KEYS * 6 + 7;

/// One limit of a several-limit call: its open key and what it would
/// record. Its decision is kept apart, in the order of the limits, for the
/// binding limit and the reply.
struct Limit<'a> {
    key: Key<'a>,
    staged: Staged,
    /// Whether the call changed the key.
    changed: bool,
}

/// The flow of RL.ALLOW (`write`) and RL.PEEK: decide every limit at one
/// instant; when all allow and the request takes units, record it on every
/// key; otherwise record nothing (a refused RL.ALLOW still moves an expiry
/// out, per key, as the single commands do). One reply, one propagation.
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
    let takes = write && options.quantity > 0;
    let now = options.at.unwrap_or_else(clock::now);
    let id = options.id.unwrap_or_default();

    // Open every key and ask for its value's memory, so that the waits
    // for values out of the cache overlap; then decide every limit,
    // staging what each would record.
    let mut limits: ArrayVec<Limit<'a>, MAX_KEYS> = ArrayVec::new();
    for (i, spec) in specs.iter().enumerate() {
        let mut key = ctx.open_key(argv, 2 + i, takes);
        spec.visit(PrefetchKey { key: &mut key });
        // `count` is at most MAX_KEYS: the push cannot overflow.
        limits.push(Limit {
            key,
            staged: Staged::Nothing,
            changed: false,
        });
    }
    let mut decisions: ArrayVec<Decision, MAX_KEYS> = ArrayVec::new();
    for (limit, spec) in limits.iter_mut().zip(&specs) {
        decisions.push(spec.visit(DecideKey {
            key: &mut limit.key,
            now,
            quantity: options.quantity,
            id,
            stage: takes.then_some(&mut limit.staged),
        })?);
    }
    let allowed = decisions.iter().all(|d| !d.limited);

    if takes {
        for ((limit, spec), decision) in limits.iter_mut().zip(&specs).zip(&decisions) {
            let key = &mut limit.key;
            if allowed {
                limit.staged.take(Commit { key }, Ok(()))?;
                recorded(key, decision.reset_at);
                limit.changed = true;
            } else {
                limit.changed = spec.visit(ExtendKey { key, now });
                if decision.limited {
                    key.notify(c"rl.limited");
                    super::top::refused(ctx, key, now);
                }
            }
        }
        if limits.iter().any(|l| l.changed) {
            propagate(ctx, "ALLOW", argv, options.at, now);
            if options.at.is_none() && replication::needs_clock() {
                for (limit, spec) in limits.iter_mut().zip(&specs) {
                    if limit.changed {
                        let key = &mut limit.key;
                        spec.visit(ReplicateState { ctx, key });
                    }
                }
            }
        }
    }

    // Each limit's five fields, once; numkeys is 1 or more, so there is a
    // binding limit.
    let mut fields: ArrayVec<[i64; 5], MAX_KEYS> = ArrayVec::new();
    for decision in &decisions {
        fields.push(decision.reply(now, options.unit));
    }
    let binding = crate::core::binding(&decisions)
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
