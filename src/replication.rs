//! Whether anything may replay this server's write stream, which decides
//! how a change is propagated.
//!
//! A change must reach replicas and the AOF with the master's clock
//! (`RedisModule_Replicate` of the arguments plus `AT <ns>`). That call costs
//! the server about as much as the whole command: it looks the command up
//! by name and builds a new argument vector, even when nothing listens.
//! When nothing can replay the stream (AOF off, no replica, no replication
//! backlog) the module propagates with `RedisModule_ReplicateVerbatim`
//! instead, which the server drops at once; both mark the dataset dirty, so
//! RDB save points still trigger.
//!
//! "Nothing listens" is decided conservatively, once true it stays true:
//! at load from INFO replication and the AOF state, then on every
//! replication role change, replica change, and fork (a full sync forks
//! before a new replica receives anything), and on every configuration
//! change that leaves the AOF on (`CONFIG SET appendonly yes`), the module
//! assumes from then on that the stream is replayed. So a call reads one
//! flag, not the server's context flags.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

use crate::server::{self, Api};

/// True once anything may replay the replication stream: a replica, the
/// replication backlog, or a fork that may feed a new replica.
static STREAM_MAY_BE_REPLAYED: AtomicBool = AtomicBool::new(true);

/// Whether a change made now must carry the master's clock.
pub fn needs_clock() -> bool {
    STREAM_MAY_BE_REPLAYED.load(Ordering::Relaxed)
}

/// Reads the current state and subscribes to the events that change it.
pub fn init(api: &Api, ctx: *mut raw::RedisModuleCtx) {
    let replayed = aof_on(api, ctx) || replication_active(api, ctx);
    STREAM_MAY_BE_REPLAYED.store(replayed, Ordering::Relaxed);
    for id in [
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        raw::REDISMODULE_EVENT_REPLICA_CHANGE,
        raw::REDISMODULE_EVENT_FORK_CHILD,
        raw::REDISMODULE_EVENT_CONFIG,
    ] {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        // SAFETY: called during OnLoad with the load context.
        if unsafe { (api.subscribe_to_server_event)(ctx, event, Some(on_event)) }
            != raw::REDISMODULE_OK as c_int
        {
            STREAM_MAY_BE_REPLAYED.store(true, Ordering::Relaxed);
        }
    }
}

extern "C" fn on_event(
    ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    _sub: u64,
    _data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        let replayed = match event.id {
            raw::REDISMODULE_EVENT_FORK_CHILD => {
                server::api().is_none_or(|api| replication_active(api, ctx))
            }
            raw::REDISMODULE_EVENT_CONFIG => server::api().is_none_or(|api| aof_on(api, ctx)),
            _ => true,
        };
        if replayed {
            STREAM_MAY_BE_REPLAYED.store(true, Ordering::Relaxed);
        }
    });
}

/// Whether the AOF is on (or being switched on).
fn aof_on(api: &Api, ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: `ctx` is a live context of the server.
    let flags = unsafe { (api.get_context_flags)(ctx) };
    flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0
}

/// True unless INFO replication shows a master with no replica and no
/// backlog. Any doubt answers true.
fn replication_active(api: &Api, ctx: *mut raw::RedisModuleCtx) -> bool {
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
