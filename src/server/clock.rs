//! The two clock reads `clock::now` chooses from (docs/DESIGN.md#which-clock).

use super::api::api;

/// The server's time of the running command, in µs since the epoch
/// (`RedisModule_CachedMicroseconds`); `None` on a server without it
/// (Redis 7.0).
#[inline]
pub fn cached_microseconds() -> Option<i64> {
    let cached = api()?.cached_microseconds?;
    // SAFETY: a server function without arguments, resolved at load; the
    // module calls it only on the main thread, from a command.
    Some(unsafe { cached() })
}

/// `clock_gettime(CLOCK_REALTIME)` as seconds and nanoseconds; `None` when
/// the call fails.
pub fn system_time() -> Option<(i64, i64)> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (rc == 0).then_some((ts.tv_sec, ts.tv_nsec))
}
