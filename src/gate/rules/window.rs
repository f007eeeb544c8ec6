//! The window a server reported for one key: its quota as the answers fold it, the meter that
//! said it is spent, and what its reset restores. Pure: callers pass `now` and the epoch a
//! report speaks of.
//!
//! - Reports fold by [`fold`]'s one rule; a report from before the quota's epoch (a straggler
//!   from a window already over) is ignored.
//! - Where the server gave its whole quota, a spent window's reset restores it: it goes at once,
//!   no more, until the first answer says what is left (a reset is never early, so the new
//!   window has it all). The restored window is taken to last as long as the one before did
//!   from its first report; answers replace it long before.

use tokio::time::Instant;

use super::quota::{Quota, fold};
use crate::throttled::HeldBy;

/// What is known of the window the server reports.
#[derive(Debug, Default)]
pub(crate) struct ReportedWindow {
    quota: Option<Quota>,
    /// The meter `quota` was reported by, as it holds calls once spent.
    by: Option<HeldBy>,
    /// The epoch of the request whose answer gave `quota`.
    epoch: u64,
    /// The whole quota of a window, where the server gave it: what a reset restores.
    limit: Option<u64>,
    /// When the current window's quota was first reported.
    since: Option<Instant>,
    /// `quota` is what the last reset restored, not a report: the next report replaces it.
    restored: bool,
}

impl ReportedWindow {
    /// The quota as last reported, while its window lasts.
    pub(crate) fn quota(&self, now: Instant) -> Option<Quota> {
        self.quota.filter(|quota| quota.reset_at > now)
    }

    /// The meter that said the window is spent, where a report named it.
    pub(crate) fn spent_by(&self) -> Option<HeldBy> {
        self.by
    }

    /// Takes in a quota reported by a request let through in `epoch`, with the whole quota
    /// `limit` if the server gave it, by the meter `by`.
    pub(crate) fn report(
        &mut self,
        quota: Quota,
        limit: Option<u64>,
        by: Option<HeldBy>,
        epoch: u64,
        now: Instant,
    ) {
        self.limit = limit.or(self.limit);
        self.fold_in(quota, epoch, now);
        if quota.is_spent() && self.quota.is_some_and(|known| known.is_spent()) {
            self.by = by;
        }
    }

    /// The window, if it is over at `now`: it is forgotten, and returned for
    /// [`restore`](Self::restore) if it was spent.
    pub(crate) fn take_over(&mut self, now: Instant) -> Option<Quota> {
        let over = self.quota.filter(|quota| quota.reset_at <= now)?;
        self.quota = None;
        Some(over)
    }

    /// The spent window `over` has reset at `now`, beginning `epoch`. Where the server gave its
    /// whole quota, the reset restores it, and this says so; otherwise the new window's first
    /// request probes.
    pub(crate) fn restore(&mut self, over: Quota, epoch: u64, now: Instant) -> bool {
        let (Some(limit), Some(since)) = (self.limit.filter(|limit| *limit > 0), self.since) else {
            return false;
        };
        self.quota = Some(Quota {
            remaining: limit,
            reset_at: now + over.reset_at.saturating_duration_since(since),
        });
        self.epoch = epoch;
        self.since = Some(now);
        self.restored = true;
        true
    }

    fn fold_in(&mut self, quota: Quota, epoch: u64, now: Instant) {
        let Some(known) = self.quota(now) else {
            self.quota = Some(quota);
            self.epoch = epoch;
            self.since = Some(now);
            self.restored = false;
            return;
        };
        if epoch < self.epoch {
            return;
        }
        if std::mem::take(&mut self.restored) {
            self.quota = Some(quota);
            self.epoch = epoch;
            return;
        }
        if let Some(folded) = fold(known, quota, epoch > self.epoch) {
            self.quota = Some(folded);
            self.epoch = epoch;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::StatusCode;

    use super::*;
    use crate::headers::Unit;

    const SECOND: Duration = Duration::from_secs(1);

    fn spent_by(unit: Unit) -> Option<HeldBy> {
        Some(HeldBy::SpentMeter {
            status: StatusCode::TOO_MANY_REQUESTS,
            unit,
        })
    }

    fn quota(remaining: u64, reset_at: Instant) -> Quota {
        Quota {
            remaining,
            reset_at,
        }
    }

    #[test]
    fn a_spent_window_keeps_the_meter_that_spent_it_when_another_with_room_reports() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(
            quota(0, now + 60 * SECOND),
            None,
            spent_by(Unit::Requests),
            0,
            now,
        );
        // A longer meter with room: the hold stays, and so does what set it.
        window.report(
            quota(9, now + 3600 * SECOND),
            None,
            spent_by(Unit::Tokens),
            0,
            now,
        );
        assert_eq!(window.quota(now), Some(quota(0, now + 60 * SECOND)));
        assert_eq!(window.spent_by(), spent_by(Unit::Requests));
        // A window with room is named by no meter: a spent report names its own.
        let mut open = ReportedWindow::default();
        open.report(
            quota(5, now + 60 * SECOND),
            None,
            spent_by(Unit::Requests),
            0,
            now,
        );
        assert_eq!(open.spent_by(), None);
        open.report(
            quota(0, now + 60 * SECOND),
            None,
            spent_by(Unit::Tokens),
            0,
            now,
        );
        assert_eq!(open.spent_by(), spent_by(Unit::Tokens));
    }

    #[test]
    fn a_spent_window_restores_its_whole_quota_for_as_long_as_it_lasted() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(quota(3, now + 10 * SECOND), Some(20), None, 0, now);
        window.report(quota(0, now + 10 * SECOND), None, None, 0, now + SECOND);
        assert_eq!(window.take_over(now + 9 * SECOND), None, "not over yet");
        let reset = now + 10 * SECOND;
        let over = window.take_over(reset).expect("over at its reset");
        assert!(over.is_spent());
        assert_eq!(window.quota(reset), None, "forgotten once over");
        assert!(window.restore(over, 1, reset));
        assert_eq!(window.quota(reset), Some(quota(20, reset + 10 * SECOND)));
        // The next report replaces what the reset restored, where a fold would keep the
        // earlier reset of one window.
        window.report(quota(19, reset + 11 * SECOND), None, None, 1, reset);
        assert_eq!(window.quota(reset), Some(quota(19, reset + 11 * SECOND)));
    }

    #[test]
    fn without_the_whole_quota_a_reset_restores_nothing() {
        let now = Instant::now();
        for limit in [None, Some(0)] {
            let mut window = ReportedWindow::default();
            window.report(quota(0, now + SECOND), limit, None, 0, now);
            let over = window.take_over(now + SECOND).unwrap();
            assert!(!window.restore(over, 1, now + SECOND), "{limit:?}");
            assert_eq!(window.quota(now + SECOND), None);
        }
    }

    #[test]
    fn a_report_from_before_the_windows_epoch_is_ignored() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(quota(5, now + SECOND), None, None, 2, now);
        window.report(quota(1, now + SECOND), None, None, 1, now);
        assert_eq!(window.quota(now), Some(quota(5, now + SECOND)));
        window.report(quota(4, now + SECOND), None, None, 2, now);
        assert_eq!(window.quota(now), Some(quota(4, now + SECOND)));
    }
}
