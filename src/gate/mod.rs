//! The shared gates: one per key, held once for every call on that key.
//!
//! A 429 closes its key's gate until the server's time; every call on the key then waits on
//! that one gate instead of sleeping its own copy of the wait and stampeding back with the
//! others. A meter that said the quota is spent holds the calls that respect it until the
//! reset. When the gate reopens, a probe goes first, alone, and the others follow paced. Each
//! call is held only by what its own layer's settings say to respect (`terms`).
//!
//! Four rooms, and the files beside them:
//!
//! - `rules/`: the rules, pure (callers pass the time), generic over the clock (a process's
//!   `Instant`, the store's wall clock): `quota`, `closure`, `window`, and `learn/` (the law
//!   that learns how fast a server that publishes no quota lets a key go: the law and its
//!   controller in `mod.rs`, what is learned and how a round is judged in `known.rs`, the
//!   search that raises it in `search.rs`, a round's bookkeeping in `round.rs`).
//! - `key/`: one key's gate as a composition of those rules (`mod.rs`), with `reopening` (the
//!   probe and the paced release), `queue` (its waiters), `tokens` (token meters), `terms` (what
//!   a call's settings ask of the gate), `report` (what a response said) and `answer` (what the
//!   gate tells a call).
//! - `call/`: the only part the response future touches: `Call` (a call's handle on its gate),
//!   `pass` (what a call holds: a pass while its request is out, a place while it waits).
//! - `store/`: what processes share (`mod.rs`, the store interface), `ledger` (what a store
//!   keeps of a key, by the same rules; the Redis store keeps the very ledger), `memory` (a
//!   store in memory), `shared` (how the gates ask a store, within a deadline).
//! - `registry` (every key's gate, bounded), `routes` (which limit a request counts against),
//!   `time` (the two clocks), `snapshot` (what a caller reads).
//!
//! Where each rule of the design is written (once: the fleet's ledger, in memory or in Redis,
//! calls the same rules, and Redis's scripts only read and compare-and-set it):
//!
//! | rule | file |
//! |---|---|
//! | a closure is never brought forward | `rules/closure.rs` |
//! | readings of one meter fold to the most restrictive figure | `rules/quota.rs` |
//! | a higher figure counted after the lowest replaces it, reset and all | `rules/window.rs` |
//! | no more out than the quota says remain | `rules/quota.rs` |
//! | a window's reset restores its whole quota, spent or not | `rules/window.rs` |
//! | a reset named to the second: the window's last request goes early, alone | `rules/window.rs` |
//! | the pace of a server that publishes no quota is learned by one law | `rules/learn/mod.rs` |
//! | after a closure a probe goes first, alone; the backlog leaves paced | `key/reopening.rs` |
//! | calls leave in arrival order | `key/queue.rs` |
//! | a call waits only as far as its own terms allow | `key/mod.rs`, `key/terms.rs` |
//! | tokens declared by a call are spent once | `key/tokens.rs` |
//! | the server's clock is read by the tightest bound its responses gave | `time.rs` |
//! | memory stays bounded; a closed gate is not forgotten | `registry.rs` |
//! | a store that is down or slow never fails a call | `store/shared.rs` |

pub(crate) mod call;
mod key;
mod registry;
mod routes;
mod rules;
mod snapshot;
mod store;
mod time;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub(crate) use rules::learn::Judged;
// What the Redis store keeps of each key: the ledger a memory store keeps, as JSON.
#[cfg(feature = "redis")]
pub(crate) use store::Ledger;
// Its times are read on Redis's clock and this process's, never overflowing either.
#[cfg(feature = "redis")]
pub(crate) use time::Moment;

pub use snapshot::GateSnapshot;
pub use store::MemoryStore;
pub use store::{Reservation, Respects, StoreError, StoreFuture, Ticket, Window, WindowStore};

use crate::key::Key;
use crate::settings::Settings;
use crate::tokens::TokenCost;
use call::Call;
use registry::Registry;
use routes::Routes;

/// How many keys a registry remembers by default.
const CAPACITY: usize = 10_000;

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
    routes: Arc<Routes>,
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
            .field("shared", &self.registry.shared.is_some())
            .finish()
    }
}

impl Gates {
    /// An empty set of gates remembering at most 10,000 keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set of gates remembering at most `capacity` keys (at least 1), so memory stays
    /// bounded under any number of keys.
    ///
    /// A full registry makes room by forgetting gates that remember nothing; for a response
    /// that holds a new key's calls back (a 429's closure, a spent window), also a gate that
    /// holds none back (one that knows only a quota with room). A gate that holds calls back
    /// (a closure or spent window in force, waiters, requests out) is never forgotten before
    /// it passes, however long (up to the layer's horizon). When every remembered key holds
    /// calls back, a new key is not remembered: its calls go ungated, a call refused on it
    /// sleeps out its own wait (or, beyond the cap, has the response at once), never retrying
    /// early; only its other calls meet the limit unwarned. A full registry looks for room at
    /// most once a second for such keys, so a flood of them costs each a bounded share of a
    /// sweep.
    pub fn with_capacity(capacity: usize) -> Self {
        Gates {
            registry: Arc::new(Registry::new(capacity, None)),
            routes: Arc::default(),
        }
    }

    /// An empty set of gates that also shares what servers say with other processes through
    /// `store` (see [`WindowStore`]): a closure or quota one process learns holds the others,
    /// and together they reserve no more of a window than the server reported. A request
    /// waits at most 50 ms for the store's answer; past that it goes by its own process's gate
    /// alone. Where the store lets the call go, that time is part of sending, as the request's
    /// own is, and spends nothing of the call's [`max_wait`](crate::RateLimitLayer::max_wait);
    /// a hold runs from the question, and spends it from then.
    pub fn with_store(store: impl WindowStore) -> Self {
        Gates::with_store_deadline(store, store::shared::DEADLINE)
    }

    /// As [`with_store`](Gates::with_store), with calls waiting at most `deadline` for the
    /// store. While the store does not answer (an outage, a slow moment), each process's gates
    /// go by what they know alone; the store is tried again once a second, and rejoined when
    /// it answers, and nothing it missed can bring a gate forward.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower_retry_after::store::MemoryStore;
    /// use tower_retry_after::{Gates, RateLimitLayer};
    ///
    /// let gates = Gates::with_store_deadline(MemoryStore::new(), Duration::from_millis(20));
    /// let layer = RateLimitLayer::new().gates(gates);
    /// # let _ = layer;
    /// ```
    pub fn with_store_deadline(store: impl WindowStore, deadline: Duration) -> Self {
        let shared = store::shared::Shared::new(Arc::new(store), deadline);
        Gates {
            registry: Arc::new(Registry::new(CAPACITY, Some(shared))),
            routes: Arc::default(),
        }
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        self.registry.lock().gates.len()
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The state of `key`'s gate, aged to now; `None` if nothing is remembered about it.
    ///
    /// Where the server keeps several limits for the key and its answers named them (GitHub's
    /// resources, Discord's buckets), the calls are gated by each limit's own gate, and this
    /// is the binding one among them and the key's own: the one closed longest, else the one
    /// with the least remaining. [`limits`](Gates::limits) lists them all.
    ///
    /// ```
    /// use tower_retry_after::{Gates, Key};
    ///
    /// let gates = Gates::new();
    /// let token = Key::credential("Bearer ghp_0123");
    /// // … once calls have gone through a layer given these gates:
    /// if let Some(gate) = gates.snapshot(&token) {
    ///     println!("{:?} left, closed for {:?}", gate.remaining(), gate.closed_for());
    /// }
    /// ```
    pub fn snapshot(&self, key: &Key) -> Option<GateSnapshot> {
        self.limits(key)
            .into_iter()
            .map(|(_, snapshot)| snapshot)
            .max_by_key(|snapshot| {
                let remaining = snapshot.remaining().unwrap_or(u64::MAX);
                (snapshot.closed_for(), std::cmp::Reverse(remaining))
            })
    }

    /// Every gate remembered for `key`, aged to now: the key's own, then those of the limits
    /// its answers named (each a [`Key::within`] the key), each with its state.
    ///
    /// ```
    /// use tower_retry_after::{Gates, Key};
    ///
    /// let gates = Gates::new();
    /// for (limit, gate) in gates.limits(&Key::named("api")) {
    ///     println!("{limit}: {:?} left", gate.remaining());
    /// }
    /// assert!(gates.limits(&Key::named("api")).is_empty(), "nothing known yet");
    /// ```
    pub fn limits(&self, key: &Key) -> Vec<(Key, GateSnapshot)> {
        let now = Instant::now();
        let mut keys = vec![key.clone()];
        keys.extend(self.routes.limits(key));
        let table = self.registry.lock();
        keys.into_iter()
            .filter_map(|key| {
                let snapshot = GateSnapshot::of(table.gates.get(&key)?, now);
                Some((key, snapshot))
            })
            .collect()
    }

    /// Every key whose gate is remembered, the limits of keys among them.
    ///
    /// ```
    /// use tower_retry_after::Gates;
    ///
    /// let gates = Gates::new();
    /// for key in gates.keys() {
    ///     println!("{key}: {:?}", gates.snapshot(&key));
    /// }
    /// ```
    pub fn keys(&self) -> Vec<Key> {
        self.registry.lock().gates.keys().cloned().collect()
    }

    /// Waits until these gates have told their store everything their calls learned: each
    /// answer merged, each reservation no call used given back. Await it after a process's
    /// last call returns and before its runtime is dropped: what a call tells the store is
    /// told by a task on the runtime the call ran on, and a task dropped with its runtime
    /// leaves the fleet counting its request out (holding the others behind it for up to
    /// 10 s where the fleet's learned pace holds the key, a minute against a reported quota).
    ///
    /// Bounded: a store that does not answer is given up on after 5 s (10 s for a reservation
    /// given back). Calls still under way are not waited for, only what ended calls told.
    /// Without a store it resolves at once.
    ///
    /// ```
    /// use tower_retry_after::store::MemoryStore;
    /// use tower_retry_after::{Gates, RateLimitLayer};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let gates = Gates::with_store(MemoryStore::new());
    /// let layer = RateLimitLayer::new().gates(gates.clone());
    /// // … the process's calls through `layer`, until its last has returned …
    /// # let _ = layer;
    /// gates.flush().await;
    /// // Now the runtime may go: the fleet has heard every answer.
    /// # }
    /// ```
    pub async fn flush(&self) {
        if let Some(shared) = &self.registry.shared {
            shared.told().await;
        }
    }

    /// A call on `key`'s handle on its gate, through a layer with `settings`; the call spends
    /// `cost` of the key's token meters, if it declares one.
    pub(crate) fn call(&self, key: Key, cost: Option<TokenCost>, settings: &Settings) -> Call {
        Call::new(self.clone(), key, cost, settings)
    }

    /// A closure of `whole` holds the calls of every limit of it: those waiting at a limit's
    /// gate look again, so that one longer than they may wait turns them away now, not when
    /// what they waited for ends.
    pub(crate) fn closed_whole(&self, whole: &Key) {
        for limit in self.routes.limits(whole) {
            self.registry.update(&limit, key::Gate::wake_heads);
        }
    }
}
