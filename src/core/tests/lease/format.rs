//! RL.LEASE's saved format: round trip, canonical bytes, a pinned fixture,
//! hostile payloads.

use super::*;

/// Builds the leases `(id, weight, expiry)` by granting them in this
/// order at the epoch, each with its expiry as ttl.
fn granted(leases: &[(Vec<u8>, u64, u64)]) -> LeaseState {
    let mut state = LeaseState::default();
    for (id, weight, expiry) in leases {
        let d = take(&mut state, 0, &params(MAX_LIMIT, *expiry), id, *weight);
        assert!(!d.limited);
    }
    state
}

#[test]
fn two_histories_one_encoding() {
    let p = params(5, 10 * S);
    // a (2) and b (1) at NOW, c (1) at NOW + 1 s.
    let mut first = LeaseState::default();
    take(&mut first, NOW, &p, b"a", 2);
    take(&mut first, NOW, &p, b"b", 1);
    take(&mut first, NOW + S, &p, b"c", 1);
    // The same leases after renewals, a release, an expired lease and
    // refusals, in another order.
    let mut second = LeaseState::default();
    take(&mut second, NOW - 20 * S, &p, b"old", 5);
    take(&mut second, NOW - 5 * S, &p, b"c", 2);
    take(&mut second, NOW, &p, b"b", 1);
    take(&mut second, NOW, &p, b"x", 2);
    assert!(take(&mut second, NOW, &p, b"y", 1).limited);
    assert!(second.release(Nanos::new(NOW), b"x"));
    take(&mut second, NOW, &p, b"a", 2);
    take(&mut second, NOW + S, &p, b"c", 1);
    second.check();
    assert_eq!(first, second);
    assert_eq!(first.encode(), second.encode());
    let decoded = LeaseState::decode(&second.encode()).expect("decodes");
    decoded.check();
    assert_eq!(decoded, first);
    assert_eq!(decoded.encode(), first.encode());
}

/// Two leases: `job-1` (1 unit) granted at `NOW` and `job-2` (3 units)
/// at `NOW` + 1 ms, both for 30 s.
#[rustfmt::skip]
const LEASES: [u8; 27] = [
    // 2 leases
    0x02,
    // expiry: 1_700_000_030_000_000_000 ns since the epoch, varint
    0x80, 0xd8, 0xb6, 0x92, 0xd3, 0xa0, 0xe7, 0xcb, 0x17,
    // weight 1, id length 5
    0x01, 0x05,
    // expiry: 1 ms after the previous, varint; weight 3, id length 5
    0xc0, 0x84, 0x3d, 0x03, 0x05,
    // the ids
    b'j', b'o', b'b', b'-', b'1',
    b'j', b'o', b'b', b'-', b'2',
];

#[test]
fn leases_fixture() {
    let p = params(4, 30 * S);
    let mut state = LeaseState::default();
    take(&mut state, NOW, &p, b"job-1", 1);
    take(&mut state, NOW + MS, &p, b"job-2", 3);
    assert_eq!(state.encode(), LEASES, "encoding changed");
    let decoded = LeaseState::decode(&LEASES).expect("the fixture decodes");
    decoded.check();
    assert_eq!(decoded, state);
    let (d, _) = decoded.decide(Nanos::new(NOW + S), &p, b"job-3", 1);
    assert_eq!(d.retry, Retry::At(Nanos::new(NOW + 30 * S)));
    assert_eq!(d.reset_at, Nanos::new(NOW + 30 * S + MS));
    assert_eq!(LeaseState::default().encode(), [0]);
    assert_eq!(LeaseState::decode(&[0]), Ok(LeaseState::default()));
}

/// Varints, then raw bytes.
fn payload(varints: &[u64], ids: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for &v in varints {
        let mut v = v;
        while v >= 0x80 {
            bytes.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        bytes.push(v as u8);
    }
    bytes.extend_from_slice(ids);
    bytes
}

#[test]
fn hostile_payloads_are_refused() {
    let invalid = DecodeError::Invalid;
    let long = [b'x'; 129];
    let mut valid = LEASES.to_vec();
    valid.push(0);
    // name | payload | error
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, DecodeError)> = vec![
        ("empty payload", vec![], DecodeError::Length),
        ("count, no leases", vec![1], DecodeError::Length),
        ("a trailing byte", valid, DecodeError::Length),
        ("a missing id byte", LEASES[..26].to_vec(), DecodeError::Length),
        ("ids longer than their lengths", payload(&[1, 5, 1, 1], b"ab"), DecodeError::Length),
        ("more leases than the payload holds", payload(&[1_000, 5, 1, 1], b"a"), DecodeError::Length),
        ("more leases than the largest limit", payload(&[MAX_LIMIT + 1], &[0; 64]),
            invalid("more leases than the largest limit")),
        ("a count past 64 bits", vec![0xff; 11], invalid("varint above 64 bits")),
        ("a padded count", vec![0x81, 0x00, 5, 1, 1, b'a'], invalid("varint not in its shortest form")),
        ("a weight of 0", payload(&[1, 5, 0, 1], b"a"), invalid("a lease of weight 0")),
        ("a weight over the limit", payload(&[1, 5, MAX_LIMIT + 1, 1], b"a"),
            invalid("weights above the largest limit")),
        ("weights summing over the limit", payload(&[2, 5, 600_000, 1, 1, 600_000, 1], b"ab"),
            invalid("weights above the largest limit")),
        ("a weight of 2^64 - 1", payload(&[2, 5, 1, 1, 1, u64::MAX, 1], b"ab"),
            invalid("weights above the largest limit")),
        ("an empty id", payload(&[1, 5, 1, 0], b"a"), invalid("an empty lease id")),
        ("an id of 129 bytes", payload(&[1, 5, 1, 129], &long), invalid("a lease id over 128 bytes")),
        ("an expiry at the epoch", payload(&[1, 0, 1, 1], b"a"), invalid("an expiry at the epoch")),
        ("an expiry past 2^64 - 1 ns", payload(&[2, u64::MAX, 1, 1, 1, 1, 1], b"ab"),
            invalid("an expiry after the latest instant")),
        // Expiries are deltas: a later lease cannot expire earlier. At one
        // expiry the ids must increase.
        ("ids out of order at one expiry", payload(&[2, 5, 1, 1, 0, 1, 1], b"ba"),
            invalid("leases out of order")),
        ("one id twice at one expiry", payload(&[2, 5, 1, 1, 0, 1, 1], b"aa"),
            invalid("leases out of order")),
        ("a shorter id after a longer at one expiry", payload(&[2, 5, 1, 2, 0, 1, 1], b"aba"),
            invalid("leases out of order")),
        ("one id at two expiries", payload(&[2, 5, 1, 1, 1, 1, 1], b"aa"),
            invalid("a lease id given twice")),
    ];
    for (name, bytes, error) in cases {
        assert_eq!(LeaseState::decode(&bytes), Err(error), "{name}");
    }
    // The largest payload that decodes: 128-byte ids, MAX_LIMIT in all.
    let most = payload(
        &[2, u64::MAX - 1, 1, 128, 1, MAX_LIMIT - 1, 128],
        &[b'z'; 256],
    );
    let mut ids = [b'z'; 256];
    ids[255] = b'{';
    let most = [&most[..most.len() - 256], &ids].concat();
    let decoded = LeaseState::decode(&most).expect("valid");
    decoded.check();
    assert_eq!(decoded.encode(), most);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any bytes: refused or decoded, never a panic; what decodes is a
    /// valid state, and canonical (it encodes back to the same bytes).
    #[test]
    fn any_payload_is_refused_or_canonical(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(state) = LeaseState::decode(&bytes) {
            state.check();
            prop_assert_eq!(state.encode(), bytes);
        }
    }

    /// A valid encoding with one byte changed, inserted or cut: the same.
    #[test]
    fn a_damaged_payload_is_refused_or_canonical(
        leases in prop::collection::vec((1u8..8, 1u64..20, 1u64..1_000), 0..12),
        at in any::<usize>(),
        byte in any::<u8>(),
        how in 0u8..3,
    ) {
        let leases: Vec<_> = leases
            .into_iter()
            .map(|(id, weight, expiry)| (vec![b'a'; usize::from(id)], weight, expiry))
            .collect();
        let mut bytes = granted(&leases).encode();
        let at = at % (bytes.len() + 1);
        match how {
            0 if at < bytes.len() => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ => bytes.truncate(at),
        }
        if let Ok(state) = LeaseState::decode(&bytes) {
            state.check();
            prop_assert_eq!(state.encode(), bytes);
        }
    }

    /// The same leases granted in two orders, with leases granted and
    /// released between, encode to the same bytes, which decode to them.
    #[test]
    fn the_encoding_is_canonical(
        set in prop::collection::btree_map(
            prop::collection::vec(any::<u8>(), 1..20),
            (1u64..1_000, 1u64..MAX_DURATION.get()),
            0..40,
        ),
        order in any::<u64>(),
        noise in prop::collection::vec(prop::collection::vec(any::<u8>(), 21..24), 0..5),
    ) {
        let leases: Vec<_> = set
            .iter()
            .map(|(id, &(weight, expiry))| (id.clone(), weight, expiry.min(MAX_DURATION.get())))
            .collect();
        let first = granted(&leases);
        // Another order, with other leases granted then released.
        let mut shuffled = leases.clone();
        let n = shuffled.len().max(1) as u64;
        shuffled.rotate_left((order % n) as usize);
        if order & 1 == 1 {
            shuffled.reverse();
        }
        let extra: Vec<_> = noise.iter().map(|id| (id.clone(), 1, 7)).collect();
        let mut second = granted(&[extra.clone(), shuffled].concat());
        for (id, _, _) in &extra {
            second.release(Nanos::ZERO, id);
        }
        second.check();
        prop_assert_eq!(&first, &second);
        let bytes = first.encode();
        prop_assert_eq!(&bytes, &second.encode());
        let decoded = LeaseState::decode(&bytes).expect("decodes");
        decoded.check();
        prop_assert_eq!(decoded.encode(), bytes);
        prop_assert_eq!(leases_of(&decoded), {
            let mut sorted = leases.clone();
            sorted.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
            sorted
        });
    }
}
