//! The floor of any module limiter with RL.THROTTLE's interface: a module
//! command with the same arguments and the same five-integer reply that
//! opens its key and decides nothing. `make bench` loads it next to the
//! real module and reports every row's throughput against it; what
//! separates an RL command from this floor is the module's own work.
//!
//! Never part of the shipped module: built with
//! `cargo build --release --example floor` as `libfloor.so`.
//!
//! Two commands, both with RL.THROTTLE's arguments, flags and key
//! positions, neither parsing its arguments nor deciding anything:
//!
//! - `FLOOR.THROTTLE key max_burst count period [quantity] [MS]` opens its
//!   key and replies: the least a module command with this interface costs.
//! - `FLOOR.KEEP key ...` also keeps state the way a limiter must: the key
//!   holds a value (created once), and on every call its expiry is read
//!   and moved out to one minute from now when that is later (so about
//!   once per millisecond on a hot key), then WATCH is told the key
//!   changed. What a limiter costs beyond it is its own work: parsing,
//!   deciding, replying from a state.
//!
//! `FLOOR.THROTTLE`: flags
//! `write deny-oom fast` and key positions 1, 1, 1, as RL.THROTTLE; the
//! reply is the five integers RL.THROTTLE answers to the benchmark's calls
//! (1,000,000 per second, burst 999,999): `0 1000000 999999 -1 1`, so
//! that formatting the reply costs the same.

use std::ffi::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

type Handler = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    c_int,
) -> c_int;

extern "C" fn floor_throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler; every function
    // used here was checked at load.
    unsafe {
        if argc < 5 {
            return raw::RedisModule_WrongArity.map_or(raw::REDISMODULE_ERR as c_int, |f| f(ctx));
        }
        let (Some(open), Some(close), Some(array), Some(int)) = (
            raw::RedisModule_OpenKey,
            raw::RedisModule_CloseKey,
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithLongLong,
        ) else {
            return raw::REDISMODULE_ERR as c_int;
        };
        let key = open(
            ctx,
            *argv.add(1),
            (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int,
        );
        close(key);
        array(ctx, 5);
        for field in [0, 1_000_000, 999_999, -1, 1] {
            int(ctx, field);
        }
    }
    raw::REDISMODULE_OK as c_int
}

extern "C" fn floor_keep(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        if argc < 5 {
            return raw::RedisModule_WrongArity.map_or(raw::REDISMODULE_ERR as c_int, |f| f(ctx));
        }
        let (
            Some(open),
            Some(close),
            Some(key_type),
            Some(string_set),
            Some(get_expire),
            Some(set_expire),
            Some(signal),
            Some(array),
            Some(int),
        ) = (
            raw::RedisModule_OpenKey,
            raw::RedisModule_CloseKey,
            raw::RedisModule_KeyType,
            raw::RedisModule_StringSet,
            raw::RedisModule_GetAbsExpire,
            raw::RedisModule_SetAbsExpire,
            raw::RedisModule_SignalModifiedKey,
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithLongLong,
        )
        else {
            return raw::REDISMODULE_ERR as c_int;
        };
        let name = *argv.add(1);
        let key = open(
            ctx,
            name,
            (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int,
        );
        if key_type(key) == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            string_set(key, *argv.add(2));
        }
        let mut ts = libc_now_ms();
        ts += 60_000;
        if get_expire(key) < ts {
            set_expire(key, ts);
        }
        signal(ctx, name);
        close(key);
        array(ctx, 5);
        for field in [0, 1_000_000, 999_999, -1, 1] {
            int(ctx, field);
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// `FLOOR.ALLOW numkeys key [key ...] <anything>`: FLOOR.KEEP on each of
/// the `numkeys` keys, then RL.ALLOW's seven-element reply (the binding
/// limit's five fields, its index, one five-field array per key): the
/// least RL.ALLOW's interface costs with state kept on every key.
extern "C" fn floor_allow(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        let (
            Some(open),
            Some(close),
            Some(key_type),
            Some(string_set),
            Some(get_expire),
            Some(set_expire),
            Some(signal),
            Some(ptr_len),
            Some(array),
            Some(int),
        ) = (
            raw::RedisModule_OpenKey,
            raw::RedisModule_CloseKey,
            raw::RedisModule_KeyType,
            raw::RedisModule_StringSet,
            raw::RedisModule_GetAbsExpire,
            raw::RedisModule_SetAbsExpire,
            raw::RedisModule_SignalModifiedKey,
            raw::RedisModule_StringPtrLen,
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithLongLong,
        )
        else {
            return raw::REDISMODULE_ERR as c_int;
        };
        let mut len = 0usize;
        let numkeys = if argc > 1 {
            let p = ptr_len(*argv.add(1), &mut len);
            if len == 1 {
                i64::from(*p as u8) - i64::from(b'0')
            } else {
                0
            }
        } else {
            0
        };
        let count = usize::try_from(numkeys).unwrap_or(0);
        if count == 0 || argc < 2 + count as c_int {
            return raw::RedisModule_WrongArity.map_or(raw::REDISMODULE_ERR as c_int, |f| f(ctx));
        }
        let at = libc_now_ms() + 60_000;
        for i in 0..count {
            let name = *argv.add(2 + i);
            let key = open(
                ctx,
                name,
                (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int,
            );
            if key_type(key) == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
                string_set(key, name);
            }
            if get_expire(key) < at {
                set_expire(key, at);
            }
            signal(ctx, name);
            close(key);
        }
        let five = [0, 1_000_000, 999_999, -1, 1];
        array(ctx, 7);
        for field in five {
            int(ctx, field);
        }
        int(ctx, 1);
        array(ctx, count as std::ffi::c_long);
        for _ in 0..count {
            array(ctx, 5);
            for field in five {
                int(ctx, field);
            }
        }
    }
    raw::REDISMODULE_OK as c_int
}

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
            (c"FLOOR.ALLOW", Some(floor_allow as Handler)),
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
