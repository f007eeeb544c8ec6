//! One call's dealings with its key's gate: entering it, and what a response said, for the
//! call's pass to record. The future holds a [`Call`] and the tickets it hands out, and
//! nothing else of the gate.

pub(crate) mod pass;
mod said;

pub(crate) use pass::{Held, NotYet, Pass, Place, Retry};
pub(crate) use said::Said;
// What the future meets of the rest of the gate, through its call: the turn an answer brought
// the key's episode to, the store's reservation, and the gate's one way to add a wait to an
// instant (bounded, never overflowing).
pub(crate) use crate::gate::key::Episode;
pub(crate) use crate::gate::store::{Reservation, Reserving};
pub(crate) use crate::gate::time::after;

use std::time::Duration;

use tokio::time::Instant;

use crate::events;
use crate::gate::Gates;
use crate::gate::key::Gate;
use crate::gate::key::answer::{Admission, Arrival, Closed};
use crate::gate::key::report::Report;
use crate::gate::key::terms::Terms;
use crate::gate::registry::Table;
use crate::gate::routes::Known;
use crate::gate::store::{Respects, Window};
use crate::key::Key;
use crate::settings::Settings;
use crate::throttled::{HeldBy, Throttled};
use crate::tokens::TokenCost;

/// The least a call held by the shared store sleeps before it asks again.
const LEAST_HOLD: Duration = Duration::from_millis(5);

/// A gated call's handle on its gate.
pub(crate) struct Call {
    gates: Gates,
    /// The gate's key: the request's key, or the limit of it its route counts against.
    key: Key,
    /// Where the call is gated by one of its key's limits: boxed, to keep the call small for
    /// the others.
    rare: Option<Box<Refined>>,
    terms: Terms,
}

/// How a call is gated by one of its key's limits.
struct Refined {
    /// The request's key: a closure of it holds every one of its limits.
    whole: Key,
    /// How the limit the call is gated by was known.
    known: Known,
}

/// What a call meets at the gate.
pub(crate) enum Entered {
    /// It may go now.
    Admitted(Pass),
    /// It waits, in this place.
    Queued(Place),
    /// The gate stays closed longer than the call may wait.
    Throttled(Throttled),
    /// Every limit of the key is closed until then, by this: the call sleeps, and arrives
    /// again.
    NotBefore(Instant, HeldBy),
    /// The shared store holds the call until then: it sleeps, and arrives again. Its own gate
    /// holds the process's other calls meanwhile, so no spread is needed.
    Held(Instant),
}

impl Call {
    pub(crate) fn new(
        gates: Gates,
        key: Key,
        cost: Option<TokenCost>,
        settings: &Settings,
    ) -> Self {
        let terms = Terms {
            metered: settings.respect_remaining,
            cap: settings.retry_after_cap,
            longest_wait: settings.longest_wait(),
            probe_timeout: settings.probe_timeout,
            slow_start: settings.respect_remaining && settings.slow_start,
            learned: settings.respect_remaining && settings.learn_limits,
            fleet: gates.registry.shared.is_some(),
            cost: cost.filter(|_| settings.respect_remaining),
        };
        Call {
            gates,
            key,
            rare: None,
            terms,
        }
    }

    /// Gates the call by the limit its `route` counts against, where the server keeps several
    /// for its key and said which (see `routes`). Done as the call arrives, not when it is
    /// made: a call made before its key's first answer, and held behind it, goes by what that
    /// answer said.
    fn refine(&mut self, route: &str) {
        if self.whole().is_some() {
            return;
        }
        if let Some((limit, known)) = self.gates.routes.refine(&self.key, route) {
            let whole = std::mem::replace(&mut self.key, limit);
            self.rare = Some(Box::new(Refined { whole, known }));
        }
    }

    /// The request's key, where the call's key is one of its limits.
    fn whole(&self) -> Option<&Key> {
        Some(&self.rare.as_ref()?.whole)
    }

    /// What a response to `route` said of the limit it counted against, given `report`, what
    /// it says to the gate, which is left as the call's own gate takes it. Later calls of that
    /// route are gated by that limit alone; an answer naming another limit than the call was
    /// gated by (the route's first, or one whose limit was guessed) speaks for the limit it
    /// names, and the call's own gate only counts it back; a refusal of the whole key
    /// (`global`) holds every limit of it. Where the answer spoke for a limit other than the
    /// call's own: that limit's key, and the turn the answer brought its episode to, if any (the
    /// call's own gate, left the report emptied, turns none).
    pub(crate) fn learn_limit(
        &self,
        route: &str,
        said: &Said,
        report: &mut Report,
        now: Instant,
    ) -> Option<(Key, Option<Episode>)> {
        let registry = &self.gates.registry;
        let whole = self.whole().unwrap_or(&self.key);
        if said.is_global() {
            if self.whole().is_some() {
                // (The call's own limit closes with its answer, which tells the episode.)
                registry.learn(whole, *report, now);
                self.gates.closed_whole(whole);
            }
            self.share_global(whole, report, now);
            return None;
        }
        let group = said.group()?;
        let own_limit = self.key.limit_name() == Some(group);
        let route_known = self.rare.as_ref().map(|rare| rare.known) == Some(Known::Route);
        if own_limit && route_known {
            // The route's limit, as its answers said before: nothing to learn.
            return None;
        }
        self.gates.routes.learn(whole, route, group);
        if own_limit {
            return None;
        }
        let limit = whole.within(group);
        let episode = registry.learn(&limit, *report, now);
        self.share(std::iter::once(limit.clone()), *report, now);
        *report = Report {
            server_clock: report.server_clock,
            ..Report::default()
        };
        if self.whole().is_none() {
            // The first answer of a key that names its limits (the slow start's probe): the
            // calls held behind it go to the gate of their route's limit, where they are
            // counted with every later call, instead of leaving this one uncounted by it.
            registry.update(&self.key, Gate::reroute_waiters);
        }
        Some((limit, episode))
    }

    /// Tells the store the gates share, if they do, of a refusal of the whole key: its closure
    /// under the whole key and every limit of it this process knows, as other processes'
    /// calls ask the store only of the limit their route counts against. (The call's own
    /// limit hears it with the call's answer.) A process that knows a limit this one does not
    /// meets the refusal itself, once.
    fn share_global(&self, whole: &Key, report: &Report, now: Instant) {
        let closure = Report {
            closed_until: report.closed_until,
            closed_by: report.closed_by,
            instructed_until: report.instructed_until,
            ..Report::default()
        };
        let limits = self.gates.routes.limits(whole);
        let keys = std::iter::once(whole.clone()).chain(limits);
        self.share(keys.filter(|key| *key != self.key), closure, now);
    }

    /// Tells the store the gates share, if they do, what `report` says of each of `keys` at
    /// `now`, where it says anything.
    fn share(&self, keys: impl Iterator<Item = Key>, report: Report, now: Instant) {
        let registry = &self.gates.registry;
        let Some(shared) = registry.shared.as_ref() else {
            return;
        };
        if report.closed_until.is_none() && report.quota.is_none() {
            return;
        }
        let clocks = registry.clocks();
        let window = Window::from_report(report, &clocks);
        for key in keys {
            shared.merge(&key, window, None, clocks.wall(now));
        }
    }

    /// The key the call counts against.
    pub(crate) fn key(&self) -> &Key {
        &self.key
    }

    /// The call, on `route`, arrives with `budget` left to wait.
    pub(crate) fn enter(&mut self, now: Instant, budget: Duration, route: &str) -> Entered {
        self.refine(route);
        let mut table = self.gates.registry.lock();
        let entered = self.enter_locked(&mut table, now, budget);
        let judged = table.gates.get_mut(&self.key).and_then(Gate::take_judged);
        drop(table);
        events::round_judged(&self.key, judged);
        entered
    }

    /// [`enter`](Self::enter), under the registry's lock.
    fn enter_locked(&self, table: &mut Table, now: Instant, budget: Duration) -> Entered {
        let registry = &self.gates.registry;
        if let Some(whole) = self.whole().and_then(|whole| table.gates.get(whole)) {
            if let Some(closed) = whole.beyond(now, budget, self.terms) {
                return self.turned_away(closed);
            }
            if let Some(closed) = whole.closed(now, self.terms) {
                return Entered::NotBefore(after(now, closed.left), closed.by);
            }
        }
        if let Some(gate) = table.gates.get_mut(&self.key) {
            return self.arrive(gate, now, budget);
        }
        // Counted from the first call: responses to the first calls on a key report the quota
        // after one request, while the others are still out and will spend theirs.
        if !table.make_room(now, registry.capacity, false) {
            return Entered::Admitted(self.pass(Admission::uncounted(now)));
        }
        let gate = table
            .gates
            .entry(self.key.clone())
            .or_insert_with(|| Gate::for_first_call(self.terms));
        self.arrive(gate, now, budget)
    }

    /// Asks the store the gates share with other processes, if they do, to reserve the
    /// request this call's gate let through.
    pub(crate) fn reserve(&self) -> Option<Reserving> {
        let registry = &self.gates.registry;
        let shared = registry.shared.as_ref()?;
        let now = registry.clocks().wall(Instant::now());
        let respects = Respects::new(self.terms.metered, self.terms.learned);
        shared.reserve(&self.key, respects, now)
    }

    /// The store's `answer` for the request let through with `pass`: it goes
    /// ([`Entered::Admitted`], reserved: it asks no store again), holding its reservation if
    /// it was granted one (no answer: the store is down or slow, and the
    /// process's own gate decides alone). Or the store holds the call until a time: its gate
    /// learns the window the store knows, so that the process's other calls wait there, and
    /// the call sleeps till then if `budget` allows, and asks again. A time already past (the
    /// answer took longer than the wait) is waited as [`LEAST_HOLD`]: the call must ask again,
    /// never go unreserved, and a store that keeps naming past times is not asked in a spin.
    /// With the turn the store's window brought the key's episode to, if it closed the key.
    pub(crate) fn reserved(
        &self,
        answer: Option<Reservation>,
        mut pass: Pass,
        now: Instant,
        budget: Duration,
    ) -> (Entered, Option<Episode>) {
        let (until, window) = match answer {
            Some(Reservation::NotBefore { until, window }) => (until, window),
            Some(Reservation::Granted(ticket)) => {
                pass.reserved(ticket);
                return (Entered::Admitted(pass), None);
            }
            None => return (Entered::Admitted(pass), None),
        };
        let registry = &self.gates.registry;
        let clocks = registry.clocks();
        let until = clocks.instant(until).max(after(now, LEAST_HOLD));
        let report = window.to_report(&clocks);
        let episode = registry.learn(&self.key, report, now);
        if report.closed_until.is_some() && self.whole().is_none() {
            self.gates.closed_whole(&self.key);
        }
        // What the gate now knows turns the call away as it would one arriving now (an
        // instruction above the cap, however little is left beyond it); where no gate was kept
        // for the key (a registry full of gates holding calls), what the store said does.
        let beyond = match registry.lock().gates.get(&self.key) {
            Some(gate) => gate.beyond(now, budget, self.terms),
            None => {
                let mut told = Gate::new();
                told.learn(report, now);
                told.beyond(now, budget, self.terms)
            }
        };
        let held = match beyond.map_or_else(
            || self.not_before(until, HeldBy::Fleet, now, budget),
            |closed| self.turned_away(closed),
        ) {
            Entered::NotBefore(until, _) => Entered::Held(until),
            other => other,
        };
        // Given back once the gate knows why: calls it wakes meet the closure.
        drop(pass);
        (held, episode)
    }

    /// The call may not go before `until`, held by `by`: it sleeps till then if its terms and
    /// `budget` allow, and is throttled at once if not.
    fn not_before(&self, until: Instant, by: HeldBy, now: Instant, budget: Duration) -> Entered {
        let left = until.saturating_duration_since(now);
        if left > budget.min(self.terms.longest_wait) {
            Entered::Throttled(Throttled::new(self.key.clone(), left, by))
        } else {
            Entered::NotBefore(until, by)
        }
    }

    /// The call at its `gate`: throttled if the gate stays closed beyond `budget`, else let
    /// through or queued.
    fn arrive(&self, gate: &mut Gate, now: Instant, budget: Duration) -> Entered {
        match gate.arrive(now, self.terms, budget) {
            Arrival::Admitted(admission) => Entered::Admitted(self.pass(admission)),
            Arrival::Queued(id) => Entered::Queued(Place::new(
                self.gates.clone(),
                self.key.clone(),
                self.whole().cloned(),
                id,
                self.terms,
            )),
            Arrival::Beyond(closed) => self.turned_away(closed),
            Arrival::Short { until, by } => self.not_before(until, by, now, budget),
        }
    }

    /// Turned away at once by what holds it, `closed`.
    fn turned_away(&self, closed: Closed) -> Entered {
        Entered::Throttled(Throttled::new(self.key.clone(), closed.left, closed.by))
    }

    fn pass(&self, admission: Admission) -> Pass {
        Pass::new(
            self.gates.clone(),
            self.key.clone(),
            self.whole().cloned(),
            admission,
            self.terms,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::SystemTime;

    /// What a GitHub answer naming the limit `resource`, dated, said, as the gate reads it.
    fn answer_naming(resource: &'static str, now: Instant) -> Said {
        let wall = SystemTime::now();
        let reset = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 60;
        let mut response = http::Response::builder()
            .header("date", httpdate::fmt_http_date(wall))
            .header("x-ratelimit-limit", "5000")
            .header("x-ratelimit-remaining", "4999")
            .header("x-ratelimit-reset", reset.to_string())
            .header("x-ratelimit-resource", resource)
            .body(())
            .unwrap();
        let settings = Settings::default();
        Said::read(&mut response, now, wall, None, &settings, &[])
    }

    /// A call on `route` of the key `api`, whose answers so far named the limit `core` only
    /// (on another route): the call is gated by `core`, guessed.
    fn call_guessed_core(route: &str) -> Call {
        let gates = Gates::default();
        let whole = Key::named("api");
        gates.routes.learn(&whole, "/rate_limit", "core");
        let mut call = Call::new(gates, whole, None, &Settings::default());
        call.refine(route);
        assert_eq!(call.key, Key::named("api").within("core"));
        call
    }

    #[test]
    fn an_answer_naming_the_limit_a_route_was_guessed_by_makes_the_route_known() {
        let now = Instant::now();
        let call = call_guessed_core("/repos/o/r");
        let said = answer_naming("core", now);
        let mut report = said.report(None);
        let before = report;
        call.learn_limit("/repos/o/r", &said, &mut report, now);
        let whole = Key::named("api");
        assert_eq!(
            call.gates.routes.refine(&whole, "/repos/o/r"),
            Some((whole.within("core"), Known::Route))
        );
        assert_eq!(report, before, "the call's own gate takes what it said");
    }

    #[test]
    fn an_answer_naming_another_limit_speaks_for_it_and_keeps_the_servers_clock() {
        let now = Instant::now();
        let call = call_guessed_core("/search/code");
        let said = answer_naming("search", now);
        let mut report = said.report(None);
        let clock = report.server_clock;
        assert!(clock.is_some() && report.quota.is_some());
        call.learn_limit("/search/code", &said, &mut report, now);
        let whole = Key::named("api");
        assert_eq!(
            call.gates.routes.refine(&whole, "/search/code"),
            Some((whole.within("search"), Known::Route))
        );
        assert_eq!(
            report,
            Report {
                server_clock: clock,
                ..Report::default()
            },
            "the call's own gate only counts it back, on the server's clock"
        );
    }

    /// Discord's global 429, for 30 s, as the gate reads it.
    fn global_refusal(now: Instant) -> Said {
        let mut response = http::Response::builder()
            .status(429)
            .header("retry-after", "30")
            .header("x-ratelimit-global", "true")
            .header("x-ratelimit-scope", "global")
            .body(())
            .unwrap();
        let settings = Settings::default();
        Said::read(&mut response, now, SystemTime::now(), None, &settings, &[])
    }

    /// A global 429 one process meets is told to the store under the key's other limits as the
    /// server named it: for its 30 s, not the 30 s plus this process's spread.
    #[tokio::test(start_paused = true)]
    async fn a_global_refusal_is_shared_under_the_other_limits_as_the_server_named_it() {
        use crate::gate::store::{MemoryStore, Reservation, Respects, WindowStore};
        use std::sync::Arc;
        const SECOND: Duration = Duration::from_secs(1);
        let store = Arc::new(MemoryStore::new());
        let gates = Gates::with_store(store.clone());
        let whole = Key::named("api");
        gates.routes.learn(&whole, "/a", "a");
        gates.routes.learn(&whole, "/b", "b");
        let settings = Settings::default();
        let mut call = Call::new(gates.clone(), whole.clone(), None, &settings);
        let now = Instant::now();
        let Entered::Admitted(_refused) = call.enter(now, 120 * SECOND, "/a") else {
            panic!("the first call on a goes alone");
        };
        let said = global_refusal(now);
        // Closed 30 s and this process's spread of 5 s.
        let mut report = said.report(Some(now + 35 * SECOND));
        call.learn_limit("/a", &said, &mut report, now);
        tokio::task::yield_now().await;
        let asked = SystemTime::now();
        let held = store
            .reserve(&whole.within("b"), Respects::ALL, asked)
            .await
            .unwrap();
        let Reservation::NotBefore { until, .. } = held else {
            panic!("the other limit was not told: {held:?}");
        };
        let left = until.duration_since(asked).unwrap();
        assert!(
            left > 29 * SECOND && left <= 30 * SECOND,
            "held {left:?}, not the 30 s named"
        );
    }

    /// A global 429 holds every limit of the key: a call waiting at another limit's gate when
    /// it came is not let through while it holds, as a call arriving then is not.
    #[tokio::test(start_paused = true)]
    async fn a_waiter_at_another_limit_is_not_let_through_while_a_global_refusal_holds() {
        use crate::gate::call::NotYet;
        use crate::gate::key::tokens::TokenMeters;
        const SECOND: Duration = Duration::from_secs(1);
        let gates = Gates::default();
        let whole = Key::named("api");
        gates.routes.learn(&whole, "/a", "a");
        gates.routes.learn(&whole, "/b", "b");
        let settings = Settings::default();
        let call = || Call::new(gates.clone(), whole.clone(), None, &settings);
        let (now, budget) = (Instant::now(), 120 * SECOND);
        // Route b: the first call probes its limit's new gate; the second waits behind it.
        let Entered::Admitted(probe) = call().enter(now, budget, "/b") else {
            panic!("the first call on b goes alone");
        };
        let Entered::Queued(mut waiting) = call().enter(now, budget, "/b") else {
            panic!("the second call on b waits for the first's answer");
        };
        // Route a is refused for every limit of the key, for 30 s.
        let mut on_a = call();
        let Entered::Admitted(refused) = on_a.enter(now, budget, "/a") else {
            panic!("the first call on a goes alone");
        };
        let said = global_refusal(now);
        assert!(said.is_global());
        let mut report = said.report(Some(now + 30 * SECOND));
        on_a.learn_limit("/a", &said, &mut report, now);
        refused.answered(report, &TokenMeters::NONE, now, None);
        // b's probe comes back healthy a moment later.
        let later = now + SECOND;
        probe.answered(Report::default(), &TokenMeters::NONE, later, None);
        assert!(
            matches!(call().enter(later, budget, "/b"), Entered::NotBefore(..)),
            "a call arriving on b meets the global closure"
        );
        match waiting.poll(later, budget, std::task::Waker::noop()) {
            Ok(_) => panic!("the waiter on b was let through inside the global closure"),
            Err(NotYet::Reroute) => {}
            Err(_) => panic!("the waiter on b arrives again, to meet the global closure"),
        }
        let b = whole.within("b");
        assert_eq!(gates.snapshot(&b).map_or(0, |gate| gate.waiters()), 0);
    }

    /// An instruction above the cap closing the whole key turns away a call on any limit of
    /// it, as it turns away one on the whole key: a little spread leaves its closure within
    /// the longest wait (the cap and its spread), but what is instructed is over the cap.
    #[test]
    fn a_call_on_a_limit_of_a_key_instructed_past_the_cap_is_turned_away() {
        const SECOND: Duration = Duration::from_secs(1);
        let gates = Gates::default();
        let whole = Key::named("api");
        gates.routes.learn(&whole, "/a", "a");
        let settings = Settings {
            retry_after_cap: 29 * SECOND + SECOND / 2,
            ..Settings::default()
        };
        let now = Instant::now();
        let instructed = now + 30 * SECOND;
        let refused = Report {
            refused: true,
            closed_until: Some(instructed + SECOND / 10),
            closed_by: Some(HeldBy::RetryAfter {
                status: http::StatusCode::TOO_MANY_REQUESTS,
            }),
            instructed_until: Some(instructed),
            ..Report::default()
        };
        gates.registry.learn(&whole, refused, now);
        let mut call = Call::new(gates.clone(), whole.clone(), None, &settings);
        let entered = call.enter(now, 120 * SECOND, "/a");
        assert!(matches!(entered, Entered::Throttled(_)));
    }

    /// The store holds a call by an instruction above the cap on a process whose registry is
    /// full of gates holding calls: the call is turned away, not put to sleep.
    #[test]
    fn a_store_instruction_above_the_cap_turns_a_call_away_on_a_full_registry() {
        const SECOND: Duration = Duration::from_secs(1);
        let (gates, now) = (Gates::with_capacity(1), Instant::now());
        let closure = Report {
            refused: true,
            closed_until: Some(now + 10 * SECOND),
            ..Report::default()
        };
        gates.registry.learn(&Key::named("other"), closure, now);
        let settings = Settings {
            retry_after_cap: 30 * SECOND,
            ..Settings::default()
        };
        let mut call = Call::new(gates.clone(), Key::named("api"), None, &settings);
        let Entered::Admitted(pass) = call.enter(now, 120 * SECOND, "/") else {
            panic!("a new key on a full registry goes ungated");
        };
        let until = gates.registry.clocks().wall(now + 30 * SECOND + SECOND / 2);
        let window = Window {
            closed_until: Some(until),
            ..Window::default()
        };
        let answer = Some(Reservation::NotBefore { until, window });
        match call.reserved(answer, pass, now, 120 * SECOND).0 {
            Entered::Throttled(_) => {}
            Entered::Held(at) => panic!("held {:?}", at - now),
            _ => panic!("neither throttled nor held"),
        }
    }

    #[test]
    fn a_call_waits_out_a_closure_as_long_as_its_budget_and_cap_allow_and_no_longer() {
        let call = Call::new(
            Gates::default(),
            Key::named("api"),
            None,
            &Settings::default(),
        );
        let now = Instant::now();
        let by = HeldBy::Fleet;
        let budget = Duration::from_secs(20);
        assert!(matches!(
            call.not_before(now + budget, by, now, budget),
            Entered::NotBefore(until, _) if until == now + budget
        ));
        let just_beyond = now + budget + Duration::from_millis(1);
        match call.not_before(just_beyond, by, now, budget) {
            Entered::Throttled(throttled) => {
                assert_eq!(throttled.retry_after(), budget + Duration::from_millis(1));
                assert_eq!(throttled.held_by(), by);
            }
            _ => panic!("a closure beyond the budget throttles the call"),
        }
        // With all the budget in the world, the cap (60 s, and its 1 s of spread) bounds it.
        let ample = Duration::from_secs(3600);
        let at_the_cap = now + Duration::from_secs(61);
        assert!(matches!(
            call.not_before(at_the_cap, by, now, ample),
            Entered::NotBefore(..)
        ));
        let beyond_the_cap = at_the_cap + Duration::from_millis(1);
        assert!(matches!(
            call.not_before(beyond_the_cap, by, now, ample),
            Entered::Throttled(_)
        ));
    }

    /// A waker that counts how often it is woken.
    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The settings of the calls on limit `a` below: a cap of 30 s.
    fn capped_at_30_s() -> Settings {
        Settings {
            retry_after_cap: Duration::from_secs(30),
            ..Settings::default()
        }
    }

    /// A call waiting at the gate of limit `a` of the key `api`, on `gates`, closed for a 20 s
    /// guess; polled once at `now` by a waker that counts its wakes.
    fn waiting_at_limit_a(
        gates: &Gates,
        now: Instant,
    ) -> (Place, std::sync::Arc<Count>, std::task::Waker) {
        let whole = Key::named("api");
        gates.routes.learn(&whole, "/a", "a");
        let guess = Report {
            refused: true,
            closed_until: Some(now + Duration::from_secs(20)),
            closed_by: Some(HeldBy::Guess {
                status: http::StatusCode::TOO_MANY_REQUESTS,
            }),
            ..Report::default()
        };
        gates.registry.learn(&whole.within("a"), guess, now);
        let mut call = Call::new(gates.clone(), whole, None, &capped_at_30_s());
        let budget = Duration::from_secs(120);
        let Entered::Queued(mut place) = call.enter(now, budget, "/a") else {
            panic!("its limit is closed: it waits there");
        };
        let count = std::sync::Arc::new(Count(0.into()));
        let waker = std::task::Waker::from(count.clone());
        assert!(place.poll(now, budget, &waker).is_err());
        (place, count, waker)
    }

    /// The waiter of [`waiting_at_limit_a`] is woken when `refuse`, given its settings, closes
    /// the whole key past the cap at `now`: it looks again and is turned away then, not once
    /// its guess ends (when what is left of the instruction is within the cap, and it would
    /// wait the rest).
    fn a_waiter_at_a_limit_looks_again_when(
        gates: Gates,
        now: Instant,
        refuse: impl FnOnce(&Settings),
    ) {
        use crate::gate::call::NotYet;
        use std::sync::atomic::Ordering;
        let budget = Duration::from_secs(120);
        let (mut place, count, waker) = waiting_at_limit_a(&gates, now);
        let settings = capped_at_30_s();
        refuse(&settings);
        assert!(count.0.load(Ordering::SeqCst) > 0, "not woken");
        assert!(matches!(
            place.poll(now, budget, &waker),
            Err(NotYet::Reroute)
        ));
        let mut again = Call::new(gates, Key::named("api"), None, &settings);
        assert!(
            matches!(again.enter(now, budget, "/a"), Entered::Throttled(_)),
            "arriving again, it is turned away"
        );
    }

    /// A 429 for every limit of the key naming 31 s, answering `call`, let through as `pass`.
    fn refused_globally_for_31_s(
        call: Call,
        pass: Pass,
        route: &str,
        settings: &Settings,
        now: Instant,
    ) {
        use crate::gate::key::tokens::TokenMeters;
        let mut response = http::Response::builder()
            .status(429)
            .header("retry-after", "31")
            .header("x-ratelimit-global", "true")
            .body(())
            .unwrap();
        let said = Said::read(&mut response, now, SystemTime::now(), None, settings, &[]);
        assert!(said.is_global());
        let closed = now + Duration::from_millis(31_500);
        let mut report = said.report(Some(closed));
        call.learn_limit(route, &said, &mut report, now);
        pass.answered(report, &TokenMeters::NONE, now, None);
    }

    #[test]
    fn a_waiter_at_a_limit_looks_again_when_another_limits_call_closes_the_whole_key() {
        let (gates, now) = (Gates::default(), Instant::now());
        let on_b = || Call::new(gates.clone(), Key::named("api"), None, &Settings::default());
        a_waiter_at_a_limit_looks_again_when(gates.clone(), now, |settings| {
            gates.routes.learn(&Key::named("api"), "/b", "b");
            let mut on_b = on_b();
            let Entered::Admitted(pass) = on_b.enter(now, Duration::MAX, "/b") else {
                panic!("the first call on b goes alone");
            };
            refused_globally_for_31_s(on_b, pass, "/b", settings, now);
        });
    }

    /// The call refused went before any answer named a limit: it is gated by the whole key.
    #[test]
    fn a_waiter_at_a_limit_looks_again_when_a_call_on_the_whole_key_closes_it() {
        let (gates, now) = (Gates::default(), Instant::now());
        let mut early = Call::new(gates.clone(), Key::named("api"), None, &Settings::default());
        let Entered::Admitted(pass) = early.enter(now, Duration::MAX, "/x") else {
            panic!("the first call goes alone");
        };
        a_waiter_at_a_limit_looks_again_when(gates, now, |settings| {
            refused_globally_for_31_s(early, pass, "/x", settings, now);
        });
    }

    /// The store tells a call on the whole key (gone before any answer named a limit) that
    /// another process met the closure.
    #[test]
    fn a_waiter_at_a_limit_looks_again_when_the_store_tells_the_whole_key_closed() {
        let (gates, now) = (Gates::default(), Instant::now());
        let mut early = Call::new(gates.clone(), Key::named("api"), None, &Settings::default());
        let Entered::Admitted(pass) = early.enter(now, Duration::MAX, "/x") else {
            panic!("the first call goes alone");
        };
        let until = gates.registry.clocks().wall(now + Duration::from_secs(31));
        let window = Window {
            closed_until: Some(until),
            ..Window::default()
        };
        a_waiter_at_a_limit_looks_again_when(gates, now, |_| {
            let answer = Reservation::NotBefore { until, window };
            early.reserved(Some(answer), pass, now, Duration::MAX);
        });
    }

    /// An answer to a call on the whole key that closes nothing wakes no waiter at the key's
    /// limits: it holds no call on them.
    #[test]
    fn an_answer_that_closes_nothing_wakes_no_waiter_at_a_limit() {
        use crate::gate::key::tokens::TokenMeters;
        let (gates, now) = (Gates::default(), Instant::now());
        let mut early = Call::new(gates.clone(), Key::named("api"), None, &Settings::default());
        let Entered::Admitted(pass) = early.enter(now, Duration::MAX, "/x") else {
            panic!("the first call goes alone");
        };
        let (_place, count, _waker) = waiting_at_limit_a(&gates, now);
        pass.answered(Report::default(), &TokenMeters::NONE, now, None);
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    /// A store's answer to a call on the whole key that closes nothing (a quota spent till a
    /// reset) wakes no waiter at the key's limits: it holds no call on them.
    #[test]
    fn a_store_answer_that_closes_nothing_wakes_no_waiter_at_a_limit() {
        let (gates, now) = (Gates::default(), Instant::now());
        let mut early = Call::new(gates.clone(), Key::named("api"), None, &Settings::default());
        let Entered::Admitted(pass) = early.enter(now, Duration::MAX, "/x") else {
            panic!("the first call goes alone");
        };
        let (_place, count, _waker) = waiting_at_limit_a(&gates, now);
        let until = gates.registry.clocks().wall(now + Duration::from_secs(5));
        let window = Window {
            quota: Some((0, until)),
            ..Window::default()
        };
        early.reserved(
            Some(Reservation::NotBefore { until, window }),
            pass,
            now,
            Duration::MAX,
        );
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    /// The server said one request is left of a window ending 30.5 s on (cap 30 s), and
    /// another process holds it in flight. A call here waits for the reset, as it does where
    /// the one request is out of this process: the server said nothing is spent, and named no
    /// time over the cap.
    #[tokio::test(start_paused = true)]
    async fn a_window_all_reserved_by_another_process_is_no_instruction() {
        use crate::gate::store::{MemoryStore, Respects, WindowStore};
        use std::sync::Arc;
        const SECOND: Duration = Duration::from_secs(1);
        let settings = Settings {
            retry_after_cap: 30 * SECOND,
            ..Settings::default()
        };
        let budget = 120 * SECOND;
        let key = Key::named("api");
        let now = Instant::now();
        let reset_in = 30 * SECOND + SECOND / 2;
        // One process: the last request of the window is out; the next call waits its reset.
        let local = Gates::default();
        let one_left = Report {
            quota: Some(crate::gate::rules::quota::Quota {
                remaining: 1,
                reset_at: now + reset_in,
                second: None,
            }),
            ..Report::default()
        };
        local.registry.learn(&key, one_left, now);
        let Entered::Admitted(_out) = local
            .call(key.clone(), None, &settings)
            .enter(now, budget, "/")
        else {
            panic!("one is left");
        };
        let here = local
            .call(key.clone(), None, &settings)
            .enter(now, budget, "/");
        assert!(matches!(here, Entered::Queued(_)), "one process: it waits");
        // Two processes sharing a store: the other one holds the last request.
        let store = Arc::new(MemoryStore::new());
        let gates = Gates::with_store(store.clone());
        let wall = gates.registry.clocks().wall(now);
        let window = Window {
            quota: Some((1, wall + reset_in)),
            ..Window::default()
        };
        store.merge(&key, window, None, wall).await.unwrap();
        let other = store.reserve(&key, Respects::ALL, wall).await.unwrap();
        assert!(matches!(other, Reservation::Granted(_)));
        let mut call = gates.call(key.clone(), None, &settings);
        let Entered::Admitted(pass) = call.enter(now, budget, "/") else {
            panic!("this process knows nothing yet: the first call goes");
        };
        let answer = store.reserve(&key, Respects::ALL, wall).await.unwrap();
        match call.reserved(Some(answer), pass, now, budget).0 {
            Entered::Held(until) => assert_eq!(until, now + reset_in),
            Entered::Throttled(t) => panic!("throttled: {t} ({answer:?})"),
            _ => panic!("neither held nor throttled"),
        }
    }

    /// The first call on the key `api` of `gates`, answered with a token meter of `limit` that
    /// has `remaining` left till a reset 30.5 s on (a cap of 30 s).
    fn tokens_reported(gates: &Gates, limit: u64, remaining: u64, now: Instant) {
        use crate::gate::key::tokens::TokenMeters;
        let settings = capped_at_30_s();
        let mut call = gates.call(Key::named("api"), None, &settings);
        let Entered::Admitted(first) = call.enter(now, Duration::from_secs(120), "/") else {
            panic!("the first call goes");
        };
        let mut response = http::Response::builder()
            .header("x-ratelimit-limit-requests", "10000")
            .header("x-ratelimit-remaining-requests", "9999")
            .header("x-ratelimit-reset-requests", "6ms")
            .header("x-ratelimit-limit-tokens", limit.to_string())
            .header("x-ratelimit-remaining-tokens", remaining.to_string())
            .header("x-ratelimit-reset-tokens", "30.5s")
            .body(())
            .unwrap();
        let said = Said::read(&mut response, now, SystemTime::now(), None, &settings, &[]);
        assert_ne!(*said.tokens(), TokenMeters::NONE);
        first.answered(said.report(None), said.tokens(), now, None);
    }

    /// A call on the key `api` of `gates` declaring `cost`, arriving at `now` with 120 s left.
    fn costing(gates: &Gates, cost: (u64, u64), now: Instant) -> Entered {
        let cost = crate::tokens::TokenCost::new(cost.0, cost.1);
        let mut call = gates.call(Key::named("api"), Some(cost), &capped_at_30_s());
        call.enter(now, Duration::from_secs(120), "/")
    }

    /// The server's token meter resets 30.5 s on (cap 30 s) with 100 tokens left; a call
    /// declaring 500 cannot go before that reset: it is turned away, not put to sleep past
    /// the cap, as a call meeting a window spent till then is.
    #[test]
    fn a_token_cost_short_until_a_reset_over_the_cap_turns_the_call_away() {
        let (gates, now) = (Gates::default(), Instant::now());
        tokens_reported(&gates, 10_000, 100, now);
        match costing(&gates, (100, 400), now) {
            Entered::Throttled(_) => {}
            Entered::NotBefore(until, by) => panic!("sleeps {:?}, {by:?}", until - now),
            _ => panic!("neither"),
        }
    }

    /// The server said 10,000 tokens are left till a reset 30.5 s on (cap 30 s); a call out of
    /// this process declared 6,000 of them. The next call, declaring as much, is short only by
    /// what the call out may spend (it declared at most): it waits for the reset, as it would
    /// any wait within its longest, and is not turned away as at a meter the server said is
    /// spent.
    #[test]
    fn a_meter_short_only_by_this_processs_calls_out_is_waited_not_turned_away() {
        let (gates, now) = (Gates::default(), Instant::now());
        tokens_reported(&gates, 100_000, 10_000, now);
        let Entered::Admitted(_out) = costing(&gates, (1_000, 5_000), now) else {
            panic!("10,000 left: 6,000 go");
        };
        match costing(&gates, (1_000, 5_000), now) {
            Entered::NotBefore(until, _) => {
                assert_eq!(until, now + Duration::from_millis(30_500));
            }
            Entered::Throttled(throttled) => panic!("turned away: {throttled}"),
            _ => panic!("neither held nor turned away"),
        }
    }

    /// A layer with `cap` that does not respect quotas (nor learns, nor ramps up).
    fn unmetered(cap: Duration) -> Settings {
        Settings {
            retry_after_cap: cap,
            respect_remaining: false,
            slow_start: false,
            learn_limits: false,
            ..Settings::default()
        }
    }

    /// What a call with `settings` and 120 s of budget meets on a fresh key, once the store has
    /// told the window `told` makes on the gates' clocks.
    fn entered_when_told(
        settings: &Settings,
        told: impl FnOnce(&crate::gate::time::Anchor) -> Window,
    ) -> Entered {
        let (gates, key, now) = (Gates::default(), Key::named("api"), Instant::now());
        let clocks = gates.registry.clocks();
        gates
            .registry
            .learn(&key, told(&clocks).to_report(&clocks), now);
        gates
            .call(key, None, settings)
            .enter(now, Duration::from_secs(120), "/")
    }

    /// With `respect_remaining(false)` (cap 30 s): the store tells a closure another process's
    /// 429 named for 30.2 s, and beside it, or not, a window the server spent until 40 s. The
    /// closure alone holds the call, and its instruction is over the cap: turned away either
    /// way (the spent window's reset, which does not hold this call, hid the closure's).
    #[test]
    fn an_over_cap_closure_told_beside_a_later_spent_window_turns_an_unmetered_call_away() {
        const SECOND: Duration = Duration::from_secs(1);
        const MS: Duration = Duration::from_millis(1);
        let settings = unmetered(30 * SECOND);
        let now = Instant::now();
        let enter = |spent: bool| {
            entered_when_told(&settings, |clocks| Window {
                closed_until: Some(clocks.wall(now + 30 * SECOND + 200 * MS)),
                quota: spent.then(|| (0, clocks.wall(now + 40 * SECOND))),
                spent_by_server: spent,
                ..Window::default()
            })
        };
        assert!(
            matches!(enter(false), Entered::Throttled(_)),
            "the closure alone"
        );
        assert!(
            matches!(enter(true), Entered::Throttled(_)),
            "beside a spent window"
        );
    }

    /// With `respect_remaining(false)` (cap 10 s): the store tells a closure another process
    /// guessed (10.6 s) and a window the server spent until 10.2 s, within it. The call is
    /// held by the guess alone, which it may wait: it waits, spent window or not.
    #[test]
    fn a_spent_window_within_a_guessed_closure_does_not_turn_away_an_unmetered_call() {
        const SECOND: Duration = Duration::from_secs(1);
        const MS: Duration = Duration::from_millis(1);
        let settings = unmetered(10 * SECOND);
        let now = Instant::now();
        let enter = |spent: bool| {
            entered_when_told(&settings, |clocks| Window {
                closed_until: Some(clocks.wall(now + 10 * SECOND + 600 * MS)),
                guessed: true,
                quota: spent.then(|| (0, clocks.wall(now + 10 * SECOND + 200 * MS))),
                spent_by_server: spent,
                ..Window::default()
            })
        };
        assert!(
            matches!(enter(false), Entered::Queued(_)),
            "the guess alone"
        );
        match enter(true) {
            Entered::Queued(_) => {}
            Entered::Throttled(t) => panic!("throttled by a spent window it ignores: {t}"),
            _ => panic!("other"),
        }
    }

    /// With `respect_remaining(false)`: this process's own 429 named 29.5 s (cap 30 s; its
    /// closure with spread ends 30.4 s on); the store tells that closure, and beside it a
    /// window another (metered) process read spent until 30.2 s on, as the server said. The
    /// call does not respect spent windows and the only instruction holding it is within the
    /// cap: it waits.
    #[test]
    fn a_call_that_does_not_respect_quotas_is_not_turned_away_by_a_spent_window_told() {
        const SECOND: Duration = Duration::from_secs(1);
        const MS: Duration = Duration::from_millis(1);
        let settings = unmetered(30 * SECOND);
        let (gates, key, now) = (Gates::default(), Key::named("api"), Instant::now());
        let status = http::StatusCode::TOO_MANY_REQUESTS;
        let own = Report {
            refused: true,
            closed_until: Some(now + 30 * SECOND + 400 * MS),
            closed_by: Some(HeldBy::RetryAfter { status }),
            instructed_until: Some(now + 29 * SECOND + 500 * MS),
            ..Report::default()
        };
        gates.registry.learn(&key, own, now);
        let budget = 120 * SECOND;
        let before = gates
            .call(key.clone(), None, &settings)
            .enter(now, budget, "/");
        assert!(
            matches!(before, Entered::Queued(_)),
            "its own 429: it waits"
        );
        let clocks = gates.registry.clocks();
        let told = Window {
            closed_until: Some(clocks.wall(now + 29 * SECOND + 500 * MS)),
            quota: Some((0, clocks.wall(now + 30 * SECOND + 200 * MS))),
            spent_by_server: true,
            ..Window::default()
        };
        gates.registry.learn(&key, told.to_report(&clocks), now);
        match gates.call(key, None, &settings).enter(now, budget, "/") {
            Entered::Queued(_) => {}
            Entered::Throttled(t) => panic!("throttled: {t}"),
            _ => panic!("other"),
        }
    }
}
