//! The fault suite: a server on loopback that misbehaves (resets, stalls, closes, hostile
//! headers) and counts every request it received by method and path. The clock is paused, so
//! minutes of waiting take milliseconds; the server's delays run on the same clock.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use support::raw::{RawServer, Reply};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{BoxError, Key, RateLimitInfo, RateLimitLayer};

const SECOND: Duration = Duration::from_secs(1);

fn request(method: &str, url: String) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::from_static(b"{\"capture\":1}")))
        .unwrap()
}

/// Sends one request through `layer` over `client`, and says how long it took.
async fn send_through(
    layer: RateLimitLayer,
    client: Client<HttpConnector, Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> (Result<Response<Incoming>, BoxError>, Duration) {
    let started = Instant::now();
    let mut service = ServiceBuilder::new().layer(layer).service(client);
    let result = service.ready().await.unwrap().call(request).await;
    (result, started.elapsed())
}

/// Sends one request through the default layer over hyper-util's default client.
async fn send(request: Request<Full<Bytes>>) -> (Result<Response<Incoming>, BoxError>, Duration) {
    send_through(RateLimitLayer::new(), support::client(), request).await
}

/// A reset before the head is complete may come after the server ran the request: a GET is
/// tried again, a POST is not, and the POST's caller gets the transport error.
#[tokio::test(start_paused = true)]
async fn a_reset_in_the_head_is_retried_for_get_and_surfaced_for_post() {
    let server = RawServer::start(|_, _, nth| match nth {
        0 => Reply::ResetInHead,
        _ => Reply::status(200),
    })
    .await;
    let (get, _) = send(request("GET", server.url("/r"))).await;
    assert_eq!(get.unwrap().status(), 200);
    assert_eq!(server.count("GET", "/r"), 2);

    let (post, _) = send(request("POST", server.url("/r"))).await;
    let error = post.unwrap_err();
    assert!(
        !tower_retry_after::policy::is_connect_error(&error),
        "{error:?}"
    );
    assert_eq!(server.count("POST", "/r"), 1);
}

/// A reset in the body comes after the layer handed the response over: reading the body fails
/// and nothing is sent again, whatever the method.
#[tokio::test(start_paused = true)]
async fn a_reset_in_the_body_fails_the_read_and_sends_nothing_more() {
    let server = RawServer::start(|_, _, _| Reply::ResetInBody).await;
    for method in ["GET", "POST"] {
        let (response, _) = send(request(method, server.url("/body"))).await;
        let response = response.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.into_body().collect().await.is_err());
        tokio::time::sleep(60 * SECOND).await;
        assert_eq!(server.count(method, "/body"), 1, "{method}");
    }
}

/// A server that closes without reading might have read: a POST goes once, a GET is tried as
/// many times as the transient count allows. Both callers get the error.
#[tokio::test(start_paused = true)]
async fn a_server_that_closes_before_reading_gets_one_post_and_four_gets() {
    let post_server = RawServer::closing_before_reading().await;
    let (post, _) = send(request("POST", post_server.url("/closed"))).await;
    assert!(post.is_err());
    assert_eq!(post_server.connections(), 1);

    let get_server = RawServer::closing_before_reading().await;
    let (get, _) = send(request("GET", get_server.url("/closed"))).await;
    assert!(get.is_err());
    assert_eq!(get_server.connections(), 4);
}

/// A server that reads each request and closes the connection without a word: an idempotent
/// request is tried the transient count, a POST once, and the last error is what the caller
/// gets.
#[tokio::test(start_paused = true)]
async fn a_server_that_reads_then_closes_without_answering() {
    let server = RawServer::start(|_, _, _| Reply::CloseWithoutAnswer).await;
    let (put, _) = send(request("PUT", server.url("/silent"))).await;
    assert!(put.is_err());
    assert_eq!(server.count("PUT", "/silent"), 4);
    let (post, _) = send(request("POST", server.url("/silent"))).await;
    assert!(post.is_err());
    assert_eq!(server.count("POST", "/silent"), 1);
}

/// Sends one request through `layer` under a timeout placed outside it, the way the README
/// stacks them; checks the timeout is what ended it, and says when it did.
async fn cut_off(
    timeout: Duration,
    layer: RateLimitLayer,
    request: Request<Full<Bytes>>,
) -> Duration {
    let started = Instant::now();
    let mut service = ServiceBuilder::new()
        .timeout(timeout)
        .layer(layer)
        .service(support::client());
    let error = service
        .ready()
        .await
        .unwrap()
        .call(request)
        .await
        .unwrap_err();
    assert!(error.is::<tower::timeout::error::Elapsed>(), "{error:?}");
    started.elapsed()
}

/// A timeout outside the layer bounds the whole call; the call it cuts sends nothing more.
#[tokio::test(start_paused = true)]
async fn a_timeout_outside_the_layer_cuts_a_slow_server_once() {
    let server = RawServer::start(|_, _, _| Reply::status(200).after(60 * SECOND)).await;
    let request = request("GET", server.url("/slow"));
    assert_eq!(
        cut_off(5 * SECOND, RateLimitLayer::new(), request).await,
        5 * SECOND
    );
    tokio::time::sleep(300 * SECOND).await;
    assert_eq!(server.count("GET", "/slow"), 1);
}

/// A timeout that ends a call waiting out a 429 does not end the window the server named:
/// the next call on the key still waits for it.
#[tokio::test(start_paused = true)]
async fn a_timeout_ends_the_wait_but_not_the_servers_window() {
    let server = RawServer::start(|_, _, nth| match nth {
        0 => Reply::status(429).header("retry-after", "30"),
        _ => Reply::status(200),
    })
    .await;
    let layer = RateLimitLayer::new();
    let started = Instant::now();
    let request_to = |server: &RawServer| request("POST", server.url("/capture"));
    assert_eq!(
        cut_off(10 * SECOND, layer.clone(), request_to(&server)).await,
        10 * SECOND
    );
    assert_eq!(server.count("POST", "/capture"), 1);

    let (response, _) = send_through(layer, support::client(), request_to(&server)).await;
    assert_eq!(response.unwrap().status(), 200);
    let arrivals = server.arrivals("POST", "/capture");
    assert_eq!(arrivals.len(), 2);
    assert!(
        arrivals[1] - started >= 30 * SECOND,
        "{:?}",
        arrivals[1] - started
    );
}

/// Waits no sane server asks for are returned at once, not waited and not clamped to a
/// retry inside the window; the gate is left open for calls that might still get through.
#[tokio::test(start_paused = true)]
async fn absurd_waits_are_returned_at_once_and_leave_the_gate_open() {
    for value in [
        "100000000000000000000",
        "Fri, 31 Dec 9999 23:59:59 GMT",
        "18446744073709551616.5",
    ] {
        let server = RawServer::start(move |_, path, _| match path {
            "/limited" => Reply::status(429).header("retry-after", value),
            _ => Reply::status(200),
        })
        .await;
        let layer = RateLimitLayer::new();
        let (response, took) = send_through(
            layer.clone(),
            support::client(),
            request("POST", server.url("/limited")),
        )
        .await;
        let response = response.unwrap();
        assert_eq!(response.status(), 429, "{value}");
        assert_eq!(took, Duration::ZERO, "{value}");
        let info = response.extensions().get::<RateLimitInfo>().unwrap();
        assert!(
            info.retry_after().unwrap() >= Duration::from_secs(1 << 30),
            "{value}"
        );
        assert_eq!(server.count("POST", "/limited"), 1, "{value}");

        let mut service = ServiceBuilder::new()
            .layer(layer)
            .service(support::client());
        let started = Instant::now();
        let other = service
            .ready()
            .await
            .unwrap()
            .call(request("GET", server.url("/other")))
            .await
            .unwrap();
        assert_eq!(other.status(), 200);
        assert_eq!(started.elapsed(), Duration::ZERO, "{value}");
    }
}

/// Bytes that are not text are no instruction: the 429 is waited out on a guess (never back
/// to back) and retried, and what was read says nothing was read.
#[tokio::test(start_paused = true)]
async fn non_utf8_rate_limit_headers_are_no_instruction() {
    let script = |_: &http::Method, _: &str, nth: usize| match nth {
        0 => Reply::status(429)
            .header("retry-after", b"\xff\xfe\x80".to_vec())
            .header("ratelimit", b"\"default\";r=\xc3\x28;t=5".to_vec())
            .header("x-ratelimit-reset", b"1\xe2\x82\xac".to_vec()),
        _ => Reply::status(200),
    };
    let read = first_429(&RawServer::start(script).await, support::client()).await;
    assert_eq!(read.retry_after(), None);
    assert!(read.meters().is_empty(), "{read:?}");

    let server = RawServer::start(script).await;
    let (response, _) = send(request("POST", server.url("/bytes"))).await;
    let response = response.unwrap();
    assert_eq!(response.status(), 200);
    let arrivals = server.arrivals("POST", "/bytes");
    assert_eq!(arrivals.len(), 2);
    let gap = arrivals[1] - arrivals[0];
    assert!(gap >= SECOND / 4 && gap <= SECOND, "{gap:?}");
}

/// The first answer, a 429, as the layer read it (through a layer that only observes).
async fn first_429(
    server: &RawServer,
    client: Client<HttpConnector, Full<Bytes>>,
) -> RateLimitInfo {
    let mut service = ServiceBuilder::new()
        .layer(RateLimitLayer::new().retry_on_rate_limit(false))
        .service(client);
    let response = service
        .ready()
        .await
        .unwrap()
        .call(request("GET", server.url("/flood")))
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    response
        .extensions()
        .get::<RateLimitInfo>()
        .unwrap()
        .clone()
}

fn roomy_client(headers: usize, buffer: usize) -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .http1_max_headers(headers)
        .http1_max_buf_size(buffer)
        .build_http()
}

/// Ten thousand `RateLimit` lines: hyper's default client refuses the head (a transport error,
/// a POST sent once); a client that accepts them gets the most restrictive reading of all
/// ten thousand, and the layer waits for it.
#[tokio::test(start_paused = true)]
async fn ten_thousand_duplicate_ratelimit_lines() {
    let flood = |_: &http::Method, _: &str, nth: usize| {
        if nth > 0 {
            return Reply::status(200);
        }
        (0..10_000).fold(Reply::status(429), |reply, line| {
            let reset = 1 + line % 7;
            reply.header("ratelimit", format!("\"default\";r={};t={reset}", line % 3))
        })
    };
    let refused = RawServer::start(flood).await;
    let (post, _) = send(request("POST", refused.url("/flood"))).await;
    assert!(post.is_err());
    assert_eq!(refused.count("POST", "/flood"), 1);

    let read = RawServer::start(flood).await;
    let info = first_429(&read, roomy_client(20_000, 1 << 20)).await;
    let meter = info.binding_meter().unwrap();
    assert_eq!(meter.remaining(), Some(0));
    assert_eq!(meter.reset_in(), Some(7 * SECOND));

    let waited = RawServer::start(flood).await;
    let (response, took) = send_through(
        RateLimitLayer::new(),
        roomy_client(20_000, 1 << 20),
        request("POST", waited.url("/flood")),
    )
    .await;
    assert_eq!(response.unwrap().status(), 200);
    assert_eq!(waited.count("POST", "/flood"), 2);
    assert!(took >= 7 * SECOND && took < 8 * SECOND, "{took:?}");
}

/// A 1 MiB header value: hyper's default client refuses it (sent once); a client that takes
/// it gets every member of a 1 MiB `RateLimit` list read, the one spent quota at its end too.
#[tokio::test(start_paused = true)]
async fn a_one_mebibyte_header_value() {
    let mut list = String::new();
    let mut member = 0;
    while list.len() < (1 << 20) {
        list.push_str(&format!("\"q{member}\";r=50;t=10, "));
        member += 1;
    }
    list.push_str("\"last\";r=0;t=3");
    let huge = move |_: &http::Method, _: &str, nth: usize| match nth {
        0 => Reply::status(429).header("ratelimit", list.clone()),
        _ => Reply::status(200),
    };
    let refused = RawServer::start(huge.clone()).await;
    let (post, _) = send(request("POST", refused.url("/flood"))).await;
    assert!(post.is_err());
    assert_eq!(refused.count("POST", "/flood"), 1);

    let read = RawServer::start(huge.clone()).await;
    let info = first_429(&read, roomy_client(100, 4 << 20)).await;
    assert_eq!(info.meters().len(), member + 1);
    let meter = info.binding_meter().unwrap();
    assert_eq!(meter.name(), Some("last"));
    assert_eq!(meter.reset_in(), Some(3 * SECOND));

    let waited = RawServer::start(huge).await;
    let (response, took) = send_through(
        RateLimitLayer::new(),
        roomy_client(100, 4 << 20),
        request("POST", waited.url("/flood")),
    )
    .await;
    assert_eq!(response.unwrap().status(), 200);
    assert!(took >= 3 * SECOND && took < 4 * SECOND, "{took:?}");
}

/// The key a server's calls are gated on, for snapshots.
fn key_of(server: &RawServer) -> Key {
    let (parts, ()) = Request::get(server.url("/")).body(()).unwrap().into_parts();
    Key::origin(&parts).unwrap()
}

/// After the hostile answers above, nothing is left waiting or reserved at the gate.
#[tokio::test(start_paused = true)]
async fn hostile_answers_leave_no_waiter_and_no_reservation() {
    let server = RawServer::start(|_, path, nth| match (path, nth) {
        ("/reset", 0) => Reply::ResetInHead,
        ("/silent", _) => Reply::CloseWithoutAnswer,
        ("/limited", 0) => Reply::status(429).header("retry-after", b"\xff".to_vec()),
        _ => Reply::status(200),
    })
    .await;
    let layer = RateLimitLayer::new();
    let mut service = ServiceBuilder::new()
        .layer(layer.clone())
        .service(support::client());
    for path in ["/reset", "/silent", "/limited", "/fine"] {
        let _ = service
            .ready()
            .await
            .unwrap()
            .call(request("GET", server.url(path)))
            .await;
    }
    let snapshot = service.gates().snapshot(&key_of(&server)).unwrap();
    assert_eq!(snapshot.waiters(), 0);
    assert_eq!(snapshot.in_flight(), 0);
    assert_eq!(snapshot.closed_for(), None);
}

/// A remaining count past any the server could hold (the largest there is) beside a limit of
/// ten: taken in without an overflow, and the next call goes.
#[tokio::test(start_paused = true)]
async fn a_remaining_past_any_count_is_taken_in_without_overflow() {
    let server = RawServer::start(|_, _, _| {
        Reply::status(200)
            .header("x-ratelimit-limit", "10")
            .header("x-ratelimit-remaining", "18446744073709551615")
            .header("x-ratelimit-reset", "30")
    })
    .await;
    let layer = RateLimitLayer::new();
    for _ in 0..2 {
        let (response, took) = send_through(
            layer.clone(),
            support::client(),
            request("GET", server.url("/r")),
        )
        .await;
        assert_eq!(response.unwrap().status(), 200);
        assert_eq!(took, Duration::ZERO);
    }
    assert_eq!(server.count("GET", "/r"), 2);
}

/// A server slower than the probe timeout (a completion API taking 15 s an answer): the slow
/// start's probe outlives its timeout, the next call probes, and the first healthy answer
/// opens the key all the same: the rest leave on the ramp (one more out for each healthy
/// answer), all six answered within three answers' time. Were only the latest probe's
/// answer heard, one call went every 10 s, the last answered at 65 s.
#[tokio::test(start_paused = true)]
async fn a_server_slower_than_the_probe_timeout_is_not_held_to_one_call_a_timeout() {
    let server = RawServer::start(|_, _, _| Reply::status(200).after(15 * SECOND)).await;
    let started = Instant::now();
    let service = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .service(support::client());
    let calls = (0..6).map(|_| {
        let service = service.clone();
        let url = server.url("/complete");
        tokio::spawn(async move { service.oneshot(request("POST", url)).await })
    });
    for call in calls.collect::<Vec<_>>() {
        assert_eq!(call.await.unwrap().unwrap().status(), 200);
    }
    assert_eq!(server.count("POST", "/complete"), 6);
    let took = started.elapsed();
    assert!(took <= 45 * SECOND, "took {took:?}");
}
