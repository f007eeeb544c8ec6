//! What a shared store keeps of one key for every process: its closure, its window's quota as
//! the server last reported it (by the gate's own window rules, on the wall clock, a window's
//! last request sent early where the reset is read to the second among them), the
//! requests reserved and not yet answered, and, where the server publishes no quota, what the
//! fleet learned of how fast it lets the key go (by the gate's own law, `rules/learn/`, on
//! the store's clock). Pure; the Redis store keeps the same ledger (see `redis/`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::{Reservation, Respects, Ticket, Window};
use crate::gate::rules::closure::Closure;
use crate::gate::rules::learn::{Learn, Tag};
use crate::gate::rules::quota::Quota;
use crate::gate::rules::window::ReportedWindow;
use crate::gate::time::Moment;
use crate::throttled::HeldBy;

/// How long a call held while requests are out waits before it asks again: their answers, a
/// round trip away, may give room back (a store's answers wake no call, as a gate's do).
pub(crate) const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// How long a reserved request counts as out without an answer: a process that died with
/// requests out, or answers lost in an outage, hold back no quota longer than this.
pub(crate) const OUT_AT_MOST: Duration = Duration::from_secs(60);

/// How long after a window's last request went early its answer is waited for, before a
/// reset restores without it: it went at most a second before the reset read.
const LAST_ANSWER: Duration = Duration::from_secs(2);

/// How long a request out may hang before it holds no other back, as the learned law counts
/// what is out: a call's default probe timeout.
const HUNG: Duration = Duration::from_secs(10);

/// One key's shared state.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Ledger {
    pub(super) closure: Closure<SystemTime>,
    /// The closure is a guess: no end the server named reaches as far. (A ledger written
    /// before this was kept, or by a process that does not keep it, reads as named, as every
    /// closure was read then: a guess never exceeds the cap, so only its name is wrong.)
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) guessed: bool,
    /// The current window, as the reports fold it (no epochs: a store hears no closures).
    pub(super) reported: ReportedWindow<SystemTime>,
    /// The requests reserved and not yet answered, by ticket: when each stops counting, and
    /// what let it go as far as the learned law is concerned. The server may not have counted
    /// any of them in the reports so far: each is taken off what they said is left (as a gate
    /// takes its requests in flight off).
    pub(super) out: BTreeMap<u64, Reserved>,
    /// Reservations made, ever: the next ticket's number.
    pub(super) issued: u64,
    /// How fast the server lets the fleet go, where it publishes no quota.
    pub(super) learn: Learn<SystemTime>,
    /// Until when a window's last request is held to go early: the calls that ask meanwhile
    /// are others waiting, which a store cannot see in the processes (see [`Ledger::reserve`]).
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) last_held: Option<SystemTime>,
    /// A window ended and its reset restored nothing, though the server gave its whole
    /// quota (it refused what a reset restored): the next request probes, alone.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) reopening: bool,
    /// The ticket of the last such probe: it holds the others while it is out.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) probe: Option<u64>,
}

/// A request reserved and not yet answered.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Reserved {
    /// When it stops counting as out.
    pub(super) until: SystemTime,
    /// What let it go, for the law to judge its answer by.
    pub(super) tag: Option<Tag<SystemTime>>,
    /// How many reports of the window the ledger had taken in when it went.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) seen: u32,
    /// Its call is paced by what the fleet learned: the law may end its guessed closure
    /// sooner. A layer that does not learn keeps its own guess whole.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) learns: bool,
    /// It went on a quota a reset restored, before any answer spoke of that window.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) restored: bool,
    /// It went alone as its window's last, early, on this quota, at this time: its answer
    /// speaks for whichever window it counted in.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) last: Option<(Quota<SystemTime>, SystemTime)>,
}

impl Ledger {
    /// The quota left for new reservations.
    fn available(&self, now: SystemTime) -> Option<Quota<SystemTime>> {
        self.reported.quota(now).map(|quota| Quota {
            remaining: quota.left_beside(self.out()),
            ..quota
        })
    }

    /// How many reserved requests are out.
    fn out(&self) -> u64 {
        u64::try_from(self.out.len()).unwrap_or(u64::MAX)
    }

    /// Whether a window's last request, sent early, is out at `now`, and its answer still
    /// due: it may open the next window before the reset read, or say what it holds after.
    fn last_out(&self, now: SystemTime) -> bool {
        self.out.values().any(|reserved| {
            reserved
                .last
                .is_some_and(|(_, sent)| sent.later(LAST_ANSWER) > now)
        })
    }

    /// Whether answers due may find room in `available`, what is left beside the requests out,
    /// before its reset: the calls it holds then look again every [`LOOK_AGAIN`], as a gate's
    /// queue wakes on each answer. So they may after a reset restored the quota, while a
    /// window's last request sent early is out, and where the reset is read to the second and
    /// all that is left is taken by requests out (the server may have counted them in its
    /// figures already, and the last request goes early only once their answers say one is
    /// left). A countdown names the end within a round trip: a spent window holds till it.
    fn answers_due(&self, available: Quota<SystemTime>, now: SystemTime) -> bool {
        self.reported.is_restored()
            || self.last_out(now)
            || (available.is_spent() && self.out() > 0 && self.reported.sends_last_early())
    }

    /// What is known of the key at `now`, to hold a process's own calls by. A quota whose
    /// answers are due is not told (see [`Ledger::answers_due`]): a process's gate would hold
    /// its calls by it till the reset, where the store lets them look again.
    pub(crate) fn window(&self, now: SystemTime) -> Window {
        let closed_until = self.closure.in_force(now);
        let quota = self
            .available(now)
            .filter(|quota| !self.answers_due(*quota, now));
        Window {
            closed_until,
            quota: quota.map(|quota| (quota.remaining, quota.reset_at)),
            limit: self.reported.limit(),
            guessed: closed_until.is_some() && self.guessed,
            reset_second: quota.and_then(|quota| quota.second),
            spent_by_server: self
                .reported
                .quota(now)
                .is_some_and(|quota| quota.is_spent()),
        }
    }

    /// The latest time the ledger still names at `now`: what it has to say lasts till then;
    /// `None` if it has nothing left to say.
    pub(crate) fn said_until(&self, now: SystemTime) -> Option<SystemTime> {
        [
            self.closure.in_force(now),
            self.reported.quota(now).map(|quota| quota.reset_at),
            self.out.values().map(|reserved| reserved.until).max(),
            self.learn.current_until(now),
        ]
        .into_iter()
        .flatten()
        .filter(|until| *until > now)
        .max()
    }

    /// Whether the fleet learned how fast the key may go, to be kept for its next calls.
    #[cfg(feature = "redis")]
    pub(crate) fn has_learned(&self) -> bool {
        self.learn.is_known()
    }

    /// Whether anything is left to say at `now`.
    pub(crate) fn is_current(&self, now: SystemTime) -> bool {
        self.said_until(now).is_some()
    }

    /// Reserves one request for a call about to go at `now`. A closure holds every call; a
    /// window with nothing left to reserve holds a call that respects the quota until its
    /// reset (or looks again soon, where answers out may find room sooner); a window's last
    /// request read to the second is held as a gate holds it (see `ReportedWindow::last_held`:
    /// the calls that ask while it is held are the others waiting); and, where the server
    /// publishes none, the learned law holds a call that respects what it learned as it holds
    /// a process's own calls. A spent window whose reset has passed restores the whole quota,
    /// where the server gave it, so that the processes together send no more than it at the
    /// reset.
    pub(crate) fn reserve(&mut self, now: SystemTime, respects: Respects) -> Reservation {
        if let Some(until) = self.closure.in_force(now) {
            return Reservation::NotBefore {
                until,
                window: self.window(now),
            };
        }
        self.expire(now);
        // A window's last request sent early is out as its reset passes: its answer says
        // which window it counted in and what the next holds (a log may still count the
        // window's tail), so the reset restores nothing before it comes.
        if respects.quota() && self.last_out(now) && self.reported.quota(now).is_none() {
            return Reservation::NotBefore {
                until: now.later(LOOK_AGAIN),
                window: self.window(now),
            };
        }
        self.restore(now);
        // A window over that restored nothing: one request probes, and its answer says what
        // the next window holds, as at a gate (one that hangs holds none back for long).
        let probe_out = self
            .probe
            .and_then(|probe| self.out.get(&probe))
            .and_then(|probe| probe.tag)
            .is_some_and(|probe| probe.sent().later(HUNG) > now);
        if respects.quota() && probe_out && self.reported.quota(now).is_none() {
            return Reservation::NotBefore {
                until: now.later(LOOK_AGAIN),
                window: self.window(now),
            };
        }
        let quota = self.reported.quota(now).filter(|_| respects.quota());
        if let Some(available) = self.available(now).filter(|_| respects.quota()) {
            if available.is_spent() {
                let until = if self.answers_due(available, now) {
                    now.later(LOOK_AGAIN).min(available.reset_at)
                } else {
                    available.reset_at
                };
                return Reservation::NotBefore {
                    until,
                    window: self.window(now),
                };
            }
        }
        if let Some(quota) = quota {
            // Others wait where requests are out, or where calls asked while the last was held.
            let busy = self.out() > 0 || self.last_held.is_some_and(|until| until > now);
            if let Some(at) = self.reported.last_held(quota, self.out(), busy, now) {
                self.last_held = Some(self.last_held.map_or(at, |until| until.max(at)));
                let until = match self.out() {
                    0 => at,
                    _ => at.min(now.later(LOOK_AGAIN)),
                };
                return Reservation::NotBefore {
                    until,
                    window: self.window(now),
                };
            }
        }
        // Only a call the law paces asks it: asking marks what held the round back.
        let learned = respects.learned() && self.reported.quota(now).is_none();
        let paced = if learned {
            self.learn.next(now, self.out(), HUNG)
        } else {
            None
        };
        // A process's call is not woken by another's answer, as a gate's queue is: one held
        // while requests are out looks again when their answers may have come.
        let paced = paced.map(|until| match self.out() {
            0 => until,
            _ => until.min(now.later(LOOK_AGAIN)),
        });
        if let Some(until) = paced {
            return Reservation::NotBefore {
                until,
                window: self.window(now),
            };
        }
        let tag = self.learn.sent(now, self.out());
        let last = self.reported.sending(quota, self.out(), now);
        // Numbered from the clock's microsecond on: a ledger made anew (the last expired, or
        // was forgotten) issues no number an older one did, whose late answer would take
        // another request's reservation off those out.
        let micros = now.since(SystemTime::UNIX_EPOCH).as_micros();
        self.issued = self
            .issued
            .saturating_add(1)
            .max(micros.try_into().unwrap_or(u64::MAX));
        let reserved = Reserved {
            until: now.later(OUT_AT_MOST),
            tag: Some(tag),
            seen: self.reported.taken(),
            learns: respects.learned(),
            restored: self.reported.is_restored(),
            last: last.map(|quota| (quota, now)),
        };
        self.out.insert(self.issued, reserved);
        if self.reopening && respects.quota() {
            (self.reopening, self.probe) = (false, Some(self.issued));
        }
        Reservation::Granted(Ticket::new(self.issued))
    }

    /// A spent window that has reset by `now` gives the next the whole quota; where the
    /// server gave it and the reset cannot (the server refused what one restored), the next
    /// request probes.
    fn restore(&mut self, now: SystemTime) {
        if self.reported.take_over(now).is_some() && !self.reported.restore(0, now) {
            self.reopening = self.reported.limit().is_some();
        }
    }

    /// Reservations out longer than a request hangs stop counting at `now`: each ended
    /// unanswered, as far as the law is concerned (its round is judged on the answers it has).
    fn expire(&mut self, now: SystemTime) {
        let mut unanswered = Vec::new();
        self.out.retain(|_, reserved| {
            let out = reserved.until > now;
            unanswered.extend(reserved.tag.filter(|_| !out));
            out
        });
        for tag in unanswered {
            self.learn.abandoned(tag, now);
        }
    }

    /// The reservation `ticket` is handed back at `now`, no answer having come: no longer out,
    /// it says nothing of the limit (as a gate's law takes a request that ended unanswered).
    pub(crate) fn give_back(&mut self, ticket: Ticket, now: SystemTime) {
        let tag = self
            .out
            .remove(&ticket.get())
            .and_then(|reserved| reserved.tag);
        if let Some(tag) = tag {
            self.learn.abandoned(tag, now);
        }
    }

    /// Folds in what a response said at `now`, to a request reserved with `ticket` (`None`: one
    /// that went without a reservation), which is no longer out. The later closure stands;
    /// within a window the lowest count. Where the server publishes no quota, the law learns
    /// from it: a closure the answer set is a refusal, and the instruction it named; any other
    /// answer, an acceptance.
    pub(crate) fn merge(&mut self, window: Window, ticket: Option<Ticket>, now: SystemTime) {
        let reserved = ticket.and_then(|ticket| self.out.remove(&ticket.get()));
        let tag = reserved.and_then(|reserved| reserved.tag);
        let learns = reserved.is_some_and(|reserved| reserved.learns);
        let mut closed = window.closed_until.filter(|until| *until > now);
        if closed.is_some() && reserved.is_some_and(|reserved| reserved.restored) {
            self.reported.restore_refused();
        }
        match window.quota.filter(|(_, reset)| *reset > now) {
            Some((remaining, reset_at)) => {
                // A meter speaks: nothing learned stands beside it.
                self.learn.forget();
                let quota = Quota {
                    remaining,
                    reset_at,
                    second: window.reset_second,
                };
                if let Some((before, sent)) = reserved.and_then(|reserved| reserved.last) {
                    self.reported.last_answered(before, quota, sent, now);
                }
                let went = (0, reserved.map(|reserved| reserved.seen));
                self.reported
                    .report(quota, window.limit, (None, false), went, now);
            }
            None if !self.reported.is_known() => match (tag, closed) {
                // A guess ends by the law's next reset, where that is sooner, as at a gate.
                (Some(tag), Some(until)) => {
                    let named = (!window.guessed).then_some(until);
                    let kept = self.learn.refused(tag, now, named, Some(until));
                    if learns {
                        closed = kept;
                    }
                }
                (Some(tag), None) => self.learn.accepted(tag, tag.sent(), now),
                (None, _) => {}
            },
            None => {}
        }
        if let Some(until) = closed {
            match self.closure.until() {
                Some(end) if until < end => {}
                Some(end) if until == end => self.guessed &= window.guessed,
                _ => self.guessed = window.guessed,
            }
            self.closure.extend(until, HeldBy::Fleet);
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
            guessed: false,
            reset_second: None,
            spent_by_server: remaining == 0,
        }
    }

    fn granted(ledger: &mut Ledger, now: SystemTime) -> Ticket {
        match ledger.reserve(now, Respects::ALL) {
            Reservation::Granted(ticket) => ticket,
            held => panic!("held: {held:?}"),
        }
    }

    /// The window a store tells says whether the server itself spent its quota: one the
    /// fleet's requests out took whole is no instruction (their answers may give some back).
    #[test]
    fn a_window_the_fleets_requests_out_took_whole_is_told_apart_from_one_the_server_spent() {
        let now = SystemTime::now();
        let reset = now + 40 * SECOND;
        let mut taken = Ledger::default();
        taken.merge(quota(1, reset, None), None, now);
        granted(&mut taken, now);
        let told = taken.window(now);
        assert_eq!(
            (told.quota, told.spent_by_server),
            (Some((0, reset)), false)
        );
        let mut spent = Ledger::default();
        spent.merge(quota(0, reset, None), None, now);
        let told = spent.window(now);
        assert_eq!((told.quota, told.spent_by_server), (Some((0, reset)), true));
        assert!(!spent.window(reset).spent_by_server, "over at its reset");
    }

    /// The second a reset was written as rides on with the window the store tells: a gate
    /// folds a later reading by the second it names (a token bucket's moved second), and
    /// sends a window's last request early only where the reset was read to the second.
    #[test]
    fn a_window_tells_the_second_its_reset_was_written_as() {
        let now = SystemTime::now();
        let reset = now + 3 * SECOND;
        let second = reset
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut ledger = Ledger::default();
        let read = Window {
            reset_second: Some(second),
            ..quota(4, reset, None)
        };
        ledger.merge(read, None, now);
        assert_eq!(ledger.window(now).reset_second, Some(second));
        let mut counted = Ledger::default();
        counted.merge(quota(4, reset, None), None, now);
        assert_eq!(
            counted.window(now).reset_second,
            None,
            "a countdown names none"
        );
    }

    fn held_until(ledger: &mut Ledger, now: SystemTime, respects: Respects) -> Option<SystemTime> {
        match ledger.reserve(now, respects) {
            Reservation::Granted(_) => None,
            Reservation::NotBefore { until, .. } => Some(until),
        }
    }

    /// A window of 3 spent by its first answer, and one request granted on the whole quota its
    /// reset restored: the ledger, that request's ticket, the first reset and the next.
    fn one_request_on_a_restored_quota() -> (Ledger, Ticket, SystemTime, SystemTime) {
        let now = SystemTime::now();
        let (first_reset, next_reset) = (now + SECOND, now + 2 * SECOND);
        let mut ledger = Ledger::default();
        let first = granted(&mut ledger, now);
        ledger.merge(quota(0, first_reset, Some(3)), Some(first), now);
        let restored = granted(&mut ledger, first_reset);
        (ledger, restored, first_reset, next_reset)
    }

    /// Only a refusal says the server did not give back what a reset restored: an accepted
    /// answer that found less than the whole quota (a log still counting, another client)
    /// leaves the next reset to restore.
    #[test]
    fn a_restored_request_accepted_with_less_than_the_whole_quota_leaves_resets_restoring() {
        let (mut ledger, restored, first_reset, next_reset) = one_request_on_a_restored_quota();
        ledger.merge(quota(0, next_reset, Some(3)), Some(restored), first_reset);
        granted(&mut ledger, next_reset);
        assert!(ledger.reported.is_restored(), "the next reset restored 3");
    }

    #[test]
    fn a_reset_whose_restored_quota_a_process_was_refused_restores_nothing_the_next_time() {
        let (mut ledger, restored, first_reset, next_reset) = one_request_on_a_restored_quota();
        assert!(
            ledger.reported.is_restored(),
            "the reset restored the whole 3"
        );
        let refused = Window {
            closed_until: Some(next_reset),
            ..quota(0, next_reset, Some(3))
        };
        ledger.merge(refused, Some(restored), first_reset);
        let probe = granted(&mut ledger, next_reset);
        assert!(
            !ledger.reported.is_restored(),
            "a restore the server refused is not made again"
        );
        assert_eq!(ledger.window(next_reset).quota, None);
        // The one request that went probes, as at a gate: the others look again until its
        // answer says what the new window holds, and then go by it.
        assert_eq!(
            held_until(&mut ledger, next_reset, Respects::ALL),
            Some(next_reset + LOOK_AGAIN)
        );
        // One that hangs holds none back for long.
        let mut hung = ledger.clone();
        granted(&mut hung, next_reset + HUNG);
        let answered = next_reset + 50 * MS;
        ledger.merge(quota(2, answered + SECOND, Some(3)), Some(probe), answered);
        for _ in 0..2 {
            granted(&mut ledger, answered);
        }
        assert!(held_until(&mut ledger, answered, Respects::ALL).is_some());
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
        assert_eq!(
            held_until(&mut ledger, now, Respects::ALL),
            Some(now + SECOND)
        );
        assert_eq!(
            held_until(&mut ledger, now, Respects::REPORTED),
            Some(now + SECOND),
            "a call that does not learn limits respects the quota reported all the same"
        );
        assert_eq!(
            held_until(&mut ledger, now, Respects::CLOSURES),
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
        assert!(held_until(&mut ledger, now, Respects::ALL).is_some());
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
            held_until(&mut ledger, now, Respects::ALL).is_some(),
            "the one left is out"
        );
        assert!(ledger.is_current(now));
        let later = now + OUT_AT_MOST;
        assert_eq!(held_until(&mut ledger, later, Respects::ALL), None);
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
    fn a_reset_reserves_no_more_than_the_whole_quota_spent_or_not() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let first = granted(&mut ledger, now);
        ledger.merge(quota(5, now + SECOND, Some(20)), Some(first), now);
        let reset = now + SECOND;
        for _ in 0..20 {
            granted(&mut ledger, reset);
        }
        assert!(held_until(&mut ledger, reset, Respects::ALL).is_some());
    }

    #[test]
    fn a_higher_count_reserved_after_the_lowest_came_back_replaces_it() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let first = granted(&mut ledger, now);
        ledger.merge(quota(2, now + SECOND, None), Some(first), now);
        // Reserved after that answer: the server counted it later, and gave some back.
        let later = now + SECOND / 2;
        let second = granted(&mut ledger, later);
        ledger.merge(quota(6, later + SECOND, None), Some(second), later);
        assert_eq!(ledger.window(later).quota, Some((6, later + SECOND)));
    }

    #[test]
    fn a_ledger_tells_whether_the_closure_in_force_is_a_guess() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let closed = |until, guessed| Window {
            closed_until: Some(until),
            guessed,
            ..Window::default()
        };
        ledger.merge(closed(now + 10 * SECOND, false), None, now);
        assert!(!ledger.window(now).guessed, "the server named it");
        ledger.merge(closed(now + 5 * SECOND, true), None, now);
        assert!(
            !ledger.window(now).guessed,
            "a shorter guess changes nothing"
        );
        ledger.merge(closed(now + 20 * SECOND, true), None, now);
        assert!(
            ledger.window(now).guessed,
            "a guess holds past what was named"
        );
        ledger.merge(closed(now + 20 * SECOND, false), None, now);
        assert!(!ledger.window(now).guessed, "named as long as the guess");
        ledger.merge(closed(now + 20 * SECOND, true), None, now);
        assert!(
            !ledger.window(now).guessed,
            "a guess as long as what was named changes nothing"
        );
    }

    #[test]
    fn a_closure_is_never_brought_forward_and_holds_every_call() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let closed = |until| Window {
            closed_until: Some(until),
            quota: None,
            limit: None,
            guessed: false,
            reset_second: None,
            spent_by_server: false,
        };
        ledger.merge(closed(now + 10 * SECOND), None, now);
        ledger.merge(closed(now + 2 * SECOND), None, now);
        assert_eq!(
            held_until(&mut ledger, now + 5 * SECOND, Respects::CLOSURES),
            Some(now + 10 * SECOND)
        );
        assert_eq!(
            held_until(&mut ledger, now + 10 * SECOND, Respects::CLOSURES),
            None
        );
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
            held_until(&mut ledger, reset, Respects::ALL),
            Some(reset + LOOK_AGAIN),
            "the restored quota is all out: ask again when its answers are in"
        );
        // The first answer of the new window replaces what was restored, less the two other
        // requests still out.
        ledger.merge(quota(2, reset + SECOND, Some(3)), Some(tickets[2]), reset);
        assert_eq!(ledger.window(reset).quota, Some((0, reset + SECOND)));
        assert_eq!(
            held_until(&mut ledger, reset, Respects::ALL),
            Some(reset + SECOND)
        );
    }

    #[test]
    fn a_spent_window_with_no_whole_quota_given_restores_nothing() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        ledger.merge(quota(0, now + SECOND, None), None, now);
        assert!(held_until(&mut ledger, now, Respects::ALL).is_some());
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

    /// A request whose call was dropped, or whose reservation no call took, is handed back
    /// unanswered: it says nothing of the limit, as a gate's law takes it. Taken as an
    /// acceptance, five requests that timed out and a refusal would teach the fleet a burst of
    /// five the server never accepted (a first refusal teaches only after an acceptance).
    #[test]
    fn a_reservation_handed_back_teaches_the_law_no_acceptance() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let tickets: Vec<Ticket> = (0..6).map(|_| granted(&mut ledger, now)).collect();
        let heard = now + 20 * MS;
        for ticket in &tickets[..5] {
            ledger.give_back(*ticket, heard);
        }
        assert_eq!(ledger.out(), 1, "the five are no longer out");
        ledger.merge(refused(now + SECOND), Some(tickets[5]), heard);
        assert!(
            !ledger.learn.is_known(),
            "the law learned from requests never answered"
        );
    }

    /// A ledger that learned a burst of 5 a window of 1 s: 5 went at `now` and were accepted,
    /// the 6th was refused until 1 s after. When the refusal was heard.
    fn learned_five(ledger: &mut Ledger, now: SystemTime) -> SystemTime {
        let tickets: Vec<Ticket> = (0..6).map(|_| granted(ledger, now)).collect();
        let heard = now + 20 * MS;
        for ticket in &tickets[..5] {
            ledger.merge(Window::default(), Some(*ticket), heard);
        }
        ledger.merge(refused(now + SECOND), Some(tickets[5]), heard);
        heard
    }

    const MS: Duration = Duration::from_millis(1);

    /// A request whose answer comes after its reservation lapsed, and after its ledger went
    /// (expired, or forgotten to make room) and was made anew: its ticket is none the new
    /// ledger issued, and takes no other request's reservation off those out.
    #[test]
    fn a_ledger_made_anew_issues_no_ticket_an_older_one_did() {
        let now = SystemTime::now();
        let long = granted(&mut Ledger::default(), now);
        let mut anew = Ledger::default();
        let later = now + OUT_AT_MOST + SECOND;
        anew.merge(quota(1, later + 30 * SECOND, None), None, later);
        let newer = granted(&mut anew, later);
        assert_ne!(newer, long);
        anew.merge(Window::default(), Some(long), later + SECOND);
        assert_eq!(anew.out(), 1, "the one out is still out");
        assert!(held_until(&mut anew, later + SECOND, Respects::ALL).is_some());
    }

    /// A reservation whose answer never came ends unanswered when it stops counting as out,
    /// as a gate's law takes a request that ended so: its round is judged on the answers it
    /// has, not left waiting for one that will not come.
    #[test]
    fn a_reservation_that_stops_counting_as_out_ends_unanswered_for_the_law() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        learned_five(&mut ledger, now);
        let open = now + SECOND;
        let tickets: Vec<Ticket> = (0..5).map(|_| granted(&mut ledger, open)).collect();
        for ticket in &tickets[..4] {
            ledger.merge(Window::default(), Some(*ticket), open + 20 * MS);
        }
        // The fifth hangs: while it counts as out, its round waits for its answer.
        ledger.learn.take_judged();
        let meanwhile = open + 30 * SECOND;
        let another = granted(&mut ledger, meanwhile);
        ledger.merge(Window::default(), Some(another), meanwhile + 20 * MS);
        let judged = ledger.learn.take_judged();
        assert!(judged.is_none_or(|judged| judged.sent != 5), "{judged:?}");
        // Past the minute it counts, it is out no longer, and its round is judged.
        ledger.expire(open + OUT_AT_MOST + SECOND);
        assert_eq!(ledger.out(), 0);
        let judged = ledger.learn.take_judged().expect("its round judged");
        assert_eq!(
            (judged.sent, judged.accepted, judged.refused),
            (5, 4, false)
        );
    }

    #[test]
    fn without_meters_the_fleet_learns_by_the_gates_law_and_holds_every_process_by_it() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        learned_five(&mut ledger, now);
        let open = now + SECOND;
        assert!(matches!(
            ledger.reserve(now + 500 * MS, Respects::ALL),
            Reservation::NotBefore { until, .. } if until == open
        ));
        // At the reset the five the window accepted go at once, in any process; the sixth is
        // paced, and a call that does not respect the quota is not held.
        for _ in 0..5 {
            granted(&mut ledger, open);
        }
        assert!(held_until(&mut ledger, open, Respects::ALL).is_some());
        assert_eq!(held_until(&mut ledger, open, Respects::CLOSURES), None);
        assert_eq!(
            held_until(&mut ledger, open, Respects::REPORTED),
            None,
            "a call that does not learn limits is not held by what the fleet learned"
        );
    }

    /// A ledger told nothing by the server: three requests accepted, a fourth refused (a
    /// guessed 400 ms), a fifth accepted after that closure (which gives the law its period),
    /// a sixth refused, closed for `closure` from when it was heard, a guess or not; each
    /// reserved by a call that `respects`. When that refusal was heard.
    fn learned_a_period_then_refused(
        ledger: &mut Ledger,
        now: SystemTime,
        closure: Duration,
        guessed: bool,
        respects: Respects,
    ) -> SystemTime {
        let mut clock = now;
        for nth in 0..6 {
            let ticket = loop {
                match ledger.reserve(clock, respects) {
                    Reservation::Granted(ticket) => break ticket,
                    Reservation::NotBefore { until, .. } => clock = until.max(clock + MS),
                }
            };
            clock += 20 * MS;
            let closed = |until, guessed| Window {
                closed_until: Some(until),
                guessed,
                ..Window::default()
            };
            let answer = match nth {
                3 => closed(clock + 400 * MS, true),
                5 => closed(clock + closure, guessed),
                _ => Window::default(),
            };
            ledger.merge(answer, Some(ticket), clock);
        }
        clock
    }

    #[test]
    fn a_guess_ends_by_the_laws_next_reset_and_a_named_closure_is_kept_whole() {
        const ALL: Respects = Respects::ALL;
        const REPORTED: Respects = Respects::REPORTED;
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let heard = learned_a_period_then_refused(&mut ledger, now, 3 * SECOND, true, ALL);
        let reset = ledger
            .learn
            .current_until(heard)
            .expect("the law guesses a reset");
        assert!(reset > heard && reset < heard + 3 * SECOND);
        // Both are guesses: the law's, from what the key accepted, holds every process.
        assert_eq!(ledger.window(heard).closed_until, Some(reset));
        assert_eq!(held_until(&mut ledger, heard, Respects::ALL), Some(reset));

        // The server's instruction is no guess: it holds whole.
        let mut ledger = Ledger::default();
        let heard = learned_a_period_then_refused(&mut ledger, now, 3 * SECOND, false, ALL);
        assert_eq!(ledger.window(heard).closed_until, Some(heard + 3 * SECOND));

        // A layer that does not learn keeps its own guess whole, as at its gate.
        let mut ledger = Ledger::default();
        let heard = learned_a_period_then_refused(&mut ledger, now, 3 * SECOND, true, REPORTED);
        assert!(ledger.learn.current_until(heard).is_some());
        assert_eq!(ledger.window(heard).closed_until, Some(heard + 3 * SECOND));
    }

    #[test]
    fn a_call_that_does_not_learn_limits_leaves_what_the_law_judges_as_it_was() {
        // Five at the reset, as the law lets them, and a sixth only a call that does not
        // learn would send: all accepted. Nothing the law paces was held back, so the round
        // raises nothing.
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        learned_five(&mut ledger, now);
        ledger.learn.take_judged();
        let open = now + SECOND;
        let mut tickets: Vec<Ticket> = (0..5).map(|_| granted(&mut ledger, open)).collect();
        match ledger.reserve(open, Respects::REPORTED) {
            Reservation::Granted(ticket) => tickets.push(ticket),
            held => panic!("held: {held:?}"),
        }
        let heard = open + 20 * MS;
        for ticket in tickets {
            ledger.merge(Window::default(), Some(ticket), heard);
        }
        // The next round, a period on: the one before is judged as it begins.
        granted(&mut ledger, open + 2 * SECOND);
        let judged = ledger.learn.take_judged().expect("the round judged");
        assert!(
            !judged.burst_search.on_trial,
            "the burst raised for a call it never held: {judged:?}"
        );
    }

    #[test]
    fn with_nothing_out_a_process_held_by_the_law_looks_again_when_it_says() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        learned_five(&mut ledger, now);
        let open = now + SECOND;
        let tickets: Vec<Ticket> = (0..5).map(|_| granted(&mut ledger, open)).collect();
        let heard = open + 20 * MS;
        for ticket in tickets {
            ledger.merge(Window::default(), Some(ticket), heard);
        }
        // No answer is awaited that could free it sooner.
        let until = held_until(&mut ledger, heard, Respects::ALL).expect("held by the law");
        assert!(
            until > heard + LOOK_AGAIN,
            "{:?}",
            until.duration_since(heard)
        );
    }

    #[test]
    fn answers_without_a_meter_teach_nothing_while_a_meter_is_known() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        let first = granted(&mut ledger, now);
        ledger.merge(quota(50, now + 10 * SECOND, None), Some(first), now);
        learned_five(&mut ledger, now);
        assert!(!ledger.learn.is_known());
    }

    #[test]
    fn a_meter_makes_what_the_fleet_learned_moot() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        learned_five(&mut ledger, now);
        let open = now + SECOND;
        let ticket = granted(&mut ledger, open);
        ledger.merge(quota(50, open + 10 * SECOND, None), Some(ticket), open);
        assert!(!ledger.learn.is_known());
        for _ in 0..20 {
            granted(&mut ledger, open);
        }
    }

    #[test]
    fn a_ledger_is_kept_until_the_latest_time_it_names() {
        // A fleet's store keeps each ledger as long as it has something to say: forgetting it
        // at an earlier time would lose a closure or a window still in force.
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        granted(&mut ledger, now);
        assert_eq!(ledger.said_until(now), Some(now + OUT_AT_MOST));
        ledger.merge(quota(1, now + 2 * OUT_AT_MOST, None), None, now);
        assert_eq!(ledger.said_until(now), Some(now + 2 * OUT_AT_MOST));
        ledger.merge(refused(now + 3 * OUT_AT_MOST), None, now);
        assert_eq!(ledger.said_until(now), Some(now + 3 * OUT_AT_MOST));
        assert_eq!(ledger.said_until(now + 3 * OUT_AT_MOST), None);
    }

    #[cfg(feature = "redis")]
    #[test]
    fn a_ledger_that_learned_a_pace_says_so_to_be_remembered() {
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        assert!(!ledger.has_learned());
        learned_five(&mut ledger, now);
        assert!(ledger.has_learned());
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
        // Only the learned pace left: a round under way, over a period after its first answer.
        let mut learned = Ledger::default();
        learned_five(&mut learned, now);
        let opened = now + SECOND;
        let first = granted(&mut learned, opened);
        learned.merge(Window::default(), Some(first), opened);
        learned.out.clear();
        let period = opened + SECOND + 20 * MS;
        assert!(learned.is_current(opened) && !learned.is_current(period));
    }

    /// A window of four whose reset is read to the second, at `reset`.
    fn to_the_second(remaining: u64, reset: SystemTime) -> Window {
        let second = reset.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        Window {
            reset_second: Some(second.as_secs()),
            ..quota(remaining, reset, Some(4))
        }
    }

    #[test]
    fn a_windows_last_request_read_to_the_second_goes_early_alone_as_at_a_gate() {
        let opened = SystemTime::now();
        let reset = opened + 1900 * MS;
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..3).map(|_| granted(&mut ledger, opened)).collect();
        ledger.merge(to_the_second(3, reset), Some(tickets[0]), opened + 50 * MS);
        // The last of the window, with requests out: it looks again when answers may be in.
        let asked = opened + 60 * MS;
        assert_eq!(
            held_until(&mut ledger, asked, Respects::ALL),
            Some(asked + LOOK_AGAIN)
        );
        ledger.merge(to_the_second(2, reset), Some(tickets[1]), opened + 70 * MS);
        ledger.merge(to_the_second(1, reset), Some(tickets[2]), opened + 70 * MS);
        // Nothing out, but a call asked while it was held: it waits for the earliest the
        // window can end, a second before the reset read.
        let earliest = reset - SECOND;
        let asked = asked + LOOK_AGAIN;
        assert_eq!(
            held_until(&mut ledger, asked, Respects::ALL),
            Some(earliest)
        );
        let last = granted(&mut ledger, earliest);
        // Out alone, its answer may open the next window: the calls held look again soon, and
        // no gate is told the spent window to hold its calls by until the reset read.
        let Reservation::NotBefore { until, window } = ledger.reserve(earliest, Respects::ALL)
        else {
            panic!("granted beyond the window");
        };
        assert_eq!((until, window.quota), (earliest + LOOK_AGAIN, None));
        // It found room 1.1 s after the window's first request went: a window lasts no longer
        // from its first request, here the last's own.
        let answered = opened + 1100 * MS;
        let next = reset + SECOND;
        ledger.merge(to_the_second(2, next), Some(last), answered);
        assert_eq!(ledger.window(answered).quota, Some((2, next)));
        let first = granted(&mut ledger, answered);
        assert_eq!(
            held_until(&mut ledger, answered, Respects::ALL),
            Some(answered + LOOK_AGAIN)
        );
        ledger.merge(to_the_second(1, next), Some(first), answered + 50 * MS);
        // Held past a second before the reset read, till that long after the window opened.
        let ended = earliest + 1100 * MS;
        let asked = answered + 60 * MS;
        assert_eq!(held_until(&mut ledger, asked, Respects::ALL), Some(ended));
    }

    /// A window of four read to the second, reset 1.9 s after it opened, three of its
    /// requests answered 50 ms on: one left, nothing out.
    fn one_left_to_the_second() -> (Ledger, SystemTime, SystemTime) {
        let opened = SystemTime::now();
        let reset = opened + 1900 * MS;
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..3).map(|_| granted(&mut ledger, opened)).collect();
        for (left, ticket) in [3, 2, 1].into_iter().zip(tickets) {
            ledger.merge(to_the_second(left, reset), Some(ticket), opened + 50 * MS);
        }
        (ledger, opened, reset)
    }

    #[test]
    fn a_reset_restores_nothing_while_the_windows_last_request_sent_early_is_out() {
        let (mut ledger, _, reset) = one_left_to_the_second();
        // The window's last, alone within a second of the reset read: sent early.
        let last = granted(&mut ledger, reset - SECOND);
        // The reset read passes before its answer comes: a log may still count the window's
        // tail, so the whole quota is not restored; the calls look again soon.
        assert_eq!(
            held_until(&mut ledger, reset, Respects::ALL),
            Some(reset + LOOK_AGAIN)
        );
        assert!(!ledger.reported.is_restored());
        // Were its answer lost, the reset would restore once the answer is overdue.
        let mut lost = ledger.clone();
        granted(&mut lost, reset - SECOND + LAST_ANSWER);
        // Its answer is the next window's first report.
        let answered = reset + 10 * MS;
        ledger.merge(to_the_second(2, reset + SECOND), Some(last), answered);
        assert_eq!(ledger.window(answered).quota, Some((2, reset + SECOND)));
        granted(&mut ledger, answered);
    }

    #[test]
    fn a_windows_last_request_goes_at_once_where_no_other_call_waits_or_is_out() {
        let (mut ledger, opened, _) = one_left_to_the_second();
        // The key's only call: holding it would only delay it.
        granted(&mut ledger, opened + 100 * MS);
    }

    /// Four out, and the first answer leaves two: the server may have counted the others
    /// already. Read to the second, the calls look again as the answers come (one of them may
    /// leave the window's last request to send early), and no process is told the window to
    /// hold its calls by till the reset; a countdown names the end within a round trip.
    #[test]
    fn all_that_is_left_taken_by_requests_out_holds_calls_till_their_answers_where_read_to_the_second()
     {
        let opened = SystemTime::now();
        let reset = opened + 1900 * MS;
        let (answered, asks) = (opened + 30 * MS, opened + 40 * MS);
        for (window, until, told) in [
            (to_the_second(2, reset), asks + LOOK_AGAIN, None),
            (quota(2, reset, Some(4)), reset, Some((0, reset))),
        ] {
            let mut ledger = Ledger::default();
            let tickets: Vec<_> = (0..4).map(|_| granted(&mut ledger, opened)).collect();
            ledger.merge(window, Some(tickets[0]), answered);
            assert_eq!(held_until(&mut ledger, asks, Respects::ALL), Some(until));
            assert_eq!(ledger.window(asks).quota, told);
            // Every answer in, nothing left: no answer is due, and the window holds till its
            // reset, told to every process.
            for ticket in &tickets[1..] {
                ledger.merge(
                    Window {
                        quota: Some((0, reset)),
                        ..window
                    },
                    Some(*ticket),
                    asks,
                );
            }
            assert_eq!(held_until(&mut ledger, asks, Respects::ALL), Some(reset));
            assert_eq!(ledger.window(asks).quota, Some((0, reset)));
        }
    }

    #[test]
    fn a_reset_read_as_a_countdown_sends_the_last_request_at_once() {
        let opened = SystemTime::now();
        let reset = opened + 1900 * MS;
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..3).map(|_| granted(&mut ledger, opened)).collect();
        ledger.merge(quota(3, reset, Some(4)), Some(tickets[0]), opened + 50 * MS);
        granted(&mut ledger, opened + 60 * MS);
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
            guessed: false,
            reset_second: None,
            spent_by_server: true,
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
        let Reservation::NotBefore { window, .. } = ledger.reserve(reset, Respects::ALL) else {
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
    fn a_whole_quota_of_zero_restores_nothing() {
        // A restored window of nothing would hold every call, a look again at a time, for ever.
        let now = SystemTime::now();
        let mut ledger = Ledger::default();
        ledger.merge(quota(0, now + SECOND, Some(0)), None, now);
        assert_eq!(held_until(&mut ledger, now + SECOND, Respects::ALL), None);
    }

    #[test]
    fn a_clock_at_its_end_is_answered_not_panicked_on() {
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(i64::MAX as u64);
        let mut ledger = Ledger::default();
        let ticket = granted(&mut ledger, end);
        ledger.merge(quota(0, end, Some(3)), Some(ticket), end - SECOND);
        assert!(matches!(
            ledger.reserve(end, Respects::ALL),
            Reservation::Granted(_)
        ));
    }

    #[test]
    fn two_readings_of_a_reset_at_the_clocks_end_fold_without_a_panic() {
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(i64::MAX as u64);
        let now = end - 60 * SECOND;
        let mut ledger = Ledger::default();
        ledger.merge(quota(5, end, Some(10)), None, now);
        ledger.merge(quota(4, end, Some(10)), None, now);
        assert_eq!(
            ledger.window(now).quota,
            Some((4, end)),
            "the lower figure stands"
        );
    }
}
