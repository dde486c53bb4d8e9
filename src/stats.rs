//! Call counters: per row (a command, or the kind of a limiter command),
//! calls, allowed, limited and errors. They count client calls (not
//! commands replayed from the master or the AOF). Which rows there are,
//! and how INFO names them, is the commands' business
//! (`commands/info.rs`); this file only counts.

use std::sync::atomic::{AtomicU64, Ordering};

/// How a client call ended.
#[derive(Clone, Copy)]
pub enum Call {
    Allowed,
    Limited,
    /// Answered without an allowed/limited outcome (RL.INSPECT).
    Answered,
    Error,
}

/// The counters of one row.
struct Counters {
    calls: AtomicU64,
    allowed: AtomicU64,
    limited: AtomicU64,
    errors: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Counters = Counters {
    calls: AtomicU64::new(0),
    allowed: AtomicU64::new(0),
    limited: AtomicU64::new(0),
    errors: AtomicU64::new(0),
};

/// What one row counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub calls: u64,
    pub allowed: u64,
    pub limited: u64,
    pub errors: u64,
}

/// `ROWS` rows of counters.
pub struct Stats<const ROWS: usize> {
    rows: [Counters; ROWS],
}

impl<const ROWS: usize> Stats<ROWS> {
    pub const fn new() -> Stats<ROWS> {
        Stats { rows: [ZERO; ROWS] }
    }

    /// Counts one call of row `row` and its outcome. Commands run on the
    /// server's main thread only, which is also where INFO and CONFIG
    /// RESETSTAT read and reset the counters: a plain load and store
    /// suffice, without the locked read-modify-write of `fetch_add`.
    #[inline]
    pub fn record(&self, row: usize, call: Call) {
        let Some(c) = self.rows.get(row) else {
            return;
        };
        bump(&c.calls);
        match call {
            Call::Allowed => bump(&c.allowed),
            Call::Limited => bump(&c.limited),
            Call::Error => bump(&c.errors),
            Call::Answered => {}
        }
    }

    /// What row `row` counted; zeros past the last row.
    pub fn read(&self, row: usize) -> Counts {
        let Some(c) = self.rows.get(row) else {
            return Counts::default();
        };
        let read = |v: &AtomicU64| v.load(Ordering::Relaxed);
        Counts {
            calls: read(&c.calls),
            allowed: read(&c.allowed),
            limited: read(&c.limited),
            errors: read(&c.errors),
        }
    }

    /// Every counter back to zero (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        for c in &self.rows {
            for field in [&c.calls, &c.allowed, &c.limited, &c.errors] {
                field.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// `N` counters of events (not of calls), each on its own.
pub struct Tallies<const N: usize> {
    counts: [AtomicU64; N],
}

impl<const N: usize> Tallies<N> {
    #[allow(clippy::declare_interior_mutable_const)]
    const ZERO: AtomicU64 = AtomicU64::new(0);

    pub const fn new() -> Tallies<N> {
        Tallies {
            counts: [Self::ZERO; N],
        }
    }

    /// Counts one event of tally `i` (on the main thread, as `record`).
    #[inline]
    pub fn count(&self, i: usize) {
        if let Some(c) = self.counts.get(i) {
            bump(c);
        }
    }

    /// What tally `i` counted; 0 past the last.
    pub fn read(&self, i: usize) -> u64 {
        self.counts.get(i).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Every tally back to zero (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// One counter, outside the rows (INFO's `blocks_started`, ...).
pub struct Tally(AtomicU64);

impl Tally {
    pub const fn new() -> Tally {
        Tally(AtomicU64::new(0))
    }

    /// Counts one (on the main thread only, as `Stats::record`).
    #[inline]
    pub fn bump(&self) {
        bump(&self.0);
    }

    pub fn read(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Back to zero (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

fn bump(counter: &AtomicU64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_apart_and_reset_together() {
        let stats = Stats::<3>::new();
        stats.record(0, Call::Allowed);
        stats.record(0, Call::Limited);
        stats.record(2, Call::Error);
        stats.record(1, Call::Answered);
        stats.record(7, Call::Allowed);
        let counts = |calls, allowed, limited, errors| Counts {
            calls,
            allowed,
            limited,
            errors,
        };
        assert_eq!(stats.read(0), counts(2, 1, 1, 0));
        assert_eq!(stats.read(1), counts(1, 0, 0, 0));
        assert_eq!(stats.read(2), counts(1, 0, 0, 1));
        assert_eq!(stats.read(7), Counts::default());
        stats.reset();
        assert_eq!(stats.read(0), Counts::default());
    }

    #[test]
    fn tallies_count_apart_and_reset_together() {
        let tallies = Tallies::<2>::new();
        tallies.count(1);
        tallies.count(1);
        tallies.count(5);
        assert_eq!(
            (tallies.read(0), tallies.read(1), tallies.read(5)),
            (0, 2, 0)
        );
        tallies.reset();
        assert_eq!(tallies.read(1), 0);
    }

    #[test]
    fn a_tally_counts_and_resets() {
        let tally = Tally::new();
        tally.bump();
        tally.bump();
        assert_eq!(tally.read(), 2);
        tally.reset();
        assert_eq!(tally.read(), 0);
    }
}
