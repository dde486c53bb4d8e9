//! The one table of limiter kinds (docs/DESIGN.md#one-table-of-kinds).
//!
//! Every kind is a `core::Limiter` and one row of [`kinds!`] below. From
//! that row come, with nothing else to write: its command `RL.<NAME>`, its
//! spec word in RL.ALLOW / RL.PEEK / RL.REFUND, its custom data type (RDB,
//! AOF, digest, memory), its `RL.STATE` payloads, its RL.INSPECT type, and
//! its INFO rows (`<name>_calls`, `<name>_keys`, ...). The glue is generic
//! over [`Kind`] and never names a kind, except RL.RELEASE, a command of
//! the LEASE kind alone, and INFO's line of RL.QUOTA's time-zone rules.

use crate::args::{self, ArgError, Bounds, RawSpec};
use crate::commands::{self, Error};
use crate::core::{lease, quota, slice, slide, throttle, Limiter, Nanos, Param, Unit};
use crate::server::{Key, ModuleType};

/// A kind as the glue sees it: its `Limiter` plus what the table gives it.
pub trait Kind: Limiter {
    /// Its row in [`KINDS`], which is also its INFO row.
    const INDEX: usize;
    /// Its custom data type.
    fn module_type() -> &'static ModuleType<Self>;
    /// Its parameters as a [`Spec`].
    fn spec(params: Self::Params) -> Spec;
    /// Its update as a [`Staged`] one.
    fn staged(update: Self::Update) -> Staged;
}

/// What a several-limit command does with one spec, for any kind.
pub trait Visit {
    type Out;
    fn visit<L: Kind>(self, params: &L::Params) -> Self::Out;
}

/// One kind, type-erased: what the commands that find a kind by its word,
/// its tag or a key's type need of it.
pub struct Row {
    pub name: &'static str,
    /// The name as `packed_upper` reads it, for `by_word`.
    packed_name: Option<u64>,
    pub params: &'static [Param],
    pub options: &'static [Param],
    pub takes_id: bool,
    pub refunds: bool,
    /// Today's tag and the legacy ones of `RL.STATE` payloads.
    pub tag: u8,
    pub legacy: &'static [(i32, u8)],
    /// The parameters of a spec, read once into a typed [`Spec`].
    pub read: fn(&RawSpec<'_, '_>, Unit, Bounds) -> Result<Spec, ArgError>,
    /// RL.INSPECT's fields of a key holding this kind; `None` for another
    /// type.
    pub inspect: fn(&mut Key<'_>, Nanos) -> Option<commands::Details>,
    /// Sets a key to a decoded `RL.STATE` payload of this kind.
    pub restore: fn(&mut Key<'_>, u8, &[u8]) -> Result<(), Error>,
    /// The command `RL.<NAME>`.
    pub command: fn() -> crate::registration::CommandSpec,
    /// Creates the data type at load.
    pub create_type: fn(*mut redis_module::raw::RedisModuleCtx) -> Result<(), String>,
}

impl Row {
    const fn of<L: Kind>() -> Row {
        Row {
            name: L::NAME,
            packed_name: packed_upper(L::NAME.as_bytes()),
            params: L::PARAMS,
            options: L::OPTIONS,
            takes_id: L::TAKES_ID,
            refunds: L::REFUNDS,
            tag: L::TAG,
            legacy: L::LEGACY,
            read: read::<L>,
            inspect: commands::inspect_key::<L>,
            restore: commands::restore::<L>,
            command: commands::limiter_command::<L>,
            create_type: crate::types::create::<L>,
        }
    }

    /// Whether an `RL.STATE` payload's tag names this kind's state.
    pub fn reads_tag(&self, tag: u8) -> bool {
        self.tag == tag || self.legacy.iter().any(|&(_, t)| t == tag)
    }
}

fn read<L: Kind>(raw: &RawSpec<'_, '_>, unit: Unit, bounds: Bounds) -> Result<Spec, ArgError> {
    args::params::<L>(raw, unit, bounds).map(L::spec)
}

/// The table: one row per kind, `Variant => state type`, in the order of
/// the commands and of INFO.
macro_rules! kinds {
    ($($variant:ident => $ty:ty),+ $(,)?) => {
        /// One limit of a command, parsed once: its kind and its validated
        /// parameters.
        #[derive(Clone, Copy, Debug)]
        pub enum Spec {
            $($variant(<$ty as Limiter>::Params)),+
        }

        /// What one limit of a several-limit call records when the whole
        /// call is allowed: its kind's update, or nothing (`None` once
        /// committed).
        pub enum Staged {
            Nothing,
            $($variant(Option<<$ty as Limiter>::Update>)),+
        }

        /// The kinds, in the table's order.
        pub const KINDS: &[Row] = &[$(Row::of::<$ty>()),+];

        impl Spec {
            /// Runs `v` with this spec's kind and parameters.
            pub fn visit<V: Visit>(&self, v: V) -> V::Out {
                match self {
                    $(Spec::$variant(params) => v.visit::<$ty>(params)),+
                }
            }
        }

        impl Staged {
            /// Records the staged update on its key (opened for writing),
            /// once. It is taken out of its variant, so that only the
            /// update moves, not the whole enum (as large as the largest
            /// kind's update).
            pub fn commit(&mut self, key: &mut Key<'_>) -> Result<(), Error> {
                match self {
                    Staged::Nothing => Ok(()),
                    $(Staged::$variant(update) => match update.take() {
                        Some(update) => commands::commit::<$ty>(key, update),
                        None => Ok(()),
                    }),+
                }
            }
        }

        kinds!(@impl 0usize; $($variant => $ty),+);
    };
    (@impl $index:expr; $variant:ident => $ty:ty $(, $rest:ident => $rest_ty:ty)*) => {
        impl Kind for $ty {
            const INDEX: usize = $index;
            fn module_type() -> &'static ModuleType<$ty> {
                static TYPE: ModuleType<$ty> = crate::types::module_type::<$ty>();
                &TYPE
            }
            fn spec(params: <$ty as Limiter>::Params) -> Spec {
                Spec::$variant(params)
            }
            fn staged(update: <$ty as Limiter>::Update) -> Staged {
                Staged::$variant(Some(update))
            }
        }
        kinds!(@impl $index + 1; $($rest => $rest_ty),*);
    };
    (@impl $index:expr;) => {};
}

kinds! {
    Throttle => throttle::Tat,
    Slide => slide::SlideLog,
    Slice => slice::SliceWindow,
    Lease => lease::Leases,
    Quota => quota::Quota,
}

/// The kind whose word is `word` (any case).
pub fn by_word(word: &[u8]) -> Option<&'static Row> {
    // A word of up to 8 bytes is compared as one integer, in upper case,
    // with each name's (names are upper case): one comparison per kind
    // instead of a case-folding loop over its bytes.
    match packed_upper(word) {
        Some(packed) => KINDS
            .iter()
            .find(|k| k.name.len() == word.len() && k.packed_name == Some(packed)),
        None => KINDS
            .iter()
            .find(|k| word.eq_ignore_ascii_case(k.name.as_bytes())),
    }
}

/// The bytes of a word of up to 8 bytes, in ASCII upper case, as one
/// integer (equal for two words of the same length exactly when they are
/// the same word in any case); `None` for a longer word.
#[inline]
const fn packed_upper(word: &[u8]) -> Option<u64> {
    if word.len() > 8 {
        return None;
    }
    let mut bytes = [0u8; 8];
    let mut i = 0;
    while i < word.len() {
        bytes[i] = word[i];
        i += 1;
    }
    let packed = u64::from_le_bytes(bytes);
    // All eight bytes at once: a byte is a lower-case letter when its low
    // seven bits are from 'a' to 'z' and its high bit is clear; adding to
    // the seven bits never carries into the next byte.
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let seven = packed & !HIGH;
    let from_a = seven + ONES * (0x80 - b'a' as u64);
    let past_z = seven + ONES * (0x80 - b'z' as u64 - 1);
    let lower = from_a & !past_z & !packed & HIGH;
    Some(packed ^ (lower >> 2))
}

/// The kinds' words for an error message: `A, B or C`.
pub fn words() -> String {
    let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_name_kinds_in_any_case_and_nothing_else() {
        for row in KINDS {
            let lower = row.name.to_ascii_lowercase();
            assert_eq!(by_word(row.name.as_bytes()).map(|r| r.name), Some(row.name));
            assert_eq!(by_word(lower.as_bytes()).map(|r| r.name), Some(row.name));
            let mut near = row.name.as_bytes().to_vec();
            for (i, b) in row.name.bytes().enumerate() {
                // The same letter with another high bit, a neighbour, or
                // bit 5 flipped on a non-letter position, is another word.
                for other in [b ^ 0x80, b + 1, b - 1, b ^ 0x20 ^ 0x40] {
                    near[i] = other;
                    assert_ne!(by_word(&near).map(|r| r.name), Some(row.name), "{near:?}");
                }
                near[i] = b;
            }
        }
        assert!(by_word(b"").is_none());
        assert!(by_word(b"THROTTLES").is_none());
        assert!(by_word(b"\0SLIDE").is_none());
        // Every byte value, in every position of a short word, against a
        // byte-wise case-insensitive comparison.
        for b in 0..=255u8 {
            for word in [[b, b'L', b'I', b'D', b'E'], [b'S', b'L', b'I', b'D', b]] {
                let expected = KINDS
                    .iter()
                    .find(|k| k.name.as_bytes().eq_ignore_ascii_case(&word))
                    .map(|k| k.name);
                assert_eq!(by_word(&word).map(|r| r.name), expected, "{word:?}");
            }
        }
    }
}
