//! Instants on the gates' two clocks: the monotonic one every gate runs on, and the wall clock
//! a shared store speaks (its times must mean the same in every process).

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// The furthest ahead the layer places an instant: far beyond any budget, and well inside
/// what `Instant` can hold, so that a huge setting or a hostile value never overflows.
const FAR: Duration = Duration::from_secs(1 << 31);

/// `at + wait`, saturating far in the future instead of overflowing.
pub(crate) fn after(at: Instant, wait: Duration) -> Instant {
    at + wait.min(FAR)
}

/// A wall-clock time on this process's monotonic clock, as of `now`.
pub(super) fn to_instant(at: SystemTime, now: Instant) -> Instant {
    let wall = SystemTime::now();
    after(now, at.duration_since(wall).unwrap_or(Duration::ZERO))
}

/// A monotonic instant on the wall clock, as of `now`.
pub(super) fn to_wall(at: Instant, now: Instant) -> SystemTime {
    SystemTime::now() + at.saturating_duration_since(now)
}
