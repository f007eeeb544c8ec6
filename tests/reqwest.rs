//! The layer as reqwest middleware, end to end: a real `reqwest::Client` wrapped by
//! `reqwest_middleware::ClientBuilder::new(client).with(layer.middleware())`, against a real
//! hyper server on loopback that counts what it received. The clock is paused: every wait is
//! simulated, and the server stamps arrivals with the same clock.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::StatusCode;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use support::{TestServer, fails, header};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{
    CallCost, Gates, HeldBy, Key, RateLimitInfo, RateLimitLayer, RateLimitedExt, Throttled,
    TokenCost,
};

const SECOND: Duration = Duration::from_secs(1);

/// A reqwest client with `layer` as its only middleware.
fn client(layer: &RateLimitLayer) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(layer.middleware())
        .build()
}

/// Returns once the gate of `server`'s origin in `gates` is closed (a 429 was read); panics if
/// it is not within a second.
async fn closed(gates: &Gates, server: &TestServer) {
    let origin = Key::from_origin(&server.url("")).unwrap();
    for _ in 0..100 {
        if gates
            .snapshot(&origin)
            .and_then(|gate| gate.closed_for())
            .is_some()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no 429 closed the gates given to the layer");
}

#[tokio::test(start_paused = true)]
async fn post_and_429_is_retried_once_after_the_wait() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 2)])).await;
    let response = client(&RateLimitLayer::new())
        .post(server.url("/capture"))
        .body(r#"{"capture":1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let arrivals = server.arrivals("POST", "/capture");
    assert_eq!(arrivals.len(), 2, "the 429 and exactly one retry");
    let gap = arrivals[1] - arrivals[0];
    assert!(gap >= 2 * SECOND, "retried after {gap:?}");
    assert!(gap <= 2 * SECOND + SECOND / 5, "waited {gap:?}");
    let bodies: Vec<_> = server.received().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies[0], bodies[1], "the retry sends the same body");
    let cost = response.extensions().get::<CallCost>().unwrap();
    assert_eq!(cost.attempts(), 2);
}

#[tokio::test(start_paused = true)]
async fn post_and_502_is_sent_exactly_once() {
    let server = TestServer::start(fails(502, usize::MAX, vec![])).await;
    let response = client(&RateLimitLayer::new())
        .post(server.url("/capture"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(server.count("POST", "/capture"), 1);
}

#[tokio::test(start_paused = true)]
async fn get_and_503_is_retried_up_to_the_count() {
    let server = TestServer::start(fails(503, usize::MAX, vec![])).await;
    let response = client(&RateLimitLayer::new())
        .get(server.url("/items"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.count("GET", "/items"), 4, "one and three retries");
}

#[tokio::test(start_paused = true)]
async fn a_streaming_body_is_sent_once() {
    let server = TestServer::start(fails(429, usize::MAX, vec![header("retry-after", 1)])).await;
    let chunks = futures_util::stream::iter(["{\"part\":1}", "{\"part\":2}"].map(|chunk| {
        Ok::<_, std::io::Error>(http_body::Frame::data(bytes::Bytes::from_static(
            chunk.as_bytes(),
        )))
    }));
    let body = reqwest::Body::wrap(http_body_util::StreamBody::new(chunks));
    let response = client(&RateLimitLayer::new())
        .post(server.url("/upload"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(server.count("POST", "/upload"), 1);
    assert_eq!(&server.received()[0].body[..], b"{\"part\":1}{\"part\":2}");
}

#[tokio::test(start_paused = true)]
async fn the_reading_and_the_cost_ride_on_the_reqwest_response() {
    let server = TestServer::start(|_, _, _| {
        let meters = vec![
            header("ratelimit-policy", r#""minute";q=100;w=60"#),
            header("ratelimit", r#""minute";r=99;t=30"#),
        ];
        (200, meters)
    })
    .await;
    let url = server.url("/user");
    let response = client(&RateLimitLayer::new())
        .get(&url)
        .send()
        .await
        .unwrap();
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    assert_eq!(info.binding_meter().unwrap().remaining(), Some(99));
    assert_eq!(
        response.extensions().get::<CallCost>().unwrap().attempts(),
        1
    );
    assert_eq!(
        response.url().as_str(),
        url,
        "reqwest's own fields are kept"
    );
    assert_eq!(response.headers()["ratelimit"], r#""minute";r=99;t=30"#);
    assert_eq!(response.text().await.unwrap(), "{}", "the body is whole");
}

/// The second client's call, made while the first waits out a 429, waits at the same gate
/// instead of being sent into the closed window (or refused).
#[tokio::test(start_paused = true)]
async fn two_clients_sharing_gates_hold_each_others_calls() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 2)])).await;
    let gates = Gates::new();
    let first = client(&RateLimitLayer::new().gates(gates.clone()));
    let second = client(&RateLimitLayer::new().gates(gates.clone()));
    let refused = tokio::spawn({
        let url = server.url("/items");
        async move { first.post(url).send().await.unwrap() }
    });
    closed(&gates, &server).await;
    let started = Instant::now();
    let waited = second.post(server.url("/items")).send().await.unwrap();
    assert_eq!(waited.status(), StatusCode::OK);
    assert_eq!(refused.await.unwrap().status(), StatusCode::OK);
    let arrivals = server.arrivals("POST", "/items");
    assert_eq!(arrivals.len(), 3, "one refusal, the retry, the second call");
    for later in &arrivals[1..] {
        let after = *later - arrivals[0];
        assert!(after >= 2 * SECOND, "sent {after:?} after the 429");
    }
    let cost = waited.extensions().get::<CallCost>().unwrap();
    assert_eq!(cost.attempts(), 1, "the second call was never refused");
    assert!(cost.waited() > SECOND, "it waited at the gate: {cost:?}");
    assert!(started.elapsed() >= SECOND);
}

/// One layer for a hyper-util stack and a reqwest client: a 429 the hyper stack saw holds the
/// reqwest client's call.
#[tokio::test(start_paused = true)]
async fn a_hyper_stack_and_a_reqwest_client_from_one_layer_share_its_gates() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 2)])).await;
    let gates = Gates::new();
    let layer = RateLimitLayer::new().gates(gates.clone());
    let reqwest_client = client(&layer);
    let mut hyper_client = ServiceBuilder::new()
        .layer(layer.clone())
        .service(support::client::<http_body_util::Full<bytes::Bytes>>());
    let request = http::Request::get(server.url("/items"))
        .body(http_body_util::Full::default())
        .unwrap();
    let hyper_call = hyper_client.ready().await.unwrap().call(request);
    let hyper_call = tokio::spawn(hyper_call);
    closed(&gates, &server).await;
    let response = reqwest_client
        .get(server.url("/items"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(hyper_call.await.unwrap().unwrap().status(), StatusCode::OK);
    let arrivals = server.arrivals("GET", "/items");
    assert_eq!(arrivals.len(), 3);
    assert!(
        arrivals[1..]
            .iter()
            .all(|at| *at - arrivals[0] >= 2 * SECOND)
    );
}

/// A call whose budget cannot cover the gate's closure fails at once, sends nothing, and the
/// error holds `Throttled`.
#[tokio::test(start_paused = true)]
async fn a_closed_gate_beyond_the_budget_fails_fast_with_throttled() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 50)])).await;
    let gates = Gates::new();
    let patient = client(&RateLimitLayer::new().gates(gates.clone()));
    // The 50 s closure does not fit in a budget of 20 s.
    let hasty = client(
        &RateLimitLayer::new()
            .gates(gates.clone())
            .retry_after_cap(10 * SECOND)
            .max_wait(20 * SECOND),
    );
    let waiting = tokio::spawn({
        let url = server.url("/items");
        async move { patient.get(url).send().await }
    });
    closed(&gates, &server).await;
    let started = Instant::now();
    let error = hasty.get(server.url("/items")).send().await.unwrap_err();
    assert!(started.elapsed() < SECOND, "failed fast");
    assert!(error.is_middleware());
    let throttled: &Throttled = tower_retry_after::reqwest::throttled(&error).unwrap();
    assert!(throttled.retry_after() > 40 * SECOND, "{throttled}");
    assert_eq!(throttled.cost().attempts(), 0);
    assert_eq!(
        server.count("GET", "/items"),
        1,
        "the failed call sent nothing"
    );
    waiting.abort();
}

/// A reqwest call's result reads as a tower stack's: the 429 over the cap comes back at once,
/// rate limited for its wait; the next call, declined at the gate, rate limited with nothing
/// sent; a connect error is not rate limited.
#[tokio::test(start_paused = true)]
async fn a_refusal_and_a_declined_call_read_as_rate_limited_and_a_connect_error_does_not() {
    let server = TestServer::start(fails(429, usize::MAX, vec![header("retry-after", 3600)])).await;
    let client = client(&RateLimitLayer::new());
    let result = client.get(server.url("/items")).send().await;
    assert_eq!(
        result.as_ref().unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    let limited = result.rate_limited().expect("a 429 is rate limited");
    assert_eq!(limited.retry_after(), Some(3600 * SECOND));
    assert!(limited.sent());
    let result = client.get(server.url("/items")).send().await;
    let error = result.as_ref().unwrap_err();
    assert!(
        tower_retry_after::reqwest::throttled(error).is_some(),
        "{error}"
    );
    let limited = result.rate_limited().expect("Throttled is rate limited");
    assert!(limited.retry_after() > Some(3500 * SECOND));
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
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let result = client.get(format!("http://{closed}/items")).send().await;
    assert!(result.as_ref().unwrap_err().is_connect());
    assert_eq!(result.rate_limited(), None);
}

/// An OpenAI-like server that reports 1,000 tokens left, for 3 s, on every answer.
async fn thousand_tokens_left_for_three_seconds() -> TestServer {
    TestServer::start(|_, _, nth| {
        let headers = vec![
            header("x-ratelimit-limit-requests", 500),
            header("x-ratelimit-remaining-requests", 499 - nth),
            header("x-ratelimit-limit-tokens", 10_000),
            header("x-ratelimit-remaining-tokens", 1_000),
            header("x-ratelimit-reset-tokens", "3s"),
        ];
        (200, headers)
    })
    .await
}

/// Asserts the second request on `path` went no sooner than the token meter's reset, 3 s after
/// the first answer reported it, and not much later.
fn held_until_the_reset(server: &TestServer, path: &str) {
    let arrivals = server.arrivals("POST", path);
    assert_eq!(arrivals.len(), 2, "nothing sent twice");
    let gap = arrivals[1] - arrivals[0];
    assert!(gap >= 3 * SECOND, "sent {gap:?} after the meter was read");
    assert!(gap < 5 * SECOND, "held {gap:?}");
}

/// A `TokenCost` declared with reqwest-middleware's `with_extension` reaches the key's gate:
/// the server has said 1,000 tokens are left, so a call declaring 1,500 waits for the meter's
/// reset instead of being sent to be refused.
#[tokio::test(start_paused = true)]
async fn a_token_cost_declared_with_with_extension_holds_the_call_at_a_meter_that_lacks_it() {
    let server = thousand_tokens_left_for_three_seconds().await;
    let url = server.url("/v1/chat/completions");
    let client = client(&RateLimitLayer::new());
    client.post(&url).body("{}").send().await.unwrap();
    let response = client
        .post(&url)
        .with_extension(TokenCost::new(1_000, 500))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    held_until_the_reset(&server, "/v1/chat/completions");
    let cost = response.extensions().get::<CallCost>().unwrap();
    assert_eq!(cost.attempts(), 1);
    assert!(
        cost.waited() > 2 * SECOND,
        "it waited at the gate: {cost:?}"
    );
}

/// reqwest follows redirects below the middleware and tells a later hop's connect error under
/// the URL first asked, so a connect error may come after the request ran (a POST answered
/// 303): it is retried for an idempotent request only, a POST with an `Idempotency-Key`
/// included. The attempts are counted by a middleware under the layer, since no server sees
/// them.
#[tokio::test(start_paused = true)]
async fn a_connect_error_is_retried_for_an_idempotent_request_only() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}/capture");
    let attempts = Arc::new(AtomicUsize::new(0));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RateLimitLayer::new().middleware())
        .with(Counting(attempts.clone()))
        .build();
    let requests = [
        (client.post(&url).body("{}"), 1),
        (
            client.post(&url).header("idempotency-key", "k1").body("{}"),
            4,
        ),
        (client.get(&url), 4),
    ];
    for (request, expected) in requests {
        attempts.store(0, Ordering::SeqCst);
        let error = request.send().await.unwrap_err();
        assert!(
            error.is_connect(),
            "the chain's own error comes back: {error}"
        );
        assert_eq!(attempts.load(Ordering::SeqCst), expected, "{error}");
    }
}

/// Each attempt starts from the caller's extensions, not from what an earlier attempt left in
/// them; the caller gets back those of the attempt whose response it got.
#[tokio::test(start_paused = true)]
async fn each_attempt_starts_from_the_callers_extensions_and_the_last_ones_come_back() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 1)])).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RateLimitLayer::new().middleware())
        .with(Counting(Arc::default()))
        .build();
    let mut extensions = http::Extensions::new();
    extensions.insert(Caller);
    let request = client
        .post(server.url("/items"))
        .body("{}")
        .build()
        .unwrap();
    let response = client
        .execute_with_extensions(request, &mut extensions)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let last = Attempted {
        number: 2,
        saw_the_callers: true,
        saw_an_earlier: false,
    };
    assert_eq!(extensions.get::<Attempted>(), Some(&last));
    assert!(extensions.get::<Caller>().is_some());
}

/// What a caller put in the chain's extensions.
#[derive(Clone)]
struct Caller;

/// What `Counting` leaves in the chain's extensions for the attempt it saw.
#[derive(Clone, Debug, PartialEq)]
struct Attempted {
    number: usize,
    saw_the_callers: bool,
    saw_an_earlier: bool,
}

/// Counts the requests that pass it, and marks each in the chain's extensions.
struct Counting(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Counting {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let attempted = Attempted {
            number: self.0.fetch_add(1, Ordering::SeqCst) + 1,
            saw_the_callers: extensions.get::<Caller>().is_some(),
            saw_an_earlier: extensions.get::<Attempted>().is_some(),
        };
        extensions.insert(attempted);
        next.run(request, extensions).await
    }
}

/// Ten tasks of three calls each through reqwest against a six-minute token quota of ten
/// requests' tokens, as `tests/token_meters.rs` runs it over hyper: declaring the cost with
/// `with_extension`, cold and warm, no request is refused; without, the calls in flight when
/// the server says the meter is spent are.
#[tokio::test(start_paused = true)]
async fn declared_token_costs_keep_reqwest_calls_off_a_token_quota_longer_than_the_cap() {
    use support::token_api::{SPENDS, token_api};
    let mut figures = Vec::new();
    for declared in [true, false] {
        for warm in [false, true] {
            let (server, refused) = token_api(10 * SPENDS).await;
            let url = server.url("/v1/chat/completions");
            let client = client(&RateLimitLayer::new());
            let send = move |client: ClientWithMiddleware, url: String| async move {
                let mut request = client.post(url).body("{}");
                if declared {
                    request = request.with_extension(TokenCost::new(100, SPENDS - 100));
                }
                request.send().await
            };
            if warm {
                let first = send(client.clone(), url.clone()).await.unwrap();
                assert_eq!(first.status(), StatusCode::OK);
            }
            let tasks: Vec<_> = (0..10)
                .map(|_| {
                    let (client, url) = (client.clone(), url.clone());
                    tokio::spawn(async move {
                        let mut answered = 0;
                        for _ in 0..3 {
                            let result = send(client.clone(), url.clone()).await;
                            if result.as_ref().is_ok_and(|r| r.status() == StatusCode::OK) {
                                answered += 1;
                            } else {
                                assert!(result.rate_limited().is_some(), "{result:?}");
                            }
                        }
                        answered
                    })
                })
                .collect();
            let mut answered = 0;
            for task in tasks {
                answered += task.await.unwrap();
            }
            assert_eq!(answered + usize::from(warm), 10, "the quota spent whole");
            let refused = *refused.lock().unwrap();
            figures.push((declared, warm, refused));
            if declared {
                assert!(refused <= 1, "warm {warm}: {refused} refused");
            }
        }
    }
    let refused = |declared| {
        figures
            .iter()
            .filter(|(d, ..)| *d == declared)
            .map(|(.., refused)| *refused)
            .sum::<u64>()
    };
    assert!(
        refused(true) < refused(false),
        "(declared, warm, refused): {figures:?}"
    );
    println!("(declared, warm, refused): {figures:?}");
}

/// An error wrapped by a middleware, as reqwest-retry's `RetryError` wraps the
/// `reqwest_middleware::Error` it gives up on: its source is that error.
#[derive(Debug)]
struct Wrapped(reqwest_middleware::Error);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request failed after retries")
    }
}

impl std::error::Error for Wrapped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Wraps every error of the rest of the chain in [`Wrapped`].
struct Wrapping;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Wrapping {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        next.run(request, extensions)
            .await
            .map_err(|error| reqwest_middleware::Error::middleware(Wrapped(error)))
    }
}

/// A middleware that wraps the chain's errors (reqwest-retry does, before the layer as the
/// docs advise it) hides neither `Throttled` nor the rate limit from the caller.
#[tokio::test(start_paused = true)]
async fn throttled_is_found_under_a_middleware_that_wraps_the_error() {
    let server = TestServer::start(fails(429, usize::MAX, vec![header("retry-after", 3600)])).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(Wrapping)
        .with(RateLimitLayer::new().middleware())
        .build();
    let refused = client.get(server.url("/items")).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let result = client.get(server.url("/items")).send().await;
    assert_eq!(
        server.count("GET", "/items"),
        1,
        "the second call sent nothing"
    );
    let error = result.as_ref().unwrap_err();
    assert!(
        tower_retry_after::reqwest::throttled(error).is_some(),
        "Throttled not found: {error:?}"
    );
    assert!(result.rate_limited().is_some(), "not rate limited: {error}");
}

/// A per-credential key (the `key` setter's recipe) over a reqwest client, the token set on
/// each request as the module's documentation says (reqwest adds `default_headers` after the
/// middleware ran): a 429 for one token does not hold another token's calls, as over a hyper
/// stack, and does hold its own.
#[tokio::test(start_paused = true)]
async fn a_token_set_on_each_request_keys_its_calls() {
    let server = TestServer::start(|_, path, _| {
        if path == "/a" {
            (429, vec![header("retry-after", 600)])
        } else {
            (200, vec![])
        }
    })
    .await;
    let layer = RateLimitLayer::new().key(|request: &http::request::Parts| {
        match request.headers.get("authorization") {
            Some(token) => Some(Key::credential(token.as_bytes())),
            None => Key::origin(request),
        }
    });
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(layer.middleware())
        .build();
    let as_token = |token: &str, path: &str| {
        client
            .get(server.url(path))
            .header("authorization", format!("Bearer {token}"))
            .send()
    };
    let refused = as_token("alice", "/a").await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let result = as_token("bob", "/b").await;
    assert_eq!(
        result.as_ref().map(|response| response.status()).ok(),
        Some(StatusCode::OK),
        "bob's token was held by alice's 429: {result:?}"
    );
    let held = as_token("alice", "/b").await;
    assert!(
        held.rate_limited().is_some_and(|limited| !limited.sent()),
        "alice's calls are held: {held:?}"
    );
    assert_eq!(server.count("GET", "/b"), 1);
}

/// A server that answers `/orders`, whatever the method, with a 303 to `/orders/1`, whose
/// first GET a rate limiter refuses.
async fn redirecting_to_a_refusal() -> TestServer {
    TestServer::start(|method, path, nth| match (method.as_str(), path) {
        (_, "/orders") => (303, vec![header("location", "/orders/1")]),
        ("GET", "/orders/1") if nth == 0 => (429, vec![header("retry-after", 1)]),
        _ => (200, vec![]),
    })
    .await
}

/// Post/Redirect/Get: the POST runs and answers 303; reqwest follows to a GET that a rate
/// limiter refuses. The 429 is the GET's: the POST had run, and is not sent again. A GET
/// redirected so may run twice, and is.
#[tokio::test(start_paused = true)]
async fn a_post_answered_303_then_refused_at_the_redirect_is_not_posted_again() {
    let server = redirecting_to_a_refusal().await;
    let response = client(&RateLimitLayer::new())
        .post(server.url("/orders"))
        .body(r#"{"item":1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(
        server.count("POST", "/orders"),
        1,
        "the POST ran and was answered 303; it was sent again for the redirect's 429"
    );
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "returned");
    assert_eq!(server.count("GET", "/orders/1"), 1);
    let server = redirecting_to_a_refusal().await;
    let response = client(&RateLimitLayer::new())
        .get(server.url("/orders"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "a GET may run twice");
    assert_eq!(server.count("GET", "/orders"), 2);
}

/// Post/Redirect/Get where the redirect's target cannot be connected to: the connect error is
/// the GET's, and the POST, which had run, is not sent again.
#[tokio::test(start_paused = true)]
async fn a_post_answered_303_whose_redirect_cannot_connect_is_not_posted_again() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let server = TestServer::start(move |method, path, _| match (method.as_str(), path) {
        ("POST", "/orders") => (
            303,
            vec![header("location", format!("http://{closed}/done"))],
        ),
        _ => (200, vec![]),
    })
    .await;
    let _ = client(&RateLimitLayer::new())
        .post(server.url("/orders"))
        .body(r#"{"item":1}"#)
        .send()
        .await;
    assert_eq!(
        server.count("POST", "/orders"),
        1,
        "the POST ran and was answered 303; it was sent again for the redirect's connect error"
    );
}

/// A URL with a fragment: reqwest's `Response::url` is the URI sent, without the fragment.
/// Nothing was redirected, and a POST's 429 is retried.
#[tokio::test(start_paused = true)]
async fn a_post_to_a_url_with_a_fragment_refused_429_is_retried() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 1)])).await;
    let response = client(&RateLimitLayer::new())
        .post(server.url("/capture#section"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the 429 was returned, not retried"
    );
    assert_eq!(server.count("POST", "/capture"), 2);
}

/// A middleware under the layer that answers itself (a mock, a cache, a circuit breaker)
/// builds its `reqwest::Response` from an `http::Response`, whose URL reqwest sets to
/// `http://no.url.provided.local`: that says nothing of a redirect, and a POST's 429 is
/// retried.
#[tokio::test(start_paused = true)]
async fn a_post_refused_by_a_middleware_below_that_answers_itself_is_retried() {
    struct Answers(Arc<AtomicUsize>);
    #[async_trait::async_trait]
    impl reqwest_middleware::Middleware for Answers {
        async fn handle(
            &self,
            _request: reqwest::Request,
            _extensions: &mut http::Extensions,
            _next: reqwest_middleware::Next<'_>,
        ) -> reqwest_middleware::Result<reqwest::Response> {
            let status = if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                429
            } else {
                200
            };
            let response = http::Response::builder()
                .status(status)
                .header("retry-after", "1")
                .body(Vec::<u8>::new())
                .unwrap();
            Ok(reqwest::Response::from(response))
        }
    }
    let attempts = Arc::new(AtomicUsize::new(0));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RateLimitLayer::new().middleware())
        .with(Answers(attempts.clone()))
        .build();
    let response = client
        .post("http://api.example/capture")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the 429 was returned, not retried"
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}
