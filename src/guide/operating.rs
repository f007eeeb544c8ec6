//! What an operator sees: the tracing events, the hook, the metrics, each key's state, and
//! the mistakes the layer warns of.
//!
//! **Events** (target `tower_retry_after`), at the level each fits:
//!
//! | level | when | fields |
//! |---|---|---|
//! | `info` | once per episode of a key: it closed (a refusal) or is spent (a meter said zero), and when it reopened | `key`, `episode` (`closed`, `spent`, `reopened`), `closed_ms`, `cause` |
//! | `debug` | per wait decided, taken or declined: at a closed gate, or before a retry | `key`, `reason`, `cause`, `wait_ms` (at the gate: the estimate), `attempt`, `will_retry`, `declined` |
//! | `debug` | per wait over, with the true wait | `key`, `waited_ms`, `attempt` |
//! | `trace` | per attempt sent | `key`, `attempt` |
//! | `trace` (target `tower_retry_after::learn`) | per round the law that learns a limit no one publishes judged, for whoever tunes it | `key`, `round`, `sent`, `accepted`, `refused`, `burst`, `rate`, `period_ms`, each search's `_value`, `_least_refused`, `_step`, `_undone`, `_on_trial`, and `rate_owing`, `burst_owing` (its next refusal is its last cut's debt) |
//! | `warn` | once per layer, a mistake it can see (below) | |
//!
//! A key made from a credential shows as its fingerprint (`credential:…`), never the
//! credential; a URI's userinfo never reaches an event.
//!
//! **The hook**: [`RateLimitLayer::on_rate_limit`](crate::RateLimitLayer::on_rate_limit) is
//! told each rate-limited wait a call is about to take ([`Notice::Wait`](crate::Notice::Wait),
//! whose `false` vetoes it: the call ends with what it has) and each turn of an episode
//! ([`Notice::Closed`](crate::Notice::Closed), [`Notice::Reopened`](crate::Notice::Reopened)),
//! as octokit's throttling plugin calls `onRateLimit`.
//!
//! **Metrics** (feature `metrics`, through the `metrics` facade: the application's recorder
//! exports them): `tower_retry_after_requests_sent_total`, `_refused_total`, `_retries_total`,
//! `_failed_fast_total` (counters), `_wait_seconds` (a histogram: its sum is the time waited),
//! and per key `_remaining`, `_closed_seconds`, `_waiters` (gauges); every series labelled
//! `key`, a credential's fingerprint. `cargo run --features metrics --example metrics`
//! exports them in Prometheus's format.
//!
//! **A key's state**: [`Gates::snapshot`](crate::Gates::snapshot) (closed for how long and by
//! what, the quota left, the calls waiting), [`Gates::keys`](crate::Gates::keys) (every key
//! the gates hold), and on each response [`CallCost`](crate::CallCost).
//!
//! **Mistakes warned of**, once per layer: requests in the form a server receives (a path,
//! no scheme or authority: the layer is on a server's router, where one caller's 429 would
//! hold every caller), and an attempt a timeout below the layer cut short before a retry (a
//! timeout inside bounds each attempt, not the call).
//!
//! # Example
//!
//! Counting episodes in a hook, and refusing any wait over ten seconds:
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::time::Duration;
//! use tower_retry_after::{Notice, RateLimitLayer};
//!
//! let episodes = Arc::new(AtomicU64::new(0));
//! let counted = episodes.clone();
//! let layer = RateLimitLayer::new().on_rate_limit(move |notice: &Notice<'_>| match notice {
//!     Notice::Closed { .. } => {
//!         counted.fetch_add(1, Ordering::Relaxed);
//!         true
//!     }
//!     Notice::Wait { wait, .. } => *wait <= Duration::from_secs(10),
//!     _ => true,
//! });
//! # drop(layer);
//! ```
