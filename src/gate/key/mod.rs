//! One key's gate: when requests may go. Pure: callers pass `now`; wakers to call are handed
//! back (`take_wakes`) so that they are called after the registry's lock is released.
//!
//! Invariants, each with the rule it serves:
//! - The closure only ever moves later: a shorter instruction arriving while a longer one is
//!   in force changes nothing (never brought forward).
//! - Calls leave in arrival order; a new one never overtakes a waiter. Calls whose layer does
//!   not respect the quota wait in a queue of their own, held only by a 429's closure and the
//!   reopening after it, never by a quota, a spent window or a pace: off means off.
//! - A probe belongs to the closure it follows (`epoch`): a late answer to an older one
//!   changes nothing (see `reopening`). A reset, reported or learned, begins a new epoch
//!   too: what went before it speaks of the window it ended.
//! - Where the server gave its remaining quota, no more requests are out than it said remain
//!   (`out` holds those not yet answered), and a spent window holds every call that respects
//!   it until its reset; the new window's first request probes. A request out longer than a
//!   call's probe timeout holds none of the quota from that call: one that hangs jams
//!   nothing, as a probe that hangs does not.
//! - A closure or spent window is remembered however long it lasts (the reading keeps only
//!   those within the horizon), but a call waits it out only as far as its own terms allow
//!   (`longest_wait`, and its budget): beyond that it is turned away at once, arriving or
//!   waiting, with what holds it ([`Closed`]).

pub(crate) mod answer;
mod queue;
pub(crate) mod reopening;
pub(crate) mod report;
pub(crate) mod terms;
pub(crate) mod tokens;

pub(crate) use answer::Episode;

use std::collections::VecDeque;
use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

use crate::gate::rules::closure::Closure;
use crate::gate::rules::learn::{Judged, Learn};
use crate::gate::rules::quota::Quota;
use crate::gate::rules::window::ReportedWindow;
use crate::gate::time::{ServerClock, after};
use crate::throttled::HeldBy;
use crate::tokens::TokenCost;
use answer::{Admission, Arrival, Closed, Hold, Look};
use queue::Queues;
use reopening::{Release, Reopening};
use report::Report;
use terms::Terms;
use tokens::{KnownTokens, TokenMeters};

/// How long a gate that owes a probe is remembered after its closure ended, with nobody
/// waiting: long enough for calls arriving soon after to be let out one at a time.
const PROBE_MEMORY: Duration = Duration::from_secs(60);

/// The state of one key's gate.
#[derive(Default)]
pub(crate) struct Gate {
    closure: Closure,
    window: ReportedWindow,
    /// When each request let through and not answered went, in the order they went.
    out: VecDeque<Instant>,
    reopening: Reopening,
    /// Requests let through carry the epoch they went in (see [`begin_epoch`](Self::begin_epoch)).
    epoch: u64,
    /// How fast the server lets the key go where it publishes no quota.
    learn: Learn<Instant>,
    /// The tightest bound of the server's clock its responses gave.
    server_clock: Option<ServerClock>,
    /// The key's token meters, less what calls declaring their cost spent.
    tokens: KnownTokens,
    queues: Queues,
    /// An episode was told closed and not yet reopened: a spent window's reset, where the
    /// quota comes back whole without a probe, reopens it with the first healthy answer after.
    told_closed: bool,
    /// The latest end of an instruction the closure holds, its spread not counted: one above
    /// a call's cap is not waited, however little spread it was given.
    instructed: Option<Instant>,
}

impl Gate {
    pub(crate) fn new() -> Self {
        Gate::default()
    }

    /// The gate of a key nothing is known of, made for a first call with `terms`: if the call
    /// takes part in the slow start, it goes alone, and its answer decides the rest.
    pub(crate) fn for_first_call(terms: Terms) -> Self {
        let mut gate = Gate::default();
        if terms.slow_start {
            gate.reopening.first_call();
        }
        gate
    }

    /// A call arriving with `budget` left to wait: let through at once, given a place in its
    /// queue, or turned away if the gate stays closed to it longer than that.
    pub(crate) fn arrive(&mut self, now: Instant, terms: Terms, budget: Duration) -> Arrival {
        if self.queues.of(terms.metered).len() == 0 {
            if let Release::Go { probe } = self.release(now, terms) {
                return match self.spend(terms, now) {
                    Ok(()) => Arrival::Admitted(self.admit(probe, now, terms)),
                    Err(short) => match short.beyond(now, budget, terms) {
                        Some(closed) => Arrival::Beyond(closed),
                        None => Arrival::Short {
                            until: short.until,
                            by: short.by,
                        },
                    },
                };
            }
        }
        match self.queue_within(now, budget, terms) {
            Ok(id) => Arrival::Queued(id),
            Err(closed) => Arrival::Beyond(closed),
        }
    }

    /// What a call with `terms` arriving now would wait out at least, and what set it: the
    /// closure or the spent window, whichever ends later (for a call that does not respect
    /// the quota, only the closure).
    pub(crate) fn closed(&self, now: Instant, terms: Terms) -> Option<Closed> {
        self.closure
            .held()
            .into_iter()
            .chain(self.spent(now, terms))
            .filter(|(until, _)| *until > now)
            .max_by_key(|(until, _)| *until)
            .map(|(until, by)| Closed {
                left: until - now,
                by,
            })
    }

    /// How long a call with `terms` arriving now would wait at least; `None` if not at all.
    pub(crate) fn closed_for(&self, now: Instant, terms: Terms) -> Option<Duration> {
        self.closed(now, terms).map(|closed| closed.left)
    }

    /// What holds a call with `terms` and `budget` left beyond what it may wait, if anything
    /// does: it is then turned away at once, rather than made to sleep out its budget first.
    pub(crate) fn beyond(&self, now: Instant, budget: Duration, terms: Terms) -> Option<Closed> {
        let instructed = self
            .instructed
            .map(|until| until.saturating_duration_since(now));
        // What the server read spent, while a spent window holds the call.
        let spent = self
            .spent(now, terms)
            .and(self.window.server_spent(now))
            .map(|reset| reset.saturating_duration_since(now));
        self.closed(now, terms).filter(|closed| {
            // An instruction above the cap, which what holds the call holds, is waited by no
            // call, however little spread its closure was given.
            let over_cap = |left: Duration| left > terms.cap && left <= closed.left;
            instructed.is_some_and(over_cap)
                || spent.is_some_and(over_cap)
                || closed.left > budget.min(terms.longest_wait)
        })
    }

    /// The waiter `id`, with `budget` left, asks whether it may go; `waker` is woken when that
    /// may have changed. `Ok` lets it through; `Look::Again(Some(at))` asks it to look again
    /// at `at`, `Look::Again(None)` when woken; `Look::Beyond` turns it away.
    pub(crate) fn poll_waiter(
        &mut self,
        id: u64,
        now: Instant,
        budget: Duration,
        waker: &Waker,
        terms: Terms,
    ) -> Result<Admission, Look> {
        let Some(position) = self.queues.of(terms.metered).position(id) else {
            // Not queued: nothing holds it back.
            self.out.push_back(now);
            return Ok(self.admission(None, now, terms));
        };
        if self.queues.of(terms.metered).is_rerouted(id) {
            self.leave(id, terms.metered);
            return Err(Look::Reroute);
        }
        if let Some(closed) = self.beyond(now, budget, terms) {
            return Err(Look::Beyond(closed));
        }
        let look_again = if position == 0 {
            match self.release(now, terms) {
                Release::Go { probe } => match self.spend(terms, now) {
                    Ok(()) => {
                        self.queues.of_mut(terms.metered).pop_head();
                        let admission = self.admit(probe, now, terms);
                        self.queues.wake_heads();
                        return Ok(admission);
                    }
                    Err(short) => {
                        if let Some(closed) = short.beyond(now, budget, terms) {
                            self.leave(id, terms.metered);
                            return Err(Look::Beyond(closed));
                        }
                        // It keeps its place: calls leave in arrival order.
                        Some(short.until)
                    }
                },
                Release::At(at) => Some(at),
            }
        } else {
            None
        };
        self.queues.of_mut(terms.metered).remember(position, waker);
        Err(Look::Again(look_again))
    }

    /// How long until the gate could let waiter `id`, a call with `terms`, through, at the
    /// earliest it can tell: the closure, a spent window or a quota all out, a probe out, and
    /// the pace of those ahead. `None` if it is not waiting.
    pub(crate) fn estimate(&self, now: Instant, id: u64, terms: Terms) -> Option<Duration> {
        let ahead = u32::try_from(self.queues.of(terms.metered).ahead(id)?).unwrap_or(u32::MAX);
        let mut at = self.closure.until().map_or(now, |until| until.max(now));
        let quota = self.quota_within(at, terms);
        let holding = self.holding(now, terms);
        if let Some(reset_at) = quota.and_then(|quota| quota.all_out_until(holding)) {
            at = at.max(reset_at);
        }
        let quota_known = self.quota_within(at, terms).is_some();
        let (head, step) = self.reopening.schedule(at, quota_known, terms);
        Some(after(head, step.saturating_mul(ahead)).saturating_duration_since(now))
    }

    /// A call with `terms` whose next attempt must wait `wait` (of which the server named
    /// `instructed`), with `budget` left, waits in its queue if the gate is closed to it at
    /// least that long (as long as the server named: the spread a lone call adds is moot at
    /// the one gate), with every other call on the key.
    pub(crate) fn hold(
        &mut self,
        now: Instant,
        wait: Duration,
        instructed: Option<Duration>,
        budget: Duration,
        terms: Terms,
    ) -> Hold {
        let needed = instructed.map_or(wait, |instructed| instructed.min(wait));
        if self
            .closed_for(now, terms)
            .is_none_or(|closed_for| closed_for < needed)
        {
            return Hold::Free;
        }
        match self.queue_within(now, budget, terms) {
            Ok(id) => Hold::Queued(id),
            Err(closed) => Hold::Beyond(closed),
        }
    }

    /// Queues a call with `terms` that may wait `budget`, unless the gate stays closed to it
    /// longer than it may wait: then for how long, and by what.
    fn queue_within(
        &mut self,
        now: Instant,
        budget: Duration,
        terms: Terms,
    ) -> Result<u64, Closed> {
        match self.beyond(now, budget, terms) {
            Some(closed) => Err(closed),
            None => Ok(self.queues.of_mut(terms.metered).push()),
        }
    }

    /// The waiter `id` gives up (its call was dropped, or its budget ran out).
    pub(crate) fn leave(&mut self, id: u64, metered: bool) {
        let was_head = self.queues.of_mut(metered).leave(id);
        self.reopening.left(self.waiters());
        if was_head {
            self.queues.wake_heads();
        }
    }

    /// Every call waiting now goes to the gate of its route's limit: the key's answers name the
    /// limits they count against (see `call::Call::learn_limit`).
    pub(crate) fn reroute_waiters(&mut self) {
        self.queues.reroute_all();
    }

    /// A response came back with `report`, for a request let through as `admitted`: the turn
    /// it brought the key's episode to, if any.
    pub(crate) fn answered(
        &mut self,
        admitted: Admission,
        report: Report,
        now: Instant,
    ) -> Option<Episode> {
        self.returned(admitted);
        let held_before = self.closed(now, Terms::EVERYTHING).is_some();
        let answers_the_probe = self.answers_the_probe(admitted, report.refused);
        let follows_closure = answers_the_probe && self.reopening.follows_closure();
        let after_the_closure = self.told_closed && admitted.epoch == self.epoch;
        let reopened = (follows_closure || after_the_closure) && !report.refused;
        // The probe after a closure, refused: the key never reopened, and the closure this
        // refusal sets goes on the same episode, told once.
        let still_closed = follows_closure && report.refused;
        if answers_the_probe {
            let waiting = self.waiters();
            self.reopening.probe_answered(report.refused, waiting, now);
        } else if report.refused && admitted.epoch == self.epoch {
            self.reopening.refused();
        }
        if !report.refused && admitted.epoch == self.epoch {
            self.reopening.healthy();
        }
        if report.refused && admitted.restored {
            self.window.restore_refused();
        }
        let report = self.learn_from(admitted, report, now);
        if let (Some(before), Some(quota)) = (admitted.last, report.quota) {
            self.window.last_answered(before, quota, admitted.sent, now);
        }
        self.take_in(report, Some(admitted), now);
        self.queues.wake_heads();
        let episode = match self.closed(now, Terms::EVERYTHING) {
            Some(_) if held_before || still_closed => None,
            Some(closed) => Some(Episode::Closed(closed)),
            None => reopened.then_some(Episode::Reopened),
        };
        self.told(episode)
    }

    /// Remembers the turn of the key's episode about to be told, and gives it back.
    pub(crate) fn told(&mut self, episode: Option<Episode>) -> Option<Episode> {
        match episode {
            Some(Episode::Closed(_)) => self.told_closed = true,
            Some(Episode::Reopened) => self.told_closed = false,
            None => {}
        }
        episode
    }

    /// Takes in what a response said of the key's token meters ([`TokenMeters::NONE`] where
    /// it said nothing of them); where it answers a call this gate counted out that declared
    /// it `spent` them, or where such a call ended unanswered, what it spent is no longer out.
    pub(crate) fn take_tokens(
        &mut self,
        reported: &TokenMeters,
        spent: Option<TokenCost>,
        now: Instant,
    ) {
        self.tokens.take_in(*reported, now);
        if let Some(cost) = spent {
            self.tokens.settle(cost, reported);
        }
    }

    /// Spends what a call with `terms` leaving the gate declared of the token meters, or says
    /// until when they lack it, which does, and whether the server's own reading does. Every call that leaves spends it, at once or
    /// after waiting, so that calls out together never spend one count twice.
    fn spend(&mut self, terms: Terms, now: Instant) -> Result<(), Short> {
        let Some(cost) = terms.cost else {
            return Ok(());
        };
        self.tokens.spend(cost, now).map_err(|(until, unit)| Short {
            until,
            by: HeldBy::TokenCost { unit },
            reported: self.tokens.short_as_reported(cost),
        })
    }

    /// Takes in what another process learned, through a shared store, or what an answer on
    /// another limit said: the calls at the head of the queue look again, so that a closure
    /// longer than they may wait turns them away now, not when the one they waited for ends.
    pub(crate) fn learn(&mut self, report: Report, now: Instant) {
        self.take_in(report, None, now);
        self.wake_heads();
    }

    /// The calls at the head of the queue look again.
    pub(crate) fn wake_heads(&mut self) {
        self.queues.wake_heads();
    }

    /// A request let through as `admitted` ended without a response (dropped, or a transport
    /// error): that says nothing about the limit, so a probe is owed again.
    pub(crate) fn abandoned(&mut self, admitted: Admission, now: Instant) {
        self.returned(admitted);
        if let Some(tag) = admitted.learn {
            self.learn.abandoned(tag, now);
        }
        if self.is_probe_out(admitted) {
            self.reopening.probe_lost();
        }
        self.queues.wake_heads();
    }

    /// The wakers of waiters that may now go: to be called once the registry is unlocked.
    pub(crate) fn take_wakes(&mut self) -> Vec<Waker> {
        self.queues.take_wakes()
    }

    /// The round the learned law judged last, if one was since this was last asked: to be
    /// told once the registry is unlocked.
    pub(crate) fn take_judged(&mut self) -> Option<Judged> {
        self.learn.take_judged()
    }

    /// Whether the gate remembers nothing a later call needs, so it may be forgotten.
    pub(crate) fn is_idle(&self, now: Instant) -> bool {
        let probe_owed = self.reopening.owes_probe()
            && self
                .closure
                .until()
                .is_some_and(|until| until + PROBE_MEMORY > now);
        self.waiters() == 0
            && self.out.is_empty()
            && self.closure.in_force(now).is_none()
            && self.window.quota(now).is_none()
            && !self.learn.is_current(now)
            && !self.tokens.is_known(now)
            && !self.reopening.is_probing()
            && !probe_owed
    }

    /// Whether the gate holds calls back or counts calls out: a closure or a spent window in
    /// force, a waiter, a request out. Such a gate is never forgotten to make room.
    pub(crate) fn holds_calls(&self, now: Instant) -> bool {
        self.waiters() > 0
            || !self.out.is_empty()
            || self.reopening.is_probing()
            || self.closed_for(now, Terms::EVERYTHING).is_some()
    }

    /// How many calls wait.
    pub(crate) fn waiters(&self) -> usize {
        self.queues.len()
    }

    /// How many probes the server refused since the key last had a healthy answer: each
    /// doubles the guess that closes the key where the server named no time (see
    /// `budget::closure`).
    pub(crate) fn refused_probes(&self) -> u32 {
        self.reopening.refused_probes()
    }

    /// How many requests were let through and not answered.
    pub(crate) fn in_flight(&self) -> u32 {
        u32::try_from(self.out.len()).unwrap_or(u32::MAX)
    }

    /// How many of the requests out hold the quota for a call with `terms` at `now`: those out
    /// no longer than its probe timeout.
    fn holding(&self, now: Instant, terms: Terms) -> u32 {
        let holding = self
            .out
            .iter()
            .filter(|sent| after(**sent, terms.probe_timeout) >= now)
            .count();
        u32::try_from(holding).unwrap_or(u32::MAX)
    }

    /// The quota as last reported, while its window lasts.
    pub(crate) fn quota(&self, now: Instant) -> Option<Quota> {
        self.window.quota(now)
    }

    /// Learns from what the server accepted and refused, while it publishes no quota: the
    /// report as the gate takes it in. Where the law paces the key's calls, a refusal closes
    /// the key as the law keeps it (a guess ends by the law's reset; the refused call still
    /// sleeps its own backoff).
    fn learn_from(&mut self, admitted: Admission, mut report: Report, now: Instant) -> Report {
        if report.quota.is_some() || report.pace.is_some() {
            self.learn.forget();
        } else if let Some(tag) = admitted.learn {
            if report.refused {
                let (until, closed) = (report.instructed_until, report.closed_until);
                let kept = self.learn.refused(tag, now, until, closed);
                if admitted.learns.is_some() && self.quota(now).is_none() {
                    report.closed_until = kept;
                }
            } else {
                self.learn.accepted(tag, admitted.sent, now);
            }
        }
        report
    }

    /// Takes in what the server said to a request let through as `admitted` (`None`: what
    /// another process learned, of the current epoch).
    fn take_in(&mut self, report: Report, admitted: Option<Admission>, now: Instant) {
        let went = admitted.map_or((self.epoch, None), Admission::went);
        let learns = admitted.and_then(|admitted| admitted.learns);
        self.server_clock = ServerClock::tightest(self.server_clock, report.server_clock);
        // What the server instructed holds every call as far as the closure it set (and the
        // calls that respect the quota as far as a window it read spent: the window keeps
        // that): an instruction that holds nothing beyond them (a 200's `Retry-After` beside a
        // meter spent for less) is not one a later closure may be weighed against the cap by.
        // (One past counts for nothing: only what is left of it is compared.)
        let instructed = report
            .instructed_until
            .zip(report.closed_until)
            .map(|(at, closed)| at.min(closed));
        self.instructed = self.instructed.max(instructed);
        if let Some(until) = report.closed_until.filter(|until| *until > now) {
            // Where the learned quota goes at once when the instruction ends, that quota bounds
            // what goes then: a spread after it would only idle the key.
            let until = match report.instructed_until {
                Some(instructed) if learns.is_some() && self.learn.is_known() => {
                    until.min(instructed)
                }
                _ => until,
            };
            self.close_until(until, report.closed_by.unwrap_or(HeldBy::Fleet));
        }
        if let Some(quota) = report.quota.filter(|quota| quota.reset_at > now) {
            let by = (report.quota_by, report.server_spent);
            self.window.report(quota, report.limit, by, went, now);
        }
        if let Some(pace) = report.pace {
            self.reopening.pace(pace);
        }
    }

    /// Closes the gate until `until`, unless it is closed longer already; a closure that moves
    /// the reopening later owes a probe, and what was let through before speaks of another
    /// epoch.
    fn close_until(&mut self, until: Instant, by: HeldBy) {
        if self.closure.extend(until, by) {
            self.reopening.closed();
            self.begin_epoch();
        }
    }

    /// What was let through before now speaks of another window: a closure moved the
    /// reopening later, or a window (reported or learned) reset.
    fn begin_epoch(&mut self) {
        self.epoch += 1;
    }

    /// The quota that holds a call with `terms`, as last reported; none for a call that does
    /// not respect the quota.
    fn quota_within(&self, now: Instant, terms: Terms) -> Option<Quota> {
        self.quota(now).filter(|_| terms.metered)
    }

    /// The reset of the spent window that holds a call with `terms`, if one does, and the
    /// meter the server said is spent.
    fn spent(&self, now: Instant, terms: Terms) -> Option<(Instant, HeldBy)> {
        let quota = self.quota_within(now, terms).filter(Quota::is_spent)?;
        let by = self.window.spent_by().unwrap_or(HeldBy::Fleet);
        Some((quota.reset_at, by))
    }

    /// Whether the pace learned of a server that publishes no quota holds a call with `terms`
    /// at `now`.
    pub(crate) fn paced_by_learning(&self, now: Instant, terms: Terms) -> bool {
        terms.learned && terms.metered && self.quota(now).is_none() && self.learn.is_known()
    }

    /// Whether the next request of a call with `terms` may go now, and on what terms.
    fn release(&mut self, now: Instant, terms: Terms) -> Release {
        if let Some(until) = self.closure.in_force(now) {
            return Release::At(until);
        }
        // A window is spent at its reset if what was left of it is all out; spent or not, its
        // reset restores the whole quota where the server gave it.
        let holding = self.holding(now, terms);
        let over = self.window.take_over(now).is_some_and(|over| {
            over.all_out_until(holding).is_some() || self.window.limit().is_some()
        });
        if over {
            self.begin_epoch();
            if !self.window.restore(self.epoch, now) {
                self.reopening.window_reset();
            }
        }
        let quota = self.quota_within(now, terms);
        if self.paced_by_learning(now, terms) {
            // What the server accepts where it publishes no quota, as learned: it paces a call
            // within its cap, and never holds one longer (it is the layer's estimate, not an
            // instruction).
            let out = u64::from(self.in_flight());
            return match self.learn.next(now, out, terms.probe_timeout) {
                Some(at) if at <= after(now, terms.cap) => Release::At(at),
                _ => Release::Go { probe: false },
            };
        }
        if let Some(quota) = quota {
            if quota.is_spent() {
                return Release::At(quota.reset_at);
            }
            if let Some(reset_at) = quota.all_out_until(holding) {
                return Release::At(reset_at);
            }
            // (Where gates share a store, requests of other processes may be out.)
            let busy =
                !terms.fleet && (self.queues.of(terms.metered).len() > 1 || !self.out.is_empty());
            if let Some(at) = self
                .window
                .last_held(quota, self.in_flight().into(), busy, now)
            {
                return Release::At(at);
            }
        }
        // Requests out longer than a probe would be hold nothing back (they may hang).
        self.reopening.next(now, quota.is_some(), holding, terms)
    }

    fn admit(&mut self, probe: bool, now: Instant, terms: Terms) -> Admission {
        let paced = self.paced_by_learning(now, terms);
        // Where the gates share a store, the fleet learns in it: the gate's own law stays cold.
        let learn = (!terms.fleet).then(|| self.learn.sent(now, u64::from(self.in_flight())));
        let quota = self.quota_within(now, terms).filter(|_| !terms.fleet);
        let last = self.window.sending(quota, u64::from(self.in_flight()), now);
        if last.is_some() {
            // Its answer speaks for whichever window it counted in, the old or a new one.
            self.begin_epoch();
        }
        self.out.push_back(now);
        // The first call the learned pace lets go after a closure is the probe the others owe.
        let waiting = self.waiters();
        let probe = match paced {
            true if self.reopening.owes_probe() => {
                self.reopening.admitted(true, now, terms, waiting)
            }
            true => None,
            false => self.reopening.admitted(probe, now, terms, waiting),
        };
        Admission {
            learn,
            last,
            restored: quota.is_some() && self.window.is_restored(),
            ..self.admission(probe, now, terms)
        }
    }

    /// A request let through as `admitted` is no longer out.
    fn returned(&mut self, admitted: Admission) {
        if admitted.counted {
            debug_assert!(!self.out.is_empty(), "a request counted out twice");
            match self.out.iter().position(|sent| *sent == admitted.sent) {
                Some(position) => self.out.remove(position),
                None => self.out.pop_front(),
            };
        }
    }

    fn admission(&self, probe: Option<u64>, now: Instant, terms: Terms) -> Admission {
        let learns = terms.learned.then_some(terms.cap);
        let went = (self.epoch, self.window.taken());
        Admission::counted(went, probe, now, self.server_clock, learns)
    }

    /// Whether `admitted` is the probe out. (Which window it counted in is no matter: a
    /// window's reset while a probe is out leaves the probe its answer.)
    fn is_probe_out(&self, admitted: Admission) -> bool {
        admitted
            .probe
            .is_some_and(|probe| self.reopening.is_probe_out(probe))
    }

    /// Whether the answer to `admitted`, `refused` or not, answers the reopening (see
    /// `Reopening::answers`).
    fn answers_the_probe(&self, admitted: Admission, refused: bool) -> bool {
        admitted
            .probe
            .is_some_and(|probe| self.reopening.answers(probe, !refused))
    }
}

/// A call's declared cost its token meters cannot pay before `until`, the reset of the meter
/// `by` names; `reported` where the server's own reading cannot (not only what this process's
/// calls out may spend of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Short {
    until: Instant,
    by: HeldBy,
    reported: bool,
}

impl Short {
    /// What turns the call away, if anything does: a reset beyond what it may wait, or, where
    /// the server said the meter cannot pay it, beyond the cap (a meter spent for this call,
    /// as a spent window is for any).
    fn beyond(self, now: Instant, budget: Duration, terms: Terms) -> Option<Closed> {
        let left = self.until.saturating_duration_since(now);
        let over_cap = self.reported && left > terms.cap;
        (over_cap || left > budget.min(terms.longest_wait)).then_some(Closed { left, by: self.by })
    }
}

#[cfg(test)]
mod tests {
    use super::reopening::{Pace, SPACING};
    use super::*;
    use crate::gate::time::after;
    use crate::headers::Unit;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    /// A 200 whose `Retry-After` (5.1 s, past a cap of 3 s) holds nothing beyond the meter it
    /// says is spent (for 3 s) is no instruction a later closure is weighed by: a 429 two
    /// seconds on naming 2.92 s, within the cap, holds the next call, which waits it out
    /// (found by the whole-layer fuzz target).
    #[test]
    fn an_instruction_that_held_nothing_does_not_turn_away_a_call_a_later_closure_holds() {
        let (mut gate, now) = (Gate::new(), Instant::now());
        let terms = Terms {
            cap: 3 * SECOND,
            longest_wait: 3 * SECOND + 300 * MS,
            ..TERMS
        };
        let spent = Report {
            quota: Some(Quota {
                remaining: 0,
                reset_at: now + 3 * SECOND,
                second: None,
            }),
            instructed_until: Some(now + 5 * SECOND + 100 * MS),
            ..Report::default()
        };
        gate.learn(spent, now);
        let later = now + 2 * SECOND;
        let refused = Report {
            refused: true,
            closed_until: Some(later + 3 * SECOND + 196 * MS),
            closed_by: Some(HeldBy::RetryAfter {
                status: http::StatusCode::TOO_MANY_REQUESTS,
            }),
            instructed_until: Some(later + 2 * SECOND + 920 * MS),
            ..Report::default()
        };
        gate.learn(refused, later);
        assert!(gate.closed(later, terms).is_some(), "held");
        assert_eq!(gate.beyond(later, 6 * SECOND, terms), None);
        // Nor is the spread a closure was given part of what was instructed.
        let mut gate = Gate::new();
        let within = Report {
            closed_until: Some(now + 3 * SECOND + 200 * MS),
            instructed_until: Some(now + 2 * SECOND + 900 * MS),
            ..refused
        };
        gate.learn(within, now);
        assert_eq!(gate.beyond(now, 6 * SECOND, terms), None);
    }

    /// Terms with a cap of 30 s and the longest wait `longest_wait`.
    fn terms_capped_at_30_s(longest_wait: Duration) -> Terms {
        Terms {
            cap: 30 * SECOND,
            longest_wait,
            ..TERMS
        }
    }

    /// The server's own reading of a window spent until `reset`.
    fn server_zero(reset: Instant) -> Report {
        Report {
            server_spent: true,
            ..quota(0, reset)
        }
    }

    /// A store's window spent until `reset` by the fleet's requests out.
    fn fleet_zero(reset: Instant) -> Report {
        Report {
            closed_by: Some(HeldBy::Fleet),
            quota_by: Some(HeldBy::Fleet),
            ..quota(0, reset)
        }
    }

    /// A window the server read spent until 31.2 s (cap 30 s) is given room back by an answer
    /// (5 left, the same reset): it holds nothing now, and is no instruction beside a later
    /// 429 whose 29.5 s, within the cap, holds the call (its closure ends 30.4 s on).
    #[test]
    fn a_spent_window_given_back_is_no_instruction_beside_a_later_closure() {
        let (mut gate, now) = (Gate::new(), Instant::now());
        let terms = terms_capped_at_30_s(31 * SECOND);
        let reset = now + 31 * SECOND + 200 * MS;
        let read = server_zero(reset);
        gate.learn(read, now);
        assert!(
            gate.beyond(now, 120 * SECOND, terms).is_some(),
            "spent beyond the cap: turned away"
        );
        let unmetered = gate
            .arrive_as(now, UNMETERED)
            .expect("not held by the quota");
        gate.answered(unmetered, quota(5, reset), now);
        let later = now + SECOND;
        assert_eq!(gate.quota(later).map(|quota| quota.remaining), Some(5));
        let refused = Report {
            refused: true,
            closed_until: Some(later + 30 * SECOND + 400 * MS),
            closed_by: Some(HeldBy::RetryAfter {
                status: http::StatusCode::TOO_MANY_REQUESTS,
            }),
            instructed_until: Some(later + 29 * SECOND + 500 * MS),
            ..Report::default()
        };
        gate.learn(refused, later);
        let closed = gate.closed(later, terms).expect("held by the closure");
        assert_eq!(closed.left, 30 * SECOND + 400 * MS);
        assert_eq!(gate.beyond(later, 120 * SECOND, terms), None);
    }

    /// The server read the window spent until 30.2 s (cap 30 s); a store then tells the same
    /// window spent by the fleet's requests out, its reset read 0.6 s later. The call would
    /// sleep through the server's whole instruction: turned away still.
    #[test]
    fn a_later_reset_a_store_tells_leaves_an_over_cap_spent_window_an_instruction() {
        let (mut gate, now) = (Gate::new(), Instant::now());
        let terms = terms_capped_at_30_s(31 * SECOND);
        let reset = now + 30 * SECOND + 200 * MS;
        let read = server_zero(reset);
        gate.learn(read, now);
        assert!(gate.beyond(now, 120 * SECOND, terms).is_some());
        let told = fleet_zero(reset + 600 * MS);
        gate.learn(told, now);
        let closed = gate.closed(now, terms).map(|closed| closed.left);
        assert_eq!(closed, Some(30 * SECOND + 800 * MS), "held the later reset");
        assert!(
            gate.beyond(now, 120 * SECOND, terms).is_some(),
            "slept through it"
        );
    }

    /// The server read the window spent until 30.2 s (cap 30 s), then an answer gave room back
    /// (5 left); a store then tells the window spent by the fleet's requests out. That is no
    /// instruction: the call may wait for their answers.
    #[test]
    fn a_window_the_fleet_spent_after_room_was_given_back_is_no_instruction() {
        let (mut gate, now) = (Gate::new(), Instant::now());
        let terms = terms_capped_at_30_s(31 * SECOND);
        let reset = now + 30 * SECOND + 200 * MS;
        let read = server_zero(reset);
        gate.learn(read, now);
        let unmetered = gate
            .arrive_as(now, UNMETERED)
            .expect("not held by the quota");
        gate.answered(unmetered, quota(5, reset), now);
        let later = now + 100 * MS;
        assert_eq!(
            gate.beyond(later, 120 * SECOND, terms),
            None,
            "room given back"
        );
        let told = fleet_zero(reset);
        gate.learn(told, later);
        let closed = gate.closed(later, terms).map(|closed| closed.left);
        assert_eq!(
            closed,
            Some(30 * SECOND + 100 * MS),
            "held by the fleet's zero"
        );
        assert_eq!(gate.beyond(later, 120 * SECOND, terms), None);
    }

    /// A store tells a window spent by the fleet until 40 s; this process then reads the
    /// server's own zero until 30.2 s (cap 30 s), which the fold throws away beside the longer
    /// zero. The call would sleep 40 s through the server's instruction: turned away, in
    /// either order of the two readings.
    #[test]
    fn a_server_zero_read_beside_a_longer_fleet_zero_is_an_instruction_in_either_order() {
        let terms = terms_capped_at_30_s(45 * SECOND);
        let now = Instant::now();
        let told = fleet_zero(now + 40 * SECOND);
        let read = server_zero(now + 30 * SECOND + 200 * MS);
        let mut server_first = Gate::new();
        let unmetered = server_first.arrive_as(now, UNMETERED).expect("first call");
        server_first.answered(unmetered, read, now);
        server_first.learn(told, now);
        assert!(server_first.beyond(now, 120 * SECOND, terms).is_some());
        let mut store_first = Gate::new();
        store_first.learn(told, now);
        assert_eq!(store_first.beyond(now, 120 * SECOND, terms), None, "waited");
        let unmetered = store_first.arrive_as(now, UNMETERED).expect("not held");
        store_first.answered(unmetered, read, now);
        assert_eq!(store_first.closed_for(now, terms), Some(40 * SECOND));
        assert!(store_first.beyond(now, 120 * SECOND, terms).is_some());
    }

    /// The server read its window spent until 30.2 s (cap 30 s) beside a store's fleet zero
    /// until 40 s; an answer to a request sent after that zero then gives room back on the
    /// server's window (5 left, the same reset): the server's zero is over, and the call
    /// waits the fleet's zero (within its budget), in either order of the two zeros. An
    /// answer to a request sent before the zero was read says nothing of it.
    #[test]
    fn room_given_back_beside_a_longer_fleet_zero_ends_the_server_zero() {
        let terms = terms_capped_at_30_s(45 * SECOND);
        let now = Instant::now();
        let reset = now + 30 * SECOND + 200 * MS;
        let told = fleet_zero(now + 40 * SECOND);
        let read = server_zero(reset);
        let later = now + 100 * MS;
        for store_first in [true, false] {
            let mut gate = Gate::new();
            if store_first {
                gate.learn(told, now);
            }
            let straggler = gate.arrive_as(now, UNMETERED).expect("not held");
            let first = gate.arrive_as(now, UNMETERED).expect("not held");
            gate.answered(first, read, now);
            if !store_first {
                gate.learn(told, now);
            }
            assert!(
                gate.beyond(now, 120 * SECOND, terms).is_some(),
                "the server's zero"
            );
            gate.answered(straggler, quota(5, reset), now);
            assert!(
                gate.beyond(now, 120 * SECOND, terms).is_some(),
                "sent before the zero: {store_first}"
            );
            // Sent between two readings of the zero: the later one stands.
            let between = gate.arrive_as(now, UNMETERED).expect("not held");
            let again = gate.arrive_as(now, UNMETERED).expect("not held");
            gate.answered(again, read, now);
            gate.answered(between, quota(5, reset), now);
            assert!(
                gate.beyond(now, 120 * SECOND, terms).is_some(),
                "read again"
            );
            let second = gate.arrive_as(later, UNMETERED).expect("not held");
            gate.answered(second, quota(5, reset), later);
            let held = gate.closed_for(later, terms);
            assert_eq!(held, Some(39 * SECOND + 900 * MS), "the fleet's zero holds");
            assert_eq!(
                gate.beyond(later, 120 * SECOND, terms),
                None,
                "{store_first}"
            );
        }
    }

    /// A request out before a closure (a new epoch) comes back with the server's zero until
    /// 50 s; the fold throws it away beside the window a store told spent until 10 s, so
    /// nothing holds calls for it, and at 10 s a call goes. That zero is no instruction
    /// afterwards either: a fleet's zero until 70 s, which the call may wait (60 s within its
    /// 60 s), holds it.
    #[test]
    fn a_zero_the_window_known_holds_no_calls_for_is_no_instruction_later() {
        let terms = terms_capped_at_30_s(60 * SECOND);
        let now = Instant::now();
        let mut gate = Gate::new();
        let straggler = gate.arrive_as(now, UNMETERED).expect("not held");
        let closure = Report {
            closed_until: Some(now + SECOND),
            closed_by: Some(HeldBy::Fleet),
            instructed_until: Some(now + SECOND),
            ..Report::default()
        };
        gate.learn(closure, now);
        gate.learn(fleet_zero(now + 10 * SECOND), now);
        let read = server_zero(now + 50 * SECOND);
        gate.answered(straggler, read, now);
        assert_eq!(
            gate.closed_for(now, terms),
            Some(10 * SECOND),
            "thrown away"
        );
        let reset = now + 10 * SECOND;
        let _went = gate
            .arrive_as(reset, terms)
            .expect("the 50 s zero holds nothing");
        gate.learn(fleet_zero(now + 70 * SECOND), reset);
        assert_eq!(gate.closed_for(reset, terms), Some(60 * SECOND));
        assert_eq!(gate.beyond(reset, 120 * SECOND, terms), None);
    }

    #[test]
    fn a_token_cost_waits_a_reset_within_its_cap_and_budget_and_no_later() {
        let now = Instant::now();
        let terms = Terms {
            cap: 30 * SECOND,
            longest_wait: 31 * SECOND,
            ..Terms::EVERYTHING
        };
        let by = HeldBy::TokenCost {
            unit: crate::Unit::Tokens,
        };
        let short = |until, budget, reported| {
            let until = now + until;
            Short {
                until,
                by,
                reported,
            }
            .beyond(now, budget, terms)
        };
        assert_eq!(
            short(30 * SECOND, 60 * SECOND, true),
            None,
            "the cap, exactly"
        );
        assert!(
            short(30 * SECOND + MS, 60 * SECOND, true).is_some(),
            "past the cap"
        );
        assert_eq!(
            short(30 * SECOND + MS, 60 * SECOND, false),
            None,
            "short only by the calls out: waited as a wait within the longest"
        );
        assert_eq!(
            short(20 * SECOND, 20 * SECOND, false),
            None,
            "the budget, exactly"
        );
        assert!(
            short(20 * SECOND + MS, 20 * SECOND, false).is_some(),
            "past the budget"
        );
    }

    const MS: Duration = Duration::from_millis(1);
    const SECOND: Duration = Duration::from_secs(1);

    /// The terms of a call through a layer with the default settings but learning, which
    /// the law's own tests below take on (`LEARNING`): the reopening, quotas and closures are
    /// tested apart from it.
    const TERMS: Terms = Terms {
        metered: true,
        cap: Duration::from_secs(60),
        longest_wait: Duration::from_secs(61),
        probe_timeout: Duration::from_secs(10),
        slow_start: true,
        learned: false,
        fleet: false,
        cost: None,
    };

    /// The terms of a call through a layer with the default settings.
    const LEARNING: Terms = Terms {
        learned: true,
        ..TERMS
    };

    /// The terms of a call through a layer with the default settings whose gates share a
    /// store: the fleet learns the key's pace, in the store.
    const FLEET: Terms = Terms {
        learned: true,
        fleet: true,
        ..TERMS
    };

    /// The terms of a call through a layer that does not respect the quota.
    const UNMETERED: Terms = Terms {
        metered: false,
        ..TERMS
    };

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

    fn closed(until: Instant) -> Report {
        Report {
            refused: true,
            closed_until: Some(until),
            ..Report::default()
        }
    }

    fn quota(remaining: u64, reset_at: Instant) -> Report {
        Report {
            quota: Some(Quota {
                remaining,
                reset_at,
                second: None,
            }),
            ..Report::default()
        }
    }

    const HEALTHY: Report = Report {
        refused: false,
        closed_until: None,
        closed_by: None,
        instructed_until: None,
        quota: None,
        server_spent: false,
        quota_by: None,
        limit: None,
        pace: None,
        server_clock: None,
    };

    /// A policy's pace of `interval`, stated for a window that lasts well beyond the test.
    fn paced(interval: Duration, now: Instant) -> Option<Pace> {
        Some(Pace {
            interval,
            window: 60 * SECOND,
            until: now + 60 * SECOND,
        })
    }

    impl Gate {
        /// The waiter `id`, with all the time in the world, asks whether it may go: `Ok`, or
        /// when to look again (`None`: when woken).
        fn ask(
            &mut self,
            id: u64,
            now: Instant,
            waker: &Waker,
            terms: Terms,
        ) -> Result<Admission, Option<Instant>> {
            self.poll_waiter(id, now, Duration::MAX, waker, terms)
                .map_err(|look| match look {
                    Look::Again(at) => at,
                    Look::Beyond(closed) => panic!("turned away: {closed:?}"),
                    Look::Reroute => panic!("sent to another gate"),
                })
        }

        /// A call that respects the quota arriving: `Ok(admission)` or `Err(id)`.
        fn come(&mut self, now: Instant) -> Result<Admission, u64> {
            self.arrive_as(now, TERMS)
        }

        /// A call with `terms` and all the time in the world arriving.
        fn arrive_as(&mut self, now: Instant, terms: Terms) -> Result<Admission, u64> {
            match self.arrive(now, terms, Duration::MAX) {
                Arrival::Admitted(admission) => Ok(admission),
                Arrival::Queued(id) => Err(id),
                Arrival::Beyond(closed_for) => panic!("turned away for {closed_for:?}"),
                Arrival::Short { until, by } => panic!("short until {until:?}: {by:?}"),
            }
        }

        /// Polls `id`, the head of the queue, until it goes, letting time pass as asked.
        fn go(&mut self, id: u64, now: Instant, waker: &Waker) -> (Admission, Instant) {
            self.poll_until_let_through(id, now, waker, TERMS)
        }

        /// Polls the queued `ids` from `now`: the first goes without a probe, at the instant
        /// returned, and all but the last go with it; the last still waits.
        fn all_but_the_last_go_together(
            &mut self,
            ids: &[u64],
            now: Instant,
            waker: &Waker,
        ) -> (Admission, Instant) {
            let (head, at) = self.go(ids[0], now, waker);
            assert!(head.probe.is_none(), "no probe: the quota was restored");
            let (last, together) = ids[1..].split_last().unwrap();
            for id in together {
                assert!(self.ask(*id, at, waker, TERMS).is_ok());
            }
            assert!(self.ask(*last, at, waker, TERMS).is_err());
            (head, at)
        }

        /// Polls `id`, the head of its queue, with `terms` until it goes. A gate that answers
        /// "look again" a thousand times fails the test rather than hang it (one that releases
        /// at `now` for ever, or at no time): no test here needs a tenth of that.
        fn poll_until_let_through(
            &mut self,
            id: u64,
            mut now: Instant,
            waker: &Waker,
            terms: Terms,
        ) -> (Admission, Instant) {
            for _ in 0..1_000 {
                match self.ask(id, now, waker, terms) {
                    Ok(admission) => return (admission, now),
                    Err(Some(at)) => now = at,
                    Err(None) => panic!("{id} is not the head of the queue"),
                }
            }
            panic!("{id} not let through in a thousand looks");
        }
    }

    /// A gate closed for `wait` by a 429, and `waiters` calls queued at it: now, the gate, a
    /// waker, and the waiters' ids.
    fn closed_with_waiters(wait: Duration, waiters: usize) -> (Instant, Gate, Waker, Vec<u64>) {
        let now = Instant::now();
        let mut gate = closed_gate(now, wait);
        let (_, waker) = waker();
        let ids = (0..waiters).map(|_| gate.come(now).unwrap_err()).collect();
        (now, gate, waker, ids)
    }

    /// A gate closed until `now + wait` by a 429 to one request, that request answered.
    /// A gate closed for a second with three waiters, whose probe came back at `open` with a
    /// policy pacing releases a second apart.
    fn released_at_a_pace_of_a_second() -> (Instant, Instant, Gate, Waker, Vec<u64>) {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (probe, open) = gate.go(ids[0], now, &waker);
        let policy = Report {
            pace: paced(SECOND, open),
            ..HEALTHY
        };
        gate.answered(probe, policy, open);
        (now, open, gate, waker, ids)
    }

    fn closed_gate(now: Instant, wait: Duration) -> Gate {
        let mut gate = Gate::new();
        let admitted = gate.come(now).unwrap();
        gate.answered(admitted, closed(now + wait), now);
        gate
    }

    /// A gate a 429 closed for a second at `now`, to a call with `terms`; the key had answered
    /// healthy before if `known`.
    fn refused_after(known: bool, now: Instant, terms: Terms) -> Gate {
        let mut gate = Gate::new();
        if known {
            let accepted = gate.arrive_as(now, terms).unwrap();
            gate.answered(accepted, HEALTHY, now);
        }
        let refused = gate.arrive_as(now, terms).unwrap();
        gate.answered(refused, closed(now + SECOND), now);
        gate
    }

    /// How many of the waiters `ids` with `terms` go at the instant `at`.
    fn go_at(gate: &mut Gate, ids: &[u64], at: Instant, waker: &Waker, terms: Terms) -> usize {
        ids.iter()
            .filter(|id| gate.ask(**id, at, waker, terms).is_ok())
            .count()
    }

    /// Where a fleet learns the key's pace in its store, the store holds each call by it, as a
    /// gate's own law does: the ramp would spread the burst the law lets go at a reset (and a
    /// round spread wider than the server's window counts as more than one). Only once the
    /// law knows the key: a closure that followed an accepted answer.
    #[test]
    fn where_its_fleet_learns_the_key_a_gate_releases_its_backlog_at_once_not_on_the_ramp() {
        let now = Instant::now();
        let (_, waker) = waker();
        // How many of ten waiters go the instant the probe comes back healthy after a 429
        // closed the gate, for calls with `terms`, the key having answered healthy before if
        // `known` (the ramp lets none go with it: the first a spacing after).
        let released = |terms: Terms, known: bool| {
            let mut gate = refused_after(known, now, terms);
            let backlog: Vec<u64> = (0..10)
                .map(|_| gate.arrive_as(now, terms).unwrap_err())
                .collect();
            let (probe, open) = gate.poll_until_let_through(backlog[0], now, &waker, terms);
            assert!(probe.probe.is_some(), "a probe first, alone");
            gate.answered(probe, HEALTHY, open);
            go_at(&mut gate, &backlog[1..], open, &waker, terms)
        };
        assert_eq!(released(FLEET, true), 9, "the fleet's law holds them");
        assert_eq!(
            released(FLEET, false),
            0,
            "nothing learned yet: on the ramp"
        );
        assert_eq!(released(TERMS, true), 0, "no law: on the ramp");
        let not_learning = Terms {
            learned: false,
            ..FLEET
        };
        assert_eq!(
            released(not_learning, true),
            0,
            "the store does not pace it"
        );
    }

    /// A window the server said was spent is no closure the fleet's law knows of: its
    /// reset's backlog leaves on the ramp where no quota restores it, though the key's last
    /// closure was released at once.
    #[test]
    fn after_a_spent_window_a_fleets_gate_releases_on_the_ramp_as_any_gate_does() {
        let now = Instant::now();
        let (_, waker) = waker();
        let mut gate = refused_after(true, now, FLEET);
        let open = now + SECOND;
        let probe = gate.arrive_as(open, FLEET).unwrap();
        assert!(probe.probe.is_some());
        gate.answered(probe, quota(0, open + SECOND), open);
        let backlog: Vec<u64> = (0..10)
            .map(|_| gate.arrive_as(open, FLEET).unwrap_err())
            .collect();
        let (probe, reset) = gate.poll_until_let_through(backlog[0], open, &waker, FLEET);
        assert!(probe.probe.is_some(), "the new window probed");
        gate.answered(probe, HEALTHY, reset);
        let released = go_at(&mut gate, &backlog[1..], reset, &waker, FLEET);
        assert_eq!(released, 0, "on the ramp: the first a spacing after");
    }

    #[test]
    fn an_open_gate_lets_calls_through_without_queueing() {
        let now = Instant::now();
        let mut gate = Gate::new();
        for _ in 0..3 {
            assert!(gate.come(now).unwrap().probe.is_none());
        }
        assert_eq!(gate.in_flight(), 3);
        assert_eq!(gate.waiters(), 0);
    }

    #[test]
    fn a_closed_gate_queues_and_the_head_waits_for_the_instructed_time() {
        let now = Instant::now();
        let mut gate = closed_gate(now, 2 * SECOND);
        let (_, waker) = waker();
        let id = gate.come(now).unwrap_err();
        assert_eq!(
            gate.ask(id, now, &waker, TERMS),
            Err(Some(now + 2 * SECOND))
        );
        let early = now + 2 * SECOND - MS;
        assert_eq!(
            gate.ask(id, early, &waker, TERMS),
            Err(Some(now + 2 * SECOND))
        );
        let admitted = gate.ask(id, now + 2 * SECOND, &waker, TERMS).unwrap();
        assert!(admitted.probe.is_some(), "the first out probes");
    }

    #[test]
    fn a_shorter_closure_never_brings_the_gate_forward() {
        let now = Instant::now();
        let mut gate = closed_gate(now, 10 * SECOND);
        assert_eq!(gate.come(now), Err(0));
        gate.learn(closed(now + SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(10 * SECOND));
        gate.learn(closed(now + 20 * SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(20 * SECOND));
    }

    #[test]
    fn a_longer_closure_learned_elsewhere_wakes_the_call_waiting_to_look_again() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 2);
        let (woken, head) = self::waker();
        assert_eq!(gate.ask(ids[0], now, &head, TERMS), Err(Some(now + SECOND)));
        assert_eq!(
            gate.ask(ids[1], now, &waker, TERMS),
            Err(None),
            "behind the head"
        );
        gate.learn(closed(now + 120 * SECOND), now);
        gate.take_wakes().into_iter().for_each(Waker::wake);
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            1,
            "the head looks again now"
        );
        assert_eq!(
            gate.poll_waiter(ids[0], now, 30 * SECOND, &head, TERMS),
            Err(Look::Beyond(Closed {
                left: 120 * SECOND,
                by: HeldBy::Fleet
            })),
            "and is turned away at once: it may not wait that long"
        );
    }

    #[test]
    fn after_a_closure_one_probe_goes_alone_and_a_refusal_closes_again() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let open = now + SECOND;
        let probe = gate.ask(ids[0], open, &waker, TERMS).unwrap();
        assert!(probe.probe.is_some());
        assert_eq!(
            gate.ask(ids[1], open, &waker, TERMS),
            Err(Some(open + TERMS.probe_timeout)),
            "behind the probe, until it answers or its time is up"
        );
        gate.answered(probe, closed(open + SECOND), open);
        assert_eq!(
            gate.ask(ids[1], open, &waker, TERMS),
            Err(Some(open + SECOND))
        );
    }

    #[test]
    fn a_refused_probe_owes_another_even_when_the_closure_is_not_later() {
        let (now, mut gate, waker, ids) = closed_with_waiters(10 * SECOND, 2);
        let (probe, open) = gate.go(ids[0], now, &waker);
        // Another request's 429 had closed the gate further meanwhile; this one is refused
        // with a shorter wait.
        gate.learn(closed(open + 20 * SECOND), open);
        gate.answered(probe, closed(open + SECOND), open);
        assert_eq!(
            gate.ask(ids[1], open, &waker, TERMS),
            Err(Some(open + 20 * SECOND))
        );
        let (next, _) = gate.go(ids[1], open, &waker);
        assert!(next.probe.is_some());
    }

    #[test]
    fn a_late_answer_to_an_older_probe_changes_nothing() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (old_probe, open) = gate.go(ids[0], now, &waker);
        // A 429 to another request closes the gate again; a new probe goes after it.
        gate.learn(closed(open + SECOND), open);
        let (new_probe, reopen) = gate.go(ids[1], open, &waker);
        assert_ne!(old_probe.epoch, new_probe.epoch);
        gate.answered(old_probe, HEALTHY, reopen);
        assert_eq!(
            gate.ask(ids[2], reopen, &waker, TERMS),
            Err(Some(reopen + TERMS.probe_timeout)),
            "still behind the new probe"
        );
        gate.answered(new_probe, HEALTHY, reopen);
        assert!(
            gate.go(ids[2], reopen, &waker).0.probe.is_none(),
            "the new probe's answer began the release"
        );
    }

    #[test]
    fn with_nothing_known_the_backlog_leaves_on_a_ramp_then_the_gate_opens() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let backlog: Vec<u64> = (0..50).map(|_| gate.come(now).unwrap_err()).collect();
        let (probe, mut clock) = gate.go(backlog[0], now + SECOND, &waker);
        assert!(probe.probe.is_some());
        gate.answered(probe, HEALTHY, clock);
        let mut next = 1;
        let mut rounds = Vec::new();
        let mut late = None;
        while next < backlog.len() {
            // Out go as many as the ramp allows, never two in the same instant.
            let mut out = Vec::new();
            while next < backlog.len() {
                match gate.ask(backlog[next], clock, &waker, TERMS) {
                    Ok(admitted) => {
                        assert!(admitted.probe.is_none());
                        out.push(admitted);
                        next += 1;
                    }
                    Err(Some(at)) if at == clock + SPACING => clock = at,
                    Err(_) => break,
                }
            }
            rounds.push(out.len());
            // Calls arriving during the release wait behind the backlog.
            late = late.or_else(|| gate.come(clock).err());
            // Every one of them comes back healthy.
            clock += 10 * MS;
            for admitted in out {
                gate.answered(admitted, HEALTHY, clock);
            }
        }
        assert_eq!(
            rounds,
            [2, 4, 8, 16, 19],
            "the burst doubles each round trip"
        );
        // The backlog gone, the call that arrived during it goes with none behind it: the
        // gate opens.
        assert!(gate.ask(late.unwrap(), clock, &waker, TERMS).is_ok());
        assert!(gate.come(clock).unwrap().probe.is_none(), "open again");
        assert!(gate.come(clock).is_ok());
    }

    #[test]
    fn calls_that_arrive_during_the_release_leave_on_its_ramp_not_at_once_when_it_ends() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let backlog: Vec<u64> = (0..3).map(|_| gate.come(now).unwrap_err()).collect();
        let (probe, clock) = gate.go(backlog[0], now + SECOND, &waker);
        gate.answered(probe, HEALTHY, clock);
        // Twenty calls arrive while two of the backlog are still to leave: they wait behind it.
        let late: Vec<u64> = (0..20).map(|_| gate.come(clock).unwrap_err()).collect();
        let out = round(&mut gate, &backlog[1..], clock, &waker);
        assert_eq!(out.len(), 2, "the probe's answer lets two out");
        assert!(
            round(&mut gate, &late, clock, &waker).is_empty(),
            "the backlog gone, the twenty still wait for the ramp"
        );
        let clock = clock + 10 * MS;
        for admitted in out {
            gate.answered(admitted, HEALTHY, clock);
        }
        let next = round(&mut gate, &late, clock, &waker);
        assert_eq!(next.len(), 4, "two answers: four out, a spacing apart");
        let sent: Vec<Instant> = next.iter().map(|admitted| admitted.sent).collect();
        assert!(sent.windows(2).all(|pair| pair[0] < pair[1]), "{sent:?}");
    }

    /// The last call of the backlog leaving with calls behind it that came after the ones
    /// before it left: the release goes on for them.
    #[test]
    fn the_backlogs_last_call_leaving_with_calls_behind_it_does_not_open_the_gate() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let backlog: Vec<u64> = (0..2).map(|_| gate.come(now).unwrap_err()).collect();
        let (probe, clock) = gate.go(backlog[0], now + SECOND, &waker);
        gate.answered(probe, HEALTHY, clock);
        // One of the backlog is left; five more calls arrive behind it.
        let late: Vec<u64> = (0..5).map(|_| gate.come(clock).unwrap_err()).collect();
        assert_eq!(round(&mut gate, &backlog[1..], clock, &waker).len(), 1);
        assert!(
            round(&mut gate, &late, clock, &waker).len() < late.len(),
            "the five leave on the ramp, not at once"
        );
    }

    /// A gate closed for a second by a 429 while `early` was out, its probe back healthy at
    /// the returned instant, with nine calls of its backlog still to leave on the ramp.
    fn releasing_with_one_out_from_before() -> (Gate, Waker, Admission, Vec<u64>, Instant) {
        let now = Instant::now();
        let mut gate = Gate::new();
        let early = gate.come(now).unwrap();
        let refused = gate.come(now).unwrap();
        gate.answered(refused, closed(now + SECOND), now);
        let (_, waker) = waker();
        let backlog: Vec<u64> = (0..10).map(|_| gate.come(now).unwrap_err()).collect();
        let (probe, open) = gate.go(backlog[0], now + SECOND, &waker);
        gate.answered(probe, HEALTHY, open);
        (gate, waker, early, backlog[1..].to_vec(), open)
    }

    /// Lets out of `backlog` what the release allows from `clock` (each a spacing after the
    /// last): the admissions.
    fn round(
        gate: &mut Gate,
        backlog: &[u64],
        mut clock: Instant,
        waker: &Waker,
    ) -> Vec<Admission> {
        let mut out = Vec::new();
        for id in backlog {
            match gate.ask(*id, clock, waker, TERMS) {
                Ok(admitted) => out.push(admitted),
                Err(Some(at)) if at == clock + SPACING => {
                    clock = at;
                    match gate.ask(*id, clock, waker, TERMS) {
                        Ok(admitted) => out.push(admitted),
                        Err(_) => break,
                    }
                }
                Err(_) => break,
            }
        }
        out
    }

    #[test]
    fn an_episode_turns_once_when_the_key_closes_and_once_when_its_probe_reopens_it() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (first, second) = (gate.come(now).unwrap(), gate.come(now).unwrap());
        let closing = gate.answered(first, closed(now + SECOND), now);
        assert!(matches!(closing, Some(Episode::Closed(_))), "{closing:?}");
        assert_eq!(gate.answered(second, closed(now + SECOND), now), None);
        let (_, waker) = waker();
        let ids: Vec<u64> = (0..3).map(|_| gate.come(now).unwrap_err()).collect();
        let (probe, open) = gate.go(ids[0], now, &waker);
        assert_eq!(gate.answered(probe, HEALTHY, open), Some(Episode::Reopened));
        let (next, at) = gate.go(ids[1], open, &waker);
        assert_eq!(gate.answered(next, HEALTHY, at), None, "reopened once");
    }

    #[test]
    fn a_reset_lets_go_no_more_than_the_whole_quota_spent_or_not() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let first = gate.come(now).unwrap();
        let reset = now + SECOND;
        let room_left = Report {
            limit: Some(20),
            ..quota(5, reset)
        };
        gate.answered(first, room_left, now);
        // The window had room; its reset gives the whole quota, and no more goes at it.
        let went = (0..30).filter(|_| gate.come(reset).is_ok()).count();
        assert_eq!(went, 20);
    }

    #[test]
    fn only_answers_to_requests_sent_since_the_closure_move_the_ramp() {
        let (mut gate, waker, early, backlog, open) = releasing_with_one_out_from_before();
        // Sent before the closure, its healthy answer says nothing of the reopened server.
        gate.answered(early, HEALTHY, open);
        assert_eq!(round(&mut gate, &backlog, open, &waker).len(), 2);
    }

    #[test]
    fn a_refusal_without_a_wait_owes_a_probe_only_if_sent_since_the_closure() {
        let refused = Report {
            refused: true,
            ..HEALTHY
        };
        let (mut gate, waker, early, backlog, open) = releasing_with_one_out_from_before();
        gate.answered(early, refused, open);
        let out = round(&mut gate, &backlog, open, &waker);
        assert!(
            out.iter().all(|admitted| admitted.probe.is_none()),
            "no probe owed"
        );
        // One of the release refused, with no wait to keep: the next request probes.
        gate.answered(out[0], refused, open + 10 * MS);
        let next = gate.ask(backlog[out.len()], open + 10 * MS, &waker, TERMS);
        assert!(next.unwrap().probe.is_some());
    }

    #[test]
    fn the_probes_refused_in_a_row_are_counted_until_a_healthy_answer() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (_, waker) = waker();
        // Refusals of requests that were no probe count nothing.
        let first = gate.arrive_as(now, UNLEARNED).unwrap();
        let second = gate.arrive_as(now, UNLEARNED).unwrap();
        assert!(first.probe.is_none() && second.probe.is_none());
        gate.answered(first, closed(now + 100 * MS), now + 10 * MS);
        gate.answered(second, closed(now + 100 * MS), now + 10 * MS);
        assert_eq!(gate.refused_probes(), 0);
        // Each probe refused counts once, however many calls wait behind it.
        let waiting: Vec<u64> = (0..4)
            .map(|_| gate.arrive_as(now + 20 * MS, UNLEARNED).unwrap_err())
            .collect();
        let mut clock = now + 20 * MS;
        for (refused, id) in (1..=3).zip(&waiting) {
            let (probe, sent) = gate.poll_until_let_through(*id, clock, &waker, UNLEARNED);
            assert!(probe.probe.is_some());
            clock = sent + 10 * MS;
            gate.answered(probe, closed(clock + 100 * MS), clock);
            assert_eq!(gate.refused_probes(), refused);
        }
        // A healthy answer ends the row.
        let (probe, sent) = gate.poll_until_let_through(waiting[3], clock, &waker, UNLEARNED);
        assert!(probe.probe.is_some());
        gate.answered(probe, HEALTHY, sent + 10 * MS);
        assert_eq!(gate.refused_probes(), 0);
    }

    /// A gate whose calls have `terms`: three requests accepted one after the other from
    /// `now`, then a fourth refused, its instruction a second, the closure a spread longer.
    /// When the refusal was heard.
    fn learned_three_then_refused(gate: &mut Gate, now: Instant, terms: Terms) -> Instant {
        let mut clock = now;
        for _ in 0..3 {
            let admitted = gate.arrive_as(clock, terms).unwrap();
            clock += 20 * MS;
            gate.answered(admitted, HEALTHY, clock);
        }
        let admitted = gate.arrive_as(clock, terms).unwrap();
        clock += 20 * MS;
        let refusal = Report {
            instructed_until: Some(clock + SECOND),
            ..closed(clock + SECOND + 80 * MS)
        };
        gate.answered(admitted, refusal, clock);
        clock
    }

    #[test]
    fn after_a_refusal_the_learned_burst_goes_at_once_where_the_instruction_ends() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let heard = learned_three_then_refused(&mut gate, now, LEARNING);
        // What the key accepted bounds what goes at the reopening: no spread idles the key.
        assert_eq!(gate.closed_for(heard, LEARNING), Some(SECOND));
        let (_, waker) = waker();
        let ids: Vec<u64> = (0..5)
            .map(|_| gate.arrive_as(heard, LEARNING).unwrap_err())
            .collect();
        let open = heard + SECOND;
        let (_, at) = gate.poll_until_let_through(ids[0], heard, &waker, LEARNING);
        assert_eq!(at, open);
        // The instruction named the reset: the others go with it, waiting for no probe.
        for id in &ids[1..3] {
            assert!(gate.ask(*id, open, &waker, LEARNING).is_ok());
        }
        assert!(
            gate.ask(ids[3], open, &waker, LEARNING).is_err(),
            "three went, as many as the key accepted"
        );

        // A layer that does not learn keeps the spread, and probes.
        let mut gate = Gate::new();
        let heard = learned_three_then_refused(&mut gate, now, UNLEARNED);
        assert_eq!(gate.closed_for(heard, UNLEARNED), Some(SECOND + 80 * MS));
        let id = gate.arrive_as(heard, UNLEARNED).unwrap_err();
        let (head, _) = gate.poll_until_let_through(id, heard, &waker, UNLEARNED);
        assert!(head.probe.is_some());
    }

    /// The terms of a call through a layer that does not learn limits.
    const UNLEARNED: Terms = TERMS;

    /// A gate whose calls have `terms`, told nothing by the server: three requests accepted,
    /// a fourth refused (closed a guessed 400 ms), a fifth accepted after that closure (which
    /// gives the law its period), a sixth refused, the layer guessing `guess` for it. When that
    /// refusal was heard.
    fn learned_a_period_then_refused(
        gate: &mut Gate,
        now: Instant,
        terms: Terms,
        guess: Duration,
    ) -> Instant {
        let (_, waker) = waker();
        let mut clock = now;
        for nth in 0..6 {
            let admitted = match gate.arrive_as(clock, terms) {
                Ok(admitted) => admitted,
                Err(id) => gate.poll_until_let_through(id, clock, &waker, terms).0,
            };
            clock = clock.max(admitted.sent) + 20 * MS;
            let answer = match nth {
                3 => closed(clock + 400 * MS),
                5 => closed(clock + guess),
                _ => HEALTHY,
            };
            gate.answered(admitted, answer, clock);
        }
        clock
    }

    #[test]
    fn a_guessed_closure_of_a_request_the_law_let_go_ends_no_later_than_its_reset() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let heard = learned_a_period_then_refused(&mut gate, now, LEARNING, 3 * SECOND);
        let reset = gate
            .learn
            .current_until(heard)
            .expect("the law guesses a reset");
        assert!(reset > heard && reset < heard + 3 * SECOND);
        // Both are guesses: the law's, from what the key accepted, holds the others.
        assert_eq!(gate.closed_for(heard, LEARNING), Some(reset - heard));

        // A guess sooner than the law's reset stays the guess.
        let mut gate = Gate::new();
        let heard = learned_a_period_then_refused(&mut gate, now, LEARNING, 100 * MS);
        let reset = gate.learn.current_until(heard);
        assert!(reset.is_some_and(|reset| reset > heard + 100 * MS));
        assert_eq!(gate.closed_for(heard, LEARNING), Some(100 * MS));

        // A layer that does not learn keeps its own guess.
        let mut gate = Gate::new();
        let heard = learned_a_period_then_refused(&mut gate, now, UNLEARNED, 3 * SECOND);
        assert_eq!(gate.closed_for(heard, UNLEARNED), Some(3 * SECOND));
    }

    #[test]
    fn the_first_call_the_learned_pace_lets_go_is_the_probe_the_others_owe() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let heard = learned_three_then_refused(&mut gate, now, LEARNING);
        let open = heard + SECOND + 80 * MS;
        let paced = gate.arrive_as(open, LEARNING).unwrap();
        assert!(paced.probe.is_some());
        let (_, waker) = waker();
        let unlearned = gate.arrive_as(open, UNLEARNED).unwrap_err();
        assert!(gate.ask(unlearned, open, &waker, UNLEARNED).is_err());
        let back = open + 30 * MS;
        gate.answered(paced, HEALTHY, back);
        let let_through = gate.ask(unlearned, back, &waker, UNLEARNED).unwrap();
        assert!(let_through.probe.is_none(), "the probe came back healthy");
        let next = gate.arrive_as(back, LEARNING).unwrap();
        assert!(next.probe.is_none(), "no probe is owed any more");
    }

    /// A response that states the server's policy (a pace, no count) has spoken as a quota
    /// does: what the law learned of a silent server is forgotten.
    #[test]
    fn a_policys_pace_alone_makes_the_law_forget_what_it_learned() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let heard = learned_three_then_refused(&mut gate, now, LEARNING);
        assert!(gate.learn.is_known());
        let open = heard + SECOND + 80 * MS;
        let admitted = gate.arrive_as(open, LEARNING).unwrap();
        let policy = Report {
            pace: paced(100 * MS, open),
            ..HEALTHY
        };
        gate.answered(admitted, policy, open + 20 * MS);
        assert!(!gate.learn.is_known());
    }

    #[test]
    fn the_learned_pace_never_holds_a_call_beyond_its_cap() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let heard = learned_three_then_refused(&mut gate, now, LEARNING);
        let open = heard + SECOND;
        for _ in 0..3 {
            gate.arrive_as(open, LEARNING).unwrap();
        }
        // The burst is out and the period runs a second: a call capped below it goes anyway.
        let short = Terms {
            cap: 100 * MS,
            ..LEARNING
        };
        assert!(
            gate.arrive_as(open, short).is_ok(),
            "the pace is beyond its cap"
        );
        assert!(gate.arrive_as(open, LEARNING).is_err(), "held by the pace");
    }

    #[test]
    fn a_request_that_hangs_holds_the_learned_pace_no_longer_than_a_probe_would() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let heard = learned_three_then_refused(&mut gate, now, LEARNING);
        let open = heard + SECOND;
        for _ in 0..3 {
            gate.arrive_as(open, LEARNING).unwrap();
        }
        let (_, waker) = waker();
        // A new window: the three out never answer.
        let later = open + 2 * SECOND;
        let id = gate.arrive_as(later, LEARNING).unwrap_err();
        assert!(
            gate.ask(id, later, &waker, LEARNING).is_err(),
            "all three out"
        );
        let hung = open + LEARNING.probe_timeout;
        assert!(gate.ask(id, hung, &waker, LEARNING).is_ok());
    }

    #[test]
    fn meters_make_what_was_learned_moot() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let heard = learned_three_then_refused(&mut gate, now, LEARNING);
        let open = heard + SECOND;
        let admitted = gate.arrive_as(open, LEARNING).unwrap();
        gate.answered(admitted, quota(50, open + 10 * SECOND), open);
        for _ in 0..10 {
            gate.arrive_as(open, LEARNING)
                .expect("the quota the server reported, not the learned burst");
        }
    }

    #[test]
    fn a_reset_restores_the_whole_quota_the_server_gave_at_once_without_a_probe() {
        // Spent as the server said (none left), or by what is out (the last unit's answer is
        // still out at the reset): either way the reset restores the whole quota.
        for last_unit_out in [false, true] {
            let now = Instant::now();
            let mut gate = Gate::new();
            let reset = now + 10 * SECOND;
            let whole = |remaining, reset_at| Report {
                limit: Some(3),
                ..quota(remaining, reset_at)
            };
            let first = gate.come(now).unwrap();
            gate.answered(first, whole(u64::from(last_unit_out), reset), now);
            if last_unit_out {
                gate.come(now).unwrap();
            }
            let (_, waker) = waker();
            // At the reset the three restored (less the one still out) go together, without a
            // probe; the next waits for answers.
            let waiting = if last_unit_out { 3 } else { 4 };
            let ids: Vec<u64> = (0..waiting).map(|_| gate.come(now).unwrap_err()).collect();
            let (head, at) = gate.all_but_the_last_go_together(&ids, now, &waker);
            assert_eq!(at, reset, "last unit out: {last_unit_out}");
            // The first answer replaces what was restored, whatever window it names: the
            // restored one was taken to last ten seconds, as the one before did.
            gate.answered(head, whole(1, reset + SECOND), reset);
            assert_eq!(gate.quota(reset).unwrap().remaining, 1);
        }
    }

    #[test]
    fn a_request_that_hangs_holds_the_quota_no_longer_than_a_probe_would() {
        // A window of one request a second; the request the second window let through never
        // answers. It holds each window's one request only as long as a probe that hangs
        // holds the gate: after that the next call goes, at the next reset.
        let now = Instant::now();
        let mut gate = Gate::new();
        let one = |remaining, reset_at| Report {
            limit: Some(1),
            ..quota(remaining, reset_at)
        };
        let first = gate.come(now).unwrap();
        gate.answered(first, one(0, now + SECOND), now);
        let (_, waker) = waker();
        let hangs = gate.come(now).unwrap_err();
        let (_hung, sent) = gate.go(hangs, now, &waker);
        assert_eq!(sent, now + SECOND, "at the first reset");
        let next = gate.come(sent).unwrap_err();
        let (answered, went) = gate.go(next, sent, &waker);
        assert_eq!(went, sent + TERMS.probe_timeout + SECOND);
        assert_eq!(gate.in_flight(), 2, "the hung request is still out");
        // That one answers: it holds nothing from then, and the hung one still nothing, so the
        // next call goes at the next reset.
        gate.answered(answered, one(0, went + SECOND), went);
        let third = gate.come(went).unwrap_err();
        let (_, third_went) = gate.go(third, went, &waker);
        assert_eq!(third_went, went + SECOND);
        assert_eq!(gate.in_flight(), 2, "the hung request and the third");
    }

    #[test]
    fn only_a_refusal_of_what_a_reset_restored_stops_the_next_reset_restoring() {
        let now = Instant::now();
        let first_reset = now + SECOND;
        let next_reset = first_reset + SECOND;
        let whole = |remaining, reset_at| Report {
            limit: Some(3),
            ..quota(remaining, reset_at)
        };
        let refused = |reset_at| Report {
            refused: true,
            closed_until: Some(reset_at),
            ..whole(0, reset_at)
        };
        let mut gate = Gate::new();
        let first = gate.come(now).unwrap();
        gate.answered(first, whole(1, first_reset), now);
        // Refused on the quota the server reported: its reset still restores the whole 3.
        let reported = gate.come(now).unwrap();
        assert!(!reported.restored);
        gate.answered(reported, refused(first_reset), now);
        assert!(gate.window.take_over(first_reset).is_some());
        assert!(gate.window.restore(gate.epoch + 1, first_reset));
        // Refused on what the reset restored: the next reset restores nothing.
        let restored = gate.come(first_reset).unwrap();
        assert!(restored.restored, "it went on what the reset restored");
        gate.answered(restored, refused(next_reset), first_reset);
        assert!(gate.window.take_over(next_reset).is_some());
        assert!(!gate.window.restore(gate.epoch + 1, next_reset));
    }

    #[test]
    fn a_known_quota_releases_at_once_up_to_what_remains() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 5);
        let (probe, open) = gate.go(ids[0], now, &waker);
        gate.answered(probe, quota(2, open + 60 * SECOND), open);
        let second = gate.ask(ids[1], open, &waker, TERMS).unwrap();
        let third = gate.ask(ids[2], open, &waker, TERMS).unwrap();
        assert!(second.probe.is_none() && third.probe.is_none());
        assert_eq!(
            gate.ask(ids[3], open, &waker, TERMS),
            Err(Some(open + 60 * SECOND)),
            "both units are out: until their answers, or the reset"
        );
        gate.answered(second, quota(1, open + 60 * SECOND), open);
        gate.answered(third, quota(0, open + 60 * SECOND), open);
        assert_eq!(
            gate.ask(ids[3], open, &waker, TERMS),
            Err(Some(open + 60 * SECOND)),
            "two remained: the rest wait for the reset"
        );
        assert!(
            gate.go(ids[3], open, &waker).0.probe.is_some(),
            "the new window probes"
        );
    }

    #[test]
    fn a_known_policy_paces_releases_at_its_rate() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 4);
        let (probe, open) = gate.go(ids[0], now, &waker);
        let policy = Report {
            pace: paced(100 * MS, now),
            ..Report::default()
        };
        gate.answered(probe, policy, open);
        assert_eq!(
            gate.ask(ids[1], open, &waker, TERMS),
            Err(Some(open + 100 * MS))
        );
        let second = gate.ask(ids[1], open + 100 * MS, &waker, TERMS).unwrap();
        assert!(
            second.probe.is_none(),
            "at a known rate, nobody waits for answers"
        );
        assert_eq!(
            gate.ask(ids[2], open + 100 * MS, &waker, TERMS),
            Err(Some(open + 200 * MS))
        );
    }

    #[test]
    fn a_spent_window_closes_the_gate_until_its_reset() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let admitted = gate.come(now).unwrap();
        gate.answered(admitted, quota(0, now + 30 * SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(30 * SECOND));
        let (_, waker) = waker();
        let id = gate.come(now).unwrap_err();
        assert_eq!(
            gate.ask(id, now, &waker, TERMS),
            Err(Some(now + 30 * SECOND))
        );
        let admitted = gate.ask(id, now + 30 * SECOND, &waker, TERMS).unwrap();
        assert!(admitted.probe.is_some());
    }

    #[test]
    fn three_left_means_three_go_and_the_rest_wait_for_the_reset() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let admitted = gate.come(now).unwrap();
        gate.answered(admitted, quota(3, now + 10 * SECOND), now);
        let outcomes: Vec<_> = (0..50).map(|_| gate.come(now)).collect();
        let gone: Vec<Admission> = outcomes.iter().filter_map(|outcome| outcome.ok()).collect();
        assert_eq!(gone.len(), 3);
        assert_eq!(gate.waiters(), 47);
        for (admission, left) in gone.into_iter().zip([2, 1, 0]) {
            gate.answered(admission, quota(left, now + 10 * SECOND), now);
        }
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(10 * SECOND));
    }

    #[test]
    fn answers_out_of_order_do_not_close_a_window_that_still_has_quota() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (_, waker) = waker();
        let first = gate.come(now).unwrap();
        gate.answered(first, quota(8, now + 10 * SECOND), now);
        let out: Vec<Admission> = (0..6).map(|_| gate.come(now).unwrap()).collect();
        // The request the server counted last answers first: the lowest figure runs ahead of
        // the five answers still out.
        gate.answered(out[5], quota(2, now + 10 * SECOND), now);
        let id = gate.come(now).unwrap_err();
        assert_eq!(
            gate.closed_for(now, Terms::EVERYTHING),
            None,
            "busy, not closed"
        );
        assert_eq!(
            gate.ask(id, now, &waker, TERMS),
            Err(Some(now + 10 * SECOND)),
            "waits for the answers, or the reset"
        );
        for (admission, left) in out[..5].iter().zip([7, 6, 5, 4, 3]) {
            gate.answered(*admission, quota(left, now + 10 * SECOND), now);
        }
        assert!(
            gate.ask(id, now, &waker, TERMS).is_ok(),
            "two units were left after all"
        );
    }

    #[test]
    fn a_call_not_respecting_the_quota_waits_only_for_a_429() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let admitted = gate.come(now).unwrap();
        gate.answered(admitted, quota(0, now + 10 * SECOND), now);
        assert!(
            gate.arrive_as(now, UNMETERED).is_ok(),
            "a spent window does not hold it"
        );
        gate.learn(closed(now + 5 * SECOND), now);
        assert!(
            gate.arrive_as(now, UNMETERED).is_err(),
            "a 429's closure does"
        );
    }

    #[test]
    fn quota_reports_within_a_window_keep_the_lowest_figure() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(5, now + 10 * SECOND), now);
        gate.learn(quota(7, now + 10 * SECOND + SECOND), now);
        assert_eq!(gate.quota(now).map(|quota| quota.remaining), Some(5));
        let later = now + 11 * SECOND;
        gate.learn(quota(9, later + 10 * SECOND), later);
        assert_eq!(gate.quota(later).map(|quota| quota.remaining), Some(9));
    }

    #[test]
    fn a_straggler_from_a_window_already_over_does_not_spoil_the_new_one() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (_, waker) = waker();
        let straggler = gate.come(now).unwrap();
        let first = gate.come(now).unwrap();
        gate.answered(first, quota(0, now + SECOND), now);
        let id = gate.come(now).unwrap_err();
        let (probe, reset) = gate.go(id, now, &waker);
        assert_eq!(reset, now + SECOND);
        gate.answered(probe, quota(49, reset + SECOND), reset);
        // The answer to a request of the old window comes back last.
        gate.answered(straggler, quota(0, now + SECOND + MS), reset);
        assert_eq!(gate.quota(reset).map(|quota| quota.remaining), Some(49));
    }

    #[test]
    fn a_spent_window_holds_until_the_latest_reset_that_said_so() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(1, now + 4 * SECOND), now);
        gate.learn(quota(0, now + 5 * SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(5 * SECOND));
        gate.learn(quota(0, now + 4 * SECOND + SECOND / 2), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(5 * SECOND));
        // An answer from earlier in the window, still with room, changes nothing.
        gate.learn(quota(2, now + 4 * SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(5 * SECOND));
        // A later reset that says spent moves the hold out.
        gate.learn(quota(0, now + 6 * SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(6 * SECOND));
    }

    #[test]
    fn a_longer_meter_with_room_does_not_lift_a_spent_shorter_one() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(0, now + SECOND), now);
        gate.learn(quota(30, now + 50 * SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(SECOND));
        // Once the spent window is over, the longer one is learned afresh.
        let later = now + 2 * SECOND;
        gate.learn(quota(30, later + 50 * SECOND), later);
        assert_eq!(gate.quota(later).map(|quota| quota.remaining), Some(30));
    }

    #[test]
    fn a_shorter_meter_spent_holds_though_a_longer_one_has_room() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(40, now + 50 * SECOND), now);
        // The per-second quota is now the binding one, and it is spent.
        gate.learn(quota(0, now + SECOND), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), Some(SECOND));
        // A shorter window with room left changes nothing, tighter or not: a straggler from
        // the window before, or a meter not yet spent.
        let later = now + 2 * SECOND;
        gate.learn(quota(3, later + 50 * SECOND), later);
        gate.learn(quota(9, later + SECOND), later);
        gate.learn(quota(1, later + SECOND), later);
        let known = Quota {
            remaining: 3,
            reset_at: later + 50 * SECOND,
            second: None,
        };
        assert_eq!(gate.quota(later), Some(known));
        assert_eq!(gate.quota(later + 2 * SECOND), Some(known));
    }

    #[test]
    fn a_report_from_the_next_window_replaces_the_old_one_before_it_ends() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(1, now + 10 * SECOND), now);
        let early = now + 9 * SECOND + SECOND / 2;
        gate.learn(quota(99, early + 60 * SECOND), early);
        let quota = gate.quota(early).unwrap();
        assert_eq!((quota.remaining, quota.reset_at), (99, early + 60 * SECOND));
    }

    #[test]
    fn a_probe_that_never_comes_back_is_owed_again() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let first = gate.come(now).unwrap_err();
        let second = gate.come(now).unwrap_err();
        let (probe, open) = gate.go(first, now, &waker);
        gate.abandoned(probe, now);
        assert_eq!(gate.in_flight(), 0);
        let next = gate.ask(second, open, &waker, TERMS).unwrap();
        assert!(next.probe.is_some(), "the next one probes");
    }

    /// Only the probe out, lost, owes another: a request let through on an open gate that
    /// ends unanswered closes nothing.
    #[test]
    fn a_request_that_never_comes_back_on_an_open_gate_owes_no_probe() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let lost = gate.come(now).unwrap();
        assert!(lost.probe.is_none());
        gate.abandoned(lost, now);
        let next = gate.come(now).unwrap();
        assert!(next.probe.is_none(), "no probe owed");
        assert!(gate.come(now).is_ok(), "nothing held");
    }

    #[test]
    fn the_head_is_woken_when_a_probe_comes_back_but_only_after_the_lock() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (count, waker) = waker();
        let first = gate.come(now).unwrap_err();
        let second = gate.come(now).unwrap_err();
        let (probe, open) = gate.go(first, now, &waker);
        gate.take_wakes();
        assert_eq!(
            gate.ask(second, open, &waker, TERMS),
            Err(Some(open + TERMS.probe_timeout))
        );
        gate.answered(probe, HEALTHY, open);
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            0,
            "not woken under the lock"
        );
        let wakes = gate.take_wakes();
        assert_eq!(wakes.len(), 1);
        wakes.into_iter().for_each(Waker::wake);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn leaving_frees_the_place_and_wakes_the_next_head() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 4);
        assert_eq!(gate.ask(ids[1], now, &waker, TERMS), Err(None));
        gate.leave(ids[2], true);
        gate.leave(ids[0], true);
        assert_eq!(gate.take_wakes().len(), 1, "the new head is woken");
        assert_eq!(gate.waiters(), 2);
        gate.leave(ids[1], true);
        gate.leave(ids[3], true);
        assert_eq!(gate.waiters(), 0);
        assert!(
            gate.queues.of(true).is_drained(),
            "gone places are dropped as they reach the front"
        );
        gate.leave(ids[3], true);
        assert_eq!(gate.waiters(), 0, "leaving twice changes nothing");
    }

    #[test]
    fn new_calls_never_overtake_waiters() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let first = gate.come(now).unwrap_err();
        let later = now + 2 * SECOND;
        assert!(
            gate.come(later).is_err(),
            "the gate is open, but someone waits"
        );
        assert!(gate.ask(first, later, &waker, TERMS).is_ok());
    }

    #[test]
    fn a_gate_is_idle_once_it_has_nothing_to_remember() {
        let now = Instant::now();
        let mut gate = Gate::new();
        assert!(gate.is_idle(now));
        let admitted = gate.come(now).unwrap();
        assert!(!gate.is_idle(now), "a request is out");
        gate.answered(admitted, quota(5, now + SECOND), now);
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

    #[test]
    fn a_call_not_respecting_the_quota_still_counts_in_flight() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let first = gate.come(now).unwrap();
        gate.answered(first, quota(2, now + 10 * SECOND), now);
        let out: Vec<Admission> = (0..2)
            .map(|_| gate.arrive_as(now, UNMETERED).unwrap())
            .collect();
        assert_eq!(gate.in_flight(), 2);
        assert!(
            gate.come(now).is_err(),
            "both units left are taken by the calls out"
        );
        for admission in out {
            gate.answered(admission, HEALTHY, now);
        }
        assert_eq!(gate.in_flight(), 0);
    }

    #[test]
    fn a_waiter_the_gate_does_not_know_goes_and_is_counted() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (_, waker) = waker();
        let admission = gate.ask(7, now, &waker, TERMS).unwrap();
        assert!(admission.counted);
        assert_eq!(gate.in_flight(), 1);
        gate.answered(admission, HEALTHY, now);
        assert_eq!(gate.in_flight(), 0);
    }

    #[test]
    fn the_gate_is_open_at_the_instant_its_closure_ends() {
        let now = Instant::now();
        let gate = closed_gate(now, 2 * SECOND);
        assert_eq!(
            gate.closed_for(now + 2 * SECOND - MS, Terms::EVERYTHING),
            Some(MS)
        );
        assert_eq!(gate.closed_for(now + 2 * SECOND, Terms::EVERYTHING), None);
    }

    #[test]
    fn a_closure_already_over_owes_no_probe() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(closed(now), now);
        assert_eq!(gate.closed_for(now, Terms::EVERYTHING), None);
        assert!(
            gate.come(now).unwrap().probe.is_none(),
            "the gate never closed: nothing to probe"
        );
    }

    #[test]
    fn a_quota_whose_window_ends_now_changes_nothing() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(5, now + SECOND), now);
        gate.learn(quota(0, now), now);
        assert_eq!(gate.quota(now).map(|quota| quota.remaining), Some(5));
    }

    #[test]
    fn at_its_reset_a_window_is_over_and_the_next_report_starts_a_new_one() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(1, now + SECOND), now);
        let reset = now + SECOND;
        gate.learn(quota(9, reset + SECOND), reset);
        assert_eq!(gate.quota(reset).map(|quota| quota.remaining), Some(9));
    }

    #[test]
    fn resets_two_seconds_apart_are_one_window() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(5, now + 10 * SECOND), now);
        let merged = Quota {
            remaining: 3,
            reset_at: now + 8 * SECOND,
            second: None,
        };
        // Two seconds earlier: the same window; the lowest figure and the earliest reset.
        gate.learn(quota(3, now + 8 * SECOND), now);
        assert_eq!(gate.quota(now), Some(merged));
        // Two seconds later: still the same window.
        gate.learn(quota(7, now + 10 * SECOND), now);
        assert_eq!(gate.quota(now), Some(merged));
    }

    #[test]
    fn a_report_with_room_more_than_two_seconds_earlier_is_a_straggler() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(5, now + 10 * SECOND), now);
        gate.learn(quota(3, now + 7 * SECOND), now);
        assert_eq!(gate.quota(now).map(|quota| quota.remaining), Some(5));
    }

    #[test]
    fn a_report_from_after_a_closure_replaces_the_quota_from_before_it() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(1, now + 10 * SECOND), now);
        gate.learn(closed(now + SECOND), now);
        let open = now + SECOND;
        let probe = gate.come(open).unwrap();
        assert!(probe.probe.is_some());
        gate.answered(probe, quota(5, now + 10 * SECOND), open);
        assert_eq!(gate.quota(open).map(|quota| quota.remaining), Some(5));
    }

    #[test]
    fn a_quota_is_over_at_its_reset() {
        let now = Instant::now();
        let mut gate = Gate::new();
        gate.learn(quota(5, now + SECOND), now);
        assert!(gate.quota(now + SECOND - MS).is_some());
        assert_eq!(gate.quota(now + SECOND), None);
    }

    /// Through the layer an extra epoch cannot be seen; this pins the invariant here.
    #[test]
    fn a_closure_that_does_not_move_the_reopening_is_not_a_new_one() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let id = gate.come(now).unwrap_err();
        // Another 429 naming the same instant (or a shared store repeating the closure).
        gate.learn(closed(now + SECOND), now);
        let (probe, _) = gate.go(id, now, &waker);
        assert!(probe.probe.is_some());
        assert_eq!(probe.epoch, 1, "one closure, one epoch");
    }

    #[test]
    fn a_lone_probe_holds_the_calls_that_arrive_while_it_is_out() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let open = now + SECOND;
        let probe = gate.come(open).unwrap();
        assert!(probe.probe.is_some());
        assert!(
            gate.come(open).is_err(),
            "nobody goes while the probe is out"
        );
        gate.answered(probe, HEALTHY, open);
    }

    #[test]
    fn with_a_known_policy_calls_that_came_during_a_lone_probe_leave_at_its_rate() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (_, waker) = waker();
        let first = gate.come(now).unwrap();
        let refusal = Report {
            pace: paced(100 * MS, now),
            ..closed(now + SECOND)
        };
        gate.answered(first, refusal, now);
        let open = now + SECOND;
        let probe = gate.come(open).unwrap();
        assert!(
            probe.probe.is_some(),
            "nobody waited: the probe leaves no backlog"
        );
        let ids: Vec<u64> = (0..3).map(|_| gate.come(open).unwrap_err()).collect();
        gate.answered(probe, HEALTHY, open);
        assert_eq!(
            gate.ask(ids[0], open, &waker, TERMS),
            Err(Some(open + 100 * MS)),
            "paced at the policy's rate, not all at once"
        );
    }

    #[test]
    fn a_pace_is_forgotten_once_the_window_it_was_stated_for_is_over() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (probe, open) = gate.go(ids[0], now, &waker);
        let policy = Report {
            pace: Some(Pace {
                interval: 10 * SECOND,
                window: 20 * SECOND,
                until: open + 5 * SECOND,
            }),
            ..HEALTHY
        };
        gate.answered(probe, policy, open);
        assert_eq!(
            gate.ask(ids[1], open, &waker, TERMS),
            Err(Some(open + 10 * SECOND))
        );
        // Its window over, the policy no longer spaces the backlog: the ramp lets it go.
        let later = open + 5 * SECOND;
        assert!(gate.ask(ids[1], later, &waker, TERMS).is_ok());
    }

    #[test]
    fn a_call_that_arrives_during_a_paced_release_leaves_at_its_pace_then_the_gate_opens() {
        let (_, open, mut gate, waker, ids) = released_at_a_pace_of_a_second();
        // Two were waiting when the probe came back: they are the backlog.
        let (_, first) = gate.go(ids[1], open, &waker);
        assert_eq!(first, open + SECOND);
        let late = gate.come(first).unwrap_err();
        let (_, second) = gate.go(ids[2], first, &waker);
        assert_eq!(second, open + 2 * SECOND);
        // The call that arrived during the release leaves at its pace, with none behind it.
        let (_, third) = gate.go(late, second, &waker);
        assert_eq!(third, open + 3 * SECOND);
        assert!(gate.come(third).is_ok(), "open again");
    }

    #[test]
    fn a_probe_unanswered_past_its_timeout_lets_the_next_waiter_probe() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (hung, open) = gate.go(ids[0], now, &waker);
        let timeout = TERMS.probe_timeout;
        assert_eq!(
            gate.ask(ids[1], open + timeout - MS, &waker, TERMS),
            Err(Some(open + timeout))
        );
        let second = gate.ask(ids[1], open + timeout, &waker, TERMS).unwrap();
        assert!(second.probe.is_some(), "the next waiter probes");
        assert_eq!(gate.in_flight(), 2, "the hung probe is still out");
        // Refused late, the hung probe answers nothing: only the probe out may say the key
        // is still closed (its 429 closes it again all the same).
        assert!(!gate.answers_the_probe(hung, true));
        // Healthy late, it answers this reopening as the probe out would.
        gate.answered(hung, HEALTHY, open + timeout);
        let (_, last) = gate.go(ids[2], open + timeout, &waker);
        assert_eq!(last, open + timeout + SPACING, "the release goes on");
        assert_eq!(gate.answered(second, HEALTHY, last), None);
    }

    /// A server slower than the probe timeout (a completion that takes 15 s): the next
    /// waiter probed meanwhile, and the first probe's healthy answer reopens the key all the
    /// same, as any probe of this reopening may. Were only the latest probe's answer heard,
    /// the key would go one request a probe timeout for as long as the server stays slow.
    #[test]
    fn a_server_slower_than_the_probe_timeout_still_reopens_the_key() {
        let now = Instant::now();
        let (_, waker) = waker();
        let mut gate = Gate::for_first_call(TERMS);
        let first = gate.come(now).unwrap();
        assert!(first.probe.is_some(), "the slow start's probe");
        let ids: Vec<u64> = (0..3).map(|_| gate.come(now).unwrap_err()).collect();
        let (second, at) = gate.go(ids[0], now, &waker);
        assert_eq!(at, now + TERMS.probe_timeout, "the next waiter probes");
        assert!(second.probe.is_some());
        let answered = now + 15 * SECOND;
        gate.answered(first, HEALTHY, answered);
        assert!(
            gate.ask(ids[1], answered, &waker, TERMS).is_ok(),
            "the key reopened"
        );
        // The later probe's answer is an answer like any other.
        assert_eq!(gate.answered(second, HEALTHY, answered + SECOND), None);
    }

    /// A window's reset while a 429's probe is out restores the quota, and the probe's
    /// healthy answer still reopens the key: the probe is the one out, whatever window it
    /// counted in.
    #[test]
    fn a_window_that_resets_while_a_refusals_probe_is_out_leaves_the_probe_its_answer() {
        let now = Instant::now();
        let (_, waker) = waker();
        let mut gate = Gate::new();
        let metered = gate.come(now).unwrap();
        let refused = gate.come(now).unwrap();
        let room = Report {
            limit: Some(10),
            ..quota(5, now + 2 * SECOND)
        };
        gate.answered(metered, room, now);
        gate.answered(refused, closed(now + SECOND), now);
        let waiter = gate.come(now).unwrap_err();
        let (probe, open) = gate.go(waiter, now, &waker);
        assert!(probe.probe.is_some());
        assert_eq!(open, now + SECOND);
        // After the window's reset, a call arrives and waits behind the probe out.
        let newcomer = gate.come(now + 2200 * MS).unwrap_err();
        let answered = now + 2500 * MS;
        assert_eq!(
            gate.answered(probe, HEALTHY, answered),
            Some(Episode::Reopened)
        );
        assert!(gate.ask(newcomer, answered, &waker, TERMS).is_ok());
    }

    /// Requests sent before a closure that hang count against the ramp its release climbs no
    /// longer than a probe would: requests out past the probe timeout hold nothing.
    #[test]
    fn requests_hung_from_before_a_closure_hold_its_ramp_no_longer_than_a_probe_would() {
        let now = Instant::now();
        let (_, waker) = waker();
        let mut gate = Gate::new();
        for _ in 0..3 {
            gate.come(now).unwrap();
        }
        let refused = gate.come(now).unwrap();
        let timeout = TERMS.probe_timeout;
        let closed_at = now + timeout;
        gate.answered(refused, closed(closed_at + SECOND), closed_at);
        let backlog: Vec<u64> = (0..4).map(|_| gate.come(closed_at).unwrap_err()).collect();
        let (probe, open) = gate.go(backlog[0], closed_at, &waker);
        gate.answered(probe, HEALTHY, open);
        // The three hung ten seconds: the ramp lets the backlog go as if none were out, a
        // spacing apart.
        let (first, at) = gate.go(backlog[1], open, &waker);
        assert_eq!(at, open + SPACING);
        let (second, at) = gate.go(backlog[2], at, &waker);
        assert_eq!(at, open + 2 * SPACING);
        gate.answered(first, HEALTHY, at);
        gate.answered(second, HEALTHY, at);
        let (_, last) = gate.go(backlog[3], at, &waker);
        assert!(last <= at + SPACING, "held {:?}", last - at);
    }

    #[test]
    fn a_spent_window_holds_calls_that_respect_it_and_never_becomes_a_closure() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (_, waker) = waker();
        gate.learn(quota(0, now + 30 * SECOND), now);
        let held = gate.come(now).unwrap_err();
        assert_eq!(
            gate.ask(held, now, &waker, TERMS),
            Err(Some(now + 30 * SECOND))
        );
        assert_eq!(
            gate.closed_for(now, UNMETERED),
            None,
            "no closure was made of it"
        );
        let free = gate.arrive_as(now, UNMETERED).unwrap();
        assert!(
            free.probe.is_none(),
            "not behind the held call, not a probe"
        );
        // Once it resets, the new window's first request probes.
        let (probe, at) = gate.go(held, now, &waker);
        assert_eq!(at, now + 30 * SECOND);
        assert!(probe.probe.is_some());
    }

    #[test]
    fn calls_that_do_not_respect_the_quota_wait_for_the_429_and_its_probe_only() {
        let now = Instant::now();
        let mut gate = closed_gate(now, SECOND);
        let (_, waker) = waker();
        let id = gate.arrive_as(now, UNMETERED).unwrap_err();
        assert_eq!(
            gate.ask(id, now, &waker, UNMETERED),
            Err(Some(now + SECOND))
        );
        let open = now + SECOND;
        let probe = gate.come(open).unwrap();
        let paced = Report {
            quota: Some(Quota {
                remaining: 0,
                reset_at: open + 30 * SECOND,
                second: None,
            }),
            pace: paced(10 * SECOND, open),
            ..HEALTHY
        };
        gate.answered(probe, paced, open);
        let (_, at) = gate.poll_until_let_through(id, open, &waker, UNMETERED);
        assert!(at <= open + SPACING, "let through at {:?}", at - open);
    }

    #[test]
    fn a_waiter_is_told_when_the_gate_could_let_it_through() {
        let (now, mut gate, waker, ids) = closed_with_waiters(2 * SECOND, 4);
        assert_eq!(
            gate.estimate(now, ids[0], TERMS),
            Some(2 * SECOND),
            "the closure"
        );
        // Behind the probe, each waits for the one ahead to come back.
        let (probe, open) = gate.go(ids[0], now, &waker);
        assert_eq!(
            gate.estimate(open, ids[1], TERMS),
            Some(TERMS.probe_timeout),
            "the probe may hold the gate that long"
        );
        let answered = open + 50 * MS;
        gate.answered(
            probe,
            Report {
                pace: paced(SECOND, open),
                ..HEALTHY
            },
            answered,
        );
        // Paced: the head a second after the probe went, each behind it a second later.
        assert_eq!(
            gate.estimate(answered, ids[1], TERMS),
            Some(SECOND - 50 * MS)
        );
        assert_eq!(
            gate.estimate(answered, ids[3], TERMS),
            Some(3 * SECOND - 50 * MS)
        );
        assert_eq!(gate.estimate(answered, 99, TERMS), None, "not waiting");
    }

    #[test]
    fn knowing_no_rate_a_waiter_is_told_the_ramps_share_of_a_round_trip_for_each_call_ahead() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (probe, open) = gate.go(ids[0], now, &waker);
        gate.answered(probe, HEALTHY, open + 200 * MS);
        let at = open + 200 * MS;
        // The head goes at once; on the ramp two go each round trip, the next half of one
        // later.
        assert_eq!(gate.estimate(at, ids[1], TERMS), Some(Duration::ZERO));
        assert_eq!(gate.estimate(at, ids[2], TERMS), Some(100 * MS));
    }

    /// Waiters that left are no longer ahead of anyone: the last of twelve, with the nine
    /// before it gone, is told the wait of the second in line.
    #[test]
    fn a_waiter_is_told_the_wait_of_those_still_ahead_of_it() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 12);
        let (probe, open) = gate.go(ids[0], now, &waker);
        let at = open + 200 * MS;
        gate.answered(probe, HEALTHY, at);
        for id in &ids[2..11] {
            gate.leave(*id, true);
        }
        assert_eq!(gate.estimate(at, ids[1], TERMS), Some(Duration::ZERO));
        assert_eq!(gate.estimate(at, ids[11], TERMS), Some(100 * MS));
    }

    #[test]
    fn a_call_arriving_at_a_gate_closed_beyond_its_budget_is_turned_away_without_a_place() {
        let now = Instant::now();
        let mut gate = closed_gate(now, 10 * SECOND);
        assert!(matches!(
            gate.arrive(now, TERMS, 10 * SECOND - MS),
            Arrival::Beyond(Closed { left, .. }) if left == 10 * SECOND
        ));
        assert_eq!(gate.waiters(), 0);
        assert!(matches!(
            gate.arrive(now, TERMS, 10 * SECOND),
            Arrival::Queued(_)
        ));
    }

    #[test]
    fn a_probe_timeout_of_any_length_neither_overflows_nor_leaks_a_count() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 2);
        let patient = Terms {
            probe_timeout: Duration::MAX,
            ..TERMS
        };
        let open = now + SECOND;
        let probe = gate.ask(ids[0], open, &waker, patient).unwrap();
        assert!(probe.probe.is_some());
        assert!(gate.estimate(open, ids[1], patient).unwrap() > 1000 * 86_400 * SECOND);
        assert_eq!(
            gate.ask(ids[1], open, &waker, patient),
            Err(Some(after(open, Duration::MAX)))
        );
        gate.answered(probe, HEALTHY, open);
        assert_eq!(gate.in_flight(), 0);
    }

    #[test]
    fn the_release_ends_when_the_calls_it_releases_have_left() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 5);
        let (probe, open) = gate.go(ids[0], now, &waker);
        gate.answered(probe, HEALTHY, open);
        // The four behind the probe are the backlog; they are dropped, or run out of time.
        for id in &ids[1..] {
            gate.leave(*id, true);
        }
        let late = gate.come(open).expect("the gate is open again");
        assert!(late.probe.is_none(), "not released one at a time");
    }

    #[test]
    fn requests_that_hang_on_the_ramp_hold_it_no_longer_than_a_probe_would() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 4);
        let (probe, open) = gate.go(ids[0], now, &waker);
        gate.answered(probe, HEALTHY, open);
        // The ramp lets two out; both hang.
        let (hung, first) = gate.go(ids[1], open, &waker);
        let (other, second) = gate.go(ids[2], first, &waker);
        assert_eq!(second, first + SPACING);
        let (last, third) = gate.go(ids[3], second, &waker);
        assert_eq!(third, second + TERMS.probe_timeout);
        gate.answered(last, HEALTHY, third);
        assert!(
            gate.come(third).unwrap().probe.is_none(),
            "the release is over"
        );
        gate.answered(hung, HEALTHY, third);
        gate.answered(other, HEALTHY, third);
        assert_eq!(gate.in_flight(), 1, "only the call that just came is out");
    }

    #[test]
    fn the_probe_after_a_spent_window_never_holds_calls_that_do_not_respect_it() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let (_, waker) = waker();
        gate.learn(quota(0, now + 30 * SECOND), now);
        let reset = now + 30 * SECOND;
        let probe = gate.come(reset).unwrap();
        assert!(
            probe.probe.is_some(),
            "the new window's first request probes"
        );
        let free = gate.arrive_as(reset, UNMETERED).unwrap();
        assert!(free.probe.is_none(), "not held by it, and no probe of it");
        let held = gate.come(reset).unwrap_err();
        assert_eq!(
            gate.ask(held, reset, &waker, TERMS),
            Err(Some(reset + TERMS.probe_timeout)),
            "calls that respect the quota still wait for the probe"
        );
        gate.answered(free, HEALTHY, reset);
        gate.answered(probe, quota(9, reset + 30 * SECOND), reset);
        assert!(gate.ask(held, reset, &waker, TERMS).is_ok());
    }

    /// The terms of a call through a layer that takes waits of up to a day from the server.
    const A_DAY: Terms = Terms {
        cap: Duration::from_secs(86_400),
        longest_wait: Duration::from_secs(86_401),
        ..TERMS
    };

    #[test]
    fn a_spent_window_resetting_beyond_a_calls_cap_turns_it_away_at_once() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let spent = Report {
            quota_by: Some(HeldBy::SpentMeter {
                status: http::StatusCode::FORBIDDEN,
                unit: Unit::Requests,
            }),
            ..quota(0, now + 3600 * SECOND)
        };
        gate.learn(spent, now);
        assert_eq!(gate.closed_for(now, TERMS), Some(3600 * SECOND));
        let Arrival::Beyond(closed) = gate.arrive(now, TERMS, Duration::MAX) else {
            panic!("a minute's cap waited an hour's window");
        };
        assert_eq!(closed.left, 3600 * SECOND);
        assert_eq!(closed.by, spent.quota_by.unwrap(), "what set it");
        assert_eq!(gate.waiters(), 0, "turned away without a place");
        assert!(matches!(
            gate.arrive(now, A_DAY, 7200 * SECOND),
            Arrival::Queued(_)
        ));
        assert!(
            gate.arrive_as(now, UNMETERED).is_ok(),
            "a call that does not respect the quota is not held by it"
        );
    }

    #[test]
    fn a_pace_from_a_window_beyond_a_calls_cap_never_paces_it() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (probe, open) = gate.go(ids[0], now, &waker);
        let daily = Pace {
            interval: 17 * SECOND,
            window: 86_400 * SECOND,
            until: open + 86_400 * SECOND,
        };
        let policy = Report {
            pace: Some(daily),
            ..HEALTHY
        };
        gate.answered(probe, policy, open);
        // A layer that takes a day from the server is paced by the daily policy...
        assert_eq!(
            gate.ask(ids[1], open, &waker, A_DAY),
            Err(Some(open + 17 * SECOND))
        );
        // ...one that takes a minute is not: it knows no rate it may keep to.
        assert!(gate.ask(ids[1], open + SPACING, &waker, TERMS).is_ok());
    }

    #[test]
    fn a_pace_from_the_longest_window_a_call_takes_is_kept_without_an_overflow() {
        // A layer that takes any wait from the server (its cap as long as a `Duration` goes),
        // told a policy whose window is as long: the pace holds the next call far ahead,
        // and neither its release nor its estimate overflows.
        let boundless = Terms {
            cap: Duration::MAX,
            longest_wait: Duration::MAX,
            ..TERMS
        };
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (probe, open) = gate.go(ids[0], now, &waker);
        let endless = Pace {
            interval: Duration::MAX / 2,
            window: Duration::MAX,
            until: open + 86_400 * SECOND,
        };
        let policy = Report {
            pace: Some(endless),
            ..HEALTHY
        };
        gate.answered(probe, policy, open);
        let held = gate.ask(ids[1], open, &waker, boundless);
        assert!(
            matches!(held, Err(Some(at)) if at > open + 86_400 * SECOND),
            "{held:?}"
        );
        let estimate = gate.estimate(open, ids[2], boundless).expect("waiting");
        assert!(estimate > 86_400 * SECOND, "{estimate:?}");
    }

    #[test]
    fn each_waiter_gives_the_probe_out_its_own_time() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 2);
        let (_hung, open) = gate.go(ids[0], now, &waker);
        let hasty = Terms {
            probe_timeout: 2 * SECOND,
            ..TERMS
        };
        assert_eq!(
            gate.ask(ids[1], open, &waker, hasty),
            Err(Some(open + 2 * SECOND))
        );
        assert_eq!(
            gate.ask(ids[1], open + 2 * SECOND, &waker, TERMS),
            Err(Some(open + TERMS.probe_timeout)),
            "a waiter with the default timeout waits longer"
        );
        let probe = gate.ask(ids[1], open + 2 * SECOND, &waker, hasty).unwrap();
        assert!(probe.probe.is_some());
    }

    #[test]
    fn a_waiter_leaving_changes_neither_the_probe_owed_nor_a_release_still_under_way() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 5);
        gate.leave(ids[4], true);
        let (first, open) = gate.go(ids[0], now, &waker);
        assert!(first.probe.is_some(), "the probe is still owed");
        gate.answered(
            first,
            Report {
                pace: paced(SECOND, open),
                ..HEALTHY
            },
            open,
        );
        // Three are the backlog; one of them leaves, two are still paced.
        gate.leave(ids[3], true);
        assert_eq!(
            gate.ask(ids[1], open, &waker, TERMS),
            Err(Some(open + SECOND))
        );
    }

    #[test]
    fn a_gate_that_reopened_and_opened_again_is_idle_at_once() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 1);
        let (probe, open) = gate.go(ids[0], now, &waker);
        gate.answered(probe, HEALTHY, open);
        assert!(gate.is_idle(open), "nothing left to remember");
    }

    #[test]
    fn with_the_quota_known_the_release_is_estimated_to_let_waiters_through_at_once() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        let (probe, open) = gate.go(ids[0], now, &waker);
        gate.answered(probe, quota(5, open + 60 * SECOND), open);
        assert_eq!(gate.estimate(open, ids[1], TERMS), Some(Duration::ZERO));
        assert_eq!(gate.estimate(open, ids[2], TERMS), Some(Duration::ZERO));
    }

    #[test]
    fn with_the_quota_known_those_behind_a_probe_are_estimated_to_follow_it_together() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 3);
        gate.learn(quota(5, now + 60 * SECOND), now);
        let (_probe, open) = gate.go(ids[0], now, &waker);
        let deadline = TERMS.probe_timeout;
        assert_eq!(gate.estimate(open, ids[1], TERMS), Some(deadline));
        assert_eq!(gate.estimate(open, ids[2], TERMS), Some(deadline));
    }

    #[test]
    fn a_waiter_is_told_the_reset_when_all_the_quota_is_out() {
        let now = Instant::now();
        let mut gate = Gate::new();
        let first = gate.come(now).unwrap();
        gate.answered(first, quota(1, now + 10 * SECOND), now);
        let _out = gate.come(now).unwrap();
        let id = gate.come(now).unwrap_err();
        assert_eq!(gate.estimate(now, id, TERMS), Some(10 * SECOND));
    }

    #[test]
    fn a_gate_with_calls_waiting_behind_a_pace_holds_them() {
        let (_, open, gate, _, _) = released_at_a_pace_of_a_second();
        assert_eq!((gate.in_flight(), gate.closed_for(open, TERMS)), (0, None));
        assert!(gate.holds_calls(open), "two wait behind the pace");
    }

    /// A gate that knows `left` tokens remain until a reset `reset_in` from `now`.
    fn knowing_tokens(left: u64, reset_in: Duration, now: Instant) -> Gate {
        let mut gate = Gate::new();
        let mut meters = TokenMeters::default();
        let quota = Quota {
            remaining: left,
            reset_at: now + reset_in,
            second: None,
        };
        meters.add(Unit::Tokens, quota);
        gate.take_tokens(&meters, None, now);
        gate
    }

    /// The terms of a call declaring it spends `tokens`.
    fn costing(tokens: u64) -> Terms {
        Terms {
            cost: Some(TokenCost::new(tokens, 0)),
            ..TERMS
        }
    }

    #[test]
    fn a_call_spends_its_declared_tokens_when_it_leaves_the_gate_and_not_before() {
        let now = Instant::now();
        let mut gate = knowing_tokens(500, 30 * SECOND, now);
        assert!(gate.arrive_as(now, costing(300)).is_ok());
        let held = gate.arrive(now, costing(300), Duration::MAX);
        assert_eq!(
            held,
            Arrival::Short {
                until: now + 30 * SECOND,
                by: HeldBy::TokenCost { unit: Unit::Tokens }
            },
            "200 left: the second must wait for the reset"
        );
        assert!(
            gate.arrive_as(now, costing(200)).is_ok(),
            "nothing was spent by the one held"
        );
        assert!(
            gate.arrive_as(now, TERMS).is_ok(),
            "declaring nothing, nothing spent"
        );
    }

    /// What a call declared stays spent while it is out, whatever another answer says: its
    /// answer without the meter, or none at all, takes it off the figure.
    #[test]
    fn a_calls_declared_tokens_stay_spent_until_its_answer_says_otherwise() {
        let now = Instant::now();
        let tokens = |left: u64| {
            let mut meters = TokenMeters::default();
            let reset_at = now + 60 * SECOND;
            meters.add(
                Unit::Tokens,
                Quota {
                    remaining: left,
                    reset_at,
                    second: None,
                },
            );
            meters
        };
        let short = |gate: &mut Gate, cost: u64| {
            matches!(
                gate.arrive(now, costing(cost), Duration::MAX),
                Arrival::Short { .. }
            )
        };
        let mut gate = knowing_tokens(10_000, 60 * SECOND, now);
        let big = gate.arrive_as(now, costing(9_000)).unwrap();
        gate.arrive_as(now, costing(400)).unwrap();
        // The small call's answer counts another's 100 and itself, not the big call out.
        gate.take_tokens(&tokens(9_500), Some(TokenCost::new(400, 0)), now);
        assert!(short(&mut gate, 1_000), "9 500 less the 9 000 out");
        // The big call ends without an answer: the server may have counted it.
        gate.abandoned(big, now);
        gate.take_tokens(&TokenMeters::NONE, Some(TokenCost::new(9_000, 0)), now);
        assert!(short(&mut gate, 1_000), "500 left");
        // No longer out, it spends nothing of the next window.
        let mut next = TokenMeters::default();
        let reset_at = now + 120 * SECOND;
        next.add(
            Unit::Tokens,
            Quota {
                remaining: 10_000,
                reset_at,
                second: None,
            },
        );
        gate.take_tokens(&next, None, now);
        assert!(gate.arrive_as(now, costing(10_000)).is_ok());
    }

    #[test]
    fn a_call_released_after_waiting_spends_its_tokens_too() {
        let (now, mut gate, waker, ids) = closed_with_waiters(SECOND, 0);
        let mut meters = TokenMeters::default();
        meters.add(
            Unit::Tokens,
            Quota {
                remaining: 500,
                reset_at: now + 60 * SECOND,
                second: None,
            },
        );
        gate.take_tokens(&meters, None, now);
        assert!(ids.is_empty());
        let first = gate.arrive(now, costing(300), Duration::MAX);
        let second = gate.arrive(now, costing(300), Duration::MAX);
        let (Arrival::Queued(first), Arrival::Queued(second)) = (first, second) else {
            panic!("the gate is closed");
        };
        let open = now + SECOND;
        let probe = gate
            .poll_waiter(first, open, Duration::MAX, &waker, costing(300))
            .unwrap();
        gate.answered(probe, HEALTHY, open);
        let released = open + SECOND;
        assert_eq!(
            gate.poll_waiter(second, released, Duration::MAX, &waker, costing(300)),
            Err(Look::Again(Some(now + 60 * SECOND))),
            "the first spent 300 of 500 as it left: the second waits, keeping its place"
        );
        assert_eq!(gate.waiters(), 1);
        let short_budget = 30 * SECOND;
        assert!(
            matches!(
                gate.poll_waiter(second, released, short_budget, &waker, costing(300)),
                Err(Look::Beyond(Closed {
                    by: HeldBy::TokenCost { .. },
                    ..
                }))
            ),
            "turned away at once when it may not wait for the reset"
        );
        assert_eq!(gate.waiters(), 0);
    }

    /// A report of a window of three whose reset, read as `reset_at`, was written as the
    /// `nth` second of a run on the server's clock (an epoch reset).
    fn on_the_second(remaining: u64, reset_at: Instant, nth: u64) -> Report {
        Report {
            limit: Some(3),
            quota: Some(Quota {
                remaining,
                reset_at,
                second: Some(1_700_000_000 + nth),
            }),
            ..HEALTHY
        }
    }

    /// A window whose reset is read to the second (an epoch reset), of three a window: its
    /// last request, with another out, waits for the earliest the window can have ended (a
    /// second before the reset read), goes alone, and where its answer finds a new window,
    /// that window's quota goes at once, not at the reset read.
    #[test]
    fn a_windows_last_request_read_to_the_second_goes_early_and_opens_the_next_window() {
        let now = Instant::now();
        let (_, waker) = waker();
        let mut gate = Gate::new();
        let first = gate.come(now).unwrap();
        gate.answered(first, on_the_second(2, now + 1500 * MS, 2), now + 20 * MS);
        let second = gate.come(now + 20 * MS).unwrap();
        // The last of the window, with the second out and a call behind it: held.
        let last = gate.come(now + 20 * MS).unwrap_err();
        let behind = gate.come(now + 20 * MS).unwrap_err();
        gate.answered(second, on_the_second(1, now + 1500 * MS, 2), now + 40 * MS);
        let (early, at) = gate.go(last, now + 40 * MS, &waker);
        assert_eq!(at, now + 500 * MS);
        assert!(early.last.is_some(), "it goes alone, as the window's last");
        // It opened a new window: the call behind goes now, a second before the reset read;
        // the next is that window's own last, held in turn.
        gate.answered(early, on_the_second(2, now + 2500 * MS, 3), now + 550 * MS);
        assert!(gate.ask(behind, now + 550 * MS, &waker, TERMS).is_ok());
        assert!(gate.come(now + 550 * MS).is_err());
    }

    /// The same window, its last request alone once the request out came back: nothing to go
    /// apart from, so it goes at once.
    #[test]
    fn a_windows_last_request_goes_at_once_when_it_is_the_keys_only_call() {
        let now = Instant::now();
        let (_, waker) = waker();
        let mut gate = Gate::new();
        let first = gate.come(now).unwrap();
        gate.answered(first, on_the_second(2, now + 1500 * MS, 2), now + 20 * MS);
        let second = gate.come(now + 20 * MS).unwrap();
        let last = gate.come(now + 20 * MS).unwrap_err();
        gate.answered(second, on_the_second(1, now + 1500 * MS, 2), now + 40 * MS);
        assert!(gate.ask(last, now + 40 * MS, &waker, TERMS).is_ok());
    }

    /// The same window read as a countdown: its last request goes at once, in the window, as
    /// every request did (a countdown read as the window opens is tight already).
    #[test]
    fn a_windows_last_request_read_as_a_countdown_goes_at_once() {
        let now = Instant::now();
        let read = |remaining, reset_at| Report {
            limit: Some(3),
            ..quota(remaining, reset_at)
        };
        let mut gate = Gate::new();
        let first = gate.come(now).unwrap();
        gate.answered(first, read(2, now + 1500 * MS), now + 20 * MS);
        assert!(gate.come(now + 20 * MS).is_ok());
        assert!(gate.come(now + 20 * MS).is_ok());
    }

    /// A window restored again (its guessed reset, the first report's countdown, passed)
    /// before its requests answered: their answers name the server's window in force, and a
    /// spent one holds the next call.
    #[test]
    fn answers_to_a_restored_window_are_not_lost_when_it_is_restored_again() {
        let now = Instant::now();
        let (_, waker) = waker();
        let mut gate = Gate::new();
        let five = |remaining, reset_at| Report {
            limit: Some(5),
            ..quota(remaining, reset_at)
        };
        // The key's first answer came a second before the end of a window of five, spent.
        let first = gate.come(now).unwrap();
        gate.answered(first, five(0, now + SECOND), now);
        // At the reset the whole quota is restored: five go, a sixth waits.
        let reset = now + SECOND;
        let out: Vec<Admission> = (0..5).map(|_| gate.come(reset).unwrap()).collect();
        let sixth = gate.come(reset).unwrap_err();
        // All five out: the sixth waits for the restored window's reset (taken as a second).
        let at = gate.ask(sixth, reset, &waker, TERMS).unwrap_err().unwrap();
        assert!(gate.ask(sixth, at, &waker, TERMS).is_err(), "five out");
        // The five answer, slowly (1.5 s): the server's window is a minute, and they spent it.
        let answered = reset + 1500 * MS;
        for (n, admitted) in out.into_iter().enumerate() {
            let left = 4 - n as u64;
            gate.answered(admitted, five(left, answered + 58 * SECOND), answered);
        }
        let known = gate.quota(answered).map(|quota| quota.remaining);
        assert!(
            gate.ask(sixth, answered, &waker, TERMS).is_err(),
            "the sixth was sent into a window the server just said is spent for 58 s \
             (the gate knows {known:?} left)"
        );
    }
}
