//! Several processes sharing one credential: gates on a store that all of them reach.
//!
//! A rate limit is usually per credential, and a credential is usually shared by many
//! processes. Per-process gates stampede each other: each learns of a 429 only by being refused
//! itself, and each spends the quota it sees as if it were alone. Gates on a store all of them
//! reach share both:
//!
//! ```rust,ignore
//! use tower_retry_after::store::RedisStore;
//! use tower_retry_after::{Gates, RateLimitLayer};
//!
//! // Cargo.toml: tower-retry-after = { version = "0.1", features = ["redis"] }
//! let store = RedisStore::open("redis://127.0.0.1:6379/")?.prefix("billing:");
//! let layer = RateLimitLayer::new().gates(Gates::with_store(store));
//! ```
//!
//! (`RedisStore` is behind the `redis` feature; its own example is compiled and run with it.)
//!
//! - **What is shared.** Each process keeps its own gates (waiters and pacing stay local). A
//!   call its gate lets through asks the store to reserve its request before it is sent: the
//!   store holds it if another process met a closure, or if what the server last reported is
//!   taken by requests already out across the fleet. Answers are merged back: the later closure
//!   stands, never brought forward; within a window the lowest count, unless a request
//!   reserved after it came back says more (the server gave some back). A window's reset
//!   restores the quota the server gave once for the whole fleet, not once per process;
//!   once the server refused what a reset restored, a reset restores nothing and one
//!   request probes, alone, as at a gate.
//! - **One set of rules, on one clock.** On Redis each key is one hash
//!   (`tower-retry-after:{o:https://api.test}`: the prefix, then the key, its kind first, as
//!   a hash tag) holding the very ledger a `MemoryStore` keeps, as JSON, and its version. A
//!   process reads it with Redis's own clock, applies the same Rust rules at that time, and
//!   writes it back only if no other process wrote it meanwhile (a compare-and-set on the
//!   version; it reads again if one did); its calls' changes to a key wait for its write
//!   under way and go together in the next. Processes send and receive durations, so no two
//!   machines' clocks are ever compared. Every key expires on its own a little after the last
//!   time it names (`linger`, 500 ms), or an hour after its last write where the fleet
//!   learned how fast it may go; a request out whose answer never comes stops counting after
//!   a minute.
//! - **Off the poll path, and never a failure.** The store is asked by a task of its own, and a
//!   call waits for it at most the gates' deadline (50 ms; `Gates::with_store_deadline`). Past
//!   it, or while Redis is down, the call goes by its own process's gates alone; the outage is
//!   logged once (a `warn` event), Redis is tried once a second, and rejoined when it answers.
//!   Nothing it missed can bring a gate forward. An answer that lets the call go is part of
//!   sending, as the request's own time is, and spends nothing of its `max_wait`; a hold runs
//!   from the question, and spends it from then.
//! - **A process flushes its gates before it exits.** What a call tells the store is written
//!   by a task on the runtime the call ran on: a process that drops its runtime the moment its
//!   last call returns may drop what it still owed the store, and the fleet counts those
//!   requests out, held behind them for up to 10 s where the learned pace holds it (a minute
//!   against a reported quota). `gates.flush().await` ([`Gates::flush`](crate::Gates::flush))
//!   waits until all of it is told, at most 10 s against a store that does not answer (the
//!   `fleet` example flushes each process's gates; without it, 2 runs of 18 ended with their
//!   last calls 10 s apart).
//! - **Waiters learn of an opening without polling.** Closures and resets are times: a held
//!   call sleeps until the time the store named, and its process's gate holds the others till
//!   then. The only repeated asking is every 50 ms while answers out may say more: at a
//!   restored window's reset, until the reserved requests' answers say what the new window
//!   holds, around a window's last request sent early (below), and, where resets are read to
//!   the second, while all that is left of a window is taken by requests out (their answers
//!   may show the server counted them already, and leave the last request to go early).
//! - **A reset read to the second costs no second more in a fleet.** A reset written as a
//!   whole second (an epoch second, a date) may fall up to a second before the one read. As a
//!   gate does (see the [gate guide](crate::guide::gate)), the store holds a window's last
//!   request, while others wait or are out, until the earliest the window can have ended, and
//!   sends it alone; its answer times the next window for every process, and no reset
//!   restores the quota before it comes (a log may still count the last window's tail). (A
//!   `Window` says which second the reset named: `reset_second`.)
//! - **A window the server spent is its instruction in every process.** A store tells what is
//!   left to reserve, which the fleet's requests out may have taken where the server said some
//!   are left (their answers may give some back: calls wait for them); a `Window` says where
//!   the server itself said none is left (`spent_by_server`), and a reset beyond a call's cap
//!   then turns the call away at once in every process, as in the one that read the meter.
//! - **Without meters, the fleet learns the limit together, by the gate's own law** (see the
//!   [learning guide](crate::guide::learning)): the ledger runs it on the store's clock,
//!   counting every process's requests out, and holds each reservation by it; a process's own
//!   gate leaves that pace to the store: after a closure it still probes, then lets the calls
//!   it held go at once for the store to pace (its own ramp would spread the burst the law
//!   lets go at a reset), once the key was refused after an accepted answer (the law knows it
//!   by then). A refusal the server named no time for is learned as the guess it is (a
//!   `Window` says so: `guessed`) and, for calls the law paces, ends by the law's next reset
//!   where that is sooner, as at a gate. Dropped as soon as a meter speaks. A call the law
//!   holds while requests are out asks again after 50 ms, as no other process's answer wakes
//!   it. A layer set not to learn limits (`learn_limits(false)`) is not held by it; its
//!   requests are still counted, as the server counts them.
//! - `MemoryStore` is the same interface in one process (several `Gates` sharing it); without a
//!   store, nothing of this runs and a call costs what it did. The [`store`](crate::store)
//!   module has the interface, for a store of your own.
//!
//! `cargo run --features redis --example fleet` (with `REDIS_URL` set) runs 4 processes × 25
//! workers against the demo's limiter with per-process gates and with gates on Redis; its
//! figures are in `BENCHMARKS.md`.
//!
//! | 400 requests, 20 per 1 s, round trips 20–80 ms (release) | refused | completion / physical limit |
//! |---|---|---|
//! | draft 08 meters, per-process gates | 229 | 1.15 |
//! | draft 08 meters, gates on Redis | 0 | 1.14 |
//! | `Retry-After` only, per-process gates | 104 | 1.30 |
//! | `Retry-After` only, gates on Redis | 30 | 1.15 |
//!
//! (Windows from the first request; aligned windows, token buckets and sliding logs are within
//! 1.06–1.18 on Redis with `Retry-After` only, refused 24–33 times against 58–99.)
//! BENCHMARKS.md has the runs, with what is left: the first window without meters, where
//! nothing is known yet, still meets the wall with every process ramping up.
//!
//! - **On a Redis Cluster too** (feature `redis-cluster`, redis-rs's `cluster-async` client):
//!   `RedisStore::open_cluster(["redis://node-1:6379/", "redis://node-2:6379/"])`, or
//!   `RedisStore::new_cluster(client)` for a `ClusterClient` of your own (TLS, credentials). A
//!   limit is one key, and the hash tag spreads different limits over the nodes. `.ci/run` runs every Redis test on a single Redis and on a
//!   three-node cluster.
//!
//! # Example
//!
//! `MemoryStore` is the same interface in one process: two sets of gates sharing one store, as
//! two processes sharing a Redis would. A closure one of them meets holds the other's calls:
//!
//! ```
//! use std::sync::Arc;
//! use tower::{Service, ServiceBuilder, ServiceExt};
//! use tower_retry_after::store::MemoryStore;
//! use tower_retry_after::{Gates, RateLimitLayer, Throttled};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), tower::BoxError> {
//! // A stand-in for the API, refusing every call for an hour.
//! let api = tower::service_fn(|_: http::Request<String>| async {
//!     http::Response::builder().status(429).header("retry-after", "3600").body(String::new())
//! });
//! let store = Arc::new(MemoryStore::new());
//! let mut first = ServiceBuilder::new()
//!     .layer(RateLimitLayer::new().gates(Gates::with_store(store.clone())))
//!     .service(api.clone());
//! let mut second = ServiceBuilder::new()
//!     .layer(RateLimitLayer::new().gates(Gates::with_store(store)))
//!     .service(api);
//!
//! let request = || http::Request::get("https://api.test/items").body(String::new());
//! let refused = first.ready().await?.call(request()?).await?;
//! assert_eq!(refused.status(), 429, "an hour is over the cap: returned at once");
//! // The other set of gates never saw the 429, and still sends nothing.
//! let declined = second.ready().await?.call(request()?).await.unwrap_err();
//! assert!(declined.downcast_ref::<Throttled>().is_some());
//! # Ok(())
//! # }
//! ```
