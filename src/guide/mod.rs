//! The guide: what the layer does with a call, and why each rule is as it is, a page a concept.
//! The README's quick start puts the layer on a client; these pages say what it then does.
//!
//! One call, end to end:
//!
//! 1. **Key.** The call counts against a [`Key`](crate::Key): its origin (scheme and authority)
//!    unless a key function names another limit (a credential, a tenant).
//! 2. **Gate.** If the server has said the key must pause (a 429's `Retry-After`, or a meter
//!    that said `remaining = 0` with a reset), the call waits it out before sending, if its
//!    budget allows; otherwise it fails fast with [`Throttled`](crate::Throttled) and sends
//!    nothing.
//! 3. **Send** a copy of the request; the original is kept for a retry.
//! 4. **Read** `Retry-After`, the `RateLimit` drafts, `X-RateLimit-*` and the vendors' own
//!    headers, against the response's `Date` and `Age`; update the key's gate; attach a
//!    [`RateLimitInfo`](crate::RateLimitInfo) to the response.
//! 5. **Classify** with the [`Policy`](crate::policy::Policy): return it, retry it after a
//!    guess, or rate limited.
//! 6. **Wait**, within the call's budget, then go to 2. Otherwise hand the last response to
//!    the caller, with what the call cost ([`CallCost`](crate::CallCost)).
//!
//! | page | what it says |
//! |---|---|
//! | [`retries`] | what is retried and on which methods, how long a wait is, the budget, the cap and long windows, where a `Timeout` goes, whether a call was rate limited |
//! | [`reading`] | every header read, each vendor's, and what each ambiguous case means; reading a response |
//! | [`gate`] | one gate per upstream: no herd when it opens, a known quota not overspent, nothing that jams it, keys, reading a key's state |
//! | [`learning`] | not arriving at the wall: the slow start, limits learned where the server publishes none, the server's clock |
//! | [`fleet`] | processes sharing one credential, with gates on a store (Redis) |
//! | [`operating`] | what an operator sees: events and their levels, the hook, metrics, each key's state, the mistakes warned of |
//! | [`settings`] | every setter, its default, and how the cap, the budget and the horizon follow each other |
//! | [`compared`] | what other retry libraries (tower's, reqwest's, urllib3's, Go's, npm's, octokit's) do in the same cases |
//! | [`testing`] | how the crate is tested (end to end, faults, fuzzing, mutation testing) and measured |
//!
//! The measurements (the demo and its simulation, the fleet, the cost of a call) are in
//! `BENCHMARKS.md`.
//!
//! # Example
//!
//! A 429 waited out and retried, on a paused clock (a stand-in service for the API):
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tower::{Service, ServiceBuilder, ServiceExt};
//! use tower_retry_after::{CallCost, RateLimitLayer};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), tower::BoxError> {
//! // Refuses the first request for two seconds, then answers.
//! let seen = Arc::new(AtomicUsize::new(0));
//! let api = tower::service_fn(move |_: http::Request<String>| {
//!     let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
//!     let response = match first {
//!         true => http::Response::builder().status(429).header("retry-after", "2"),
//!         false => http::Response::builder(),
//!     };
//!     async move { response.body(String::new()) }
//! });
//! let mut client = ServiceBuilder::new().layer(RateLimitLayer::new()).service(api);
//!
//! let request = http::Request::post("https://api.test/orders").body("{}".to_owned())?;
//! let response = client.ready().await?.call(request).await?;
//! let cost = response.extensions().get::<CallCost>().unwrap();
//! assert_eq!((response.status().as_u16(), cost.attempts()), (200, 2));
//! assert!(cost.waited() >= Duration::from_secs(2), "never sooner than the server said");
//! # Ok(())
//! # }
//! ```

pub mod compared;
pub mod fleet;
pub mod gate;
pub mod learning;
pub mod operating;
pub mod reading;
pub mod retries;
pub mod settings;
pub mod testing;
