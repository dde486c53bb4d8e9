//! Arguments to validated parameters, and the one table of argument errors.
//!
//! Every limiter command has the shape `key n1 .. nN [quantity] [MS] [AT ns]`:
//! the numbers are those the algorithm's `Limiter::ARGS` describes (times in
//! whole seconds, milliseconds with `MS`), `quantity` defaults to 1, and `AT`
//! carries the master's clock in the replicated form, which only the
//! replication link and the AOF may send.

use std::ffi::CString;

use arrayvec::ArrayVec;

use crate::core::slice::{self};
use crate::core::slide::{self};
use crate::core::{Arg, ArgKind, Ceiling, Limiter, Nanos, ParamError, Unit, MAX_DURATION_SECONDS};

/// The largest quantity one request may ask for. A quantity above the
/// limiter's capacity can never fit; this bound only keeps numbers sane.
pub const MAX_QUANTITY: u64 = 1_000_000_000_000;
/// The most numbers any algorithm takes after the key.
const MAX_ARGS: usize = 4;

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

    fn ceiling(&self, ceiling: Ceiling) -> u64 {
        match ceiling {
            Ceiling::SlideLimit => self.max_slide_limit,
            Ceiling::Slices => self.max_slices,
        }
    }
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
    /// Arguments each in range that together break the rule stated.
    Joint(&'static str),
    /// An error in the `index`-th (1-based) spec of a several-limit command.
    InSpec {
        index: usize,
        algorithm: &'static str,
        inner: Box<ArgError>,
    },
    /// A spec word that names no algorithm.
    UnknownAlgorithm {
        index: usize,
        word: String,
    },
    /// Fewer arguments than the spec's algorithm takes.
    SpecTooShort {
        index: usize,
        algorithm: &'static str,
        expects: String,
    },
    /// Fewer specs than keys.
    MissingSpec {
        index: usize,
        keys: usize,
    },
    /// A key named twice in one several-limit call.
    RepeatedKey(String),
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
            ArgError::Joint(rule) => format!("ERR {rule}"),
            ArgError::InSpec {
                index,
                algorithm,
                inner,
            } => {
                let inner = inner.message();
                let inner = inner.to_string_lossy();
                let detail = inner.strip_prefix("ERR ").unwrap_or(&inner);
                format!("ERR spec {index} ({algorithm}): {detail}")
            }
            ArgError::UnknownAlgorithm { index, word } => {
                let at = if *index == 0 {
                    String::new()
                } else {
                    format!("spec {index}: ")
                };
                format!("ERR {at}unknown algorithm '{word}' (expected THROTTLE, SLIDE or SLICE)")
            }
            ArgError::SpecTooShort {
                index: 0,
                algorithm,
                expects,
            } => format!("ERR {algorithm} expects {expects}"),
            ArgError::SpecTooShort {
                index,
                algorithm,
                expects,
            } => format!("ERR spec {index} ({algorithm}): expects {expects}"),
            ArgError::MissingSpec { index, keys } => {
                format!("ERR spec {index} is missing: {keys} keys need {keys} specs")
            }
            ArgError::RepeatedKey(key) => format!("ERR key '{key}' is given more than once"),
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

/// `RL.<NAME> key n1 .. nN [quantity] [MS] [<OPTION> v ...] [AT ns]`,
/// given the arguments after the key (at least the N numbers: the caller
/// checked the arity). `trusted` tells whether the command came from the
/// master or the AOF; it is asked only when `AT` is present.
pub fn limiter<L: Limiter>(
    args: &[&[u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<Request<L::Params>, ArgError> {
    let mut words = Words::new(0);
    let tail = tail(args, L::ARGS.len(), L::OPTIONS, &mut words, trusted)?;
    let bounds = tail.bounds(bounds);
    let (values, n) = spec_values(&args, &words, L::ARGS, L::OPTIONS, tail.unit, bounds)?;
    let params = L::params(&values[..n])
        .map_err(|e| param_error(e, L::ARGS, L::OPTIONS, tail.unit, bounds))?;
    Ok(tail.request(params))
}

/// The most options an algorithm may have.
const MAX_OPTIONS: usize = 2;
/// The most values of one spec: numbers and options.
const MAX_VALUES: usize = MAX_ARGS + MAX_OPTIONS;

/// Where one spec's words are: its numbers from `start` on, and for each
/// of its options, where the option's value is (when given).
#[derive(Clone, Copy, Debug)]
struct Words {
    start: usize,
    options: [Option<usize>; MAX_OPTIONS],
}

impl Words {
    fn new(start: usize) -> Words {
        Words {
            start,
            options: [None; MAX_OPTIONS],
        }
    }

    /// If `word` is one of `options`, records that its value is at `value`
    /// and answers true; an option given twice is an error.
    fn option(&mut self, options: &[Arg], word: &[u8], value: usize) -> Result<bool, ArgError> {
        let Some(i) = options.iter().position(|o| {
            o.name.len() == word.len() && word.eq_ignore_ascii_case(o.name.as_bytes())
        }) else {
            return Ok(false);
        };
        let slot = self
            .options
            .get_mut(i)
            .ok_or(ArgError::Joint("too many options"))?;
        if slot.is_some() {
            return Err(ArgError::Repeated(options[i].name));
        }
        *slot = Some(value);
        Ok(true)
    }
}

/// The values of one spec, each in its range: the numbers of `args` from
/// `words.start`, then each option's value (0 when not given).
fn spec_values<'a>(
    source: &impl ArgSource<'a>,
    words: &Words,
    args: &[Arg],
    options: &[Arg],
    unit: Unit,
    bounds: Bounds,
) -> Result<([u64; MAX_VALUES], usize), ArgError> {
    let mut values = [0u64; MAX_VALUES];
    if args.len() > MAX_ARGS || options.len() > MAX_OPTIONS {
        return Err(ArgError::Joint("too many arguments for one limit"));
    }
    for (i, arg) in args.iter().enumerate() {
        values[i] = value(source.get(words.start + i), arg, unit, bounds)?;
    }
    for (i, option) in options.iter().enumerate() {
        if let Some(at) = words.options[i] {
            values[args.len() + i] = value(source.get(at), option, unit, bounds)?;
        }
    }
    Ok((values, args.len() + options.len()))
}

/// One argument's value within its range (durations in ns). The error is
/// built only on the error path.
#[inline]
fn value(bytes: &[u8], arg: &Arg, unit: Unit, bounds: Bounds) -> Result<u64, ArgError> {
    let (min, max, scale) = match arg.kind {
        ArgKind::Duration => (1, max_time(unit), unit.nanos()),
        ArgKind::DurationOrZero => (0, max_time(unit), unit.nanos()),
        ArgKind::Integer { min, max, ceiling } => (min, ceiling_max(max, ceiling, bounds), 1),
    };
    match parse_decimal(bytes) {
        // At most ten years in either unit: far below u64::MAX ns.
        Some(n) if (min..=max).contains(&n) => Ok(n * scale),
        _ => Err(range_of(arg, unit, bounds)),
    }
}

/// The error of parameters refused together: the range of the argument
/// named by index (numbers, then options), or the rule broken.
fn param_error(
    e: ParamError,
    args: &[Arg],
    options: &[Arg],
    unit: Unit,
    bounds: Bounds,
) -> ArgError {
    match e {
        ParamError::Arg(i) => args
            .iter()
            .chain(options)
            .nth(i)
            .map_or(ArgError::Joint("invalid arguments"), |arg| {
                range_of(arg, unit, bounds)
            }),
        ParamError::Joint(rule) => ArgError::Joint(rule),
    }
}

/// The range error of an argument: what it must be.
#[cold]
fn range_of(arg: &Arg, unit: Unit, bounds: Bounds) -> ArgError {
    match arg.kind {
        ArgKind::Duration => time_range(arg.name, unit),
        ArgKind::DurationOrZero => range(arg.name, 0, max_time(unit), Some(unit)),
        ArgKind::Integer { min, max, ceiling } => {
            range(arg.name, min, ceiling_max(max, ceiling, bounds), None)
        }
    }
}

/// An integer's maximum under the configured ceiling, if it has one.
fn ceiling_max(max: u64, ceiling: Option<Ceiling>, bounds: Bounds) -> u64 {
    ceiling.map_or(max, |c| max.min(bounds.ceiling(c)))
}

/// The options after the required numbers.
#[derive(Debug)]
pub struct Tail {
    pub quantity: u64,
    pub unit: Unit,
    pub at: Option<Nanos>,
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

    /// One unit, in seconds, on the local clock.
    const DEFAULT: Tail = Tail {
        quantity: 1,
        unit: Unit::Seconds,
        at: None,
    };

    /// Reads `MS` or `AT ns` at argument `*i`, moving `*i` onto AT's value;
    /// false for any other word. `AT` is refused unless `trusted` says the
    /// command comes from the master or the AOF (asked once).
    fn ms_or_at<'a>(
        &mut self,
        args: &impl ArgSource<'a>,
        i: &mut usize,
        trusted: &mut Option<impl FnOnce() -> bool>,
    ) -> Result<bool, ArgError> {
        let arg = args.get(*i);
        if arg.eq_ignore_ascii_case(b"MS") {
            if self.unit == Unit::Millis {
                return Err(ArgError::Repeated("MS"));
            }
            self.unit = Unit::Millis;
        } else if arg.eq_ignore_ascii_case(b"AT") {
            if !trusted.take().is_some_and(|f| f()) {
                return Err(ArgError::AtFromClient);
            }
            if self.at.is_some() {
                return Err(ArgError::Repeated("AT"));
            }
            *i += 1;
            self.at = Some(Nanos::new(integer(args.get(*i), "AT", 0, u64::MAX, None)?));
        } else {
            return Ok(false);
        }
        Ok(true)
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

/// Parses `[quantity] [MS] [<OPTION> v ...] [AT ns]` after `required`
/// numbers; the algorithm's options go to `words`.
fn tail(
    args: &[&[u8]],
    required: usize,
    options: &[Arg],
    words: &mut Words,
    trusted: impl FnOnce() -> bool,
) -> Result<Tail, ArgError> {
    let mut trusted = Some(trusted);
    let mut out = Tail::DEFAULT;
    let mut i = required;
    while let Some(&arg) = args.get(i) {
        if out.ms_or_at(&args, &mut i, &mut trusted)? {
            i += 1;
            continue;
        }
        if words.option(options, arg, i + 1)? {
            i += 1;
        } else if i == required
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

/// The longest duration, in `unit`s.
const fn max_time(unit: Unit) -> u64 {
    match unit {
        Unit::Seconds => MAX_DURATION_SECONDS,
        Unit::Millis => MAX_DURATION_SECONDS * 1_000,
    }
}

fn time_range(name: &'static str, unit: Unit) -> ArgError {
    range(name, 1, max_time(unit), Some(unit))
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
#[inline]
fn integer(
    arg: &[u8],
    name: &'static str,
    min: u64,
    max: u64,
    unit: Option<Unit>,
) -> Result<u64, ArgError> {
    match parse_decimal(arg) {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ArgError::Integer {
            name,
            min,
            max,
            unit,
        }),
    }
}

fn parse_decimal(arg: &[u8]) -> Option<u64> {
    match arg.len() {
        0 => None,
        // 19 digits or fewer cannot overflow a u64: no checks per digit.
        1..=19 => {
            let mut n = 0u64;
            for &b in arg {
                let digit = b.wrapping_sub(b'0');
                if digit > 9 {
                    return None;
                }
                n = n * 10 + u64::from(digit);
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

/// The most keys of one several-limit command.
pub const MAX_KEYS: usize = 16;

/// The arguments of a command, read one at a time without copying.
pub trait ArgSource<'a> {
    fn len(&self) -> usize;
    /// Argument `i`, empty past the end.
    fn get(&self, i: usize) -> &'a [u8];
}

impl<'a> ArgSource<'a> for &[&'a [u8]] {
    fn len(&self) -> usize {
        <[&[u8]]>::len(self)
    }
    fn get(&self, i: usize) -> &'a [u8] {
        <[&[u8]]>::get(self, i).copied().unwrap_or_default()
    }
}

/// What a spec may name: an algorithm's word, numbers and options, and the
/// function that reads a spec of it ([`read_spec`] for that algorithm).
#[derive(Clone, Copy)]
pub struct SpecSyntax {
    pub name: &'static str,
    pub args: &'static [Arg],
    pub options: &'static [Arg],
    pub read: ReadSpec,
}

/// Reads one spec whose algorithm's word is at `at`, in `unit`s and within
/// `bounds`: see [`read_spec`].
pub type ReadSpec = fn(&[&[u8]], usize, Unit, Bounds) -> Result<(Spec, usize), ArgError>;

impl SpecSyntax {
    /// The table row of algorithm `L`.
    pub const fn of<L: Limiter>() -> SpecSyntax {
        SpecSyntax {
            name: L::NAME,
            args: L::ARGS,
            options: L::OPTIONS,
            read: read_spec::<L>,
        }
    }
}

/// The spec's words as the error message lists them.
fn expects(args: &[Arg], options: &[Arg]) -> String {
    let mut names: Vec<String> = args.iter().map(|a| a.name.to_string()).collect();
    names.extend(options.iter().map(|o| format!("[{} value]", o.name)));
    names.join(" ")
}

/// Argument `i` of `args`, empty past the end.
#[inline]
fn arg<'a>(args: &[&'a [u8]], i: usize) -> &'a [u8] {
    args.get(i).copied().unwrap_or_default()
}

/// One limit of a several-limit command: the algorithm's row in the table
/// and its values (numbers, then options; durations in ns), checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Spec {
    pub algorithm: usize,
    values: [u64; MAX_VALUES],
    len: usize,
}

impl Spec {
    pub fn values(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

/// The options of a several-limit call: `[QUANTITY q] [MS] [AT ns]`.
pub type Options = Tail;

/// The number of keys of a several-limit call, from its `numkeys` argument.
pub fn numkeys(arg: &[u8]) -> Result<usize, ArgError> {
    let n = integer(arg, "numkeys", 1, MAX_KEYS as u64, None)?;
    usize::try_from(n).map_err(|_| range("numkeys", 1, MAX_KEYS as u64, None))
}

/// Finds the algorithm a spec word names.
fn algorithm(table: &[SpecSyntax], word: &[u8]) -> Option<usize> {
    let first = word.first()?.to_ascii_uppercase();
    table.iter().position(|a| {
        let name = a.name.as_bytes();
        name.len() == word.len() && name.first() == Some(&first) && word.eq_ignore_ascii_case(name)
    })
}

/// Reads one spec of algorithm `L` from `at` (its word): the numbers, then
/// any of its options, each in its range for `unit` and `bounds`, then the
/// parameters checked together. Returns the spec (its `algorithm` left for
/// the caller to set) and where the next argument is. One copy of this
/// function per algorithm: the argument table is known when it is compiled.
pub fn read_spec<L: Limiter>(
    args: &[&[u8]],
    at: usize,
    unit: Unit,
    bounds: Bounds,
) -> Result<(Spec, usize), ArgError> {
    let n = L::ARGS.len();
    if at + n >= args.len() {
        return Err(ArgError::SpecTooShort {
            index: 0,
            algorithm: L::NAME,
            expects: expects(L::ARGS, L::OPTIONS),
        });
    }
    let mut words = Words::new(at + 1);
    let mut next = at + 1 + n;
    while next < args.len() && words.option(L::OPTIONS, arg(args, next), next + 1)? {
        if next + 1 >= args.len() {
            // The option's value is missing.
            let option = L::OPTIONS
                .iter()
                .find(|o| arg(args, next).eq_ignore_ascii_case(o.name.as_bytes()));
            return Err(
                option.map_or(ArgError::Joint("an option needs a value"), |o| {
                    range_of(o, Unit::Seconds, Bounds::DEFAULT)
                }),
            );
        }
        next += 2;
    }
    let (values, len) = spec_values(&args, &words, L::ARGS, L::OPTIONS, unit, bounds)?;
    L::params(&values[..len]).map_err(|e| param_error(e, L::ARGS, L::OPTIONS, unit, bounds))?;
    let spec = Spec {
        algorithm: 0,
        values,
        len,
    };
    Ok((spec, next))
}

/// Reads the spec at `at` with the table's reader; `index` is the spec's
/// number in error messages (0: a command of one spec, without the
/// prefix).
fn spec_at(
    args: &[&[u8]],
    at: usize,
    table: &[SpecSyntax],
    index: usize,
    unit: Unit,
    bounds: Bounds,
) -> Result<(Spec, usize), ArgError> {
    let word = arg(args, at);
    let algorithm = algorithm(table, word).ok_or_else(|| ArgError::UnknownAlgorithm {
        index,
        word: printable(word),
    })?;
    let syntax = &table[algorithm];
    let (mut spec, next) = (syntax.read)(args, at, unit, bounds).map_err(|e| match e {
        ArgError::SpecTooShort {
            algorithm, expects, ..
        } => ArgError::SpecTooShort {
            index,
            algorithm,
            expects,
        },
        e if index == 0 => e,
        inner => ArgError::InSpec {
            index,
            algorithm: syntax.name,
            inner: Box::new(inner),
        },
    })?;
    spec.algorithm = algorithm;
    Ok((spec, next))
}

/// The unit and the bounds of a call, known before its numbers are read:
/// `MS` and `AT` are words no number or option value can be, so finding
/// them among `args` is enough (`options` then checks where they are).
fn unit_and_bounds(
    args: &[&[u8]],
    trusted: impl FnOnce() -> bool,
    configured: Bounds,
) -> (Unit, Bounds) {
    let (mut unit, mut at) = (Unit::Seconds, false);
    for arg in args {
        if let &[a, b] = *arg {
            match [a.to_ascii_uppercase(), b.to_ascii_uppercase()] {
                [b'M', b'S'] => unit = Unit::Millis,
                [b'A', b'T'] => at = true,
                _ => {}
            }
        }
    }
    // AT carries the master's clock: only the master or the AOF may send it
    // (`options` refuses it from a client), and what they send was checked
    // by the master under its own configuration.
    let bounds = if at && trusted() {
        Bounds::HARD
    } else {
        configured
    };
    (unit, bounds)
}

/// `trusted`, asked of the server at most once however often it is called
/// (finding the bounds and then reading `AT` both need it).
fn asked_once(trusted: impl Fn() -> bool) -> impl Fn() -> bool {
    let answer = std::cell::OnceCell::new();
    move || *answer.get_or_init(&trusted)
}

/// Parses the arguments after the command name of RL.ALLOW / RL.PEEK,
/// `numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS] [AT ns]`: the
/// specs go to `specs` (one per key, in order; the keys are arguments
/// `1 ..= specs.len()`), the options are returned. `table` is the
/// algorithms a spec may name; `trusted` as in `limiter`.
pub fn several(
    args: &[&[u8]],
    table: &[SpecSyntax],
    trusted: impl Fn() -> bool,
    bounds: Bounds,
    specs: &mut ArrayVec<Spec, MAX_KEYS>,
) -> Result<Options, ArgError> {
    let count = numkeys(arg(args, 0))?;
    if args.len() < 1 + count {
        return Err(ArgError::MissingSpec {
            index: 1,
            keys: count,
        });
    }
    for i in 2..=count {
        let key = arg(args, i);
        if (1..i).any(|j| arg(args, j) == key) {
            return Err(ArgError::RepeatedKey(printable(key)));
        }
    }
    let trusted = asked_once(trusted);
    let (unit, bounds) = unit_and_bounds(&args[1 + count..], &trusted, bounds);
    specs.clear();
    let mut at = 1 + count;
    for index in 1..=count {
        if at >= args.len() {
            return Err(ArgError::MissingSpec { index, keys: count });
        }
        let (spec, next) = spec_at(args, at, table, index, unit, bounds)?;
        specs.push(spec);
        at = next;
    }
    options(&args, at, true, trusted)
}

/// `RL.REFUND key spec quantity [MS] [AT ns]`, parsed from the arguments
/// after the key. The spec's errors read as the single command's.
pub fn refund(
    args: &[&[u8]],
    table: &[SpecSyntax],
    trusted: impl Fn() -> bool,
    bounds: Bounds,
) -> Result<(Spec, Tail), ArgError> {
    let trusted = asked_once(trusted);
    let (unit, bounds) = unit_and_bounds(args, &trusted, bounds);
    let (spec, next) = spec_at(args, 0, table, 0, unit, bounds)?;
    if next >= args.len() {
        let syntax = &table[spec.algorithm];
        return Err(ArgError::SpecTooShort {
            index: 0,
            algorithm: syntax.name,
            expects: format!("{} quantity", expects(syntax.args, syntax.options)),
        });
    }
    let quantity = integer(arg(args, next), "quantity", 0, MAX_QUANTITY, None)?;
    let mut tail = options(&args, next + 1, false, trusted)?;
    tail.quantity = quantity;
    Ok((spec, tail))
}

/// `[QUANTITY q] [MS] [AT ns]` from argument `from` on, in any order.
fn options<'a>(
    args: &impl ArgSource<'a>,
    from: usize,
    allow_quantity: bool,
    trusted: impl FnOnce() -> bool,
) -> Result<Tail, ArgError> {
    let mut trusted = Some(trusted);
    let mut out = Tail::DEFAULT;
    let mut quantity = false;
    let mut i = from;
    while i < args.len() {
        let arg = args.get(i);
        if out.ms_or_at(args, &mut i, &mut trusted)? {
            i += 1;
            continue;
        }
        if allow_quantity && arg.eq_ignore_ascii_case(b"QUANTITY") {
            if quantity {
                return Err(ArgError::Repeated("QUANTITY"));
            }
            quantity = true;
            i += 1;
            out.quantity = integer(args.get(i), "QUANTITY", 0, MAX_QUANTITY, None)?;
        } else {
            return Err(ArgError::Unknown(printable(arg)));
        }
        i += 1;
    }
    Ok(out)
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
    use crate::core::gcra::{GcraParams, Tat};
    use crate::core::slice::{SliceParams, SliceWindow};
    use crate::core::slide::{SlideLog, SlideParams};

    fn throttle(
        args: &[&[u8]],
        trusted: impl FnOnce() -> bool,
    ) -> Result<Request<GcraParams>, ArgError> {
        limiter::<Tat>(args, trusted, Bounds::DEFAULT)
    }

    fn slide(
        args: &[&[u8]],
        trusted: impl FnOnce() -> bool,
        bounds: Bounds,
    ) -> Result<Request<SlideParams>, ArgError> {
        limiter::<SlideLog>(args, trusted, bounds)
    }

    fn slice(
        args: &[&[u8]],
        trusted: impl FnOnce() -> bool,
        bounds: Bounds,
    ) -> Result<Request<SliceParams>, ArgError> {
        limiter::<SliceWindow>(args, trusted, bounds)
    }

    #[test]
    fn every_algorithm_fits_the_argument_buffer() {
        assert!(Tat::ARGS.len() <= MAX_ARGS);
        assert!(SlideLog::ARGS.len() <= MAX_ARGS);
        assert!(SliceWindow::ARGS.len() <= MAX_ARGS);
    }

    #[test]
    fn the_tolerance_boundary() {
        // (max_burst + 1) x period / count <= 100 years (3,153,600,000 s),
        // SPEC's tolerance; both sides, in seconds and in milliseconds.
        let ok = |args: &[&str]| {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            throttle(&args, || false).is_ok()
        };
        assert!(ok(&["9", "1", "315360000"]));
        assert!(!ok(&["10", "1", "315360000"]));
        assert!(ok(&["19", "2", "315360000"]));
        assert!(!ok(&["20", "2", "315360000"]));
        assert!(ok(&["9", "1", "315360000000", "MS"]));
        assert!(!ok(&["10", "1", "315360000000", "MS"]));
        assert!(ok(&["29", "3", "315360000000", "MS"]));
        assert!(!ok(&["30", "3", "315360000000", "MS"]));
        assert_eq!(
            throttle_err(&["10", "1", "315360000"]),
            "ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)"
        );
    }

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

    /// The reader against the standard library's, for every byte value at
    /// every position of every length up to nine, and for random digit
    /// strings of every length.
    #[test]
    fn decimal_reader_agrees_with_the_standard_one() {
        let reference = |s: &[u8]| {
            let digits = !s.is_empty() && s.iter().all(u8::is_ascii_digit);
            digits
                .then(|| std::str::from_utf8(s).ok()?.parse::<u64>().ok())
                .flatten()
        };
        for len in 1..=9 {
            let base: Vec<u8> = b"987654321".iter().copied().take(len).collect();
            for pos in 0..len {
                for byte in 0..=255u8 {
                    let mut s = base.clone();
                    s[pos] = byte;
                    assert_eq!(parse_decimal(&s), reference(&s), "{s:?}");
                }
            }
        }
        let mut runner = proptest::test_runner::TestRunner::default();
        runner
            .run(&"0{0,10}[0-9]{1,21}", |s| {
                proptest::prop_assert_eq!(parse_decimal(s.as_bytes()), reference(s.as_bytes()));
                Ok(())
            })
            .unwrap();
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
            (&["1000", "1", "315360000"], "ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)"),
            (&["15", "30", "60", "a\u{0}b"], "ERR unknown argument 'a?b'"),
        ];
        for (args, expected) in cases {
            assert_eq!(throttle_err(args), *expected, "{args:?}");
        }
    }

    /// RL.SLIDE's PRECISION option: its value in the call's unit, from 0
    /// to the window, anywhere after the numbers; the reply to each bad
    /// value.
    #[test]
    fn slide_precision() {
        let run = |args: &[&str]| {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            slide(&args, || false, Bounds::DEFAULT).map_err(msg)
        };
        let d = |args: &[&str]| run(args).map(|r| r.params.precision());
        assert_eq!(d(&["5", "60"]), Ok(Nanos::ZERO));
        assert_eq!(
            d(&["5", "60", "PRECISION", "6"]),
            Ok(Nanos::new(6_000_000_000))
        );
        assert_eq!(
            d(&["5", "60", "2", "precision", "60"]),
            Ok(Nanos::new(60_000_000_000))
        );
        assert_eq!(
            d(&["5", "60000", "PRECISION", "600", "MS"]),
            Ok(Nanos::new(600_000_000))
        );
        assert_eq!(d(&["5", "60000", "MS", "Precision", "0"]), Ok(Nanos::ZERO));
        // arguments => reply
        #[rustfmt::skip]
        let cases: &[(&[&str], &str)] = &[
            (&["5", "60", "PRECISION", "61"], "ERR PRECISION must be at most the window"),
            (&["5", "60", "MS", "PRECISION", "61"], "ERR PRECISION must be at most the window"),
            (&["5", "60", "PRECISION", "-1"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
            (&["5", "60", "PRECISION", "1.5"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
            (&["5", "60", "PRECISION", "x"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
            (&["5", "60", "MS", "PRECISION", "x"], "ERR PRECISION must be an integer from 0 to 315360000000 (milliseconds, with MS)"),
            (&["5", "60", "PRECISION"], "ERR PRECISION must be an integer from 0 to 315360000 (seconds)"),
            (&["5", "60", "PRECISION", "1", "PRECISION", "1"], "ERR PRECISION is given more than once"),
        ];
        for (args, expected) in cases {
            assert_eq!(run(args).map(|_| ()), Err(expected.to_string()), "{args:?}");
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
