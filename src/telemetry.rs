//! What the layer does, in numbers, through the [`metrics`](https://docs.rs/metrics) facade
//! (feature `metrics`; without it every function here is empty): whichever recorder the
//! application installs (a Prometheus exporter, StatsD, …) exports them. Every one carries
//! the label `key`, the key as events show it: a credential's fingerprint, never the
//! credential.
//!
//! | name | kind | what |
//! |---|---|---|
//! | `tower_retry_after_requests_sent_total` | counter | attempts sent |
//! | `tower_retry_after_refused_total` | counter | answers the server refused (a 429, or a 403 its headers mark so) |
//! | `tower_retry_after_retries_total` | counter | attempts that are retries |
//! | `tower_retry_after_failed_fast_total` | counter | calls turned away at their gate, which stayed closed longer than they could wait: they end with `Throttled` (or, where their last attempt met a transport error, with that error) |
//! | `tower_retry_after_wait_seconds` | histogram | each wait a call took, at the gate or asleep (its sum: seconds waited) |
//! | `tower_retry_after_remaining` | gauge | the quota the last answer reported left |
//! | `tower_retry_after_closed_seconds` | gauge | how long the key closed for when its episode began; 0 once it reopens |
//! | `tower_retry_after_waiters` | gauge | calls waiting at the key's gate |

use std::time::Duration;

use crate::key::Key;

/// An attempt, the `attempt`-th of its call, was sent on `key` (`None`: not gated).
pub(crate) fn sent(key: Option<&Key>, attempt: u32) {
    #[cfg(feature = "metrics")]
    {
        ::metrics::counter!("tower_retry_after_requests_sent_total", "key" => label(key))
            .increment(1);
        if attempt > 1 {
            ::metrics::counter!("tower_retry_after_retries_total", "key" => label(key))
                .increment(1);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (key, attempt);
}

/// An answer on `key` was a refusal.
pub(crate) fn refused(key: Option<&Key>) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("tower_retry_after_refused_total", "key" => label(key)).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = key;
}

/// A call on `key` was turned away at its gate (see the table above).
pub(crate) fn failed_fast(key: &Key) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("tower_retry_after_failed_fast_total", "key" => key.to_string())
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = key;
}

/// A call on `key` waited `waited`.
pub(crate) fn waited(key: Option<&Key>, waited: Duration) {
    #[cfg(feature = "metrics")]
    ::metrics::histogram!("tower_retry_after_wait_seconds", "key" => label(key))
        .record(waited.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (key, waited);
}

/// The last answer on `key` reported `remaining` of its quota.
pub(crate) fn remaining(key: &Key, remaining: u64) {
    #[cfg(feature = "metrics")]
    ::metrics::gauge!("tower_retry_after_remaining", "key" => key.to_string())
        .set(remaining as f64);
    #[cfg(not(feature = "metrics"))]
    let _ = (key, remaining);
}

/// `key` closed for `left`; zero: it reopened.
pub(crate) fn closed(key: &Key, left: Duration) {
    #[cfg(feature = "metrics")]
    ::metrics::gauge!("tower_retry_after_closed_seconds", "key" => key.to_string())
        .set(left.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (key, left);
}

/// A call began (`true`) or stopped (`false`) waiting at `key`'s gate.
pub(crate) fn waiting(key: &Key, began: bool) {
    #[cfg(feature = "metrics")]
    {
        let gauge = ::metrics::gauge!("tower_retry_after_waiters", "key" => key.to_string());
        if began {
            gauge.increment(1.0);
        } else {
            gauge.decrement(1.0);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (key, began);
}

/// The label of `key`, or of a call that is not gated.
#[cfg(feature = "metrics")]
fn label(key: Option<&Key>) -> String {
    key.map_or_else(|| "ungated".to_owned(), Key::to_string)
}
