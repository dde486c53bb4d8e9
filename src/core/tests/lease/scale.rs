//! RL.LEASE at scale: the memory a lease takes, 10,000 leases, and the
//! tree rebuilt when a way down is longer than its path holds.

use super::*;

/// The id of lease `i`: 16 bytes.
fn id16(i: u64) -> Vec<u8> {
    format!("lease-{i:010}").into_bytes()
}

#[test]
fn ten_thousand_leases_of_16_byte_ids_take_at_most_64_bytes_each() {
    let p = params(MAX_LIMIT, 3_600 * S);
    let mut state = LeaseState::default();
    for i in 0..10_000 {
        assert_eq!(id16(i).len(), 16);
        assert!(!take(&mut state, NOW + i, &p, &id16(i), 1).limited);
    }
    state.check();
    let per_lease = state.mem_usage() as f64 / 10_000.0;
    eprintln!("10,000 leases of 16-byte ids: {per_lease:.1} bytes a lease");
    assert!(
        state.mem_usage() <= 64 * 10_000,
        "{per_lease} bytes a lease"
    );
    // A decoded state is allocated to fit, and the AVL depth is bounded.
    let decoded = LeaseState::decode(&state.encode()).expect("decodes");
    assert!(decoded.mem_usage() <= state.mem_usage());
    assert!(state.height() <= 19 && decoded.height() <= 14);
    // Releasing gives the memory back.
    for i in 10..10_000 {
        assert!(state.release(Nanos::new(NOW + 10_000), &id16(i)));
    }
    state.check();
    assert!(
        state.mem_usage() <= 2_048,
        "{} bytes for 10 leases",
        state.mem_usage()
    );
    // Empty, it holds nothing but itself.
    for i in 0..10 {
        assert!(state.release(Nanos::new(NOW + 10_000), &id16(i)));
    }
    assert_eq!(state.mem_usage(), std::mem::size_of::<LeaseState>());
}

/// The key of the cost target: 10,000 leases, renewed and released in a
/// random order and expiring in bulk, keep the structure valid.
#[test]
fn ten_thousand_leases_renewed_released_and_expired() {
    let long = params(MAX_LIMIT, 3_600 * S);
    let short = params(MAX_LIMIT, S);
    let mut state = LeaseState::default();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..10_000u64 {
        let p = if i.is_multiple_of(2) { &long } else { &short };
        take(&mut state, NOW + i, p, &id16(i), 1 + i % 3);
    }
    for t in 0..5_000 {
        let i = next() % 10_000;
        match next() % 3 {
            0 => {
                take(&mut state, NOW + 10_000 + t, &long, &id16(i), 1);
            }
            1 => {
                state.release(Nanos::new(NOW + 10_000 + t), &id16(i));
            }
            _ => {
                take(&mut state, NOW + 10_000 + t, &long, &id16(10_000 + t), 2);
            }
        }
    }
    state.check();
    // The short leases expire, and go at the next grant.
    let later = NOW + 2 * S;
    let held = held_of(&state, later);
    take(&mut state, later, &long, b"late", 1);
    state.check();
    assert_eq!(held_of(&state, later), held + 1);
    assert!(state.iter().all(|(_, _, expiry)| expiry.get() > later));
    assert_eq!(LeaseState::decode(&state.encode()), Ok(state.clone()));
}

/// A way down the tree longer than the insertion's or removal's path
/// holds (never with at most `MAX_LIMIT` leases: an AVL tree of them is at
/// most 28 deep) makes it rebuild the tree instead of retracing its
/// steps. With the path cut to 0, 1 and 2 nodes (a test-only limit), grants,
/// renewals, releases and expiries on ids of one length and of several
/// keep the state valid, and give the same leases as the usual path.
#[test]
fn a_full_path_rebuilds_the_tree() {
    use crate::core::lease::PATH_LIMIT;
    let usual = PATH_LIMIT.with(|limit| limit.get());
    let long = params(MAX_LIMIT, 3_600 * S);
    let short = params(MAX_LIMIT, S);
    let run = |limit: usize, mixed: bool| {
        PATH_LIMIT.with(|l| l.set(limit));
        let id = |i: u64| match mixed && i.is_multiple_of(3) {
            true => format!("x{i}").into_bytes(),
            false => id16(i),
        };
        let mut state = LeaseState::default();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for t in 0..600u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = x % 150;
            let now = NOW + t * (S / 50);
            match x >> 60 {
                0..=2 => {
                    state.release(Nanos::new(now), &id(i));
                }
                3..=7 => {
                    take(&mut state, now, &short, &id(i), 1 + i % 3);
                }
                _ => {
                    take(&mut state, now, &long, &id(i), 1 + i % 2);
                }
            }
            state.check();
        }
        PATH_LIMIT.with(|l| l.set(usual));
        state
    };
    for mixed in [false, true] {
        let expected = run(usual, mixed);
        assert!(expected.iter().count() > 20);
        for limit in [0, 1, 2] {
            let state = run(limit, mixed);
            assert_eq!(leases_of(&state), leases_of(&expected), "limit {limit}");
            assert_eq!(state.encode(), expected.encode());
        }
    }
}

/// Not a test: what acquire, renew and release cost on the state alone
/// with 10 and with 10,000 leases held, the least per call over batches
/// of distinct random leases (this machine is shared: the least is the
/// least disturbed). A batch renews its leases, releases them, acquires
/// them again (new leases) and peeks at them. Run with `cargo test
/// --release --lib -- --ignored --nocapture lease_costs`.
#[test]
#[ignore = "a measurement, not a test"]
fn lease_costs() {
    use std::hint::black_box;
    use std::time::Instant;
    let p = params(MAX_LIMIT, 3_600 * S);
    for held in [10usize, 10_000] {
        let ids: Vec<Vec<u8>> = (0..held as u64).map(id16).collect();
        let mut state = LeaseState::default();
        let mut now = NOW;
        for id in &ids {
            now += 1;
            take(&mut state, now, &p, id, 1);
        }
        // A random order of the leases (xorshift, Fisher-Yates).
        let mut order: Vec<usize> = (0..held).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..held).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let batch = held.min(1_000);
        let mut least = [f64::MAX; 4];
        for b in 0..2_000_000 / batch {
            let at = b * batch % held;
            let window: Vec<&[u8]> = order[at..at + batch]
                .iter()
                .map(|&i| ids[i].as_slice())
                .collect();
            let mut time = |phase: usize, call: &mut dyn FnMut(&[u8])| {
                let start = Instant::now();
                for id in &window {
                    call(id);
                }
                let ns = start.elapsed().as_nanos() as f64 / batch as f64;
                least[phase] = least[phase].min(ns);
            };
            time(0, &mut |id| {
                now += 1;
                black_box(take(&mut state, now, &p, id, 1));
            });
            time(1, &mut |id| {
                black_box(state.release(Nanos::new(now), id));
            });
            time(2, &mut |id| {
                now += 1;
                black_box(take(&mut state, now, &p, id, 1));
            });
            time(3, &mut |id| {
                black_box(state.decide(Nanos::new(now), &p, id, 0));
            });
        }
        let [renew, release, acquire, peek] = least;
        eprintln!(
            "{held} leases: renew {renew:.0} ns, release {release:.0} ns, acquire {acquire:.0} ns, peek {peek:.0} ns, {} bytes",
            state.mem_usage()
        );
    }
}
