//! How long to wait before another attempt: pure arithmetic, no clock and no randomness of its
//! own (the caller passes a uniform draw), so every rule is tested exactly.
//!
//! Two kinds of wait, never confused:
//! - **instructed** (the server named a time): the instruction plus an *additive* spread. It is
//!   never shortened: scaling the server's number down means retrying inside the window it
//!   named, a second refusal by construction.
//! - **guessed** (no usable instruction): exponential backoff with *multiplicative* jitter,
//!   `base · 2^n`, at most `max`, times U[0.5, 1]. Its floor, `base / 2`, also lifts a tiny
//!   instruction, so no two attempts are ever back to back.

use std::time::Duration;

/// The guessed-backoff schedule and the spread added to instructed waits.
///
/// Defaults: `500 ms · 2^n`, at most 20 s, times U[0.5, 1]; instructed waits get an additive
/// spread of up to a tenth of the instruction, at most 1 s.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use tower_retry_after::{Backoff, RateLimitLayer};
///
/// let backoff = Backoff::new()
///     .base(Duration::from_millis(200))
///     .max(Duration::from_secs(5))
///     .instructed_spread(Duration::from_millis(250));
/// let layer = RateLimitLayer::new().backoff(backoff);
/// # let _ = layer;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    instructed_spread: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(500),
            max: Duration::from_secs(20),
            instructed_spread: Duration::from_secs(1),
        }
    }
}

/// The smallest base: below it the floor would let attempts run back to back.
const SMALLEST_BASE: Duration = Duration::from_millis(2);

impl Backoff {
    /// The default schedule.
    pub fn new() -> Self {
        Self::default()
    }

    /// The first guessed wait before jitter (default 500 ms; at least 2 ms, so the floor,
    /// half of it, is never zero).
    pub fn base(mut self, base: Duration) -> Self {
        self.base = base.max(SMALLEST_BASE);
        self
    }

    /// The longest guessed wait before jitter (default 20 s; never below the base).
    pub fn max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    /// The most spread added to an instructed wait (default 1 s). Each wait gets a uniform
    /// share of it, never more than a tenth of the instruction: enough to set clients that
    /// were told the same time apart, not so much that a short window is lost.
    pub fn instructed_spread(mut self, spread: Duration) -> Self {
        self.instructed_spread = spread;
        self
    }

    /// No wait is shorter than this: half the base.
    pub(crate) fn floor(&self) -> Duration {
        self.base / 2
    }

    /// The guessed wait before retry number `retry` (0 for the first), given a uniform draw
    /// `unit` in [0, 1).
    pub(crate) fn guessed(&self, retry: u32, unit: f64) -> Duration {
        let doubled = self
            .base
            .checked_mul(2u32.saturating_pow(retry))
            .unwrap_or(Duration::MAX);
        let ceiling = doubled.min(self.max.max(self.base));
        ceiling
            .mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
            .max(self.floor())
    }

    /// The wait for a server instruction, given a uniform draw `unit` in [0, 1): the
    /// instruction (lifted to the floor) plus its share of the spread.
    pub(crate) fn instructed(&self, instruction: Duration, unit: f64) -> Duration {
        let spread = self
            .instructed_spread
            .min(instruction / 10)
            .mul_f64(unit.clamp(0.0, 1.0));
        instruction.max(self.floor()).saturating_add(spread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn guessed_waits_double_from_the_base_up_to_the_max() {
        let backoff = Backoff::new();
        let lowest = |retry| backoff.guessed(retry, 0.0).as_millis();
        assert_eq!(lowest(0), 250);
        assert_eq!(lowest(1), 500);
        assert_eq!(lowest(3), 2000);
        assert_eq!(lowest(5), 8000);
        assert_eq!(lowest(6), 10_000);
        assert_eq!(lowest(u32::MAX), 10_000);
    }

    #[test]
    fn guessed_jitter_is_multiplicative_between_half_and_whole() {
        let backoff = Backoff::new();
        assert_eq!(backoff.guessed(2, 0.0), 1000 * MS);
        assert_eq!(backoff.guessed(2, 0.5), 1500 * MS);
        assert!(backoff.guessed(2, 0.999_999) < 2000 * MS);
    }

    #[test]
    fn no_guessed_wait_is_below_the_floor() {
        let backoff = Backoff::new().base(Duration::ZERO);
        assert_eq!(backoff.floor(), MS);
        assert_eq!(backoff.guessed(0, 0.0), MS);
        let backoff = Backoff::new();
        assert_eq!(backoff.guessed(0, 0.0), 250 * MS);
    }

    #[test]
    fn a_max_below_the_base_leaves_the_base() {
        let backoff = Backoff::new().max(Duration::ZERO);
        assert_eq!(backoff.guessed(4, 0.0), 250 * MS);
    }

    #[test]
    fn instructed_waits_are_never_shorter_than_the_instruction() {
        let backoff = Backoff::new();
        let twenty = Duration::from_secs(20);
        assert_eq!(backoff.instructed(twenty, 0.0), twenty);
        assert_eq!(backoff.instructed(twenty, 0.5), twenty + 500 * MS);
        assert!(backoff.instructed(twenty, 0.999) < twenty + Duration::from_secs(1));
    }

    #[test]
    fn the_spread_is_never_more_than_a_tenth_of_the_instruction() {
        let backoff = Backoff::new();
        let two = Duration::from_secs(2);
        assert_eq!(backoff.instructed(two, 0.5), two + 100 * MS);
        let small = Backoff::new().instructed_spread(50 * MS);
        assert_eq!(small.instructed(two, 1.0), two + 50 * MS);
    }

    #[test]
    fn a_tiny_instruction_is_lifted_to_the_floor() {
        let backoff = Backoff::new();
        assert_eq!(backoff.instructed(MS, 0.0), 250 * MS);
    }

    #[test]
    fn huge_instructions_saturate() {
        let backoff = Backoff::new();
        assert_eq!(backoff.instructed(Duration::MAX, 0.9), Duration::MAX);
    }
}
