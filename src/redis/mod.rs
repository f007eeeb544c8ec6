//! [`RedisStore`]: the gates of every process that reaches one Redis, shared (feature `redis`).
//!
//! Each key's ledger (`gate/store/ledger.rs`, the very one a [`MemoryStore`] keeps) is one
//! Redis hash: the ledger as JSON, and the version it is at. A process reads it with Redis's
//! own clock (`read.lua`), applies the ledger's rules to it in Rust at that time, and writes it
//! back only if no other process wrote it meanwhile (`write.lua`, a compare-and-set on the
//! version), reading it again if one did. So the rules, the learned law's among them, run
//! once, in Rust, for one process and a fleet alike, and the scripts keep no rule and no
//! constant of their own.
//!
//! A process has at most one write of a key under way: the changes its calls ask for meanwhile
//! wait, and the next write applies them all, in the order they were asked. So the writes that
//! race for a key are at most one a process, however many calls each has out.
//!
//! A process sends times as durations from its now and reads the answer's as durations from
//! when it came, so no two processes' clocks are ever compared, and a closure is never brought
//! forward. The hash carries the key's hash tag (see [`RedisStore::redis_key`]), and expires a
//! little after the last time its ledger names, or an hour after its last write where the
//! fleet learned how fast the key may go.
//!
//! [`MemoryStore`]: crate::store::MemoryStore

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use redis::Client;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::oneshot;

use crate::gate::{
    Ledger, Moment, Reservation, Respects, StoreError, StoreFuture, Ticket, Window, WindowStore,
};
use crate::key::Key;

/// How long a key's hash outlives the last time it names, by default.
const LINGER: Duration = Duration::from_millis(500);

/// How many times a process reads and writes a ledger other processes keep changing before it
/// gives up (its gates then go by their own state, as when Redis is down).
const ATTEMPTS: usize = 16;

/// How long a key's hash outlives its last write where the fleet learned how fast the key may
/// go: what it learned is kept for the next calls as a process's own gate keeps it.
const REMEMBER: Duration = Duration::from_secs(3600);

/// Further ahead than any time a server names, and near enough that any wall clock can add it.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A [`WindowStore`] on Redis, shared by every process that reaches it: a 429 one process meets
/// holds the others, and together they reserve no more of a window than the server reported.
///
/// It connects lazily and reconnects on its own; a Redis that is down or slow never fails a
/// call (the gates wait for it at most their deadline, see
/// [`Gates::with_store_deadline`](crate::Gates::with_store_deadline)). On a Redis Cluster
/// (feature `redis-cluster`), open it with `RedisStore::open_cluster`.
///
/// # Example
///
/// ```no_run
/// use tower_retry_after::store::RedisStore;
/// use tower_retry_after::{Gates, RateLimitLayer};
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisStore::open("redis://127.0.0.1:6379/")?.prefix("billing:");
/// let layer = RateLimitLayer::new().gates(Gates::with_store(store));
/// # let _ = layer;
/// # Ok(())
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
#[derive(Clone)]
pub struct RedisStore {
    connection: Connection,
    prefix: Arc<str>,
    linger: Duration,
    scripts: Arc<[redis::Script; 2]>,
    /// The changes waiting for the write under way of each key (by its Redis name).
    waiting: Arc<Mutex<HashMap<String, Vec<Change>>>>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("linger", &self.linger)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store on the Redis at `url` (`redis://host:port/db`), with keys under the prefix
    /// `tower-retry-after:`. Must be called within a tokio runtime; it connects on first use.
    ///
    /// # Errors
    ///
    /// If `url` is not a Redis URL.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        RedisStore::new(Client::open(url).map_err(StoreError::new)?)
    }

    /// A store on `client`'s Redis, with keys under the prefix `tower-retry-after:`.
    ///
    /// # Errors
    ///
    /// If the connection manager cannot be made (no tokio runtime).
    pub fn new(client: Client) -> Result<Self, StoreError> {
        // Short timeouts: the gates give up on an answer after their deadline anyway, and a
        // connection that hangs must not keep tasks waiting for long.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(Duration::from_secs(1)))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let connection =
            ConnectionManager::new_lazy_with_config(client, config).map_err(StoreError::new)?;
        Ok(RedisStore::on(Connection::Single(connection)))
    }

    /// A store on the Redis Cluster that `nodes` (`redis://host:port/`, one or more of its
    /// nodes) belong to, with keys under the prefix `tower-retry-after:`: it finds the others,
    /// follows the slots as they move, and reconnects on its own. Must be called within a tokio
    /// runtime; it connects in the background, so a cluster not up yet fails nothing. Feature
    /// `redis-cluster`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use tower_retry_after::store::RedisStore;
    /// use tower_retry_after::{Gates, RateLimitLayer};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let nodes = ["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"];
    /// let store = RedisStore::open_cluster(nodes)?.prefix("billing:");
    /// let layer = RateLimitLayer::new().gates(Gates::with_store(store));
    /// # let _ = layer;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// If a node is not a Redis URL, there is none, they disagree (on a password, TLS), or
    /// there is no tokio runtime.
    #[cfg(feature = "redis-cluster")]
    pub fn open_cluster<T: redis::IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
    ) -> Result<Self, StoreError> {
        // Retries are what follows a slot that moved (each redirection is one) and what
        // reconnects a node; the response timeout bounds a question with all its retries, a
        // second as on one Redis.
        let client = redis::cluster::ClusterClient::builder(nodes)
            .response_timeout(Duration::from_secs(1))
            .retries(3)
            .min_retry_wait(10)
            .max_retry_wait(1_000)
            .build()
            .map_err(StoreError::new)?;
        RedisStore::new_cluster(client)
    }

    /// A store on `client`'s Redis Cluster, with keys under the prefix `tower-retry-after:`,
    /// for a client built with settings of its own (TLS, credentials, retries). It connects in
    /// the background, with timeouts of a second per node for connecting and for each answer
    /// (the gates wait no longer than their deadline anyway). Feature `redis-cluster`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use redis::cluster::ClusterClient;
    /// use tower_retry_after::store::RedisStore;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = ClusterClient::builder(["redis://127.0.0.1:7000/"])
    ///     .password("hunter2")
    ///     .retries(2)
    ///     .build()?;
    /// let store = RedisStore::new_cluster(client)?;
    /// # let _ = store;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// If there is no tokio runtime to run the connection on.
    #[cfg(feature = "redis-cluster")]
    pub fn new_cluster(client: redis::cluster::ClusterClient) -> Result<Self, StoreError> {
        // The cluster connection's task is spawned on the current runtime, and spawning
        // outside one panics: an error is what the caller can handle.
        tokio::runtime::Handle::try_current().map_err(StoreError::new)?;
        let config = redis::cluster::ClusterConfig::new()
            .set_connection_timeout(Duration::from_secs(1))
            .set_response_timeout(Duration::from_secs(1));
        let connection = client.get_pending_async_connection_with_config(config);
        Ok(RedisStore::on(Connection::Cluster(connection)))
    }

    /// A store asking through `connection`, with the default prefix and linger.
    fn on(connection: Connection) -> Self {
        RedisStore {
            connection,
            prefix: Arc::from("tower-retry-after:"),
            linger: LINGER,
            scripts: Arc::new([
                redis::Script::new(include_str!("read.lua")),
                redis::Script::new(include_str!("write.lua")),
            ]),
            waiting: Arc::default(),
        }
    }

    /// Keys under `prefix` instead, so that several applications share one Redis. It is
    /// written as given, before each key's hash tag: keep braces out of it, since on a cluster
    /// the first `{…}` of a name picks its slot (a tag in the prefix puts every limit in one
    /// slot).
    ///
    /// # Example
    ///
    /// ```
    /// use tower_retry_after::store::RedisStore;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // The limit `Key::named("api")` is kept under `billing:{n:api}`.
    /// let store = RedisStore::open("redis://127.0.0.1:6379/")?.prefix("billing:");
    /// # let _ = store;
    /// # Ok(())
    /// # }
    /// ```
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = Arc::from(prefix);
        self
    }

    /// How long a key outlives the last time it names (500 ms by default): long enough for the
    /// next window's first calls to find what a spent window's reset restores.
    pub fn linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// The Redis key holding `key`'s ledger: the prefix, then the key's name (one per key,
    /// its kind first: `o:https://api.test`, `n:billing`) in braces, its hash tag, which is
    /// what Redis Cluster hashes to a slot, so different limits spread over the nodes. Braces
    /// and `%` in the name are written `%7B`, `%7D`, `%25`: a brace would end the tag early
    /// (Redis then hashes the whole name), and the escape keeps two names apart. Not public:
    /// the layout is the store's to change.
    fn redis_key(&self, key: &Key) -> String {
        tagged(&self.prefix, &key.store_name())
    }

    /// Asks for `change` to `key`'s ledger, applied by this process's next write of it.
    fn ask(&self, key: &Key, change: Change) {
        let redis_key = self.redis_key(key);
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.entry(redis_key) {
            // A write is under way: the next one applies this change with the others waiting.
            Entry::Occupied(mut changes) => changes.get_mut().push(change),
            Entry::Vacant(none) => {
                let redis_key = none.key().clone();
                none.insert(vec![change]);
                tokio::spawn(self.clone().write_while_asked(redis_key));
            }
        }
    }

    /// Writes the changes asked of `key`'s ledger, all those waiting at each write, until none
    /// is left.
    async fn write_while_asked(self, key: String) {
        loop {
            let changes = {
                let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
                let Some(changes) = waiting.get_mut(&key).filter(|changes| !changes.is_empty())
                else {
                    waiting.remove(&key);
                    return;
                };
                // A reservation nobody waits for any more (its asker gave up on the store) is
                // not made: no request goes on it.
                let mut changes = std::mem::take(changes);
                changes.retain(|change| !change.abandoned());
                changes
            };
            if changes.is_empty() {
                continue;
            }
            match self.apply(&key, &changes).await {
                Ok((applied, redis_now)) => {
                    let unclaimed: Vec<Ticket> = changes
                        .into_iter()
                        .zip(applied)
                        .filter_map(|(change, applied)| change.answer(applied, redis_now))
                        .collect();
                    // One made as its asker gave up is given back by the next write.
                    if !unclaimed.is_empty() {
                        let mut waiting =
                            self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
                        let changes = waiting.entry(key.clone()).or_default();
                        for ticket in unclaimed {
                            let answer = oneshot::channel().0;
                            changes.push(Change::GiveBack { ticket, answer });
                        }
                    }
                }
                Err(error) => changes.into_iter().for_each(|change| change.fail(&error)),
            }
        }
    }

    /// Applies `changes` to `key`'s ledger at Redis's now and writes it back, again if another
    /// process wrote it meanwhile: what each change made, and Redis's now they were made at.
    async fn apply(
        &self,
        key: &str,
        changes: &[Change],
    ) -> Result<(Vec<Option<Reservation>>, SystemTime), StoreError> {
        for _ in 0..ATTEMPTS {
            let (now, version, kept) = self.read(key).await?;
            let mut ledger = match kept.as_str() {
                "" => Ledger::default(),
                // Failing it would fail every call on the key, and mark the whole store out a
                // while (a 429 met on any other key then goes unshared); never written back,
                // it would stay so till it expired.
                json => serde_json::from_str(json).unwrap_or_else(|error| {
                    tracing::warn!(
                        key,
                        %error,
                        "shared store: a ledger this version cannot read is written anew (what it held is lost)"
                    );
                    Ledger::default()
                }),
            };
            let applied = changes.iter().map(|change| change.apply(&mut ledger, now));
            let applied = applied.collect();
            let said = ledger.said_until(now);
            let said =
                said.map(|until| until.duration_since(now).unwrap_or_default() + self.linger);
            let remembered = ledger.has_learned().then_some(REMEMBER);
            let keep = said.max(remembered).unwrap_or(self.linger);
            let json = serde_json::to_string(&ledger).map_err(StoreError::new)?;
            if self.write(key, version, json, keep).await? {
                return Ok((applied, now));
            }
        }
        Err(StoreError::new(
            "the ledger kept changing under every write",
        ))
    }

    /// `key`'s ledger as kept: Redis's now, its version, and the ledger as JSON.
    async fn read(&self, key: &str) -> Result<(SystemTime, u64, String), StoreError> {
        let invocation = self.scripts[Script::Read as usize].key(key);
        let (seconds, micros, version, ledger): (u64, u64, u64, String) =
            self.invoke(invocation).await?;
        let now =
            SystemTime::UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_micros(micros);
        Ok((now, version, ledger))
    }

    /// Writes `ledger` back as `key`'s, kept `keep` longer, if still at `version`.
    async fn write(
        &self,
        key: &str,
        version: u64,
        ledger: String,
        keep: Duration,
    ) -> Result<bool, StoreError> {
        let mut invocation = self.scripts[Script::Write as usize].key(key);
        invocation.arg(version).arg(ledger).arg(millis(keep).max(1));
        let written: i64 = self.invoke(invocation).await?;
        Ok(written == 1)
    }

    async fn invoke<T: redis::FromRedisValue>(
        &self,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let answer = match self.connection.clone() {
            Connection::Single(mut connection) => invocation.invoke_async(&mut connection).await,
            #[cfg(feature = "redis-cluster")]
            Connection::Cluster(mut connection) => invocation.invoke_async(&mut connection).await,
        };
        answer.map_err(StoreError::new)
    }
}

/// What a store asks through: one Redis, or the nodes of a cluster.
#[derive(Clone)]
enum Connection {
    Single(ConnectionManager),
    #[cfg(feature = "redis-cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
}

/// The two scripts, by their place in [`RedisStore`]'s `scripts`.
#[derive(Clone, Copy)]
enum Script {
    Read,
    Write,
}

/// A change a call asks of a key's ledger, and where its answer goes.
enum Change {
    /// Reserve a request for a call held by what it `respects`, asked at `asked` when this
    /// process's clock read `now`.
    Reserve {
        respects: Respects,
        now: SystemTime,
        asked: Instant,
        answer: oneshot::Sender<Result<Reservation, StoreError>>,
    },
    /// Fold in what a response said, as this process's clock read `now`.
    Merge {
        window: Window,
        ticket: Option<Ticket>,
        now: SystemTime,
        answer: oneshot::Sender<Result<(), StoreError>>,
    },
    /// Hand back a reservation no answer came for.
    GiveBack {
        ticket: Ticket,
        answer: oneshot::Sender<Result<(), StoreError>>,
    },
}

impl Change {
    /// Whether the change is a reservation nobody waits for any more.
    fn abandoned(&self) -> bool {
        matches!(self, Change::Reserve { answer, .. } if answer.is_closed())
    }

    /// Applies the change to `ledger` at Redis's `redis_now`: the reservation it made, if any.
    fn apply(&self, ledger: &mut Ledger, redis_now: SystemTime) -> Option<Reservation> {
        match *self {
            Change::Reserve { respects, .. } => Some(ledger.reserve(redis_now, respects)),
            Change::Merge {
                window,
                ticket,
                now,
                ..
            } => {
                // Times from this process's now, taken on Redis's from when it read the
                // ledger (later than this now): a time already past names nothing.
                let there = |at: SystemTime| {
                    at.duration_since(now)
                        .ok()
                        .filter(|ahead| !ahead.is_zero())
                        .map(|ahead| redis_now.later(ahead.min(FAR)))
                };
                let window = Window {
                    closed_until: window.closed_until.and_then(there),
                    quota: window
                        .quota
                        .and_then(|(left, reset)| Some((left, there(reset)?))),
                    ..window
                };
                ledger.merge(window, ticket, redis_now);
                None
            }
            Change::GiveBack { ticket, .. } => {
                ledger.give_back(ticket, redis_now);
                None
            }
        }
    }

    /// Answers the call: the change was written as `applied` made it, at Redis's `redis_now`.
    /// The ticket of a reservation made that nobody took, to give back.
    fn answer(self, applied: Option<Reservation>, redis_now: SystemTime) -> Option<Ticket> {
        // A call that stopped waiting (its gate's deadline passed) takes no answer.
        match (self, applied) {
            (Change::Merge { answer, .. } | Change::GiveBack { answer, .. }, _) => {
                drop(answer.send(Ok(())));
            }
            (
                Change::Reserve {
                    now, asked, answer, ..
                },
                Some(reservation),
            ) => {
                // Times from Redis's now, read from when the answer came: never early.
                let here = now.later(asked.elapsed());
                let here = |at: SystemTime| on_clock(at, redis_now, here);
                let sent = answer.send(Ok(match reservation {
                    Reservation::NotBefore { until, window } => Reservation::NotBefore {
                        until: here(until),
                        window: Window {
                            closed_until: window.closed_until.map(here),
                            quota: window.quota.map(|(left, reset)| (left, here(reset))),
                            ..window
                        },
                    },
                    granted => granted,
                }));
                if let Err(Ok(Reservation::Granted(ticket))) = sent {
                    return Some(ticket);
                }
            }
            (Change::Reserve { answer, .. }, None) => {
                drop(answer.send(Err(StoreError::new("no reservation was made"))));
            }
        }
        None
    }

    /// Answers the call with `error`: the change was not written.
    fn fail(self, error: &StoreError) {
        let error = error.clone();
        match self {
            Change::Reserve { answer, .. } => drop(answer.send(Err(error))),
            Change::Merge { answer, .. } | Change::GiveBack { answer, .. } => {
                drop(answer.send(Err(error)));
            }
        }
    }
}

impl WindowStore for RedisStore {
    fn reserve(&self, key: &Key, respects: Respects, now: SystemTime) -> StoreFuture<Reservation> {
        let (answer, answered) = oneshot::channel();
        let (store, key) = (self.clone(), key.clone());
        let asked = Instant::now();
        Box::pin(async move {
            store.ask(
                &key,
                Change::Reserve {
                    respects,
                    now,
                    asked,
                    answer,
                },
            );
            answered.await.map_err(StoreError::new)?
        })
    }

    fn merge(
        &self,
        key: &Key,
        window: Window,
        ticket: Option<Ticket>,
        now: SystemTime,
    ) -> StoreFuture<()> {
        let (answer, answered) = oneshot::channel();
        let (store, key) = (self.clone(), key.clone());
        Box::pin(async move {
            store.ask(
                &key,
                Change::Merge {
                    window,
                    ticket,
                    now,
                    answer,
                },
            );
            answered.await.map_err(StoreError::new)?
        })
    }

    /// Handed back at Redis's now, when it writes the ledger: the process's clock is not read.
    fn give_back(&self, key: &Key, ticket: Ticket, _now: SystemTime) -> StoreFuture<()> {
        let (answer, answered) = oneshot::channel();
        let (store, key) = (self.clone(), key.clone());
        Box::pin(async move {
            store.ask(&key, Change::GiveBack { ticket, answer });
            answered.await.map_err(StoreError::new)?
        })
    }
}

/// `at`, a time on a clock that read `then` when this one read `now`, on this one: rounded up
/// to the millisecond Redis counts in, never early, and no further than [`FAR`] ahead.
fn on_clock(at: SystemTime, then: SystemTime, now: SystemTime) -> SystemTime {
    let ahead = at.duration_since(then).unwrap_or_default().min(FAR);
    let millis = ahead.as_nanos().div_ceil(1_000_000);
    now.later(Duration::from_millis(
        u64::try_from(millis).unwrap_or(u64::MAX),
    ))
}

/// `prefix`, then `name` as a hash tag (see [`RedisStore::redis_key`]).
fn tagged(prefix: &str, name: &str) -> String {
    let mut tagged = String::with_capacity(prefix.len() + name.len() + 2);
    tagged.push_str(prefix);
    tagged.push('{');
    if name.is_empty() {
        tagged.push('%');
    }
    for character in name.chars() {
        match character {
            '{' => tagged.push_str("%7B"),
            '}' => tagged.push_str("%7D"),
            '%' => tagged.push_str("%25"),
            other => tagged.push(other),
        }
    }
    tagged.push('}');
    tagged
}

/// A duration as Redis's integer of milliseconds, saturating far beyond any real one.
fn millis(duration: Duration) -> i64 {
    duration.as_millis().try_into().unwrap_or(i64::MAX / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_keys_redis_name_is_the_prefix_then_the_key_as_its_tag() {
        let store = RedisStore::open("redis://127.0.0.1:6379/")
            .unwrap()
            .prefix("billing:");
        let api = Key::from_origin("https://api.test").unwrap();
        assert_eq!(store.redis_key(&api), "billing:{o:https://api.test}");
        assert_eq!(store.redis_key(&Key::named("a}b")), "billing:{n:a%7Db}");
        let printed_alike = Key::named("https://api.test");
        assert_ne!(store.redis_key(&printed_alike), store.redis_key(&api));
    }

    #[test]
    fn a_keys_name_is_its_hash_tag_with_the_braces_escaped() {
        assert_eq!(tagged("p:", "https://api.test"), "p:{https://api.test}");
        assert_eq!(tagged("p:", "a{b}c"), "p:{a%7Bb%7Dc}");
        assert_eq!(tagged("p:", "}"), "p:{%7D}");
        assert_eq!(tagged("p:", "100%"), "p:{100%25}");
        assert_eq!(tagged("p:", ""), "p:{%}");
        assert_eq!(tagged("", "api"), "{api}");
    }

    proptest::proptest! {
        /// No two keys share a name: each name gives its key back.
        #[test]
        fn a_keys_name_gives_the_key_back(name in "(%|7B|7D|25|\\{|\\}|a){0,6}") {
            let tagged = tagged("p:", &name);
            let tag = tagged.strip_prefix("p:{").and_then(|tag| tag.strip_suffix('}'));
            let tag = tag.filter(|tag| !tag.contains(['{', '}'])).unwrap();
            let back = match tag {
                "%" => String::new(),
                _ => tag.replace("%7B", "{").replace("%7D", "}").replace("%25", "%"),
            };
            proptest::prop_assert_eq!(back, name);
        }
    }

    /// One event of a run against a ledger, `after` milliseconds after the last.
    #[derive(Clone, Debug)]
    enum Event {
        Reserve {
            respects: Respects,
            after: u64,
        },
        /// The answer to the `nth` request out: accepted, refused until `closed` ms on (named
        /// or guessed), or with a meter of `left` to a reset `reset` ms on, read to the second
        /// or not.
        Answer {
            nth: usize,
            closed: Option<(u64, bool)>,
            meter: Option<(u64, u64, bool)>,
            after: u64,
        },
    }

    fn event() -> impl proptest::strategy::Strategy<Value = Event> {
        use proptest::prelude::*;
        let closed = proptest::option::weighted(0.3, (1..3_000u64, any::<bool>()));
        let meter = proptest::option::weighted(0.05, (0..5u64, 1..2_000u64, any::<bool>()));
        prop_oneof![
            (0..10u8, 0..400u64).prop_map(|(draw, after)| {
                let respects = match draw {
                    0 => Respects::CLOSURES,
                    1 => Respects::REPORTED,
                    _ => Respects::ALL,
                };
                Event::Reserve { respects, after }
            }),
            (0..8usize, closed, meter, 0..400u64).prop_map(|(nth, closed, meter, after)| {
                Event::Answer {
                    nth,
                    closed,
                    meter,
                    after,
                }
            }),
        ]
    }

    proptest::proptest! {
        /// What Redis keeps is the ledger itself: one read back from its JSON before every
        /// event decides every reservation (granted, held, until when, with what window) as
        /// the one kept in memory does, the learned law's decisions among them.
        #[test]
        fn a_ledger_read_back_from_its_json_decides_as_the_one_kept(
            events in proptest::collection::vec(event(), 1..120),
        ) {
            let mut now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
            let (mut kept, mut stored) = (Ledger::default(), String::new());
            let mut out = Vec::new();
            for event in events {
                let mut read: Ledger = match stored.as_str() {
                    "" => Ledger::default(),
                    json => serde_json::from_str(json).unwrap(),
                };
                match event {
                    Event::Reserve { respects, after } => {
                        now += Duration::from_millis(after);
                        let reservation = kept.reserve(now, respects);
                        proptest::prop_assert_eq!(read.reserve(now, respects), reservation);
                        if let Reservation::Granted(ticket) = reservation {
                            out.push(ticket);
                        }
                    }
                    Event::Answer { nth, closed, meter, after } => {
                        now += Duration::from_millis(after);
                        let ticket = (!out.is_empty()).then(|| out.remove(nth % out.len()));
                        let later = |millis| now + Duration::from_millis(millis);
                        let window = Window {
                            closed_until: closed.map(|(until, _)| later(until)),
                            quota: meter.map(|(left, reset, _)| (left, later(reset))),
                            limit: None,
                            guessed: closed.is_some_and(|(_, guessed)| guessed),
                            reset_second: meter
                                .filter(|(_, _, second)| *second)
                                .map(|(_, reset, _)| {
                                    let since = later(reset).duration_since(SystemTime::UNIX_EPOCH);
                                    since.unwrap().as_secs()
                                }),
                            spent_by_server: meter.is_some_and(|(left, _, _)| left == 0),
                        };
                        kept.merge(window, ticket, now);
                        read.merge(window, ticket, now);
                    }
                }
                // All but what a ledger does not keep (who set its closure: the fleet).
                proptest::prop_assert_eq!(read.window(now), kept.window(now));
                stored = serde_json::to_string(&read).unwrap();
                proptest::prop_assert_eq!(&stored, &serde_json::to_string(&kept).unwrap());
            }
        }
    }

    /// The JSON a ledger that learned from two acceptances and a refusal is kept as now.
    fn learned_ledger() -> String {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut ledger = Ledger::default();
        let tickets: Vec<_> = (0..3)
            .map(|_| match ledger.reserve(now, Respects::ALL) {
                Reservation::Granted(ticket) => ticket,
                held => panic!("a cold ledger holds nothing: {held:?}"),
            })
            .collect();
        let answered = now + Duration::from_millis(50);
        let refused = Window {
            closed_until: Some(answered + Duration::from_secs(1)),
            quota: None,
            limit: None,
            guessed: false,
            reset_second: None,
            spent_by_server: false,
        };
        for (nth, ticket) in tickets.into_iter().enumerate() {
            let window = if nth < 2 { Window::default() } else { refused };
            ledger.merge(window, Some(ticket), answered);
        }
        assert!(ledger.has_learned());
        serde_json::to_string(&ledger).unwrap()
    }

    /// `older`, a ledger's JSON as an earlier version kept it, reads as the ledger `kept` is.
    fn reads_as(older: &str, kept: &str) {
        let read: Ledger = serde_json::from_str(older).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), kept);
    }

    #[test]
    fn a_ledger_kept_before_the_law_told_its_debt_reads_as_owing_nothing() {
        let kept = learned_ledger();
        // What a ledger written before the law told whether the rate owes its last cut holds.
        let older = kept.replace("\"rate_owing\":false,", "");
        assert_ne!(older, kept, "the field is written: {kept}");
        reads_as(&older, &kept);
    }

    #[test]
    fn a_ledger_kept_before_the_law_kept_the_slow_starts_floor_apart_still_reads() {
        let kept = learned_ledger();
        let field = kept.find(",\"cold_floor\":").expect("the field is written");
        let end = field + kept[field..].find('}').expect("a duration") + 1;
        let older = format!("{}{}", &kept[..field], &kept[end..]);
        reads_as(&older, &kept);
    }

    #[test]
    fn a_ledger_kept_while_the_law_told_a_proven_rate_still_reads() {
        let kept = learned_ledger();
        // The law no longer keeps whether a rate was proven: a ledger that does still reads.
        let older = kept.replace("\"rate_owing\":", "\"rate_proven\":true,\"rate_owing\":");
        assert_ne!(older, kept, "the field it follows is written: {kept}");
        reads_as(&older, &kept);
    }

    #[test]
    fn a_ledger_kept_before_its_reservations_told_whether_their_call_learns_still_reads() {
        let mut ledger = Ledger::default();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        ledger.reserve(now, Respects::REPORTED);
        let kept = serde_json::to_string(&ledger).unwrap();
        let older = kept.replace(",\"learns\":false", "");
        assert_ne!(older, kept, "the field is written: {kept}");
        reads_as(&older, &kept);
    }

    #[test]
    fn a_ledger_kept_before_the_store_sent_a_last_request_early_or_probed_still_reads() {
        let kept = serde_json::to_string(&Ledger::default()).unwrap();
        let field = kept.find(",\"early\":").expect("the field is written");
        let end = field + kept[field..].find('}').expect("its state") + 1;
        let older = format!("{}{}", &kept[..field], &kept[end..]);
        let older = older
            .replace(",\"last_held\":null", "")
            .replace(",\"reopening\":false", "")
            .replace(",\"probe\":null", "");
        for field in ["early", "last_held", "reopening", "probe"] {
            let written = format!("\"{field}\":");
            assert!(!older.contains(&written), "{field} is written: {older}");
        }
        reads_as(&older, &kept);
        let mut ledger = Ledger::default();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        ledger.reserve(now, Respects::ALL);
        let kept = serde_json::to_string(&ledger).unwrap();
        let older = kept.replace(",\"last\":null", "");
        assert_ne!(older, kept, "a reservation's field is written: {kept}");
        reads_as(&older, &kept);
    }

    /// A ledger written before it kept whether its closure is a guess (or written back by a
    /// process that does not keep it) tells the closure as one the server named, as every
    /// closure was told then; one written since tells a guess as a guess.
    #[test]
    fn a_ledger_kept_before_it_told_guesses_tells_its_closure_as_named() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let closed_until = Some(now + Duration::from_secs(31));
        let kept = |guessed| {
            let mut ledger = Ledger::default();
            let window = Window {
                closed_until,
                guessed,
                ..Window::default()
            };
            ledger.merge(window, None, now);
            serde_json::to_string(&ledger).unwrap()
        };
        let read = |json: &str| serde_json::from_str::<Ledger>(json).unwrap().window(now);
        assert!(read(&kept(true)).guessed);
        assert!(!read(&kept(false)).guessed);
        let older = kept(true).replace(",\"guessed\":true", "");
        assert_ne!(older, kept(true), "the field is written");
        assert!(!read(&older).guessed, "{older}");
    }

    #[cfg(feature = "redis-cluster")]
    #[test]
    fn different_limits_spread_over_the_slots() {
        use redis::cluster_routing::Slot;
        let slot = |name| Slot::for_key(tagged("tower-retry-after:", name));
        assert_ne!(slot("https://a.test"), slot("https://b.test"));
        assert_eq!(slot("https://a.test"), Slot::for_key("https://a.test"));
    }

    #[test]
    fn redis_times_are_read_on_this_clock_rounded_up_never_early() {
        let redis_now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let here = SystemTime::UNIX_EPOCH + Duration::from_secs(5);
        let on_here = |ahead: Duration| on_clock(redis_now + ahead, redis_now, here);
        assert_eq!(
            on_here(Duration::from_micros(1)),
            here + Duration::from_millis(1)
        );
        assert_eq!(
            on_here(Duration::from_millis(1500)),
            here + Duration::from_millis(1500)
        );
        assert_eq!(on_here(Duration::ZERO), here);
        assert_eq!(
            on_clock(redis_now - Duration::from_secs(1), redis_now, here),
            here,
            "a time already past on Redis is now here"
        );
        assert_eq!(
            on_here(FAR * 2),
            here + FAR,
            "a time beyond any real one saturates"
        );
    }
}
