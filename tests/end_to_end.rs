//! The layer end to end: a hyper-util client through `RateLimitLayer` against a real hyper
//! server on loopback that counts what it received. The clock is paused: every wait is
//! simulated, and the server stamps arrivals with the same clock.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use support::{TestServer, client, fails, header};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_retry_after::policy::{Behaviour, StatusPolicy};
use tower_retry_after::{BoxError, RateLimitInfo, RateLimitLayer};

const SECOND: Duration = Duration::from_secs(1);

fn full(text: &'static str) -> Full<Bytes> {
    Full::new(Bytes::from_static(text.as_bytes()))
}

/// Sends one request through `layer` over a fresh hyper-util client.
async fn send(
    layer: RateLimitLayer,
    request: Request<Full<Bytes>>,
) -> Result<http::Response<hyper::body::Incoming>, BoxError> {
    let mut service = ServiceBuilder::new().layer(layer).service(client());
    service.ready().await?.call(request).await
}

fn post(server: &TestServer, path: &str) -> Request<Full<Bytes>> {
    Request::post(server.url(path))
        .body(full(r#"{"capture":1}"#))
        .unwrap()
}

fn get(server: &TestServer, path: &str) -> Request<Full<Bytes>> {
    Request::get(server.url(path)).body(full("")).unwrap()
}

#[tokio::test(start_paused = true)]
async fn post_and_502_is_sent_exactly_once() {
    let server = TestServer::start(fails(502, usize::MAX, vec![])).await;
    let response = send(RateLimitLayer::new(), post(&server, "/capture"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(server.count("POST", "/capture"), 1);
}

#[tokio::test(start_paused = true)]
async fn post_and_429_is_retried_no_sooner_than_retry_after() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 2)])).await;
    let response = send(RateLimitLayer::new(), post(&server, "/capture"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let arrivals = server.arrivals("POST", "/capture");
    assert_eq!(arrivals.len(), 2);
    let gap = arrivals[1] - arrivals[0];
    assert!(gap >= 2 * SECOND, "retried after {gap:?}");
    assert!(
        gap <= 2 * SECOND + SECOND / 5,
        "spread beyond a tenth: {gap:?}"
    );
    let bodies: Vec<_> = server.received().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies[0], bodies[1], "the retry sends the same body");
}

#[tokio::test(start_paused = true)]
async fn get_and_503_is_retried_up_to_the_count() {
    let server = TestServer::start(fails(503, usize::MAX, vec![])).await;
    let response = send(RateLimitLayer::new(), get(&server, "/items"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        server.count("GET", "/items"),
        4,
        "one attempt and three retries"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_zero_is_a_guess_and_attempts_are_never_back_to_back() {
    let server = TestServer::start(fails(429, 5, vec![header("retry-after", 0)])).await;
    let response = send(RateLimitLayer::new(), post(&server, "/capture"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let arrivals = server.arrivals("POST", "/capture");
    assert_eq!(arrivals.len(), 6);
    for pair in arrivals.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= SECOND / 4,
            "attempts {gap:?} apart, below the backoff floor"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_over_the_cap_returns_the_429_at_once() {
    let server = TestServer::start(fails(429, usize::MAX, vec![header("retry-after", 61)])).await;
    let started = Instant::now();
    let response = send(RateLimitLayer::new(), post(&server, "/capture"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(server.count("POST", "/capture"), 1);
    assert!(started.elapsed() < SECOND, "waited {:?}", started.elapsed());
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    assert_eq!(
        info.retry_after(),
        Some(61 * SECOND),
        "the caller sees what the server said"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_does_not_fit_the_budget_returns_at_once_not_shortened() {
    let server = TestServer::start(fails(429, usize::MAX, vec![header("retry-after", 50)])).await;
    let started = Instant::now();
    let response = send(RateLimitLayer::new(), post(&server, "/capture"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let arrivals = server.arrivals("POST", "/capture");
    assert_eq!(
        arrivals.len(),
        3,
        "two 50 s waits fit in 120 s, a third does not"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= 100 * SECOND && elapsed < 102 * SECOND,
        "{elapsed:?}"
    );
    assert!(arrivals[2] - arrivals[0] >= 100 * SECOND);
}

#[tokio::test(start_paused = true)]
async fn an_override_for_520_leaves_502_and_503_as_they_were() {
    let server = TestServer::start(|_, path: &str, _| {
        let status = path.trim_start_matches('/').parse().unwrap();
        (status, vec![])
    })
    .await;
    let policy = StatusPolicy::new().on(
        StatusCode::from_u16(520).unwrap(),
        Behaviour::RetryIfIdempotent,
    );
    let layer = RateLimitLayer::new().with_policy(policy);
    for path in ["/520", "/502", "/503"] {
        send(layer.clone(), get(&server, path)).await.unwrap();
        send(layer.clone(), post(&server, path)).await.unwrap();
    }
    assert_eq!(server.count("GET", "/520"), 4, "520 now retried for GET");
    assert_eq!(server.count("POST", "/520"), 1);
    assert_eq!(server.count("GET", "/502"), 4);
    assert_eq!(server.count("POST", "/502"), 1);
    assert_eq!(server.count("GET", "/503"), 4);
    assert_eq!(server.count("POST", "/503"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_streaming_body_is_sent_once() {
    let server = TestServer::start(fails(429, usize::MAX, vec![header("retry-after", 1)])).await;
    let chunks = futures_chunks(&["{\"part\":1}", "{\"part\":2}"]);
    let body: BoxBody<Bytes, BoxError> = StreamBody::new(chunks).boxed();
    let mut service = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .service(client::<BoxBody<Bytes, BoxError>>());
    let request = Request::post(server.url("/upload")).body(body).unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(server.count("POST", "/upload"), 1);
    assert_eq!(&server.received()[0].body[..], b"{\"part\":1}{\"part\":2}");
}

#[tokio::test(start_paused = true)]
async fn an_empty_boxed_body_replays() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 1)])).await;
    let body: BoxBody<Bytes, BoxError> = http_body_util::Empty::new().map_err(Into::into).boxed();
    let mut service = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .service(client::<BoxBody<Bytes, BoxError>>());
    let request = Request::delete(server.url("/items/7")).body(body).unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.count("DELETE", "/items/7"), 2);
}

/// A body of trailers alone: no data, so its size hint is zero, but not empty.
struct OnlyTrailers(Option<http::HeaderMap>);

impl http_body::Body for OnlyTrailers {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        std::task::Poll::Ready(
            self.0
                .take()
                .map(|trailers| Ok(http_body::Frame::trailers(trailers))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(0)
    }
}

/// The request sent is the caller's: a boxed body with no data but trailers is not taken for
/// an empty one (and replaced by one without them); it is sent once, as a boxed body that
/// holds something is.
#[tokio::test(start_paused = true)]
async fn a_boxed_body_of_trailers_alone_is_sent_as_it_is() {
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let inner = tower::service_fn({
        let received = received.clone();
        move |request: Request<BoxBody<Bytes, BoxError>>| {
            let received = received.clone();
            async move {
                let body = request.into_body().collect().await?;
                received.lock().unwrap().push(body.trailers().cloned());
                let refused = http::Response::builder()
                    .status(StatusCode::TOO_MANY_REQUESTS)
                    .header("retry-after", "1");
                Ok::<_, BoxError>(refused.body(Full::new(Bytes::new()))?)
            }
        }
    });
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-checksum", "abc".parse().unwrap());
    let body = OnlyTrailers(Some(trailers)).boxed();
    let request = Request::put("http://api.test/upload").body(body).unwrap();
    let service = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .service(inner);
    let response = service.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "sent once: {received:?}");
    let trailers = received[0]
        .as_ref()
        .expect("the trailers reached the server");
    assert_eq!(trailers["x-checksum"], "abc");
}

/// The layer under a timeout and a trace layer, the way the README stacks it, behaves the same.
#[tokio::test(start_paused = true)]
async fn under_timeout_and_trace_layers_the_counts_are_the_same() {
    let server =
        TestServer::start(
            |method: &http::Method, path: &str, nth| match (method.as_str(), path) {
                ("POST", "/capture") => (502, vec![]),
                ("POST", "/limited") if nth == 0 => (429, vec![header("retry-after", 2)]),
                ("GET", "/flaky") => (503, vec![]),
                _ => (200, vec![]),
            },
        )
        .await;
    let mut service = ServiceBuilder::new()
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .timeout(Duration::from_secs(300))
        .layer(RateLimitLayer::new())
        .service(client());
    let mut call = async |request| service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(call(post(&server, "/capture")).await.status(), 502);
    assert_eq!(call(post(&server, "/limited")).await.status(), 200);
    assert_eq!(call(get(&server, "/flaky")).await.status(), 503);
    assert_eq!(server.count("POST", "/capture"), 1);
    assert_eq!(server.count("POST", "/limited"), 2);
    let limited = server.arrivals("POST", "/limited");
    assert!(limited[1] - limited[0] >= 2 * SECOND);
    assert_eq!(server.count("GET", "/flaky"), 4);
}

/// A connect error sent nothing, so even a POST is retried; the attempts are counted by a
/// service under the layer, since no server sees them.
#[cfg(feature = "hyper-util")]
#[tokio::test(start_paused = true)]
async fn a_connect_error_is_retried_on_any_method() {
    let (error, attempts) = post_to_a_closed_port().await;
    assert!(
        tower_retry_after::policy::is_connect_error(&error),
        "{error:?}"
    );
    assert_eq!(attempts, 4);
}

/// Without the `hyper-util` feature its client's connect errors are not known to have sent
/// nothing: a POST that met one is sent once, as after any transport error.
#[cfg(not(feature = "hyper-util"))]
#[tokio::test(start_paused = true)]
async fn without_hyper_util_a_post_that_met_a_connect_error_is_sent_once() {
    let (error, attempts) = post_to_a_closed_port().await;
    assert!(
        !tower_retry_after::policy::is_connect_error(&error),
        "{error:?}"
    );
    assert_eq!(attempts, 1);
}

/// A POST through the layer and a hyper-util client to a port nothing listens on: its error,
/// and how many attempts the layer made.
async fn post_to_a_closed_port() -> (tower_retry_after::BoxError, usize) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let attempts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = attempts.clone();
    let mut service = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .map_request(move |request: Request<Full<Bytes>>| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            request
        })
        .service(client());
    let request = Request::post(format!("http://{closed}/capture"))
        .body(full("{}"))
        .unwrap();
    let error = service
        .ready()
        .await
        .unwrap()
        .call(request)
        .await
        .unwrap_err();
    (error, attempts.load(std::sync::atomic::Ordering::SeqCst))
}

fn futures_chunks(
    chunks: &[&'static str],
) -> impl futures_util::Stream<Item = Result<hyper::body::Frame<Bytes>, BoxError>> + Send + Sync + 'static
{
    let frames: Vec<Result<_, BoxError>> = chunks
        .iter()
        .map(|chunk| {
            Ok(hyper::body::Frame::data(Bytes::from_static(
                chunk.as_bytes(),
            )))
        })
        .collect();
    futures_util::stream::iter(frames)
}

/// The server's explicit verdict overrides the table on any method: it knows whether the
/// request ran. `x-should-retry: true` on a POST 502 resends it; without the header, or with
/// `false` (in any line of it), the POST is sent once; `false` on a GET 503 stops the retry
/// the table allows.
#[tokio::test(start_paused = true)]
async fn the_servers_verdict_decides_whether_a_post_5xx_is_sent_again() {
    let verdict = |value: &'static str| vec![header("x-should-retry", value)];
    let allowed = TestServer::start(fails(502, 1, verdict("true"))).await;
    let response = send(RateLimitLayer::new(), post(&allowed, "/capture")).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(allowed.count("POST", "/capture"), 2);

    for headers in [vec![], verdict("false")] {
        let silent = TestServer::start(fails(502, 1, headers)).await;
        let response = send(RateLimitLayer::new(), post(&silent, "/capture")).await;
        assert_eq!(response.unwrap().status(), StatusCode::BAD_GATEWAY);
        assert_eq!(silent.count("POST", "/capture"), 1);
    }

    let disagreeing = vec![
        header("x-should-retry", "true"),
        header("x-should-retry", "false"),
    ];
    let torn = TestServer::start(fails(502, 1, disagreeing)).await;
    let response = send(RateLimitLayer::new(), post(&torn, "/capture")).await;
    assert_eq!(response.unwrap().status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        torn.count("POST", "/capture"),
        1,
        "one line of two forbade it"
    );

    let forbidden = TestServer::start(fails(503, 1, verdict("false"))).await;
    let response = send(RateLimitLayer::new(), get(&forbidden, "/items")).await;
    assert_eq!(response.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(forbidden.count("GET", "/items"), 1);
}

/// A call waiting out a 429 keeps only that response's head, not its body: an unread body
/// pins its connection over hyper-util, one per waiting call. The client keeps no idle
/// connection here, so what stays open is what the calls hold; the refusal's body (a 256 KiB
/// page) is more than hyper reads ahead of its reader.
#[tokio::test(start_paused = true)]
async fn calls_waiting_at_the_gate_hold_no_connection() {
    const CALLS: usize = 1000;
    let page = Bytes::from(vec![b'x'; 256 * 1024]);
    let script = |_: &http::Method, _: &str, nth| {
        if nth < CALLS {
            (429, vec![header("retry-after", 2)])
        } else {
            (200, vec![])
        }
    };
    let server = TestServer::start_with_body(script, page).await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    // All of them out at once, as on a key whose gate is open: the slow start would send one.
    let service = ServiceBuilder::new()
        .layer(RateLimitLayer::new().slow_start(false))
        .service(client);
    let calls: Vec<_> = (0..CALLS)
        .map(|_| tokio::spawn(service.clone().oneshot(get(&server, "/items"))))
        .collect();
    // Spinning keeps the paused clock still: every call has its 429 and waits at the gate.
    // The bound is a safety valve, not a wait: the loop ends when the last call is in, within
    // a second on a quiet machine; on one loaded by other builds 1,000 connections took longer
    // than 5 s.
    let real = std::time::Instant::now();
    while server.count("GET", "/items") < CALLS || server.open_connections() > 0 {
        if real.elapsed() > Duration::from_secs(60) {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(server.count("GET", "/items"), CALLS);
    assert_eq!(
        server.open_connections(),
        0,
        "connections held by {CALLS} waiting calls"
    );
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().status(), StatusCode::OK);
    }
    assert_eq!(server.count("GET", "/items"), 2 * CALLS);
}
