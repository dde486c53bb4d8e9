//! TEMPORARY compile stub; replaced by the real implementation.
use super::{Decision, DecodeError, Nanos, Retry};
pub const MAX_SLICES: u64 = 1_000_000;
pub const MAX_LIMIT: u64 = u32::MAX as u64;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceParams {
    limit: u64,
}
impl SliceParams {
    pub fn new(limit: u64, _w: Nanos, _s: u64) -> Option<SliceParams> {
        Some(SliceParams { limit })
    }
}
#[derive(Clone, Debug, Default)]
pub struct SliceWindow;
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceUpdate;
impl SliceWindow {
    pub fn new() -> SliceWindow {
        SliceWindow
    }
    pub fn decide(&self, now: Nanos, p: &SliceParams, _q: u64) -> (Decision, Option<SliceUpdate>) {
        (
            Decision {
                limited: true,
                limit: p.limit,
                remaining: 0,
                retry: Retry::Never,
                reset_at: now,
            },
            None,
        )
    }
    pub fn apply(&mut self, _u: SliceUpdate) {}
    pub fn mem_usage(&self) -> usize {
        0
    }
    pub fn encode(&self) -> Vec<u8> {
        Vec::new()
    }
    pub fn decode(_b: &[u8]) -> Result<SliceWindow, DecodeError> {
        Err(DecodeError::Length)
    }
}
