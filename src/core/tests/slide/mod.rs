//! RL.SLIDE, the exact sliding log: `log`, its decisions, memory and
//! ring, and PRECISION's grouping; `format`, the saved formats byte by
//! byte; `model`, runs against a brute-force reference and the promises of
//! PRECISION; `ranges`, the algorithm across its documented ranges.

mod format;
mod log;
mod model;
mod ranges;

use crate::core::slide::{SlideParams, SlideState};
use crate::core::{Decision, Kind, Nanos};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn ms(n: u64) -> Nanos {
    Nanos::new(n * MS)
}

fn params(limit: u64, window: u64) -> SlideParams {
    SlideParams::new(limit, Nanos::new(window)).expect("valid test params")
}

/// Decides and, when allowed, applies; returns the decision.
fn request(log: &mut SlideState, now: Nanos, p: &SlideParams, quantity: u64) -> Decision {
    let (decision, update) = log.decide(now, p, quantity);
    if let Some(update) = update {
        log.apply(update);
    }
    decision
}
