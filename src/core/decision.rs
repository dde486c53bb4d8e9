//! The answer every algorithm gives: the five fields of the reply, with times
//! kept as absolute instants until the reply is written.

use super::time::{Nanos, TimeUnit};

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
    /// Allowed for its turn (MAXWAIT): recorded now, the request goes at
    /// this instant (at or after `now`; the reply's wait, 0 when it may go
    /// at once).
    Turn(Nanos),
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
    pub fn reply(&self, now: Nanos, unit: TimeUnit) -> [i64; 5] {
        let after = |at: Nanos| to_i64(at.saturating_sub(now).ceil_in(unit));
        let retry_after = match self.retry {
            Retry::At(at) | Retry::Turn(at) => after(at),
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

/// The binding limit of a request decided against several limits at once:
/// the index of the decision whose five fields speak for all of them,
/// chosen among the limits that `enforced` names (a SHADOW limit never
/// binds).
///
/// - Some enforced limit refused: the refusing limit that frees last, its
///   `retry_after` the largest (one that can never fit counts as largest).
/// - All allowed: the limit with the longest wait for its turn (MAXWAIT;
///   without it no limit waits), then the least remaining; ties go to the
///   larger `reset_after`.
///
/// Further ties go to the lower index. `None` when no limit is enforced.
#[inline(always)]
pub fn binding(decisions: &[Decision], enforced: impl Fn(usize) -> bool) -> Option<usize> {
    let refused = decisions
        .iter()
        .enumerate()
        .any(|(i, d)| d.limited && enforced(i));
    binding_of::<true>(decisions, enforced, refused)
}

/// [`binding`] of a call without SHADOW limits or MAXWAIT (every limit
/// enforced, none waits for a turn), `refused` whether some limit refused
/// (which the caller knows already): the same rules, without the steps
/// that cannot change its answer.
#[inline(always)]
pub fn plain_binding(decisions: &[Decision], refused: bool) -> Option<usize> {
    binding_of::<false>(decisions, |_| true, refused)
}

/// [`binding`]; `EXTRAS`: whether some limit may be SHADOW or wait;
/// `any_limited`: whether some enforced limit refused.
#[inline(always)]
fn binding_of<const EXTRAS: bool>(
    decisions: &[Decision],
    enforced: impl Fn(usize) -> bool,
    any_limited: bool,
) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, d) in decisions.iter().enumerate() {
        if !enforced(i) || (any_limited && !d.limited) {
            continue;
        }
        let better = match best.map(|b| &decisions[b]) {
            None => true,
            Some(b) if any_limited => retry_rank(d.retry) > retry_rank(b.retry),
            Some(b) => {
                let (dw, bw) = match EXTRAS {
                    true => (turn(d.retry), turn(b.retry)),
                    false => (Nanos::ZERO, Nanos::ZERO),
                };
                dw > bw
                    || (dw == bw
                        && (d.remaining < b.remaining
                            || (d.remaining == b.remaining && d.reset_at > b.reset_at)))
            }
        };
        if better {
            best = Some(i);
        }
    }
    best
}

/// The instant an allowed request goes: its turn, or at once (`ZERO`
/// ranks below every turn).
fn turn(retry: Retry) -> Nanos {
    match retry {
        Retry::Turn(at) => at,
        Retry::NotLimited | Retry::At(_) | Retry::Never => Nanos::ZERO,
    }
}

/// Orders retries: later instants rank higher, never-fits highest.
fn retry_rank(retry: Retry) -> (u8, Nanos) {
    match retry {
        Retry::NotLimited | Retry::Turn(_) => (0, Nanos::ZERO),
        Retry::At(at) => (1, at),
        Retry::Never => (2, Nanos::ZERO),
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
        assert_eq!(
            d.reply(Nanos::new(MS), TimeUnit::Millis),
            [0, 10, 9, -1, 1000]
        );
        assert_eq!(
            d.reply(Nanos::new(MS), TimeUnit::Seconds),
            [0, 10, 9, -1, 1]
        );
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
        assert_eq!(
            d.reply(Nanos::ZERO, TimeUnit::Millis),
            [1, 10, 0, 2500, 5000]
        );
        assert_eq!(d.reply(Nanos::ZERO, TimeUnit::Seconds), [1, 10, 0, 3, 5]);
        let never = Decision {
            retry: Retry::Never,
            ..d
        };
        assert_eq!(
            never.reply(Nanos::ZERO, TimeUnit::Seconds),
            [1, 10, 0, -1, 5]
        );
    }

    fn allowed(remaining: u64, reset: u64) -> Decision {
        Decision {
            limited: false,
            limit: 10,
            remaining,
            retry: Retry::NotLimited,
            reset_at: Nanos::new(reset),
        }
    }

    fn limited(retry: Retry) -> Decision {
        Decision {
            limited: true,
            limit: 10,
            remaining: 0,
            retry,
            reset_at: Nanos::new(100),
        }
    }

    #[test]
    fn the_binding_limit() {
        // decisions => binding index
        #[rustfmt::skip]
        let cases: &[(&[Decision], Option<usize>)] = &[
            (&[], None),
            (&[allowed(3, 10)], Some(0)),
            // allowed: least remaining ...
            (&[allowed(3, 10), allowed(1, 5), allowed(2, 50)], Some(1)),
            // ... ties: the larger reset, then the lower index
            (&[allowed(1, 10), allowed(1, 50), allowed(1, 50)], Some(1)),
            // limited: the refusing limit with the latest retry
            (&[allowed(0, 99), limited(Retry::At(Nanos::new(7))), limited(Retry::At(Nanos::new(9)))], Some(2)),
            // never-fits beats any instant; ties go to the lower index
            (&[limited(Retry::At(Nanos::new(u64::MAX))), limited(Retry::Never), limited(Retry::Never)], Some(1)),
            (&[limited(Retry::At(Nanos::new(5))), limited(Retry::At(Nanos::new(5)))], Some(0)),
        ];
        for (i, (decisions, expected)) in cases.iter().enumerate() {
            assert_eq!(binding(decisions, |_| true), *expected, "case {i}");
            let refused = decisions.iter().any(|d| d.limited);
            assert_eq!(plain_binding(decisions, refused), *expected, "case {i}");
        }
    }

    fn turn(at: u64, remaining: u64) -> Decision {
        Decision {
            retry: Retry::Turn(Nanos::new(at)),
            ..allowed(remaining, 10)
        }
    }

    #[test]
    fn the_binding_limit_with_waits_and_shadows() {
        // decisions, shadow limits => binding index
        #[rustfmt::skip]
        let cases: &[(&[Decision], &[usize], Option<usize>)] = &[
            // MAXWAIT: the longest wait binds, before the least remaining ...
            (&[turn(5, 0), turn(9, 3), turn(2, 1)], &[], Some(1)),
            // ... ties as without it.
            (&[turn(9, 2), turn(9, 1)], &[], Some(1)),
            // A refusing SHADOW limit binds nothing: the enforced ones do.
            (&[allowed(3, 10), limited(Retry::Never), allowed(2, 10)], &[1], Some(2)),
            (&[limited(Retry::At(Nanos::new(3))), limited(Retry::Never)], &[1], Some(0)),
            (&[turn(1, 1), turn(9, 0)], &[1], Some(0)),
            (&[allowed(3, 10)], &[0], None),
        ];
        for (i, (decisions, shadow, expected)) in cases.iter().enumerate() {
            assert_eq!(
                binding(decisions, |j| !shadow.contains(&j)),
                *expected,
                "case {i}"
            );
        }
        assert_eq!(turn(7, 1).reply(Nanos::new(9), TimeUnit::Millis)[3], 0);
        assert_eq!(
            turn(2_000_001, 1).reply(Nanos::new(1), TimeUnit::Millis)[3],
            2
        );
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
        assert_eq!(d.reply(Nanos::new(7), TimeUnit::Millis), [0, 1, 1, -1, 0]);
    }
}
