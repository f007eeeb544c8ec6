//! What is read from each response, and what each ambiguous case means.
//!
//! | header | read as |
//! |---|---|
//! | `Retry-After` | delay-seconds; a non-negative decimal (`1.5`) as that duration; an HTTP-date in all three forms (IMF-fixdate, RFC 850, asctime), measured against the response's `Date` |
//! | `retry-after-ms` | milliseconds; preferred over `Retry-After` when it holds an instruction that can be the same one unrounded (short of it by less than the second whole seconds round by; a decimal or a Go duration is not rounded): otherwise the larger |
//! | `RateLimit-Limit`, `-Remaining`, `-Reset` | IETF drafts 01–06, including the 01–03 policy list `10, 10;w=1, 50;w=60` |
//! | `RateLimit-Policy` | bare-integer policies (drafts 04–07) and named ones (`"day";q=5000;w=86400`, drafts 08–10) |
//! | `RateLimit` | the draft 07 dictionary (`limit=, remaining=, reset=`) and the draft 08–10 named list (`"day";r=100;t=36000`), over several field lines |
//! | `X-RateLimit-*`, `X-Rate-Limit-*` | `-Limit`, `-Remaining` (a fraction rounds down), `-Used`, `-Reset` (number or HTTP-date), `-Reset-After` |
//! | `Date`, `Age` | the response's clock: every reset and date is measured against it |
//!
//! Vendors' own headers, read with no configuration (each in its own file under `src/headers/`;
//! `tests/vendor_vectors.rs` holds a case for every line of `tests/vectors/vendor-headers.txt`):
//!
//! | vendor | what is read |
//! |---|---|
//! | GitHub | `x-ratelimit-*` as above, the meter named after `x-ratelimit-resource`; each resource (`core`, `search`, `graphql`) a limit of its own for the routes that answered with it; a 403 with a spent meter or `Retry-After` is a refusal, retried on any method, where `x-ratelimit-resource` proves the server is GitHub (elsewhere: one line, below); a `Retry-After` written as a Go duration (`1m0s`) |
//! | GitLab | the draft 01–06 fields with an epoch `RateLimit-Reset`, `RateLimit-Name` naming the meter, `RateLimit-ResetTime` |
//! | Discord | `X-RateLimit-*` with `-Reset-After`; `X-RateLimit-Bucket` a limit of its own for the routes that answered with it; `X-RateLimit-Global: true` / `X-RateLimit-Scope: global` holds every route of the key |
//! | OpenAI, Azure OpenAI | `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`: two meters, resets as Go durations (`6m0s`, `12ms`, a bare `0`); `retry-after-ms`; `x-should-retry` |
//! | Anthropic | `anthropic-ratelimit-<meter>-{limit,remaining,reset}` for every meter (`requests`, `tokens`, `input-tokens`, `output-tokens`, …), resets as RFC 3339 instants read against `Date` |
//! | Shopify | `X-Shopify-Shop-Api-Call-Limit: 39/40` (used of size); its 429's decimal `Retry-After` |
//! | Reddit | `x-ratelimit-*` with a fractional remaining, and values joined by a proxy (the smaller) |
//! | Atlassian | `Beta-RateLimit` / `Beta-RateLimit-Policy` as draft 08; ISO 8601 resets (`2023-11-14T22:15Z`) |
//! | Zendesk | `zendesk-ratelimit-<endpoint>: total=; remaining=; resets=` as a named meter; `X-Rate-Limit`, `X-Rate-Limit-Remaining` and `ratelimit-reset` as the one account meter they split |
//! | Stripe | `Stripe-Should-Retry` (the policy's verdict, as `x-should-retry`); `Stripe-Rate-Limited-Reason: *-concurrency`: too many in flight, so the refused call backs off alone and nothing closes for the key's other calls (`RateLimitInfo::is_concurrency_limit`) |
//! | AWS | `x-amz-retry-after` (milliseconds); the longer of it and `Retry-After` stands |
//! | X (Twitter) | the endpoint's `x-rate-limit-*` as above, and the user's and the app's caps over 24 hours, `x-{user,app}-limit-24hour-{limit,remaining,reset}`, each a meter of its own (epoch resets against `Date`) |
//! | HubSpot | `X-HubSpot-RateLimit-Max` / `-Remaining` over `-Interval-Milliseconds` (the burst), `-Secondly` / `-Secondly-Remaining`, `-Daily` / `-Daily-Remaining`: three meters, none with a reset sent (a spent short window's length is taken as its reset) |
//! | Salesforce | `Sforce-Limit-Info: api-usage=18/5000` (used of limit, a rolling day), each member a meter named by its key; no reset, so a spent quota holds calls through a refusal's `Retry-After` |
//! | Cloudflare | draft 08 `Ratelimit` / `Ratelimit-Policy`, as above |
//!
//! - **Meters of tokens** (OpenAI, Anthropic) are meters of their own (`Unit`): they do not pace
//!   calls (one call is not one token), and hold calls once the server says one is spent, until
//!   its reset. A call that declares what it will spend (`TokenCost` as a request extension:
//!   `Request::post(url).extension(TokenCost::new(input, max_output))`) spends it at its gate
//!   against the meters the server last reported, and it stays spent until its answer, whatever
//!   count the server gives meanwhile, so calls in flight together never spend one count twice;
//!   one the meters cannot pay for waits for the reset instead of being refused.
//! - **Limits a server names** (GitHub's resource, Discord's bucket) refine the key: a route's
//!   later calls wait only at its own limit's gate, so a spent search quota does not hold the core
//!   API. The first answer on a route names it; at most 4,096 routes are remembered, so a server
//!   inventing names cannot grow them without bound.
//! - **A reader of your own**: anything else a server sends, [`RateLimitLayer::read_headers_with`](crate::RateLimitLayer::read_headers_with)
//!   takes a [`ReadHeaders`](crate::headers::ReadHeaders) (a closure will do) that adds meters, a wait, or says a 403 is a
//!   refusal:
//!   `.read_headers_with(|_: &http::HeaderMap, _: &_, found: &mut Found<'_>| found.forbidden_is_refusal())`.
//!   The [`headers`](crate::headers) module has the reader's interface, with an example.
//!
//! - **Several values** that disagree: the largest `Retry-After`; for meters the most restrictive
//!   figure (lowest limit and remaining, latest reset).
//! - **Epoch or countdown**: a reset of 1,000,000,000 or more is an epoch timestamp (13 digits:
//!   milliseconds) under any header name, read against `Date` so client clock skew does not matter.
//!   Smaller values are countdowns.
//! - **Age**: a countdown is measured from the receipt and loses only the response's `Age` (a
//!   cached response). A `Date` behind the receipt is not age: it is `Date`'s one-second
//!   resolution, the transit, or skew between the clocks, and subtracting it would retry early
//!   whenever the client's clock runs ahead. A reset that has already passed is unknown, and so
//!   is the quota of the window it described.
//! - **Absence is not zero**: a figure the server did not give is `None`; a meter is exhausted only
//!   when the server said `remaining = 0`.
//! - **Overflow** saturates at 2^31 s (RFC 9111's value); the cap then applies.
//! - Structured-field syntax errors, and values the drafts forbid (negative, fractional, zero
//!   window, two bare policies with one quota), make that field absent.
//! - Not read (they read as nothing, never as a wrong number): a JavaScript `Date` string as a
//!   reset, Akamai's `X-RateLimit-Next`, and a limit a server states only in the body (GitHub's secondary limit without `Retry-After`: a layer reading headers
//!   never sees the body).
//!
//! Every line of `tests/vectors/ratelimit-headers.txt` (vectors gathered from real servers and the
//! IETF drafts) is a test case in `tests/vectors.rs`.
//!
//! # Reading a response
//!
//! What the layer read rides on every response it returns, as a
//! [`RateLimitInfo`](crate::RateLimitInfo); [`RateLimitInfo::from_headers`](crate::RateLimitInfo::from_headers)
//! reads any headers the same way:
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use http::HeaderMap;
//! use tower_retry_after::RateLimitInfo;
//!
//! let mut headers = HeaderMap::new();
//! headers.insert("retry-after", "30".parse().unwrap());
//! headers.insert("ratelimit-policy", r#""default";q=100;w=60"#.parse().unwrap());
//! headers.insert("ratelimit", r#""default";r=0;t=30"#.parse().unwrap());
//!
//! let info = RateLimitInfo::from_headers(&headers, SystemTime::now());
//! assert_eq!(info.retry_after(), Some(Duration::from_secs(30)));
//! let meter = info.binding_meter().unwrap();     // the quota closest to running out
//! assert_eq!(meter.limit(), Some(100));
//! assert_eq!(meter.window(), Some(Duration::from_secs(60)));
//! assert!(meter.is_exhausted());                  // only when the server said remaining = 0
//! ```
//!
//! Every time a reading gives is a `Duration` from the response's receipt, its `now` the wall
//! clock then: a response read after it arrived is read with the time it arrived. For the time
//! left now, a key's gate ages its quota: [`Gates::snapshot`](crate::Gates::snapshot).
//!
//! Beside `RateLimitInfo`, each response carries a [`CallCost`](crate::CallCost): `attempts()`
//! (the requests the call sent) and `waited()` (the time it waited, at the gate and asleep); a
//! `Throttled` error has it as `cost()`.
