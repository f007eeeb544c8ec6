//! The recipe: an axum app forwarding each request it gets (method, path, headers and axum's
//! `Body`) to a rate-limited upstream through `RateLimitLayer`.
//!
//! A retry needs the request body again, and axum's `Body` streams: once read, it is gone (the
//! layer's default policy does not compile with it, and says why). So the body is buffered
//! into `Full<Bytes>`, which the layer replays, when its length is known and at most
//! [`REPLAYABLE_UP_TO`]; a longer body, or one whose length is not known (it streams, chunked),
//! is forwarded as it arrives, sent once and never retried, whatever the upstream answers.
//! One body type, [`Forwarded`], carries both.
//!
//! What the downstream caller sees when the upstream says 429 is this app's choice, made here
//! so: while the wait fits the call's budget, a clean wait (the layer holds the call and every
//! other call to that upstream, and the caller just gets the answer later); when it does not
//! (the upstream asked for longer than the layer will wait, the layer declined to send, or
//! the body could not be sent again), `503 Service Unavailable` with the upstream's
//! `Retry-After`. Not 429: the downstream caller did not exceed any limit of this app's; the
//! upstream is temporarily unavailable to it.
//!
//! Two routes show both: `/patient/...` waits up to the defaults; `/hasty/...` waits two
//! seconds at most in all.

use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue, Request, Response, StatusCode, Version, header};
use axum::routing::any;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, ServiceExt};
use tower_retry_after::{RateLimit, RateLimitInfo, RateLimitLayer, Throttled};

/// The longest request body buffered to be sent again. A buffered body is held in memory for
/// the whole call, waits included: this bound is what the proxy can afford per waiting call.
pub const REPLAYABLE_UP_TO: usize = 64 * 1024;

/// A request body as forwarded: buffered (the layer replays it for a retry) or as it streams
/// (sent once: a boxed body that is not empty does not replay).
pub type Forwarded = Either<Full<Bytes>, UnsyncBoxBody<Bytes, axum::Error>>;

type Upstream = RateLimit<Client<HttpConnector, Forwarded>>;

/// Where the upstream is, and a client of it for each route.
#[derive(Clone)]
pub struct Proxy {
    upstream: String,
    patient: Upstream,
    hasty: Upstream,
}

impl Proxy {
    /// Clients of `upstream` (`http://host:port`): the patient one with the layer's defaults,
    /// the hasty one waiting two seconds at most in all.
    pub fn new(upstream: String) -> Self {
        let client = Client::builder(TokioExecutor::new()).build_http::<Forwarded>();
        let patient = RateLimitLayer::new().layer(client.clone());
        let hasty = RateLimitLayer::new()
            .retry_after_cap(Duration::from_secs(1))
            .max_wait(Duration::from_secs(2))
            .layer(client);
        Proxy {
            upstream,
            patient,
            hasty,
        }
    }
}

/// The app: `/{patient|hasty}/{path}`, any method, forwarded to the upstream's `/{path}`.
pub fn app(proxy: Proxy) -> Router {
    Router::new()
        .route("/{mode}/{*path}", any(forward))
        .with_state(proxy)
}

/// Headers of one connection, not of the request: never forwarded.
const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

async fn forward(
    State(proxy): State<Proxy>,
    Path((mode, path)): Path<(String, String)>,
    request: Request<Body>,
) -> Response<Body> {
    let upstream = if mode == "hasty" {
        proxy.hasty
    } else {
        proxy.patient
    };
    let (mut parts, body) = request.into_parts();
    let Ok(body) = replayable(body).await else {
        return answer(StatusCode::BAD_REQUEST, "request body unreadable");
    };
    let query = parts.uri.query().map(|query| format!("?{query}"));
    let target = format!("{}/{path}{}", proxy.upstream, query.unwrap_or_default());
    let Ok(uri) = target.parse() else {
        return answer(StatusCode::BAD_REQUEST, "no upstream URI for this path");
    };
    parts.uri = uri;
    // The HTTP version is the hop's: a request the app took over HTTP/2 goes on over the
    // upstream client's HTTP/1.1.
    parts.version = Version::HTTP_11;
    // The upstream's `Host` is its own, taken from the URI.
    parts.headers.remove(header::HOST);
    for name in HOP_BY_HOP {
        parts.headers.remove(name);
    }
    match upstream.oneshot(Request::from_parts(parts, body)).await {
        Ok(response) if response.status() == StatusCode::TOO_MANY_REQUESTS => {
            let wait = response
                .extensions()
                .get::<RateLimitInfo>()
                .and_then(RateLimitInfo::instructed_wait);
            unavailable(wait)
        }
        Ok(response) => {
            let (parts, body) = response.into_parts();
            Response::from_parts(parts, Body::new(body))
        }
        Err(error) => match error.downcast_ref::<Throttled>() {
            Some(throttled) => unavailable(Some(throttled.retry_after())),
            None => answer(StatusCode::BAD_GATEWAY, &error.to_string()),
        },
    }
}

/// The body buffered, so that the layer can send it again, where its length is known and
/// fits in [`REPLAYABLE_UP_TO`]; otherwise the body as it streams, sent once.
async fn replayable(body: Body) -> Result<Forwarded, axum::Error> {
    match body.size_hint().upper() {
        Some(length) if length <= REPLAYABLE_UP_TO as u64 => {
            // Bounded while read as well: a length is what the sender said, not what it sends.
            let read = Limited::new(body, REPLAYABLE_UP_TO).collect().await;
            let bytes = read.map_err(axum::Error::new)?.to_bytes();
            Ok(Either::Left(Full::new(bytes)))
        }
        _ => Ok(Either::Right(body.boxed_unsync())),
    }
}

/// `503` with the upstream's wait, in whole seconds rounded up, as `Retry-After`.
fn unavailable(wait: Option<Duration>) -> Response<Body> {
    let mut response = answer(StatusCode::SERVICE_UNAVAILABLE, "upstream rate limited");
    if let Some(wait) = wait {
        let seconds = wait.as_millis().div_ceil(1000).max(1);
        let seconds = HeaderValue::from(u64::try_from(seconds).unwrap_or(u64::MAX));
        response.headers_mut().insert(header::RETRY_AFTER, seconds);
    }
    response
}

fn answer(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(text.to_owned()));
    *response.status_mut() = status;
    response
}
