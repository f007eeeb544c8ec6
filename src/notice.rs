//! The hook an operator registers on the layer ([`RateLimitLayer::on_rate_limit`]), and what
//! it is told: each rate-limited wait a call is about to take, which the hook may veto, and
//! each turn of a key's episode (closed, reopened). As octokit's throttling plugin calls
//! `onRateLimit` and takes its `false` for "do not retry".
//!
//! [`RateLimitLayer::on_rate_limit`]: crate::RateLimitLayer::on_rate_limit

use std::sync::Arc;
use std::time::Duration;

use crate::key::Key;
use crate::throttled::HeldBy;

/// What the layer tells the hook registered with
/// [`RateLimitLayer::on_rate_limit`](crate::RateLimitLayer::on_rate_limit).
///
/// ```
/// use std::time::Duration;
/// use tower_retry_after::{Notice, RateLimitLayer};
///
/// let layer = RateLimitLayer::new().on_rate_limit(|notice: &Notice<'_>| match notice {
///     // Never wait out a rate limit of more than ten seconds for this upstream: give the
///     // caller what it has. (A transient failure's backoff is the budget's to bound.)
///     Notice::Wait { wait, .. } => *wait <= Duration::from_secs(10),
///     Notice::Closed { key, left, by } => {
///         eprintln!("{key} closed for {left:?}: {by}");
///         true
///     }
///     _ => true,
/// });
/// # drop(layer);
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Notice<'a> {
    /// A call is about to wait before its next attempt. The hook's `false` vetoes the wait:
    /// the call ends at once with what it has (the last response, or
    /// [`Throttled`](crate::Throttled) where nothing was sent).
    Wait {
        /// The key the call counts against.
        key: &'a Key,
        /// How long it would wait, as far as the layer can tell.
        wait: Duration,
        /// What holds it.
        by: HeldBy,
        /// The attempt that would follow the wait (the first is 1).
        attempt: u32,
    },
    /// A key closed (a refusal, or a window the server said is spent): an episode begins.
    /// Told once per episode, not per call; the hook's answer is not asked.
    Closed {
        /// The key that closed.
        key: &'a Key,
        /// For how long.
        left: Duration,
        /// What closed it.
        by: HeldBy,
    },
    /// The probe after a closure came back healthy: the key's calls go again, and the
    /// episode is over. The hook's answer is not asked.
    Reopened {
        /// The key that reopened.
        key: &'a Key,
    },
}

/// A registered hook.
pub(crate) type Hook = Arc<dyn Fn(&Notice<'_>) -> bool + Send + Sync>;
