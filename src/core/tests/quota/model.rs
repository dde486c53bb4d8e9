//! The state machine against a model.

use super::*;

/// What a call of a run does: decide (and record when allowed) or refund
/// that many units.
#[derive(Clone, Copy, Debug)]
enum Call {
    Decide(u64),
    Refund(u64),
}

/// The model: every recording since the key last counted nothing, each
/// with the instant it was recorded at (a clock that went back records at
/// the latest instant seen) and the unit and zone it was recorded under,
/// and the units refunded since.
#[derive(Clone, Default)]
struct Recorded {
    records: Vec<(Nanos, u64, CalendarUnit, Zone)>,
    refunded: u64,
}

impl Recorded {
    fn used(&self) -> u64 {
        self.records.iter().map(|r| r.1).sum::<u64>() - self.refunded
    }

    /// Until when the recorded units count under `p`: the latest end of
    /// the period each recording fell in under its own unit and zone, or
    /// of the period under `p` that holds the latest recording.
    fn deadline(&self, p: &QuotaParams) -> Option<Nanos> {
        if self.used() == 0 {
            return None;
        }
        let own = self
            .records
            .iter()
            .map(|&(t, _, u, z)| period(t, u, z).1)
            .max()?;
        let latest = self.records.iter().map(|r| r.0).max()?;
        Some(own.max(period(latest, p.unit, p.zone).1))
    }

    /// What docs/DESIGN.md#quota answers, and the model after it when it records.
    fn decide(&self, now: Nanos, p: &QuotaParams, quantity: u64) -> (Decision, Option<Recorded>) {
        let deadline = self.deadline(p).filter(|&d| now < d);
        let used = if deadline.is_some() { self.used() } else { 0 };
        let fits = quantity <= p.limit;
        let allowed = fits && used + quantity <= p.limit;
        let after = used + if allowed { quantity } else { 0 };
        let next = (allowed && quantity > 0).then(|| {
            let mut next = if deadline.is_some() {
                self.clone()
            } else {
                Recorded::default()
            };
            let latest = next
                .records
                .iter()
                .map(|r| r.0)
                .max()
                .map_or(now, |l| l.max(now));
            next.records.push((latest, quantity, p.unit, p.zone));
            next
        });
        let reset_at = match (&next, deadline) {
            (Some(next), _) => next.deadline(p).unwrap(),
            (None, Some(d)) if after > 0 => d,
            _ => now,
        };
        let retry = match (fits, allowed, deadline) {
            (false, _, _) => Retry::Never,
            (true, false, Some(d)) => Retry::At(d),
            (true, false, None) => unreachable!("limited with nothing counted"),
            (true, true, _) => Retry::NotLimited,
        };
        let decision = Decision {
            limited: !allowed,
            limit: p.limit,
            remaining: p.limit - after.min(p.limit),
            retry,
            reset_at,
        };
        (decision, next)
    }

    fn refund(&mut self, now: Nanos, p: &QuotaParams, quantity: u64) {
        if self.deadline(p).is_some_and(|d| now < d) {
            self.refunded += quantity.min(self.used());
        }
    }
}

const UNIT_ZONES: [(CalendarUnit, &str); 8] = [
    (Minute, "UTC"),
    (Hour, "Asia/Kolkata"),
    (Hour, "Australia/Lord_Howe"),
    (Day, "Europe/Berlin"),
    (Day, "America/New_York"),
    (Week, "America/Sao_Paulo"),
    (Month, "+05:45"),
    (Year, "Pacific/Chatham"),
];

fn call() -> impl Strategy<Value = (usize, u64, u8, u64, Call)> {
    (
        0..UNIT_ZONES.len(),
        1u64..=6,
        any::<u8>(),
        any::<u64>(),
        prop_oneof![
            5 => (0u64..=7).prop_map(Call::Decide),
            1 => (0u64..=7).prop_map(Call::Refund),
        ],
    )
}

/// The clock of the next call: the same, seconds to weeks later, an
/// instant the last decision named (or a nanosecond before it), the last
/// hours before the end of some unit's period, or back.
fn next_now(now: u64, kind: u8, seed: u64, marks: &[u64]) -> u64 {
    let next = match kind % 10 {
        0 => now,
        1 => now + seed % (120 * S),
        2 => now + seed % (3 * 86_400 * S),
        3 => now + seed % (60 * 86_400 * S),
        4 | 5 if !marks.is_empty() => {
            let m = marks[(seed % marks.len() as u64) as usize];
            m - u64::from(kind % 10 == 5)
        }
        6 => now.saturating_sub(seed % (2 * 86_400 * S)),
        7 | 8 => {
            let (unit, name) = UNIT_ZONES[(seed % UNIT_ZONES.len() as u64) as usize];
            let end = period(Nanos::new(now), unit, zone(name)).1.get();
            end - 1 - (seed >> 8) % (6 * 3_600 * S)
        }
        _ => now + seed % 1_000,
    };
    next.clamp(1, at("2099-01-01T00:00:00Z").get())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn decide_refund_match_model(
        start in 1_500_000_000u64 * S..2_500_000_000 * S,
        calls in proptest::collection::vec(call(), 1..40),
    ) {
        let mut key = QuotaState::default();
        let mut model = Recorded::default();
        let mut now = start;
        let mut marks: Vec<u64> = Vec::new();
        for (which, limit, kind, seed, call) in calls {
            now = next_now(now, kind, seed, &marks);
            let (unit, name) = UNIT_ZONES[which];
            let p = params(limit, unit, name);
            let t = Nanos::new(now);
            match call {
                Call::Decide(quantity) => {
                    let (d, update) = key.decide(t, &p, quantity);
                    let (expected, next) = model.decide(t, &p, quantity);
                    prop_assert_eq!(d, expected, "{:?} {} at {}", call, name, now);
                    prop_assert_eq!(update.is_some(), next.is_some());
                    // Waiting until the retry instant is enough, and needed.
                    if let Retry::At(r) = d.retry {
                        prop_assert!(!key.decide(r, &p, quantity).0.limited);
                        prop_assert!(key.decide(Nanos::new(r.get() - 1), &p, quantity).0.limited);
                    }
                    if let (Some(update), Some(next)) = (update, next) {
                        key.apply(update);
                        model = next;
                    }
                    marks = vec![d.reset_at.get()];
                    if let Retry::At(r) = d.retry {
                        marks.push(r.get());
                    }
                }
                Call::Refund(quantity) => {
                    key.refund(t, &p, quantity);
                    model.refund(t, &p, quantity);
                    prop_assert_eq!(key.decide(t, &p, 0).0, model.decide(t, &p, 0).0);
                }
            }
            // Every state the key reaches is saved and read back as it is
            // (but the missing key's, which is never stored).
            if key != QuotaState::default() {
                prop_assert_eq!(QuotaState::decode(&key.encode()), Ok(key.clone()));
            }
        }
    }

    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = QuotaState::decode(&bytes);
    }

    #[test]
    fn a_damaged_fixture_is_refused_or_canonical(
        edits in proptest::collection::vec((0..FIXTURE.len(), any::<u8>()), 1..4),
    ) {
        let mut bytes = FIXTURE.to_vec();
        for (i, b) in edits {
            bytes[i] = b;
        }
        if let Ok(key) = QuotaState::decode(&bytes) {
            // Accepted: it is what a state encodes to (or names a zone this
            // database does not know, which re-encodes under the marker).
            let again = key.encode();
            prop_assert!(again == bytes || again.ends_with(b"Etc/Unknown"));
            let p = params(5, Day, "Asia/Kolkata");
            let _ = key.decide(Nanos::new(FIXTURE.len() as u64), &p, 1);
        }
    }
}

#[test]
fn an_update_is_small() {
    // used, four instants, the unit and the zone, the block's end: eight
    // words, still one 64-byte allocation.
    assert_eq!(std::mem::size_of::<QuotaState>(), 64);
    assert_eq!(std::mem::size_of::<QuotaUpdate>(), 64);
    assert_eq!(std::mem::size_of::<Zone>(), 8);
}
