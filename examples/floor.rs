//! The floor of any module limiter with RL.THROTTLE's interface: a module
//! command with the same arguments and the same five-integer reply that
//! opens its key and decides nothing. `make bench` loads it next to the
//! real module and reports every row's throughput against it; what
//! separates an RL command from this floor is the module's own work.
//!
//! Never part of the shipped module: built with
//! `cargo build --release --example floor` as `libfloor.so`.
//!
//! `FLOOR.THROTTLE key max_burst count period [quantity] [MS]`: flags
//! `write deny-oom fast` and key positions 1, 1, 1, as RL.THROTTLE; the
//! reply is the five integers RL.THROTTLE answers to the benchmark's calls
//! (1,000,000 per second, burst 999,999): `0 1000000 999999 -1 1`, so
//! that formatting the reply costs the same.

use std::ffi::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

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

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // SAFETY: called once during OnLoad with the load context.
    unsafe {
        let Some(create) = raw::RedisModule_CreateCommand else {
            return Status::Err;
        };
        let ok = create(
            ctx.get_raw(),
            c"FLOOR.THROTTLE".as_ptr(),
            Some(floor_throttle),
            c"write deny-oom fast".as_ptr(),
            1,
            1,
            1,
        );
        if ok == raw::REDISMODULE_OK as c_int {
            Status::Ok
        } else {
            Status::Err
        }
    }
}

redis_module! {
    name: "floor",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
}
