//! [`RedisStore`]: the gates of every process that reaches one Redis, shared (feature `redis`).
//!
//! Each key is one hash and one sorted set of the requests out, changed only by two Lua
//! scripts (`reserve.lua`, `merge.lua`), so that reserving and closing are atomic across
//! processes. The scripts keep the rules of
//! `gate/ledger.rs` on Redis's own clock: a process sends durations from its now and is
//! answered in durations from its now, so no two processes' clocks are ever compared, and a
//! closure is never brought forward. Every hash expires a little after the last time it names.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use redis::Client;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::gate::{
    LOOK_AGAIN, OUT_AT_MOST, Reservation, StoreError, StoreFuture, Ticket, Window, WindowStore,
};
use crate::key::Key;

/// How long a key's hash outlives the last time it names, by default.
const LINGER: Duration = Duration::from_millis(500);

/// A [`WindowStore`] on Redis, shared by every process that reaches it: a 429 one process meets
/// holds the others, and together they reserve no more of a window than the server reported.
///
/// It connects lazily and reconnects on its own; a Redis that is down or slow never fails a
/// call (the gates wait for it at most their deadline, see
/// [`Gates::with_store_deadline`](crate::Gates::with_store_deadline)).
///
/// # Example
///
/// ```no_run
/// use tower_retry_after::{Gates, RateLimitLayer, RedisStore};
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
    connection: ConnectionManager,
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
        Ok(RedisStore {
            connection,
            prefix: Arc::from("tower-retry-after:"),
            linger: LINGER,
            scripts: Arc::new([
                redis::Script::new(include_str!("reserve.lua")),
                redis::Script::new(include_str!("merge.lua")),
            ]),
        })
    }

    /// Keys under `prefix` instead, so that several applications share one Redis.
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

    /// The Redis key holding `key`'s window; its requests out are under the same name followed
    /// by `#out`.
    pub fn redis_key(&self, key: &Key) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Runs `script` on `key`'s hash with `arguments`; its answer, as integers.
    fn invoke<const N: usize>(
        &self,
        script: Script,
        key: &Key,
        arguments: [i64; N],
    ) -> impl Future<Output = Result<Vec<i64>, StoreError>> + Send + 'static {
        let (scripts, redis_key) = (self.scripts.clone(), self.redis_key(key));
        let mut connection = self.connection.clone();
        async move {
            let out = format!("{redis_key}#out");
            let mut invocation = scripts[script as usize].key(redis_key);
            invocation.key(out);
            for argument in arguments {
                invocation.arg(argument);
            }
            invocation
                .invoke_async(&mut connection)
                .await
                .map_err(StoreError::new)
        }
    }
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
        ];
        let answer = self.invoke(Script::Merge, key, arguments);
        Box::pin(async move { answer.await.map(drop) })
    }
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
