//! Where gates share what servers say with other processes: the store interface, and the
//! stores the crate ships.
//!
//! A rate limit is usually per credential, and a credential is usually shared by several
//! processes. Each process keeps its own [`Gates`](crate::Gates) (its waiters and its pacing
//! are local by nature); a store is what they share beside them: until when a server closed a
//! key, the quota its window has left, and what of that quota each process has reserved. A
//! set of gates is put on one with [`Gates::with_store`](crate::Gates::with_store); without a
//! store none of this runs, and a call costs what it did.
//!
//! Which store:
//!
//! - **None** (the default, `Gates::new()`): one process, or processes whose credentials
//!   differ.
//! - [`MemoryStore`]: several `Gates` of one process sharing what they learn (two layers built
//!   apart, a test standing in for a fleet).
//! - [`RedisStore`] (feature `redis`): every process that reaches one Redis, or one Redis
//!   Cluster (feature `redis-cluster`). It reserves and merges atomically in Lua scripts on
//!   Redis's own clock, so no two machines' clocks are compared.
//! - A [`WindowStore`] of your own, over whatever the fleet already shares. It answers two
//!   questions: [`reserve`](WindowStore::reserve) one request before it is sent, and
//!   [`merge`](WindowStore::merge) what an answer said. [`Respects`], [`Window`],
//!   [`Reservation`], [`Ticket`], [`StoreError`] and [`StoreFuture`] are the words it is
//!   asked and answers in. Times are wall-clock ([`SystemTime`](std::time::SystemTime)) so
//!   that they mean the same in every process; no monotonic instant crosses this interface.
//!
//! A store that does not answer never fails a call: the gates wait for it at most their
//! deadline (50 ms; [`Gates::with_store_deadline`](crate::Gates::with_store_deadline)) and go
//! by their own process's knowledge past it. The [fleet guide](crate::guide::fleet) says what
//! is shared, and what it buys.
//!
//! # Example
//!
//! Two sets of gates sharing one [`MemoryStore`], as two processes sharing a Redis would; the
//! store is asked directly here, as the gates ask it:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Duration, SystemTime};
//! use tower_retry_after::store::{MemoryStore, Reservation, Respects, Window, WindowStore};
//! use tower_retry_after::{Gates, Key, RateLimitLayer};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower_retry_after::store::StoreError> {
//! let store = Arc::new(MemoryStore::new());
//! let first = RateLimitLayer::new().gates(Gates::with_store(store.clone()));
//! let second = RateLimitLayer::new().gates(Gates::with_store(store.clone()));
//! # let _ = (first, second);
//!
//! // One process is told the key is closed for a minute; the store holds every other one.
//! let (api, now) = (Key::named("api"), SystemTime::now());
//! let closed = Window {
//!     closed_until: Some(now + Duration::from_secs(60)),
//!     ..Window::default()
//! };
//! store.merge(&api, closed, None, now).await?;
//! let answer = store.reserve(&api, Respects::ALL, now).await?;
//! assert!(matches!(answer, Reservation::NotBefore { .. }));
//! # Ok(())
//! # }
//! ```
// Built without the feature, the docs link where it is documented: docs.rs, all features on.
#![cfg_attr(feature = "redis", doc = "[`RedisStore`]: RedisStore")]
#![cfg_attr(
    not(feature = "redis"),
    doc = "[`RedisStore`]: https://docs.rs/tower-retry-after/latest/tower_retry_after/store/struct.RedisStore.html"
)]

pub use crate::gate::{
    MemoryStore, Reservation, Respects, StoreError, StoreFuture, Ticket, Window, WindowStore,
};
#[cfg(feature = "redis")]
pub use crate::redis::RedisStore;
