//! [`RateLimitInfo`]: what one response said, read by the table of readers in `headers/mod.rs`
//! and the user's own.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, StatusCode};
use smallvec::SmallVec;
use tokio::time::Instant;

use super::clock::ResponseClock;
use super::field::Fields;
use super::meter::{Meter, Unit};
use super::reader::{Found, ReadHeaders, Signals};
use super::{ANY_VENDOR, VENDORS, ietf, retry_after, x_ratelimit};

/// Everything a response said about the client's rate limits: the server's instruction to wait
/// ([`retry_after`](RateLimitInfo::retry_after)) and its quota meters
/// ([`meters`](RateLimitInfo::meters)).
///
/// Read with [`RateLimitInfo::from_headers`]; the layer attaches one to every response it
/// returns. Every format real servers send is read, and every ambiguous case has one answer:
///
/// - `Retry-After` as delay-seconds, a decimal (`1.5`), or an HTTP-date in any of its three
///   forms (here and in `Date`, `UTC` is read as `GMT`); `retry-after-ms`, preferred when
///   present, unless a second or more short of `Retry-After` (then two instructions that
///   disagree, and the larger holds). Zero, a past date, negative or garbage
///   values are no instruction; several values give the largest; overflow saturates at 2^31 s.
/// - the IETF `RateLimit` drafts 01 to 10 (split fields, the draft 07 dictionary, named policies
///   over several field lines), and `X-RateLimit-*` / `X-Rate-Limit-*`.
/// - a reset of 1,000,000,000 or more is an epoch timestamp (13 digits: milliseconds), read
///   against the response's `Date`; smaller values are countdowns from the receipt, shortened
///   only by the response's `Age` (a `Date` behind the receipt is resolution, transit or clock
///   skew, not age). A reset that has already passed is unknown, and so is the quota of its
///   window.
/// - duplicates that disagree give the most restrictive figure; a figure that is absent, empty,
///   negative, overflowing or not ASCII digits is `None`, never 0 and never a panic.
///
/// # Example
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::HeaderMap;
/// use tower_retry_after::RateLimitInfo;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("date", "Tue, 14 Nov 2023 22:13:20 GMT".parse().unwrap());
/// headers.insert("retry-after", "Tue, 14 Nov 2023 22:14:20 GMT".parse().unwrap());
/// headers.append("ratelimit-policy", r#""hour";q=1000;w=3600"#.parse().unwrap());
/// headers.append("ratelimit-policy", r#""day";q=5000;w=86400"#.parse().unwrap());
/// headers.insert("ratelimit", r#""day";r=100;t=36000"#.parse().unwrap());
///
/// // The client's clock is 5 s ahead: the date is still read as 60 s after `Date`.
/// let received = httpdate::parse_http_date("Tue, 14 Nov 2023 22:13:25 GMT").unwrap();
/// let info = RateLimitInfo::from_headers(&headers, received);
/// assert_eq!(info.retry_after(), Some(Duration::from_secs(60)));
///
/// let names: Vec<_> = info.meters().iter().map(|meter| meter.name()).collect();
/// assert_eq!(names, [Some("hour"), Some("day")]);
/// let day = info.binding_meter().unwrap();
/// assert_eq!(day.name(), Some("day"));
/// assert_eq!(day.remaining(), Some(100));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimitInfo {
    retry_after: Option<Duration>,
    meters: SmallVec<[Meter; 2]>,
    read_at: Instant,
    /// What the server's clock read when it wrote the response, if it said (read only where
    /// the response has rate-limit fields).
    server_date: Option<SystemTime>,
    /// What the response says of the limit it counts against, beyond its figures: rare, so
    /// boxed, to keep the reading small for the responses that say nothing of it.
    scope: Option<Box<Scope>>,
}

/// What a response says of the limit it counts against, beyond its figures.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Scope {
    /// The server's name for the limit the request counted against, where it keeps several.
    group: Option<Box<str>>,
    signals: Signals,
}

impl RateLimitInfo {
    /// Reads the rate-limit headers of a response received at `read_at` on tokio's monotonic
    /// clock, when the wall clock read `now`, knowing that the server's clock read at least
    /// `floor` at receipt, with the user's `readers` after the crate's.
    ///
    /// The caller reads both clocks once, when the response arrives (the layer, or
    /// [`from_headers`](Self::from_headers) at the moment it is called): every countdown is
    /// placed at `read_at`, however long after it the headers are read. `now` is the wall
    /// clock of receipt: without a `Date` header, HTTP-dates and epoch resets are measured
    /// against it.
    pub(crate) fn read(
        headers: &HeaderMap,
        now: SystemTime,
        read_at: Instant,
        floor: Option<SystemTime>,
        readers: &[Arc<dyn ReadHeaders>],
    ) -> Self {
        let fields = Fields::new(headers);
        if !fields.has_rate_limit_fields() && readers.is_empty() {
            return RateLimitInfo {
                retry_after: None,
                meters: SmallVec::new(),
                read_at,
                server_date: None,
                scope: None,
            };
        }
        let clock = ResponseClock::read(&fields, now).with_floor(floor);
        let mut found = Found {
            retry_after: retry_after::read(&fields, &clock),
            ..Found::default()
        };
        ietf::read(&fields, &clock, &mut found.readings);
        if let Some(reading) = x_ratelimit::read(&fields, &clock) {
            found.readings.push(reading);
        }
        if fields.carries_any(ANY_VENDOR) {
            for (mask, read) in VENDORS {
                if fields.carries_any(mask) {
                    read(&fields, &clock, &mut found);
                }
            }
        }
        for reader in readers {
            reader.read(headers, &clock, &mut found);
        }
        let mut meters = SmallVec::new();
        for reading in found.readings {
            if let Some(meter) = reading.into_meter(read_at) {
                meters.push(meter);
            }
        }
        RateLimitInfo {
            retry_after: found.retry_after,
            meters,
            read_at,
            server_date: clock.server_date(),
            scope: (found.group.is_some() || found.signals != Signals::default()).then(|| {
                Box::new(Scope {
                    group: found.group.map(Box::from),
                    signals: found.signals,
                })
            }),
        }
    }

    /// How long the server asked the client to wait, from receipt; `None` if it gave no usable
    /// instruction (absent, zero, a past date, or not a value `Retry-After` allows).
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// How long the server instructed the client to wait: the later of
    /// [`retry_after`](RateLimitInfo::retry_after) and the reset of every meter that said it
    /// is exhausted (the client never retries before any time the server named). `None` when
    /// the server named neither.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use http::HeaderMap;
    /// use tower_retry_after::RateLimitInfo;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("retry-after", "20".parse().unwrap());
    /// headers.insert("ratelimit", r#""default";r=0;t=40"#.parse().unwrap());
    /// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
    /// assert_eq!(info.instructed_wait(), Some(Duration::from_secs(40)));
    /// ```
    pub fn instructed_wait(&self) -> Option<Duration> {
        let exhausted_until = self
            .meters
            .iter()
            .filter(|meter| meter.is_exhausted())
            .filter_map(Meter::reset_in)
            .max();
        self.retry_after.max(exhausted_until)
    }

    /// Every quota the server reported, in the order: the IETF current window, the other IETF
    /// policies, the `X-RateLimit-*` family.
    pub fn meters(&self) -> &[Meter] {
        &self.meters
    }

    /// The quota closest to running out: a spent one if any (of those, the one that resets
    /// last), else the lowest remaining count among the meters of requests (counts of other
    /// units are not comparable with it), else among the rest. `None` when no meter says how
    /// much is left.
    pub fn binding_meter(&self) -> Option<&Meter> {
        self.meters
            .iter()
            .filter(|meter| meter.remaining().is_some())
            .min_by_key(|meter| {
                (
                    !meter.is_exhausted(),
                    meter.unit() != Unit::Requests,
                    meter.remaining(),
                    std::cmp::Reverse(meter.reset_in()),
                )
            })
    }

    /// Whether the response said nothing about rate limits.
    pub fn is_empty(&self) -> bool {
        self.retry_after.is_none() && self.meters.is_empty() && self.scope.is_none()
    }

    /// The server's name for the limit this request counted against, where it keeps several
    /// for one credential: GitHub's `x-ratelimit-resource` (`core`, `search`, `graphql`),
    /// Discord's `X-RateLimit-Bucket`. The layer gates later calls of the same route by that
    /// limit alone.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use http::HeaderMap;
    /// use tower_retry_after::RateLimitInfo;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-ratelimit-resource", "search".parse().unwrap());
    /// headers.insert("x-ratelimit-remaining", "29".parse().unwrap());
    /// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
    /// assert_eq!(info.limit_group(), Some("search"));
    /// assert_eq!(info.meters()[0].name(), Some("search"));
    /// ```
    pub fn limit_group(&self) -> Option<&str> {
        self.scope.as_ref()?.group.as_deref()
    }

    /// Whether the refusal holds every limit of the credential, not only the route's
    /// (Discord's `X-RateLimit-Global: true`, `X-RateLimit-Scope: global`).
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use http::HeaderMap;
    /// use tower_retry_after::RateLimitInfo;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-ratelimit-scope", "global".parse().unwrap());
    /// assert!(RateLimitInfo::from_headers(&headers, SystemTime::now()).is_global());
    /// ```
    pub fn is_global(&self) -> bool {
        self.signals().global
    }

    /// Whether a response with this `status` and these headers is a rate-limit refusal: any
    /// 429, and a 403 from a server that answers spent limits with 403 (GitHub, which proves
    /// itself with `x-ratelimit-resource`, or one a [`ReadHeaders`] vouches for) carrying a
    /// spent meter or a `Retry-After`. The default policy retries such a 403 as a 429.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use http::{HeaderMap, StatusCode};
    /// use tower_retry_after::RateLimitInfo;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-ratelimit-resource", "core".parse().unwrap());
    /// headers.insert("x-ratelimit-remaining", "0".parse().unwrap());
    /// headers.insert("x-ratelimit-reset", "600".parse().unwrap());
    /// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
    /// assert!(info.is_refusal(StatusCode::FORBIDDEN));
    /// assert!(!info.is_refusal(StatusCode::OK));
    /// ```
    pub fn is_refusal(&self, status: StatusCode) -> bool {
        match status {
            StatusCode::TOO_MANY_REQUESTS => true,
            StatusCode::FORBIDDEN => {
                self.signals().forbidden_is_refusal && self.instructed_wait().is_some()
            }
            _ => false,
        }
    }

    /// Whether the server refused for too many requests in flight rather than too many in a
    /// window (Stripe's `Stripe-Rate-Limited-Reason: global-concurrency`). Such a refusal asks
    /// for fewer requests at once, not for a pause: the layer does not hold the key's other
    /// calls for it, and the refused call retries after its own backoff.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use http::HeaderMap;
    /// use tower_retry_after::RateLimitInfo;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("stripe-rate-limited-reason", "global-concurrency".parse().unwrap());
    /// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
    /// assert!(info.is_concurrency_limit());
    /// assert_eq!(info.retry_after(), None);
    /// ```
    pub fn is_concurrency_limit(&self) -> bool {
        self.signals().concurrency
    }

    fn signals(&self) -> Signals {
        self.scope
            .as_ref()
            .map_or_else(Signals::default, |scope| scope.signals)
    }

    /// The response's receipt on the monotonic clock, from which every meter's reset is
    /// measured: the instant [`read`](Self::read) was given. Only the tests ask.
    #[cfg(test)]
    pub(crate) fn read_at(&self) -> Instant {
        self.read_at
    }

    /// What the server's clock read when it wrote the response, if it said.
    pub(crate) fn server_date(&self) -> Option<SystemTime> {
        self.server_date
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_countdown_is_placed_at_the_receipt_the_reading_is_given() {
        let mut headers = HeaderMap::new();
        headers.insert("ratelimit", r#""default";r=0;t=30"#.parse().unwrap());
        let (read_at, now) = (Instant::now(), SystemTime::now());
        let info = RateLimitInfo::read(&headers, now, read_at, None, &[]);
        assert_eq!(info.read_at(), read_at);
        let meter = &info.meters()[0];
        assert_eq!(meter.reset_in(), Some(Duration::from_secs(30)));
        assert_eq!(meter.reset_at(), Some(read_at + Duration::from_secs(30)));
    }
}
