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
//! "Nothing listens" is decided conservatively and never goes back to true
//! on its own: at load from INFO replication, then on every replication
//! role change, replica change, and fork (a full sync forks before a new
//! replica receives anything), the module assumes from then on that the
//! stream is replayed. The AOF is checked on every call.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

use crate::server::Ctx;

/// True once anything may replay the replication stream.
static REPLAYED: AtomicBool = AtomicBool::new(true);

/// Whether a change made now must carry the master's clock, given the
/// running command's context flags.
pub fn needs_clock(context_flags: c_int) -> bool {
    context_flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0 || REPLAYED.load(Ordering::Relaxed)
}

/// Reads the current state and subscribes to the events that change it.
pub fn init(ctx: Ctx) {
    REPLAYED.store(replication_active(ctx), Ordering::Relaxed);
    let Some(subscribe) = crate::api!(RedisModule_SubscribeToServerEvent) else {
        REPLAYED.store(true, Ordering::Relaxed);
        return;
    };
    for id in [
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        raw::REDISMODULE_EVENT_REPLICA_CHANGE,
        raw::REDISMODULE_EVENT_FORK_CHILD,
    ] {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        // SAFETY: called during OnLoad with the load context.
        if unsafe { subscribe(ctx, event, Some(on_event)) } != raw::REDISMODULE_OK as c_int {
            REPLAYED.store(true, Ordering::Relaxed);
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
        let replayed = event.id != raw::REDISMODULE_EVENT_FORK_CHILD || replication_active(ctx);
        if replayed {
            REPLAYED.store(true, Ordering::Relaxed);
        }
    });
}

/// True unless INFO replication shows a master with no replica and no
/// backlog. Any doubt answers true.
fn replication_active(ctx: Ctx) -> bool {
    let (Some(get), Some(field_c), Some(field_int), Some(free)) = (
        crate::api!(RedisModule_GetServerInfo),
        crate::api!(RedisModule_ServerInfoGetFieldC),
        crate::api!(RedisModule_ServerInfoGetFieldSigned),
        crate::api!(RedisModule_FreeServerInfo),
    ) else {
        return true;
    };
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
