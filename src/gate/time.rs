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

/// An instant on either clock, as the rules shared by a gate and a shared store use it.
pub(crate) trait Moment: Copy + Ord {
    /// `self + by`, never overflowing: saturating far ahead on the monotonic clock, staying
    /// put on a wall clock that can go no further (a caller's clock is never a reason to
    /// panic).
    fn later(self, by: Duration) -> Self;
    /// How long after `earlier` this is: zero if it is not after.
    fn since(self, earlier: Self) -> Duration;
    /// `self - by`, or `None` where the clock cannot go back that far.
    fn earlier(self, by: Duration) -> Option<Self>;
}

impl Moment for Instant {
    fn later(self, by: Duration) -> Self {
        after(self, by)
    }

    fn since(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }

    fn earlier(self, by: Duration) -> Option<Self> {
        self.checked_sub(by)
    }
}

impl Moment for SystemTime {
    fn later(self, by: Duration) -> Self {
        self.checked_add(by).unwrap_or(self)
    }

    fn since(self, earlier: Self) -> Duration {
        self.duration_since(earlier).unwrap_or_default()
    }

    fn earlier(self, by: Duration) -> Option<Self> {
        self.checked_sub(by)
    }
}

/// A lower bound of a server's clock: it read at least `date` at the instant `at`. A response's
/// `Date` (plus `Age`) was written before the response was received, so at receipt the
/// server's clock reads at least that; the server's clock runs at the monotonic clock's rate,
/// so the bound carries forward on it, whatever the local wall clock does. Over many
/// responses the tightest bound (the largest `Date` less receipt) converges to the clock offset
/// less the transit, far tighter than one `Date` of one-second resolution, and never ahead of
/// the server: an epoch reset read against it is never early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ServerClock {
    date: SystemTime,
    at: Instant,
}

impl ServerClock {
    /// The server's clock read at least `date` at the instant `at`.
    pub(crate) fn new(date: SystemTime, at: Instant) -> Self {
        ServerClock { date, at }
    }

    /// The least the server's clock reads at `now` (at least `at`).
    pub(crate) fn at_least(&self, now: Instant) -> SystemTime {
        let since = now.saturating_duration_since(self.at);
        self.date.checked_add(since).unwrap_or(self.date)
    }

    /// The tighter of two bounds: the one that places the server's clock later.
    pub(crate) fn tighter(self, other: ServerClock) -> ServerClock {
        let later = self.at.max(other.at);
        if other.at_least(later) > self.at_least(later) {
            other
        } else {
            self
        }
    }

    /// The tighter of the bound `known` and one a response gave, where either is missing.
    pub(crate) fn tightest(
        known: Option<ServerClock>,
        given: Option<ServerClock>,
    ) -> Option<ServerClock> {
        match (known, given) {
            (Some(known), Some(given)) => Some(known.tighter(given)),
            (known, given) => known.or(given),
        }
    }
}

/// How far the wall clock may move from the monotonic one before the pairing is read again:
/// more than any slewing, less than any step or suspend worth noticing.
const MOST_DRIFT: Duration = Duration::from_secs(1);

/// One pairing of the two clocks for a set of gates. Every conversion goes through it, so the
/// same wall-clock time always becomes the same instant: converting against fresh readings of
/// both clocks lands a little later or earlier each time, and a closure that moves later, even
/// by nanoseconds, is a new closure (a new epoch, another probe). It is read again only when
/// the real clocks have drifted apart (a suspend, a step of the wall clock), since a stale
/// pairing would place other processes' times early or late by the drift.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Anchor {
    instant: Instant,
    wall: SystemTime,
    // The real monotonic clock: tokio's may be paused (in tests), the real clocks are not.
    real: std::time::Instant,
}

impl Anchor {
    /// The clocks, read now.
    pub(crate) fn now() -> Self {
        Anchor {
            instant: Instant::now(),
            wall: SystemTime::now(),
            real: std::time::Instant::now(),
        }
    }

    /// This pairing, or a fresh one if the wall clock has moved from the monotonic one by more
    /// than [`MOST_DRIFT`] since it was read (`wall` and `real` are the clocks now).
    pub(crate) fn renewed(self, wall: SystemTime, real: std::time::Instant) -> Self {
        let expected = self.wall + real.saturating_duration_since(self.real);
        let drift = match wall.duration_since(expected) {
            Ok(ahead) => ahead,
            Err(behind) => behind.duration(),
        };
        if drift > MOST_DRIFT {
            Anchor::now()
        } else {
            self
        }
    }

    /// A wall-clock time on the monotonic clock.
    pub(crate) fn instant(&self, at: SystemTime) -> Instant {
        match at.duration_since(self.wall) {
            Ok(ahead) => after(self.instant, ahead),
            // Long before the anchor, where `Instant` may not reach: as good as the anchor,
            // which is already past for any gate.
            Err(behind) => self
                .instant
                .checked_sub(behind.duration())
                .unwrap_or(self.instant),
        }
    }

    /// A monotonic instant on the wall clock.
    pub(crate) fn wall(&self, at: Instant) -> SystemTime {
        match at.checked_duration_since(self.instant) {
            Some(ahead) => self.wall + ahead.min(FAR),
            None => self.wall - (self.instant - at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_server_clock_bound_carries_forward_and_the_later_placing_one_wins() {
        let now = Instant::now();
        let date = SystemTime::UNIX_EPOCH + 1_700_000_000 * SECOND;
        // `Date` read 10 ms after the server's second turned, and 900 ms later the same
        // second again: the first places the server's clock 890 ms later.
        let sharp = ServerClock::new(date, now + SECOND / 100);
        let blunt = ServerClock::new(date, now + SECOND * 91 / 100);
        let then = now + SECOND;
        assert_eq!(sharp.at_least(then), date + SECOND * 99 / 100);
        assert_eq!(sharp.tighter(blunt), sharp);
        assert_eq!(blunt.tighter(sharp), sharp);
        assert_eq!(sharp.at_least(now), date, "never before its own reading");
        // A response without a `Date` leaves the bound known; the first one sets it.
        assert_eq!(ServerClock::tightest(Some(blunt), Some(sharp)), Some(sharp));
        assert_eq!(ServerClock::tightest(Some(sharp), None), Some(sharp));
        assert_eq!(ServerClock::tightest(None, Some(blunt)), Some(blunt));
        assert_eq!(ServerClock::tightest(None, None), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_wall_time_always_becomes_the_same_instant() {
        let anchor = Anchor::now();
        let closed_until = SystemTime::now() + 20 * SECOND;
        let first = anchor.instant(closed_until);
        tokio::time::advance(5 * SECOND).await;
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(anchor.instant(closed_until), first);
        assert_eq!(
            anchor.instant(anchor.wall(first)),
            first,
            "a round trip is exact"
        );
    }

    #[test]
    fn times_far_from_the_anchor_saturate_instead_of_overflowing() {
        let anchor = Anchor::now();
        let far_future = anchor.instant(SystemTime::now() + Duration::from_secs(u64::MAX / 4));
        assert_eq!(far_future, after(anchor.instant, Duration::MAX));
        let epoch = anchor.instant(SystemTime::UNIX_EPOCH);
        assert!(epoch <= anchor.instant);
        let earlier = anchor.instant - SECOND;
        assert_eq!(anchor.wall(earlier), anchor.wall - SECOND);
    }

    #[test]
    fn the_pairing_is_read_again_only_when_the_clocks_drift_apart() {
        let anchor = Anchor::now();
        let real = anchor.real + 10 * SECOND;
        let kept = anchor.renewed(anchor.wall + 10 * SECOND + SECOND / 2, real);
        assert_eq!(
            kept.wall, anchor.wall,
            "half a second is slewing, not a step"
        );
        let at_most = anchor.renewed(anchor.wall + 11 * SECOND, real);
        assert_eq!(at_most.wall, anchor.wall, "a second is still kept");
        let suspended = anchor.renewed(anchor.wall + 70 * SECOND, real);
        assert_ne!(suspended.wall, anchor.wall, "a minute's suspend");
        let stepped_back = anchor.renewed(anchor.wall + 8 * SECOND, real);
        assert_ne!(stepped_back.wall, anchor.wall, "a step back");
    }
}
