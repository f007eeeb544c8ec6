//! A Tower layer for HTTP clients that are rate limited by the servers they call.
//!
//! [`RateLimitLayer`] wraps any `tower::Service<http::Request<B>>` (a hyper-util client above
//! all). For every call it:
//!
//! 1. sends a copy of the request, keeping the original for a retry;
//! 2. reads the response's rate-limit headers (`Retry-After` in all its forms,
//!    `retry-after-ms`, the IETF `RateLimit` drafts 01 to 10, `X-RateLimit-*`) against the
//!    response's own `Date` and `Age`, and attaches them as a [`RateLimitInfo`];
//! 3. asks its [`Policy`](policy::Policy) what the outcome means: return it, retry after a
//!    wait, or rate limited;
//! 4. waits, within the call's budget, then tries again.
//!
//! The response it returns carries the last [`RateLimitInfo`] and what the call cost
//! ([`CallCost`]: the requests sent, the time waited). Calls are gated per [`Key`] (the
//! origin, unless a key function names another limit), and [`Gates`] read any key's state.
//! Whichever way a call ends, [`RateLimitedExt::rate_limited`] says whether it was rate
//! limited and for how long: a refusal returned, or [`Throttled`], read alike.
//!
//! The [`guide`] says what the layer does with a call and why, a page a concept: what is
//! retried and how long a wait is ([`guide::retries`]), what is read ([`guide::reading`]), the
//! gate ([`guide::gate`]), learning ([`guide::learning`]), the fleet ([`guide::fleet`]) and
//! every setting ([`guide::settings`]). The rules in short, each with its reason:
//!
//! - **A server's instruction is never shortened.** `Retry-After` (or the reset of a meter
//!   that said zero) is waited in full, plus an additive spread. Retrying sooner is retrying
//!   inside the window the server named: a second refusal by construction.
//! - **No instruction, a guess**: exponential backoff (500 ms · 2^n, at most 20 s) with
//!   multiplicative jitter and a floor. `Retry-After: 0` is no instruction: honoured literally
//!   it is a burst against a limiter that asked for a pause.
//! - **The cap bounds a wait, not what is remembered**: an instruction above
//!   `retry_after_cap` (60 s) is not waited and not shortened; the response goes back to the
//!   caller at once, and the key's gate remembers it: while more than the cap is left of it,
//!   every call on the key fails fast with [`Throttled`] (the time left, and what set it),
//!   sending nothing (with the cap or less left, a call waits the rest, as it would any wait
//!   within the cap). The same for a spent window whose reset lies beyond the cap (an hourly
//!   or daily quota at zero).
//!   Beyond `retry_after_horizon` (two days) an instruction is absurd or hostile: returned at
//!   once, and not remembered.
//! - **Budget per call, drop rather than clamp**: all waits of a call add up to at most
//!   `max_wait` (120 s); a wait that does not fit ends the call with the last outcome. A
//!   waiting call keeps only the head of the response it will retry: it holds no connection.
//! - **What is retried** ([`StatusPolicy`](policy::StatusPolicy)): 429 on any method (a
//!   limiter rejects before the application runs, so nothing can run twice); 408, 500, 502,
//!   503, 504 and mid-flight transport errors only for idempotent requests; connect errors
//!   (nothing sent) on any method (under reqwest, which may have followed a redirect first,
//!   only for idempotent ones). Overrides merge over that table.
//! - **A body that cannot be replayed is sent once**, never retried.
//!
//! With the `reqwest` feature, [`RateLimitLayer::middleware`] makes the same layer a
//! `reqwest_middleware::Middleware` for a reqwest client: see the [`reqwest`] module.
//!
//! Two interfaces are for extending the layer rather than using it: [`store`], where several
//! processes' gates share what servers say (a store to pick, or one of your own), and
//! [`headers`], for a reader of a server's own rate-limit headers.
//!
//! Every wait, taken or declined, emits a `tracing` event (target `tower_retry_after`) with the
//! key, the reason (instructed or guessed), the wait, the attempt and whether it will retry.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use tower::{Service, ServiceBuilder, ServiceExt};
//! use tower_retry_after::{RateLimitInfo, RateLimitLayer};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower::BoxError> {
//! let mut client = ServiceBuilder::new()
//!     .layer(RateLimitLayer::new().retry_after_cap(Duration::from_secs(30)))
//!     .service_fn(|_request: http::Request<String>| async {
//!         let response = http::Response::builder()
//!             .header("ratelimit-policy", r#""default";q=100;w=60"#)
//!             .header("ratelimit", r#""default";r=99;t=60"#)
//!             .body(String::new())?;
//!         Ok::<_, http::Error>(response)
//!     });
//!
//! let request = http::Request::post("http://api.test/items").body("{}".to_owned())?;
//! let response = client.ready().await?.call(request).await?;
//! let info = response.extensions().get::<RateLimitInfo>().unwrap();
//! assert_eq!(info.binding_meter().unwrap().remaining(), Some(99));
//! # Ok(())
//! # }
//! ```
//!
// Built without the feature, the docs link where it is documented: docs.rs, all features on.
#![cfg_attr(
    feature = "reqwest",
    doc = "[`RateLimitLayer::middleware`]: RateLimitLayer::middleware",
    doc = "[`reqwest`]: mod@crate::reqwest"
)]
#![cfg_attr(
    not(feature = "reqwest"),
    doc = "[`RateLimitLayer::middleware`]: https://docs.rs/tower-retry-after/latest/tower_retry_after/struct.RateLimitLayer.html#method.middleware",
    doc = "[`reqwest`]: https://docs.rs/tower-retry-after/latest/tower_retry_after/reqwest/index.html"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs, unreachable_pub)]

mod backoff;
mod budget;
mod config;
mod cost;
mod events;
mod future;
mod gate;
pub mod guide;
pub mod headers;
mod jitter;
mod key;
mod layer;
mod notice;
pub mod policy;
mod rate_limited;
mod receipt;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod reqwest;
mod service;
mod settings;
pub mod store;
mod telemetry;
mod throttled;
mod tokens;

pub use backoff::Backoff;
pub use cost::CallCost;
pub use future::ResponseFuture;
pub use gate::{GateSnapshot, Gates};
pub use headers::info::RateLimitInfo;
pub use headers::meter::{Meter, Unit};
pub use key::{InvalidOrigin, Key};
pub use layer::RateLimitLayer;
pub use notice::Notice;
pub use rate_limited::{RateLimited, RateLimitedExt};
pub use service::RateLimit;
pub use throttled::{HeldBy, Throttled};
pub use tokens::TokenCost;

/// The error type of the layer, and of what a policy sees: any error, boxed (tower's
/// convention, the same type as `tower::BoxError`).
///
/// A [`Throttled`] reaches the caller as one: [`RateLimitedExt::rate_limited`] reads a
/// refusal out of it, as `downcast_ref::<Throttled>()` does.
///
/// # Example
///
/// ```
/// use tower_retry_after::{BoxError, Throttled};
///
/// let error: BoxError = "connection reset".into();
/// assert!(error.downcast_ref::<Throttled>().is_none());
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the fuzz crate checks beyond the public API; not part of the API.
#[cfg(feature = "__fuzzing")]
#[doc(hidden)]
pub mod __fuzzing {
    /// Panics unless the hand-written structured-field parser reads `field` exactly as `sfv`.
    pub fn assert_structured_matches_sfv(field: &str) {
        crate::headers::assert_structured_matches_sfv(field);
    }
}

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
