//! [`GateSnapshot`]: a key's gate as it stands, for a caller to read.

use std::time::Duration;

use tokio::time::Instant;

use crate::gate::key::Gate;
use crate::gate::key::terms::Terms;

/// A key's gate as it stands now.
///
/// # Example
///
/// ```
/// use tower_retry_after::{Gates, Key};
///
/// let gates = Gates::new();
/// // Nothing is known of a key no response has spoken of.
/// assert!(gates.snapshot(&Key::named("api")).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateSnapshot {
    closed_for: Option<Duration>,
    remaining: Option<u64>,
    reset_in: Option<Duration>,
    waiters: usize,
    in_flight: u32,
}

impl GateSnapshot {
    pub(crate) fn of(gate: &Gate, now: Instant) -> Self {
        let quota = gate.quota(now);
        GateSnapshot {
            closed_for: gate.closed_for(now, Terms::EVERYTHING),
            remaining: quota.map(|quota| quota.remaining),
            reset_in: quota.map(|quota| quota.reset_at - now),
            waiters: gate.waiters(),
            in_flight: gate.in_flight(),
        }
    }

    /// How long the gate stays closed (a 429's instruction, or a spent window); `None` if open.
    pub fn closed_for(&self) -> Option<Duration> {
        self.closed_for
    }

    /// The quota the server last reported for the current window; `None` when unknown.
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// How long until that window resets, aged to now.
    pub fn reset_in(&self) -> Option<Duration> {
        self.reset_in
    }

    /// Whether the server said no quota is left in the current window.
    pub fn is_exhausted(&self) -> bool {
        self.remaining == Some(0)
    }

    /// How many calls wait at the gate.
    pub fn waiters(&self) -> usize {
        self.waiters
    }

    /// How many requests were let through and are not answered yet.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }
}
