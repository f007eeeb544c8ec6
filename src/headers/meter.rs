//! A meter: one quota the server counts the client against, as far as the server said.

use std::borrow::Cow;
use std::time::Duration;

use smallvec::SmallVec;
use tokio::time::Instant;

/// One quota the server reported: how many requests it allows per window, how many are left,
/// and when more arrive.
///
/// Every figure is `None` when the server did not say it. Unknown is never zero: a response
/// without meters says nothing about the quota, and only a server that said `remaining = 0`
/// makes a meter [exhausted](Meter::is_exhausted).
///
/// A countdown is frozen when it was read: [`reset_in`](Meter::reset_in) is the time left at
/// the response's receipt, already shortened by the response's age. For the time left now, ask
/// the key's gate: [`GateSnapshot::reset_in`](crate::GateSnapshot::reset_in) is aged to now.
///
/// # Example
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::HeaderMap;
/// use tower_retry_after::RateLimitInfo;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-ratelimit-limit", "5000".parse().unwrap());
/// headers.insert("x-ratelimit-remaining", "0".parse().unwrap());
/// headers.insert("x-ratelimit-reset", "60".parse().unwrap());
///
/// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
/// let meter = &info.meters()[0];
/// assert_eq!(meter.name(), None);
/// assert_eq!(meter.limit(), Some(5000));
/// assert_eq!(meter.remaining(), Some(0));
/// assert_eq!(meter.reset_in(), Some(Duration::from_secs(60)));
/// assert_eq!(meter.window(), None);
/// assert!(meter.is_exhausted());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meter {
    name: Option<Box<str>>,
    limit: Option<u64>,
    remaining: Option<u64>,
    reset_in: Option<Duration>,
    /// The second on the server's clock (since the Unix epoch) the reset names, where it was
    /// written as one: the window may end up to a second before it.
    reset_second: Option<u64>,
    window: Option<Duration>,
    unit: Unit,
    read_at: Instant,
}

/// What a meter counts. Most count requests; some APIs count tokens as well (OpenAI's
/// `x-ratelimit-*-tokens`, Anthropic's input and output tokens), each its own meter.
///
/// Only a meter of requests paces the calls: one call spends one of it. A meter of another
/// unit holds calls when the server says it is spent, or, for a call that declares what it
/// will spend ([`TokenCost`](crate::TokenCost)), when what it declares is more than is left.
///
/// # Example
///
/// ```
/// use std::time::SystemTime;
/// use http::HeaderMap;
/// use tower_retry_after::{RateLimitInfo, Unit};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-ratelimit-remaining-requests", "9999".parse().unwrap());
/// headers.insert("x-ratelimit-remaining-tokens", "0".parse().unwrap());
/// headers.insert("x-ratelimit-reset-tokens", "6m0s".parse().unwrap());
/// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
/// let units: Vec<_> = info.meters().iter().map(|meter| meter.unit()).collect();
/// assert_eq!(units, [Unit::Requests, Unit::Tokens]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unit {
    /// Requests: every call spends one.
    #[default]
    Requests,
    /// Tokens, input and output together (OpenAI).
    Tokens,
    /// Input tokens (Anthropic).
    InputTokens,
    /// Output tokens (Anthropic).
    OutputTokens,
    /// A unit the server did not name in a way the crate knows.
    Other,
}

impl Meter {
    /// The server's name for this quota (`RateLimit` drafts 08 and later name their policies);
    /// `None` for an unnamed one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// How many units the quota allows per window.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// How many units are left in the current window.
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// How long after the response's receipt the window resets. `None` when the server
    /// named no reset, or one that had already passed when the response was read (then the
    /// window it described is over, and [`remaining`](Meter::remaining) is `None` too).
    pub fn reset_in(&self) -> Option<Duration> {
        self.reset_in
    }

    /// How long a window of this quota lasts.
    pub fn window(&self) -> Option<Duration> {
        self.window
    }

    /// What the meter counts.
    pub fn unit(&self) -> Unit {
        self.unit
    }

    /// Whether the server said no units are left (`remaining = 0`).
    pub fn is_exhausted(&self) -> bool {
        self.remaining == Some(0)
    }

    /// The second on the server's clock (since the Unix epoch) the reset names, where it was
    /// written as one (an epoch second, a date): the window may end up to a second before it.
    pub(crate) fn reset_second(&self) -> Option<u64> {
        self.reset_second
    }

    /// When the window resets, on the monotonic clock: the receipt the reading was given
    /// (`read_at`), plus [`reset_in`](Meter::reset_in). The gate holds a spent window by it.
    pub(crate) fn reset_at(&self) -> Option<Instant> {
        self.reset_in
            .and_then(|reset_in| self.read_at.checked_add(reset_in))
    }
}

/// The readings of one response, held inline: a response describes one or two meters, and the
/// layer reads every response.
pub(crate) type Readings<'a> = SmallVec<[Reading<'a>; 2]>;

/// A meter while its headers are being read: figures not yet tied to a read instant, the name
/// still borrowed from the response where it can be.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading<'a> {
    pub(crate) name: Option<Cow<'a, str>>,
    pub(crate) limit: Option<u64>,
    pub(crate) remaining: Option<u64>,
    /// Time left at receipt. `Some(Duration::ZERO)`: the server named a reset that has passed.
    pub(crate) reset: Option<Duration>,
    /// The second on the server's clock the reset names, where it was written as one (an
    /// epoch second, a date).
    pub(crate) reset_second: Option<u64>,
    pub(crate) window: Option<Duration>,
    pub(crate) unit: Unit,
}

impl Reading<'_> {
    /// Folds in another reading of the same quota. Where they disagree the most restrictive
    /// figure wins (lowest limit and remaining, latest reset, longest window): the client never
    /// acts on the more generous of two claims. Unknown figures never replace known ones, and
    /// a unit named (a policy's `qu`) is the quota's, where the other reading names none.
    pub(crate) fn merge(&mut self, other: Self) {
        self.name = self.name.take().or(other.name);
        if self.unit == Unit::Requests {
            self.unit = other.unit;
        }
        self.limit = lowest(self.limit, other.limit);
        self.remaining = lowest(self.remaining, other.remaining);
        self.reset = self.reset.max(other.reset);
        self.reset_second = self.reset_second.max(other.reset_second);
        self.window = self.window.max(other.window);
    }

    /// The meter this reading describes, or `None` if it holds no figure at all.
    pub(crate) fn into_meter(self, read_at: Instant) -> Option<Meter> {
        let window_is_over = self.reset == Some(Duration::ZERO);
        let (remaining, reset_in) = if window_is_over {
            (None, None)
        } else {
            (self.remaining, self.reset)
        };
        if self.limit.is_none()
            && remaining.is_none()
            && reset_in.is_none()
            && self.window.is_none()
        {
            return None;
        }
        Some(Meter {
            name: self.name.map(Box::from),
            limit: self.limit,
            remaining,
            reset_in,
            reset_second: self.reset_second,
            window: self.window,
            unit: self.unit,
            read_at,
        })
    }
}

fn lowest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (known, None) | (None, known) => known,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(seconds: u64) -> Option<Duration> {
        Some(Duration::from_secs(seconds))
    }

    #[test]
    fn merge_keeps_the_most_restrictive_figures() {
        let mut reading = Reading {
            limit: Some(5000),
            remaining: Some(49),
            reset: secs(29),
            window: secs(60),
            ..Reading::default()
        };
        reading.merge(Reading {
            limit: Some(60),
            remaining: Some(50),
            reset: secs(30),
            window: secs(3600),
            ..Reading::default()
        });
        assert_eq!(reading.limit, Some(60));
        assert_eq!(reading.remaining, Some(49));
        assert_eq!(reading.reset, secs(30));
        assert_eq!(reading.window, secs(3600));
    }

    #[test]
    fn a_reset_that_names_a_second_in_either_reading_names_the_latest_merged() {
        let mut countdown = Reading {
            reset: secs(1),
            ..Reading::default()
        };
        countdown.merge(Reading {
            reset: secs(2),
            reset_second: Some(1_700_000_002),
            ..Reading::default()
        });
        countdown.merge(Reading {
            reset: secs(1),
            reset_second: Some(1_700_000_001),
            ..Reading::default()
        });
        assert_eq!(countdown.reset_second, Some(1_700_000_002));
        let meter = countdown.into_meter(Instant::now()).unwrap();
        assert_eq!(meter.reset_second(), Some(1_700_000_002));
        let mut plain = Reading {
            reset: secs(1),
            ..Reading::default()
        };
        plain.merge(Reading::default());
        assert_eq!(
            plain.into_meter(Instant::now()).unwrap().reset_second(),
            None
        );
    }

    #[test]
    fn merge_never_lets_unknown_erase_known() {
        let mut reading = Reading {
            limit: Some(10),
            remaining: Some(3),
            reset: secs(5),
            ..Reading::default()
        };
        reading.merge(Reading::default());
        assert_eq!(reading.limit, Some(10));
        assert_eq!(reading.remaining, Some(3));
        assert_eq!(reading.reset, secs(5));
        let mut empty = Reading::default();
        empty.merge(reading.clone());
        assert_eq!(empty, reading);
    }

    #[test]
    fn a_passed_reset_leaves_the_quota_unknown() {
        let meter = Reading {
            limit: Some(5000),
            remaining: Some(0),
            reset: Some(Duration::ZERO),
            ..Reading::default()
        }
        .into_meter(Instant::now())
        .unwrap();
        assert_eq!(meter.remaining(), None);
        assert_eq!(meter.reset_in(), None);
        assert!(!meter.is_exhausted());
        assert_eq!(meter.limit(), Some(5000));
    }

    #[test]
    fn a_reading_without_figures_is_no_meter() {
        let named_only = Reading {
            name: Some("hour".into()),
            ..Reading::default()
        };
        assert_eq!(named_only.into_meter(Instant::now()), None);
        let passed_only = Reading {
            remaining: Some(3),
            reset: Some(Duration::ZERO),
            ..Reading::default()
        };
        assert_eq!(passed_only.into_meter(Instant::now()), None);
    }

    #[test]
    fn only_a_said_zero_is_exhausted() {
        let read_at = Instant::now();
        let unknown = Reading {
            limit: Some(1),
            ..Reading::default()
        };
        assert!(!unknown.into_meter(read_at).unwrap().is_exhausted());
        let one_left = Reading {
            remaining: Some(1),
            ..Reading::default()
        };
        assert!(!one_left.into_meter(read_at).unwrap().is_exhausted());
        let zero = Reading {
            remaining: Some(0),
            ..Reading::default()
        };
        assert!(zero.into_meter(read_at).unwrap().is_exhausted());
    }
}
