//! Arguments to validated parameters, and the one table of argument errors.
//!
//! Every limiter command has the shape
//! `key p1 .. pN [id] [quantity] [MS] [options] [AT ns]`: the parameters are
//! those the kind's `Kind::PARAMS` describes (times in whole seconds,
//! milliseconds with `MS`), the id is there for a kind that `TAKES_ID`,
//! `quantity` defaults to 1, and `AT` carries the master's clock in the
//! replicated form, which only the replication link and the AOF may send
//! (docs/DESIGN.md#replication). The several-limit commands read each spec
//! with the same readers (`spec`), so a spec's errors are its command's.

mod spec;

use std::ffi::CString;

pub use spec::{charge, id, refund, several, single, LimitSpec, Request};

pub use crate::config::Bounds;
use crate::core::{Param, ParamKind, TimeUnit, MAX_DURATION_SECONDS};

/// The largest quantity one request may ask for. A quantity above the
/// limiter's capacity can never fit; this bound only keeps numbers sane.
pub const MAX_QUANTITY: u64 = 1_000_000_000_000;
/// The most keys (and so limits) of one several-limit call.
pub const MAX_KEYS: usize = 16;

/// Whether the configuration may cap one of these parameters, so that
/// reading them needs the configured [`Bounds`].
pub const fn capped(params: &[Param]) -> bool {
    let mut i = 0;
    while i < params.len() {
        if let ParamKind::Integer {
            ceiling: Some(_), ..
        } = params[i].kind
        {
            return true;
        }
        i += 1;
    }
    false
}

/// Why the arguments were refused; `message` gives the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// Not an integer within `min..=max`; `unit` names the unit of a time.
    Integer {
        name: &'static str,
        min: u64,
        max: u64,
        unit: Option<TimeUnit>,
    },
    /// Not one of the words a parameter takes.
    Word {
        name: &'static str,
        words: &'static [&'static str],
    },
    /// Not 1 to `max` bytes.
    Text {
        name: &'static str,
        max: usize,
    },
    /// A value the kind does not know, with the message to show.
    Unknown(String),
    /// An argument that is no option of the command.
    Extra(String),
    Repeated(&'static str),
    /// `AT` from a normal client.
    AtFromClient,
    /// Arguments each in range that together break the rule stated.
    Joint(&'static str),
    /// An error in the `index`-th (1-based) spec of a several-limit command.
    InSpec {
        index: usize,
        kind: &'static str,
        inner: Box<ArgError>,
    },
    /// A spec word that names no kind (`index` 0: RL.REFUND's one spec).
    UnknownKind {
        index: usize,
        word: String,
    },
    /// Fewer arguments than the spec's kind takes.
    SpecTooShort {
        index: usize,
        kind: &'static str,
        expects: String,
    },
    /// Fewer specs than keys.
    MissingSpec {
        index: usize,
        keys: usize,
    },
    /// A key named twice in one several-limit call.
    RepeatedKey(String),
    /// RL.REFUND with a spec of a kind that gives nothing back this way.
    NotRefundable(&'static str),
    /// RL.CHARGE with a spec of a kind it does not charge (LEASE).
    NotChargeable(&'static str),
    /// A charge that would take a counter past its maximum: the rule it
    /// breaks, which follows `quantity` in the message.
    Charge(&'static str),
    /// BLOCK given to a kind that takes none (LEASE).
    NoBlock(&'static str),
    /// RL.ALLOW with a spec that takes an id, and no `ID`.
    IdMissing(&'static str),
    /// `ID` in a call with no spec that takes one.
    IdUnused,
    /// `MAXWAIT` with a limit of a kind that does not wait: in a
    /// several-limit call, the first such spec (its index and kind).
    WaitsOnly(Option<(usize, &'static str)>),
    /// A several-limit call whose every spec is `SHADOW`.
    AllShadow,
}

impl ArgError {
    pub fn message(&self) -> CString {
        let text = match self {
            ArgError::Integer {
                name,
                min,
                max,
                unit,
            } => {
                let unit = match unit {
                    None => "",
                    Some(TimeUnit::Seconds) => " (seconds)",
                    Some(TimeUnit::Millis) => " (milliseconds, with MS)",
                };
                format!("ERR {name} must be an integer from {min} to {max}{unit}")
            }
            ArgError::Word { name, words } => {
                format!("ERR {name} must be one of {}", words.join(", "))
            }
            ArgError::Text { name, max } => format!("ERR {name} must be 1 to {max} bytes"),
            ArgError::Unknown(text) => format!("ERR {text}"),
            ArgError::Extra(arg) => format!("ERR unknown argument '{arg}'"),
            ArgError::Repeated(name) => format!("ERR {name} is given more than once"),
            ArgError::AtFromClient => {
                "ERR AT is accepted only from the master or the AOF: it carries the master's clock"
                    .to_string()
            }
            ArgError::Joint(rule) => format!("ERR {rule}"),
            ArgError::InSpec { index, kind, inner } => {
                let inner = inner.message();
                let inner = inner.to_string_lossy();
                let detail = inner.strip_prefix("ERR ").unwrap_or(&inner);
                format!("ERR spec {index} ({kind}): {detail}")
            }
            ArgError::UnknownKind { index, word } => {
                let at = if *index == 0 {
                    String::new()
                } else {
                    format!("spec {index}: ")
                };
                format!(
                    "ERR {at}unknown algorithm '{word}' (expected {})",
                    crate::kinds::words()
                )
            }
            ArgError::SpecTooShort {
                index: 0,
                kind,
                expects,
            } => format!("ERR {kind} expects {expects}"),
            ArgError::SpecTooShort {
                index,
                kind,
                expects,
            } => format!("ERR spec {index} ({kind}): expects {expects}"),
            ArgError::MissingSpec { index, keys } => {
                format!("ERR spec {index} is missing: {keys} keys need {keys} specs")
            }
            ArgError::RepeatedKey(key) => format!("ERR key '{key}' is given more than once"),
            ArgError::NotRefundable(kind) => {
                format!("ERR RL.REFUND does not take a {kind} spec")
            }
            ArgError::NotChargeable(kind) => {
                format!("ERR RL.CHARGE does not take a {kind} spec")
            }
            ArgError::Charge(rule) => format!("ERR quantity {rule}"),
            ArgError::NoBlock(kind) => format!("ERR {kind} takes no BLOCK"),
            ArgError::IdMissing(kind) => {
                format!("ERR a {kind} spec needs the ID option: ID lease_id")
            }
            ArgError::IdUnused => "ERR ID is given but no spec takes it".to_string(),
            ArgError::WaitsOnly(None) => format!("ERR MAXWAIT takes {} limits only", waiting()),
            ArgError::WaitsOnly(Some((index, kind))) => {
                format!(
                    "ERR MAXWAIT takes {} limits only: spec {index} is {kind}",
                    waiting()
                )
            }
            ArgError::AllShadow => {
                "ERR at least one spec must be enforced: every spec is SHADOW".to_string()
            }
        };
        CString::new(text).unwrap_or_default()
    }
}

/// The kinds whose requests may wait for their turn (`MAXWAIT`), as the
/// error names them: `THROTTLE`.
fn waiting() -> String {
    let names: Vec<&str> = crate::kinds::KINDS
        .iter()
        .filter(|k| k.waits)
        .map(|k| k.name)
        .collect();
    names.join(" or ")
}

/// `numkeys` of a several-limit call: 1 to [`MAX_KEYS`].
pub fn numkeys(arg: &[u8]) -> Result<usize, ArgError> {
    let n = integer(arg, "numkeys", 1, MAX_KEYS as u64, None)?;
    usize::try_from(n).map_err(|_| range("numkeys", 1, MAX_KEYS as u64, None))
}

/// `AT ns`'s value: the master's clock.
pub fn at(arg: &[u8]) -> Result<crate::core::Nanos, ArgError> {
    integer(arg, "AT", 0, u64::MAX, None).map(crate::core::Nanos::new)
}

/// `PXAT ms`'s value: a Unix time in milliseconds.
pub fn unix_ms(arg: &[u8]) -> Result<i64, ArgError> {
    let ms = integer(arg, "PXAT", 0, i64::MAX as u64, None)?;
    i64::try_from(ms).map_err(|_| range("PXAT", 0, i64::MAX as u64, None))
}

/// The largest time a parameter may have in `unit`.
const fn max_time(unit: TimeUnit) -> u64 {
    match unit {
        TimeUnit::Seconds => MAX_DURATION_SECONDS,
        TimeUnit::Millis => MAX_DURATION_SECONDS * 1_000,
    }
}

fn range(name: &'static str, min: u64, max: u64, unit: Option<TimeUnit>) -> ArgError {
    ArgError::Integer {
        name,
        min,
        max,
        unit,
    }
}

/// A decimal integer in `min..=max`, or the error naming the argument.
#[inline]
fn integer(
    arg: &[u8],
    name: &'static str,
    min: u64,
    max: u64,
    unit: Option<TimeUnit>,
) -> Result<u64, ArgError> {
    match parse_decimal(arg) {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(range(name, min, max, unit)),
    }
}

/// A decimal integer with nothing else around it: no sign, no spaces, any
/// number of leading zeros; `None` past `u64::MAX`. Up to 19 digits cannot
/// overflow, so those skip the checked arithmetic.
fn parse_decimal(arg: &[u8]) -> Option<u64> {
    match arg.len() {
        0 => None,
        1..=19 => {
            let mut n = 0u64;
            for &b in arg {
                // In 64 bits from the start: no widening in the loop.
                let digit = u64::from(b).wrapping_sub(u64::from(b'0'));
                if digit > 9 {
                    return None;
                }
                n = n * 10 + digit;
            }
            Some(n)
        }
        _ => arg.iter().try_fold(0u64, |n, &b| {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return None;
            }
            n.checked_mul(10)?.checked_add(u64::from(digit))
        }),
    }
}

/// An argument as it may appear in an error message: printable ASCII only,
/// at most 32 characters.
pub fn printable(arg: &[u8]) -> String {
    let mut text: String = arg
        .iter()
        .take(32)
        .map(|&b| {
            if b.is_ascii_graphic() {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect();
    if arg.len() > 32 {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests;
