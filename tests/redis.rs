//! The Redis store against a real Redis at `REDIS_URL`, and (feature `redis-cluster`) against
//! a Redis Cluster at `REDIS_CLUSTER_URLS`, every node's URL, comma-separated: `.ci/run`
//! starts both. Each test runs once on each (`single::…`, `cluster::…`), but for those through
//! a loopback proxy (one Redis only: a cluster hands out its nodes' own addresses) and the one
//! on a cluster that is not there. Where its variable is unset a test skips with one line, and
//! fails when `CI` is set (a test that skips in CI has tested nothing). Each store is its own connection, as each process has; each test keeps its keys
//! under its own prefix. Real clock: Redis keeps its own.

#[path = "support/limiter.rs"]
mod limiter;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use http::{Request, Response};
use limiter::{Headers, Limiter, Model};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tower::{BoxError, Layer, ServiceExt};
use tower_retry_after::store::{RedisStore, Reservation, Respects, Window, WindowStore};
use tower_retry_after::{Gates, Key, RateLimitLayer};

const DEADLINE: Duration = Duration::from_millis(50);

/// Each test named, as `single::test` on the Redis at `REDIS_URL` and, with the feature
/// `redis-cluster`, as `cluster::test` on the cluster at `REDIS_CLUSTER_URLS`.
macro_rules! on_each_redis {
    ($($(#[$runtime:meta])* $test:ident),* $(,)?) => {
        mod single {
            $(
                $(#[$runtime])*
                async fn $test() {
                    if let Some(target) = super::Target::single(stringify!($test)) {
                        super::$test(&target).await;
                    }
                }
            )*
        }
        #[cfg(feature = "redis-cluster")]
        mod cluster {
            $(
                $(#[$runtime])*
                async fn $test() {
                    if let Some(target) = super::Target::cluster(stringify!($test)) {
                        super::$test(&target).await;
                    }
                }
            )*
        }
    };
}

on_each_redis! {
    #[tokio::test] a_closure_one_process_merged_holds_another_and_is_never_brought_forward,
    #[tokio::test] processes_together_reserve_no_more_than_the_server_reported,
    #[tokio::test] the_requests_still_out_count_as_spent_whatever_order_they_were_reserved_in,
    #[tokio::test] without_meters_the_fleet_learns_the_limit_its_refusals_show_and_keeps_to_it,
    #[tokio::test] a_spent_window_with_no_whole_quota_given_restores_nothing,
    #[tokio::test] an_answer_to_a_request_sent_without_a_reservation_takes_none_off_those_out,
    #[tokio::test] every_key_expires_on_its_own_under_its_prefix,
    #[tokio::test] the_redis_scripts_answer_as_the_in_memory_ledger_does,
    #[tokio::test] a_limits_keys_are_touched_together_whatever_its_name,
    #[tokio::test] a_store_whose_connections_are_killed_answers_again,
    #[tokio::test] a_reservation_whose_asker_gave_up_is_not_kept_as_a_request_out,
    #[tokio::test] times_at_the_clocks_end_are_answered_and_the_key_answers_after_them,
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_fleet_on_redis_spends_no_more_than_the_meters_report,
}

/// Where a test runs: one Redis, or the nodes of a cluster.
enum Target {
    Single(String),
    #[cfg(feature = "redis-cluster")]
    Cluster(Vec<String>),
}

impl Target {
    /// The Redis at `REDIS_URL`.
    fn single(test: &str) -> Option<Target> {
        Target::variable("REDIS_URL", test).map(Target::Single)
    }

    /// The cluster whose nodes are at `REDIS_CLUSTER_URLS`.
    #[cfg(feature = "redis-cluster")]
    fn cluster(test: &str) -> Option<Target> {
        let urls = Target::variable("REDIS_CLUSTER_URLS", test)?;
        Some(Target::Cluster(
            urls.split(',').map(str::to_owned).collect(),
        ))
    }

    /// The environment variable `variable`, or `None` (and a line saying so) where it is
    /// unset; under CI, a failure instead.
    fn variable(variable: &str, test: &str) -> Option<String> {
        let value = std::env::var(variable).ok();
        if value.is_none() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: {variable} is not set, and under CI a test must not skip (.ci/run starts \
                 a Redis and a cluster and sets REDIS_URL and REDIS_CLUSTER_URLS)"
            );
            eprintln!("{test}: skipped, {variable} is not set (.ci/run starts one and sets it)");
        }
        value
    }

    /// Every node's URL, with `user`'s credentials in it if given.
    fn urls(&self, user: Option<(&str, &str)>) -> Vec<String> {
        let urls = match self {
            Target::Single(url) => std::slice::from_ref(url),
            #[cfg(feature = "redis-cluster")]
            Target::Cluster(urls) => urls.as_slice(),
        };
        let credentials = user.map_or(String::new(), |(name, password)| {
            format!("{name}:{password}@")
        });
        urls.iter()
            .map(|url| url.replacen("redis://", &format!("redis://{credentials}"), 1))
            .collect()
    }

    /// A store of its own connection, as `user` if given, keys under `prefix`.
    fn store_as(&self, user: Option<(&str, &str)>, prefix: &str) -> RedisStore {
        let urls = self.urls(user);
        let store = match self {
            Target::Single(_) => RedisStore::open(&urls[0]),
            #[cfg(feature = "redis-cluster")]
            Target::Cluster(_) => RedisStore::open_cluster(urls),
        };
        store
            .unwrap()
            .prefix(&format!("test:{}:{prefix}:", std::process::id()))
    }

    /// A store of its own connection, keys under `prefix`.
    fn store(&self, prefix: &str) -> RedisStore {
        self.store_as(None, prefix)
    }

    /// `command`'s answer from each node.
    async fn on_each_node<T: redis::FromRedisValue>(
        &self,
        command: &redis::Cmd,
    ) -> Vec<redis::RedisResult<T>> {
        let mut answers = Vec::new();
        for url in self.urls(None) {
            let client = redis::Client::open(url).unwrap();
            let mut connection = client.get_multiplexed_async_connection().await.unwrap();
            answers.push(command.query_async(&mut connection).await);
        }
        answers
    }

    /// The names of this process's test keys that match `pattern`, on every node.
    async fn keys(&self, pattern: &str) -> Vec<String> {
        let mut command = redis::cmd("KEYS");
        command.arg(format!("test:{}:{pattern}", std::process::id()));
        let found: Vec<Vec<String>> = self
            .on_each_node(&command)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        found.concat()
    }

    /// `key`'s time to live in milliseconds, from the node that holds it (the others of a
    /// cluster answer that it moved).
    async fn pttl(&self, key: &str) -> i64 {
        let mut command = redis::cmd("PTTL");
        command.arg(key);
        let ttls = self.on_each_node(&command).await.into_iter();
        let ttls: Vec<i64> = ttls.filter_map(Result::ok).collect();
        assert_eq!(ttls.len(), 1, "{key} is on one node");
        ttls[0]
    }
}

async fn a_closure_one_process_merged_holds_another_and_is_never_brought_forward(target: &Target) {
    let (first, second) = (target.store("closure"), target.store("closure"));
    let key = Key::named("api");
    let now = SystemTime::now();
    let closed = |seconds| Window {
        closed_until: Some(now + Duration::from_secs(seconds)),
        ..Window::default()
    };
    first.merge(&key, closed(20), None, now).await.unwrap();
    first.merge(&key, closed(2), None, now).await.unwrap();
    let asked = SystemTime::now();
    let Reservation::NotBefore { until, window } = second
        .reserve(&key, Respects::CLOSURES, asked)
        .await
        .unwrap()
    else {
        panic!("the second process was let through a closure");
    };
    let closure = now + Duration::from_secs(20);
    assert!(
        until >= closure,
        "early by {:?}",
        closure.duration_since(until)
    );
    assert!(until <= closure + Duration::from_millis(50), "late");
    assert_eq!(window.closed_until, Some(until));
}

/// A reservation whose asker stopped waiting for it (the gates give up on the store after a
/// deadline, dropping the question) is not kept as a request out: no request went on it, and
/// kept, it would hold the fleet's quota until it lapsed.
async fn a_reservation_whose_asker_gave_up_is_not_kept_as_a_request_out(target: &Target) {
    let store = target.store("given-up");
    let key = Key::named("api");
    let now = SystemTime::now();
    let one_left = Window {
        quota: Some((1, now + Duration::from_secs(30))),
        ..Window::default()
    };
    store.merge(&key, one_left, None, now).await.unwrap();
    // Asked, and given up on before its answer came.
    let mut asked = store.reserve(&key, Respects::ALL, SystemTime::now());
    std::future::poll_fn(|cx| {
        assert!(asked.as_mut().poll(cx).is_pending(), "answered at once");
        std::task::Poll::Ready(())
    })
    .await;
    drop(asked);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let next = store
        .reserve(&key, Respects::ALL, SystemTime::now())
        .await
        .unwrap();
    assert!(
        matches!(next, Reservation::Granted(_)),
        "the one left is held by a reservation nobody holds: {next:?}"
    );
}

/// Times at the end of what a wall clock holds, through the public trait (a caller's clock
/// is never a reason to panic): each is answered, and the key answers after them. (A panic in
/// the task writing a key's ledger left every later call on it waiting out its deadline.)
async fn times_at_the_clocks_end_are_answered_and_the_key_answers_after_them(target: &Target) {
    let store = target.store("clocks-end");
    let key = Key::named("api");
    let end = SystemTime::UNIX_EPOCH + Duration::new(i64::MAX as u64, 999_999_999);
    let closed = Window {
        closed_until: Some(end),
        ..Window::default()
    };
    let ago = SystemTime::now() - Duration::from_secs(1);
    store.merge(&key, closed, None, ago).await.unwrap();
    let held = store.reserve(&key, Respects::ALL, end).await.unwrap();
    assert!(matches!(held, Reservation::NotBefore { .. }), "{held:?}");
    let asked = store.reserve(&key, Respects::ALL, SystemTime::now());
    let held = tokio::time::timeout(Duration::from_secs(3), asked).await;
    assert!(
        matches!(held, Ok(Ok(Reservation::NotBefore { .. }))),
        "the key answers, still closed: {held:?}"
    );
}

async fn processes_together_reserve_no_more_than_the_server_reported(target: &Target) {
    let key = Key::named("api");
    let first = target.store("reserve");
    let now = SystemTime::now();
    let Reservation::Granted(ticket) = first.reserve(&key, Respects::ALL, now).await.unwrap()
    else {
        panic!("held on a new key");
    };
    let quota = Window {
        quota: Some((5, now + Duration::from_secs(10))),
        limit: Some(6),
        ..Window::default()
    };
    first.merge(&key, quota, Some(ticket), now).await.unwrap();
    let processes: Vec<_> = (0..4).map(|_| target.store("reserve")).collect();
    let mut asked = Vec::new();
    for process in &processes {
        for _ in 0..10 {
            asked.push(process.reserve(&key, Respects::ALL, SystemTime::now()));
        }
    }
    let mut granted = 0;
    for reservation in futures_util::future::join_all(asked).await {
        match reservation.unwrap() {
            Reservation::Granted(_) => granted += 1,
            Reservation::NotBefore { until, window } => {
                assert!(until >= now + Duration::from_secs(10));
                assert_eq!(window.quota.map(|(left, _)| left), Some(0));
            }
        }
    }
    assert_eq!(granted, 5);
    let unmetered = processes[0].reserve(&key, Respects::CLOSURES, SystemTime::now());
    assert!(
        matches!(unmetered.await.unwrap(), Reservation::Granted(_)),
        "a call that does not respect the quota is held only by a closure"
    );
}

async fn the_requests_still_out_count_as_spent_whatever_order_they_were_reserved_in(
    target: &Target,
) {
    let key = Key::named("api");
    let store = target.store("out");
    let now = SystemTime::now();
    let mut tickets = Vec::new();
    for _ in 0..5 {
        match store.reserve(&key, Respects::ALL, now).await.unwrap() {
            Reservation::Granted(ticket) => tickets.push(ticket),
            held => panic!("held: {held:?}"),
        }
    }
    // The last request reserved arrived first: 5 left after it, four others still out.
    let quota = |left| Window {
        quota: Some((left, now + Duration::from_secs(10))),
        ..Window::default()
    };
    store
        .merge(&key, quota(5), Some(tickets[4]), now)
        .await
        .unwrap();
    let reserve = || store.reserve(&key, Respects::ALL, now);
    assert!(matches!(reserve().await.unwrap(), Reservation::Granted(_)));
    assert!(matches!(
        reserve().await.unwrap(),
        Reservation::NotBefore { .. }
    ));
    // Their answers come: the lowest count stands, less the one request still out.
    for ticket in &tickets[..4] {
        store
            .merge(&key, quota(4), Some(*ticket), now)
            .await
            .unwrap();
    }
    for _ in 0..3 {
        assert!(matches!(reserve().await.unwrap(), Reservation::Granted(_)));
    }
    assert!(matches!(
        reserve().await.unwrap(),
        Reservation::NotBefore { .. }
    ));
}

async fn without_meters_the_fleet_learns_the_limit_its_refusals_show_and_keeps_to_it(
    target: &Target,
) {
    let key = Key::named("api");
    let (first, second) = (target.store("learned"), target.store("learned"));
    let now = SystemTime::now();
    let mut tickets = Vec::new();
    for process in [&first, &second, &first, &second, &first, &second] {
        match process.reserve(&key, Respects::ALL, now).await.unwrap() {
            Reservation::Granted(ticket) => tickets.push(ticket),
            held => panic!("held: {held:?}"),
        }
    }
    // Five were accepted, each heard by the process that sent it; the sixth was refused until
    // 200 ms on.
    for (process, ticket) in [&first, &second].into_iter().cycle().zip(&tickets[..5]) {
        let accepted = Window::default();
        process
            .merge(&key, accepted, Some(*ticket), now)
            .await
            .unwrap();
    }
    let reset = now + Duration::from_millis(200);
    let refused = Window {
        closed_until: Some(reset),
        ..Window::default()
    };
    second
        .merge(&key, refused, Some(tickets[5]), now)
        .await
        .unwrap();
    let Reservation::NotBefore { until, .. } = first
        .reserve(&key, Respects::ALL, SystemTime::now())
        .await
        .unwrap()
    else {
        panic!("let through a closure");
    };
    assert!(until >= reset, "early by {:?}", reset.duration_since(until));
    tokio::time::sleep(until.duration_since(SystemTime::now()).unwrap_or_default()).await;
    // At the reset the five the window accepted go, from either process, and no more.
    let (granted, held) = reserve_in_turn([&first, &second], &key).await;
    assert_eq!(granted, 5, "the learned limit, across both processes");
    let (until, _) = held.expect("the sixth is held");
    assert!(until > SystemTime::now(), "held for a while");
}

/// Eight reservations of `key` made in turn by `processes`, each on the clock as it reads
/// then: how many were granted, and the last hold, if any.
async fn reserve_in_turn(
    processes: [&RedisStore; 2],
    key: &Key,
) -> (usize, Option<(SystemTime, Window)>) {
    let mut granted = 0;
    let mut held = None;
    for process in processes.into_iter().cycle().take(8) {
        match process
            .reserve(key, Respects::ALL, SystemTime::now())
            .await
            .unwrap()
        {
            Reservation::Granted(_) => granted += 1,
            Reservation::NotBefore { until, window } => held = Some((until, window)),
        }
    }
    (granted, held)
}

async fn a_spent_window_with_no_whole_quota_given_restores_nothing(target: &Target) {
    let store = target.store("unrestored");
    let key = Key::named("api");
    let now = SystemTime::now();
    let spent = Window {
        quota: Some((0, now + Duration::from_millis(50))),
        ..Window::default()
    };
    store.merge(&key, spent, None, now).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Nothing to restore: the calls go, and the server's answers say what the window holds.
    for _ in 0..3 {
        let granted = store
            .reserve(&key, Respects::ALL, SystemTime::now())
            .await
            .unwrap();
        assert!(matches!(granted, Reservation::Granted(_)), "{granted:?}");
    }
}

async fn an_answer_to_a_request_sent_without_a_reservation_takes_none_off_those_out(
    target: &Target,
) {
    let store = target.store("unreserved");
    let key = Key::named("api");
    let now = SystemTime::now();
    let reserve = || store.reserve(&key, Respects::ALL, now);
    assert!(matches!(reserve().await.unwrap(), Reservation::Granted(_)));
    // Another request went while the store was out; its answer quotes no ticket.
    let two_left = Window {
        quota: Some((2, now + Duration::from_secs(10))),
        ..Window::default()
    };
    store.merge(&key, two_left, None, now).await.unwrap();
    assert!(matches!(reserve().await.unwrap(), Reservation::Granted(_)));
    assert!(
        matches!(reserve().await.unwrap(), Reservation::NotBefore { .. }),
        "the first reservation is still out"
    );
}

async fn every_key_expires_on_its_own_under_its_prefix(target: &Target) {
    let store = target.store("expiry").linger(Duration::from_millis(100));
    let now = SystemTime::now();
    let closed = Window {
        closed_until: Some(now + Duration::from_millis(300)),
        ..Window::default()
    };
    store
        .merge(&Key::named("closed"), closed, None, now)
        .await
        .unwrap();
    let Reservation::Granted(ticket) = store
        .reserve(&Key::named("new"), Respects::ALL, now)
        .await
        .unwrap()
    else {
        panic!("held on a new key");
    };
    let mut found = target.keys("expiry:*").await;
    found.sort();
    let prefix = format!("test:{}:expiry:", std::process::id());
    assert_eq!(
        found,
        [
            format!("{prefix}{{n:closed}}"),
            format!("{prefix}{{n:new}}")
        ]
    );
    let closed_ttl = target.pttl(&found[0]).await;
    assert!((1..=400).contains(&closed_ttl), "{closed_ttl}");
    // The request out counts for at most a minute, and goes with its answer.
    let out_ttl = target.pttl(&found[1]).await;
    assert!((59_000..=60_100).contains(&out_ttl), "{out_ttl}");
    let answered = Window::default();
    store
        .merge(&Key::named("new"), answered, Some(ticket), now)
        .await
        .unwrap();
    let new_ttl = target.pttl(&found[1]).await;
    assert!((1..=100).contains(&new_ttl), "{new_ttl}");
}

/// The same seeded run of reservations and answers through the in-memory ledger and through
/// Redis's scripts: every answer the same (the scripts keep the ledger's rules).
async fn the_redis_scripts_answer_as_the_in_memory_ledger_does(target: &Target) {
    let memory = tower_retry_after::store::MemoryStore::new();
    let redis = target.store("parity");
    let (long, short_lived) = (Key::named("api"), Key::named("api-short"));
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut draw = |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    let mut tickets = Vec::new();
    for step in 0..400 {
        // Midway, on a key of its own, windows of tens of milliseconds, each waited out
        // before the next step: their resets pass on both clocks, with up to two left and
        // what is out deciding whether the reset restores the whole quota.
        let short = (150..350).contains(&step);
        let key = if short { &short_lived } else { &long };
        if step == 150 || step == 350 {
            tickets.clear();
        }
        // Each step on the clock as it reads then: Redis keeps its own, so the in-memory
        // ledger must see time pass as Redis does.
        let now = SystemTime::now();
        let stores: [&dyn WindowStore; 2] = [&memory, &redis];
        match draw(10) {
            // Reservations and answers about as often, so that few are out and each quota
            // figure shows in what the next reservations are granted.
            0..=3 => {
                let respects = match draw(4) {
                    0 => Respects::CLOSURES,
                    1 => Respects::REPORTED,
                    _ => Respects::ALL,
                };
                let mut answers = Vec::new();
                for store in stores {
                    answers.push(store.reserve(key, respects, now).await.unwrap());
                }
                match (&answers[0], &answers[1]) {
                    // (Numbered each on its own clock: the two tickets of one request.)
                    (Reservation::Granted(a), Reservation::Granted(b)) => tickets.push([*a, *b]),
                    (
                        Reservation::NotBefore {
                            until: a,
                            window: x,
                        },
                        Reservation::NotBefore {
                            until: b,
                            window: y,
                        },
                    ) => {
                        let apart = a.duration_since(*b).or_else(|_| b.duration_since(*a));
                        assert!(apart.unwrap() < Duration::from_millis(100), "step {step}");
                        assert_eq!(
                            x.quota.map(|(left, _)| left),
                            y.quota.map(|(left, _)| left),
                            "step {step}"
                        );
                    }
                    (memory, redis) => panic!("step {step}: {memory:?} against {redis:?}"),
                }
            }
            kind => {
                let ticket = match draw(3) {
                    0 => None,
                    _ if tickets.is_empty() => None,
                    _ => Some(tickets.swap_remove(draw(tickets.len() as u64) as usize)),
                };
                // Resets up to 0.8 s apart, one window (the scripts are passed the span that
                // tells windows apart), or 5 s apart, two: far enough from the span, with the
                // run's own time added, that the stores' clocks never disagree on it.
                let reset = now + Duration::from_millis(10_000 + draw(3) * 400 + draw(2) * 5_000);
                let window = match kind {
                    4..=6 if short => Window {
                        quota: Some((draw(3), now + Duration::from_millis(30 + draw(3) * 5))),
                        // Small enough that the steps after a reset spend what it restored.
                        limit: Some(2),
                        ..Window::default()
                    },
                    4..=6 => Window {
                        // Seldom spent: a spent window holds until its reset, past the run.
                        quota: Some((u64::from(draw(40) > 0) * (1 + draw(5)), reset)),
                        limit: Some(30),
                        ..Window::default()
                    },
                    7 | 8 => Window::default(),
                    _ if step > 350 => Window {
                        closed_until: Some(now + Duration::from_secs(20)),
                        ..Window::default()
                    },
                    _ => Window::default(),
                };
                for (store, nth) in stores.into_iter().zip(0..) {
                    let ticket = ticket.map(|tickets: [_; 2]| tickets[nth]);
                    store.merge(key, window, ticket, now).await.unwrap();
                }
                if short && window.quota.is_some() {
                    tokio::time::sleep(Duration::from_millis(60)).await;
                }
            }
        }
    }
}

/// Both scripts touch a limit's hash and its requests out together, which a cluster refuses
/// (`CROSSSLOT`) unless the two share a slot: so each name, however it is written, must make
/// one hash tag of both.
async fn a_limits_keys_are_touched_together_whatever_its_name(target: &Target) {
    let store = target.store("names");
    let origin = Key::from_origin("https://api.test").unwrap();
    let mut keys: Vec<Key> = ["", "}", "{", "{}", "a{b}c", "}{", "100%", "%7D"]
        .into_iter()
        .map(Key::named)
        .collect();
    keys.extend([origin.within("search"), origin, Key::credential("Bearer t")]);
    for key in &keys {
        let now = SystemTime::now();
        let granted = store.reserve(key, Respects::ALL, now).await;
        let Ok(Reservation::Granted(ticket)) = granted else {
            panic!("{key}: {granted:?}");
        };
        let spent = Window {
            quota: Some((0, now + Duration::from_secs(10))),
            ..Window::default()
        };
        let merged = store.merge(key, spent, Some(ticket), now).await;
        assert!(merged.is_ok(), "{key}: {merged:?}");
        let held = store.reserve(key, Respects::ALL, SystemTime::now()).await;
        assert!(
            matches!(held, Ok(Reservation::NotBefore { .. })),
            "{key}: {held:?}"
        );
    }
}

/// A store whose connections the server closes (a restart, a failover, an idle timeout)
/// connects again by itself: the questions after it are answered, and shared.
async fn a_store_whose_connections_are_killed_answers_again(target: &Target) {
    // A user of its own, so that only this store's connections are killed.
    let user = format!("test-{}-reconnect", std::process::id());
    let mut create = redis::cmd("ACL");
    create.arg(
        &[
            "SETUSER",
            user.as_str(),
            "on",
            ">reconnect",
            "~*",
            "&*",
            "+@all",
        ][..],
    );
    for created in target.on_each_node::<()>(&create).await {
        created.unwrap();
    }
    let store = target.store_as(Some((&user, "reconnect")), "reconnect");
    let other = target.store("reconnect");
    let closed = |now| Window {
        closed_until: Some(now + Duration::from_secs(20)),
        ..Window::default()
    };
    let held_by_the_other = async |name| {
        let key = Key::named(name);
        let held = other
            .reserve(&key, Respects::CLOSURES, SystemTime::now())
            .await
            .unwrap();
        assert!(
            matches!(held, Reservation::NotBefore { .. }),
            "{name}: {held:?}"
        );
    };
    let now = SystemTime::now();
    store
        .merge(&Key::named("before"), closed(now), None, now)
        .await
        .unwrap();
    held_by_the_other("before").await;
    let mut kill = redis::cmd("CLIENT");
    kill.arg(&["KILL", "USER", user.as_str()][..]);
    let killed: i64 = target
        .on_each_node::<i64>(&kill)
        .await
        .into_iter()
        .map(Result::unwrap)
        .sum();
    assert!(killed >= 1, "the store's connections were killed");
    let asked = Instant::now();
    loop {
        let now = SystemTime::now();
        match store
            .merge(&Key::named("after"), closed(now), None, now)
            .await
        {
            Ok(()) => break,
            Err(error) if asked.elapsed() < Duration::from_secs(3) => {
                eprintln!("not yet: {error}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => panic!("not connected again after 3 s: {error}"),
        }
    }
    held_by_the_other("after").await;
    let mut delete = redis::cmd("ACL");
    delete.arg(&["DELUSER", user.as_str()][..]);
    for deleted in target.on_each_node::<i64>(&delete).await {
        deleted.unwrap();
    }
}

/// A proxy to Redis on loopback that holds every chunk either way for `delay`, and that can be
/// cut: its connections closed, and no more taken.
struct Proxy {
    url: String,
    cut: Arc<AtomicBool>,
}

impl Proxy {
    async fn start(redis: &str, delay: Duration) -> Proxy {
        let upstream = redis
            .trim_start_matches("redis://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("redis://{}/", listener.local_addr().unwrap());
        let cut = Arc::new(AtomicBool::new(false));
        let stop = cut.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let server = TcpStream::connect(&upstream).await.unwrap();
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(relay(client_read, server_write, delay, stop.clone()));
                tokio::spawn(relay(server_read, client_write, delay, stop.clone()));
            }
        });
        Proxy { url, cut }
    }
}

async fn relay(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    delay: Duration,
    cut: Arc<AtomicBool>,
) {
    let mut buffer = vec![0; 16 * 1024];
    while let Ok(read @ 1..) = from.read(&mut buffer).await {
        tokio::time::sleep(delay).await;
        if cut.load(Ordering::Relaxed) || to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

/// A service that answers 200 and counts what it was sent.
fn counting() -> (
    impl tower::Service<
        Request<String>,
        Response = Response<String>,
        Error = BoxError,
        Future = impl Send,
    > + Clone
    + Send,
    Arc<std::sync::atomic::AtomicUsize>,
) {
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    let service = tower::service_fn(move |_: Request<String>| {
        counter.fetch_add(1, Ordering::Relaxed);
        async { Ok::<_, BoxError>(Response::new(String::new())) }
    });
    (service, sent)
}

fn request() -> Request<String> {
    Request::get("http://api.test/items")
        .body(String::new())
        .unwrap()
}

/// A ledger that does not read back (written by hand, or by a version whose form this one
/// cannot read) is written anew: its key answers, and so does the store for every other key.
#[tokio::test]
async fn a_ledger_that_does_not_read_back_is_written_anew() {
    let Some(url) = Target::variable("REDIS_URL", "unreadable") else {
        return;
    };
    let store = Target::Single(url.clone()).store("unreadable");
    let bad = format!("test:{}:unreadable:{{n:bad}}", std::process::id());
    let client = redis::Client::open(url).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    let mut seed = redis::cmd("HSET");
    seed.arg(&bad).arg("version").arg(1).arg("ledger").arg("{");
    let () = seed.query_async(&mut raw).await.unwrap();
    let mut expire = redis::cmd("PEXPIRE");
    expire.arg(&bad).arg(60_000);
    let () = expire.query_async(&mut raw).await.unwrap();
    let now = SystemTime::now();
    let granted = store.reserve(&Key::named("bad"), Respects::ALL, now).await;
    assert!(
        matches!(granted, Ok(Reservation::Granted(_))),
        "{granted:?}"
    );
    let closed = Window {
        closed_until: Some(now + Duration::from_secs(30)),
        ..Window::default()
    };
    store
        .merge(&Key::named("good"), closed, None, now)
        .await
        .unwrap();
    let held = store.reserve(&Key::named("good"), Respects::ALL, now).await;
    assert!(
        matches!(held, Ok(Reservation::NotBefore { .. })),
        "{held:?}"
    );
}

#[tokio::test]
async fn a_redis_that_answers_a_second_late_costs_a_call_the_deadline_never_a_failure() {
    let Some(url) = Target::variable("REDIS_URL", "slow") else {
        return;
    };
    let slow = Proxy::start(&url, Duration::from_secs(1)).await;
    let store = RedisStore::open(&slow.url).unwrap().prefix("test:slow:");
    twenty_calls_wait_for_the_store_at_most_its_deadline(store).await;
}

#[tokio::test]
async fn a_redis_cut_mid_run_loses_no_call() {
    let Some(url) = Target::variable("REDIS_URL", "cut") else {
        return;
    };
    let proxy = Proxy::start(&url, Duration::ZERO).await;
    let store = RedisStore::open(&proxy.url).unwrap().prefix("test:cut:");
    let gates = Gates::with_store_deadline(store, DEADLINE);
    let (service, sent) = counting();
    let service = RateLimitLayer::new().gates(gates).layer(service);
    let mut statuses = Vec::new();
    for call in 0..40 {
        if call == 20 {
            proxy.cut.store(true, Ordering::Relaxed);
        }
        let response = service.clone().oneshot(request()).await.unwrap();
        statuses.push(response.status().as_u16());
    }
    assert!(statuses.iter().all(|status| *status == 200));
    assert_eq!(sent.load(Ordering::Relaxed), 40, "each call sent once");
}

/// A cluster that is not there: every call goes, none waits for the store more than the
/// deadline, and once the store is known to be out the calls do not wait for it at all.
#[cfg(feature = "redis-cluster")]
#[tokio::test]
async fn a_cluster_that_is_down_costs_a_call_the_deadline_never_a_failure() {
    let nowhere = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("redis://{}/", nowhere.local_addr().unwrap());
    drop(nowhere);
    let store = RedisStore::open_cluster([url]).unwrap();
    twenty_calls_wait_for_the_store_at_most_its_deadline(store).await;
}

/// Twenty calls, one after another, through gates on `store` (slow or down): each is sent
/// once and answered, none waits for the store more than the deadline, and once the store is
/// known to be out the calls do not wait for it at all.
async fn twenty_calls_wait_for_the_store_at_most_its_deadline(store: RedisStore) {
    let gates = Gates::with_store_deadline(store, DEADLINE);
    let (service, sent) = counting();
    let service = RateLimitLayer::new().gates(gates).layer(service);
    let mut slowest = Duration::ZERO;
    let started = Instant::now();
    for _ in 0..20 {
        let call = Instant::now();
        let response = service.clone().oneshot(request()).await.unwrap();
        assert_eq!(response.status(), 200);
        slowest = slowest.max(call.elapsed());
    }
    assert_eq!(sent.load(Ordering::Relaxed), 20);
    assert!(
        slowest < DEADLINE + Duration::from_millis(40),
        "{slowest:?}"
    );
    assert!(
        started.elapsed() < 2 * DEADLINE + Duration::from_millis(80),
        "only the first call waited for the store: {:?}",
        started.elapsed()
    );
}

/// Four processes (each its own gates and connection) × 5 workers, 2 calls each, against 20
/// requests a second with draft 08 meters: together they are refused at most once. On the
/// wall clock: each waits up to a second for the store, so that a loaded machine's slow
/// moment does not send a call by its own gate alone (what the default deadline is for, and
/// not what this test asks).
async fn a_fleet_on_redis_spends_no_more_than_the_meters_report(target: &Target) {
    let limiter = Limiter::new(
        Model::FixedWindow {
            limit: 20,
            window: Duration::from_secs(1),
        },
        Headers::Draft8,
    )
    .with_latency(Duration::from_millis(10));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let gates = Gates::with_store_deadline(target.store("fleet"), Duration::from_secs(1));
        let layer = RateLimitLayer::new().gates(gates);
        for _ in 0..5 {
            let service = layer.layer(limiter.clone());
            workers.push(tokio::spawn(async move {
                for _ in 0..2 {
                    let response = service.clone().oneshot(request()).await.unwrap();
                    assert_eq!(response.status(), 200);
                }
            }));
        }
    }
    for worker in workers {
        worker.await.unwrap();
    }
    assert_eq!(limiter.log().len() - limiter.refused(), 40);
    assert!(limiter.refused() <= 1, "refused {}", limiter.refused());
}
