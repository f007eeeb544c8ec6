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

/// One pairing of the two clocks, read once for a set of gates. Every conversion goes through
/// it, so the same wall-clock time always becomes the same instant: converting against fresh
/// readings of both clocks lands a little later or earlier each time, and a closure that moves
/// later, even by nanoseconds, is a new closure (a new epoch, another probe).
#[derive(Clone, Copy, Debug)]
pub(super) struct Anchor {
    instant: Instant,
    wall: SystemTime,
}

impl Anchor {
    /// The two clocks, read now.
    pub(super) fn now() -> Self {
        Anchor {
            instant: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    /// A wall-clock time on the monotonic clock.
    pub(super) fn instant(&self, at: SystemTime) -> Instant {
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
    pub(super) fn wall(&self, at: Instant) -> SystemTime {
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
}
