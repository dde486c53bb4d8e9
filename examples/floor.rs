//! The floor of any module limiter with RL.THROTTLE's interface: a module
//! command with the same arguments and the same five-integer reply that
//! opens its key and decides nothing. `make bench` loads it next to the
//! real module and reports every row's throughput against it; what
//! separates an RL command from this floor is the module's own work.
//!
//! Never part of the shipped module: built with
//! `cargo build --release --example floor` as `libfloor.so`.
//!
//! Four commands with RL.THROTTLE's arguments, flags and key positions,
//! and two with RL.ALLOW's, none deciding anything:
//!
//! - `FLOOR.THROTTLE key max_burst count period [quantity] [MS]` opens its
//!   key and replies: the least a module command with this interface costs.
//! - `FLOOR.KEEP key ...` also keeps state the way a limiter must: the key
//!   holds a value (created once), and on every call its expiry is read
//!   and moved out to one minute from now when that is later (so about
//!   once per millisecond on a hot key), then WATCH is told the key
//!   changed. What a limiter costs beyond it is its own work: parsing,
//!   deciding, replying from a state.
//! - `FLOOR.PARSE key ...` is FLOOR.KEEP that also reads every argument
//!   after the key (`RedisModule_StringPtrLen`, one call each) and parses
//!   it as a decimal integer: the part of a limiter's parsing that no
//!   implementation avoids. Between FLOOR.KEEP and it is the cost of
//!   reading the arguments; what an RL command costs beyond it is its
//!   parser's own work, its decision, and the rest of its flow.
//! - `FLOOR.LIMIT key ...` is FLOOR.PARSE that also propagates its change
//!   (`RedisModule_ReplicateVerbatim`, which the server drops at once when
//!   no replica, backlog or AOF can replay it, as RL commands propagate
//!   then): everything a limiter with these arguments must do except
//!   deciding. The benchmark counts it with each RL command's own
//!   arguments, so that what the command costs beyond it is its decision
//!   and its glue (a string value stands for the state: the module type's
//!   two look-ups, about 30 instructions, are not in it).
//! - `FLOOR.ALLOWLIMIT numkeys key [key ...] ...` is FLOOR.ALLOW that also
//!   reads every argument after the keys and parses it as a decimal, and
//!   propagates: the same for RL.ALLOW's interface.
//!
//! All: flags
//! `write deny-oom fast` and key positions 1, 1, 1, as RL.THROTTLE; the
//! reply of the single-key ones is the five integers RL.THROTTLE answers to the benchmark's calls
//! (1,000,000 per second, burst 999,999): `0 1000000 999999 -1 1`, so
//! that formatting the reply costs the same.

use std::ffi::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

type Handler = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    c_int,
) -> c_int;

/// The five integers RL.THROTTLE replies in the benchmark.
const FIVE: [i64; 5] = [0, 1_000_000, 999_999, -1, 1];

extern "C" fn floor_throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler.
    let done = unsafe {
        if argc < 5 {
            return wrong_arity(ctx);
        }
        open_and_close(ctx, *argv.add(1)).and_then(|()| reply_five(ctx))
    };
    status(done)
}

extern "C" fn floor_keep(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as above.
    let done = unsafe {
        if argc < 5 {
            return wrong_arity(ctx);
        }
        keep(ctx, *argv.add(1), libc_now_ms() + 60_000).and_then(|()| reply_five(ctx))
    };
    status(done)
}

extern "C" fn floor_parse(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as above.
    let done = unsafe {
        if argc < 5 {
            return wrong_arity(ctx);
        }
        parse_all(argv, 2, argc);
        keep(ctx, *argv.add(1), libc_now_ms() + 60_000).and_then(|()| reply_five(ctx))
    };
    status(done)
}

extern "C" fn floor_limit(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as above.
    let done = unsafe {
        if argc < 3 {
            return wrong_arity(ctx);
        }
        parse_all(argv, 2, argc);
        keep(ctx, *argv.add(1), libc_now_ms() + 60_000)
            .and_then(|()| replicate(ctx))
            .and_then(|()| reply_five(ctx))
    };
    status(done)
}

/// `FLOOR.ALLOW numkeys key [key ...] <anything>`: FLOOR.KEEP on each of
/// the `numkeys` keys (1 to 9), then RL.ALLOW's seven-element reply (the
/// binding limit's five fields, its index, one five-field array per key):
/// the least RL.ALLOW's interface costs with state kept on every key.
extern "C" fn floor_allow(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler.
    status(unsafe { allow(ctx, argv, argc, false) })
}

/// `FLOOR.ALLOWLIMIT numkeys key [key ...] ...`: FLOOR.ALLOW that also
/// reads and parses every argument after the keys, and propagates.
extern "C" fn floor_allow_limit(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler.
    status(unsafe { allow(ctx, argv, argc, true) })
}

/// FLOOR.ALLOW, and with `limit` FLOOR.ALLOWLIMIT.
///
/// # Safety
/// The server's arguments to a command handler.
unsafe fn allow(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    limit: bool,
) -> Option<()> {
    unsafe {
        let count = if argc > 1 { numkeys(*argv.add(1)) } else { 0 };
        if count == 0 || argc < 2 + count as c_int {
            wrong_arity(ctx);
            return Some(());
        }
        if limit {
            parse_all(argv, 2 + count, argc);
        }
        let at = libc_now_ms() + 60_000;
        for i in 0..count {
            keep(ctx, *argv.add(2 + i), at)?;
        }
        if limit {
            replicate(ctx)?;
        }
        let (array, int) = (
            raw::RedisModule_ReplyWithArray?,
            raw::RedisModule_ReplyWithLongLong?,
        );
        array(ctx, 7);
        FIVE.iter().for_each(|&f| {
            int(ctx, f);
        });
        int(ctx, 1);
        array(ctx, count as std::ffi::c_long);
        for _ in 0..count {
            reply_five(ctx)?;
        }
        Some(())
    }
}

/// Reads arguments `from..argc` and parses each as a decimal, as every
/// limiter must read its parameters.
///
/// # Safety
/// `argv` holds the running command's `argc` arguments.
unsafe fn parse_all(argv: *mut *mut raw::RedisModuleString, from: usize, argc: c_int) {
    let mut sum = 0u64;
    for i in from..argc as usize {
        sum = sum.wrapping_add(unsafe { decimal(*argv.add(i)) });
    }
    std::hint::black_box(sum);
}

/// Propagates the running command as it was sent.
///
/// # Safety
/// `ctx` is the running command's context.
unsafe fn replicate(ctx: *mut raw::RedisModuleCtx) -> Option<()> {
    unsafe {
        raw::RedisModule_ReplicateVerbatim?(ctx);
    }
    Some(())
}

/// Opens the key for writing and closes it again.
///
/// # Safety
/// `ctx` and `name` belong to the running command.
unsafe fn open_and_close(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
) -> Option<()> {
    unsafe {
        let key = raw::RedisModule_OpenKey?(ctx, name, WRITE);
        raw::RedisModule_CloseKey?(key);
    }
    Some(())
}

/// What any limiter does to keep its state: the key holds a value
/// (created once), its expiry moves out to `at_ms` when that is later, and
/// WATCH hears of the change.
///
/// # Safety
/// `ctx` and `name` belong to the running command.
unsafe fn keep(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    at_ms: i64,
) -> Option<()> {
    unsafe {
        let key = raw::RedisModule_OpenKey?(ctx, name, WRITE);
        if raw::RedisModule_KeyType?(key) == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            raw::RedisModule_StringSet?(key, name);
        }
        if raw::RedisModule_GetAbsExpire?(key) < at_ms {
            raw::RedisModule_SetAbsExpire?(key, at_ms);
        }
        raw::RedisModule_SignalModifiedKey?(ctx, name);
        raw::RedisModule_CloseKey?(key);
    }
    Some(())
}

/// Replies RL.THROTTLE's five integers.
///
/// # Safety
/// `ctx` is the running command's context.
unsafe fn reply_five(ctx: *mut raw::RedisModuleCtx) -> Option<()> {
    unsafe {
        raw::RedisModule_ReplyWithArray?(ctx, 5);
        let int = raw::RedisModule_ReplyWithLongLong?;
        FIVE.iter().for_each(|&f| {
            int(ctx, f);
        });
    }
    Some(())
}

/// `numkeys` as one digit, 1 to 9 (0 for anything else).
///
/// # Safety
/// `arg` is an argument of the running command.
unsafe fn numkeys(arg: *mut raw::RedisModuleString) -> usize {
    let mut len = 0usize;
    unsafe {
        let Some(ptr_len) = raw::RedisModule_StringPtrLen else {
            return 0;
        };
        let p = ptr_len(arg, &mut len);
        if len == 1 && !p.is_null() {
            usize::from((*p as u8).wrapping_sub(b'0')).min(10) % 10
        } else {
            0
        }
    }
}

/// An argument's bytes read as a decimal integer (digits up to the first
/// other byte; wrapping on overflow).
///
/// # Safety
/// `arg` is an argument of the running command.
unsafe fn decimal(arg: *mut raw::RedisModuleString) -> u64 {
    let mut len = 0usize;
    unsafe {
        let Some(ptr_len) = raw::RedisModule_StringPtrLen else {
            return 0;
        };
        let p = ptr_len(arg, &mut len);
        if p.is_null() {
            return 0;
        }
        let bytes = std::slice::from_raw_parts(p.cast::<u8>(), len);
        let mut n = 0u64;
        for &b in bytes {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            n = n.wrapping_mul(10).wrapping_add(u64::from(digit));
        }
        n
    }
}

/// # Safety
/// `ctx` is the running command's context.
unsafe fn wrong_arity(ctx: *mut raw::RedisModuleCtx) -> c_int {
    unsafe { raw::RedisModule_WrongArity.map_or(raw::REDISMODULE_ERR as c_int, |f| f(ctx)) }
}

fn status(done: Option<()>) -> c_int {
    match done {
        Some(()) => raw::REDISMODULE_OK as c_int,
        None => raw::REDISMODULE_ERR as c_int,
    }
}

const WRITE: c_int = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;

/// Wall-clock milliseconds, read the way the module reads its clock.
fn libc_now_ms() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // SAFETY: called once during OnLoad with the load context.
    unsafe {
        let Some(create) = raw::RedisModule_CreateCommand else {
            return Status::Err;
        };
        for (name, handler) in [
            (c"FLOOR.THROTTLE", Some(floor_throttle as Handler)),
            (c"FLOOR.KEEP", Some(floor_keep as Handler)),
            (c"FLOOR.PARSE", Some(floor_parse as Handler)),
            (c"FLOOR.LIMIT", Some(floor_limit as Handler)),
            (c"FLOOR.ALLOW", Some(floor_allow as Handler)),
            (c"FLOOR.ALLOWLIMIT", Some(floor_allow_limit as Handler)),
        ] {
            let ok = create(
                ctx.get_raw(),
                name.as_ptr(),
                handler,
                c"write deny-oom fast".as_ptr(),
                1,
                1,
                1,
            );
            if ok != raw::REDISMODULE_OK as c_int {
                return Status::Err;
            }
        }
        Status::Ok
    }
}

redis_module! {
    name: "floor",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
}
