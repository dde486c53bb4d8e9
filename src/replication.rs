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

use std::sync::atomic::{AtomicBool, Ordering};

use crate::server::{self, Api, LoadCtx};

/// True once anything may replay the replication stream: a replica, the
/// replication backlog, or a fork that may feed a new replica.
static STREAM_MAY_BE_REPLAYED: AtomicBool = AtomicBool::new(true);

/// Whether a change made now must carry the master's clock.
#[inline]
pub fn needs_clock() -> bool {
    STREAM_MAY_BE_REPLAYED.load(Ordering::Relaxed)
}

/// Reads the current state and subscribes to the events that change it.
pub fn init(api: &Api, ctx: LoadCtx) {
    let replayed = server::stream_may_be_replayed(api, ctx);
    STREAM_MAY_BE_REPLAYED.store(replayed, Ordering::Relaxed);
    if !server::subscribe::<Replayed>(api, ctx) {
        STREAM_MAY_BE_REPLAYED.store(true, Ordering::Relaxed);
    }
}

/// What the server's events tell.
struct Replayed;

impl server::Watch for Replayed {
    fn may_be_replayed() {
        STREAM_MAY_BE_REPLAYED.store(true, Ordering::Relaxed);
    }
}
