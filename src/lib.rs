//! A Tower layer for HTTP clients that are rate limited by the servers they call.
//!
//! The layer reads what a server says about its limits, waits exactly as long as the server
//! asked (never less), holds one wait per upstream instead of one per request, and retries only
//! what is safe to retry.
//!
//! This release holds the foundation: [`RateLimitInfo`], which reads every rate-limit signal a
//! real server sends (`Retry-After` in all its forms, `retry-after-ms`, the IETF `RateLimit`
//! drafts 01 to 10, the de-facto `X-RateLimit-*` family) against the response's own `Date` and
//! `Age`.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use http::HeaderMap;
//! use tower_retry_after::RateLimitInfo;
//!
//! let mut headers = HeaderMap::new();
//! headers.insert("retry-after", "30".parse().unwrap());
//! headers.insert("ratelimit", r#""default";r=0;t=30"#.parse().unwrap());
//! headers.insert("ratelimit-policy", r#""default";q=100;w=60"#.parse().unwrap());
//!
//! let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
//! assert_eq!(info.retry_after(), Some(Duration::from_secs(30)));
//! let meter = info.binding_meter().unwrap();
//! assert_eq!(meter.name(), Some("default"));
//! assert_eq!(meter.limit(), Some(100));
//! assert!(meter.is_exhausted());
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs, unreachable_pub)]

mod headers;

pub use headers::{Meter, RateLimitInfo};

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
