//! What a shared store keeps of one key for every process: its closure, its window's quota as
//! the server last reported it, the requests reserved and not yet answered, and how to restore
//! a spent window. Pure, on the wall clock; the Redis store's scripts follow the same rules.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::quota::{Quota, fold};
use super::store::{Reservation, Ticket, Window};

/// How long a call held by a restored window that is all reserved waits before it asks again:
/// the answers to the reserved requests, a round trip away, say what the new window holds.
pub(crate) const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// How long a reserved request counts as out without an answer: a process that died with
/// requests out, or answers lost in an outage, hold back no quota longer than this.
pub(crate) const OUT_AT_MOST: Duration = Duration::from_secs(60);

/// One key's shared state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    closed_until: Option<SystemTime>,
    /// The quota of the current window, as the lowest report said.
    quota: Option<Quota<SystemTime>>,
    /// The requests reserved and not yet answered, by ticket, with when they stop counting.
    /// The server may not have counted any of them in the reports so far: each is taken off
    /// what they said is left (as a gate takes its requests in flight off).
    out: BTreeMap<u64, SystemTime>,
    /// Reservations made, ever: the next ticket's number.
    issued: u64,
    /// The whole quota a window, where the server gave it: what a spent window's reset
    /// restores.
    limit: Option<u64>,
    /// How long the current window lasts from its first report: a restored window's length.
    span: Duration,
    /// `quota` is what a reset restored, not a report: the next report replaces it.
    restored: bool,
}

impl Ledger {
    /// The quota left for new reservations.
    fn available(&self) -> Option<Quota<SystemTime>> {
        let out = u64::try_from(self.out.len()).unwrap_or(u64::MAX);
        self.quota.map(|quota| Quota {
            remaining: quota.remaining.saturating_sub(out),
            reset_at: quota.reset_at,
        })
    }

    /// What is known of the key at `now`, to hold a process's own calls by.
    pub(crate) fn window(&self, now: SystemTime) -> Window {
        Window {
            closed_until: self.closed_until.filter(|until| *until > now),
            quota: self
                .available()
                .filter(|quota| quota.reset_at > now && !self.restored)
                .map(|quota| (quota.remaining, quota.reset_at)),
            limit: self.limit,
        }
    }

    /// Whether anything is left to say at `now`.
    pub(crate) fn is_current(&self, now: SystemTime) -> bool {
        self.closed_until.is_some_and(|until| until > now)
            || self.quota.is_some_and(|quota| quota.reset_at > now)
            || self.out.values().any(|until| *until > now)
    }

    /// Reserves one request for a call about to go at `now`. A closure holds every call; a
    /// window with nothing left to reserve holds a call that respects the quota (`metered`)
    /// until its reset. A spent window whose reset has passed restores the whole quota, where
    /// the server gave it, so that the processes together send no more than it at the reset.
    pub(crate) fn reserve(&mut self, now: SystemTime, metered: bool) -> Reservation {
        if let Some(until) = self.closed_until.filter(|until| *until > now) {
            return Reservation::NotBefore {
                until,
                window: self.window(now),
            };
        }
        self.out.retain(|_, until| *until > now);
        self.restore(now);
        if let Some(quota) = self.available().filter(|quota| quota.reset_at > now) {
            if metered && quota.is_spent() {
                let until = if self.restored {
                    now + LOOK_AGAIN
                } else {
                    quota.reset_at
                };
                return Reservation::NotBefore {
                    until,
                    window: self.window(now),
                };
            }
        }
        self.issued += 1;
        self.out.insert(self.issued, now + OUT_AT_MOST);
        Reservation::Granted(Ticket::new(self.issued))
    }

    /// A spent window that has reset by `now` gives the next the whole quota.
    fn restore(&mut self, now: SystemTime) {
        let Some(over) = self.available().filter(|quota| quota.reset_at <= now) else {
            return;
        };
        self.quota = None;
        if let (true, Some(limit)) = (over.is_spent(), self.limit.filter(|limit| *limit > 0)) {
            self.quota = Some(Quota {
                remaining: limit,
                reset_at: now + self.span,
            });
            self.restored = true;
        }
    }

    /// Folds in what a response said at `now`, to a request reserved with `ticket` (`None`: one
    /// that went without a reservation), which is no longer out. The later closure stands;
    /// within a window the lowest count.
    pub(crate) fn merge(&mut self, window: Window, ticket: Option<Ticket>, now: SystemTime) {
        if let Some(ticket) = ticket {
            self.out.remove(&ticket.get());
        }
        self.closed_until = self.closed_until.max(window.closed_until);
        self.limit = window.limit.or(self.limit);
        let Some((remaining, reset_at)) = window.quota.filter(|(_, reset)| *reset > now) else {
            return;
        };
        let reported = Quota {
            remaining,
            reset_at,
        };
        let known = self.quota.filter(|quota| quota.reset_at > now);
        let folded = match known {
            Some(known) if !self.restored => fold(known, reported, false),
            _ => {
                self.span = reset_at.duration_since(now).unwrap_or_default();
                Some(reported)
            }
        };
        if let Some(quota) = folded {
            self.quota = Some(quota);
            self.restored = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn quota(remaining: u64, reset: SystemTime, limit: Option<u64>) -> Window {
        Window {
            closed_until: None,
            quota: Some((remaining, reset)),
            limit,
        }
    }

    fn granted(ledger: &mut Ledger, now: SystemTime) -> Ticket {
        match ledger.reserve(now, true) {
            Reservation::Granted(ticket) => ticket,
            held => panic!("held: {held:?}"),
        }
    }

    fn held_until(ledger: &mut Ledger, now: SystemTime, metered: bool) -> Option<SystemTime> {
        match ledger.reserve(now, metered) {
            Reservation::Granted(_) => None,
            Reservation::NotBefore { until, .. } => Some(until),
        }
    }

    #[test]
    fn processes_together_reserve_no_more_than_the_server_reported() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let first = granted(&mut ledger, now);
        ledger.merge(quota(3, now + SECOND, None), Some(first), now);
        for _ in 0..3 {
            granted(&mut ledger, now);
        }
        assert_eq!(held_until(&mut ledger, now, true), Some(now + SECOND));
        assert_eq!(
            held_until(&mut ledger, now, false),
            None,
            "a call that does not respect the quota is held only by a closure"
        );
    }

    #[test]
    fn the_requests_still_out_count_as_spent_whatever_order_they_were_reserved_in() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..5).map(|_| granted(&mut ledger, now)).collect();
        // The last request reserved arrived first: 5 left after it, four others still out.
        ledger.merge(quota(5, now + SECOND, None), Some(tickets[4]), now);
        assert_eq!(ledger.window(now).quota, Some((1, now + SECOND)));
        granted(&mut ledger, now);
        assert!(held_until(&mut ledger, now, true).is_some());
        // Their answers come: each one out less, and the lowest count stands.
        for ticket in &tickets[..4] {
            ledger.merge(quota(4, now + SECOND, None), Some(*ticket), now);
        }
        assert_eq!(ledger.window(now).quota, Some((3, now + SECOND)));
    }

    #[test]
    fn a_request_whose_answer_never_comes_stops_counting_after_a_while() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        granted(&mut ledger, now);
        ledger.merge(quota(1, now + 2 * OUT_AT_MOST, None), None, now);
        assert!(
            held_until(&mut ledger, now, true).is_some(),
            "the one left is out"
        );
        assert!(ledger.is_current(now));
        let later = now + OUT_AT_MOST;
        assert_eq!(held_until(&mut ledger, later, true), None);
    }

    #[test]
    fn a_later_answer_with_more_left_does_not_raise_the_count() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let first = granted(&mut ledger, now);
        let second = granted(&mut ledger, now);
        ledger.merge(quota(2, now + SECOND, None), Some(second), now);
        ledger.merge(quota(3, now + SECOND, None), Some(first), now);
        assert_eq!(ledger.window(now).quota, Some((2, now + SECOND)));
    }

    #[test]
    fn a_closure_is_never_brought_forward_and_holds_every_call() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let closed = |until| Window {
            closed_until: Some(until),
            quota: None,
            limit: None,
        };
        ledger.merge(closed(now + 10 * SECOND), None, now);
        ledger.merge(closed(now + 2 * SECOND), None, now);
        assert_eq!(
            held_until(&mut ledger, now + 5 * SECOND, false),
            Some(now + 10 * SECOND)
        );
        assert_eq!(held_until(&mut ledger, now + 10 * SECOND, false), None);
    }

    #[test]
    fn a_spent_windows_reset_restores_the_whole_quota_once_across_processes() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let ticket = granted(&mut ledger, now);
        ledger.merge(quota(0, now + SECOND, Some(3)), Some(ticket), now);
        let reset = now + SECOND;
        let tickets: Vec<_> = (0..3).map(|_| granted(&mut ledger, reset)).collect();
        assert_eq!(
            held_until(&mut ledger, reset, true),
            Some(reset + LOOK_AGAIN),
            "the restored quota is all out: ask again when its answers are in"
        );
        // The first answer of the new window replaces what was restored, less the two other
        // requests still out.
        ledger.merge(quota(2, reset + SECOND, Some(3)), Some(tickets[2]), reset);
        assert_eq!(ledger.window(reset).quota, Some((0, reset + SECOND)));
        assert_eq!(held_until(&mut ledger, reset, true), Some(reset + SECOND));
    }

    #[test]
    fn a_spent_window_with_no_whole_quota_given_restores_nothing() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        ledger.merge(quota(0, now + SECOND, None), None, now);
        assert!(held_until(&mut ledger, now, true).is_some());
        let later = now + SECOND;
        let tickets = [granted(&mut ledger, later), granted(&mut ledger, later)];
        assert!(ledger.is_current(later), "two requests out");
        for ticket in tickets {
            ledger.merge(Window::default(), Some(ticket), later);
        }
        assert!(!ledger.is_current(later));
    }

    #[test]
    fn a_ticket_the_ledger_does_not_know_takes_nothing_out() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        granted(&mut ledger, now);
        ledger.merge(quota(4, now + SECOND, None), Some(Ticket::new(90)), now);
        assert_eq!(ledger.window(now).quota, Some((3, now + SECOND)));
    }
}
