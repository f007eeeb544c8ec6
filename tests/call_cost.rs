//! What a call cost, as the caller reads it: a `CallCost` on every response the layer returns
//! and on every `Throttled` it gives up with. Against a real hyper server on loopback that
//! counts what it received, on a paused clock.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use support::{TestServer, client, header};
use tower::{Layer, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{BoxError, CallCost, Gates, RateLimitLayer, Throttled, TokenCost};

const SECOND: Duration = Duration::from_secs(1);

/// Sends a request with `method` to `path` on `server` through `layer`, over a fresh client.
async fn send(
    layer: RateLimitLayer,
    server: &TestServer,
    method: &str,
    path: &str,
) -> Result<http::Response<hyper::body::Incoming>, BoxError> {
    let request = Request::builder()
        .method(method)
        .uri(server.url(path))
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let mut service = ServiceBuilder::new().layer(layer).service(client());
    service.ready().await?.call(request).await
}

fn cost_of<B>(response: &http::Response<B>) -> CallCost {
    *response
        .extensions()
        .get::<CallCost>()
        .expect("no CallCost")
}

#[tokio::test(start_paused = true)]
async fn a_response_answered_at_once_cost_one_attempt_and_no_wait() {
    let server = TestServer::start(|_, _, _| (200, vec![])).await;
    let response = send(RateLimitLayer::new(), &server, "GET", "/items")
        .await
        .unwrap();
    let cost = cost_of(&response);
    assert_eq!((cost.attempts(), cost.waited()), (1, Duration::ZERO));
}

/// A wait at the gate (a 429's) and a wait asleep (a 503's backoff) both count, as does every
/// request sent.
#[tokio::test(start_paused = true)]
async fn a_retried_response_counts_every_request_sent_and_every_wait() {
    let server = TestServer::start(|_, path, nth| match (path, nth) {
        ("/limited", 0) => (429, vec![header("retry-after", 2)]),
        ("/flaky", 0 | 1) => (503, vec![]),
        _ => (200, vec![]),
    })
    .await;
    let limited = send(RateLimitLayer::new(), &server, "POST", "/limited")
        .await
        .unwrap();
    let cost = cost_of(&limited);
    assert_eq!(cost.attempts(), 2);
    assert_eq!(server.count("POST", "/limited"), 2);
    let waited = cost.waited();
    assert!(
        waited >= 2 * SECOND && waited <= 2 * SECOND + SECOND / 5,
        "{waited:?}"
    );

    let flaky = send(RateLimitLayer::new(), &server, "GET", "/flaky")
        .await
        .unwrap();
    let cost = cost_of(&flaky);
    assert_eq!(cost.attempts(), 3);
    assert_eq!(server.count("GET", "/flaky"), 3);
    let arrivals = server.arrivals("GET", "/flaky");
    let slept = arrivals[2] - arrivals[0];
    // Two guessed backoffs: each at least a quarter second, and no longer than the retries.
    assert!(cost.waited() >= SECOND / 2, "{:?}", cost.waited());
    assert!(cost.waited() <= slept, "{:?} > {slept:?}", cost.waited());
}

/// The layer hands back a refusal it does not wait out (over the cap, or not fitting in what
/// is left of the budget) with what the call cost to get there.
#[tokio::test(start_paused = true)]
async fn a_response_the_layer_gave_up_on_says_what_it_cost() {
    let server = TestServer::start(|_, path, _| match path {
        "/hour" => (429, vec![header("retry-after", 3600)]),
        _ => (429, vec![header("retry-after", 8)]),
    })
    .await;
    let over_cap = send(RateLimitLayer::new(), &server, "GET", "/hour")
        .await
        .unwrap();
    assert_eq!(over_cap.status(), StatusCode::TOO_MANY_REQUESTS);
    let cost = cost_of(&over_cap);
    assert_eq!((cost.attempts(), cost.waited()), (1, Duration::ZERO));

    // 20 s in all: two waits of 8 s fit, a third does not.
    let layer = RateLimitLayer::new()
        .retry_after_cap(10 * SECOND)
        .max_wait(20 * SECOND);
    let out_of_time = send(layer, &server, "GET", "/minute").await.unwrap();
    assert_eq!(out_of_time.status(), StatusCode::TOO_MANY_REQUESTS);
    let cost = cost_of(&out_of_time);
    assert_eq!(cost.attempts(), 3);
    assert_eq!(server.count("GET", "/minute"), 3);
    assert!(
        cost.waited() >= 16 * SECOND && cost.waited() <= 20 * SECOND,
        "{:?}",
        cost.waited()
    );
}

/// A call that gives up waiting says what it cost in its `Throttled`: the requests it sent
/// before (none, if it gave up at the gate at once) and the time it waited.
#[tokio::test(start_paused = true)]
async fn a_throttled_call_says_what_it_cost() {
    let server = TestServer::start(|_, path, nth| match (path, nth) {
        ("/flaky", 0) => (503, vec![header("retry-after", 2)]),
        ("/limited", 0) => (429, vec![header("retry-after", 50)]),
        _ => (200, vec![]),
    })
    .await;
    // Two layers on one set of gates: a 429 through the patient one holds the hasty one's
    // calls, which may wait 20 s at most.
    let gates = Gates::new();
    let patient = RateLimitLayer::new().gates(gates.clone());
    let hasty = RateLimitLayer::new()
        .retry_after_cap(10 * SECOND)
        .max_wait(20 * SECOND)
        .gates(gates);

    // The hasty call sleeps out its 503's two seconds; meanwhile the gate closes for 50.
    let flaky = {
        let (hasty, server) = (hasty.clone(), server.clone());
        tokio::spawn(async move { send(hasty, &server, "GET", "/flaky").await })
    };
    tokio::time::sleep(SECOND).await;
    let limited = {
        let server = server.clone();
        tokio::spawn(async move { send(patient, &server, "POST", "/limited").await })
    };
    tokio::time::sleep(SECOND / 2).await;
    assert_eq!(server.count("POST", "/limited"), 1, "the gate is closed");

    let error = flaky.await.unwrap().unwrap_err();
    let throttled = error.downcast_ref::<Throttled>().expect("not Throttled");
    assert_eq!(throttled.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(throttled.cost().attempts(), 1);
    let waited = throttled.cost().waited();
    assert!(
        waited >= 2 * SECOND && waited <= 2 * SECOND + SECOND / 5,
        "{waited:?}"
    );
    assert_eq!(server.count("GET", "/flaky"), 1);

    // Held at the gate before sending anything: nothing sent, nothing waited.
    let error = send(hasty, &server, "GET", "/other").await.unwrap_err();
    let throttled = error.downcast_ref::<Throttled>().expect("not Throttled");
    assert_eq!(throttled.status(), None);
    assert_eq!(
        (throttled.cost().attempts(), throttled.cost().waited()),
        (0, Duration::ZERO)
    );
    assert_eq!(server.count("GET", "/other"), 0);
    limited.abort();
}

/// A retry the gate would hold beyond what the call may wait (another call closed it longer)
/// ends at once with the response: its cost is the one request, and no wait.
#[tokio::test(start_paused = true)]
async fn a_retry_the_gate_holds_beyond_the_budget_returns_the_response_with_its_cost() {
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // The first request is answered late, after the second has closed the gate for 300 s.
    let service = tower::service_fn(move |_request: Request<String>| {
        let nth = sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            let (wait, latency) = if nth == 0 { ("5", 10) } else { ("300", 0) };
            tokio::time::sleep(Duration::from_millis(latency)).await;
            http::Response::builder()
                .status(429)
                .header("retry-after", wait)
                .body(String::new())
        }
    });
    let gates = Gates::new();
    // Both requests out at once: no slow start on the key the first one opens.
    let hasty = RateLimitLayer::new().gates(gates.clone()).slow_start(false);
    let patient = RateLimitLayer::new()
        .gates(gates)
        .retry_after_cap(600 * SECOND)
        .max_wait(1200 * SECOND);
    let request = || {
        Request::get("http://api.test/")
            .body(String::new())
            .unwrap()
    };
    let first = tokio::spawn(hasty.layer(service.clone()).oneshot(request()));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let closing = tokio::spawn(patient.layer(service).oneshot(request()));
    let response = first.await.unwrap().expect("the response, not Throttled");
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let cost = cost_of(&response);
    assert_eq!((cost.attempts(), cost.waited()), (1, Duration::ZERO));
    closing.abort();
}

/// A call held by a token meter for exactly what its budget leaves sleeps that long and no
/// longer: the spread an instruction is given never takes it past its budget. (A 503 with
/// two seconds to wait and 100 tokens left of a window resetting in four; the call declares
/// 500 and may wait four seconds in all.)
#[tokio::test(start_paused = true)]
async fn a_hold_that_takes_what_the_budget_leaves_never_sleeps_past_it() {
    for seed in 1..=10 {
        let server = TestServer::start(|_, _, nth| {
            let tokens = vec![
                header("x-ratelimit-limit-tokens", 1000),
                header(
                    "x-ratelimit-remaining-tokens",
                    if nth == 0 { 100 } else { 500 },
                ),
                header("x-ratelimit-reset-tokens", "4s"),
            ];
            match nth {
                0 => {
                    let mut headers = tokens;
                    headers.push(header("retry-after", 2));
                    (503, headers)
                }
                _ => (200, tokens),
            }
        })
        .await;
        let layer = RateLimitLayer::new()
            .retry_after_cap(2 * SECOND)
            .max_wait(4 * SECOND)
            .jitter_seed(seed);
        let request = Request::get(server.url("/v1/models"))
            .extension(TokenCost::new(100, 400))
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let mut service = ServiceBuilder::new().layer(layer).service(client());
        let response = service.ready().await.unwrap().call(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "seed {seed}");
        let waited = cost_of(&response).waited();
        assert!(
            waited > 3 * SECOND && waited <= 4 * SECOND,
            "seed {seed}: {waited:?}"
        );
        assert_eq!(server.count("GET", "/v1/models"), 2);
    }
}
