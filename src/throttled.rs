//! [`Throttled`]: the error of a call the layer declined to send, and [`HeldBy`]: what held it.

use std::fmt;
use std::time::Duration;

use http::{HeaderMap, StatusCode, response};

use crate::cost::CallCost;
use crate::headers::{RateLimitInfo, Unit};
use crate::key::Key;

/// The error a call gets when its key's gate stays closed longer than the call may wait: the
/// layer declined to send, because the server has said it would refuse (or a probe, or the
/// pace the server asked for, holds the gate longer than that). It says for how long
/// ([`retry_after`](Self::retry_after)) and what set it ([`held_by`](Self::held_by)).
///
/// A call waits at its gate only for what its cap allows (`retry_after_cap`, with the spread
/// an instruction that long is given) and its budget (`max_wait`) still covers. An instruction
/// or a spent window beyond that (an hourly or daily quota at zero) fails every call on the
/// key at once, sending nothing, while more than that is left of it: the caller can
/// checkpoint and resume.
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
    held_by: HeldBy,
    response: Option<Box<Head>>,
    cost: CallCost,
}

/// What holds a key's calls back, as a [`Throttled`] error says it.
///
/// # Example
///
/// ```
/// use tower_retry_after::{BoxError, HeldBy, Throttled};
///
/// fn explain(error: &BoxError) -> Option<String> {
///     let throttled = error.downcast_ref::<Throttled>()?;
///     Some(match throttled.held_by() {
///         HeldBy::SpentMeter { unit, .. } => format!("quota of {unit:?} spent"),
///         HeldBy::RetryAfter { status } => format!("told to wait by a {status}"),
///         other => other.to_string(),
///     })
/// }
/// # let _ = explain;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeldBy {
    /// The server's instruction: the `Retry-After` (or `retry-after-ms`) of a response with
    /// this status.
    RetryAfter {
        /// The status of the response that carried it.
        status: StatusCode,
    },
    /// A meter the server said is spent (`remaining = 0`), until its reset.
    SpentMeter {
        /// The status of the response that said so.
        status: StatusCode,
        /// What the meter counts.
        unit: Unit,
    },
    /// A refusal that named no time: the layer's guessed pause, never beyond the cap.
    Guess {
        /// The status of the refusal.
        status: StatusCode,
    },
    /// The key's token meters have less left than the call declared it will spend
    /// ([`TokenCost`](crate::TokenCost)), until the meter of this unit resets.
    TokenCost {
        /// The meter that lacks it.
        unit: Unit,
    },
    /// The pace the layer learned from what the server accepted and refused (it publishes no
    /// quota): the call waited by it until its budget ran out.
    LearnedLimit,
    /// The calls ahead of it at the gate: the probe out after a closure, the pace the server
    /// asked for, or the quota all in flight.
    Queue,
    /// Another process, through the store the gates share.
    Fleet,
}

/// What a meter of `unit` counts, in words.
fn name(unit: Unit) -> &'static str {
    match unit {
        Unit::Requests => "requests",
        Unit::Tokens => "tokens",
        Unit::InputTokens => "input tokens",
        Unit::OutputTokens => "output tokens",
        _ => "units",
    }
}

impl fmt::Display for HeldBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeldBy::RetryAfter { status } => write!(f, "the Retry-After of a {status}"),
            HeldBy::SpentMeter { status, unit } => {
                write!(f, "a spent meter of {}, said by a {status}", name(*unit))
            }
            HeldBy::Guess { status } => write!(f, "a {status} that named no time"),
            HeldBy::TokenCost { unit } => {
                write!(
                    f,
                    "too few {} left for the call's declared cost",
                    name(*unit)
                )
            }
            HeldBy::LearnedLimit => f.write_str("the pace learned from the server's refusals"),
            HeldBy::Queue => f.write_str("the calls ahead of it at the gate"),
            HeldBy::Fleet => f.write_str("another process, through the shared store"),
        }
    }
}

/// What is kept of the last response a call had.
#[derive(Clone, Debug)]
struct Head {
    status: StatusCode,
    headers: HeaderMap,
    info: Option<RateLimitInfo>,
}

impl Throttled {
    pub(crate) fn new(key: Key, retry_after: Duration, held_by: HeldBy) -> Self {
        Throttled {
            key,
            retry_after,
            held_by,
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

    /// What holds the key's calls back: the server's instruction, a spent meter, a guessed
    /// pause, the call's declared token cost, or the calls ahead of it.
    pub fn held_by(&self) -> HeldBy {
        self.held_by
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
            "rate limited: {} is held for {:?} by {}, longer than this call may wait; retry after that",
            self.key, self.retry_after, self.held_by
        )?;
        match self.status() {
            Some(status) => write!(f, " (the last response was {status})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Throttled {}
