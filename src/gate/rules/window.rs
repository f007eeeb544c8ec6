//! The window a server reported for one key: its quota as the answers fold it, the meter that
//! said it is spent, and what its reset restores. Pure, generic over the clock: a gate's
//! monotonic one (with epochs), a shared store's wall clock (whose reports carry none, so
//! every one is of epoch 0).
//!
//! - Reports fold by [`fold`]'s one rule; a report from before the quota's epoch (a straggler
//!   from a window already over) is ignored. Answers come back in any order, so the lowest
//!   figure stands for the latest count; but a request sent after the lowest figure's answer
//!   came back was counted after it, and room in its answer no less than the lowest says the
//!   server gave back at least what it took within the window (a bucket refilling, a slot in
//!   flight freed, a sliding counter fading): that report replaces what is known, reset and
//!   all, since such a limiter's reset moves as it is spent (a reset read before the last
//!   spending would bring a burst on early, or restore a window the server still counts).
//! - A window is spent at its reset when nothing was left of it but what requests still out took
//!   (`remaining <= out`). Where the server gave its whole quota, the reset restores it, spent or
//!   not: it goes at once, no more, until the first answer says what is left (a reset is never
//!   early, so the new window has it all; and a window forgotten at its reset would let every call
//!   waiting go at once, beyond it). The restored window is taken to last as long as the one before
//!   did from its first report; answers replace it long before. A request refused that went on a
//!   restored quota shows the server does not give it back whole at the reset it reports (a leaky
//!   bucket's countdown rounded up to the second, a limit shared with clients this gate cannot
//!   see): resets then restore nothing, each new window's first request probes, until a window's
//!   first report shows the whole quota again.
//! - A reset written as a whole second on the server's clock (an epoch second, a date) may fall up
//!   to a second before the one read, and every reading of one window names the same second: a
//!   window that opens at its first request, released at that second, would open just after each
//!   whole second and cost up to two. So where other calls wait or are out, a window's last
//!   request waits for the answers out (they read the window latest: a reset that moves as the
//!   window is spent names a later second in the later answers), and goes alone at the earliest
//!   the window can have ended: a second before its reset, or, once a window was shown to end
//!   sooner, that long after its first request went. Its answer speaks for the window it counted
//!   in: room left says a new window opened then, not at the reset read, or that the server gave
//!   some back (a sliding log, whose reset moves with its newest request, frees its oldest first);
//!   either bounds how long a window lasts from its first request. Nothing left says it counted in
//!   the old window, which was owed that request anyway, so none is refused for it (but for a
//!   window of one request, which a later reset says opened, spent). A countdown read as a window
//!   opens is as tight as the round trip already. A shared store keeps the same, on the wall
//!   clock, for every process: the calls that ask while the last is held are the others waiting,
//!   which it cannot otherwise see.

use std::time::Duration;

use tokio::time::Instant;

use super::quota::{Quota, WRITTEN_TO, fold, same_window};
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
    /// A request that went on a restored quota was refused: the server does not give the
    /// whole quota back at the reset it reports (a leaky bucket whose countdown is rounded
    /// up to the second, a limit shared with clients this gate cannot see). Resets restore
    /// nothing until a window's first report shows the whole quota again.
    #[cfg_attr(feature = "redis", serde(default))]
    unrestored: bool,
    /// What sends the window's last request early.
    #[cfg_attr(feature = "redis", serde(default = "LastEarly::default"))]
    early: LastEarly<T>,
    /// Reports taken in so far, modulo 2³² (see [`went_after`]): a request that went when
    /// this many were is newer than each.
    #[cfg_attr(feature = "redis", serde(default))]
    taken: u32,
    /// Which report (counted from 0, modulo 2³²) set the lowest figure known, where one did.
    #[cfg_attr(feature = "redis", serde(default))]
    lowest_by: Option<u32>,
    /// The latest reset the server itself read the window spent until, while the quota known
    /// is spent, and which report (counted as `taken`) said so last: an instruction to the
    /// calls the window holds. (What a shared store tells is left may be spent by the fleet's
    /// requests out instead; a store's ledger folds only the server's readings, and keeps
    /// none.)
    #[cfg_attr(feature = "redis", serde(skip, default = "Option::default"))]
    server_spent: Option<(T, u32)>,
}

/// What is kept to send a window's last request early, where resets are read to the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
struct LastEarly<T> {
    /// The last report's reset named a whole second on the server's clock (an epoch second, a
    /// date): every reading of one window says the same second, up to a second late. A
    /// countdown read as a window opens is as tight as the round trip, and needs none of this.
    on_the_second: bool,
    /// When the current window's first request went.
    opened: Option<T>,
    /// The longest a window lasts from its first request's send, as a last request sent early
    /// showed by finding room given back.
    length: Option<Duration>,
}

impl<T> Default for LastEarly<T> {
    fn default() -> Self {
        LastEarly {
            on_the_second: false,
            opened: None,
            length: None,
        }
    }
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
            unrestored: false,
            early: LastEarly::default(),
            taken: 0,
            lowest_by: None,
            server_spent: None,
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

    /// How many reports were taken in (modulo 2³²): what a request going now has seen.
    pub(crate) fn taken(&self) -> u32 {
        self.taken
    }

    /// Takes in a quota reported at `now` by a request let through in `epoch` when `seen`
    /// reports were taken in (`None`: not known), with the whole quota `limit` if the server
    /// gave it, by the meter `by`; `server_spent` where the server itself read it spent.
    pub(crate) fn report(
        &mut self,
        quota: Quota<T>,
        limit: Option<u64>,
        (by, server_spent): (Option<HeldBy>, bool),
        (epoch, seen): (u64, Option<u32>),
        now: T,
    ) {
        let this = self.taken;
        let taken = self.fold_in(quota, limit, epoch, seen, now);
        self.taken = self.taken.wrapping_add(1);
        let spent = self
            .quota
            .filter(Quota::is_spent)
            .map(|known| known.reset_at);
        // A report thrown away says nothing of the window: neither how its reset is written
        // nor which meter holds it.
        if taken {
            self.early.on_the_second = quota.second.is_some();
            if quota.is_spent() && spent.is_some() {
                self.by = by;
            }
        }
        // The server's own zero is its instruction while the window stays spent as long as it
        // or longer, thrown away or not (beside a window spent longer: another meter, or a
        // fleet's zero; one the window known does not hold calls for, a straggler of an epoch
        // gone, is none); room the server gave back on its window (to a request that went
        // after the zero was taken in) ends it, and a fleet's zero beside it does not.
        let given_back = quota.remaining > 0
            && self.server_spent.is_some_and(|(reset, by)| {
                seen.is_some_and(|seen| went_after(seen, by)) && same_window(reset, quota.reset_at)
            });
        if spent.is_none() || given_back {
            self.server_spent = None;
        } else if server_spent && quota.is_spent() && spent >= Some(quota.reset_at) {
            let reset = self
                .server_spent
                .map_or(quota.reset_at, |(at, _)| at.max(quota.reset_at));
            self.server_spent = Some((reset, this));
        }
    }

    /// The latest reset the server itself read the window spent until, while the quota known
    /// at `now` is spent.
    pub(crate) fn server_spent(&self, now: T) -> Option<T> {
        self.quota(now)
            .filter(Quota::is_spent)
            .and(self.server_spent)
            .map(|(reset, _)| reset)
    }

    /// The window, if it is over at `now`: it is forgotten, and returned for
    /// [`restore`](Self::restore).
    pub(crate) fn take_over(&mut self, now: T) -> Option<Quota<T>> {
        let over = self.quota.filter(|quota| quota.reset_at <= now)?;
        self.quota = None;
        self.early.opened = None;
        Some(over)
    }

    /// The window has reset at `now` (see [`take_over`](Self::take_over)), beginning `epoch`:
    /// where the server gave its whole quota, the reset restores it, and this says so;
    /// otherwise the new window's first request probes.
    pub(crate) fn restore(&mut self, epoch: u64, now: T) -> bool {
        let Some(limit) = self.limit.filter(|limit| *limit > 0 && !self.unrestored) else {
            return false;
        };
        self.quota = Some(Quota {
            remaining: limit,
            reset_at: now.later(self.span),
            second: None,
        });
        self.epoch = epoch;
        self.restored = true;
        true
    }

    /// A request that went on a quota a reset restored was refused: until a window's first
    /// report shows the whole quota, resets restore nothing, and each new window's first
    /// request probes.
    pub(crate) fn restore_refused(&mut self) {
        self.unrestored = true;
    }

    /// Folds in a report of a request that went when `seen` reports were taken in. One that
    /// went after the report of the lowest figure was taken in was counted after it: a figure
    /// with room and no lower then says the server gave back at least what that request took
    /// (a bucket, a sliding log, a counter fading as fast as it is spent), so it replaces what
    /// is known, its reset with it (such a limiter's reset moves as it is spent).
    ///
    /// The whole quota a report gave (`limit`) goes with its count: a report thrown away
    /// changes it in nothing, one of another window or meter brings its own (none where it
    /// gave none: a token meter's says nothing of how many calls a window holds), and one of
    /// the same window keeps the one known where it gave none. A reset restores only the
    /// whole quota of the meter whose window it ends. Whether the report was taken in.
    fn fold_in(
        &mut self,
        quota: Quota<T>,
        limit: Option<u64>,
        epoch: u64,
        seen: Option<u32>,
        now: T,
    ) -> bool {
        // A report of an older epoch speaks of a window gone, but not where it names a later
        // reset than a window a reset restored: then the restore was the guess, and it is
        // the server's word on the window in force (its requests answered after the
        // restored window's own reset passed).
        let speaks_of_now = |known: &Quota<T>| self.restored && quota.reset_at > known.reset_at;
        match self.quota(now) {
            Some(known) if epoch < self.epoch && !speaks_of_now(&known) => false,
            Some(known) if !self.restored => {
                let after_lowest =
                    seen.is_some_and(|seen| self.lowest_by.is_none_or(|by| went_after(seen, by)));
                let given_back =
                    after_lowest && quota.remaining > 0 && quota.remaining >= known.remaining;
                if let Some(folded) = fold(known, quota, epoch > self.epoch || given_back) {
                    self.limit = if same_window(known.reset_at, quota.reset_at) {
                        limit.or(self.limit)
                    } else {
                        limit
                    };
                    // The report states the figure that stands (a lower one, or the same
                    // later): requests that went before it was taken in may have been
                    // counted before it.
                    if folded.remaining == quota.remaining {
                        self.lowest_by = Some(self.taken);
                    }
                    self.quota = Some(folded);
                    self.epoch = epoch;
                    return true;
                }
                false
            }
            // The window's first report, or the first since a reset restored it: its
            // countdown is the window's length.
            _ => {
                // A restored window's first report of another window (another meter's) brings
                // its own whole quota too.
                let other = self
                    .quota(now)
                    .filter(|_| self.restored)
                    .is_some_and(|restored| !same_window(restored.reset_at, quota.reset_at));
                self.limit = if other { limit } else { limit.or(self.limit) };
                self.quota = Some(quota);
                self.epoch = epoch;
                self.span = quota.reset_at.since(now);
                self.restored = false;
                self.lowest_by = Some(self.taken);
                // All but the request it answered: the window did open whole.
                if self
                    .limit
                    .is_some_and(|limit| quota.remaining.saturating_add(1) >= limit)
                {
                    self.unrestored = false;
                }
                true
            }
        }
    }
}

/// Whether a request that went when `seen` reports were taken in went after report `report`
/// was: counts run modulo 2³², so "after" is the half of the circle ahead of it (a request is
/// answered long before 2³¹ more reports come; a count of 32 bits keeps an admission, which
/// every waiting call's future holds, as small as it was).
fn went_after(seen: u32, report: u32) -> bool {
    seen.wrapping_sub(report).wrapping_sub(1) < 1 << 31
}

impl<T: Moment + std::ops::Add<Duration, Output = T>> ReportedWindow<T> {
    /// A request goes at `now` with `out` out, on `quota` where it counts by one: the first
    /// since the window began opens it. The quota it went on if it is the window's last,
    /// alone, within the second its reset may fall in: its answer then speaks for whichever
    /// window it counted in.
    pub(crate) fn sending(
        &mut self,
        quota: Option<Quota<T>>,
        out: u64,
        now: T,
    ) -> Option<Quota<T>> {
        self.early.opened.get_or_insert(now);
        quota.filter(|quota| {
            self.sends_last_early()
                && out == 0
                && quota.remaining == 1
                && now.later(WRITTEN_TO) >= quota.reset_at
        })
    }

    /// Until when the last request `quota` leaves beside `out` out waits, unless it is the
    /// key's only call (`busy`: others wait or are out): for the earliest the window can have
    /// ended, as the length a window was shown to last from its first request says, or else a
    /// second before the reset read; with answers out, for those first (they wake it; at the
    /// latest the reset), so that it goes alone on the latest reading. `None`: it
    /// goes now (so does the last request of a window not ending within two seconds).
    pub(crate) fn last_held(&self, quota: Quota<T>, out: u64, busy: bool, now: T) -> Option<T> {
        if !self.sends_last_early()
            || !busy
            || quota.left_beside(out) != 1
            || quota.reset_at > now.later(2 * WRITTEN_TO)
        {
            return None;
        }
        if out > 0 {
            return Some(quota.reset_at);
        }
        let earliest = quota.reset_at.earlier(WRITTEN_TO)?;
        let at = self
            .early
            .opened
            .zip(self.early.length)
            .map(|(opened, length)| opened.later(length))
            .filter(|ended| *ended < quota.reset_at)
            .map_or(earliest, |ended| ended.max(earliest));
        (at > now).then_some(at)
    }

    /// Whether a window's last request may go early: its reset is read to the second.
    pub(crate) fn sends_last_early(&self) -> bool {
        self.early.on_the_second
    }

    /// The answer to a window's last request, sent alone at `sent` and answered at `now`,
    /// reported `quota`: if it found room (a new window, or some given back), the next window
    /// opened as it went, and the one before lasted no longer than from its first request to
    /// this answer.
    pub(crate) fn last_answered(&mut self, before: Quota<T>, quota: Quota<T>, sent: T, now: T) {
        // Counted in the old window, it says nothing of the next (where a window holds one
        // request, a later reset says it opened a new one; otherwise a log's reset moves with
        // its newest request).
        let later = quota.reset_at > before.reset_at.later(WRITTEN_TO / 2);
        if quota.remaining == 0 && (!later || self.limit.is_none_or(|limit| limit > 1)) {
            return;
        }
        // Answered after the reset read, it is confounded with what that reset restored.
        if now >= before.reset_at {
            return;
        }
        // Room: what the window counted had begun to leave the count (all of it at a new
        // window, a log's oldest first) by the time this answer came back.
        if let Some(opened) = self.early.opened {
            let lasted = now.since(opened);
            self.early.length = Some(
                self.early
                    .length
                    .map_or(lasted, |length| length.min(lasted)),
            );
        }
        self.early.opened = Some(sent);
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
            second: None,
        }
    }

    #[test]
    fn a_spent_window_keeps_the_meter_that_spent_it_when_another_reports() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        let held = quota(0, now + 60 * SECOND);
        window.report(
            held,
            None,
            (spent_by(Unit::Requests), false),
            (0, None),
            now,
        );
        // Another meter's reports leave the hold and what set it: a longer one with room; a
        // shorter one spent too, written to the second, thrown away beside the longer hold
        // (it says nothing of how this window's resets are written); one of the same window
        // with room, folded in (still spent).
        let to_the_second = Quota {
            second: Some(1_700_000_010),
            ..quota(0, now + 10 * SECOND)
        };
        for other in [
            quota(9, now + 3600 * SECOND),
            to_the_second,
            quota(3, now + 60 * SECOND),
        ] {
            window.report(other, None, (spent_by(Unit::Tokens), false), (0, None), now);
            assert_eq!(window.quota(now), Some(held), "{other:?}");
            assert_eq!(window.spent_by(), spent_by(Unit::Requests), "{other:?}");
            assert!(
                !window.sends_last_early(),
                "{other:?}: its resets are countdowns"
            );
        }
        // A window with room is named by no meter: a spent report names its own.
        let mut open = ReportedWindow::default();
        open.report(
            quota(5, now + 60 * SECOND),
            None,
            (spent_by(Unit::Requests), false),
            (0, None),
            now,
        );
        assert_eq!(open.spent_by(), None);
        open.report(
            quota(0, now + 60 * SECOND),
            None,
            (spent_by(Unit::Tokens), false),
            (0, None),
            now,
        );
        assert_eq!(open.spent_by(), spent_by(Unit::Tokens));
    }

    #[test]
    fn a_spent_window_restores_its_whole_quota_for_as_long_as_it_lasted() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(
            quota(3, now + 10 * SECOND),
            Some(20),
            (None, false),
            (0, None),
            now,
        );
        window.report(
            quota(0, now + 10 * SECOND),
            None,
            (None, false),
            (0, None),
            now + SECOND,
        );
        assert_eq!(window.take_over(now + 9 * SECOND), None, "not over yet");
        let reset = now + 10 * SECOND;
        let over = window.take_over(reset).expect("over at its reset");
        assert!(over.is_spent());
        assert_eq!(window.quota(reset), None, "forgotten once over");
        assert!(window.restore(1, reset));
        assert_eq!(window.quota(reset), Some(quota(20, reset + 10 * SECOND)));
        // The next report replaces what the reset restored, where a fold would keep the
        // earlier reset of one window.
        window.report(
            quota(19, reset + 11 * SECOND),
            None,
            (None, false),
            (1, None),
            reset,
        );
        assert_eq!(window.quota(reset), Some(quota(19, reset + 11 * SECOND)));
    }

    #[test]
    fn without_the_whole_quota_a_reset_restores_nothing() {
        let now = Instant::now();
        for limit in [None, Some(0)] {
            let mut window = ReportedWindow::default();
            window.report(quota(0, now + SECOND), limit, (None, false), (0, None), now);
            assert!(window.take_over(now + SECOND).is_some());
            assert!(!window.restore(1, now + SECOND), "{limit:?}");
            assert_eq!(window.quota(now + SECOND), None);
        }
    }

    #[test]
    fn a_window_restores_its_whole_quota_at_its_reset_spent_or_not() {
        let now = Instant::now();
        let reset = now + 10 * SECOND;
        for remaining in [0, 3, 19] {
            let mut window = ReportedWindow::default();
            window.report(
                quota(remaining, reset),
                Some(20),
                (None, false),
                (0, None),
                now,
            );
            assert!(window.take_over(reset).is_some());
            assert!(window.restore(1, reset), "{remaining} left");
            let restored = Some(quota(20, reset + 10 * SECOND));
            assert_eq!(window.quota(reset), restored, "{remaining} left");
        }
    }

    #[test]
    fn a_window_with_room_keeps_the_latest_second_named_as_tightly_as_it_was_read() {
        const S: u64 = 1_700_000_001;
        let now = Instant::now();
        let first = now + SECOND;
        let named = |remaining, reset_at, second| Quota {
            remaining,
            reset_at,
            second: Some(second),
        };
        let mut window = ReportedWindow::default();
        window.report(
            named(19, first + 900 * MS, S),
            Some(20),
            (None, false),
            (0, None),
            now,
        );
        // One second read against a tighter bound of the server's clock, then a looser one:
        // the tightest reading stands.
        window.report(named(18, first, S), None, (None, false), (0, None), now);
        window.report(
            named(17, first + 500 * MS, S),
            None,
            (None, false),
            (0, None),
            now,
        );
        assert_eq!(window.quota(now), Some(named(17, first, S)));
        // A token bucket spent further names the next second, read against a bound tighter
        // still: less than a second after the first second's reading, yet the reset moved.
        window.report(
            named(15, first + 400 * MS, S + 1),
            None,
            (None, false),
            (0, None),
            now,
        );
        // A straggler naming the second before says nothing of the reset.
        window.report(named(16, first, S), None, (None, false), (0, None), now);
        assert_eq!(window.quota(now), Some(named(15, first + 400 * MS, S + 1)));
        assert_eq!(
            window.take_over(first + 300 * MS),
            None,
            "the bucket is still drained"
        );
        // Countdowns name no second: the earliest is the tightest, a second later or not.
        let mut counted = ReportedWindow::default();
        counted.report(quota(19, first), Some(20), (None, false), (0, None), now);
        counted.report(
            quota(15, first + SECOND),
            None,
            (None, false),
            (0, None),
            now,
        );
        assert_eq!(counted.quota(now), Some(quota(15, first)));
    }

    #[test]
    fn a_restored_window_lasts_as_long_as_its_first_report_said_not_from_the_reset() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(
            quota(0, now + 4 * SECOND),
            Some(20),
            (None, false),
            (0, None),
            now,
        );
        let reset = now + 4 * SECOND;
        assert!(window.take_over(reset).is_some());
        assert!(window.restore(1, reset));
        // The first answer after the reset, a round trip later, says 2 s are left: the next
        // restored window lasts 2 s, where measured from the reset it would last 2.1 s.
        let answered = reset + SECOND / 10;
        window.report(
            quota(0, answered + 2 * SECOND),
            None,
            (None, false),
            (1, None),
            answered,
        );
        let next = answered + 2 * SECOND;
        assert!(window.take_over(next).is_some());
        assert!(window.restore(2, next));
        assert_eq!(window.quota(next), Some(quota(20, next + 2 * SECOND)));
    }

    #[test]
    fn a_reset_restores_only_the_whole_quota_of_the_meter_whose_window_it_ends() {
        let now = Instant::now();
        // A requests meter with 5 of 60 left for 40 s; then a token meter spent for 20 s,
        // which binds and says nothing of how many calls a window holds.
        let mut window = ReportedWindow::default();
        window.report(
            quota(5, now + 40 * SECOND),
            Some(60),
            (None, false),
            (0, None),
            now,
        );
        let tokens = spent_by(Unit::Tokens);
        window.report(
            quota(0, now + 20 * SECOND),
            None,
            (tokens, false),
            (0, None),
            now,
        );
        let reset = now + 20 * SECOND;
        assert!(window.take_over(reset).is_some());
        assert!(!window.restore(1, reset), "not the requests meter's 60");
        // A per-second window of 10, spent; an hourly meter's report with room is thrown
        // away, and with it its 5000: the second's reset gives back the second's 10.
        let mut window = ReportedWindow::default();
        window.report(
            quota(0, now + SECOND),
            Some(10),
            (None, false),
            (0, None),
            now,
        );
        window.report(
            quota(3, now + 3600 * SECOND),
            Some(5000),
            (None, false),
            (0, None),
            now,
        );
        assert!(window.take_over(now + SECOND).is_some());
        assert!(window.restore(1, now + SECOND));
        assert_eq!(
            window.quota(now + SECOND).map(|quota| quota.remaining),
            Some(10)
        );
        // A restored window's first report is the token meter's, of another window: its
        // reset restores nothing.
        let next = now + SECOND + SECOND / 2;
        window.report(
            quota(0, now + 30 * SECOND),
            None,
            (tokens, false),
            (1, None),
            next,
        );
        assert!(window.take_over(now + 30 * SECOND).is_some());
        assert!(!window.restore(2, now + 30 * SECOND));
    }

    #[test]
    fn a_restored_quota_the_server_refused_is_not_restored_until_a_window_opens_whole() {
        let now = Instant::now();
        let resets: Vec<Instant> = (1..=4).map(|n| now + n * SECOND).collect();
        let mut window = ReportedWindow::default();
        window.report(quota(0, resets[0]), Some(20), (None, false), (0, None), now);
        assert!(window.take_over(resets[0]).is_some());
        assert!(window.restore(1, resets[0]), "nothing refused yet");
        // A request that went on the 20 restored is refused (a leaky bucket gave back one);
        // the first answer of that window says none is left.
        window.restore_refused();
        window.report(
            quota(0, resets[1]),
            None,
            (None, false),
            (1, None),
            resets[0],
        );
        assert!(window.take_over(resets[1]).is_some());
        assert!(!window.restore(2, resets[1]), "a restore was refused");
        assert_eq!(
            window.quota(resets[1]),
            None,
            "the new window's first request probes"
        );
        // Its answer says none is left: not the whole quota, so the next reset restores
        // nothing either.
        window.report(
            quota(0, resets[2]),
            None,
            (None, false),
            (2, None),
            resets[1],
        );
        assert!(window.take_over(resets[2]).is_some());
        assert!(
            !window.restore(3, resets[2]),
            "no window opened whole since"
        );
        // A window whose first report holds all but that request opened whole.
        window.report(
            quota(19, resets[3]),
            None,
            (None, false),
            (3, None),
            resets[2],
        );
        assert!(window.take_over(resets[3]).is_some());
        assert!(window.restore(4, resets[3]), "a window opened whole again");
    }

    #[test]
    fn on_the_wall_clock_a_window_keeps_the_same_rules() {
        let now = std::time::SystemTime::UNIX_EPOCH + 1_000 * SECOND;
        let mut window = ReportedWindow::<std::time::SystemTime>::default();
        window.report(
            Quota {
                remaining: 0,
                reset_at: now + SECOND,
                second: None,
            },
            Some(5),
            (None, false),
            (0, None),
            now,
        );
        assert!(window.take_over(now + SECOND).is_some());
        assert!(window.restore(0, now + SECOND));
        assert!(window.is_restored());
        assert_eq!(
            window.quota(now + SECOND),
            Some(Quota {
                remaining: 5,
                reset_at: now + 2 * SECOND,
                second: None,
            })
        );
    }

    #[test]
    fn a_report_from_before_the_windows_epoch_is_ignored() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(quota(5, now + SECOND), None, (None, false), (2, None), now);
        window.report(quota(1, now + SECOND), None, (None, false), (1, None), now);
        assert_eq!(window.quota(now), Some(quota(5, now + SECOND)));
        window.report(quota(4, now + SECOND), None, (None, false), (2, None), now);
        assert_eq!(window.quota(now), Some(quota(4, now + SECOND)));
        // Let through in a later epoch (after a closure): it replaces what is known.
        let later = quota(10, now + 1500 * MS);
        window.report(later, None, (None, false), (3, None), now);
        assert_eq!(window.quota(now), Some(later));
    }

    /// A report of an older epoch speaks of a restored window (the guess) only where it names
    /// a later reset: one naming the old window's reset leaves the restore as it was.
    #[test]
    fn a_report_from_before_the_epoch_replaces_a_restored_window_only_with_a_later_reset() {
        let now = Instant::now();
        // A straggler naming the old window's reset changes nothing...
        let mut window = ReportedWindow::default();
        window.report(
            quota(0, now + SECOND),
            Some(5),
            (None, false),
            (0, None),
            now,
        );
        let reset = now + SECOND;
        assert!(window.take_over(reset).is_some());
        assert!(window.restore(1, reset));
        let answered = reset + 100 * MS;
        window.report(quota(0, reset), None, (None, false), (0, None), answered);
        assert_eq!(
            window.quota(answered),
            Some(quota(5, reset + SECOND)),
            "the old window's reset"
        );
        assert!(window.is_restored());
        // ...and one naming a later reset is the server's word on the window in force.
        window.report(
            quota(0, answered + 58 * SECOND),
            None,
            (None, false),
            (0, None),
            answered,
        );
        assert_eq!(
            window.quota(answered),
            Some(quota(0, answered + 58 * SECOND))
        );
        assert!(!window.is_restored());
    }

    #[test]
    fn a_higher_figure_counted_after_the_lowest_replaces_it_with_its_reset() {
        let now = Instant::now();
        let mut window = ReportedWindow::default();
        window.report(
            quota(30, now + SECOND),
            None,
            (None, false),
            (0, Some(0)),
            now,
        );
        // Sent before the lowest figure's report was taken in: it may have been counted
        // before it, so it is a straggler, and the lowest figure and earliest reset stand.
        window.report(
            quota(1, now + 1200 * MS),
            None,
            (None, false),
            (0, Some(0)),
            now + 200 * MS,
        );
        window.report(
            quota(5, now + 1300 * MS),
            None,
            (None, false),
            (0, Some(1)),
            now + 300 * MS,
        );
        assert_eq!(window.quota(now), Some(quota(1, now + SECOND)));
        // Sent after it (two reports taken in, the lowest the second): the server gave some
        // back, and its reset moved with what was spent.
        let given_back = quota(4, now + 1400 * MS);
        window.report(
            given_back,
            None,
            (None, false),
            (0, Some(2)),
            now + 400 * MS,
        );
        assert_eq!(window.quota(now), Some(given_back));
        // A lower figure then is folded as before: the lowest, the earliest reset.
        window.report(
            quota(3, now + 1500 * MS),
            None,
            (None, false),
            (0, Some(2)),
            now + 500 * MS,
        );
        assert_eq!(window.quota(now), Some(quota(3, now + 1400 * MS)));
        // Counted after it with the same figure: the server gave back what that request took
        // (a sliding counter fading as fast as it is spent), and the reset moved with it.
        let as_much = quota(3, now + 1700 * MS);
        window.report(as_much, None, (None, false), (0, Some(5)), now + 700 * MS);
        assert_eq!(window.quota(now), Some(as_much));
        // A report that does not say when its request went (one without a reservation).
        window.report(
            quota(9, now + 1600 * MS),
            None,
            (None, false),
            (0, None),
            now + 600 * MS,
        );
        assert_eq!(window.quota(now), Some(quota(3, now + 1600 * MS)));
        // Nothing left, counted after: a spent window's latest reset holds, as it always does.
        window.report(
            quota(0, now + 1500 * MS),
            None,
            (None, false),
            (0, Some(6)),
            now + 800 * MS,
        );
        window.report(
            quota(0, now + 1450 * MS),
            None,
            (None, false),
            (0, Some(8)),
            now + 900 * MS,
        );
        assert_eq!(window.quota(now), Some(quota(0, now + 1500 * MS)));
    }

    #[test]
    fn the_same_figure_reported_again_stands_for_the_latest_count() {
        let now = Instant::now();
        let reset = now + SECOND;
        let mut window = ReportedWindow::default();
        window.report(quota(3, reset), None, (None, false), (0, Some(0)), now);
        // Two requests go together, after that report. One answers 3: counted after it, as
        // much as it took given back (its reset replaces the known one).
        let later = now + 100 * MS;
        window.report(
            quota(3, reset + MS),
            None,
            (None, false),
            (0, Some(1)),
            later,
        );
        // The other answers 4: it may have been counted before the first (the server had 4,
        // then 3), so it gives nothing back; 3 stand.
        window.report(
            quota(4, reset + 2 * MS),
            None,
            (None, false),
            (0, Some(1)),
            later,
        );
        assert_eq!(window.quota(now).map(|quota| quota.remaining), Some(3));
    }

    #[test]
    fn reports_are_counted_round_the_clock() {
        assert!(went_after(6, 5) && went_after(0, u32::MAX) && went_after(1 << 30, 0));
        assert!(!went_after(5, 5) && !went_after(u32::MAX, 0) && !went_after(4, 5));
        // "After" is the half of the circle ahead: 2³¹ reports on, and no further.
        assert!(went_after(1 << 31, 0) && !went_after((1 << 31) + 1, 0));
        let now = Instant::now();
        let mut window = ReportedWindow {
            taken: u32::MAX,
            ..ReportedWindow::default()
        };
        window.report(
            quota(1, now + SECOND),
            None,
            (None, false),
            (0, Some(0)),
            now,
        );
        // Sent once that report was taken in, the count having wrapped to 0 since.
        let given_back = quota(4, now + 1400 * MS);
        window.report(
            given_back,
            None,
            (None, false),
            (0, Some(0)),
            now + 400 * MS,
        );
        assert_eq!(window.quota(now), Some(given_back));
    }

    const MS: Duration = Duration::from_millis(1);

    /// A quota whose reset was written as a whole second, read as `reset_at`.
    fn to_the_second(remaining: u64, reset_at: Instant) -> Quota {
        Quota {
            second: Some(1_700_000_002),
            ..quota(remaining, reset_at)
        }
    }

    /// A window of 20 a second whose reset was read to the second as `reset_at`, first sent
    /// at `opened`.
    fn window_of_twenty(reset_at: Instant, opened: Instant) -> ReportedWindow {
        let mut window = ReportedWindow::default();
        window.report(
            to_the_second(19, reset_at),
            Some(20),
            (None, false),
            (0, None),
            opened,
        );
        window.sending(None, 0, opened);
        window
    }

    /// A window of one request a second, spent, whose reset was read to the second as
    /// `reset_at`, sent at `opened`.
    fn window_of_one(reset_at: Instant, opened: Instant) -> ReportedWindow {
        let mut window = ReportedWindow::default();
        window.report(
            to_the_second(0, reset_at),
            Some(1),
            (None, false),
            (0, None),
            opened,
        );
        window.sending(None, 0, opened);
        window
    }

    #[test]
    fn the_last_request_waits_for_the_earliest_the_window_can_end_while_others_wait_behind_it() {
        let now = Instant::now();
        let window = window_of_twenty(now + 1500 * MS, now);
        let last = quota(1, now + 1500 * MS);
        // Up to a second before the reset read: it goes then, not now.
        assert_eq!(window.last_held(last, 0, true, now), Some(now + 500 * MS));
        assert_eq!(window.last_held(last, 0, true, now + 500 * MS), None);
        // With answers out it waits for them (they wake it), at the latest the reset.
        assert_eq!(
            window.last_held(quota(3, now + 1500 * MS), 2, true, now),
            Some(now + 1500 * MS)
        );
        // The key's only call, or more than one left: it goes at once.
        assert_eq!(window.last_held(last, 0, false, now), None);
        assert_eq!(
            window.last_held(quota(2, now + 1500 * MS), 0, true, now),
            None
        );
        // A window not ending within two seconds (the end of a long one is): at once.
        let far = quota(1, now + 2001 * MS);
        assert_eq!(window.last_held(far, 0, true, now), None);
        let near = quota(1, now + 2 * SECOND);
        assert_eq!(window.last_held(near, 0, true, now), Some(now + SECOND));
    }

    #[test]
    fn a_request_is_the_windows_last_alone_only_within_the_second_before_its_reset() {
        let now = Instant::now();
        let mut window = window_of_twenty(now + 1500 * MS, now);
        let last = Some(quota(1, now + 1500 * MS));
        assert_eq!(window.sending(last, 0, now + 500 * MS), last);
        assert_eq!(window.sending(last, 0, now + 499 * MS), None);
        assert_eq!(window.sending(last, 1, now + 500 * MS), None);
        let two = Some(quota(2, now + 1500 * MS));
        assert_eq!(window.sending(two, 0, now + 500 * MS), None);
    }

    #[test]
    fn a_last_request_that_finds_a_new_window_times_the_next_from_its_first_request() {
        let now = Instant::now();
        let mut window = window_of_twenty(now + 2 * SECOND, now);
        let before = quota(1, now + 2 * SECOND);
        // Sent a second before the reset read, answered 60 ms on in a new window of 20.
        let sent = now + SECOND;
        window.last_answered(before, quota(19, now + 3 * SECOND), sent, sent + 60 * MS);
        // The window before lasted at most 1.06 s from its first request; the new one opened
        // as the last went. Its own last then waits 1.06 s from there, later than a second
        // before its reset.
        let next = quota(1, now + 3 * SECOND);
        assert_eq!(
            window.last_held(next, 0, true, sent + 100 * MS),
            Some(sent + 1060 * MS)
        );
        // With answers out, its last waits for them, to go alone.
        let beside_two = quota(3, now + 3 * SECOND);
        assert_eq!(
            window.last_held(beside_two, 2, true, sent + 100 * MS),
            Some(now + 3 * SECOND)
        );
        // A reset read no later than that length ends it: a second before that reset instead.
        let sooner = quota(1, now + 2050 * MS);
        assert_eq!(
            window.last_held(sooner, 0, true, sent),
            Some(now + 1050 * MS)
        );
        let as_soon = quota(1, sent + 1060 * MS);
        assert_eq!(
            window.last_held(as_soon, 0, true, sent),
            Some(now + 1060 * MS)
        );
        // A later, longer measure (1.12 s) never loosens it.
        let second = sent + 1060 * MS;
        window.last_answered(next, quota(19, now + 4 * SECOND), second, second + 60 * MS);
        let after_that = quota(1, now + 4 * SECOND);
        assert_eq!(
            window.last_held(after_that, 0, true, sent + 1100 * MS),
            Some(sent + 1060 * MS + 1060 * MS)
        );
    }

    #[test]
    fn a_last_request_counted_in_the_old_window_teaches_nothing() {
        let now = Instant::now();
        let mut window = window_of_twenty(now + 2 * SECOND, now);
        let before = quota(1, now + 2 * SECOND);
        window.last_answered(
            before,
            quota(0, now + 2 * SECOND),
            now + SECOND,
            now + SECOND + 60 * MS,
        );
        // Still a second before the reset, from the same opening.
        assert_eq!(window.last_held(before, 0, true, now), Some(now + SECOND));
        // Nor does one answered after the reset read: that reset restored the window meanwhile.
        window.last_answered(
            before,
            quota(19, now + 3 * SECOND),
            now + SECOND,
            now + 2 * SECOND,
        );
        assert_eq!(window.last_held(before, 0, true, now), Some(now + SECOND));
    }

    #[test]
    fn nothing_left_with_a_later_reset_is_a_new_window_only_where_a_window_holds_one_request() {
        let now = Instant::now();
        let before = quota(1, now + 2 * SECOND);
        let sent = now + SECOND;
        let later = quota(1, now + 3 * SECOND);
        // A second on, of twenty: the old window, whose reset moved with its newest request
        // (a sliding log's does).
        let mut window = window_of_twenty(now + 2 * SECOND, now);
        window.last_answered(before, quota(0, now + 3 * SECOND), sent, sent + 60 * MS);
        assert_eq!(
            window.last_held(later, 0, true, sent),
            Some(now + 2 * SECOND),
            "no length learned: a second before the reset"
        );
        // A second on, of one: a new window, which it spent.
        let mut window = window_of_one(now + 2 * SECOND, now);
        window.last_answered(before, quota(0, now + 3 * SECOND), sent, sent + 60 * MS);
        assert_eq!(
            window.last_held(later, 0, true, sent),
            Some(sent + 1060 * MS),
            "it opened a window, lasting at most 1.06 s from its first request"
        );
        // Half a second on, even of one: the old window, read again.
        let mut window = window_of_one(now + 2 * SECOND, now);
        window.last_answered(before, quota(0, now + 2500 * MS), sent, sent + 60 * MS);
        assert_eq!(
            window.last_held(later, 0, true, sent),
            Some(now + 2 * SECOND)
        );
    }

    #[test]
    fn room_given_back_before_the_reset_times_the_next_window_and_its_last_still_goes_early() {
        let now = Instant::now();
        let mut window = window_of_twenty(now + 2 * SECOND, now);
        let before = quota(1, now + 2 * SECOND);
        // A sliding log freed 6 of its twenty by the time the last request's answer came back,
        // 1.06 s after the window's first request went: it lasts no longer than that.
        let sent = now + SECOND;
        window.last_answered(before, quota(6, now + 3 * SECOND), sent, sent + 60 * MS);
        let next = quota(1, now + 3 * SECOND);
        assert_eq!(
            window.last_held(next, 0, true, sent + 100 * MS),
            Some(sent + 1060 * MS)
        );
        assert_eq!(window.sending(Some(next), 0, sent + 1060 * MS), Some(next));
        // With answers out, it waits for them too.
        let beside_two = quota(3, now + 3 * SECOND);
        assert_eq!(
            window.last_held(beside_two, 2, true, sent + 100 * MS),
            Some(now + 3 * SECOND)
        );
    }
}
