//! The only place that reads the clock: the master's wall clock, read once
//! per command. Replicas and the AOF never read it; they receive the
//! master's reading with the replicated command.
//!
//! # Which clock
//!
//! The server's own time of the running command, where the server offers
//! it: `RedisModule_CachedMicroseconds` (Redis 7.2 and newer, Valkey 8 and
//! newer). On Redis 7.0, which lacks it (and `RedisModule_Microseconds`),
//! `clock_gettime(CLOCK_REALTIME)`.
//!
//! Why the server's time rather than a clock call of our own: the module
//! and the server then agree on "now". A direct `clock_gettime` binds to
//! libc and bypasses whatever the server's clock goes through (libfaketime
//! in the daylight-saving tests: the server's `TIME` and key expiry follow
//! the faked clock, a module's own call does not), so the module would
//! set expiries on one clock that the server enforces on another.
//!
//! Why `CachedMicroseconds` rather than `RedisModule_Microseconds` (a
//! fresh `gettimeofday` per call): `CachedMicroseconds` returns
//! `server.ustime`, which the server sets when it enters the outermost
//! command (`enterExecutionUnit` from `call()`, in Redis and Valkey alike)
//! and, from the same reading, `cmd_time_snapshot`, the millisecond instant
//! its expiry logic uses for the whole command. Commands nested in it, the
//! ones of a MULTI/EXEC or of a Lua script, do not renew it. So:
//! - inside a transaction or a script every RL call sees one instant, the
//!   instant by which the server decides which keys are expired, and the
//!   one `TIME` reports (`TIME` replies from the same `server.ustime`):
//!   time stands still in a script, for the module as for the server. With
//!   `Microseconds` the module's "now" would run ahead of the server's
//!   during a script, and a key could be empty for the module (its units
//!   returned) while the server still holds it, or the reverse;
//! - it costs a load of a global behind one indirect call, where
//!   `clock_gettime` reads the vDSO's clock (a TSC read under a sequence
//!   lock). Measured: under callgrind (RL.THROTTLE on one hot key, `-P
//!   16`, Redis 8.2.3) `RM_CachedMicroseconds` is 2 instructions a call,
//!   and `scripts/profile.sh` counts 6,465 instructions per RL.THROTTLE
//!   against 6,488 with `clock_gettime`, a difference within its
//!   run-to-run noise (about 100); natively on the 2-core test machine,
//!   loaded, `clock_gettime(CLOCK_REALTIME)` took 56 to 63 ns a call and
//!   an indirect call returning a global 3 to 5 ns. On Redis 7.0 the
//!   lookup that finds the function absent adds nothing measurable (8,043
//!   instructions per RL.THROTTLE against 8,085 before);
//! - the resolution is the microsecond, which the specification asks for
//!   at least; the algorithms keep nanoseconds, so a reading is `µs × 1000`.
//!
//! The one exception in the servers: while a script runs for longer than
//! `busy-reply-threshold`, the server serves a few clients between its
//! steps and renews `server.ustime` (not the millisecond snapshot), so a
//! long script's later calls may read a later time: a fresher reading of
//! the same clock, as between two commands, which the algorithms handle.
//!
//! Replication is unchanged by the choice: the master's reading is what the
//! command propagates (the `AT` form), and a replica or an AOF replay
//! decides with that time, never its own. `tests/clock.rs` checks it all:
//! an expiry on a server under libfaketime follows its faked clock, a
//! replica of a faked master keeps the master's time, and inside MULTI/EXEC
//! and a Lua script every call's instant is the server's `TIME`.

use crate::core::Nanos;
use crate::server;

/// Wall-clock time since the Unix epoch, in nanoseconds: the server's time
/// of the running command where it gives modules one (see the module
/// documentation), else the system's wall clock. A clock set before 1970
/// reads as the epoch; the algorithms treat a clock that goes backwards
/// conservatively.
pub fn now() -> Nanos {
    if let Some(cached) = server::api().and_then(|api| api.cached_microseconds) {
        // SAFETY: a server function without arguments, resolved at load;
        // the module calls it only on the main thread, from a command.
        let us = unsafe { cached() };
        return Nanos::new(u64::try_from(us).unwrap_or(0).saturating_mul(1_000));
    }
    system_now()
}

/// `clock_gettime(CLOCK_REALTIME)`, for servers that do not give their time.
fn system_now() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    if rc != 0 {
        return Nanos::ZERO;
    }
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    Nanos::new(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}
