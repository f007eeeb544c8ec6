//! [`RedisStore`]: the gates of every process that reaches one Redis, shared (feature `redis`).
//!
//! Each key is one hash and one sorted set of the requests out, changed only by two Lua
//! scripts (`reserve.lua`, `merge.lua`), so that reserving and closing are atomic across
//! processes. Both names carry one hash tag, the key's (see [`RedisStore::redis_key`]), so
//! that on a Redis Cluster they sit in one slot, as a script touching both must. The scripts
//! keep the rules of
//! `gate/store/ledger.rs` on Redis's own clock: a process sends durations from its now and is
//! answered in durations from its now, so no two processes' clocks are ever compared, and a
//! closure is never brought forward. Every hash expires a little after the last time it names.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use redis::Client;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::gate::{
    FAR_BELOW, LOOK_AGAIN, MOST_PATIENCE, OUT_AT_MOST, PATIENCE, Reservation, SAME_WINDOW,
    StoreError, StoreFuture, Ticket, Window, WindowStore,
};
use crate::key::Key;

/// How long a key's hash outlives the last time it names, by default.
const LINGER: Duration = Duration::from_millis(500);

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
                redis::Script::new(include_str!("reserve.lua")),
                redis::Script::new(include_str!("merge.lua")),
            ]),
        }
    }

    /// Keys under `prefix` instead, so that several applications share one Redis. It is
    /// written as given, before each key's hash tag: keep braces out of it, since on a cluster
    /// the first `{…}` of a name picks its slot (a tag in the prefix puts every limit in one
    /// slot; an empty `{}` splits a limit's two keys).
    ///
    /// # Example
    ///
    /// ```
    /// use tower_retry_after::store::RedisStore;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // The limit `Key::named("api")` is kept under `billing:{api}` and `billing:{api}#out`.
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

    /// The Redis key holding `key`'s window: the prefix, then the key in braces, its hash tag;
    /// its requests out are under the same name followed by `#out`. The tag is what Redis
    /// Cluster hashes to a slot, so a limit's two keys share one (a script touching both is
    /// refused otherwise) and different limits spread over the nodes. Braces and `%` in the
    /// key are written `%7B`, `%7D`, `%25`, and an empty key `%`: a brace would end the tag
    /// early or leave it empty (Redis then hashes the whole name), and the escape keeps two
    /// keys' names apart. Not public: the layout is the store's to change.
    fn redis_key(&self, key: &Key) -> String {
        tagged(&self.prefix, &key.to_string())
    }

    /// Runs `script` on `key`'s hash with `arguments`; its answer, as integers.
    fn invoke<const N: usize>(
        &self,
        script: Script,
        key: &Key,
        arguments: [i64; N],
    ) -> impl Future<Output = Result<Vec<i64>, StoreError>> + Send + 'static {
        let (scripts, redis_key) = (self.scripts.clone(), self.redis_key(key));
        let connection = self.connection.clone();
        async move {
            let out = format!("{redis_key}#out");
            let mut invocation = scripts[script as usize].key(redis_key);
            invocation.key(out);
            for argument in arguments {
                invocation.arg(argument);
            }
            let answer = match connection {
                Connection::Single(mut connection) => {
                    invocation.invoke_async(&mut connection).await
                }
                #[cfg(feature = "redis-cluster")]
                Connection::Cluster(mut connection) => {
                    invocation.invoke_async(&mut connection).await
                }
            };
            answer.map_err(StoreError::new)
        }
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
    Reserve,
    Merge,
}

impl WindowStore for RedisStore {
    fn reserve(&self, key: &Key, metered: bool, now: SystemTime) -> StoreFuture<Reservation> {
        let arguments = [
            i64::from(metered),
            millis(LOOK_AGAIN),
            millis(self.linger),
            millis(OUT_AT_MOST),
            i64::from(PATIENCE),
            i64::from(MOST_PATIENCE),
            clamp(FAR_BELOW),
        ];
        let answer = self.invoke(Script::Reserve, key, arguments);
        let asked = std::time::Instant::now();
        Box::pin(async move {
            let answer = answer.await?;
            // Durations from Redis's now, read from when the answer came: never early.
            reservation(&answer, now + asked.elapsed())
        })
    }

    fn merge(
        &self,
        key: &Key,
        window: Window,
        ticket: Option<Ticket>,
        now: SystemTime,
    ) -> StoreFuture<()> {
        let (remaining, reset_in) = window.quota.map_or((-1, -1), |(remaining, reset)| {
            (clamp(remaining), from(now, reset))
        });
        let arguments = [
            window.closed_until.map_or(-1, |until| from(now, until)),
            remaining,
            reset_in,
            window.limit.map_or(-1, clamp),
            ticket.map_or(-1, |ticket| clamp(ticket.get())),
            millis(self.linger),
            millis(SAME_WINDOW),
        ];
        let answer = self.invoke(Script::Merge, key, arguments);
        Box::pin(async move { answer.await.map(drop) })
    }
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

/// The reserve script's answer, received at `now` on the asking process's clock.
fn reservation(answer: &[i64], now: SystemTime) -> Result<Reservation, StoreError> {
    let at = |millis: i64| {
        u64::try_from(millis)
            .ok()
            // Rounded down by Redis to the millisecond: one more, never early.
            .map(|millis| now + Duration::from_millis(millis.saturating_add(1)))
    };
    match *answer {
        [0, ticket] => Ok(Reservation::Granted(Ticket::new(
            ticket.max(0).unsigned_abs(),
        ))),
        [1, until, closed, available, reset, limit] => Ok(Reservation::NotBefore {
            until: at(until).unwrap_or(now),
            window: Window {
                closed_until: at(closed),
                quota: u64::try_from(available).ok().zip(at(reset)),
                limit: u64::try_from(limit).ok(),
            },
        }),
        _ => Err(StoreError::new(format!(
            "unexpected answer from the reserve script: {answer:?}"
        ))),
    }
}

/// `at` as milliseconds from `now`, rounded up so that a time is never moved earlier; -1 for a
/// time already past.
fn from(now: SystemTime, at: SystemTime) -> i64 {
    match at.duration_since(now) {
        Ok(ahead) if !ahead.is_zero() => clamp(ahead.as_nanos().div_ceil(1_000_000)),
        _ => -1,
    }
}

fn millis(duration: Duration) -> i64 {
    clamp(duration.as_millis())
}

/// A count or duration as Redis's integer, saturating far beyond any real one.
fn clamp(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX / 2)
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
        assert_eq!(store.redis_key(&api), "billing:{https://api.test}");
        assert_eq!(store.redis_key(&Key::named("a}b")), "billing:{a%7Db}");
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

        /// Redis Cluster's own slot rule, as redis-rs routes by it: a script's two keys in one
        /// slot, whatever the key's name.
        #[cfg(feature = "redis-cluster")]
        #[test]
        fn a_limits_two_keys_hash_to_one_slot(name in "(%|\\{|\\}|a|#out){0,6}") {
            use redis::cluster_routing::Slot;
            let hash = tagged("tower-retry-after:", &name);
            let out = format!("{hash}#out");
            proptest::prop_assert_eq!(Slot::for_key(&hash), Slot::for_key(&out));
        }
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
    fn times_go_to_redis_rounded_up_and_past_ones_as_none() {
        let now = SystemTime::now();
        assert_eq!(from(now, now + Duration::from_micros(1)), 1);
        assert_eq!(from(now, now + Duration::from_millis(1500)), 1500);
        assert_eq!(from(now, now), -1);
        assert_eq!(from(now, now - Duration::from_secs(1)), -1);
        assert_eq!(
            from(now, now + Duration::from_secs(u64::MAX / 4)),
            i64::MAX / 2
        );
    }

    #[test]
    fn the_reserve_scripts_answers_read_never_early() {
        let now = SystemTime::now();
        assert_eq!(
            reservation(&[0, 7], now).unwrap(),
            Reservation::Granted(Ticket::new(7))
        );
        let held = reservation(&[1, 999, 999, -1, -1, 20], now).unwrap();
        let second = now + Duration::from_secs(1);
        assert_eq!(
            held,
            Reservation::NotBefore {
                until: second,
                window: Window {
                    closed_until: Some(second),
                    quota: None,
                    limit: Some(20),
                },
            }
        );
        let spent = reservation(&[1, 99, -1, 0, 99, -1], now).unwrap();
        let Reservation::NotBefore { window, .. } = spent else {
            panic!("held");
        };
        assert_eq!(window.quota, Some((0, now + Duration::from_millis(100))));
        assert!(reservation(&[2], now).is_err());
        assert!(reservation(&[], now).is_err());
    }
}
