//! The shared gates: one per key, held once for every call on that key.
//!
//! A 429 closes its key's gate until the server's time; every call on the key then waits on
//! that one gate instead of sleeping its own copy of the wait and stampeding back with the
//! others. A meter that said the quota is spent closes it until the reset. When the gate
//! reopens, a probe goes first, alone, and the others follow paced (see `state`).
//!
//! The registry only remembers keys with something to remember (a closure, a quota window, a
//! waiter, a request in flight against a known quota), and at most `capacity` of them, so
//! memory stays bounded under any number of distinct keys.

mod state;
mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

pub use store::{MemoryStore, Window, WindowStore};

use crate::key::{BuildKeyHasher, Key};
use state::{Admission, Gate};
pub(crate) use state::{Quota, Report};

/// How many keys a registry remembers by default.
const CAPACITY: usize = 10_000;

/// The furthest ahead the layer places an instant: far beyond any budget, and well inside
/// what `Instant` can hold, so that a huge setting or a hostile value never overflows.
const FAR: Duration = Duration::from_secs(1 << 31);

/// `at + wait`, saturating far in the future instead of overflowing.
pub(crate) fn after(at: Instant, wait: Duration) -> Instant {
    at + wait.min(FAR)
}

/// The gates of every key, shared by all clones of a service, and by every layer given the
/// same `Gates`.
///
/// It also reads any key's state: [`snapshot`](Gates::snapshot).
///
/// # Example
///
/// ```
/// use tower_retry_after::{Gates, Key, RateLimitLayer};
///
/// // Two clients of one API, one set of gates: a 429 to either holds both.
/// let gates = Gates::new();
/// let reads = RateLimitLayer::new().gates(gates.clone());
/// let writes = RateLimitLayer::new().gates(gates.clone());
/// # let _ = (reads, writes);
/// assert!(gates.snapshot(&Key::named("api")).is_none(), "nothing known yet");
/// ```
#[derive(Clone)]
pub struct Gates {
    registry: Arc<Registry>,
}

struct Registry {
    table: Mutex<Table>,
    capacity: usize,
    store: Option<Arc<dyn WindowStore>>,
}

#[derive(Default)]
struct Table {
    gates: HashMap<Key, Gate, BuildKeyHasher>,
    /// New keys turned away since the last sweep for idle gates: a full registry is swept once
    /// per so many, so that turning keys away stays cheap.
    turned_away: usize,
}

impl Default for Gates {
    fn default() -> Self {
        Gates::with_capacity(CAPACITY)
    }
}

impl std::fmt::Debug for Gates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gates")
            .field("keys", &self.len())
            .field("capacity", &self.registry.capacity)
            .field("shared", &self.registry.store.is_some())
            .finish()
    }
}

/// A key's gate as it stands now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateSnapshot {
    closed_for: Option<Duration>,
    remaining: Option<u64>,
    reset_in: Option<Duration>,
    waiters: usize,
    in_flight: u32,
}

impl GateSnapshot {
    /// How long the gate stays closed (a 429's instruction, or a spent window); `None` if open.
    pub fn closed_for(&self) -> Option<Duration> {
        self.closed_for
    }

    /// The quota the server last reported for the current window; `None` when unknown.
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// How long until that window resets, aged to now.
    pub fn reset_in(&self) -> Option<Duration> {
        self.reset_in
    }

    /// Whether the server said no quota is left in the current window.
    pub fn is_exhausted(&self) -> bool {
        self.remaining == Some(0)
    }

    /// How many calls wait at the gate.
    pub fn waiters(&self) -> usize {
        self.waiters
    }

    /// How many requests were let through and are not answered yet.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }
}

impl Gates {
    /// An empty set of gates remembering at most 10,000 keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set of gates remembering at most `capacity` keys (at least 1). Past it, what a
    /// response says about a new key is not kept: that key behaves as unknown, and memory
    /// stays bounded.
    pub fn with_capacity(capacity: usize) -> Self {
        Gates {
            registry: Arc::new(Registry {
                table: Mutex::new(Table::default()),
                capacity: capacity.max(1),
                store: None,
            }),
        }
    }

    /// An empty set of gates that also shares what servers say with other processes through
    /// `store` (see [`WindowStore`]): a closure or quota one process learns holds the others.
    pub fn with_store(store: impl WindowStore) -> Self {
        Gates {
            registry: Arc::new(Registry {
                table: Mutex::new(Table::default()),
                capacity: CAPACITY,
                store: Some(Arc::new(store)),
            }),
        }
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        self.lock().gates.len()
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The state of `key`'s gate, aged to now; `None` if nothing is remembered about it.
    pub fn snapshot(&self, key: &Key) -> Option<GateSnapshot> {
        let now = Instant::now();
        let table = self.lock();
        let gate = table.gates.get(key)?;
        let quota = gate.quota(now);
        Some(GateSnapshot {
            closed_for: gate.closed_for(now),
            remaining: quota.map(|quota| quota.remaining),
            reset_in: quota.map(|quota| quota.reset_at - now),
            waiters: gate.waiters(),
            in_flight: gate.in_flight(),
        })
    }

    /// A call on `key` arrives with `budget` left to wait; `respect_quota` as its layer says.
    pub(crate) fn enter(
        &self,
        key: &Key,
        now: Instant,
        budget: Duration,
        respect_quota: bool,
    ) -> Entered {
        // Read before the table is locked: a shared store may be slow.
        let shared = self
            .registry
            .store
            .as_ref()
            .and_then(|store| store.load(key));
        let mut table = self.lock();
        if let Some(window) = shared {
            table.learn(key, local(window, now), now, self.registry.capacity);
        }
        if let Some(gate) = table.gates.get_mut(key) {
            return self.arrive(gate, key, now, budget, respect_quota);
        }
        // Counted from the first call: responses to the first calls on a key report the quota
        // after one request, while the others are still out and will spend theirs.
        if !table.make_room(now, self.registry.capacity, false) {
            return Entered::Admitted(self.pass(key, Admission::UNCOUNTED));
        }
        let gate = table.gates.entry(key.clone()).or_insert_with(Gate::new);
        self.arrive(gate, key, now, budget, respect_quota)
    }

    /// A call on `key` at its `gate`: throttled if the gate stays closed beyond `budget`, else
    /// let through or queued.
    fn arrive(
        &self,
        gate: &mut Gate,
        key: &Key,
        now: Instant,
        budget: Duration,
        respect_quota: bool,
    ) -> Entered {
        if let Some(closed_for) = gate.closed_for(now) {
            if closed_for > budget {
                return Entered::Throttled(closed_for);
            }
        }
        match gate.arrive(now, respect_quota) {
            Ok(admission) => Entered::Admitted(self.pass(key, admission)),
            Err(id) => Entered::Queued(Place {
                gates: self.clone(),
                key: key.clone(),
                id,
                queued: true,
            }),
        }
    }

    /// How long `key`'s gate stays closed, if it is.
    pub(crate) fn closed_for(&self, key: &Key, now: Instant) -> Option<Duration> {
        self.lock().gates.get(key)?.closed_for(now)
    }

    fn pass(&self, key: &Key, admission: Admission) -> Pass {
        Pass {
            gates: self.clone(),
            key: key.clone(),
            admission,
            open: true,
        }
    }

    /// Applies `change` to `key`'s gate, if it has one, and wakes whom the change freed once
    /// the table is unlocked.
    fn update(&self, key: &Key, change: impl FnOnce(&mut Gate)) {
        let wakes = match self.lock().gates.get_mut(key) {
            Some(gate) => {
                change(gate);
                gate.take_wakes()
            }
            None => Vec::new(),
        };
        wakes.into_iter().for_each(Waker::wake);
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // The table is only changed by short, panic-free sections: a poisoned lock still holds
        // consistent gates.
        self.registry
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A shared window on this process's clock.
fn local(window: Window, now: Instant) -> Report {
    let wall = SystemTime::now();
    let instant = |at: SystemTime| after(now, at.duration_since(wall).unwrap_or(Duration::ZERO));
    Report {
        refused: false,
        closed_until: window.closed_until.map(instant),
        quota: window.quota.map(|(remaining, reset)| Quota {
            remaining,
            reset_at: instant(reset),
        }),
        interval: None,
    }
}

/// What a response said, on the wall clock, to share.
fn shared(report: Report, now: Instant) -> Window {
    let wall = SystemTime::now();
    let time = |at: Instant| wall + at.saturating_duration_since(now);
    Window {
        closed_until: report.closed_until.map(time),
        quota: report
            .quota
            .map(|quota| (quota.remaining, time(quota.reset_at))),
    }
}

impl Table {
    /// Takes in what another process learned about `key`.
    fn learn(&mut self, key: &Key, report: Report, now: Instant, capacity: usize) {
        match self.gates.get_mut(key) {
            Some(gate) => gate.learn(report, now),
            None => {
                let mut gate = Gate::new();
                gate.learn(report, now);
                let closes = report.closed_until.is_some();
                if !gate.is_idle(now) && self.make_room(now, capacity, closes) {
                    self.gates.insert(key.clone(), gate);
                }
            }
        }
    }

    /// Records `report` for a request on `key` let through as `admitted`, making the key's
    /// gate if the report gives it something to remember and there is room.
    fn answered(
        &mut self,
        key: &Key,
        admitted: Admission,
        report: Report,
        now: Instant,
        capacity: usize,
    ) -> Vec<Waker> {
        if let Some(gate) = self.gates.get_mut(key) {
            gate.answered(admitted, report, now);
            return gate.take_wakes();
        }
        let mut gate = Gate::new();
        gate.answered(admitted, report, now);
        let closes = report.closed_until.is_some();
        if !gate.is_idle(now) && self.make_room(now, capacity, closes) {
            self.gates.insert(key.clone(), gate);
        }
        Vec::new()
    }

    /// Whether a new key fits. A full registry forgets idle gates now and then; for a closure
    /// (`urgent`) it does so at once and, if still full, forgets a gate that holds no call, so
    /// that a 429 is never lost for want of room.
    fn make_room(&mut self, now: Instant, capacity: usize, urgent: bool) -> bool {
        if self.gates.len() < capacity {
            return true;
        }
        self.turned_away += 1;
        if urgent || self.turned_away >= capacity / 8 {
            self.turned_away = 0;
            self.gates.retain(|_, gate| !gate.is_idle(now));
        }
        if urgent && self.gates.len() >= capacity {
            let spare = self
                .gates
                .iter()
                .find(|(_, gate)| gate.waiters() == 0 && gate.in_flight() == 0)
                .map(|(key, _)| key.clone());
            if let Some(spare) = spare {
                self.gates.remove(&spare);
            }
        }
        self.gates.len() < capacity
    }
}

/// What a call meets at the gate.
pub(crate) enum Entered {
    /// It may go now.
    Admitted(Pass),
    /// It waits, in this place.
    Queued(Place),
    /// The gate stays closed longer than the call may wait.
    Throttled(Duration),
}

/// A request let through a gate. What its response says must be recorded; if no response
/// comes (the call was dropped, or failed in transport), dropping the pass tells the gate so.
pub(crate) struct Pass {
    gates: Gates,
    key: Key,
    admission: Admission,
    open: bool,
}

impl Pass {
    /// Records what the response said.
    pub(crate) fn answered(mut self, report: Report, now: Instant) {
        self.open = false;
        let capacity = self.gates.registry.capacity;
        let wakes = self
            .gates
            .lock()
            .answered(&self.key, self.admission, report, now, capacity);
        wakes.into_iter().for_each(Waker::wake);
        let worth_sharing = report.closed_until.is_some() || report.quota.is_some();
        if let Some(store) = self.gates.registry.store.as_ref().filter(|_| worth_sharing) {
            store.merge(&self.key, shared(report, now));
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        if self.open {
            let admission = self.admission;
            self.gates
                .update(&self.key, |gate| gate.abandoned(admission));
        }
    }
}

/// A place in a gate's queue; dropping it leaves the queue.
pub(crate) struct Place {
    gates: Gates,
    key: Key,
    id: u64,
    queued: bool,
}

impl Place {
    /// Whether the call may go: its pass, or when to ask again (`None`: when woken).
    pub(crate) fn poll(&mut self, now: Instant, waker: &Waker) -> Result<Pass, Option<Instant>> {
        let mut table = self.gates.lock();
        let (admission, wakes) = match table.gates.get_mut(&self.key) {
            Some(gate) => {
                let admission = gate.poll_waiter(self.id, now, waker);
                (admission, gate.take_wakes())
            }
            // The gate was forgotten: nothing holds the call back.
            None => (Ok(Admission::UNCOUNTED), Vec::new()),
        };
        drop(table);
        wakes.into_iter().for_each(Waker::wake);
        let admission = admission?;
        self.queued = false;
        Ok(self.gates.pass(&self.key, admission))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.queued {
            let id = self.id;
            self.gates.update(&self.key, |gate| gate.leave(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            gate.arrive(now, true).unwrap();
            table.gates.insert(Key::named(format!("busy{n}")), gate);
        }
        table
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
        spare.gates.insert(Key::named("closed"), closed_gate(now));
        assert!(spare.make_room(now, 4, true));
        assert_eq!(spare.gates.len(), 3);
        assert!(!spare.gates.contains_key(&Key::named("closed")));
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
        table.answered(&Key::named("quiet"), Admission::UNCOUNTED, quiet, now, 4);
        table.learn(&Key::named("told quiet"), quiet, now, 4);
        assert!(table.gates.is_empty());
        table.answered(
            &Key::named("refused"),
            Admission::UNCOUNTED,
            closure,
            now,
            4,
        );
        table.learn(&Key::named("told refused"), closure, now, 4);
        assert_eq!(table.gates.len(), 2);
    }
}
