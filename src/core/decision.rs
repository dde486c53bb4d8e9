//! The answer every algorithm gives: the five fields of the reply, with times
//! kept as absolute instants until the reply is written.

use super::time::{Nanos, Unit};

/// When a limited request could be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// The request was allowed: nothing to retry.
    NotLimited,
    /// Limited; the same request fits from this instant on, if nothing else
    /// is recorded meanwhile.
    At(Nanos),
    /// Limited, and it can never fit: the quantity exceeds the capacity.
    Never,
}

/// The outcome of one request against one limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub limited: bool,
    /// Capacity: the most units the limiter can hold.
    pub limit: u64,
    /// Units that could still be taken right now, after this request;
    /// never more than `limit`.
    pub remaining: u64,
    pub retry: Retry,
    /// The instant the limiter is back to full capacity (at or before `now`
    /// when it already is).
    pub reset_at: Nanos,
}

impl Decision {
    /// The reply's five integers, redis-cell's order: limited, limit,
    /// remaining, retry_after, reset_after. Times are measured from `now`
    /// in `unit`s and rounded up, so that waiting `retry_after` is enough.
    pub fn reply(&self, now: Nanos, unit: Unit) -> [i64; 5] {
        let after = |at: Nanos| to_i64(at.saturating_sub(now).ceil_in(unit));
        let retry_after = match self.retry {
            Retry::At(at) => after(at),
            Retry::NotLimited | Retry::Never => -1,
        };
        [
            i64::from(self.limited),
            to_i64(self.limit),
            to_i64(self.remaining.min(self.limit)),
            retry_after,
            after(self.reset_at),
        ]
    }
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn reply_rounds_times_up_and_marks_allowed_with_minus_one() {
        let d = Decision {
            limited: false,
            limit: 10,
            remaining: 9,
            retry: Retry::NotLimited,
            reset_at: Nanos::new(1_000 * MS + 1),
        };
        assert_eq!(d.reply(Nanos::new(MS), Unit::Millis), [0, 10, 9, -1, 1000]);
        assert_eq!(d.reply(Nanos::new(MS), Unit::Seconds), [0, 10, 9, -1, 1]);
    }

    #[test]
    fn reply_of_a_limited_request() {
        let d = Decision {
            limited: true,
            limit: 10,
            remaining: 0,
            retry: Retry::At(Nanos::new(2_500 * MS)),
            reset_at: Nanos::new(5_000 * MS),
        };
        assert_eq!(d.reply(Nanos::ZERO, Unit::Millis), [1, 10, 0, 2500, 5000]);
        assert_eq!(d.reply(Nanos::ZERO, Unit::Seconds), [1, 10, 0, 3, 5]);
        let never = Decision {
            retry: Retry::Never,
            ..d
        };
        assert_eq!(never.reply(Nanos::ZERO, Unit::Seconds), [1, 10, 0, -1, 5]);
    }

    #[test]
    fn instants_in_the_past_reply_zero() {
        let d = Decision {
            limited: false,
            limit: 1,
            remaining: 1,
            retry: Retry::NotLimited,
            reset_at: Nanos::ZERO,
        };
        assert_eq!(d.reply(Nanos::new(7), Unit::Millis), [0, 1, 1, -1, 0]);
    }
}
