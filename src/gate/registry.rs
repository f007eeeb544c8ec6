//! The table of every key's gate, and how it stays bounded: it remembers a key from its first
//! call (so that requests out are counted against what the first answers report) and forgets
//! it once its gate has nothing to remember (no closure, quota window, waiter, request out or
//! probe owed), and at most its capacity of them.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::events;
use crate::gate::Judged;
use crate::gate::key::Gate;
use crate::gate::key::answer::{Admission, Episode};
use crate::gate::key::report::Report;
use crate::gate::key::terms::Terms;
use crate::gate::store::shared::Shared;
use crate::gate::time::Anchor;
use crate::key::{BuildKeyHasher, Key};

/// The gates of every key, behind one lock, with what they share with other processes.
pub(crate) struct Registry {
    table: Mutex<Table>,
    pub(crate) capacity: usize,
    /// The store shared with other processes, if any.
    pub(crate) shared: Option<Shared>,
    /// How the store's wall-clock times map onto the gates' clock.
    clocks: Mutex<Anchor>,
}

impl Registry {
    pub(crate) fn new(capacity: usize, shared: Option<Shared>) -> Self {
        Registry {
            table: Mutex::new(Table::default()),
            capacity: capacity.max(1),
            shared,
            clocks: Mutex::new(Anchor::now()),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Table> {
        // The table is only changed by short, panic-free sections: a poisoned lock still holds
        // consistent gates.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How the store's wall-clock times map onto the gates' clock now.
    pub(crate) fn clocks(&self) -> Anchor {
        let mut clocks = self.clocks.lock().unwrap_or_else(PoisonError::into_inner);
        *clocks = clocks.renewed(SystemTime::now(), std::time::Instant::now());
        *clocks
    }

    /// Takes in what another process, or an answer on another limit, said of `key` (see
    /// [`Table::learn`]), and wakes whom it concerns once the table is unlocked.
    pub(crate) fn learn(&self, key: &Key, report: Report, now: Instant) -> Option<Episode> {
        let (wakes, episode) = self.lock().learn(key, report, now, self.capacity);
        wakes.into_iter().for_each(Waker::wake);
        episode
    }

    /// Applies `change` to `key`'s gate, if it has one, and wakes whom the change freed once
    /// the table is unlocked.
    pub(crate) fn update(&self, key: &Key, change: impl FnOnce(&mut Gate)) {
        let (wakes, judged) = match self.lock().gates.get_mut(key) {
            Some(gate) => {
                change(gate);
                (gate.take_wakes(), gate.take_judged())
            }
            None => (Vec::new(), None),
        };
        wakes.into_iter().for_each(Waker::wake);
        events::round_judged(key, judged);
    }
}

/// After a sweep that found no room, the least time before a closure may ask for another:
/// a registry full of live closures (a flood of 429s on new keys) is not swept whole for
/// every one of them.
const SWEEP_AGAIN_AFTER: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Table {
    pub(crate) gates: HashMap<Key, Gate, BuildKeyHasher>,
    /// New keys turned away since the last sweep for idle gates: a full registry is swept once
    /// per so many, so that turning keys away stays cheap.
    turned_away: usize,
    /// Until when a closure does not sweep a full registry again: the last sweep found no room.
    fruitless_until: Option<Instant>,
}

impl Table {
    /// Takes in what another process, or an answer on another limit, said of `key`: the wakers
    /// of the calls it sends to look again, and the turn it brought the key's episode to, if
    /// it closed a key that was not closed.
    pub(crate) fn learn(
        &mut self,
        key: &Key,
        report: Report,
        now: Instant,
        capacity: usize,
    ) -> (Vec<Waker>, Option<Episode>) {
        let closed = |table: &Table| {
            let gate = table.gates.get(key)?;
            gate.closed(now, Terms::EVERYTHING)
        };
        let held_before = closed(self).is_some();
        let wakes = match self.gates.get_mut(key) {
            Some(gate) => {
                gate.learn(report, now);
                gate.take_wakes()
            }
            None => {
                let mut gate = Gate::new();
                gate.learn(report, now);
                self.keep(key, gate, now, capacity);
                Vec::new()
            }
        };
        let episode = closed(self).filter(|_| !held_before).map(Episode::Closed);
        let episode = match self.gates.get_mut(key) {
            Some(gate) => gate.told(episode),
            None => episode,
        };
        (wakes, episode)
    }

    /// Records `report` for a request on `key` let through as `admitted`, making the key's
    /// gate if the report gives it something to remember and there is room: the wakers to
    /// call, the turn of the key's episode the report brought, and the round the learned law
    /// judged on it.
    pub(crate) fn answered(
        &mut self,
        key: &Key,
        admitted: Admission,
        report: Report,
        now: Instant,
        capacity: usize,
    ) -> (Vec<Waker>, Option<Episode>, Option<Judged>) {
        if let Some(gate) = self.gates.get_mut(key) {
            let episode = gate.answered(admitted, report, now);
            return (gate.take_wakes(), episode, gate.take_judged());
        }
        // (A new gate has learned nothing to judge.)
        let mut gate = Gate::new();
        let episode = gate.answered(admitted, report, now);
        self.keep(key, gate, now, capacity);
        (Vec::new(), episode, None)
    }

    /// Keeps a new key's `gate`, if it has anything to remember and fits.
    fn keep(&mut self, key: &Key, gate: Gate, now: Instant, capacity: usize) {
        if !gate.is_idle(now) && self.make_room(now, capacity, gate.holds_calls(now)) {
            self.gates.insert(key.clone(), gate);
        }
    }

    /// Whether a new key fits. A full registry forgets idle gates once per eighth of its
    /// capacity turned away. For a gate that holds calls back (`urgent`: a closure, a spent
    /// window) it does so at once and, if still full, forgets a gate that holds none (one that
    /// knows only a quota with room, a pace, a probe owed), so that a 429 is not lost for want
    /// of room; unless such a sweep found no room within the last [`SWEEP_AGAIN_AFTER`]. A
    /// gate that holds calls back is never forgotten: a closure or a spent window stays until
    /// it passes. So each new key costs a bounded share of a sweep, however many come.
    pub(crate) fn make_room(&mut self, now: Instant, capacity: usize, urgent: bool) -> bool {
        if self.gates.len() < capacity {
            return true;
        }
        self.turned_away += 1;
        let urgent = urgent && self.fruitless_until.is_none_or(|until| now >= until);
        if urgent || self.turned_away >= capacity / 8 {
            self.turned_away = 0;
            self.gates.retain(|_, gate| !gate.is_idle(now));
            if urgent {
                if self.gates.len() >= capacity {
                    self.forget_one_holding_no_call(now);
                }
                // Only a sweep that also looked for a gate holding no call says there is no
                // room for a closure.
                self.fruitless_until =
                    (self.gates.len() >= capacity).then(|| now + SWEEP_AGAIN_AFTER);
            }
        }
        self.gates.len() < capacity
    }

    /// Forgets a gate that holds no call back (one that knows only a quota with room, a pace,
    /// a probe owed), if there is one.
    fn forget_one_holding_no_call(&mut self, now: Instant) {
        let spare = self
            .gates
            .iter()
            .find(|(_, gate)| !gate.holds_calls(now))
            .map(|(key, _)| key.clone());
        if let Some(spare) = spare {
            self.gates.remove(&spare);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::key::answer::Arrival;
    use crate::gate::key::terms::Terms;
    use crate::gate::rules::quota::Quota;
    use std::time::Duration;

    const TERMS: Terms = Terms {
        metered: true,
        cap: Duration::from_secs(60),
        longest_wait: Duration::from_secs(61),
        probe_timeout: Duration::from_secs(10),
        slow_start: true,
        learned: true,
        fleet: false,
        cost: None,
    };

    const SECOND: Duration = Duration::from_secs(1);

    /// A table of `idle` gates that remember nothing and `busy` ones that each hold a call.
    fn table(idle: usize, busy: usize, now: Instant) -> Table {
        let mut table = Table::default();
        for n in 0..idle {
            table
                .gates
                .insert(Key::named(format!("idle{n}")), Gate::new());
        }
        for n in 0..busy {
            let mut gate = Gate::new();
            let arrival = gate.arrive(now, TERMS, Duration::MAX);
            assert!(matches!(arrival, Arrival::Admitted(_)));
            table.gates.insert(Key::named(format!("busy{n}")), gate);
        }
        table
    }

    /// A gate that knows `remaining` of a quota resetting in a second.
    fn quota_gate(remaining: u64, now: Instant) -> Gate {
        let mut gate = Gate::new();
        let report = Report {
            quota: Some(Quota {
                remaining,
                reset_at: now + SECOND,
                second: None,
            }),
            ..Report::default()
        };
        gate.learn(report, now);
        gate
    }

    fn closed_gate(now: Instant) -> Gate {
        let mut gate = Gate::new();
        let report = Report {
            refused: true,
            closed_until: Some(now + SECOND),
            ..Report::default()
        };
        gate.learn(report, now);
        gate
    }

    /// Counts the times it is woken.
    #[derive(Default)]
    struct Woken(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Woken {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn what_is_learned_of_a_key_wakes_the_call_waiting_at_its_gate() {
        let now = Instant::now();
        let registry = Registry::new(4, None);
        let key = Key::named("api");
        let mut gate = closed_gate(now);
        let Arrival::Queued(id) = gate.arrive(now, TERMS, Duration::MAX) else {
            panic!("a closed gate queues the call");
        };
        let woken = std::sync::Arc::new(Woken::default());
        let waker = Waker::from(woken.clone());
        assert!(
            gate.poll_waiter(id, now, Duration::MAX, &waker, TERMS)
                .is_err()
        );
        registry.lock().gates.insert(key.clone(), gate);
        let longer = Report {
            refused: true,
            closed_until: Some(now + 120 * SECOND),
            ..Report::default()
        };
        registry.learn(&key, longer, now);
        assert_eq!(woken.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn a_spent_window_learned_from_the_store_reopens_with_the_first_healthy_answer_after_it() {
        let now = Instant::now();
        let mut table = Table::default();
        let key = Key::named("api");
        table.gates.insert(key.clone(), Gate::new());
        let spent = Report {
            quota: Some(Quota {
                remaining: 0,
                reset_at: now + SECOND,
                second: None,
            }),
            limit: Some(10),
            ..Report::default()
        };
        let (_, episode) = table.learn(&key, spent, now, 4);
        assert!(matches!(episode, Some(Episode::Closed(_))));
        let reset = now + 2 * SECOND;
        let gate = table.gates.get_mut(&key).unwrap();
        let Arrival::Admitted(admitted) = gate.arrive(reset, TERMS, Duration::MAX) else {
            panic!("the window reset");
        };
        assert!(
            admitted.probe.is_none(),
            "its whole quota came back: no probe"
        );
        assert_eq!(
            gate.answered(admitted, Report::default(), reset),
            Some(Episode::Reopened)
        );
    }

    #[test]
    fn a_table_below_capacity_takes_a_key_without_sweeping() {
        let now = Instant::now();
        let mut table = table(3, 0, now);
        assert!(table.make_room(now, 4, false));
        assert_eq!((table.gates.len(), table.turned_away), (3, 0));
    }

    #[test]
    fn a_full_table_sweeps_idle_gates_once_per_eighth_of_its_capacity_turned_away() {
        let now = Instant::now();
        let mut table = table(14, 2, now);
        assert!(!table.make_room(now, 16, false), "full: turned away");
        assert_eq!((table.gates.len(), table.turned_away), (16, 1));
        assert!(table.make_room(now, 16, false), "the second of two: swept");
        assert_eq!((table.gates.len(), table.turned_away), (2, 0));
    }

    #[test]
    fn for_a_closure_a_full_table_sweeps_at_once_and_then_forgets_a_gate_holding_no_call() {
        let now = Instant::now();
        let mut swept = table(1, 3, now);
        assert!(swept.make_room(now, 4, true));
        assert_eq!(
            swept.gates.len(),
            3,
            "the idle gate went; the busy ones stay"
        );

        let mut spare = table(0, 3, now);
        spare.gates.insert(Key::named("roomy"), quota_gate(5, now));
        assert!(spare.make_room(now, 4, true));
        assert_eq!(spare.gates.len(), 3);
        assert!(!spare.gates.contains_key(&Key::named("roomy")));
    }

    #[test]
    fn a_closure_or_a_spent_window_in_force_is_never_forgotten_to_make_room() {
        let now = Instant::now();
        let mut table = Table::default();
        table.gates.insert(Key::named("closed"), closed_gate(now));
        table.gates.insert(Key::named("spent"), quota_gate(0, now));
        assert!(!table.make_room(now, 2, true));
        assert_eq!(table.gates.len(), 2);
        let over = now + SECOND;
        assert!(table.make_room(over, 2, true), "once they pass, they go");
    }

    #[test]
    fn a_hundred_times_its_capacity_in_keys_closed_for_an_hour_leave_the_table_bounded() {
        let now = Instant::now();
        let capacity = 1_000;
        let keys = 100 * capacity;
        let hour = Report {
            refused: true,
            closed_until: Some(now + 3600 * SECOND),
            ..Report::default()
        };
        let mut table = Table::default();
        for n in 0..keys {
            let key = Key::named(format!("k{n}"));
            table.answered(&key, Admission::uncounted(now), hour, now, capacity);
            assert!(table.gates.len() <= capacity);
        }
        assert_eq!(table.gates.len(), capacity);
        assert!(
            table.gates.contains_key(&Key::named("k0")),
            "the first closures are kept until they pass"
        );
        let last = Key::named(format!("k{}", keys - 1));
        assert!(
            !table.gates.contains_key(&last),
            "a key closed once the table is full of live closures is not remembered"
        );
        // Once the hour has passed (and the minute a gate owing a probe is remembered for), a
        // new closure is remembered again, at its first sweep.
        let later = now + 3660 * SECOND;
        let after_the_hour = Report {
            closed_until: Some(later + 3600 * SECOND),
            ..hour
        };
        let fresh = Key::named("fresh");
        table.answered(
            &fresh,
            Admission::uncounted(later),
            after_the_hour,
            later,
            capacity,
        );
        assert!(table.gates.contains_key(&fresh));
        assert_eq!(table.gates.len(), 1, "the passed closures were swept");
    }

    #[test]
    fn a_sweep_that_found_no_room_is_not_repeated_for_every_closure_within_a_second() {
        let now = Instant::now();
        let mut table = Table::default();
        for n in 0..16 {
            table
                .gates
                .insert(Key::named(format!("c{n}")), closed_gate(now));
        }
        assert!(!table.make_room(now, 16, true), "full of live closures");
        // A gate has nothing left to remember; within the second, a new closure does not
        // sweep for it.
        let soon = now + SECOND - Duration::from_millis(1);
        table.gates.insert(Key::named("c0"), Gate::new());
        assert!(!table.make_room(soon, 16, true));
        assert!(
            table.make_room(now + SECOND, 16, true),
            "a second later it does"
        );
    }

    #[test]
    fn a_table_whose_every_gate_holds_a_call_has_no_room_even_for_a_closure() {
        let now = Instant::now();
        let mut table = table(0, 4, now);
        assert!(!table.make_room(now, 4, true));
        assert_eq!(table.gates.len(), 4);
    }

    #[test]
    fn a_new_key_is_remembered_only_when_its_report_gives_it_something_to_remember() {
        let now = Instant::now();
        let closure = Report {
            refused: true,
            closed_until: Some(now + SECOND),
            ..Report::default()
        };
        let mut table = Table::default();
        let quiet = Report::default();
        table.answered(
            &Key::named("quiet"),
            Admission::uncounted(now),
            quiet,
            now,
            4,
        );
        table.learn(&Key::named("told quiet"), quiet, now, 4);
        assert!(table.gates.is_empty());
        table.answered(
            &Key::named("refused"),
            Admission::uncounted(now),
            closure,
            now,
            4,
        );
        table.learn(&Key::named("told refused"), closure, now, 4);
        assert_eq!(table.gates.len(), 2);
    }
}
