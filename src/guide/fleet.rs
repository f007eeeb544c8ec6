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
//!   stands, never brought forward; within a window the lowest count. A spent window's reset
//!   restores the quota the server gave once for the whole fleet, not once per process.
//! - **Atomic, and on one clock.** On Redis each key is a hash and a sorted set of requests out
//!   (`tower-retry-after:{https://api.test}` and the same with `#out`: the prefix, then the key
//!   as a hash tag, so that both land in one slot of a cluster), changed only by two Lua
//!   scripts that read Redis's own clock: processes send and receive durations, so no two
//!   machines' clocks are ever compared. Every key expires on its own a
//!   little after the last time it names (`linger`, 500 ms); a request out whose answer never
//!   comes stops counting after a minute.
//! - **Off the poll path, and never a failure.** The store is asked by a task of its own, and a
//!   call waits for it at most the gates' deadline (50 ms; `Gates::with_store_deadline`). Past
//!   it, or while Redis is down, the call goes by its own process's gates alone; the outage is
//!   logged once (a `warn` event), Redis is tried once a second, and rejoined when it answers.
//!   Nothing it missed can bring a gate forward.
//! - **Waiters learn of an opening without polling.** Closures and resets are times: a held
//!   call sleeps until the time the store named, and its process's gate holds the others till
//!   then. The only repeated asking is at a restored window's reset, every 50 ms until the
//!   reserved requests' answers say what the new window holds.
//! - **Without meters, the fleet learns the limit together.** Where the server publishes no
//!   quota, the store opens a window at its first reservation; a refusal ends it and measures
//!   its length (to the end of the refusal's wait), and the requests it accepted (reserved less
//!   refused, whatever order their answers came in) are the fleet's limit: no more are reserved
//!   a window, raised by one after a window unrefused (then after 2, 4 … 64, each refused raise
//!   doubling the wait: a raise is refused at its window's start, which measures the window
//!   closest), dropped as soon as a meter speaks.
//!   A process's own gate is told that limit with the window it holds a call for.
//! - `MemoryStore` is the same interface in one process (several `Gates` sharing it); without a
//!   store, nothing of this runs and a call costs what it did. The [`store`](crate::store)
//!   module has the interface, for a store of your own.
//!
//! `cargo run --features redis --example fleet` (with `REDIS_URL` set) runs 4 processes × 25
//! workers against the demo's limiter with per-process gates and with gates on Redis; its
//! figures are in `BENCHMARKS.md`.
//!
//! | 400 requests, 20 per 1 s, round trips 20–80 ms | refused | completion / physical limit |
//! |---|---|---|
//! | draft 08 meters, per-process gates | 135–795 | 1.14–1.22 |
//! | draft 08 meters, gates on Redis | 0 | 1.09–1.11 |
//! | `Retry-After` only, per-process gates | 62–156 | 1.27–1.62 |
//! | `Retry-After` only, gates on Redis | 17–25 (most of them in the first window) | 1.10–1.12 |
//!
//! BENCHMARKS.md has the runs, with what is left: the first window without meters, where
//! nothing is known yet, still meets the wall with every process ramping up.
//!
//! - **On a Redis Cluster too** (feature `redis-cluster`, redis-rs's `cluster-async` client):
//!   `RedisStore::open_cluster(["redis://node-1:6379/", "redis://node-2:6379/"])`, or
//!   `RedisStore::new_cluster(client)` for a `ClusterClient` of your own (TLS, credentials). The
//!   hash tag puts each limit's two keys in one slot, as its scripts need, and spreads different
//!   limits over the nodes. `.ci/run` runs every Redis test on a single Redis and on a
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
