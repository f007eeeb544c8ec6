//! The window a server reported for one key: its quota as the answers fold it, the meter that
//! said it is spent, and what its reset restores. Pure, generic over the clock: a gate's
//! monotonic one (with epochs), a shared store's wall clock (whose reports carry none, so
//! every one is of epoch 0).
//!
//! - Reports fold by [`fold`]'s one rule; a report from before the quota's epoch (a straggler
//!   from a window already over) is ignored.
//! - A window is spent at its reset when nothing was left of it but what requests still out
//!   took (`remaining <= out`). Where the server gave its whole quota, that reset restores it:
//!   it goes at once, no more, until the first answer says what is left (a reset is never
//!   early, so the new window has it all). The restored window is taken to last as long as the
//!   one before did from its first report; answers replace it long before.

use std::time::Duration;

use tokio::time::Instant;

use super::quota::{Quota, fold};
use crate::gate::time::Moment;
use crate::throttled::HeldBy;

/// What is known of the window the server reports, on the clock `T`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct ReportedWindow<T = Instant> {
    quota: Option<Quota<T>>,
    /// The meter `quota` was reported by, as it holds calls once spent (a shared store keeps
    /// none).
    #[cfg_attr(feature = "redis", serde(skip))]
    by: Option<HeldBy>,
    /// The epoch of the request whose answer gave `quota`.
    epoch: u64,
    /// The whole quota of a window, where the server gave it: what a reset restores.
    limit: Option<u64>,
    /// How long the current window lasts from its first report: a restored window's length.
    span: Duration,
    /// `quota` is what the last reset restored, not a report: the next report replaces it.
    restored: bool,
}

impl<T> Default for ReportedWindow<T> {
    fn default() -> Self {
        ReportedWindow {
            quota: None,
            by: None,
            epoch: 0,
            limit: None,
            span: Duration::ZERO,
            restored: false,
        }
    }
}

impl<T: Moment + std::ops::Add<Duration, Output = T>> ReportedWindow<T> {
    /// The quota as last reported (or restored), while its window lasts.
    pub(crate) fn quota(&self, now: T) -> Option<Quota<T>> {
        self.quota.filter(|quota| quota.reset_at > now)
    }

    /// Whether the quota is what a reset restored, and no answer has spoken since.
    pub(crate) fn is_restored(&self) -> bool {
        self.restored
    }

    /// Whether a quota is known, its window over or not (a look at its reset forgets it).
    pub(crate) fn is_known(&self) -> bool {
        self.quota.is_some()
    }

    /// The whole quota of a window, where the server gave it.
    pub(crate) fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// The meter that said the window is spent, where a report named it.
    pub(crate) fn spent_by(&self) -> Option<HeldBy> {
        self.by
    }

    /// Takes in the whole quota of a window, where the server gave it.
    pub(crate) fn report_limit(&mut self, limit: Option<u64>) {
        self.limit = limit.or(self.limit);
    }

    /// Takes in a quota reported at `now` by a request let through in `epoch`, with the whole
    /// quota `limit` if the server gave it, by the meter `by`.
    pub(crate) fn report(
        &mut self,
        quota: Quota<T>,
        limit: Option<u64>,
        by: Option<HeldBy>,
        epoch: u64,
        now: T,
    ) {
        self.report_limit(limit);
        self.fold_in(quota, epoch, now);
        if quota.is_spent() && self.quota.is_some_and(|known| known.is_spent()) {
            self.by = by;
        }
    }

    /// The window, if it is over at `now`: it is forgotten, and returned for
    /// [`restore`](Self::restore).
    pub(crate) fn take_over(&mut self, now: T) -> Option<Quota<T>> {
        let over = self.quota.filter(|quota| quota.reset_at <= now)?;
        self.quota = None;
        Some(over)
    }

    /// The window `over` has reset at `now`, beginning `epoch`, with `out` requests still out.
    /// Where it was spent and the server gave its whole quota, the reset restores it, and this
    /// says so; otherwise the new window's first request probes.
    pub(crate) fn restore(&mut self, over: Quota<T>, out: u64, epoch: u64, now: T) -> bool {
        let Some(limit) = self
            .limit
            .filter(|limit| *limit > 0 && over.left_beside(out) == 0)
        else {
            return false;
        };
        self.quota = Some(Quota {
            remaining: limit,
            reset_at: now.later(self.span),
        });
        self.epoch = epoch;
        self.restored = true;
        true
    }

    fn fold_in(&mut self, quota: Quota<T>, epoch: u64, now: T) {
        match self.quota(now) {
            Some(_) if epoch < self.epoch => {}
            Some(known) if !self.restored => {
                if let Some(folded) = fold(known, quota, epoch > self.epoch) {
                    self.quota = Some(folded);
                    self.epoch = epoch;
                }
            }
            // The window's first report, or the first since a reset restored it: its
            // countdown is the window's length.
            _ => {
                self.quota = Some(quota);
                self.epoch = epoch;
                self.span = quota.reset_at.since(now);
                self.restored = false;
            }
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
        assert!(window.restore(over, 0, 1, reset));
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
            assert!(!window.restore(over, 0, 1, now + SECOND), "{limit:?}");
            assert_eq!(window.quota(now + SECOND), None);
        }
    }

    #[test]
    fn a_window_whose_rest_is_all_out_at_its_reset_is_spent_and_restores_only_then() {
        let now = Instant::now();
        let reset = now + 10 * SECOND;
        for (out, restores) in [(2, false), (3, true), (4, true)] {
            let mut window = ReportedWindow::default();
            window.report(quota(3, reset), Some(20), None, 0, now);
            let over = window.take_over(reset).unwrap();
            assert_eq!(window.restore(over, out, 1, reset), restores, "{out} out");
            let restored = restores.then_some(quota(20, reset + 10 * SECOND));
            assert_eq!(window.quota(reset), restored, "{out} out");
        }
    }

    #[test]
    fn a_restored_window_lasts_as_long_as_its_first_report_said_not_from_the_reset() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(quota(0, now + 4 * SECOND), Some(20), None, 0, now);
        let reset = now + 4 * SECOND;
        let over = window.take_over(reset).unwrap();
        assert!(window.restore(over, 0, 1, reset));
        // The first answer after the reset, a round trip later, says 2 s are left: the next
        // restored window lasts 2 s, where measured from the reset it would last 2.1 s.
        let answered = reset + SECOND / 10;
        window.report(quota(0, answered + 2 * SECOND), None, None, 1, answered);
        let next = answered + 2 * SECOND;
        let over = window.take_over(next).unwrap();
        assert!(window.restore(over, 0, 2, next));
        assert_eq!(window.quota(next), Some(quota(20, next + 2 * SECOND)));
    }

    #[test]
    fn on_the_wall_clock_a_window_keeps_the_same_rules() {
        let now = std::time::SystemTime::UNIX_EPOCH + 1_000 * SECOND;
        let mut window = ReportedWindow::<std::time::SystemTime>::default();
        window.report(
            Quota {
                remaining: 0,
                reset_at: now + SECOND,
            },
            Some(5),
            None,
            0,
            now,
        );
        let over = window.take_over(now + SECOND).unwrap();
        assert!(window.restore(over, 0, 0, now + SECOND));
        assert!(window.is_restored());
        assert_eq!(
            window.quota(now + SECOND),
            Some(Quota {
                remaining: 5,
                reset_at: now + 2 * SECOND,
            })
        );
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
