//! What a shared store keeps of one key for every process: its closure, its window's quota as
//! the server last reported it (by the gate's own window rules, on the wall clock), the
//! requests reserved and not yet answered, and what the fleet learned where the server
//! publishes no quota. Pure, on the wall clock; the Redis store's scripts follow the same rules.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::{Reservation, Ticket, Window};
use crate::gate::rules::closure::Closure;
use crate::gate::rules::quota::Quota;
use crate::gate::rules::window::ReportedWindow;
use crate::gate::time::Moment;
use crate::throttled::HeldBy;

/// How long a call held by a restored window that is all reserved waits before it asks again:
/// the answers to the reserved requests, a round trip away, say what the new window holds.
pub(crate) const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// How many windows in a row must pass unrefused before a learned limit is raised by one; a
/// refused raise doubles it, up to [`MOST_PATIENCE`]. One at first: the first window's length
/// is measured to a refusal wherever the cold start met the wall in it, often late, and the
/// fleet paces by that length until a shorter one is measured. A raise is refused at its
/// window's start, where the refusal's wait measures the window closest: raised soon, the
/// fleet stops paying for the long first measurement after two windows rather than five.
pub(crate) const PATIENCE: u32 = 1;
/// The most windows a raise waits for.
pub(crate) const MOST_PATIENCE: u32 = 64;
/// A refused window that accepted fewer than the limit divided by this opened before the
/// server's did (it met the wall of the window before): only its length is taken.
pub(crate) const FAR_BELOW: u64 = 2;

/// How long a reserved request counts as out without an answer: a process that died with
/// requests out, or answers lost in an outage, hold back no quota longer than this.
pub(crate) const OUT_AT_MOST: Duration = Duration::from_secs(60);

/// One key's shared state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    closure: Closure<SystemTime>,
    /// The current window, as the reports fold it (no epochs: a store hears no closures).
    reported: ReportedWindow<SystemTime>,
    /// The requests reserved and not yet answered, by ticket, with when they stop counting.
    /// The server may not have counted any of them in the reports so far: each is taken off
    /// what they said is left (as a gate takes its requests in flight off).
    out: BTreeMap<u64, SystemTime>,
    /// Reservations made, ever: the next ticket's number.
    issued: u64,
    /// Where the server publishes no quota: when the fleet's current window opened, and how
    /// many tickets were issued before it.
    opened: Option<(SystemTime, u64)>,
    /// The window a refusal ended, while its other answers come in.
    refused: Option<Refused>,
    /// What the fleet's refusals taught of the quota the server does not publish.
    learned: Option<Learned>,
}

/// A window of the fleet's that a refusal ended: its length, the tickets reserved in it
/// (`from` exclusive, `to` inclusive), and how many of them were refused so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Refused {
    span: Duration,
    from: u64,
    to: u64,
    refusals: u64,
}

/// A limit learned from refusals: the requests the fleet had accepted in a window when the
/// server refused the next, and the window's length, from its opening to the end of the
/// refusal's wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Learned {
    limit: u64,
    span: Duration,
    /// Windows passed unrefused since the limit was last set.
    unrefused: u32,
    /// How many must pass before the limit is raised.
    patience: u32,
    /// The limit was raised and no window has passed unrefused since.
    raised: bool,
}

impl Ledger {
    /// The quota left for new reservations.
    fn available(&self, now: SystemTime) -> Option<Quota<SystemTime>> {
        self.reported.quota(now).map(|quota| Quota {
            remaining: quota.left_beside(self.out()),
            reset_at: quota.reset_at,
        })
    }

    /// How many reserved requests are out.
    fn out(&self) -> u64 {
        u64::try_from(self.out.len()).unwrap_or(u64::MAX)
    }

    /// What is known of the key at `now`, to hold a process's own calls by.
    pub(crate) fn window(&self, now: SystemTime) -> Window {
        Window {
            closed_until: self.closure.in_force(now),
            quota: self
                .available(now)
                .filter(|_| !self.reported.is_restored())
                .map(|quota| (quota.remaining, quota.reset_at)),
            limit: self.reported.limit(),
        }
    }

    /// Whether anything is left to say at `now`.
    pub(crate) fn is_current(&self, now: SystemTime) -> bool {
        self.closure.in_force(now).is_some()
            || self.reported.quota(now).is_some()
            || self.out.values().any(|until| *until > now)
            || self
                .opened
                .zip(self.learned)
                .is_some_and(|((opened, _), learned)| opened.later(learned.span) > now)
    }

    /// Reserves one request for a call about to go at `now`. A closure holds every call; a
    /// window with nothing left to reserve holds a call that respects the quota (`metered`)
    /// until its reset. A spent window whose reset has passed restores the whole quota, where
    /// the server gave it, so that the processes together send no more than it at the reset.
    pub(crate) fn reserve(&mut self, now: SystemTime, metered: bool) -> Reservation {
        if let Some(until) = self.closure.in_force(now) {
            return Reservation::NotBefore {
                until,
                window: self.window(now),
            };
        }
        self.out.retain(|_, until| *until > now);
        self.restore(now);
        if let Some(quota) = self.available(now) {
            if metered && quota.is_spent() {
                let until = if self.reported.is_restored() {
                    now.later(LOOK_AGAIN)
                } else {
                    quota.reset_at
                };
                return Reservation::NotBefore {
                    until,
                    window: self.window(now),
                };
            }
        }
        if self.reported.quota(now).is_none() {
            if let Some(until) = self.learned_hold(now).filter(|_| metered) {
                return Reservation::NotBefore {
                    until,
                    window: Window {
                        quota: Some((0, until)),
                        limit: self.learned.map(|learned| learned.limit),
                        ..self.window(now)
                    },
                };
            }
        }
        self.issued += 1;
        self.out.insert(self.issued, now.later(OUT_AT_MOST));
        Reservation::Granted(Ticket::new(self.issued))
    }

    /// Where the server publishes no quota, the fleet's window at `now`: opened by its first
    /// reservation, over after the learned length (an unrefused one counts toward a raise),
    /// and a refused one measured once its refusals are in. Until when a call is held, if the
    /// learned limit is all reserved in it.
    fn learned_hold(&mut self, now: SystemTime) -> Option<SystemTime> {
        if let (Some((opened, _)), Some(learned)) = (self.opened, self.learned.as_mut()) {
            if now >= opened.later(learned.span) {
                learned.unrefused += 1;
                learned.raised = learned.unrefused >= learned.patience;
                if learned.raised {
                    learned.limit += 1;
                    learned.unrefused = 0;
                }
                self.opened = None;
            }
        }
        if let (Some((opened, _)), None) = (self.opened, self.learned) {
            // Nothing learned yet: a window is measured over at most this long, so that a
            // refusal after a long quiet run does not teach a limit over all of it.
            if now >= opened.later(OUT_AT_MOST) {
                self.opened = None;
            }
        }
        if self.opened.is_none() {
            if let Some(refused) = self.refused.take() {
                self.learn(refused);
            }
        }
        let (opened, issued_before) = *self.opened.get_or_insert((now, self.issued));
        let learned = self.learned?;
        (self.issued - issued_before >= learned.limit).then_some(opened.later(learned.span))
    }

    /// A refusal closing the key until `until`, to the request with `ticket`, where the
    /// server publishes no quota. The first of a window ends it, and measures its length (to
    /// `until`); each counts against the requests reserved in the window before the first,
    /// whose answers come back in any order.
    fn refusal(&mut self, until: SystemTime, ticket: Option<Ticket>) {
        if let Some((opened, issued_before)) = self.opened.take() {
            self.refused = Some(Refused {
                span: until.duration_since(opened).unwrap_or_default(),
                from: issued_before,
                to: self.issued,
                refusals: 0,
            });
        }
        if let (Some(refused), Some(ticket)) = (self.refused.as_mut(), ticket) {
            if (refused.from + 1..=refused.to).contains(&ticket.get()) {
                refused.refusals += 1;
            }
        }
    }

    /// What a refused window measured: the requests it accepted are the limit. A window that
    /// accepted none, or far fewer than the limit, opened before the server's did: only its
    /// length is taken, and only to lengthen the window. One longer than [`OUT_AT_MOST`]
    /// teaches nothing.
    fn learn(&mut self, refused: Refused) {
        let accepted = (refused.to - refused.from).saturating_sub(refused.refusals);
        let span = refused.span;
        if span > OUT_AT_MOST {
            // Longer than any wait a call keeps: not a window to pace by.
            return;
        }
        self.learned = Some(match self.learned {
            Some(known) if accepted == 0 || accepted < known.limit / FAR_BELOW => Learned {
                span: known.span.max(span),
                ..known
            },
            _ if accepted == 0 => return,
            // Each length measured runs past the server's window by the refusal's place in it
            // and its rounding: the shortest is the closest.
            known => Learned {
                limit: accepted,
                span: known.map_or(span, |known| known.span.min(span)),
                unrefused: 0,
                patience: match known {
                    Some(known) if known.raised => (known.patience * 2).min(MOST_PATIENCE),
                    Some(known) => known.patience,
                    None => PATIENCE,
                },
                raised: false,
            },
        });
    }

    /// A spent window that has reset by `now` gives the next the whole quota.
    fn restore(&mut self, now: SystemTime) {
        if let Some(over) = self.reported.take_over(now) {
            self.reported.restore(over, self.out(), 0, now);
        }
    }

    /// Folds in what a response said at `now`, to a request reserved with `ticket` (`None`: one
    /// that went without a reservation), which is no longer out. The later closure stands;
    /// within a window the lowest count.
    pub(crate) fn merge(&mut self, window: Window, ticket: Option<Ticket>, now: SystemTime) {
        if let Some(ticket) = ticket {
            self.out.remove(&ticket.get());
        }
        if let Some(until) = window.closed_until.filter(|until| *until > now) {
            if !self.reported.is_known() && window.quota.is_none() {
                self.refusal(until, ticket);
            }
            self.closure.extend(until, HeldBy::Fleet);
        }
        self.reported.report_limit(window.limit);
        let Some((remaining, reset_at)) = window.quota.filter(|(_, reset)| *reset > now) else {
            return;
        };
        // A meter speaks: nothing learned stands beside it.
        self.learned = None;
        self.refused = None;
        self.opened = None;
        let quota = Quota {
            remaining,
            reset_at,
        };
        self.reported.report(quota, None, None, 0, now);
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

    fn refused(until: SystemTime) -> Window {
        Window {
            closed_until: Some(until),
            ..Window::default()
        }
    }

    /// A ledger that learned 5 a window of 1 s: 5 went, the 6th was refused until 1 s after
    /// the window opened.
    fn learned_five(now: SystemTime) -> Ledger {
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..6).map(|_| granted(&mut ledger, now)).collect();
        ledger.merge(refused(now + SECOND), Some(tickets[5]), now);
        ledger
    }

    #[test]
    fn without_meters_the_fleet_learns_the_limit_its_refusals_show_and_keeps_to_it() {
        let now = SystemTime::now();
        let mut ledger = learned_five(now);
        let opened = now + SECOND;
        for _ in 0..5 {
            granted(&mut ledger, opened);
        }
        assert_eq!(held_until(&mut ledger, opened, true), Some(opened + SECOND));
        assert_eq!(
            held_until(&mut ledger, opened, false),
            None,
            "a call that does not respect the quota goes"
        );
        let next = opened + SECOND;
        assert!(matches!(
            ledger.reserve(next, true),
            Reservation::Granted(_)
        ));
    }

    #[test]
    fn a_learned_limit_is_raised_after_windows_pass_unrefused_and_a_refused_raise_waits_longer() {
        let now = SystemTime::now();
        let mut ledger = learned_five(now);
        let mut opened = now + SECOND;
        let sent_in = |ledger: &mut Ledger, at: SystemTime| {
            let mut sent = 0;
            // Bounded: a ledger that never holds must fail the test, not hang it.
            while sent < 100 && matches!(ledger.reserve(at, true), Reservation::Granted(_)) {
                sent += 1;
            }
            sent
        };
        // Raised after one window unrefused; each refused raise (at its 6th) puts the limit
        // back to 5 and doubles the windows before the next.
        for patience in [1, 2, 4, 8] {
            let mut sent = Vec::new();
            for _ in 0..=patience {
                sent.push(sent_in(&mut ledger, opened));
                opened += SECOND;
            }
            let mut expected = vec![5; patience];
            expected.push(6);
            assert_eq!(sent, expected, "patience {patience}");
            let raised = opened - SECOND;
            let ticket = Ticket::new(ledger.issued);
            ledger.merge(refused(opened), Some(ticket), raised);
        }
    }

    #[test]
    fn a_refusal_of_a_windows_first_request_lengthens_the_window_and_keeps_the_limit() {
        let now = SystemTime::now();
        let mut ledger = learned_five(now);
        let opened = now + SECOND;
        let first = granted(&mut ledger, opened);
        ledger.merge(refused(opened + 3 * SECOND), Some(first), opened);
        let reopened = opened + 3 * SECOND;
        for _ in 0..5 {
            granted(&mut ledger, reopened);
        }
        assert_eq!(
            held_until(&mut ledger, reopened, true),
            Some(reopened + 3 * SECOND)
        );
    }

    #[test]
    fn a_meter_makes_the_fleet_forget_what_it_learned() {
        let now = SystemTime::now();
        let mut ledger = learned_five(now);
        let opened = now + SECOND;
        ledger.merge(quota(50, opened + SECOND, None), None, now);
        // Less the five requests still out (the refused one was answered).
        for _ in 0..45 {
            granted(&mut ledger, opened);
        }
        assert_eq!(held_until(&mut ledger, opened, true), Some(opened + SECOND));
        assert_eq!(ledger.learned, None);
    }

    #[test]
    fn answers_out_of_order_measure_the_limit_by_the_requests_refused_not_by_which() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..8).map(|_| granted(&mut ledger, now)).collect();
        // The second and the seventh reserved arrived last: those two were refused.
        ledger.merge(refused(now + SECOND), Some(tickets[1]), now);
        ledger.merge(refused(now + SECOND), Some(tickets[6]), now);
        let opened = now + SECOND;
        for _ in 0..6 {
            granted(&mut ledger, opened);
        }
        assert_eq!(held_until(&mut ledger, opened, true), Some(opened + SECOND));
    }

    #[test]
    fn a_refusal_after_a_long_quiet_run_teaches_no_limit_over_all_of_it() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        for _ in 0..600 {
            let answered = granted(&mut ledger, now);
            ledger.merge(Window::default(), Some(answered), now);
        }
        let later = now + 10 * OUT_AT_MOST;
        let refused_one = granted(&mut ledger, later);
        ledger.merge(refused(later + SECOND), Some(refused_one), later);
        let reopened = later + SECOND;
        for _ in 0..100 {
            granted(&mut ledger, reopened);
        }
        assert_eq!(
            ledger.learned, None,
            "a window of one request refused teaches nothing"
        );
    }

    #[test]
    fn a_ledger_tells_of_a_closure_or_window_until_the_instant_it_ends_and_not_at_it() {
        // The gates hold calls by what the ledger tells, and a full store forgets only the
        // ledgers that are not current: each kind of time is over at the instant it names.
        let now = SystemTime::now();
        let end = now + SECOND;
        let mut closed = Ledger::default();
        closed.merge(refused(end), None, now);
        assert_eq!(closed.window(now).closed_until, Some(end));
        assert_eq!(closed.window(end).closed_until, None);
        assert!(closed.is_current(now) && !closed.is_current(end));
        let mut metered = Ledger::default();
        metered.merge(quota(2, end, None), None, now);
        assert_eq!(metered.window(now).quota, Some((2, end)));
        assert_eq!(metered.window(end).quota, None);
        assert!(metered.is_current(now) && !metered.is_current(end));
        let mut out = Ledger::default();
        granted(&mut out, now);
        assert!(out.is_current(now) && !out.is_current(now + OUT_AT_MOST));
        // Only the learned window left: the five accepted and the next window's first answered.
        let mut learned = learned_five(now);
        for ticket in 1..=5 {
            learned.merge(Window::default(), Some(Ticket::new(ticket)), now);
        }
        let opened = now + SECOND;
        let first = granted(&mut learned, opened);
        learned.merge(Window::default(), Some(first), opened);
        assert!(learned.is_current(opened) && !learned.is_current(opened + SECOND));
    }

    #[test]
    fn an_answer_whose_closure_and_meter_end_at_its_own_instant_changes_nothing() {
        let now = SystemTime::now();
        let reset = now + SECOND;
        let mut ledger = Ledger::default();
        ledger.merge(quota(0, reset, None), None, now);
        let before = ledger.clone();
        let over = Window {
            closed_until: Some(reset),
            quota: Some((0, reset)),
            limit: None,
        };
        ledger.merge(over, None, reset);
        assert_eq!(ledger, before);
        // The window that reset is replaced by the next one's report, not folded with it.
        ledger.merge(quota(5, reset + SECOND, None), None, reset);
        assert_eq!(ledger.window(reset).quota, Some((5, reset + SECOND)));
    }

    #[test]
    fn a_restored_window_is_told_to_no_gate_and_the_first_report_replaces_it_whole() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        ledger.merge(quota(0, now + SECOND, Some(2)), None, now);
        let reset = now + SECOND;
        let tickets = [granted(&mut ledger, reset), granted(&mut ledger, reset)];
        // The restored quota is a guess: a gate that took it would hold its calls for a
        // whole window where the store has them look again in a moment.
        let Reservation::NotBefore { window, .. } = ledger.reserve(reset, true) else {
            panic!("granted past the restored quota");
        };
        assert_eq!(window.quota, None);
        // The server's reset stands, not the restored one's (a second earlier).
        ledger.merge(
            quota(1, reset + 2 * SECOND, Some(2)),
            Some(tickets[0]),
            reset,
        );
        assert_eq!(ledger.window(reset).quota, Some((0, reset + 2 * SECOND)));
    }

    #[test]
    fn a_call_held_by_the_learned_limit_is_told_the_window_is_spent_until_it_ends() {
        // So that its process's own gate holds the other calls there, without asking.
        let now = SystemTime::now();
        let mut ledger = learned_five(now);
        let opened = now + SECOND;
        for _ in 0..5 {
            granted(&mut ledger, opened);
        }
        let Reservation::NotBefore { until, window } = ledger.reserve(opened, true) else {
            panic!("granted past the learned limit");
        };
        let spent = Window {
            closed_until: None,
            quota: Some((0, until)),
            limit: Some(5),
        };
        assert_eq!(window, spent);
    }

    #[test]
    fn a_refusal_to_a_request_reserved_before_the_window_counts_against_nothing() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let before: Vec<_> = (0..6).map(|_| granted(&mut ledger, now)).collect();
        // The fifth is refused; the sixth's answer is slow.
        ledger.merge(refused(now + SECOND), Some(before[4]), now);
        let opened = now + SECOND;
        let tickets: Vec<_> = (0..5).map(|_| granted(&mut ledger, opened)).collect();
        ledger.merge(refused(opened + SECOND), Some(tickets[4]), opened);
        // The sixth, reserved in the window before, comes back refused as well.
        ledger.merge(refused(opened + SECOND), Some(before[5]), opened);
        let reopened = opened + SECOND;
        for _ in 0..4 {
            granted(&mut ledger, reopened);
        }
        assert!(held_until(&mut ledger, reopened, true).is_some());
    }

    #[test]
    fn a_refused_window_of_up_to_a_minute_teaches_and_a_longer_one_does_not() {
        let now = SystemTime::now();
        let learned = |span: Duration| {
            let mut ledger = Ledger::default();
            let tickets: Vec<_> = (0..3).map(|_| granted(&mut ledger, now)).collect();
            ledger.merge(refused(now + span), Some(tickets[2]), now);
            granted(&mut ledger, now + span);
            ledger.learned.map(|learned| learned.limit)
        };
        assert_eq!(learned(OUT_AT_MOST), Some(2));
        assert_eq!(learned(OUT_AT_MOST + SECOND), None);
    }

    #[test]
    fn a_refused_window_that_accepted_under_half_the_limit_keeps_it_and_half_sets_it() {
        let now = SystemTime::now();
        let limit_after = |accepted: usize| {
            let mut ledger = learned_five(now);
            let opened = now + SECOND;
            let tickets: Vec<_> = (0..=accepted)
                .map(|_| granted(&mut ledger, opened))
                .collect();
            ledger.merge(refused(opened + SECOND), tickets.last().copied(), opened);
            granted(&mut ledger, opened + SECOND);
            ledger.learned.map(|learned| learned.limit)
        };
        assert_eq!(
            limit_after(1),
            Some(5),
            "opened before the server's window did"
        );
        assert_eq!(limit_after(2), Some(2));
    }

    #[test]
    fn a_refusal_of_a_limit_that_was_not_raised_leaves_the_patience_as_it_was() {
        let now = SystemTime::now();
        let mut ledger = learned_five(now);
        let opened = now + SECOND;
        let tickets: Vec<_> = (0..5).map(|_| granted(&mut ledger, opened)).collect();
        ledger.merge(refused(opened + SECOND), Some(tickets[4]), opened);
        granted(&mut ledger, opened + SECOND);
        let learned = ledger.learned.expect("a limit learned");
        assert_eq!((learned.limit, learned.patience), (4, PATIENCE));
    }

    #[test]
    fn a_refusal_that_reports_a_meter_teaches_no_learned_limit() {
        // A 429 whose meter resets as it is read (`t=0`): the server publishes its quota.
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..3).map(|_| granted(&mut ledger, now)).collect();
        let refused = Window {
            closed_until: Some(now + SECOND),
            quota: Some((0, now)),
            limit: None,
        };
        ledger.merge(refused, Some(tickets[2]), now);
        granted(&mut ledger, now + SECOND);
        assert_eq!(ledger.learned, None);
    }

    #[test]
    fn a_whole_quota_of_zero_restores_nothing() {
        // A restored window of nothing would hold every call, a look again at a time, for ever.
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        ledger.merge(quota(0, now + SECOND, Some(0)), None, now);
        assert_eq!(held_until(&mut ledger, now + SECOND, true), None);
    }

    #[test]
    fn a_clock_at_its_end_is_answered_not_panicked_on() {
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(i64::MAX as u64);
        let mut ledger = Ledger::default();
        let ticket = granted(&mut ledger, end);
        ledger.merge(quota(0, end, Some(3)), Some(ticket), end - SECOND);
        assert!(matches!(ledger.reserve(end, true), Reservation::Granted(_)));
    }
}
