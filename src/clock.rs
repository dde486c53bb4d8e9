//! The only place that reads the clock: the master's wall clock, read once
//! per command. Replicas and the AOF never read it; they receive the
//! master's reading with the replicated command.

use crate::core::Nanos;

/// Wall-clock time since the Unix epoch, in nanoseconds. A clock set before
/// 1970 reads as the epoch; the algorithms treat a clock that goes
/// backwards conservatively.
pub fn now() -> Nanos {
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
