//! RL.TOP: the keys refused most often on this node recently, from a
//! fixed-size summary kept in the module's memory (`core::top`), and the
//! one hook the limiter flows call when a request is refused.
//!
//! Only a refusal touches the summary: an allowed call never reaches this
//! file. Commands run on the server's main thread (as do INFO and CONFIG
//! SET, which read and resize the summary), so the lock below is never
//! contended; it makes the shared state safe Rust, not a point of waiting.
//! The summary is neither replicated nor persisted: each node counts the
//! refusals it decided for clients, never those of commands from its
//! master or its AOF.

use std::sync::{Mutex, PoisonError};

use arrayvec::ArrayVec;

use super::flow::{arg_bytes, entry, Error, Outcome};
use crate::core::top::Summary;
use crate::core::Nanos;
use crate::server::Fields;
use crate::server::{handler, Argv, Command, CommandDef, Ctx, DocArg, Key, Keys};
use crate::{args, clock, config};

/// The summary, made on first use from the settings.
static SUMMARY: Mutex<Option<Summary>> = Mutex::new(None);

fn with_summary<R>(f: impl FnOnce(&mut Summary) -> R) -> R {
    // A panic while it was held (a bug; none is reachable) leaves a
    // summary that is still well-formed enough to read or be replaced.
    let mut guard = SUMMARY.lock().unwrap_or_else(PoisonError::into_inner);
    let summary =
        guard.get_or_insert_with(|| Summary::new(config::top_size(), config::top_half_life()));
    f(summary)
}

/// The settings changed: the summary takes its new size (shrinking keeps
/// the entries with the largest counts; 0 frees them all) and half-life.
pub fn settings_changed() {
    with_summary(|s| {
        s.resize(config::top_size());
        s.set_half_life(config::top_half_life());
    });
}

/// A client's request of quantity 1 or more was refused by the limit on
/// `key`, decided at `now`: one refusal of that key. Called once per
/// refusing key, by the flows of write commands only (never for a peek,
/// RL.PEEK, or a limit that does not enforce); a command from the master
/// or the AOF is not counted (the master counted it).
#[cold]
#[inline(never)]
pub fn refused(ctx: Ctx<'_>, key: &Key<'_>, now: Nanos) {
    if ctx.is_from_master_or_aof() {
        return;
    }
    with_summary(|s| s.record(key.name(), now));
}

/// INFO's fields of the summary: its size, the entries held, the
/// half-life in seconds.
pub fn write_info(fields: &mut Fields<'_>) {
    let held = with_summary(|s| s.held());
    fields.number("top_size", config::top_size() as u64);
    fields.number("top_keys", held as u64);
    fields.number("top_half_life_seconds", config::top_half_life_seconds());
}

/// `RL.TOP [COUNT n]`
pub fn top_command() -> CommandDef {
    CommandDef {
        name: format!("{}.TOP", config::prefix()),
        handler: handler::<Top>,
        flags: "readonly fast",
        acl: "read fast",
        arity: -1,
        summary: "The keys refused most often on this node recently, most first: [key, refusals (decayed, rounded down), last refusal in Unix ms] each. Neither replicated nor persisted: on a cluster, ask every master.",
        complexity: "O(k log k) in the summary's size k (ratelimit.top-size)",
        since: "0.4.0",
        keys: Keys::None,
        args: vec![DocArg::integer("count").token("COUNT").optional()],
    }
}

/// The most words after the name that get past the count: `COUNT n`
/// three times, for the error naming the repeat.
const MAX_ARGS: usize = 6;

struct Top;

impl Command for Top {
    fn run(ctx: Ctx<'_>, argv: Argv<'_>) {
        entry(ctx, argv, None, top);
    }
}

fn top<'a>(ctx: Ctx<'a>, argv: Argv<'a>) -> Result<Outcome, Error> {
    let size = config::top_size();
    if size == 0 {
        return Err(Error::Off(c"ERR RL.TOP is off: ratelimit.top-size is 0"));
    }
    let mut words = ArrayVec::<&[u8], MAX_ARGS>::new();
    arg_bytes(argv, 1, &mut words)?;
    let count = args::top(&words, size)?;
    let now = clock::now();
    with_summary(|s| {
        let rows = s.top(count, now);
        ctx.reply_array(rows.len());
        for row in rows {
            ctx.reply_array(3);
            ctx.reply_bytes(row.key);
            ctx.reply_integer(i64::try_from(row.refusals).unwrap_or(i64::MAX));
            ctx.reply_integer(i64::try_from(row.last_ms).unwrap_or(i64::MAX));
        }
    });
    Ok(Outcome::Answered)
}
