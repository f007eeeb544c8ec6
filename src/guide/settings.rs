//! Every setting of [`RateLimitLayer`](crate::RateLimitLayer), its default, and how the
//! settings follow each other.
//!
//! | setter on `RateLimitLayer` | default | |
//! |---|---|---|
//! | `retry_on_rate_limit` | on | off: observe only (no wait, no retry, no gate) |
//! | `retry_after_cap` | 60 s; at most half of `max_wait`, which it follows if set | longer instructions and spent windows are returned at once, remembered, and fail later calls fast until they pass |
//! | `max_wait` | 120 s; at least 2 × the cap, which it follows if set | all waits of one call |
//! | `retry_after_horizon` | 2 days; at least the cap | longer instructions are absurd: returned at once, not remembered |
//! | `transient_retries` | 3 | 408/5xx/transport; 0 retries none |
//! | `rate_limited_retries` | 10 | a backstop behind `max_wait`: the crossover is `max_wait / 10` = 12 s; 0 retries none (the gate still holds other calls) |
//! | `backoff` | 500 ms × 2^n, ≤ 20 s | `Backoff::new().base(..).max(..).instructed_spread(..)` |
//! | `respect_remaining` | on | off: only a 429's own wait holds this layer's calls; no quota, spent window or pace does, even at shared gates |
//! | `probe_timeout` | 10 s | how long the probe after a closure may stay unanswered before the next waiter probes, and a request out may hold any of a window's quota |
//! | `slow_start` | on, where `respect_remaining` is | the first call to a key nothing is known of goes alone, and its answer decides the rest |
//! | `learn_limits` | on, where `respect_remaining` is | where the server publishes no quota, pace by the one its refusals show |
//! | `key` | the request's origin | `Key::credential(token)` per credential (only a fingerprint is kept and shown), `Key::named(...)` per tenant or API; fall back to `Key::origin(request)`, as `None` leaves a request ungated |
//! | `gates` | its own | share `Gates` between layers; `Gates::with_store` shares across processes (see [`fleet`](super::fleet)) |
//! | `on_rate_limit` | none | a hook told of each wait (its `false` vetoes it) and each episode; see [`operating`](super::operating) |
//! | `with_policy` | `StatusPolicy` | `StatusPolicy::new().on(status, Behaviour)` merges over the table; `clone_body_fn(...)` copies a body type of your own; a policy sees each `Attempt` |
//!
//! What you set is never overridden. Of the cap, `max_wait` and the horizon, the ones left unset
//! follow the ones set (`retry_after_cap(300 s)` alone makes `max_wait` 600 s; `max_wait(10 s)`
//! alone makes the cap 5 s); ones set at odds (`retry_after_cap(100 s).max_wait(150 s)`, or
//! `respect_remaining(false).slow_start(true)` and `retry_on_rate_limit(false)
//! .respect_remaining(true)`: a switch that would do nothing) panic when the
//! layer is built, with a message naming the setting to change. `Duration::ZERO` and
//! `Duration::MAX` mean what they say: a cap of zero waits no instruction, a `max_wait` of zero
//! waits nothing, a cap of `Duration::MAX` waits every instruction (with the other two
//! following it: for servers you trust).
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use tower_retry_after::policy::{Behaviour, StatusPolicy};
//! use tower_retry_after::RateLimitLayer;
//!
//! // Five minutes is worth waiting for this batch job: `max_wait` follows, to ten.
//! let patient = RateLimitLayer::new()
//!     .retry_after_cap(Duration::from_secs(300))
//!     .transient_retries(5)
//!     .with_policy(StatusPolicy::new().on(http::StatusCode::from_u16(520).unwrap(), Behaviour::RetryIfIdempotent));
//! # let _ = patient;
//! ```
