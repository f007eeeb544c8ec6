//! How the layer compares with what else you might use for a rate-limited client.
//!
//! From each project's source and documentation as of November 2026; "no" means we found
//! nothing that does it.
//!
//! | | reads `Retry-After` | reads quota meters | 429 on POST | 5xx on POST | a server wait too long | one wait for all calls to a host | paces before the limit |
//! |---|---|---|---|---|---|---|---|
//! | **tower-retry-after** | seconds, decimals, the three HTTP-date forms, `retry-after-ms` | IETF drafts 01–10, `X-RateLimit-*` | retried (the limiter ran nothing) | not retried, unless the server sends `x-should-retry: true` | over the cap: returned at once, never shortened; remembered, later calls fail fast while more than the cap is left | yes, per key | yes: reported quota and policy rate |
//! | `tower::retry` (0.5) | no (your `Policy` decides) | no | your `Policy` | your `Policy` | — | no: each request its own | no |
//! | `reqwest-retry` | no | no | retried | retried (no method check) | — | no | no |
//! | Python `urllib3` `Retry` (2.x) | seconds, HTTP-date (413/429/503) | no | not retried (POST not allowed) | not retried | waited in full up to 2.6.2; 2.6.3 clamps to `retry_after_max` (6 h) | no | no |
//! | Go `go-retryablehttp` | seconds, RFC 1123 date (429/503) | no | retried | retried (all but 501) | waited in full | no | no |
//! | npm `got` | seconds, HTTP-date | no | not retried | not retried | over `maxRetryAfter`: gives up | no | no |
//! | npm `axios-retry` | seconds, date | no | not retried | not retried | gives up if it cannot fit the request timeout | no | no |
//! | `@octokit/plugin-throttling` | seconds (a date falls back to 60 s) | `x-ratelimit-remaining: 0` waits to the reset | your callback | — | your callback | no | fixed pacing per route class |
//!
//! Jitter differs too: `tower::retry`'s `ExponentialBackoff` and `reqwest-retry` (full jitter by
//! default) randomise computed backoff; `axios-retry`'s exponential mode adds 0–20 % on top of the
//! server's wait. This layer never randomises a server's wait below it: it adds at most a tenth
//! (1 s at most) so that callers released together do not arrive together.
//!
//! # Example
//!
//! This crate's row of the table, in code: 429 is retried on any method, POST included; a 502
//! only where the request is idempotent.
//!
//! ```
//! use http::StatusCode;
//! use tower_retry_after::policy::{Behaviour, StatusPolicy};
//!
//! let table = StatusPolicy::new();
//! assert_eq!(table.behaviour(StatusCode::TOO_MANY_REQUESTS), Behaviour::RateLimited);
//! assert_eq!(table.behaviour(StatusCode::BAD_GATEWAY), Behaviour::RetryIfIdempotent);
//! ```
