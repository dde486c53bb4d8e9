//! The module's configuration: `CONFIG GET/SET ratelimit.<name>`, or load
//! arguments (`loadmodule libredis_ratelimit.so max-slide-limit 5000`).
//!
//! | name | default | range | meaning |
//! |---|---|---|---|
//! | `max-slide-limit` | 1,000,000 | 1 to 100,000,000 | largest RL.SLIDE `limit` a client may ask for (about 4 bytes per unit, 8 in a log spanning more than an hour) |
//! | `max-slices` | 86,400 | 1 to 1,000,000 | largest RL.SLICE `slices` a client may ask for (4 bytes per slice) |
//! | `cell-alias` | no | yes/no, load time only | also answer redis-cell's `CL.THROTTLE` |
//! | `top-size` | 128 | 0 to 16,384 | entries of RL.TOP's summary (0 turns it off); at most 640 bytes each |
//! | `top-half-life` | 60 | 1 to 86,400 | seconds in which RL.TOP's counts halve |

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use crate::core::{slice, slide, top, Ceiling, Nanos};

pub static MAX_SLIDE_LIMIT: AtomicI64 = AtomicI64::new(DEFAULT_MAX_SLIDE_LIMIT);
pub static MAX_SLICES: AtomicI64 = AtomicI64::new(DEFAULT_MAX_SLICES);
pub static CELL_ALIAS: AtomicBool = AtomicBool::new(false);
pub static TOP_SIZE: AtomicI64 = AtomicI64::new(DEFAULT_TOP_SIZE);
pub static TOP_HALF_LIFE: AtomicI64 = AtomicI64::new(DEFAULT_TOP_HALF_LIFE);

pub const DEFAULT_MAX_SLIDE_LIMIT: i64 = Bounds::DEFAULT.max_slide_limit as i64;
pub const DEFAULT_MAX_SLICES: i64 = Bounds::DEFAULT.max_slices as i64;
pub const HARD_MAX_SLIDE_LIMIT: i64 = Bounds::HARD.max_slide_limit as i64;
pub const HARD_MAX_SLICES: i64 = Bounds::HARD.max_slices as i64;
pub const DEFAULT_TOP_SIZE: i64 = 128;
pub const MAX_TOP_SIZE: i64 = top::MAX_SIZE as i64;
/// Seconds.
pub const DEFAULT_TOP_HALF_LIFE: i64 = 60;
/// Seconds: a day.
pub const MAX_TOP_HALF_LIFE: i64 = 86_400;

/// The bounds in force for client calls.
pub fn bounds() -> Bounds {
    let read = |v: &AtomicI64| u64::try_from(v.load(Ordering::Relaxed)).unwrap_or(1);
    Bounds {
        max_slide_limit: read(&MAX_SLIDE_LIMIT),
        max_slices: read(&MAX_SLICES),
    }
}

pub fn cell_alias() -> bool {
    CELL_ALIAS.load(Ordering::Relaxed)
}

/// The entries of RL.TOP's summary; 0 when off.
pub fn top_size() -> usize {
    usize::try_from(TOP_SIZE.load(Ordering::Relaxed)).unwrap_or(0)
}

/// The half-life of RL.TOP's counts, in seconds.
pub fn top_half_life_seconds() -> u64 {
    u64::try_from(TOP_HALF_LIFE.load(Ordering::Relaxed)).unwrap_or(1)
}

/// The half-life of RL.TOP's counts.
pub fn top_half_life() -> Nanos {
    Nanos::new(top_half_life_seconds().saturating_mul(1_000_000_000))
}

/// Bounds that the server's configuration may tighten below the hard
/// ceilings of the kinds.
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

    pub fn ceiling(&self, ceiling: Ceiling) -> u64 {
        match ceiling {
            Ceiling::SlideLimit => self.max_slide_limit,
            Ceiling::Slices => self.max_slices,
        }
    }
}

/// The word every command's name starts with: `RL`, or the load-time
/// `PREFIX` (docs/operations.md#loading).
static PREFIX: OnceLock<Names> = OnceLock::new();

/// The commands' prefix and the name of the one command the type
/// callbacks write (`<prefix>.STATE`), made once at load.
struct Names {
    prefix: String,
    state: CString,
}

/// The default prefix.
pub const DEFAULT_PREFIX: &str = "RL";
/// The longest `PREFIX` word.
pub const MAX_PREFIX: usize = 32;

/// Sets the prefix, once, at load, before any command is registered.
/// False when it was set already.
pub fn set_prefix(prefix: &str) -> bool {
    let state = CString::new(format!("{prefix}.STATE")).unwrap_or_default();
    PREFIX
        .set(Names {
            prefix: prefix.to_string(),
            state,
        })
        .is_ok()
}

/// The commands' prefix: `RL` unless the module was loaded with `PREFIX`.
pub fn prefix() -> &'static str {
    PREFIX.get().map_or(DEFAULT_PREFIX, |n| n.prefix.as_str())
}

/// `<prefix>.STATE`, which AOF rewrite and a state-replicating kind write.
pub fn state_command() -> &'static CStr {
    PREFIX.get().map_or(c"RL.STATE", |n| n.state.as_c_str())
}

/// Whether `word` may be a `PREFIX`: 1 to [`MAX_PREFIX`] ASCII letters,
/// digits and underscores (no dot, no space, nothing a configuration name
/// has: they all hold a hyphen).
pub fn valid_prefix(word: &[u8]) -> bool {
    (1..=MAX_PREFIX).contains(&word.len())
        && word.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}
