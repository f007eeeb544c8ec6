//! Between reqwest's requests and responses and the `http` ones the engine reads: moves of
//! their parts, no I/O.
//!
//! The engine reads a request's method, URI, headers and declared [`TokenCost`] and a
//! response's status and headers, and keeps the rest as an opaque body. So only the headers
//! move out of reqwest's values (and back in before they are sent or returned), and the cost
//! is copied from the chain's extensions; everything else stays where reqwest put it. That is
//! why the bodies here are reqwest's whole values rather than `reqwest::Body`: reqwest's own
//! conversions to `http` drop a response's URL, and a `reqwest::Body` that is in memory can be
//! copied from outside reqwest only byte by byte, where `Request::try_clone` shares the bytes.

use std::fmt;

use http::{Extensions, Uri};

use crate::BoxError;
use crate::Throttled;
use crate::policy::ReplayBody;
use crate::tokens::TokenCost;

/// A reqwest request as [`RateLimitMiddleware`](super::RateLimitMiddleware) carries it through
/// its retries: what a [`Policy`](crate::policy::Policy) for the middleware names as its
/// request body type. The request's method, URI and headers are in the `http::Request` around
/// it.
///
/// It replays when reqwest can clone the request (`reqwest::Request::try_clone`): a body in
/// memory does, a stream does not, and its request is sent once and never retried.
pub struct RequestBody {
    // Its headers were moved to the `http::Request` around it.
    request: reqwest::Request,
    // The middleware chain's extensions for one attempt: each starts from the caller's.
    extensions: Extensions,
}

/// A reqwest response as [`RateLimitMiddleware`](super::RateLimitMiddleware) hands it to its
/// [`Policy`](crate::policy::Policy): what a policy for the middleware names as its response
/// body type. The status and headers are in the `http::Response` around it.
pub struct ResponseBody {
    // Its headers and extensions were moved to the `http::Response` around it.
    response: reqwest::Response,
    // The middleware chain's extensions as the attempt left them.
    extensions: Extensions,
}

impl fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBody")
            .field("body", &self.request.body())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseBody")
            .field("url", &self.response.url().as_str())
            .finish_non_exhaustive()
    }
}

impl ReplayBody for RequestBody {
    fn replay(&self) -> Option<Self> {
        Some(RequestBody {
            request: self.request.try_clone()?,
            extensions: self.extensions.clone(),
        })
    }
}

/// `request` as the engine reads it, carrying the chain's `extensions` for each attempt, with
/// the [`TokenCost`] its caller declared there (reqwest-middleware's `with_extension`) where
/// the engine reads it, in the `http::Request`'s extensions.
///
/// Fails only for a URL that is not a valid URI without its fragment (a fragment is never sent).
pub(super) fn to_engine(
    mut request: reqwest::Request,
    extensions: Extensions,
) -> Result<http::Request<RequestBody>, http::uri::InvalidUri> {
    let uri = Uri::try_from(without_fragment(request.url()))?;
    let method = request.method().clone();
    let version = request.version();
    let headers = std::mem::take(request.headers_mut());
    let cost = extensions.get::<TokenCost>().copied();
    let mut engine = http::Request::new(RequestBody {
        request,
        extensions,
    });
    *engine.method_mut() = method;
    *engine.uri_mut() = uri;
    *engine.version_mut() = version;
    *engine.headers_mut() = headers;
    if let Some(cost) = cost {
        engine.extensions_mut().insert(cost);
    }
    Ok(engine)
}

/// The text of `url` up to its fragment.
fn without_fragment(url: &reqwest::Url) -> &str {
    let text = url.as_str();
    match url.fragment() {
        // The fragment and its `#`.
        Some(fragment) => &text[..text.len() - fragment.len() - 1],
        None => text,
    }
}

/// An attempt of the engine's as reqwest sends it, with the chain's extensions for it.
pub(super) fn to_reqwest(request: http::Request<RequestBody>) -> (reqwest::Request, Extensions) {
    let (
        head,
        RequestBody {
            mut request,
            extensions,
        },
    ) = request.into_parts();
    // The engine changes nothing else of the head: the method, URL and version are reqwest's.
    *request.headers_mut() = head.headers;
    (request, extensions)
}

/// `response` as the engine reads it, with the chain's `extensions` as its attempt left them.
pub(super) fn from_reqwest(
    mut response: reqwest::Response,
    extensions: Extensions,
) -> http::Response<ResponseBody> {
    let status = response.status();
    let version = response.version();
    let headers = std::mem::take(response.headers_mut());
    let response_extensions = std::mem::take(response.extensions_mut());
    let mut engine = http::Response::new(ResponseBody {
        response,
        extensions,
    });
    *engine.status_mut() = status;
    *engine.version_mut() = version;
    *engine.headers_mut() = headers;
    *engine.extensions_mut() = response_extensions;
    engine
}

/// The engine's final response as the caller gets it, with what the engine attached
/// (`RateLimitInfo`, `CallCost`) in its extensions, and the chain's extensions as the last
/// attempt left them.
pub(super) fn to_caller(response: http::Response<ResponseBody>) -> (reqwest::Response, Extensions) {
    let (
        head,
        ResponseBody {
            mut response,
            extensions,
        },
    ) = response.into_parts();
    *response.headers_mut() = head.headers;
    *response.extensions_mut() = head.extensions;
    (response, extensions)
}

/// The engine's error as the chain's: the next middleware's (or reqwest's) error as it was,
/// and [`Throttled`] as a middleware error that downcasts to it.
pub(super) fn to_middleware_error(error: BoxError) -> reqwest_middleware::Error {
    let error = match error.downcast::<reqwest_middleware::Error>() {
        Ok(error) => return *error,
        Err(error) => error,
    };
    match error.downcast::<Throttled>() {
        Ok(throttled) => reqwest_middleware::Error::middleware(*throttled),
        // The engine fails only with the inner service's error or `Throttled`; anything else
        // keeps its message and source.
        Err(other) => reqwest_middleware::Error::Middleware(anyhow::anyhow!(other)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::{HeaderValue, Method, StatusCode, Version};
    use reqwest::ResponseBuilderExt;

    use super::*;
    use crate::key::Key;

    fn request(body: reqwest::Body) -> reqwest::Request {
        let url = "https://user@api.test/v1/items?page=2#top".parse().unwrap();
        let mut request = reqwest::Request::new(Method::PUT, url);
        request
            .headers_mut()
            .insert("idempotency-key", HeaderValue::from_static("k-1"));
        *request.timeout_mut() = Some(Duration::from_secs(7));
        *request.version_mut() = Version::HTTP_11;
        *request.body_mut() = Some(body);
        request
    }

    #[derive(Clone, Debug, PartialEq)]
    struct Marker(u8);

    #[test]
    fn a_request_keeps_everything_reqwest_gave_it_through_the_engine() {
        let mut chain = Extensions::new();
        chain.insert(Marker(1));
        let engine = to_engine(request(reqwest::Body::from("{}")), chain).unwrap();
        assert_eq!(engine.method(), Method::PUT);
        assert_eq!(engine.uri(), "https://user@api.test/v1/items?page=2");
        assert_eq!(engine.headers()["idempotency-key"], "k-1");
        assert_eq!(engine.version(), Version::HTTP_11);
        let (sent, chain) = to_reqwest(engine);
        assert_eq!(sent.method(), Method::PUT);
        assert_eq!(
            sent.url().as_str(),
            "https://user@api.test/v1/items?page=2#top"
        );
        assert_eq!(sent.headers()["idempotency-key"], "k-1");
        assert_eq!(sent.timeout(), Some(&Duration::from_secs(7)));
        assert_eq!(sent.version(), Version::HTTP_11);
        assert_eq!(
            sent.body().and_then(reqwest::Body::as_bytes),
            Some(&b"{}"[..])
        );
        assert_eq!(chain.get::<Marker>(), Some(&Marker(1)));
    }

    #[test]
    fn a_cost_declared_in_the_chains_extensions_reaches_the_engine() {
        let declared =
            |engine: &http::Request<RequestBody>| engine.extensions().get::<TokenCost>().copied();
        let mut chain = Extensions::new();
        chain.insert(TokenCost::new(100, 400));
        let engine = to_engine(request(reqwest::Body::from("{}")), chain).unwrap();
        assert_eq!(declared(&engine), Some(TokenCost::new(100, 400)));
        let neither = to_engine(request(reqwest::Body::from("{}")), Extensions::new()).unwrap();
        assert_eq!(declared(&neither), None);
    }

    #[test]
    fn a_body_in_memory_replays_and_a_stream_does_not() {
        let mut chain = Extensions::new();
        chain.insert(Marker(2));
        let engine = to_engine(request(reqwest::Body::from("{\"a\":1}")), chain).unwrap();
        let copy = engine.body().replay().unwrap();
        assert_eq!(
            copy.request.body().and_then(reqwest::Body::as_bytes),
            Some(&b"{\"a\":1}"[..])
        );
        assert_eq!(copy.extensions.get::<Marker>(), Some(&Marker(2)));
        // `wrap` makes a stream of any body, even one in memory.
        let stream = reqwest::Body::wrap("part".to_owned());
        let engine = to_engine(request(stream), Extensions::new()).unwrap();
        assert!(engine.body().replay().is_none());
    }

    #[test]
    fn a_response_keeps_its_url_headers_and_extensions_and_gains_the_engines() {
        let url: reqwest::Url = "https://api.test/v1/items/1".parse().unwrap();
        let response = http::Response::builder()
            .status(StatusCode::CREATED)
            .header("ratelimit", "limit=10, remaining=9, reset=1")
            .extension(Marker(3))
            .url(url.clone())
            .body("created")
            .unwrap();
        let mut chain = Extensions::new();
        chain.insert(Marker(4));
        let mut engine = from_reqwest(reqwest::Response::from(response), chain);
        assert_eq!(engine.status(), StatusCode::CREATED);
        assert_eq!(
            engine.headers()["ratelimit"],
            "limit=10, remaining=9, reset=1"
        );
        engine.extensions_mut().insert(Marker(5));
        let (response, chain) = to_caller(engine);
        assert_eq!(response.status(), StatusCode::CREATED);
        assert_eq!(response.url(), &url);
        assert_eq!(
            response.headers()["ratelimit"],
            "limit=10, remaining=9, reset=1"
        );
        assert_eq!(response.extensions().get::<Marker>(), Some(&Marker(5)));
        assert_eq!(chain.get::<Marker>(), Some(&Marker(4)));
    }

    #[test]
    fn the_chains_errors_come_back_as_they_were_and_throttled_downcasts() {
        let theirs = reqwest_middleware::Error::middleware(std::io::Error::other("refused"));
        let back = to_middleware_error(Box::new(theirs));
        let reqwest_middleware::Error::Middleware(error) = back else {
            panic!("a middleware error stays one");
        };
        assert_eq!(
            error.downcast_ref::<std::io::Error>().unwrap().to_string(),
            "refused"
        );
        let held_by = crate::HeldBy::RetryAfter {
            status: http::StatusCode::TOO_MANY_REQUESTS,
        };
        let throttled = Throttled::new(Key::named("api"), Duration::from_secs(9), held_by);
        let back = to_middleware_error(Box::new(throttled));
        let reqwest_middleware::Error::Middleware(error) = back else {
            panic!("Throttled is a middleware error");
        };
        let throttled = error.downcast_ref::<Throttled>().unwrap();
        assert_eq!(throttled.retry_after(), Duration::from_secs(9));
        let other = to_middleware_error("store down".into());
        assert_eq!(other.to_string(), "store down");
    }
}
