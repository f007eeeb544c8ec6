//! Middleware that is this layer for a reqwest client, through `reqwest-middleware` (feature
//! `reqwest`).
//!
//! [`RateLimitLayer::middleware`] makes a [`RateLimitMiddleware`] from a layer: the same
//! engine, key, gates, policy, budgets and settings as the services the layer makes, so one
//! configuration serves a hyper stack and a reqwest client, and the two share their gates (a
//! 429 seen by either holds the key's calls in both). Each call runs the layer's own
//! [`ResponseFuture`] over the rest of the middleware chain: every
//! attempt is one `Next::run`.
//!
//! What a reqwest user gets:
//!
//! - The table of [`guide::retries`](crate::guide::retries): 429 waited out and retried on
//!   any method, 5xx retried only for idempotent requests. But reqwest follows redirects below
//!   the middleware, so what comes back may be a redirect's answer, after the server ran the
//!   request sent. A response for another resource than the one sent (Post/Redirect/Get's
//!   303 to `/orders/1`, then a 429 of the GET) is returned, not retried, unless the request
//!   is idempotent. reqwest keeps no record of its hops, so a redirect back to the URL sent
//!   (`POST /form` answered `303 Location: /form`) cannot be told from the request's own
//!   answer: a client that sends non-idempotent requests to a server that answers them with
//!   redirects should follow none (`reqwest::redirect::Policy::none()`). And since reqwest
//!   tells a later hop's connect error under the first URL, a connect error is not known to
//!   have sent nothing: it is retried only for an idempotent request (an `Idempotency-Key`
//!   makes a POST one).
//! - A request reqwest can clone (`reqwest::Request::try_clone`: a body in memory) is
//!   retried; a streaming body is sent once.
//! - [`RateLimitInfo`](crate::RateLimitInfo) and [`CallCost`](crate::CallCost) in the
//!   `reqwest::Response`'s `extensions()`.
//! - A call the layer gives up on fails with `reqwest_middleware::Error::Middleware` holding a
//!   [`Throttled`]: [`throttled`] finds it. The chain's own errors come back as they were.
//! - Whether a call was rate limited, and for how long, from its result:
//!   [`rate_limited`](RateLimitedExt::rate_limited) reads a refusal returned and a
//!   [`Throttled`] alike.
//! - The chain's `Extensions`: each attempt starts from the caller's, and the caller gets back
//!   those of the attempt whose response it gets.
//! - A [`TokenCost`](crate::TokenCost) declared with reqwest-middleware's
//!   `RequestBuilder::with_extension` is spent at the key's gate, as for a hyper stack.
//! - A [`key`](crate::RateLimitLayer::key) function sees the request as the middleware gets
//!   it: reqwest adds a client's `default_headers` after the middleware has run, so a key read
//!   from a header (`Key::credential` of an `authorization`) needs that header set on each
//!   request (`RequestBuilder::header`, or a middleware before this one); one left to
//!   `default_headers` is not there to read, and every token shares the origin's gate.
//! - reqwest's own `timeout` bounds each request sent, not the call: for a bound on the whole
//!   call, waits included, wrap it in `tokio::time::timeout` (above `max_wait`, as for a
//!   `Timeout` outside a tower stack).
//!
//! # With `reqwest-retry` and `reqwest-tracing`
//!
//! This middleware already retries what `reqwest-retry` would, and more safely: it waits out a
//! `Retry-After`, which `reqwest-retry` never reads, and retries a 5xx only when the request is
//! idempotent. Where `reqwest-retry` stays, attach it **before** this middleware (outside):
//! then it sees only what this middleware returns, and a retry of its own goes through the
//! key's gate, which holds it until the server's time. Attached after (inside), it would see
//! every 429 first and resend it after its own backoff, inside the window the server named and
//! past the gate: a second refusal by construction (`interop/tests/reqwest_retry.rs` counts both orders: 2
//! requests before, more after). Give it a strategy that leaves 429 and non-idempotent 5xx
//! alone if it must not undo this middleware's decisions.
//!
//! `reqwest-tracing` goes before this middleware for one span per call, waits included, or
//! after it for one span per request sent.
//!
//! # Example
//!
//! ```
//! use reqwest_middleware::ClientBuilder;
//! use tower_retry_after::{CallCost, Gates, RateLimitInfo, RateLimitLayer};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // A stand-in for the API, on loopback: 4,999 of its 5,000 calls a minute left.
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let api = format!("http://{}", listener.local_addr()?);
//! # let meters = [("ratelimit-policy", r#""minute";q=5000;w=60"#), ("ratelimit", r#""minute";r=4999;t=30"#)];
//! # let routes = axum::Router::new().route("/user", axum::routing::get(move || async move { meters }));
//! # tokio::spawn(async move { axum::serve(listener, routes).await });
//! let gates = Gates::new();
//! let layer = RateLimitLayer::new().gates(gates.clone());
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(layer.middleware())
//!     .build();
//!
//! let response = client.get(format!("{api}/user")).send().await?;
//! let info = response.extensions().get::<RateLimitInfo>().unwrap();
//! assert_eq!(info.binding_meter().unwrap().remaining(), Some(4999));
//! assert_eq!(response.extensions().get::<CallCost>().unwrap().attempts(), 1);
//! # Ok(())
//! # }
//! ```

mod convert;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Extensions;
use reqwest_middleware::{Middleware, Next};
use tower_service::Service;

use crate::config::Config;
use crate::future::ResponseFuture;
use crate::gate::Gates;
use crate::layer::RateLimitLayer;
use crate::policy::{Policy, Redirected, StatusPolicy};
use crate::rate_limited::{RateLimited, RateLimitedExt};
use crate::throttled::Throttled;

pub use convert::{RequestBody, ResponseBody};

/// [`RateLimitLayer`] as a `reqwest_middleware::Middleware`; made by
/// [`RateLimitLayer::middleware`]. See the [module documentation](self).
///
/// A policy of its own is a [`Policy<RequestBody, ResponseBody>`](Policy): the request's and
/// response's heads are the `http` ones a policy reads for a hyper stack, so
/// [`StatusPolicy`] and policies generic over the body types serve both.
#[derive(Clone)]
pub struct RateLimitMiddleware<P = StatusPolicy> {
    policy: P,
    config: Arc<Config>,
}

impl<P: fmt::Debug> fmt::Debug for RateLimitMiddleware<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitMiddleware")
            .field("policy", &self.policy)
            .field("config", &self.config)
            .finish()
    }
}

impl<P: Clone> RateLimitLayer<P> {
    /// This layer as a `reqwest_middleware::Middleware`, for
    /// `reqwest_middleware::ClientBuilder::with`: the same settings, policy and gates as every
    /// service the layer makes.
    ///
    /// ```
    /// use tower_retry_after::RateLimitLayer;
    ///
    /// let layer = RateLimitLayer::new();
    /// let reqwest_client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
    ///     .with(layer.middleware())
    ///     .build();
    /// // The same layer on a hyper-util client: a 429 either sees holds both.
    /// let hyper_client = tower::ServiceBuilder::new().layer(layer).service(
    ///     hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
    ///         .build_http::<http_body_util::Full<bytes::Bytes>>(),
    /// );
    /// # let _ = (reqwest_client, hyper_client);
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
    pub fn middleware(&self) -> RateLimitMiddleware<P> {
        let (policy, config) = self.in_force();
        RateLimitMiddleware { policy, config }
    }
}

impl<P> RateLimitMiddleware<P> {
    /// The gates this middleware holds its calls at, to read a key's state.
    ///
    /// ```
    /// use tower_retry_after::RateLimitLayer;
    ///
    /// let middleware = RateLimitLayer::new().middleware();
    /// assert!(middleware.gates().is_empty());
    /// ```
    pub fn gates(&self) -> &Gates {
        &self.config.gates
    }
}

#[async_trait::async_trait]
impl<P> Middleware for RateLimitMiddleware<P>
where
    P: Policy<RequestBody, ResponseBody> + Clone + Send + Sync + 'static,
{
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        // The caller's extensions are copied, not taken: a call dropped midway leaves them.
        let request = convert::to_engine(request, extensions.clone())
            .map_err(reqwest_middleware::Error::middleware)?;
        let call = ResponseFuture::new(
            Downstream { next },
            self.policy.clone(),
            self.config.clone(),
            request,
        );
        let response = call.await.map_err(convert::to_middleware_error)?;
        let (response, attempt_extensions) = convert::to_caller(response);
        *extensions = attempt_extensions;
        Ok(response)
    }
}

/// The [`Throttled`] a call through [`RateLimitMiddleware`] failed with, if it gave up on the
/// key's gate: found under any context a middleware around it added.
///
/// ```
/// use tower_retry_after::reqwest::throttled;
///
/// fn wait_hint(error: &reqwest_middleware::Error) -> Option<std::time::Duration> {
///     throttled(error).map(|throttled| throttled.retry_after())
/// }
/// # let _ = wait_hint;
/// ```
pub fn throttled(error: &reqwest_middleware::Error) -> Option<&Throttled> {
    match error {
        reqwest_middleware::Error::Middleware(error) => error.chain().find_map(throttled_in),
        reqwest_middleware::Error::Reqwest(_) => None,
    }
}

/// The [`Throttled`] `cause` is, or wraps as a `reqwest_middleware::Error`: that error is
/// transparent, so its own `source` skips the error it holds (as under `reqwest-retry`'s).
fn throttled_in<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a Throttled> {
    cause.downcast_ref::<Throttled>().or_else(|| {
        cause
            .downcast_ref::<reqwest_middleware::Error>()
            .and_then(throttled)
    })
}

/// A reqwest client's result read as rate limited or not, as for a tower stack's: a 429 (or a
/// 403 refusal) returned, with the wait it names, or a call the layer declined
/// ([`Throttled`], under any context a middleware around it added). A `reqwest::Error` is a
/// transport error, not rate limited, and so is a `tokio::time::timeout` around the call
/// that ran out (see [`RateLimitedExt`]).
///
/// ```
/// use std::time::Duration;
/// use reqwest_middleware::ClientBuilder;
/// use tower_retry_after::{RateLimitLayer, RateLimitedExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # // A stand-in for the API, on loopback, refusing every call for an hour.
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let api = format!("http://{}", listener.local_addr()?);
/// # let refusal = (http::StatusCode::TOO_MANY_REQUESTS, [("retry-after", "3600")]);
/// # let routes = axum::Router::new().route("/user", axum::routing::get(move || async move { refusal }));
/// # tokio::spawn(async move { axum::serve(listener, routes).await });
/// let client = ClientBuilder::new(reqwest::Client::new())
///     .with(RateLimitLayer::new().middleware())
///     .build();
///
/// // The 429 comes back at once (an hour is over the cap); the next call is declined, unsent.
/// for sent in [true, false] {
///     let result = client.get(format!("{api}/user")).send().await;
///     match result.rate_limited() {
///         Some(limited) => {
///             assert!(limited.retry_after() > Some(Duration::from_secs(3500)));
///             assert_eq!(limited.sent(), sent);
///         }
///         None => println!("{}", result?.status()),
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
impl RateLimitedExt for reqwest_middleware::Result<reqwest::Response> {
    fn rate_limited(&self) -> Option<RateLimited> {
        match self {
            Ok(response) => {
                RateLimited::refusal(response.status(), response.headers(), response.extensions())
            }
            Err(error) => throttled(error).map(RateLimited::from),
        }
    }
}

/// The rest of the middleware chain (and the client under it) as the service the engine calls
/// once an attempt.
#[derive(Clone)]
struct Downstream<'a> {
    next: Next<'a>,
}

/// One attempt through the rest of the chain, borrowing it.
type Sending<'a> = Pin<
    Box<
        dyn Future<Output = Result<http::Response<ResponseBody>, reqwest_middleware::Error>>
            + Send
            + 'a,
    >,
>;

impl<'a> Service<http::Request<RequestBody>> for Downstream<'a> {
    type Response = http::Response<ResponseBody>;
    type Error = reqwest_middleware::Error;
    type Future = Sending<'a>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // `Next::run` takes a request at any time: reqwest's pool waits for a connection
        // inside the call.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<RequestBody>) -> Self::Future {
        let next = self.next.clone();
        Box::pin(async move {
            let (request, mut extensions) = convert::to_reqwest(request);
            let sent = request.url().clone();
            // reqwest follows redirects below the middleware: a response for another resource
            // came after the server ran this request and answered it with a redirect. An error
            // does not say: reqwest tells a later hop's under the URL first asked.
            let response = next.run(request, &mut extensions).await?;
            let redirected = another_resource(&sent, response.url());
            let mut response = convert::from_reqwest(response, extensions);
            if redirected {
                response.extensions_mut().insert(Redirected);
            }
            Ok(response)
        })
    }
}

/// What reqwest gives as the URL of a response a middleware built without one.
const NO_URL: &str = "http://no.url.provided.local/";

/// Whether `answered`, a response's URL, names another resource than `sent`: a redirect's. A
/// fragment is no part of what is asked (reqwest's response URL has none), and a response a
/// middleware built without a URL says nothing of where it came from.
fn another_resource(sent: &reqwest::Url, answered: &reqwest::Url) -> bool {
    answered.as_str() != NO_URL && resource(sent) != resource(answered)
}

/// What of `url` names the resource asked for: all but its userinfo and fragment.
fn resource(url: &reqwest::Url) -> (&str, Option<&str>, Option<u16>, &str, Option<&str>) {
    let (scheme, host, port) = (url.scheme(), url.host_str(), url.port_or_known_default());
    (scheme, host, port, url.path(), url.query())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use http::StatusCode;

    use super::*;
    use crate::headers::RateLimitInfo;
    use crate::key::Key;
    use crate::throttled::HeldBy;

    fn refusal(
        status: u16,
        headers: &[(&str, &str)],
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let mut response = http::Response::builder().status(status);
        for (name, value) in headers {
            response = response.header(*name, *value);
        }
        let mut response = response.body("").unwrap();
        let info = RateLimitInfo::from_headers(response.headers(), SystemTime::now());
        response.extensions_mut().insert(info);
        Ok(reqwest::Response::from(response))
    }

    #[test]
    fn a_refusal_a_reqwest_client_returns_is_rate_limited_for_the_wait_it_names() {
        let limited = refusal(
            429,
            &[
                ("retry-after", "20"),
                ("ratelimit", r#""default";r=0;t=40"#),
            ],
        )
        .rate_limited()
        .unwrap();
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(40)));
        assert_eq!(limited.status(), Some(StatusCode::TOO_MANY_REQUESTS));
        assert!(limited.sent());
        let spent = [
            ("x-ratelimit-resource", "core"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "600"),
        ];
        assert!(refusal(403, &spent).rate_limited().is_some());
        assert_eq!(refusal(403, &[]).rate_limited(), None);
        assert_eq!(refusal(200, &spent).rate_limited(), None);
    }

    #[test]
    fn throttled_under_context_is_rate_limited_and_the_chains_own_errors_are_not() {
        let held_by = HeldBy::RetryAfter {
            status: StatusCode::TOO_MANY_REQUESTS,
        };
        let declined = Throttled::new(Key::named("api"), Duration::from_secs(9), held_by);
        let error = anyhow::Error::new(declined).context("an outer middleware's context");
        let result: reqwest_middleware::Result<reqwest::Response> =
            Err(reqwest_middleware::Error::Middleware(error));
        let limited = result.rate_limited().unwrap();
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(9)));
        assert_eq!(limited.held_by(), Some(held_by));
        assert!(!limited.sent());
        let theirs = reqwest_middleware::Error::middleware(std::io::Error::other("refused"));
        let result: reqwest_middleware::Result<reqwest::Response> = Err(theirs);
        assert_eq!(result.rate_limited(), None);
    }
}
