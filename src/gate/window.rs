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
pub(super) struct ReportedWindow {
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
    pub(super) fn quota(&self, now: Instant) -> Option<Quota> {
        self.quota.filter(|quota| quota.reset_at > now)
    }

    /// The meter that said the window is spent, where a report named it.
    pub(super) fn spent_by(&self) -> Option<HeldBy> {
        self.by
    }

    /// Takes in a quota reported by a request let through in `epoch`, with the whole quota
    /// `limit` if the server gave it, by the meter `by`.
    pub(super) fn report(
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
    pub(super) fn take_over(&mut self, now: Instant) -> Option<Quota> {
        let over = self.quota.filter(|quota| quota.reset_at <= now)?;
        self.quota = None;
        Some(over)
    }

    /// The spent window `over` has reset at `now`, beginning `epoch`. Where the server gave its
    /// whole quota, the reset restores it, and this says so; otherwise the new window's first
    /// request probes.
    pub(super) fn restore(&mut self, over: Quota, epoch: u64, now: Instant) -> bool {
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
