//! The one time type of the module: nanoseconds, as an instant since the
//! Unix epoch or as a duration. Arithmetic saturates instead of wrapping or
//! panicking, so no timestamp a client or an RDB payload supplies can abort
//! the server.

/// Nanoseconds: an instant since the Unix epoch, or a duration.
///
/// `u64` nanoseconds reach the year 2554. Instants and durations share the
/// type, as in `governor`'s `Nanos`; the names of variables say which is meant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    pub const fn new(nanos: u64) -> Nanos {
        Nanos(nanos)
    }

    pub const fn get(self) -> u64 {
        self.0
    }

    pub const fn saturating_add(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(other.0))
    }

    pub const fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }

    /// Nanoseconds from `u128`, saturating at `Nanos::MAX`.
    pub fn saturating_from_u128(nanos: u128) -> Nanos {
        Nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// This duration in whole `unit`s, rounded up. Each unit's divisor is
    /// a constant in its own arm, which the compiler turns into a
    /// multiplication instead of a `div` instruction (every reply makes
    /// one or two of these).
    #[inline]
    pub const fn ceil_in(self, unit: TimeUnit) -> u64 {
        match unit {
            TimeUnit::Seconds => self.0.div_ceil(TimeUnit::Seconds.nanos()),
            TimeUnit::Millis => self.0.div_ceil(TimeUnit::Millis.nanos()),
        }
    }
}

/// The unit of the time arguments and of the times in a reply: seconds, or
/// milliseconds with the `MS` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
}

impl TimeUnit {
    /// Nanoseconds in one unit.
    pub const fn nanos(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Millis => 1_000_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Nanos::MAX.saturating_add(Nanos::new(1)), Nanos::MAX);
        assert_eq!(Nanos::ZERO.saturating_sub(Nanos::new(1)), Nanos::ZERO);
        assert_eq!(Nanos::saturating_from_u128(u128::MAX), Nanos::MAX);
    }

    #[test]
    fn ceil_rounds_up_to_the_unit() {
        assert_eq!(Nanos::new(0).ceil_in(TimeUnit::Millis), 0);
        assert_eq!(Nanos::new(1).ceil_in(TimeUnit::Millis), 1);
        assert_eq!(Nanos::new(1_000_000).ceil_in(TimeUnit::Millis), 1);
        assert_eq!(Nanos::new(1_000_001).ceil_in(TimeUnit::Millis), 2);
        assert_eq!(Nanos::new(1_000_000_001).ceil_in(TimeUnit::Seconds), 2);
        assert_eq!(Nanos::MAX.ceil_in(TimeUnit::Seconds), 18_446_744_074);
    }
}
