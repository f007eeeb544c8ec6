//! The quota the server reported for a key's current window, and the one rule by which reports
//! of it fold into what is known: the same for a gate (on the monotonic clock) and a shared
//! store (on the wall clock). Pure.

use std::time::Duration;

use tokio::time::Instant;

use crate::gate::time::Moment;

/// Two reports whose resets lie further apart than this describe different windows. Resets
/// are written in whole seconds and aged, so one window's resets differ by up to a second.
pub(crate) const SAME_WINDOW: Duration = Duration::from_secs(2);

/// A reset written as a whole second on the server's clock: the window may end up to this much
/// before the one read.
pub(crate) const WRITTEN_TO: Duration = Duration::from_secs(1);

/// The quota the server last reported, while its window lasts: how much is left, and when the
/// window resets (an instant on the clock `T`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Quota<T = Instant> {
    pub(crate) remaining: u64,
    pub(crate) reset_at: T,
    /// The second on the server's clock (since the Unix epoch) the reset was written as, where
    /// it was (an epoch second, a date): `reset_at` is that second read against a bound of the
    /// server's clock, and every reading of one such reset names the same second.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(crate) second: Option<u64>,
}

impl<T> Quota<T> {
    /// Whether the server said none is left.
    pub(crate) fn is_spent(&self) -> bool {
        self.remaining == 0
    }
}

impl<T: Copy> Quota<T> {
    /// What is left for new requests beside `out` requests still out: the server may not have
    /// counted any of them in the figures so far.
    pub(crate) fn left_beside(&self, out: u64) -> u64 {
        self.remaining.saturating_sub(out)
    }

    /// The reset of a window whose every unit left is taken by one of `in_flight` requests
    /// still out. Their answers may give some back (they come back in any order, so the
    /// lowest figure can run ahead of them): the gate waits for them, or for the reset,
    /// whichever comes first; it does not close.
    pub(crate) fn all_out_until(&self, in_flight: u32) -> Option<T> {
        (self.left_beside(u64::from(in_flight)) == 0).then_some(self.reset_at)
    }
}

/// Whether two resets may end one window: they lie within [`SAME_WINDOW`] of each other.
pub(crate) fn same_window<T: Moment>(one: T, other: T) -> bool {
    one.later(SAME_WINDOW) >= other && other.later(SAME_WINDOW) >= one
}

/// What is known after `reported` is folded into `known`, a quota still current;
/// `newer` when the report is known to have been counted after every report `known` holds
/// (let through after the closure that `known` preceded, or after the lowest figure's answer
/// came back with a higher one). `None`: the report changes nothing.
///
/// A report whose reset is clearly later starts a new window, unless the known one is spent
/// and the report has room (a spent window has not reset yet: that is another, longer meter,
/// and the hold stays); one whose reset is clearly earlier is a straggler from the window
/// before or another, shorter meter, and replaces the known quota only if it says it is spent
/// (a per-second quota spent while the per-minute one still has room must hold the calls; one
/// with room left must not make the gate forget the longer window's count, which it would once
/// its reset passed). Within one window of a fixed count the server's figure only falls, so
/// the lowest is the latest whatever order answers came back in, and, each reset being the
/// server's rounded-up countdown read after it was written, the earliest reset is the closest to the
/// truth; but a spent window is held until the latest reset a report saying so named, since a
/// limiter whose reset moves (a token bucket's next token) refuses anything sooner. Resets
/// written as whole seconds on the server's clock are kept by the second they name: a later
/// second says the reset moved (a token bucket's full time, later as it is spent), and it is
/// kept, or the whole quota comes back into a bucket still drained; one second read twice
/// keeps the earlier reading (each is that second read against a bound of the server's clock,
/// and a tighter bound reads it earlier, never early).
pub(crate) fn fold<T: Moment>(
    known: Quota<T>,
    reported: Quota<T>,
    newer: bool,
) -> Option<Quota<T>> {
    let earlier = reported.reset_at.later(SAME_WINDOW) < known.reset_at;
    let later = reported.reset_at > known.reset_at.later(SAME_WINDOW);
    let spent = known.is_spent();
    // Another meter, or the window before, with room left: it neither lifts a spent window
    // nor makes the gate forget a known count.
    if (earlier && (!reported.is_spent() || spent)) || (later && spent && !reported.is_spent()) {
        return None;
    }
    if earlier || later || newer {
        return Some(reported);
    }
    let tighter = if reported.reset_at < known.reset_at {
        reported
    } else {
        known
    };
    let reset = match (known.is_spent(), reported.is_spent()) {
        (true, true) if reported.reset_at > known.reset_at => reported,
        (true, _) => known,
        (false, true) => reported,
        (false, false) => match (known.second, reported.second) {
            (Some(known_second), Some(reported_second)) if reported_second > known_second => {
                reported
            }
            (Some(known_second), Some(reported_second)) if known_second > reported_second => known,
            _ => tighter,
        },
    };
    Some(Quota {
        remaining: known.remaining.min(reported.remaining),
        reset_at: reset.reset_at,
        second: reset.second,
    })
}
