//! The module's configuration: `CONFIG GET/SET ratelimit.<name>`, or load
//! arguments (`loadmodule libredis_ratelimit.so max-slide-limit 5000`).
//!
//! | name | default | range | meaning |
//! |---|---|---|---|
//! | `max-slide-limit` | 1,000,000 | 1 to 100,000,000 | largest RL.SLIDE `limit` a client may ask for (about 4 bytes per unit, 8 in a log spanning more than an hour) |
//! | `max-slices` | 86,400 | 1 to 1,000,000 | largest RL.SLICE `slices` a client may ask for (4 bytes per slice) |
//! | `cell-alias` | no | yes/no, load time only | also answer redis-cell's `CL.THROTTLE` |

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::args::Bounds;

pub static MAX_SLIDE_LIMIT: AtomicI64 = AtomicI64::new(DEFAULT_MAX_SLIDE_LIMIT);
pub static MAX_SLICES: AtomicI64 = AtomicI64::new(DEFAULT_MAX_SLICES);
pub static CELL_ALIAS: AtomicBool = AtomicBool::new(false);

pub const DEFAULT_MAX_SLIDE_LIMIT: i64 = Bounds::DEFAULT.max_slide_limit as i64;
pub const DEFAULT_MAX_SLICES: i64 = Bounds::DEFAULT.max_slices as i64;
pub const HARD_MAX_SLIDE_LIMIT: i64 = Bounds::HARD.max_slide_limit as i64;
pub const HARD_MAX_SLICES: i64 = Bounds::HARD.max_slices as i64;

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
