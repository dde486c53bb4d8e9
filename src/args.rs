//! Arguments to validated parameters, and the one table of argument errors.
//!
//! Every command has the shape `key n1 .. nN [quantity] [MS] [AT ns]`: the
//! numbers are whole seconds (milliseconds with `MS`), `quantity` defaults to
//! 1, and `AT` carries the master's clock in the replicated form, which only
//! the replication link and the AOF may send.

use std::ffi::CString;

use crate::core::gcra::{self, GcraParamError, GcraParams};
use crate::core::slice::{self, SliceParams};
use crate::core::slide::{self, SlideParams};
use crate::core::{Nanos, Unit};

/// The largest quantity one request may ask for. A quantity above the
/// limiter's capacity can never fit; this bound only keeps numbers sane.
pub const MAX_QUANTITY: u64 = 1_000_000_000_000;
/// The longest period or window: ten years, in each unit.
const MAX_TIME_SECONDS: u64 = 315_360_000;

/// Bounds that the server's configuration may tighten below the hard
/// ceilings of the algorithms.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub max_slide_limit: u64,
    pub max_slices: u64,
}

impl Bounds {
    pub const DEFAULT: Bounds = Bounds {
        max_slide_limit: 1_000_000,
        max_slices: 86_400,
    };
    /// What a replicated or loaded command is held to: the master already
    /// accepted it under its own configuration.
    pub const HARD: Bounds = Bounds {
        max_slide_limit: slide::MAX_LIMIT,
        max_slices: slice::MAX_SLICES,
    };
}

/// Why the arguments were refused; `message` gives the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// Not an integer within `min..=max`; `unit` names the unit of a time.
    Integer {
        name: &'static str,
        min: u64,
        max: u64,
        unit: Option<Unit>,
    },
    /// An argument that is no option of the command.
    Unknown(String),
    Repeated(&'static str),
    /// `AT` from a normal client.
    AtFromClient,
    /// GCRA arguments each in range that together let a burst borrow more
    /// than a century.
    Tolerance,
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
                    Some(Unit::Seconds) => " (seconds)",
                    Some(Unit::Millis) => " (milliseconds, with MS)",
                };
                format!("ERR {name} must be an integer from {min} to {max}{unit}")
            }
            ArgError::Unknown(arg) => format!("ERR unknown argument '{arg}'"),
            ArgError::Repeated(name) => format!("ERR {name} is given more than once"),
            ArgError::AtFromClient => {
                "ERR AT is accepted only from the master or the AOF: it carries the master's clock"
                    .to_string()
            }
            ArgError::Tolerance => format!(
                "ERR max_burst / count x period must be at most {} seconds (100 years)",
                gcra::MAX_TOLERANCE.get() / 1_000_000_000
            ),
        };
        // The text holds no NUL: every user byte went through `printable`.
        CString::new(text).unwrap_or_default()
    }
}

/// A request: the algorithm's parameters, and what every command shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<P> {
    pub params: P,
    pub quantity: u64,
    /// The unit of the reply's times.
    pub unit: Unit,
    /// The master's clock, in the replicated form.
    pub at: Option<Nanos>,
}

/// `RL.THROTTLE key max_burst count period [quantity] [MS] [AT ns]`
pub fn throttle(
    args: &[&[u8]],
    trusted: impl FnOnce() -> bool,
) -> Result<Request<GcraParams>, ArgError> {
    let tail = tail(args, 3, trusted)?;
    let max_burst = integer(args[0], "max_burst", 0, gcra::MAX_BURST, None)?;
    let count = integer(args[1], "count", 1, gcra::MAX_COUNT, None)?;
    let period = time(args[2], "period", tail.unit)?;
    let params = GcraParams::new(max_burst, count, period).map_err(|e| match e {
        GcraParamError::MaxBurst => range("max_burst", 0, gcra::MAX_BURST, None),
        GcraParamError::Count => range("count", 1, gcra::MAX_COUNT, None),
        GcraParamError::Period => time_range("period", tail.unit),
        GcraParamError::Tolerance => ArgError::Tolerance,
    })?;
    Ok(tail.request(params))
}

/// `RL.SLIDE key limit window [quantity] [MS] [AT ns]`
pub fn slide(
    args: &[&[u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<Request<SlideParams>, ArgError> {
    let tail = tail(args, 2, trusted)?;
    let bounds = tail.bounds(bounds);
    let max = bounds.max_slide_limit.min(slide::MAX_LIMIT);
    let limit = integer(args[0], "limit", 1, max, None)?;
    let window = time(args[1], "window", tail.unit)?;
    let params = SlideParams::new(limit, window).ok_or_else(|| time_range("window", tail.unit))?;
    Ok(tail.request(params))
}

/// `RL.SLICE key limit window slices [quantity] [MS] [AT ns]`
pub fn slice(
    args: &[&[u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<Request<SliceParams>, ArgError> {
    let tail = tail(args, 3, trusted)?;
    let bounds = tail.bounds(bounds);
    let limit = integer(args[0], "limit", 1, slice::MAX_LIMIT, None)?;
    let window = time(args[1], "window", tail.unit)?;
    let max_slices = bounds.max_slices.min(slice::MAX_SLICES);
    let slices = integer(args[2], "slices", 1, max_slices, None)?;
    let params =
        SliceParams::new(limit, window, slices).ok_or_else(|| time_range("window", tail.unit))?;
    Ok(tail.request(params))
}

/// The options after the required numbers.
struct Tail {
    quantity: u64,
    unit: Unit,
    at: Option<Nanos>,
}

impl Tail {
    /// The configured bounds hold for clients; a command that carries the
    /// master's clock was accepted by the master under its own.
    fn bounds(&self, configured: Bounds) -> Bounds {
        match self.at {
            Some(_) => Bounds::HARD,
            None => configured,
        }
    }

    fn request<P>(&self, params: P) -> Request<P> {
        Request {
            params,
            quantity: self.quantity,
            unit: self.unit,
            at: self.at,
        }
    }
}

/// Parses `[quantity] [MS] [AT ns]` after `required` numbers. The caller
/// checked that `args` holds at least the required numbers. `trusted` tells
/// whether the command came from the master or the AOF; it is asked only
/// when `AT` is present.
fn tail(args: &[&[u8]], required: usize, trusted: impl FnOnce() -> bool) -> Result<Tail, ArgError> {
    let mut trusted = Some(trusted);
    let mut out = Tail {
        quantity: 1,
        unit: Unit::Seconds,
        at: None,
    };
    let mut ms = false;
    let rest = args.get(required..).unwrap_or_default();
    let mut i = 0;
    while let Some(&arg) = rest.get(i) {
        if arg.eq_ignore_ascii_case(b"MS") {
            if ms {
                return Err(ArgError::Repeated("MS"));
            }
            ms = true;
            out.unit = Unit::Millis;
        } else if arg.eq_ignore_ascii_case(b"AT") {
            if !trusted.take().is_some_and(|f| f()) {
                return Err(ArgError::AtFromClient);
            }
            if out.at.is_some() {
                return Err(ArgError::Repeated("AT"));
            }
            i += 1;
            let ns = rest.get(i).copied().unwrap_or_default();
            out.at = Some(Nanos::new(integer(ns, "AT", 0, u64::MAX, None)?));
        } else if i == 0
            && arg
                .first()
                .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
        {
            out.quantity = integer(arg, "quantity", 0, MAX_QUANTITY, None)?;
        } else {
            return Err(ArgError::Unknown(printable(arg)));
        }
        i += 1;
    }
    Ok(out)
}

/// A period or window in `unit`s, as nanoseconds.
fn time(arg: &[u8], name: &'static str, unit: Unit) -> Result<Nanos, ArgError> {
    let max = match unit {
        Unit::Seconds => MAX_TIME_SECONDS,
        Unit::Millis => MAX_TIME_SECONDS * 1_000,
    };
    let amount = integer(arg, name, 1, max, Some(unit))?;
    unit.to_nanos(amount).ok_or_else(|| time_range(name, unit))
}

fn time_range(name: &'static str, unit: Unit) -> ArgError {
    let max = match unit {
        Unit::Seconds => MAX_TIME_SECONDS,
        Unit::Millis => MAX_TIME_SECONDS * 1_000,
    };
    range(name, 1, max, Some(unit))
}

fn range(name: &'static str, min: u64, max: u64, unit: Option<Unit>) -> ArgError {
    ArgError::Integer {
        name,
        min,
        max,
        unit,
    }
}

/// A decimal integer in `min..=max`: digits only, no sign, no spaces.
fn integer(
    arg: &[u8],
    name: &'static str,
    min: u64,
    max: u64,
    unit: Option<Unit>,
) -> Result<u64, ArgError> {
    parse_decimal(arg)
        .filter(|n| (min..=max).contains(n))
        .ok_or(ArgError::Integer {
            name,
            min,
            max,
            unit,
        })
}

fn parse_decimal(arg: &[u8]) -> Option<u64> {
    if arg.is_empty() || arg.len() > 20 {
        return None;
    }
    arg.iter().try_fold(0u64, |n, &b| {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
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
mod tests {
    use super::*;

    fn msg(e: ArgError) -> String {
        e.message().into_string().unwrap()
    }

    fn throttle_err(args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        msg(throttle(&args, || false).unwrap_err())
    }

    #[test]
    fn decimal_integers_only() {
        assert_eq!(parse_decimal(b"0"), Some(0));
        assert_eq!(parse_decimal(b"007"), Some(7));
        assert_eq!(parse_decimal(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            "",
            "-1",
            "+1",
            " 1",
            "1 ",
            "1.5",
            "1e3",
            "18446744073709551616",
            "x",
        ] {
            assert_eq!(parse_decimal(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn throttle_arguments() {
        let ok = |args: &[&str]| {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            throttle(&args, || false).unwrap()
        };
        let r = ok(&["15", "30", "60"]);
        assert_eq!((r.quantity, r.unit, r.at), (1, Unit::Seconds, None));
        let r = ok(&["0", "1", "250", "3", "ms"]);
        assert_eq!((r.quantity, r.unit), (3, Unit::Millis));
        assert_eq!(ok(&["0", "1", "1", "MS"]).quantity, 1);
    }

    #[test]
    fn the_error_table() {
        // arguments => reply
        #[rustfmt::skip]
        let cases: &[(&[&str], &str)] = &[
            (&["-1", "30", "60"], "ERR max_burst must be an integer from 0 to 1000000000000"),
            (&["x", "30", "60"], "ERR max_burst must be an integer from 0 to 1000000000000"),
            (&["15", "0", "60"], "ERR count must be an integer from 1 to 4294967295"),
            (&["15", "30", "0"], "ERR period must be an integer from 1 to 315360000 (seconds)"),
            (&["15", "30", "0", "MS"], "ERR period must be an integer from 1 to 315360000000 (milliseconds, with MS)"),
            (&["15", "30", "60", "-2"], "ERR quantity must be an integer from 0 to 1000000000000"),
            (&["15", "30", "60", "1", "2"], "ERR unknown argument '2'"),
            (&["15", "30", "60", "PX"], "ERR unknown argument 'PX'"),
            (&["15", "30", "60", "MS", "ms"], "ERR MS is given more than once"),
            (&["15", "30", "60", "AT", "5"], "ERR AT is accepted only from the master or the AOF: it carries the master's clock"),
            (&["1000", "1", "315360000"], "ERR max_burst / count x period must be at most 3153600000 seconds (100 years)"),
            (&["15", "30", "60", "a\u{0}b"], "ERR unknown argument 'a?b'"),
        ];
        for (args, expected) in cases {
            assert_eq!(throttle_err(args), *expected, "{args:?}");
        }
    }

    #[test]
    fn at_is_accepted_from_the_master() {
        let args: Vec<&[u8]> = vec![b"1", b"2", b"3", b"4", b"MS", b"AT", b"123"];
        let r = throttle(&args, || true).unwrap();
        assert_eq!(r.at, Some(Nanos::new(123)));
        let missing: Vec<&[u8]> = vec![b"1", b"2", b"3", b"AT"];
        assert!(matches!(
            throttle(&missing, || true),
            Err(ArgError::Integer { name: "AT", .. })
        ));
    }

    #[test]
    fn configured_bounds_apply_to_clients_only() {
        let tight = Bounds {
            max_slide_limit: 10,
            max_slices: 5,
        };
        let slide_args: Vec<&[u8]> = vec![b"11", b"1"];
        assert_eq!(
            msg(slide(&slide_args, || false, tight).unwrap_err()),
            "ERR limit must be an integer from 1 to 10"
        );
        // The master's replicated form carries AT and its own bounds.
        let slide_at: Vec<&[u8]> = vec![b"11", b"1", b"AT", b"5"];
        assert!(slide(&slide_at, || true, tight).is_ok());
        assert_eq!(
            slide(&slide_at, || false, tight),
            Err(ArgError::AtFromClient)
        );
        let slice_args: Vec<&[u8]> = vec![b"1", b"60", b"6"];
        assert_eq!(
            msg(slice(&slice_args, || false, tight).unwrap_err()),
            "ERR slices must be an integer from 1 to 5"
        );
        let slice_at: Vec<&[u8]> = vec![b"1", b"60", b"6", b"AT", b"5"];
        assert!(slice(&slice_at, || true, tight).is_ok());
    }
}
