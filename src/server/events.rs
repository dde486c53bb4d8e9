//! The server's side of `replication`: whether anything may replay the
//! write stream now (INFO replication and the AOF state), and the server
//! events after which it may.

use std::ffi::{c_int, c_void, CStr};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleEvent};

use super::api::{api, Api, LoadCtx};

/// Told when something may start replaying the write stream.
pub trait Watch {
    fn may_be_replayed();
}

/// Whether the AOF is on or anything else may replay the stream now.
pub fn stream_may_be_replayed(api: &Api, ctx: LoadCtx) -> bool {
    aof_on(api, ctx.raw()) || replication_active(api, ctx.raw())
}

/// Subscribes `W` to the events after which the stream may be replayed:
/// a replication role change, a replica change, a fork (a full sync forks
/// before a new replica receives anything), and a configuration change
/// that leaves the AOF on. False when a subscription failed.
pub fn subscribe<W: Watch>(api: &Api, ctx: LoadCtx) -> bool {
    let mut all = true;
    for id in [
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        raw::REDISMODULE_EVENT_REPLICA_CHANGE,
        raw::REDISMODULE_EVENT_FORK_CHILD,
        raw::REDISMODULE_EVENT_CONFIG,
    ] {
        let event = RedisModuleEvent { id, dataver: 1 };
        // SAFETY: called during OnLoad with the load context.
        if unsafe { (api.subscribe_to_server_event)(ctx.raw(), event, Some(on_event::<W>)) }
            != raw::REDISMODULE_OK as c_int
        {
            all = false;
        }
    }
    all
}

extern "C" fn on_event<W: Watch>(
    ctx: *mut RedisModuleCtx,
    event: RedisModuleEvent,
    _sub: u64,
    _data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        let replayed = match event.id {
            raw::REDISMODULE_EVENT_FORK_CHILD => {
                api().is_none_or(|api| replication_active(api, ctx))
            }
            raw::REDISMODULE_EVENT_CONFIG => api().is_none_or(|api| aof_on(api, ctx)),
            _ => true,
        };
        if replayed {
            W::may_be_replayed();
        }
    });
}

/// Whether the AOF is on (or being switched on).
fn aof_on(api: &Api, ctx: *mut RedisModuleCtx) -> bool {
    // SAFETY: `ctx` is a live context of the server.
    let flags = unsafe { (api.get_context_flags)(ctx) };
    flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0
}

/// True unless INFO replication shows a master with no replica and no
/// backlog. Any doubt answers true.
fn replication_active(api: &Api, ctx: *mut RedisModuleCtx) -> bool {
    let (get, field_c, field_int, free) = (
        api.get_server_info,
        api.server_info_get_field_c,
        api.server_info_get_field_signed,
        api.free_server_info,
    );
    // SAFETY: `ctx` is a live context; the info data is freed below.
    unsafe {
        let info = get(ctx, c"replication".as_ptr());
        if info.is_null() {
            return true;
        }
        let role = field_c(info, c"role".as_ptr());
        let is_master = !role.is_null() && CStr::from_ptr(role) == c"master";
        let mut err = 0;
        let replicas = field_int(info, c"connected_slaves".as_ptr(), &mut err);
        let replicas_known = err == 0;
        let backlog = field_int(info, c"repl_backlog_active".as_ptr(), &mut err);
        let backlog_known = err == 0;
        free(ctx, info);
        !(is_master && replicas_known && replicas == 0 && backlog_known && backlog == 0)
    }
}
