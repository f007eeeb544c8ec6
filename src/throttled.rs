//! [`Throttled`]: the error of a call the layer declined to send.

use std::fmt;
use std::time::Duration;

use crate::key::Key;

/// The error a call gets when its key's gate stays closed longer than the call may still wait:
/// the layer declined to send, because the server has said it would refuse (or a probe, or the
/// pace the server asked for, holds the gate longer than that).
///
/// It reaches the caller boxed, as a [`BoxError`](crate::BoxError) (tower's convention, as
/// `tower::load_shed` does with `Overloaded`): downcast to read it.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use tower_retry_after::{BoxError, Throttled};
///
/// fn wait_hint(error: &BoxError) -> Option<Duration> {
///     error.downcast_ref::<Throttled>().map(Throttled::retry_after)
/// }
/// # let _ = wait_hint;
/// ```
#[derive(Clone, Debug)]
pub struct Throttled {
    key: Key,
    retry_after: Duration,
}

impl Throttled {
    pub(crate) fn new(key: Key, retry_after: Duration) -> Self {
        Throttled { key, retry_after }
    }

    /// How long until the key's gate could let a call through, as far as it can tell: the
    /// closure or spent window still to run, or, for a call that waited, the probe out or the
    /// pace of the calls ahead of it. Retrying sooner would be refused, or held again.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// The rate limit the call counts against.
    pub fn key(&self) -> &Key {
        &self.key
    }
}

impl fmt::Display for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limited: {} is closed for {:?}, longer than this call may wait; retry after it",
            self.key, self.retry_after
        )
    }
}

impl std::error::Error for Throttled {}
