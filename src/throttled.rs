//! [`Throttled`]: the error of a call the layer declined to send.

use std::fmt;
use std::time::Duration;

use http::{HeaderMap, StatusCode, response};

use crate::cost::CallCost;
use crate::headers::RateLimitInfo;
use crate::key::Key;

/// The error a call gets when its key's gate stays closed longer than the call may still wait:
/// the layer declined to send, because the server has said it would refuse (or a probe, or the
/// pace the server asked for, holds the gate longer than that).
///
/// A call that had a response and then gave up waiting to retry it ends with `Throttled` too,
/// carrying that response's status, headers and reading: its body was dropped when the wait
/// began, so that a waiting call holds no connection. Either way it says what the call cost
/// before it gave up ([`cost`](Self::cost)).
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
/// fn wait_hint(error: &BoxError) -> Option<(Duration, Option<http::StatusCode>)> {
///     let throttled = error.downcast_ref::<Throttled>()?;
///     let cost = throttled.cost();
///     tracing::warn!(attempts = cost.attempts(), waited = ?cost.waited(), "gave up: {throttled}");
///     Some((throttled.retry_after(), throttled.status()))
/// }
/// # let _ = wait_hint;
/// ```
#[derive(Clone, Debug)]
pub struct Throttled {
    key: Key,
    retry_after: Duration,
    response: Option<Box<Head>>,
    cost: CallCost,
}

/// What is kept of the last response a call had.
#[derive(Clone, Debug)]
struct Head {
    status: StatusCode,
    headers: HeaderMap,
    info: Option<RateLimitInfo>,
}

impl Throttled {
    pub(crate) fn new(key: Key, retry_after: Duration) -> Self {
        Throttled {
            key,
            retry_after,
            response: None,
            // The call sets what it cost when it gives up (`with_cost`): the gate that makes
            // this error does not know.
            cost: CallCost::new(0, Duration::ZERO),
        }
    }

    /// The call that gives up with this error cost `cost`.
    pub(crate) fn with_cost(mut self, cost: CallCost) -> Self {
        self.cost = cost;
        self
    }

    /// The call gave up waiting to retry the response whose head this is.
    pub(crate) fn after(mut self, mut head: response::Parts) -> Self {
        self.response = Some(Box::new(Head {
            status: head.status,
            info: head.extensions.remove::<RateLimitInfo>(),
            headers: head.headers,
        }));
        self
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

    /// The status of the last response the call had, if it gave up waiting to retry one.
    pub fn status(&self) -> Option<StatusCode> {
        self.response.as_ref().map(|head| head.status)
    }

    /// The headers of that response.
    pub fn headers(&self) -> Option<&HeaderMap> {
        self.response.as_ref().map(|head| &head.headers)
    }

    /// What the layer read of that response's rate-limit headers.
    pub fn info(&self) -> Option<&RateLimitInfo> {
        self.response.as_ref()?.info.as_ref()
    }

    /// What the call cost before it gave up: the requests it sent (none, if it gave up at its
    /// key's gate before the first) and the time it waited.
    pub fn cost(&self) -> CallCost {
        self.cost
    }
}

impl fmt::Display for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limited: {} cannot let this call through for {:?}, longer than it may wait; retry after that",
            self.key, self.retry_after
        )?;
        match self.status() {
            Some(status) => write!(f, " (the last response was {status})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Throttled {}
