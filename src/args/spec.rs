//! Reading the commands' arguments: the single commands, the several-limit
//! ones and RL.REFUND, each parsed once into typed parameters.
//!
//! A spec is read in two steps. First its words are found (`RawSpec`: the
//! parameters by position, the options by keyword), with the command's own
//! options (`MS`, `AT`, `QUANTITY`, `ID`); then, with the unit and the
//! bounds known, each word becomes a value of its `ParamKind` and the
//! kind's `Kind::params` makes the typed parameters. No word is looked
//! at twice, and a text value (a lease id, a zone) is never taken for an
//! option.

use arrayvec::ArrayVec;

use super::{integer, max_time, printable, range, ArgError, Bounds, MAX_KEYS, MAX_QUANTITY};
use crate::core::{block, Kind, Nanos, Param, ParamError, ParamKind, TimeUnit, Value};
use crate::kinds::{self, Listed, Row, Spec, VisitKind};

/// The most parameters, and options, any kind takes.
pub(super) const MAX_PARAMS: usize = 4;
pub(super) const MAX_OPTIONS: usize = 2;

/// A spec's words, found and not yet read, as positions among the
/// command's words (a several-limit call keeps one per spec, so they are
/// positions, not slices): its parameters from `params` on (a missing one
/// reads as empty) and the values of its options by keyword (0 when not
/// given: an option's value follows its keyword, so it is never the first
/// word).
#[derive(Clone, Copy, Debug, Default)]
pub struct RawSpec {
    params: usize,
    options: [usize; MAX_OPTIONS],
}

/// Where `params` reads a spec's words from.
trait SpecWords<'a> {
    /// Parameter `i`'s word (empty when missing).
    fn param(&self, i: usize) -> &'a [u8];
    /// Option `i`'s value, if the option was given.
    fn option(&self, i: usize) -> Option<&'a [u8]>;
}

/// A `RawSpec` among the command's words.
struct AmongArgs<'r, 'w, 'a> {
    args: &'w [&'a [u8]],
    raw: &'r RawSpec,
}

impl<'a> SpecWords<'a> for AmongArgs<'_, '_, 'a> {
    #[inline(always)]
    fn param(&self, i: usize) -> &'a [u8] {
        arg(self.args, self.raw.params + i)
    }

    #[inline(always)]
    fn option(&self, i: usize) -> Option<&'a [u8]> {
        match self.raw.options.get(i) {
            Some(&at) if at != 0 => Some(arg(self.args, at)),
            _ => None,
        }
    }
}

/// A single command's spec: its parameters, the first words (not copied),
/// and its options' values.
struct SingleWords<'w, 'a> {
    params: &'w [&'a [u8]],
    options: [Option<&'a [u8]>; MAX_OPTIONS],
}

impl<'a> SpecWords<'a> for SingleWords<'_, 'a> {
    #[inline(always)]
    fn param(&self, i: usize) -> &'a [u8] {
        arg(self.params, i)
    }

    #[inline(always)]
    fn option(&self, i: usize) -> Option<&'a [u8]> {
        self.options.get(i).copied().flatten()
    }
}

/// The options of a spec of RL.ALLOW / RL.PEEK that are no option of its
/// kind: `UNITS n` and `SHADOW`, any order, each at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitOptions {
    /// `UNITS n`: the limit decides and records `n` units instead of the
    /// call's quantity; `NO_UNITS` when not given (8 bytes, not 16: one
    /// is kept per spec while the call's options are read).
    pub units: u64,
    /// `SHADOW`: decided, shown, recorded when it would allow, and never
    /// refusing the call.
    pub shadow: bool,
}

impl Default for LimitOptions {
    fn default() -> LimitOptions {
        LimitOptions {
            units: NO_UNITS,
            shadow: false,
        }
    }
}

/// `LimitOptions::units` without `UNITS`: above any quantity allowed.
const NO_UNITS: u64 = u64::MAX;
const _: () = assert!(MAX_QUANTITY < NO_UNITS);

/// The words of [`LimitOptions`], which only a several-limit call's specs
/// take (elsewhere they are unknown arguments).
const LIMIT_WORDS: [&[u8]; 2] = [b"UNITS", b"SHADOW"];

/// One limit of a several-limit call: its spec and its own options.
#[derive(Clone, Copy, Debug)]
pub struct LimitSpec {
    pub spec: Spec,
    /// The units this limit decides and records: its own (`UNITS`), or
    /// the call's quantity.
    pub quantity: u64,
    pub shadow: bool,
}

/// A single command's request: its parameters and the options every
/// limiter command shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a, P> {
    pub params: P,
    /// What the request takes, for a kind that `TAKES_ID`; empty otherwise.
    pub id: &'a [u8],
    pub quantity: u64,
    pub unit: TimeUnit,
    pub at: Option<Nanos>,
    /// `MAXWAIT w`: the longest wait for a turn, in ns (a kind that
    /// `WAITS` only).
    pub max_wait: Option<Nanos>,
}

/// The options that follow a call's limits.
#[derive(Clone, Copy, Debug)]
pub struct Tail<'a> {
    pub quantity: u64,
    pub unit: TimeUnit,
    /// The master's clock, from `AT`.
    pub at: Option<Nanos>,
    /// `ID`: what a several-limit call takes of a kind that `TAKES_ID`.
    pub id: Option<&'a [u8]>,
    /// `MAXWAIT w`, in ns: the longest wait for a turn (every spec of a
    /// kind that `WAITS`).
    pub max_wait: Option<Nanos>,
    /// A several-limit call's SHADOW specs: bit `i` is set when spec `i`
    /// (from 0) is SHADOW (there are at most 16).
    pub shadows: u32,
}

/// A several-limit call's options.
pub type Options<'a> = Tail<'a>;

impl<'a> Tail<'a> {
    const DEFAULT: Tail<'static> = Tail {
        quantity: 1,
        unit: TimeUnit::Seconds,
        at: None,
        id: None,
        max_wait: None,
        shadows: 0,
    };

    /// The bounds the parameters are held to: the configured ones for a
    /// client, the hard ones for what the master sent (it already checked
    /// them under its own configuration).
    fn bounds(&self, configured: Bounds) -> Bounds {
        match self.at {
            Some(_) => Bounds::HARD,
            None => configured,
        }
    }

    /// Reads `MS` or `AT ns` at `args[*i]`, moving `i` past a value; false
    /// when the word is neither.
    fn ms_or_at(
        &mut self,
        args: &[&[u8]],
        i: &mut usize,
        trusted: &mut Option<impl FnOnce() -> bool>,
    ) -> Result<bool, ArgError> {
        let word = arg(args, *i);
        if word.eq_ignore_ascii_case(b"MS") {
            if self.unit == TimeUnit::Millis {
                return Err(ArgError::Repeated("MS"));
            }
            self.unit = TimeUnit::Millis;
        } else if word.eq_ignore_ascii_case(b"AT") {
            if !trusted.take().is_some_and(|f| f()) {
                return Err(ArgError::AtFromClient);
            }
            if self.at.is_some() {
                return Err(ArgError::Repeated("AT"));
            }
            *i += 1;
            self.at = Some(Nanos::new(integer(arg(args, *i), "AT", 0, u64::MAX, None)?));
        } else {
            return Ok(false);
        }
        Ok(true)
    }
}

/// `MAXWAIT w`'s value in `unit`, in ns: 0 to the longest time.
fn max_wait(word: &[u8], unit: TimeUnit) -> Result<Nanos, ArgError> {
    let w = integer(word, "MAXWAIT", 0, max_time(unit), Some(unit))?;
    Ok(Nanos::new(w.saturating_mul(unit.nanos())))
}

/// Whether `word` is `MAXWAIT`, any case.
#[inline]
fn is_max_wait(word: &[u8]) -> bool {
    same_word(word, b"MAXWAIT")
}

#[inline]
fn arg<'a>(args: &[&'a [u8]], i: usize) -> &'a [u8] {
    args.get(i).copied().unwrap_or_default()
}

/// The position of `word` among `options` (any case), if it is one.
#[inline(always)]
fn option_index(options: &[Param], word: &[u8]) -> Option<usize> {
    options
        .iter()
        .position(|o| same_word(word, o.name.as_bytes()))
}

/// Whether `word` is `name` (upper case) in any case. Most words a spec's
/// loop meets are no option (the next spec's kind, a call's option): the
/// length and the first letter turn them away before the full
/// comparison.
#[inline(always)]
fn same_word(word: &[u8], name: &[u8]) -> bool {
    word.len() == name.len()
        && word.first().map(u8::to_ascii_uppercase) == name.first().copied()
        && word.eq_ignore_ascii_case(name)
}

/// A word's signature, for a quick test that it is none of the words a
/// spec's own loop takes: its length and first letter (upper case),
/// folded into `0..64`. Two words may share one; the full comparison
/// follows.
#[inline(always)]
const fn signature(len: usize, first: u8) -> u32 {
    (len as u32).wrapping_mul(31).wrapping_add(first as u32) % 64
}

/// The signatures of the words after a spec's parameters that belong to
/// the spec: every kind's options, and `LIMIT_WORDS`. Most words there
/// are the next spec's kind or one of the call's options, and one look
/// at this mask turns them away.
const SPEC_WORDS: u64 = {
    let mut mask = 0u64;
    let mut i = 0;
    while i < kinds::KINDS.len() {
        let options = kinds::KINDS[i].options;
        let mut j = 0;
        while j < options.len() {
            let name = options[j].name.as_bytes();
            mask |= 1 << signature(name.len(), name[0]);
            j += 1;
        }
        i += 1;
    }
    let mut j = 0;
    while j < LIMIT_WORDS.len() {
        mask |= 1 << signature(LIMIT_WORDS[j].len(), LIMIT_WORDS[j][0]);
        j += 1;
    }
    mask
};

/// Whether `word` may be one of the words of `SPEC_WORDS` (false: it is
/// none of them).
#[inline(always)]
fn may_be_spec_word(word: &[u8]) -> bool {
    let first = word.first().map_or(0, u8::to_ascii_uppercase);
    SPEC_WORDS & (1 << signature(word.len(), first)) != 0
}

/// Whether `word` is the BLOCK keyword (any case).
fn is_block(word: &[u8]) -> bool {
    same_word(word, block::BLOCK.name.as_bytes())
}

/// Records the value of the option at `options[index]` in its slot of
/// `slots` (`empty` until it is given), once.
#[inline(always)]
fn record_option<T: Copy + PartialEq>(
    slots: &mut [T; MAX_OPTIONS],
    empty: T,
    options: &[Param],
    index: usize,
    value: T,
) -> Result<(), ArgError> {
    let slot = slots
        .get_mut(index)
        .ok_or(ArgError::Joint("too many options"))?;
    if *slot != empty {
        return Err(ArgError::Repeated(options[index].name));
    }
    *slot = value;
    Ok(())
}

impl RawSpec {
    /// Records the option at `options[index]` with its value, the word at
    /// `value`.
    fn option(&mut self, options: &[Param], index: usize, value: usize) -> Result<(), ArgError> {
        record_option(&mut self.options, 0, options, index, value)
    }

    /// Whether the spec was given its kind's BLOCK option.
    fn has_block(&self, options: &[Param]) -> bool {
        options
            .iter()
            .zip(&self.options)
            .any(|(o, &v)| o.name == block::BLOCK.name && v != 0)
    }
}

/// `RL.<NAME>`'s arguments after the key:
/// `p1 .. pN [id] [quantity] [MS] [options] [AT ns]`. `trusted` answers
/// whether the call came from the master or the AOF (asked only when `AT`
/// is there); `bounds` are the configured ones.
#[inline(always)]
pub fn single<'a, L: Kind>(
    args: &[&'a [u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<Request<'a, L::Params>, ArgError> {
    let n = L::PARAMS.len();
    let mut raw = SingleWords {
        params: args.get(..n).unwrap_or(args),
        options: [None; MAX_OPTIONS],
    };
    let mut i = n;
    let id = match L::TAKES_ID {
        true => {
            i += 1;
            id(arg(args, n))?
        }
        false => b"".as_slice(),
    };
    let quantity_at = i;
    let mut trusted = Some(trusted);
    let mut tail = Tail::DEFAULT;
    let mut wait = None;
    while let Some(&word) = args.get(i) {
        if tail.ms_or_at(args, &mut i, &mut trusted)? {
        } else if is_max_wait(word) {
            if !L::WAITS {
                return Err(ArgError::WaitsOnly(None));
            }
            if wait.is_some() {
                return Err(ArgError::Repeated("MAXWAIT"));
            }
            i += 1;
            wait = Some(arg(args, i));
        } else if let Some(o) = option_index(L::OPTIONS, word) {
            i += 1;
            let value = args
                .get(i)
                .ok_or_else(|| value_error(&L::OPTIONS[o], tail.unit, bounds))?;
            record_option(&mut raw.options, None, L::OPTIONS, o, Some(*value))?;
        } else if i == quantity_at
            && word
                .first()
                .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
        {
            tail.quantity = integer(word, "quantity", 0, MAX_QUANTITY, None)?;
        } else if is_block(word) {
            // A kind that takes no BLOCK (LEASE) says so.
            return Err(ArgError::NoBlock(L::NAME));
        } else {
            return Err(ArgError::Extra(printable(word)));
        }
        i += 1;
    }
    let params = params::<L>(&raw, tail.unit, tail.bounds(bounds))?;
    let max_wait = match wait {
        Some(word) => Some(max_wait(word, tail.unit)?),
        None => None,
    };
    Ok(Request {
        params,
        id,
        quantity: tail.quantity,
        unit: tail.unit,
        at: tail.at,
        max_wait,
    })
}

/// A lease id: 1 to 128 bytes, any bytes.
pub fn id(word: &[u8]) -> Result<&[u8], ArgError> {
    if (1..=MAX_ID).contains(&word.len()) {
        Ok(word)
    } else {
        Err(ArgError::Text {
            name: "lease_id",
            max: MAX_ID,
        })
    }
}

/// The longest id a request may name.
pub const MAX_ID: usize = 128;

/// The typed parameters of `L` from a spec's words, in `unit`.
#[inline(always)]
fn params<'a, L: Kind>(
    raw: &impl SpecWords<'a>,
    unit: TimeUnit,
    bounds: Bounds,
) -> Result<L::Params, ArgError> {
    // One step per parameter and option, each with its index a constant:
    // the kind of what it reads, from `L`'s constant tables, is then known
    // where the word is read (no dispatch on the kind, no bounds that do
    // not apply). Parameters first, then options, each in order; then the
    // options move up to follow the parameters, as `L::params` reads them.
    let mut values: [Value; MAX_PARAMS + MAX_OPTIONS] = [
        param_value::<L, 0>(raw, unit, bounds)?,
        param_value::<L, 1>(raw, unit, bounds)?,
        param_value::<L, 2>(raw, unit, bounds)?,
        param_value::<L, 3>(raw, unit, bounds)?,
        option_value::<L, 0>(raw, unit, bounds)?,
        option_value::<L, 1>(raw, unit, bounds)?,
    ];
    if L::PARAMS.len() < MAX_PARAMS {
        values.copy_within(MAX_PARAMS.., L::PARAMS.len());
    }
    let len = L::PARAMS.len() + L::OPTIONS.len();
    L::params(values.get(..len).unwrap_or_default()).map_err(|e| match e {
        ParamError::Param(i) => L::PARAMS
            .iter()
            .chain(L::OPTIONS)
            .nth(i)
            .map_or(ArgError::Joint("invalid arguments"), |p| {
                value_error(p, unit, bounds)
            }),
        ParamError::Joint(rule) => ArgError::Joint(rule),
        ParamError::Unknown(text) => ArgError::Unknown(text),
    })
}

/// The value of parameter `I` of `L` (`Absent` past its last).
#[inline(always)]
fn param_value<'a, L: Kind, const I: usize>(
    raw: &impl SpecWords<'a>,
    unit: TimeUnit,
    bounds: Bounds,
) -> Result<Value<'a>, ArgError> {
    match L::PARAMS.get(I) {
        Some(param) => value(raw.param(I), param, unit, bounds),
        None => Ok(Value::Absent),
    }
}

/// The value of option `I` of `L` (`Absent` when not given).
#[inline(always)]
fn option_value<'a, L: Kind, const I: usize>(
    raw: &impl SpecWords<'a>,
    unit: TimeUnit,
    bounds: Bounds,
) -> Result<Value<'a>, ArgError> {
    match (L::OPTIONS.get(I), raw.option(I)) {
        (Some(option), Some(word)) => value(word, option, unit, bounds),
        _ => Ok(Value::Absent),
    }
}

/// One parameter's value from its word.
#[inline(always)]
fn value<'a>(
    word: &'a [u8],
    param: &Param,
    unit: TimeUnit,
    bounds: Bounds,
) -> Result<Value<'a>, ArgError> {
    let (min, max, scale) = match param.kind {
        ParamKind::Duration => (1, max_time(unit), unit.nanos()),
        ParamKind::DurationOrZero => (0, max_time(unit), unit.nanos()),
        ParamKind::Integer { min, max, ceiling } => {
            (min, ceiling.map_or(max, |c| max.min(bounds.ceiling(c))), 1)
        }
        ParamKind::Word(words) => {
            return words
                .iter()
                .position(|w| word.eq_ignore_ascii_case(w.as_bytes()))
                .map(|i| Value::Number(i as u64))
                .ok_or_else(|| value_error(param, unit, bounds));
        }
        ParamKind::Text { max } => {
            return match (1..=max).contains(&word.len()) {
                true => Ok(Value::Text(word)),
                false => Err(value_error(param, unit, bounds)),
            };
        }
    };
    match super::parse_decimal(word) {
        Some(n) if (min..=max).contains(&n) => Ok(Value::Number(n * scale)),
        _ => Err(value_error(param, unit, bounds)),
    }
}

/// What a parameter may be, as the error for a value it may not be.
#[cold]
fn value_error(param: &Param, unit: TimeUnit, bounds: Bounds) -> ArgError {
    match param.kind {
        ParamKind::Duration => range(param.name, 1, max_time(unit), Some(unit)),
        ParamKind::DurationOrZero => range(param.name, 0, max_time(unit), Some(unit)),
        ParamKind::Integer { min, max, ceiling } => range(
            param.name,
            min,
            ceiling.map_or(max, |c| max.min(bounds.ceiling(c))),
            None,
        ),
        ParamKind::Word(words) => ArgError::Word {
            name: param.name,
            words,
        },
        ParamKind::Text { max } => ArgError::Text {
            name: param.name,
            max,
        },
    }
}

/// Reads a spec's words into its kind's typed parameters.
struct ReadSpec<'r, 'w, 'a> {
    args: &'w [&'a [u8]],
    raw: &'r RawSpec,
    unit: TimeUnit,
    bounds: Bounds,
}

impl VisitKind for ReadSpec<'_, '_, '_> {
    type Out = Result<Spec, ArgError>;

    fn visit<L: Listed>(self) -> Self::Out {
        let words = AmongArgs {
            args: self.args,
            raw: self.raw,
        };
        params::<L>(&words, self.unit, self.bounds).map(L::spec)
    }
}

/// What a kind's spec takes, for an error: `limit window [PRECISION value]`
/// (the kind's own options; BLOCK, which every kind but LEASE takes, is
/// left out).
fn expects(row: &Row) -> String {
    let mut names: Vec<String> = row.params.iter().map(|p| p.name.to_string()).collect();
    names.extend(
        row.options
            .iter()
            .filter(|o| o.name != block::BLOCK.name)
            .map(|o| format!("[{} value]", o.name)),
    );
    names.join(" ")
}

/// Finds the spec that starts at `args[at]`: its kind and its words, and
/// the position after it. `index` is the spec's 1-based position in a
/// several-limit call, 0 for RL.REFUND's one spec; `blocks` whether the
/// command takes BLOCK in a spec (RL.REFUND and RL.CHARGE do not: there
/// the word is left for the caller).
#[inline(always)]
fn find_spec(
    args: &[&[u8]],
    at: usize,
    index: usize,
    blocks: bool,
    limit: &mut LimitOptions,
) -> Result<(&'static Row, RawSpec, usize), ArgError> {
    let word = arg(args, at);
    let row = kinds::by_word(word).ok_or_else(|| ArgError::UnknownKind {
        index,
        word: printable(word),
    })?;
    let n = row.params.len();
    if at + n >= args.len() {
        return Err(ArgError::SpecTooShort {
            index,
            kind: row.name,
            expects: expects(row),
        });
    }
    let mut raw = RawSpec {
        params: at + 1,
        options: [0; MAX_OPTIONS],
    };
    let mut next = at + 1 + n;
    loop {
        let word = arg(args, next);
        if !may_be_spec_word(word) {
            break;
        }
        if let Some(o) = option_index(row.options, word)
            .filter(|&o| blocks || row.options[o].name != block::BLOCK.name)
        {
            if next + 1 >= args.len() {
                return Err(in_spec(
                    index,
                    row,
                    value_error(&row.options[o], TimeUnit::Seconds, Bounds::DEFAULT),
                ));
            }
            raw.option(row.options, o, next + 1)
                .map_err(|e| in_spec(index, row, e))?;
            next += 2;
        } else if index > 0 {
            match limit_option(limit, word, arg(args, next + 1)) {
                Ok(0) => break,
                Ok(words) => next += words,
                Err(e) => return Err(in_spec(index, row, e)),
            }
        } else {
            break;
        }
    }
    if blocks && !row.takes_block && is_block(arg(args, next)) {
        return Err(in_spec(index, row, ArgError::NoBlock(row.name)));
    }
    if limit.shadow && raw.has_block(row.options) {
        return Err(in_spec(
            index,
            row,
            ArgError::Joint("SHADOW takes no BLOCK"),
        ));
    }
    Ok((row, raw, next))
}

/// Reads `UNITS n` (`value` the word after it) or `SHADOW` at `word`
/// into `limit`: the number of words it took, 0 when `word` is neither.
#[inline(always)]
fn limit_option(limit: &mut LimitOptions, word: &[u8], value: &[u8]) -> Result<usize, ArgError> {
    if same_word(word, LIMIT_WORDS[0]) {
        if limit.units != NO_UNITS {
            return Err(ArgError::Repeated("UNITS"));
        }
        limit.units = integer(value, "UNITS", 0, MAX_QUANTITY, None)?;
        Ok(2)
    } else if same_word(word, LIMIT_WORDS[1]) {
        if limit.shadow {
            return Err(ArgError::Repeated("SHADOW"));
        }
        limit.shadow = true;
        Ok(1)
    } else {
        Ok(0)
    }
}

/// An error of the `index`-th spec, named as such (index 0: as is).
fn in_spec(index: usize, row: &Row, e: ArgError) -> ArgError {
    match index {
        0 => e,
        _ => ArgError::InSpec {
            index,
            kind: row.name,
            inner: Box::new(e),
        },
    }
}

/// `[QUANTITY q] [MS] [MAXWAIT w] [ID id] [AT ns]` from argument `from`
/// on, in any order; `QUANTITY`, `MAXWAIT` and `ID` only where `several`.
fn tail<'a>(
    args: &[&'a [u8]],
    from: usize,
    several: bool,
    trusted: impl FnOnce() -> bool,
) -> Result<Tail<'a>, ArgError> {
    let mut trusted = Some(trusted);
    let mut out = Tail::DEFAULT;
    let mut quantity = false;
    let mut wait = None;
    let mut i = from;
    while let Some(&word) = args.get(i) {
        if out.ms_or_at(args, &mut i, &mut trusted)? {
        } else if several && is_max_wait(word) {
            if wait.is_some() {
                return Err(ArgError::Repeated("MAXWAIT"));
            }
            i += 1;
            wait = Some(arg(args, i));
        } else if several && word.eq_ignore_ascii_case(b"QUANTITY") {
            if quantity {
                return Err(ArgError::Repeated("QUANTITY"));
            }
            quantity = true;
            i += 1;
            out.quantity = integer(arg(args, i), "QUANTITY", 0, MAX_QUANTITY, None)?;
        } else if several && word.eq_ignore_ascii_case(b"ID") {
            if out.id.is_some() {
                return Err(ArgError::Repeated("ID"));
            }
            i += 1;
            out.id = Some(id(arg(args, i))?);
        } else {
            return Err(ArgError::Extra(printable(word)));
        }
        i += 1;
    }
    if let Some(word) = wait {
        out.max_wait = Some(max_wait(word, out.unit)?);
    }
    Ok(out)
}

/// Whether two keys are the same. The keys of one call often share a hash
/// tag and a length and differ at the end (`{user}:min`, `{user}:day`):
/// their last bytes are compared first, which spares a call to `memcmp`.
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.last() == b.last() && a == b
}

/// RL.ALLOW / RL.PEEK's arguments after the command name,
/// `numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS] [MAXWAIT w]
/// [ID id] [AT ns]`, each spec followed by its own `[UNITS n] [SHADOW]`:
/// the specs go to `specs` (one per key, in order; the keys are arguments
/// `1 ..= specs.len()`), the options are returned. `write` is RL.ALLOW,
/// which needs `ID` when a spec takes one.
pub fn several<'a>(
    args: &[&'a [u8]],
    write: bool,
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
    specs: &mut ArrayVec<LimitSpec, MAX_KEYS>,
) -> Result<Options<'a>, ArgError> {
    let count = super::numkeys(arg(args, 0))?;
    if args.len() < 1 + count {
        return Err(ArgError::MissingSpec {
            index: 1,
            keys: count,
        });
    }
    for i in 2..=count {
        let key = arg(args, i);
        if (1..i).any(|j| same_key(arg(args, j), key)) {
            return Err(ArgError::RepeatedKey(printable(key)));
        }
    }
    // Each spec's kind, words and own options (a single command's spec
    // has none of the last).
    let mut found: ArrayVec<(&'static Row, RawSpec, LimitOptions), MAX_KEYS> = ArrayVec::new();
    let mut at = 1 + count;
    for index in 1..=count {
        if at >= args.len() {
            return Err(ArgError::MissingSpec { index, keys: count });
        }
        let mut limit = LimitOptions::default();
        let (row, raw, next) = find_spec(args, at, index, true, &mut limit)?;
        // `count` is at most MAX_KEYS.
        found.push((row, raw, limit));
        at = next;
    }
    let mut options = tail(args, at, true, trusted)?;
    let bounds = options.bounds(bounds);
    specs.clear();
    for (index, (row, raw, limit)) in found.iter().enumerate() {
        let spec = row
            .visit(ReadSpec {
                args,
                raw,
                unit: options.unit,
                bounds,
            })
            .map_err(|e| in_spec(index + 1, row, e))?;
        options.shadows |= u32::from(limit.shadow) << index;
        specs.push(LimitSpec {
            spec,
            quantity: match limit.units {
                NO_UNITS => options.quantity,
                units => units,
            },
            shadow: limit.shadow,
        });
    }
    if options.max_wait.is_some() {
        if let Some((index, (row, _, _))) =
            found.iter().enumerate().find(|(_, (row, _, _))| !row.waits)
        {
            return Err(ArgError::WaitsOnly(Some((index + 1, row.name))));
        }
    }
    if options.shadows == (1 << count) - 1 {
        return Err(ArgError::AllShadow);
    }
    let needs_id = found.iter().find(|(row, _, _)| row.takes_id);
    match (needs_id, options.id) {
        (Some((row, _, _)), None) if write => return Err(ArgError::IdMissing(row.name)),
        (None, Some(_)) => return Err(ArgError::IdUnused),
        _ => {}
    }
    Ok(options)
}

/// `RL.REFUND key spec quantity [MS] [AT ns]`, from the arguments after
/// the key. The spec's errors read as the single command's.
pub fn refund<'a>(
    args: &[&'a [u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<(Spec, Tail<'a>), ArgError> {
    one_spec(args, trusted, bounds, 0, ArgError::NotRefundable)
}

/// `RL.CHARGE key spec quantity [MS] [AT ns]`, from the arguments after
/// the key: RL.REFUND's, with a quantity of at least 1.
pub fn charge<'a>(
    args: &[&'a [u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
) -> Result<(Spec, Tail<'a>), ArgError> {
    one_spec(args, trusted, bounds, 1, ArgError::NotChargeable)
}

/// `spec quantity [MS] [AT ns]` of a command about one key, a quantity of
/// at least `min`; a spec of a kind that gives nothing back by RL.REFUND
/// is refused with `refused`'s error (RL.CHARGE takes the same kinds).
fn one_spec<'a>(
    args: &[&'a [u8]],
    trusted: impl FnOnce() -> bool,
    bounds: Bounds,
    min: u64,
    refused: fn(&'static str) -> ArgError,
) -> Result<(Spec, Tail<'a>), ArgError> {
    let (row, raw, next) = find_spec(args, 0, 0, false, &mut LimitOptions::default())?;
    if !row.refunds {
        return Err(refused(row.name));
    }
    // A several-limit spec's own options, and BLOCK, are none of this
    // command's.
    let word = arg(args, next);
    if LIMIT_WORDS.iter().any(|w| word.eq_ignore_ascii_case(w)) || is_block(word) {
        return Err(ArgError::Extra(printable(word)));
    }
    if next >= args.len() {
        return Err(ArgError::SpecTooShort {
            index: 0,
            kind: row.name,
            expects: format!("{} quantity", expects(row)),
        });
    }
    let quantity = integer(arg(args, next), "quantity", min, MAX_QUANTITY, None)?;
    let mut tail = tail(args, next + 1, false, trusted)?;
    tail.quantity = quantity;
    let spec = row.visit(ReadSpec {
        args,
        raw: &raw,
        unit: tail.unit,
        bounds: tail.bounds(bounds),
    })?;
    Ok((spec, tail))
}

#[cfg(test)]
mod quick_test {
    use super::{may_be_spec_word, LIMIT_WORDS};
    use crate::kinds::KINDS;

    /// The quick test never turns away a word a spec takes, in any case;
    /// and it turns away the words that most often follow a spec (the
    /// kinds' names, the call's options, the end of the call).
    #[test]
    fn signature_mask() {
        let ours = KINDS
            .iter()
            .flat_map(|k| k.options.iter().map(|o| o.name.as_bytes()))
            .chain(LIMIT_WORDS);
        for word in ours {
            assert!(may_be_spec_word(word), "{word:?}");
            assert!(may_be_spec_word(&word.to_ascii_lowercase()), "{word:?}");
        }
        for word in KINDS.iter().map(|k| k.name) {
            if word != "LEASE" {
                // LEASE shares PRECISION's signature.
                assert!(!may_be_spec_word(word.as_bytes()), "{word}");
            }
        }
        for word in ["QUANTITY", "MS", "maxwait", "ID", "AT", ""] {
            assert!(!may_be_spec_word(word.as_bytes()), "{word}");
        }
    }
}
