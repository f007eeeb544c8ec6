//! What is retried, how long a wait is, and how a call ends.
//!
//! | outcome | behaviour | why |
//! |---|---|---|
//! | 429 | waited out and retried, on **any** method | a rate limiter rejects before the application runs: nothing executed |
//! | 408, 500, 502, 503, 504 | retried only if the request is idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE, or an `Idempotency-Key`) | the server may have acted on it |
//! | 501, 505, 511, other 5xx, other 4xx, 2xx, 3xx | returned | |
//! | transport error while connecting | retried on any method (under reqwest, which may have followed a redirect first, only if idempotent) | nothing was sent |
//! | other transport error | retried only if idempotent | it may have run |
//! | `x-should-retry: true` / `false` | the server's verdict overrides the table | |
//!
//! That table is [`StatusPolicy`](crate::policy::StatusPolicy), the default policy; overrides
//! merge over it (`StatusPolicy::new().on(status, Behaviour)`), and a policy of your own sees
//! each [`Attempt`](crate::policy::Attempt).
//!
//! - **The server's wait is never shortened.** `Retry-After` (or the reset of a meter that said
//!   `remaining = 0`) is waited in full, plus a small additive spread (a tenth of it, at most
//!   1 s). Retrying sooner is retrying inside the window the server named.
//! - **No instruction, a guess**: 500 ms · 2^n, at most 20 s, × U[0.5, 1]. `Retry-After: 0`, a
//!   past date or garbage are no instruction: honoured literally they are a burst against a
//!   limiter that asked for a pause.
//! - **The cap bounds a wait, not what is remembered.** An instruction above `retry_after_cap`
//!   (60 s) is returned at once, not waited and not shortened; the key's gate remembers it until it
//!   passes, and while more than the cap is left of it every call on the key (and on the limits its
//!   routes named) fails at once with [`Throttled`](crate::Throttled): the time left, what set it
//!   (`held_by()`: the status and `Retry-After`, or the spent meter), and no request sent. The same
//!   for a spent window whose reset lies beyond the cap: an hourly or daily quota at zero is never
//!   walked into, nor slept for while more than the cap is left. Blocking the caller's next call for an hour is wrong,
//!   and so is sending it; failing fast lets the caller checkpoint and come back. Beyond
//!   `retry_after_horizon` (two days) an instruction is absurd or hostile (`Retry-After:
//!   2147483647`): returned at once and not remembered, so no server can lock a key for years.
//! - **A budget per call.** All waits of a call (at the gate and asleep) add up to at most
//!   `max_wait`; a wait that does not fit ends the call with the last outcome, response or
//!   transport error. A call that gave up after it began to wait (a gate that closed longer
//!   meanwhile, a probe or pace ahead of it) ends with a `Throttled` error; if it had a
//!   response, `Throttled` carries its status, headers and reading, but not its body.
//! - **A `Timeout` goes outside the layer** (above it in `ServiceBuilder`), where it bounds the
//!   whole call, waits included: whichever is shorter of it and `max_wait` decides, and a
//!   timeout below `max_wait` ends a waiting call with `Elapsed` instead of the last response,
//!   so set it above `max_wait` (or `max_wait` below it). Inside the layer a `Timeout` bounds
//!   each attempt and none of the waits: a 2 s timeout there can make a call of many seconds.
//! - **A `ConcurrencyLimit` goes inside the layer** (below it), where it bounds the requests
//!   out: the layer gives its permit back for each wait. Outside, a call holds its permit
//!   through every wait, so the calls of other keys queue behind a key's `Retry-After`.
//! - **A waiting call holds no connection.** When a call begins to wait, the response it will
//!   retry keeps only its head: its body is dropped, so a thousand waiting calls do not hold a
//!   thousand sockets (over hyper-util, an unread body pins its connection).
//! - **A body that cannot be replayed is sent once.** Bodies in memory replay (`Full`, `Empty`,
//!   `String`, `Bytes`, `Vec<u8>`); streams and non-empty boxed bodies do not. A body type that
//!   is neither (axum's `Body`) does not compile with the default policy: the recipes are at
//!   [`ReplayBody`](crate::policy::ReplayBody).
//!
//! # Was it rate limited?
//!
//! Being rate limited reaches a caller four ways: (1) `Ok(response)` with a 429 (or a 403
//! that [`RateLimitInfo::is_refusal`](crate::RateLimitInfo::is_refusal) marks as one),
//! returned when the layer will not wait (over `retry_after_cap`, out of budget or retries,
//! or a body it cannot replay); (2) `Err` holding `Throttled`, a call declined at its key's
//! gate, nothing sent; (3) `Err(Elapsed)` from a `Timeout` outside the layer; (4) a transport
//! error. [`RateLimitedExt::rate_limited`](crate::RateLimitedExt::rate_limited) reads the
//! result of a tower stack (and, with the `reqwest` feature, of a reqwest-middleware client)
//! as `Some(RateLimited)` for the first two, with `retry_after()` (the wait the refusal names,
//! or the time the gate has left), `status()`, `held_by()` and `sent()`, and `None` otherwise:
//!
//! ```
//! use std::time::Duration;
//! use tower::{Service, ServiceBuilder, ServiceExt};
//! use tower_retry_after::{BoxError, RateLimitLayer, RateLimitedExt};
//!
//! /// What a job does after one call.
//! enum Next {
//!     Done(http::StatusCode),
//!     ComeBackAfter(Option<Duration>), // `None`: the server named no time
//!     Failed(BoxError),
//! }
//!
//! fn next<B>(result: Result<http::Response<B>, BoxError>) -> Next {
//!     match result.rate_limited() {
//!         // (1) a refusal returned, (2) `Throttled`: one arm.
//!         Some(limited) => Next::ComeBackAfter(limited.retry_after()),
//!         None => match result {
//!             Ok(response) => Next::Done(response.status()),
//!             // (3) `Elapsed`, (4) a transport error: not rate limited.
//!             Err(error) => Next::Failed(error),
//!         },
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! // A stand-in for the API, refusing every call for an hour.
//! let api = tower::service_fn(|_request: http::Request<String>| async {
//!     http::Response::builder().status(429).header("retry-after", "3600").body(String::new())
//! });
//! let mut client = ServiceBuilder::new()
//!     .timeout(Duration::from_secs(300))
//!     .layer(RateLimitLayer::new())
//!     .service(api);
//! let hour = Some(Duration::from_secs(3600));
//!
//! // (1) The 429 comes back at once: an hour is over the cap.
//! let request = http::Request::get("https://api.test/items").body(String::new())?;
//! let result = client.ready().await?.call(request).await;
//! assert!(matches!(next(result), Next::ComeBackAfter(wait) if wait == hour));
//!
//! // (2) The next call on the key is declined at its gate, and sends nothing.
//! let request = http::Request::get("https://api.test/items").body(String::new())?;
//! let result = client.ready().await?.call(request).await;
//! assert!(matches!(next(result), Next::ComeBackAfter(Some(_))));
//!
//! // (3) An outer timeout's `Elapsed` is not a rate limit answer.
//! let elapsed = Err::<http::Response<String>, BoxError>(tower::timeout::error::Elapsed::new().into());
//! assert!(matches!(next(elapsed), Next::Failed(_)));
//! # Ok(())
//! # }
//! ```
//!
//! `Elapsed` reads `None` on purpose: it says only that the call took longer than the timeout,
//! which a slow or hung server does as well as a wait, and it names no time. With the timeout
//! above `max_wait` plus the attempts' own time, the layer ends every rate-limited call itself
//! first, with (1) or (2); below it, a timeout may cut a wait, and the key's gate still says
//! so (`gates.snapshot(&key)`, `closed_for`: see [`gate`](super::gate)). Through reqwest, the
//! same call is `result.rate_limited()` on a `reqwest_middleware::Result<reqwest::Response>`.
