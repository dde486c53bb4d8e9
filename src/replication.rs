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

use crate::server::{self, Api};

/// True once anything may replay the replication stream: a replica, the
/// replication backlog, or a fork that may feed a new replica.
static STREAM_MAY_BE_REPLAYED: AtomicBool = AtomicBool::new(true);

/// Whether a change made now must carry the master's clock, given the
/// running command's context flags.
pub fn needs_clock(context_flags: c_int) -> bool {
    context_flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0
        || STREAM_MAY_BE_REPLAYED.load(Ordering::Relaxed)
}

/// Reads the current state and subscribes to the events that change it.
pub fn init(api: &Api, ctx: *mut raw::RedisModuleCtx) {
    STREAM_MAY_BE_REPLAYED.store(replication_active(api, ctx), Ordering::Relaxed);
    for id in [
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        raw::REDISMODULE_EVENT_REPLICA_CHANGE,
        raw::REDISMODULE_EVENT_FORK_CHILD,
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
        let replayed = event.id != raw::REDISMODULE_EVENT_FORK_CHILD
            || server::api().is_none_or(|api| replication_active(api, ctx));
        if replayed {
            STREAM_MAY_BE_REPLAYED.store(true, Ordering::Relaxed);
        }
    });
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
