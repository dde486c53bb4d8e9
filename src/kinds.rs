//! The one table of kinds (docs/DESIGN.md#one-table-of-kinds).
//!
//! Every kind is a `core::Kind` and one row of [`kinds!`] below. The rows
//! are data; a step that needs a kind's type visits it (`Visit`,
//! `VisitKind`, `VisitUpdate`), so the code of each step stays in its own
//! file. From a row come, with nothing else to write: its command `RL.<NAME>`, its
//! spec word in RL.ALLOW / RL.PEEK / RL.REFUND, its custom data type (RDB,
//! AOF, digest, memory), its `RL.STATE` payloads, its RL.INSPECT type, and
//! its INFO rows (`<name>_calls`, `<name>_keys`, ...). The glue is generic
//! over [`Listed`] and never names a kind, except RL.RELEASE, a command of
//! the LEASE kind alone, and INFO's line of RL.QUOTA's time-zone rules.

use crate::core::{lease, quota, slice, slide, throttle, Kind, Param};
use crate::server::{ModuleType, Stored};

/// A kind as the glue sees it: its `Kind`, stored in its custom data
/// type (`Stored`), plus what the table gives it.
pub trait Listed: Stored {
    /// Its row in [`KINDS`].
    const ID: KindId;
    /// Its row's index in [`KINDS`], which is also its INFO row.
    const INDEX: usize = Self::ID as usize;
    /// Its parameters as a [`Spec`].
    fn spec(params: Self::Params) -> Spec;
    /// Its update as a [`Staged`] one.
    fn staged(update: Self::Update) -> Staged;
}

/// What a command does with one spec (a kind and its parameters), for
/// any kind: [`Spec::visit`] calls it with the spec's kind.
pub trait Visit {
    type Out;
    fn visit<L: Listed>(self, params: &L::Params) -> Self::Out;
}

/// What the glue does with one kind, without parameters (read a spec's
/// words, inspect or restore a key, describe the command, create the data
/// type): [`Row::visit`] calls it with the row's kind.
pub trait VisitKind {
    type Out;
    fn visit<L: Listed>(self) -> Self::Out;
}

/// One kind, as data: what the commands that find a kind by its word, its
/// tag or a key's type need of it. Whatever needs the kind's type goes
/// through [`Row::visit`].
pub struct Row {
    pub id: KindId,
    pub name: &'static str,
    /// The name as `packed_upper` reads it, for `by_word`.
    packed_name: Option<u64>,
    pub params: &'static [Param],
    pub options: &'static [Param],
    pub takes_id: bool,
    pub refunds: bool,
    /// Whether a request may wait for its turn (`MAXWAIT`).
    pub waits: bool,
    /// Whether the kind takes BLOCK (it is among its options).
    pub takes_block: bool,
    /// Today's tag and the legacy ones of `RL.STATE` payloads.
    pub tag: u8,
    pub legacy: &'static [(i32, u8)],
    /// The name `TYPE key` answers.
    pub type_name: &'static str,
}

impl Row {
    const fn of<L: Listed>() -> Row {
        Row {
            id: L::ID,
            name: L::NAME,
            packed_name: packed_upper(L::NAME.as_bytes()),
            params: L::PARAMS,
            options: L::OPTIONS,
            takes_id: L::TAKES_ID,
            refunds: L::REFUNDS,
            waits: L::WAITS,
            takes_block: crate::core::block::takes_block(L::OPTIONS),
            tag: L::TAG,
            legacy: L::LEGACY,
            type_name: L::TYPE_NAME,
        }
    }

    /// Whether an `RL.STATE` payload's tag names this kind's state.
    pub fn reads_tag(&self, tag: u8) -> bool {
        self.tag == tag || self.legacy.iter().any(|&(_, t)| t == tag)
    }

    /// Runs `v` with this row's kind.
    pub fn visit<V: VisitKind>(&self, v: V) -> V::Out {
        self.id.visit(v)
    }
}

/// The table: one row per kind, `Variant => state type`, in the order of
/// the commands and of INFO.
macro_rules! kinds {
    ($($variant:ident => $ty:ty),+ $(,)?) => {
        /// The kinds, one variant per row of [`KINDS`], in its order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum KindId {
            $($variant),+
        }

        impl KindId {
            /// Runs `v` with this kind.
            fn visit<V: VisitKind>(self, v: V) -> V::Out {
                match self {
                    $(KindId::$variant => v.visit::<$ty>()),+
                }
            }
        }

        /// One limit of a command, parsed once: its kind and its validated
        /// parameters.
        #[derive(Clone, Copy, Debug)]
        pub enum Spec {
            $($variant(<$ty as Kind>::Params)),+
        }

        /// What one limit of a several-limit call records when the whole
        /// call is allowed: its kind's update, or nothing (`None` once
        /// committed).
        pub enum Staged {
            Nothing,
            $($variant(Option<<$ty as Kind>::Update>)),+
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
            /// Runs `v` with the staged update's kind, taking the update
            /// out of its variant (so that only the update moves, not the
            /// whole enum, as large as the largest kind's update); `nothing`
            /// when nothing is staged or it was taken already.
            pub fn take<V: VisitUpdate>(&mut self, v: V, nothing: V::Out) -> V::Out {
                match self {
                    Staged::Nothing => nothing,
                    $(Staged::$variant(update) => match update.take() {
                        Some(update) => v.visit::<$ty>(update),
                        None => nothing,
                    }),+
                }
            }
        }

        $(
            impl Stored for $ty {
                fn module_type() -> &'static ModuleType<$ty> {
                    static TYPE: ModuleType<$ty> = ModuleType::new();
                    &TYPE
                }
                fn now() -> crate::core::Nanos {
                    crate::clock::now()
                }
            }

            impl Listed for $ty {
                const ID: KindId = KindId::$variant;
                fn spec(params: <$ty as Kind>::Params) -> Spec {
                    Spec::$variant(params)
                }
                fn staged(update: <$ty as Kind>::Update) -> Staged {
                    Staged::$variant(Some(update))
                }
            }
        )+
    };
}

/// What a several-limit call does with a staged update: [`Staged::take`]
/// calls it with the update's kind.
pub trait VisitUpdate {
    type Out;
    fn visit<L: Listed>(self, update: L::Update) -> Self::Out;
}

kinds! {
    Throttle => throttle::ThrottleState,
    Slide => slide::SlideState,
    Slice => slice::SliceState,
    Lease => lease::LeaseState,
    QuotaState => quota::QuotaState,
}

// Checked when the module compiles: every kind's words, tags and type
// names are its own (`by_word`, RL.STATE and the server find a kind by the
// first match), and a type name is the nine characters the server requires.
const _: () = {
    let mut i = 0;
    while i < KINDS.len() {
        let row = &KINDS[i];
        assert!(row.type_name.len() == 9, "a type name is 9 characters");
        assert!(row.id as usize == i, "rows are in the order of KindId");
        let mut j = 0;
        while j < row.legacy.len() {
            assert!(
                row.legacy[j].1 != row.tag,
                "a legacy tag repeats its kind's tag"
            );
            j += 1;
        }
        let mut k = i + 1;
        while k < KINDS.len() {
            let other = &KINDS[k];
            assert!(!same_text(row.name, other.name), "two kinds share a word");
            assert!(
                !same_text(row.type_name, other.type_name),
                "two kinds share a type name"
            );
            assert!(!other.reads_tag_const(row.tag), "two kinds share a tag");
            let mut j = 0;
            while j < row.legacy.len() {
                assert!(
                    !other.reads_tag_const(row.legacy[j].1),
                    "two kinds share a tag"
                );
                j += 1;
            }
            k += 1;
        }
        i += 1;
    }
};

impl Row {
    /// `reads_tag`, at compile time.
    const fn reads_tag_const(&self, tag: u8) -> bool {
        if self.tag == tag {
            return true;
        }
        let mut i = 0;
        while i < self.legacy.len() {
            if self.legacy[i].1 == tag {
                return true;
            }
            i += 1;
        }
        false
    }
}

/// Whether two texts are the same in ASCII upper case (kind words are
/// compared in any case), at compile time.
const fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !a[i].eq_ignore_ascii_case(&b[i]) {
            return false;
        }
        i += 1;
    }
    true
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
