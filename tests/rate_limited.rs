//! `RateLimitedExt::rate_limited` end to end: the four ways a call through the README's stack
//! (`ServiceBuilder::new().timeout(..).layer(RateLimitLayer::new()).service(client)`) can end,
//! against a real hyper server on loopback that counts what it received, each read as rate
//! limited or not. The clock is paused: every wait is simulated.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use support::{TestServer, header};
use tokio::time::Instant;
use tower::timeout::Timeout;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{BoxError, Gates, HeldBy, Key, RateLimit, RateLimitLayer, RateLimitedExt};

const SECOND: Duration = Duration::from_secs(1);

/// The README's stack over a hyper-util client.
type Client = Timeout<RateLimit<hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>>>;

/// The README's stack, its layer holding its calls at `gates`.
fn stack(timeout: Duration, gates: Gates) -> Client {
    ServiceBuilder::new()
        .timeout(timeout)
        .layer(RateLimitLayer::new().gates(gates))
        .service(support::client())
}

async fn get(client: &mut Client, url: String) -> Result<http::Response<Incoming>, BoxError> {
    let request = Request::get(url).body(Full::default()).unwrap();
    client.ready().await?.call(request).await
}

/// A server that refuses every request for an hour: longer than the layer waits (the cap is
/// 60 s by default).
async fn refusing_for_an_hour() -> TestServer {
    TestServer::start(|_, _, _| (429, vec![header("retry-after", 3600)])).await
}

#[tokio::test(start_paused = true)]
async fn a_refusal_the_layer_returns_reads_as_rate_limited_for_the_wait_it_names() {
    let server = refusing_for_an_hour().await;
    let mut client = stack(300 * SECOND, Gates::new());
    let result = get(&mut client, server.url("/items")).await;
    assert_eq!(
        result.as_ref().unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    let limited = result.rate_limited().expect("a 429 is rate limited");
    assert_eq!(limited.retry_after(), Some(3600 * SECOND));
    assert_eq!(limited.status(), Some(StatusCode::TOO_MANY_REQUESTS));
    assert_eq!(limited.held_by(), None);
    assert!(limited.sent());
    assert_eq!(server.count("GET", "/items"), 1, "returned at once");
}

#[tokio::test(start_paused = true)]
async fn a_call_the_gate_declines_reads_as_rate_limited_with_the_time_left_and_nothing_sent() {
    let server = refusing_for_an_hour().await;
    let mut client = stack(300 * SECOND, Gates::new());
    get(&mut client, server.url("/items")).await.unwrap();
    tokio::time::sleep(600 * SECOND).await;
    let result = get(&mut client, server.url("/items")).await;
    let error = result.as_ref().unwrap_err();
    assert!(error.is::<tower_retry_after::Throttled>(), "{error}");
    let limited = result.rate_limited().expect("Throttled is rate limited");
    let left = limited.retry_after().unwrap();
    // An hour less the ten minutes gone, with the spread of at most a second the gate adds.
    assert!(left >= 3000 * SECOND, "{left:?}");
    assert!(
        left <= 3001 * SECOND,
        "the time left, not the whole hour: {left:?}"
    );
    let by_the_429 = HeldBy::RetryAfter {
        status: StatusCode::TOO_MANY_REQUESTS,
    };
    assert_eq!(limited.held_by(), Some(by_the_429));
    assert!(!limited.sent());
    assert_eq!(
        server.count("GET", "/items"),
        1,
        "the second call sent nothing"
    );
}

/// A timeout below `max_wait` cuts the wait out of a 30 s `Retry-After`: the caller gets
/// `Elapsed`, which is not read as rate limited (it names no time, and a slow server gives it
/// too); the key's gate is what still says the key is held.
#[tokio::test(start_paused = true)]
async fn a_timeout_that_cuts_a_wait_is_not_read_as_rate_limited() {
    let server = TestServer::start(|_, _, nth| match nth {
        0 => (429, vec![header("retry-after", 30)]),
        _ => (200, vec![]),
    })
    .await;
    let gates = Gates::new();
    let mut client = stack(10 * SECOND, gates.clone());
    let started = Instant::now();
    let result = get(&mut client, server.url("/items")).await;
    let error = result.as_ref().unwrap_err();
    assert!(error.is::<tower::timeout::error::Elapsed>(), "{error}");
    assert_eq!(started.elapsed(), 10 * SECOND);
    assert_eq!(result.rate_limited(), None);
    let origin = Key::from_origin(&server.url("")).unwrap();
    let closed_for = gates.snapshot(&origin).unwrap().closed_for();
    assert!(
        closed_for.is_some_and(|left| left > 15 * SECOND),
        "{closed_for:?}"
    );
    assert_eq!(server.count("GET", "/items"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_transport_error_is_not_rate_limited() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut client = stack(300 * SECOND, Gates::new());
    let result = get(&mut client, format!("http://{closed}/items")).await;
    let error = result.as_ref().unwrap_err();
    // Asked of the client's error itself: the layer knows it for a connect error only with
    // the hyper-util feature.
    let transport = error.downcast_ref::<hyper_util::client::legacy::Error>();
    assert!(
        transport.is_some_and(|error| error.is_connect()),
        "{error:?}"
    );
    assert_eq!(result.rate_limited(), None);
}

#[tokio::test(start_paused = true)]
async fn an_answered_call_is_not_rate_limited() {
    let server = TestServer::start(|_, _, _| (200, vec![header("retry-after", 3600)])).await;
    let mut client = stack(300 * SECOND, Gates::new());
    let result = get(&mut client, server.url("/items")).await;
    assert_eq!(result.as_ref().unwrap().status(), StatusCode::OK);
    assert_eq!(result.rate_limited(), None);
}
