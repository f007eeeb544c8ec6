//! A reading whose receipt is the moment it is made: [`RateLimitInfo::from_headers`].
//!
//! The headers module is pure, and its readings take the time of receipt from their caller
//! (`RateLimitInfo::read`). This is the one caller that reads the monotonic clock for the
//! user, kept here so that nothing under `headers` reads a clock.

use std::time::SystemTime;

use http::HeaderMap;
use tokio::time::Instant;

use crate::headers::RateLimitInfo;

impl RateLimitInfo {
    /// Reads the rate-limit headers of a response received at `now`.
    ///
    /// `now` is the wall-clock time of receipt: without a `Date` header, HTTP-dates and epoch
    /// resets are measured against it. Every time the reading gives is a `Duration` from
    /// receipt ([`retry_after`](Self::retry_after), each [`Meter::reset_in`](crate::Meter::reset_in)),
    /// so a response read after it arrived is read with the time it arrived as `now`, and its
    /// countdowns are the ones it carried. For a key's quota as it stands now, aged since,
    /// ask its gate: [`Gates::snapshot`](crate::Gates::snapshot).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use http::HeaderMap;
    /// use tower_retry_after::RateLimitInfo;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-ratelimit-remaining", "0".parse().unwrap());
    /// headers.insert("x-ratelimit-reset", "60".parse().unwrap());
    ///
    /// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
    /// assert_eq!(info.meters()[0].reset_in(), Some(Duration::from_secs(60)));
    /// ```
    pub fn from_headers(headers: &HeaderMap, now: SystemTime) -> Self {
        // The receipt on the monotonic clock is the moment of this call: every countdown is
        // placed there (see `read`).
        RateLimitInfo::read(headers, now, Instant::now(), None, &[])
    }
}
