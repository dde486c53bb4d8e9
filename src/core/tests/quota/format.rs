//! RL.QUOTA's saved format: a pinned fixture, hostile payloads, a zone
//! unknown to this database.

use super::*;

/// 2 units per DAY in Asia/Kolkata at 2026-06-15T10:15:00Z: the day from
/// 14 Jun 18:30Z.
#[rustfmt::skip]
pub(super) const FIXTURE: &[u8] = &[
    // used: 2
    0x02,
    // start: 2026-06-14T18:30:00Z = 1_781_461_800 s, u64 ns
    0x00, 0x90, 0xed, 0x89, 0x11, 0x06, 0xb9, 0x18,
    // end - start: 86_400 s in ns, varint
    0x80, 0x80, 0xbc, 0x8a, 0xc9, 0xd2, 0x13,
    // until - end: 0
    0x00,
    // last - start: 15 h 45 min = 56_700 s in ns, varint
    0x80, 0xb0, 0xef, 0xfa, 0x97, 0xf2, 0x0c,
    // unit: DAY
    0x02,
    // zone: 12 bytes
    0x0c, b'A', b's', b'i', b'a', b'/', b'K', b'o', b'l', b'k', b'a', b't', b'a',
];

#[test]
fn the_format_is_pinned() {
    let mut key = QuotaState::default();
    run(
        &mut key,
        at("2026-06-15T10:15:00Z"),
        &params(5, Day, "Asia/Kolkata"),
        2,
    );
    assert_eq!(key.encode(), FIXTURE);
    assert_eq!(QuotaState::decode(FIXTURE), Ok(key));
}

/// `FIXTURE` with `edit` applied to a copy.
fn edited(edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes = FIXTURE.to_vec();
    edit(&mut bytes);
    bytes
}

/// A payload with these fields, each a varint but `start` (u64).
pub(super) fn payload(
    used: u64,
    start: u64,
    span: u64,
    extra: u64,
    last: u64,
    unit: u64,
    zone: &[u8],
) -> Vec<u8> {
    let mut w = crate::core::codec::Writer::default();
    w.varint(used)
        .u64(start)
        .varint(span)
        .varint(extra)
        .varint(last)
        .varint(unit)
        .varint(zone.len() as u64);
    let mut bytes = w.into_bytes();
    bytes.extend_from_slice(zone);
    bytes
}

#[test]
fn hostile_payloads_are_refused() {
    let day = 86_400 * S;
    let max = MAX_PERIOD.get();
    let invalid = |why: &'static str| Err(DecodeError::Invalid(why));
    #[rustfmt::skip]
    let table: Vec<(&str, Vec<u8>, Result<(), DecodeError>)> = vec![
        ("valid", payload(1, 0, day, 0, 0, 2, b"UTC"), Ok(())),
        ("empty", vec![], Err(DecodeError::Length)),
        ("cut in the name", FIXTURE[..FIXTURE.len() - 1].to_vec(), Err(DecodeError::Length)),
        ("trailing byte", edited(|b| b.push(0)), Err(DecodeError::Length)),
        ("name longer than the payload", edited(|b| b[25] = 0x0d), Err(DecodeError::Length)),
        ("used above the maximum", payload(MAX_USED + 1, 0, day, 0, 0, 2, b"UTC"), invalid("used is above the most a period holds")),
        ("used at the maximum", payload(MAX_USED, 0, day, 0, 0, 2, b"UTC"), Ok(())),
        ("start == end", payload(1, 0, 0, 0, 0, 2, b"UTC"), invalid("period is empty or longer than a year")),
        ("period too long", payload(1, 0, max + 1, 0, 0, 2, b"UTC"), invalid("period is empty or longer than a year")),
        ("last at the end", payload(1, 0, day, 0, day, 2, b"UTC"), invalid("last unit is outside its period")),
        ("counted too long", payload(1, 0, day, max, 0, 2, b"UTC"), invalid("units count for longer than a year")),
        ("counted a year from last", payload(1, 0, day, max - day, 0, 2, b"UTC"), Ok(())),
        ("end past Nanos", payload(1, u64::MAX - 5, day, 0, 0, 2, b"UTC"), invalid("period ends past the last instant")),
        ("end at Nanos::MAX", payload(1, u64::MAX - day, day, 0, 0, 2, b"UTC"), Ok(())),
        ("until past Nanos", payload(1, u64::MAX - day, day, 1, 0, 2, b"UTC"), invalid("units count past the last instant")),
        ("unknown unit", payload(1, 0, day, 0, 0, 6, b"UTC"), invalid("unknown calendar unit")),
        ("huge unit", payload(1, 0, day, 0, 0, u64::MAX, b"UTC"), invalid("unknown calendar unit")),
        ("empty zone", payload(1, 0, day, 0, 0, 2, b""), invalid("zone name is empty or too long")),
        ("zone too long", payload(1, 0, day, 0, 0, 2, &[b'A'; 65]), invalid("zone name is empty or too long")),
        ("not a name", payload(1, 0, day, 0, 0, 2, b"../../etc"), invalid("not a zone name")),
        ("not canonical", payload(1, 0, day, 0, 0, 2, b"asia/kolkata"), invalid("not a zone name")),
        ("UTC as an offset", payload(1, 0, day, 0, 0, 2, b"+00:00"), invalid("not a zone name")),
        ("offset out of range", payload(1, 0, day, 0, 0, 2, b"+18:30"), invalid("not a zone name")),
        ("padded varint", edited(|b| { b[0] = 0x82; b.insert(1, 0x00); }), invalid("varint not in its shortest form")),
        ("unknown to this database", payload(1, 0, day, 0, 0, 2, b"America/Nowhere"), Ok(())),
    ];
    for (what, bytes, expected) in table {
        assert_eq!(QuotaState::decode(&bytes).map(|_| ()), expected, "{what}");
    }
}

#[test]
fn a_zone_unknown_to_this_database() {
    // Written by a build whose database knows America/Nowhere: 3 used in
    // a DAY of 1 Jun 2026 that ends at 05:00Z on the 2nd.
    let start = unix("2026-06-01T05:00:00Z") as u64 * S;
    let bytes = payload(3, start, 86_400 * S, 0, 3_600 * S, 2, b"America/Nowhere");
    let mut key = QuotaState::decode(&bytes).unwrap();
    // It re-encodes under the marker name, which reads back the same.
    let again = key.encode();
    assert_eq!(QuotaState::decode(&again), Ok(key.clone()));
    assert_eq!(
        key.inspect(Nanos::new(start))[1],
        ("zone", Detail::Bytes(b"Etc/Unknown".to_vec()))
    );
    // Under UTC the units count until the later of the stored end and the
    // end of the UTC day of the last unit (1 Jun 06:00Z): 2 Jun 05:00Z.
    let p = params(5, Day, "UTC");
    let now = at("2026-06-01T23:00:00Z");
    let (d, _) = key.decide(now, &p, 0);
    assert_eq!((d.remaining, d.reset_at), (2, at("2026-06-02T05:00:00Z")));
    run(&mut key, now, &p, 1);
    assert_eq!(
        key.inspect(now)[1],
        ("zone", Detail::Bytes(b"UTC".to_vec()))
    );
    assert_eq!(
        key.decide(now, &p, 0).0.reset_at,
        at("2026-06-02T05:00:00Z")
    );
}
