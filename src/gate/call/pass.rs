//! What a call holds at its gate: a [`Pass`] while its request is out, a [`Place`]
//! while it waits. Each gives back what it holds when dropped, so a call cancelled at any point
//! leaves no waiter and no request counted in flight.

use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

use crate::events;
use crate::gate::Gates;
use crate::gate::key::answer::{Admission, Episode, Hold, Look};
use crate::gate::key::report::Report;
use crate::gate::key::terms::Terms;
use crate::gate::key::tokens::TokenMeters;
use crate::gate::store::{Ticket, Window};
use crate::key::Key;
use crate::telemetry;
use crate::throttled::{HeldBy, Throttled};
use crate::tokens::TokenCost;

/// A request let through a gate. What its response says must be recorded; if no response
/// comes (the call was dropped, or failed in transport), dropping the pass tells the gate so.
pub(crate) struct Pass {
    gates: Gates,
    key: Key,
    /// The request's key, where `key` is one of its limits: a closure of it holds the call's
    /// retry too, wherever it waits.
    whole: Option<Key>,
    admission: Admission,
    terms: Terms,
    open: bool,
    /// Its reservation in the store shared with other processes, if it has one.
    ticket: Option<Ticket>,
}

/// A rate-limited retry about to wait: how long at least, and how long the call may still wait.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retry {
    pub(crate) wait: Duration,
    /// What of the wait the server named.
    pub(crate) instructed: Option<Duration>,
    pub(crate) budget: Duration,
}

/// Why a waiting call may not go yet.
pub(crate) enum NotYet {
    /// It asks again then (`None`: when woken).
    LookAgain(Option<Instant>),
    /// The gate is now closed to it longer than it may still wait: it gives up at once, with
    /// this error.
    GiveUp(Throttled),
    /// It left the queue, to arrive again: at the gate of its route's limit, or to meet a
    /// closure of its whole key.
    Reroute,
}

/// Where a call goes after its answer was recorded.
pub(crate) enum Held {
    /// It waits at the gate, in this place.
    Waiting(Place),
    /// The gate stays closed longer than it may wait.
    Throttled(Throttled),
    /// Nothing holds it at the gate: it sleeps its wait itself, if it retries.
    Free,
}

impl Pass {
    pub(crate) fn new(
        gates: Gates,
        key: Key,
        whole: Option<Key>,
        admission: Admission,
        terms: Terms,
    ) -> Self {
        Pass {
            gates,
            key,
            whole,
            admission,
            terms,
            open: true,
            ticket: None,
        }
    }

    /// The request holds `ticket` of the store shared with other processes.
    pub(crate) fn reserved(&mut self, ticket: Ticket) {
        self.ticket = Some(ticket);
    }

    /// What its call declared it spends of the token meters, where its gate counted it out.
    fn spent(&self) -> Option<TokenCost> {
        self.terms.cost.filter(|_| self.admission.counted)
    }

    /// What the server's clock read at least at `now`, as the gate knew it when the request
    /// went: a tighter reading of the response's epoch resets than its own `Date`.
    pub(crate) fn server_floor(&self, now: Instant) -> Option<std::time::SystemTime> {
        self.admission.server_clock.map(|clock| clock.at_least(now))
    }

    /// How many probes the server refused since its gate last had a healthy answer, where
    /// that decides how long a guess closes the gate (`None`: the gate's learned law does,
    /// ending the guess by its reset; a fleet's store keeps each closure as told, so a call
    /// sharing one takes the key's guess).
    pub(crate) fn refused_probes(&self) -> Option<u32> {
        if self.terms.learned && !self.terms.fleet {
            return None;
        }
        let table = self.gates.registry.lock();
        let gate = table.gates.get(&self.key);
        Some(gate.map_or(0, |gate| gate.refused_probes()))
    }

    /// Records what the response said; for a rate-limited `retry`, the call takes its place
    /// at the gate if the gate now holds its wait. Both under one lock: between recording a
    /// closure and joining its queue, nothing can forget the gate or let the call through.
    /// With the turn of the key's episode the response brought, if any.
    pub(crate) fn answered(
        mut self,
        report: Report,
        tokens: &TokenMeters,
        now: Instant,
        retry: Option<Retry>,
    ) -> (Held, Option<Episode>) {
        self.open = false;
        let registry = &self.gates.registry;
        let mut table = registry.lock();
        if let Some(gate) = table.gates.get_mut(&self.key) {
            gate.take_tokens(tokens, self.spent(), now);
        }
        let (wakes, episode, judged) =
            table.answered(&self.key, self.admission, report, now, registry.capacity);
        // Looked up again only for a retry to hold: most answers have none.
        let hold = retry
            .and_then(|retry| {
                let gate = table.gates.get_mut(&self.key)?;
                Some(gate.hold(now, retry.wait, retry.instructed, retry.budget, self.terms))
            })
            .unwrap_or(Hold::Free);
        drop(table);
        wakes.into_iter().for_each(Waker::wake);
        events::round_judged(&self.key, judged);
        if report.closed_until.is_some() && self.whole.is_none() {
            // A call that went before its key's routes were known closed the whole key.
            self.gates.closed_whole(&self.key);
        }
        // A reserved request's answer is always told, if only to say it is no longer out.
        let worth_sharing = report.closed_until.is_some() || report.quota.is_some();
        if let Some(shared) = registry.shared.as_ref() {
            if worth_sharing || self.ticket.is_some() {
                let clocks = registry.clocks();
                let window = Window::from_report(report, &clocks);
                shared.merge(&self.key, window, self.ticket, clocks.wall(now));
            }
        }
        let held = match hold {
            Hold::Queued(id) => Held::Waiting(Place::new(
                self.gates.clone(),
                self.key.clone(),
                self.whole.clone(),
                id,
                self.terms,
            )),
            Hold::Beyond(closed) => {
                Held::Throttled(Throttled::new(self.key.clone(), closed.left, closed.by))
            }
            Hold::Free => Held::Free,
        };
        (held, episode)
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        if self.open {
            let admission = self.admission;
            let registry = &self.gates.registry;
            let now = Instant::now();
            let spent = self.spent();
            registry.update(&self.key, |gate| {
                gate.abandoned(admission, now);
                gate.take_tokens(&TokenMeters::NONE, spent, now);
            });
            // Its reservation is no longer out: it says nothing else.
            if let (Some(shared), Some(ticket)) = (registry.shared.as_ref(), self.ticket) {
                let now = registry.clocks().wall(Instant::now());
                shared.give_back(&self.key, ticket, now);
            }
        }
    }
}

/// A place in a gate's queue; dropping it leaves the queue.
pub(crate) struct Place {
    gates: Gates,
    key: Key,
    /// The request's key, where `key` is one of its limits: a closure of it (a global
    /// refusal) holds the call wherever it waits.
    whole: Option<Key>,
    id: u64,
    terms: Terms,
    queued: bool,
}

impl Place {
    pub(crate) fn new(gates: Gates, key: Key, whole: Option<Key>, id: u64, terms: Terms) -> Self {
        telemetry::waiting(&key, true);
        Place {
            gates,
            key,
            whole,
            id,
            terms,
            queued: true,
        }
    }

    /// Whether the call, with `budget` left to wait, may go: its pass, when to ask again, or
    /// that it is held longer than it may wait.
    pub(crate) fn poll(
        &mut self,
        now: Instant,
        budget: Duration,
        waker: &Waker,
    ) -> Result<Pass, NotYet> {
        let mut table = self.gates.registry.lock();
        let whole_closed = self
            .whole
            .as_ref()
            .and_then(|whole| table.gates.get(whole)?.closed(now, self.terms))
            .is_some();
        if whole_closed {
            // Every limit of the key is closed (a refusal of the whole key came while the call
            // waited at its limit's gate): it leaves, and arrives again, to meet that closure
            // as a call arriving now does.
            let wakes = table
                .gates
                .get_mut(&self.key)
                .map_or_else(Vec::new, |gate| {
                    gate.leave(self.id, self.terms.metered);
                    gate.take_wakes()
                });
            drop(table);
            self.queued = false;
            wakes.into_iter().for_each(Waker::wake);
            return Err(NotYet::Reroute);
        }
        let (admission, wakes, judged) = match table.gates.get_mut(&self.key) {
            Some(gate) => {
                let admission = gate.poll_waiter(self.id, now, budget, waker, self.terms);
                (admission, gate.take_wakes(), gate.take_judged())
            }
            // The gate was forgotten: nothing holds the call back.
            None => (Ok(Admission::uncounted(now)), Vec::new(), None),
        };
        drop(table);
        wakes.into_iter().for_each(Waker::wake);
        events::round_judged(&self.key, judged);
        let admission = admission.map_err(|look| match look {
            Look::Again(at) => NotYet::LookAgain(at),
            Look::Beyond(closed) => {
                NotYet::GiveUp(Throttled::new(self.key.clone(), closed.left, closed.by))
            }
            Look::Reroute => {
                self.queued = false;
                NotYet::Reroute
            }
        })?;
        self.queued = false;
        Ok(Pass::new(
            self.gates.clone(),
            self.key.clone(),
            self.whole.clone(),
            admission,
            self.terms,
        ))
    }

    /// How long until the gate could let the call through, as far as it can tell now.
    pub(crate) fn estimate(&self, now: Instant) -> Duration {
        let table = self.gates.registry.lock();
        let gate = table.gates.get(&self.key);
        gate.and_then(|gate| gate.estimate(now, self.id, self.terms))
            .unwrap_or_default()
    }

    /// The error of a call that gives up its place: how long until the gate could have let
    /// it through, and what holds it (a closure or spent window, else the calls ahead).
    pub(crate) fn throttled(&self, now: Instant) -> Throttled {
        let table = self.gates.registry.lock();
        let gate = table.gates.get(&self.key);
        let held_by = match gate.and_then(|gate| gate.closed(now, self.terms)) {
            Some(closed) => closed.by,
            None if gate.is_some_and(|gate| gate.paced_by_learning(now, self.terms)) => {
                HeldBy::LearnedLimit
            }
            None => HeldBy::Queue,
        };
        drop(table);
        Throttled::new(self.key.clone(), self.estimate(now), held_by)
    }

    /// The key it waits at.
    pub(crate) fn key(&self) -> &Key {
        &self.key
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        telemetry::waiting(&self.key, false);
        if self.queued {
            let (id, metered) = (self.id, self.terms.metered);
            self.gates
                .registry
                .update(&self.key, |gate| gate.leave(id, metered));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::Wake;

    use super::*;
    use crate::gate::call::Entered;
    use crate::gate::rules::quota::Quota;
    use crate::gate::store::{Reservation, Respects, StoreFuture, Ticket, Window, WindowStore};
    use crate::settings::Settings;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::SystemTime;

    const SECOND: Duration = Duration::from_secs(1);

    struct Ignored;

    impl Wake for Ignored {
        fn wake(self: Arc<Self>) {}
    }

    /// A request on `key` let through, answered with a 429 for `wait`, with a retry that
    /// waits `wait`: where the call stands after.
    fn refused(gates: &Gates, key: &str, wait: Duration, now: Instant) -> Held {
        let mut call = gates.call(Key::named(key), None, &Settings::default());
        let Entered::Admitted(pass) = call.enter(now, 120 * SECOND, "/") else {
            panic!("the gate of {key} is not open");
        };
        let refusal = Report {
            refused: true,
            closed_until: Some(now + wait),
            ..Report::default()
        };
        let retry = Retry {
            wait,
            instructed: Some(wait),
            budget: 120 * SECOND,
        };
        pass.answered(refusal, &TokenMeters::NONE, now, Some(retry))
            .0
    }

    /// The call refused takes its place in the same critical section that closes the gate, so
    /// nothing can forget the gate or let the call through in between; its place then keeps
    /// the gate from being forgotten to make room.
    #[tokio::test(start_paused = true)]
    async fn a_refused_call_takes_its_place_where_the_gate_closes_and_keeps_the_gate() {
        let gates = Gates::with_capacity(1);
        let now = Instant::now();
        let Held::Waiting(mut place) = refused(&gates, "a", 30 * SECOND, now) else {
            panic!("not held at its gate");
        };
        assert_eq!(gates.snapshot(&Key::named("a")).unwrap().waiters(), 1);
        // Another key's 429 on a full registry makes no room by forgetting a's gate.
        assert!(matches!(refused(&gates, "b", 5 * SECOND, now), Held::Free));
        assert_eq!(gates.len(), 1);
        let waker = Arc::new(Ignored).into();
        let budget = 120 * SECOND;
        assert!(
            matches!(
                place.poll(now + SECOND, budget, &waker),
                Err(NotYet::LookAgain(Some(at))) if at == now + 30 * SECOND
            ),
            "still held until its window ends"
        );
        assert!(place.poll(now + 30 * SECOND, budget, &waker).is_ok());
    }

    /// A call of `key` entering at `now`, admitted or queued.
    fn enter(gates: &Gates, key: &str, now: Instant) -> Entered {
        let mut call = gates.call(Key::named(key), None, &Settings::default());
        call.enter(now, 120 * SECOND, "/")
    }

    /// A call that gives up its place says what held it: the calls ahead while nothing is
    /// known, the limit the gate learned once it paces by one.
    #[tokio::test(start_paused = true)]
    async fn a_call_that_gives_up_its_place_says_whether_the_queue_or_a_learned_limit_held_it() {
        let gates = Gates::new();
        let now = Instant::now();
        let Entered::Admitted(first) = enter(&gates, "a", now) else {
            panic!("the first call goes alone");
        };
        let Entered::Queued(behind_the_first) = enter(&gates, "a", now) else {
            panic!("a call behind the first waits for its answer");
        };
        assert_eq!(behind_the_first.throttled(now).held_by(), HeldBy::Queue);
        drop(behind_the_first);
        first.answered(Report::default(), &TokenMeters::NONE, now, None);
        // Accepted, then refused without an instruction: the law has learned a limit.
        let Entered::Admitted(refused) = enter(&gates, "a", now) else {
            panic!("the gate of a is not open");
        };
        let guess = Report {
            refused: true,
            closed_until: Some(now + SECOND),
            ..Report::default()
        };
        refused.answered(guess, &TokenMeters::NONE, now, None);
        let later = now + 2 * SECOND;
        let Entered::Admitted(_out) = enter(&gates, "a", later) else {
            panic!("the closure is over");
        };
        let Entered::Queued(paced) = enter(&gates, "a", later) else {
            panic!("the learned limit lets one go at a time");
        };
        assert_eq!(paced.throttled(later).held_by(), HeldBy::LearnedLimit);
    }

    /// A store that never grants a reservation and counts the answers it is told, with and
    /// without a ticket.
    struct Told(Arc<[AtomicUsize; 2]>);

    impl WindowStore for Told {
        fn reserve(&self, _: &Key, _: Respects, _: SystemTime) -> StoreFuture<Reservation> {
            Box::pin(std::future::pending())
        }

        fn merge(
            &self,
            _: &Key,
            _: Window,
            ticket: Option<Ticket>,
            _: SystemTime,
        ) -> StoreFuture<()> {
            self.0[usize::from(ticket.is_some())].fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::ready(Ok(())))
        }
    }

    /// An answer without a reservation (the store was slow) is shared where it closes the key
    /// or reports a quota, and only then.
    #[tokio::test(start_paused = true)]
    async fn an_unreserved_answer_is_shared_where_it_closes_the_key_or_reports_a_quota() {
        let told = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let gates = Gates::with_store(Told(told.clone()));
        let now = Instant::now();
        let answer = |report: Report| {
            let Entered::Admitted(pass) = enter(&gates, "a", now) else {
                panic!("the gate of a is not open");
            };
            pass.answered(report, &TokenMeters::NONE, now, None);
            told[0].load(Ordering::Relaxed)
        };
        assert_eq!(answer(Report::default()), 0, "nothing worth sharing");
        let quota = Report {
            quota: Some(Quota {
                remaining: 5,
                reset_at: now + SECOND,
                second: None,
            }),
            ..Report::default()
        };
        assert_eq!(answer(quota), 1, "a quota alone");
        let closure = Report {
            refused: true,
            closed_until: Some(now + SECOND),
            ..Report::default()
        };
        assert_eq!(answer(closure), 2, "a closure alone");
        assert_eq!(told[1].load(Ordering::Relaxed), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_the_gate_holds_longer_than_its_budget_is_throttled_not_queued() {
        let gates = Gates::new();
        let now = Instant::now();
        let Held::Waiting(_first) = refused(&gates, "a", 30 * SECOND, now) else {
            panic!("not held");
        };
        let mut call = gates.call(Key::named("a"), None, &Settings::default());
        let Entered::Throttled(throttled) = call.enter(now, 10 * SECOND, "/") else {
            panic!("a closed gate let a call in");
        };
        assert_eq!(throttled.retry_after(), 30 * SECOND);
        assert_eq!(gates.snapshot(&Key::named("a")).unwrap().waiters(), 1);
    }
}
