//! The calls both per-call benches make (`overhead -- call` in wall time, `instructions` in
//! instructions), so that their figures are of the same work: one request, a service that
//! answers at once with a canned response, and the three ways to call it.
//!
//! - `bare`: the service itself;
//! - `layer`: under [`RateLimitLayer`] with its defaults;
//! - `peer`: under `tower::retry` with [`RetryAfterPolicy`], what a user would write instead
//!   of the layer: on a 429, sleep the `Retry-After` seconds and send the request again.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{Empty, Full};
use tower::Service;
use tower_retry_after::RateLimitLayer;

/// A response's headers, as `(name, value)` pairs.
pub type Headers = &'static [(&'static str, &'static str)];

/// The headers of every response, beside its rate-limit ones: what a real server sends.
const COMMON: Headers = &[
    ("content-type", "application/json"),
    ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
];

/// The responses measured, by name: none, draft 08 and `Retry-After`, and GitHub's five.
///
/// Every one is a 200 whose meters leave room, so no call waits or is retried: what is
/// measured is what the layer does to a call that goes straight through.
pub const RESPONSES: [(&str, Headers); 3] = [
    ("no_headers", &[]),
    (
        "draft08_retry_after",
        &[
            ("ratelimit-policy", r#""default";q=100;w=60"#),
            ("ratelimit", r#""default";r=99;t=60"#),
            ("retry-after", "30"),
        ],
    ),
    (
        "github",
        &[
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-remaining", "4999"),
            ("x-ratelimit-used", "1"),
            ("x-ratelimit-reset", "1700003600"),
            ("x-ratelimit-resource", "core"),
        ],
    ),
];

/// The request every call sends: a JSON POST with a credential, as an API client makes.
pub fn request() -> Request<Full<Bytes>> {
    Request::post("http://api.test/v1/items")
        .header("content-type", "application/json")
        .header("authorization", "Bearer 0123456789abcdef")
        .body(Full::new(Bytes::from_static(b"{\"name\":\"x\"}")))
        .unwrap()
}

/// A service that answers every request at once with a 200 carrying `headers`.
pub fn answering(
    headers: Headers,
) -> impl Service<Request<Full<Bytes>>, Response = Response<Empty<Bytes>>, Error = Infallible> + Clone
{
    tower::service_fn(move |_request: Request<Full<Bytes>>| {
        let mut response = Response::new(Empty::new());
        for (name, value) in COMMON.iter().chain(headers) {
            response
                .headers_mut()
                .append(*name, http::HeaderValue::from_static(value));
        }
        std::future::ready(Ok(response))
    })
}

/// The service under [`RateLimitLayer`] with its defaults.
pub fn layer<S>(service: S) -> tower_retry_after::RateLimit<S> {
    tower::Layer::layer(&RateLimitLayer::new(), service)
}

/// The service under `tower::retry` with [`RetryAfterPolicy`]: the peer of the layer.
pub fn peer<S>(service: S) -> tower::retry::Retry<RetryAfterPolicy, S> {
    tower::retry::Retry::new(RetryAfterPolicy { attempts: 3 }, service)
}

/// The retry a user writes by hand for a rate-limited API: on a 429 with `Retry-After` in
/// seconds, sleep that long and send again, a few times at most.
#[derive(Clone)]
pub struct RetryAfterPolicy {
    attempts: u32,
}

impl<B: Clone, ResBody, E> tower::retry::Policy<Request<B>, Response<ResBody>, E>
    for RetryAfterPolicy
{
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _request: &mut Request<B>,
        result: &mut Result<Response<ResBody>, E>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        if response.status() != StatusCode::TOO_MANY_REQUESTS || self.attempts == 0 {
            return None;
        }
        let seconds: u64 = response
            .headers()
            .get(http::header::RETRY_AFTER)?
            .to_str()
            .ok()?
            .trim()
            .parse()
            .ok()?;
        self.attempts -= 1;
        Some(tokio::time::sleep(Duration::from_secs(seconds)))
    }

    fn clone_request(&mut self, request: &Request<B>) -> Option<Request<B>> {
        let mut copy = Request::new(request.body().clone());
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        Some(copy)
    }
}
