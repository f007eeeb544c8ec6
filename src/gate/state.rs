//! One key's gate: when requests may go. Pure: callers pass `now`, and waking a waiter is the
//! only effect.
//!
//! Invariants, each with the rule it serves:
//! - `closed_until` only ever moves later: a shorter instruction arriving while a longer one
//!   is in force changes nothing (never brought forward).
//! - Requests leave in arrival order; a new call never overtakes a waiter.
//! - After a closure, the first request out is a probe, alone: nobody else goes until it comes
//!   back, so the episode costs at most that one refusal if the server still refuses.
//! - Where the server gave its remaining quota, no more requests are out than it said
//!   remain (`in_flight` counts those not yet answered); where it gave only its policy, they
//!   leave at the policy's rate; where it gave nothing, one at a time, each after the previous
//!   came back healthy, never two in the same instant.
//! - Only the head of the queue waits for time to pass: one timer per gate, not one per call.

use std::collections::VecDeque;
use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

/// The least spacing between two releases when the server's rate is unknown.
pub(crate) const SPACING: Duration = Duration::from_millis(1);

/// How long a gate that owes a probe is remembered after its closure ended, with nobody
/// waiting: long enough for calls arriving soon after to be let out one at a time.
const PROBE_MEMORY: Duration = Duration::from_secs(60);

/// The quota the server last reported, while its window lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Quota {
    pub(crate) remaining: u64,
    pub(crate) reset_at: Instant,
}

/// What the server said about the key in one response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Report {
    /// The response was rate limited: no request before this.
    pub(crate) closed_until: Option<Instant>,
    /// The binding meter's remaining quota and reset.
    pub(crate) quota: Option<Quota>,
    /// The server's policy as a spacing between requests (window / limit).
    pub(crate) interval: Option<Duration>,
}

/// How a request was let through, as its response must be recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Admission {
    /// Nothing else goes until its response is recorded.
    pub(crate) probe: bool,
    /// It counts in `in_flight` (the gate existed when it was let through).
    pub(crate) counted: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Calls go as far as the quota allows.
    Open,
    /// The gate was closed: the next request out is a probe.
    Probe,
    /// A probe is out: nothing else goes until it comes back.
    Probing,
    /// The probe came back healthy: waiters leave, paced.
    Releasing,
}

/// Whether a request may go now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    /// Yes; `probe` if nothing else may go until its response is recorded.
    Go { probe: bool },
    /// Not before this instant.
    At(Instant),
    /// Not until a probe comes back.
    Blocked,
}

struct Slot {
    id: u64,
    waker: Option<Waker>,
    /// The waiter left; its slot is dropped when it reaches the front.
    gone: bool,
}

/// The state of one key's gate.
pub(crate) struct Gate {
    closed_until: Option<Instant>,
    quota: Option<Quota>,
    interval: Option<Duration>,
    in_flight: u32,
    phase: Phase,
    last_release: Option<Instant>,
    // Ordered by id; the front is always a waiter that has not left.
    queue: VecDeque<Slot>,
    waiting: usize,
    next_id: u64,
}

impl Gate {
    pub(crate) fn new() -> Self {
        Gate {
            closed_until: None,
            quota: None,
            interval: None,
            in_flight: 0,
            phase: Phase::Open,
            last_release: None,
            queue: VecDeque::new(),
            waiting: 0,
            next_id: 0,
        }
    }

    /// A call arriving: admitted at once (`Ok(probe)`), or given a place in the queue
    /// (`Err(id)`).
    pub(crate) fn arrive(&mut self, now: Instant) -> Result<bool, u64> {
        if self.waiting == 0 {
            if let Release::Go { probe } = self.release(now) {
                self.admit(probe, now);
                return Ok(probe);
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back(Slot {
            id,
            waker: None,
            gone: false,
        });
        self.waiting += 1;
        Err(id)
    }

    /// How long a call arriving now would wait at least: until the gate reopens.
    pub(crate) fn closed_for(&self, now: Instant) -> Option<Duration> {
        let spent_until = self
            .quota
            .filter(|quota| quota.remaining <= u64::from(self.in_flight))
            .map(|quota| quota.reset_at);
        self.closed_until
            .max(spent_until)
            .filter(|until| *until > now)
            .map(|until| until - now)
    }

    /// The waiter `id` asks whether it may go; `waker` is woken when that may have changed.
    /// `Ok(probe)` lets it through; `Err(Some(at))` asks it to look again at `at`; `Err(None)`,
    /// when woken.
    pub(crate) fn poll_waiter(
        &mut self,
        id: u64,
        now: Instant,
        waker: &Waker,
    ) -> Result<bool, Option<Instant>> {
        let Some(position) = self.position(id) else {
            // Not queued: nothing holds it back.
            self.admit(false, now);
            return Ok(false);
        };
        let look_again = if position == 0 {
            match self.release(now) {
                Release::Go { probe } => {
                    self.queue.pop_front();
                    self.waiting -= 1;
                    self.drop_gone_front();
                    self.admit(probe, now);
                    self.wake_head();
                    return Ok(probe);
                }
                Release::At(at) => Some(at),
                Release::Blocked => None,
            }
        } else {
            None
        };
        let slot = &mut self.queue[position];
        if !slot
            .waker
            .as_ref()
            .is_some_and(|known| known.will_wake(waker))
        {
            slot.waker = Some(waker.clone());
        }
        Err(look_again)
    }

    /// The waiter `id` gives up (its call was dropped, or its budget ran out).
    pub(crate) fn leave(&mut self, id: u64) {
        let Some(position) = self.position(id) else {
            return;
        };
        self.waiting -= 1;
        if position == 0 {
            self.queue.pop_front();
            self.drop_gone_front();
            self.wake_head();
        } else {
            // Marked, not removed: leaving stays cheap with thousands waiting.
            let slot = &mut self.queue[position];
            slot.gone = true;
            slot.waker = None;
        }
    }

    /// A response came back with `report`, for a request let through as `admitted`.
    pub(crate) fn answered(&mut self, admitted: Admission, report: Report, now: Instant) {
        if admitted.counted {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        if let Some(until) = report.closed_until {
            self.close_until(until);
        } else if admitted.probe && self.phase == Phase::Probing {
            self.phase = if self.waiting == 0 {
                Phase::Open
            } else {
                Phase::Releasing
            };
        }
        if let Some(quota) = report.quota {
            self.quota = Some(match self.quota {
                // Within one window the server's count only falls: the lowest figure is the
                // latest, whatever order responses came back in.
                Some(known) if known.reset_at > now => Quota {
                    remaining: known.remaining.min(quota.remaining),
                    reset_at: known.reset_at.max(quota.reset_at),
                },
                _ => quota,
            });
        }
        if report.interval.is_some() {
            self.interval = report.interval;
        }
        self.wake_head();
    }

    /// A request let through as `admitted` ended without a response (dropped, or a transport
    /// error): that says nothing about the limit, so a probe is owed again.
    pub(crate) fn abandoned(&mut self, admitted: Admission) {
        if admitted.counted {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        if admitted.probe && self.phase == Phase::Probing {
            self.phase = Phase::Probe;
        }
        self.wake_head();
    }

    /// Whether the gate remembers nothing a later call needs, so it may be forgotten.
    pub(crate) fn is_idle(&self, now: Instant) -> bool {
        let probe_owed = self.phase == Phase::Probe
            && self
                .closed_until
                .is_some_and(|until| until + PROBE_MEMORY > now);
        self.waiting == 0
            && self.in_flight == 0
            && self.closed_until.is_none_or(|until| until <= now)
            && self.quota.is_none_or(|quota| quota.reset_at <= now)
            && self.phase != Phase::Probing
            && !probe_owed
    }

    /// How many calls wait.
    pub(crate) fn waiters(&self) -> usize {
        self.waiting
    }

    /// How many requests were let through and not answered.
    pub(crate) fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// The quota as last reported, while its window lasts.
    pub(crate) fn quota(&self, now: Instant) -> Option<Quota> {
        self.quota.filter(|quota| quota.reset_at > now)
    }

    /// Closes the gate until `until`, unless it is closed longer already.
    fn close_until(&mut self, until: Instant) {
        self.closed_until = self.closed_until.max(Some(until));
        self.phase = Phase::Probe;
    }

    /// Whether the next request may go now, and on what terms.
    fn release(&mut self, now: Instant) -> Release {
        if let Some(until) = self.closed_until.filter(|until| *until > now) {
            return Release::At(until);
        }
        if self.quota.is_some_and(|quota| quota.reset_at <= now) {
            self.quota = None;
        }
        if let Some(quota) = self.quota {
            if quota.remaining <= u64::from(self.in_flight) {
                // A spent window: closed until it resets.
                self.close_until(quota.reset_at);
                return Release::At(quota.reset_at);
            }
        }
        match self.phase {
            Phase::Probing => Release::Blocked,
            Phase::Probe => Release::Go { probe: true },
            Phase::Open => Release::Go { probe: false },
            // The server said how much is left: up to that, at once.
            Phase::Releasing if self.quota.is_some() => Release::Go { probe: false },
            Phase::Releasing => match self.next_release().filter(|at| *at > now) {
                Some(at) => Release::At(at),
                // At its policy's rate; or, knowing nothing, one at a time.
                None => Release::Go {
                    probe: self.interval.is_none(),
                },
            },
        }
    }

    fn admit(&mut self, probe: bool, now: Instant) {
        self.in_flight += 1;
        if probe {
            self.phase = Phase::Probing;
        }
        if self.phase != Phase::Open {
            self.last_release = Some(now);
        }
        if self.waiting == 0 && self.phase == Phase::Releasing {
            self.phase = Phase::Open;
        }
    }

    /// The earliest the next paced release may go: the policy's spacing (or the least
    /// spacing) after the last one.
    fn next_release(&self) -> Option<Instant> {
        let spacing = self.interval.unwrap_or(SPACING).max(SPACING);
        self.last_release.map(|last| last + spacing)
    }

    fn position(&self, id: u64) -> Option<usize> {
        self.queue
            .binary_search_by_key(&id, |slot| slot.id)
            .ok()
            .filter(|position| !self.queue[*position].gone)
    }

    fn drop_gone_front(&mut self) {
        while self.queue.front().is_some_and(|slot| slot.gone) {
            self.queue.pop_front();
        }
    }

    fn wake_head(&mut self) {
        if let Some(waker) = self.queue.front_mut().and_then(|slot| slot.waker.take()) {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    const MS: Duration = Duration::from_millis(1);
    const SECOND: Duration = Duration::from_secs(1);

    /// A waker that counts its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        (count.clone(), Waker::from(count))
    }

    const LET_THROUGH: Admission = Admission {
        probe: false,
        counted: true,
    };
    const PROBE: Admission = Admission {
        probe: true,
        counted: true,
    };

    fn closed(until: Instant) -> Report {
        Report {
            closed_until: Some(until),
            ..Report::default()
        }
    }

    fn quota(remaining: u64, reset_at: Instant) -> Report {
        Report {
            quota: Some(Quota {
                remaining,
                reset_at,
            }),
            ..Report::default()
        }
    }

    /// A gate closed until `now + wait` by a 429 to one request, that request answered.
    fn closed_gate(now: Instant, wait: Duration) -> Gate {
        let mut gate = Gate::new();
        assert_eq!(gate.arrive(now), Ok(false));
        gate.answered(LET_THROUGH, closed(now + wait), now);
        gate
    }

    #[test]
    fn an_open_gate_lets_calls_through_without_queueing() {
        let now = Instant::now();
        let mut gate = Gate::new();
        for _ in 0..3 {
            assert_eq!(gate.arrive(now), Ok(false));
        }
        assert_eq!(gate.in_flight(), 3);
        assert_eq!(gate.waiters(), 0);
    }

    #[test]
    fn a_closed_gate_queues_and_the_head_waits_for_the_instructed_time() {
        let now = Instant::now();
        let mut gate = closed_gate(now, 2 * SECOND);
        let (_, waker) = waker();
        let id = gate.arrive(now).unwrap_err();
        assert_eq!(
            gate.poll_waiter(id, now, &waker),
            Err(Some(now + 2 * SECOND))
        );
        assert_eq!(
            gate.poll_waiter(id, now + 2 * SECOND - MS, &waker),
            Err(Some(now + 2 * SECOND))
        );
        assert_eq!(
            gate.poll_waiter(id, now + 2 * SECOND, &waker),
            Ok(true),
            "the first out probes"
        );
    }

    #[test]
    fn a_shorter_closure_never_brings_the_gate_forward() {
        let now = Instant::now();
        let mut gate = closed_gate(now, 10 * SECOND);
        assert_eq!(gate.arrive(now), Err(0));
        gate.answered(LET_THROUGH, closed(now + SECOND), now);
        assert_eq!(gate.closed_for(now), Some(10 * SECOND));
        gate.answered(LET_THROUGH, closed(now + 20 * SECOND), now);
        assert_eq!(gate.closed_for(now), Some(20 * SECOND));
    }

    #[test]
    fn after_a_closure_one_probe_goes_alone_and_a_refusal_closes_again() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let ids: Vec<u64> = (0..3).map(|_| gate.arrive(now).unwrap_err()).collect();
        let open = now + SECOND;
        assert_eq!(gate.poll_waiter(ids[0], open, &waker), Ok(true));
        assert_eq!(
            gate.poll_waiter(ids[1], open, &waker),
            Err(None),
            "blocked behind the probe"
        );
        gate.answered(PROBE, closed(open + SECOND), open);
        assert_eq!(
            gate.poll_waiter(ids[1], open, &waker),
            Err(Some(open + SECOND))
        );
    }

    #[test]
    fn with_nothing_known_waiters_leave_one_at_a_time_never_in_the_same_instant() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let ids: Vec<u64> = (0..50).map(|_| gate.arrive(now).unwrap_err()).collect();
        let mut clock = now + SECOND;
        let mut released = Vec::new();
        for id in ids {
            let probe = loop {
                match gate.poll_waiter(id, clock, &waker) {
                    Ok(probe) => break probe,
                    Err(Some(at)) => clock = at,
                    Err(None) => panic!("blocked with no probe out"),
                }
            };
            assert!(probe, "each leaves alone when the rate is unknown");
            released.push(clock);
            // The server answers at once, healthy.
            gate.answered(PROBE, Report::default(), clock);
        }
        for pair in released.windows(2) {
            assert!(pair[1] - pair[0] >= SPACING, "{:?}", pair);
        }
        assert!(gate.is_idle(clock));
    }

    #[test]
    fn a_known_quota_releases_at_once_up_to_what_remains() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let ids: Vec<u64> = (0..5).map(|_| gate.arrive(now).unwrap_err()).collect();
        let open = now + SECOND;
        assert_eq!(gate.poll_waiter(ids[0], open, &waker), Ok(true));
        gate.answered(PROBE, quota(2, open + 60 * SECOND), open);
        assert_eq!(gate.poll_waiter(ids[1], open, &waker), Ok(false));
        assert_eq!(gate.poll_waiter(ids[2], open, &waker), Ok(false));
        assert_eq!(
            gate.poll_waiter(ids[3], open, &waker),
            Err(Some(open + 60 * SECOND)),
            "two remained: the rest wait for the reset"
        );
    }

    #[test]
    fn a_known_policy_paces_releases_at_its_rate() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let ids: Vec<u64> = (0..4).map(|_| gate.arrive(now).unwrap_err()).collect();
        let open = now + SECOND;
        assert_eq!(gate.poll_waiter(ids[0], open, &waker), Ok(true));
        let policy = Report {
            interval: Some(100 * MS),
            ..Report::default()
        };
        gate.answered(PROBE, policy, open);
        assert_eq!(
            gate.poll_waiter(ids[1], open, &waker),
            Err(Some(open + 100 * MS))
        );
        assert_eq!(gate.poll_waiter(ids[1], open + 100 * MS, &waker), Ok(false));
        assert_eq!(
            gate.poll_waiter(ids[2], open + 100 * MS, &waker),
            Err(Some(open + 200 * MS))
        );
    }

    #[test]
    fn a_spent_window_closes_the_gate_until_its_reset() {
        let now = Instant::now();
        let mut gate = Gate::new();
        assert_eq!(gate.arrive(now), Ok(false));
        gate.answered(LET_THROUGH, quota(0, now + 30 * SECOND), now);
        assert_eq!(gate.closed_for(now), Some(30 * SECOND));
        let (_, waker) = waker();
        let id = gate.arrive(now).unwrap_err();
        assert_eq!(
            gate.poll_waiter(id, now, &waker),
            Err(Some(now + 30 * SECOND))
        );
        assert_eq!(gate.poll_waiter(id, now + 30 * SECOND, &waker), Ok(true));
    }

    #[test]
    fn three_left_means_three_go_and_the_rest_wait_for_the_reset() {
        let now = Instant::now();
        let mut gate = Gate::new();
        assert_eq!(gate.arrive(now), Ok(false));
        gate.answered(LET_THROUGH, quota(3, now + 10 * SECOND), now);
        let outcomes: Vec<_> = (0..50).map(|_| gate.arrive(now)).collect();
        assert_eq!(outcomes.iter().filter(|outcome| outcome.is_ok()).count(), 3);
        assert_eq!(gate.waiters(), 47);
        assert_eq!(gate.closed_for(now), Some(10 * SECOND));
    }

    #[test]
    fn quota_reports_within_a_window_keep_the_lowest_figure() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.answered(LET_THROUGH, quota(5, now + 10 * SECOND), now);
        gate.answered(LET_THROUGH, quota(7, now + 10 * SECOND), now);
        assert_eq!(gate.quota(now).map(|quota| quota.remaining), Some(5));
        let next_window = now + 11 * SECOND;
        gate.answered(
            LET_THROUGH,
            quota(9, next_window + 10 * SECOND),
            next_window,
        );
        assert_eq!(
            gate.quota(next_window).map(|quota| quota.remaining),
            Some(9)
        );
    }

    #[test]
    fn a_probe_that_never_comes_back_is_owed_again() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let first = gate.arrive(now).unwrap_err();
        let second = gate.arrive(now).unwrap_err();
        let open = now + SECOND;
        assert_eq!(gate.poll_waiter(first, open, &waker), Ok(true));
        gate.abandoned(PROBE);
        assert_eq!(gate.in_flight(), 0);
        assert_eq!(
            gate.poll_waiter(second, open, &waker),
            Ok(true),
            "the next one probes"
        );
    }

    #[test]
    fn the_head_is_woken_when_a_probe_comes_back() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (count, waker) = waker();
        let first = gate.arrive(now).unwrap_err();
        let second = gate.arrive(now).unwrap_err();
        let open = now + SECOND;
        assert_eq!(gate.poll_waiter(first, open, &waker), Ok(true));
        let before = count.0.load(Ordering::SeqCst);
        assert_eq!(gate.poll_waiter(second, open, &waker), Err(None));
        gate.answered(PROBE, Report::default(), open);
        assert_eq!(count.0.load(Ordering::SeqCst), before + 1);
    }

    #[test]
    fn leaving_frees_the_place_and_wakes_the_next_head() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (count, waker) = waker();
        let ids: Vec<u64> = (0..4).map(|_| gate.arrive(now).unwrap_err()).collect();
        assert_eq!(gate.poll_waiter(ids[1], now, &waker), Err(None));
        gate.leave(ids[2]);
        gate.leave(ids[0]);
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "the new head was woken");
        assert_eq!(gate.waiters(), 2);
        gate.leave(ids[1]);
        gate.leave(ids[3]);
        assert_eq!(gate.waiters(), 0);
        assert!(
            gate.queue.is_empty(),
            "gone places are dropped as they reach the front"
        );
        gate.leave(ids[3]);
        assert_eq!(gate.waiters(), 0, "leaving twice changes nothing");
    }

    #[test]
    fn new_calls_never_overtake_waiters() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let first = gate.arrive(now).unwrap_err();
        let later = now + 2 * SECOND;
        assert!(
            gate.arrive(later).is_err(),
            "the gate is open, but someone waits"
        );
        assert_eq!(gate.poll_waiter(first, later, &waker), Ok(true));
    }

    #[test]
    fn a_gate_is_idle_once_it_has_nothing_to_remember() {
        let now = Instant::now();
        let mut gate = Gate::new();
        assert!(gate.is_idle(now));
        assert_eq!(gate.arrive(now), Ok(false));
        assert!(!gate.is_idle(now), "a request is out");
        gate.answered(LET_THROUGH, quota(5, now + SECOND), now);
        assert!(!gate.is_idle(now), "a quota window lasts");
        assert!(gate.is_idle(now + SECOND));
    }

    #[test]
    fn a_probe_owed_is_remembered_for_a_while_after_the_closure() {
        let now = Instant::now();
        let gate = closed_gate(now, SECOND);
        assert!(!gate.is_idle(now + SECOND));
        assert!(!gate.is_idle(now + SECOND + PROBE_MEMORY - MS));
        assert!(gate.is_idle(now + SECOND + PROBE_MEMORY));
    }
}
