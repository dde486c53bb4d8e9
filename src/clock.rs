//! The only place that reads the clock: the master's wall clock, read once
//! per command. Replicas and the AOF never read it; they receive the
//! master's reading with the replicated command. Which clock, and why:
//! docs/DESIGN.md#which-clock.

use crate::core::Nanos;
use crate::server;

/// Wall-clock time since the Unix epoch, in nanoseconds: the server's time
/// of the running command where it gives modules one, else the system's
/// wall clock. A clock set before 1970 reads as the epoch; the algorithms
/// treat a clock that goes backwards conservatively.
#[inline]
pub fn now() -> Nanos {
    if let Some(us) = server::cached_microseconds() {
        return Nanos::new(u64::try_from(us).unwrap_or(0).saturating_mul(1_000));
    }
    system_now()
}

/// The system's wall clock, for servers that do not give their time.
fn system_now() -> Nanos {
    let Some((secs, nanos)) = server::system_time() else {
        return Nanos::ZERO;
    };
    let secs = u64::try_from(secs).unwrap_or(0);
    let nanos = u64::try_from(nanos).unwrap_or(0);
    Nanos::new(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}
