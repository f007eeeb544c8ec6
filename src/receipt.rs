//! A reading whose receipt is the moment it is made: [`RateLimitInfo::from_headers`].
//!
//! The headers module is pure, and its readings take the time of receipt from their caller
//! ([`RateLimitInfo::from_headers_at`]). This is the one caller that reads the monotonic clock
//! for the user, kept here so that nothing under `headers` reads a clock.

use std::time::SystemTime;

use http::HeaderMap;
use tokio::time::Instant;

use crate::headers::RateLimitInfo;

impl RateLimitInfo {
    /// Reads the rate-limit headers of a response received at `now`.
    ///
    /// `now` is the wall-clock time of receipt: without a `Date` header, HTTP-dates and epoch
    /// resets are measured against it. The receipt on the monotonic clock is the moment of this
    /// call: it reads `tokio::time::Instant::now()` and places every countdown there, as
    /// [`from_headers_at`](Self::from_headers_at) does with the instant it is given. Read a
    /// response as it arrives, or take both clocks then and use `from_headers_at`.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use http::HeaderMap;
    /// use tokio::time::Instant;
    /// use tower_retry_after::RateLimitInfo;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-ratelimit-remaining", "0".parse().unwrap());
    /// headers.insert("x-ratelimit-reset", "60".parse().unwrap());
    ///
    /// let called = Instant::now();
    /// let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
    /// assert!(info.read_at() >= called);
    /// assert_eq!(info.meters()[0].reset_in(), Some(Duration::from_secs(60)));
    /// ```
    pub fn from_headers(headers: &HeaderMap, now: SystemTime) -> Self {
        RateLimitInfo::from_headers_at(headers, now, Instant::now())
    }
}
