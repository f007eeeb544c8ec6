//! The layer in a reqwest-middleware chain beside reqwest-retry and reqwest-tracing, in both
//! orders: the order the docs advise waits a 429 out once; the other resends it inside the
//! window. Same server and paused clock as `tests/reqwest.rs`.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::time::Duration;

use http::StatusCode;
use reqwest_middleware::ClientBuilder;
use support::{TestServer, header};
use tokio::time::Instant;
use tower_retry_after::RateLimitLayer;

const SECOND: Duration = Duration::from_secs(1);

/// A limiter that refuses every request for the first two seconds after the first, with
/// `Retry-After` for what is left of them.
async fn refusing_for_two_seconds() -> TestServer {
    let opened = std::sync::Mutex::new(None::<Instant>);
    TestServer::start(move |_, _, _| {
        let now = Instant::now();
        let opens_at = *opened.lock().unwrap().get_or_insert(now + 2 * SECOND);
        if now < opens_at {
            let left = (opens_at - now).as_secs_f64().ceil();
            (429, vec![header("retry-after", left)])
        } else {
            (200, vec![])
        }
    })
    .await
}

/// reqwest-retry with a quick backoff: what it does is visible within the window.
fn reqwest_retry()
-> reqwest_retry::RetryTransientMiddleware<reqwest_retry::policies::ExponentialBackoff> {
    let backoff = reqwest_retry::policies::ExponentialBackoff::builder()
        .retry_bounds(Duration::from_millis(100), Duration::from_millis(200))
        .build_with_max_retries(3);
    reqwest_retry::RetryTransientMiddleware::new_with_policy(backoff)
}

/// reqwest-retry before (outside) the layer sees only what the layer returns: the 429 is
/// waited out once, not resent inside the window, and tracing around both changes nothing.
#[tokio::test(start_paused = true)]
async fn reqwest_retry_before_the_layer_does_not_resend_a_429() {
    let server = refusing_for_two_seconds().await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(reqwest_tracing::TracingMiddleware::default())
        .with(reqwest_retry())
        .with(RateLimitLayer::new().middleware())
        .build();
    let response = client
        .post(server.url("/capture"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        server.count("POST", "/capture"),
        2,
        "one refusal, one retry"
    );
}

/// The order the docs advise against: reqwest-retry after (inside) the layer resends the 429
/// on its own backoff, inside the window the server named.
#[tokio::test(start_paused = true)]
async fn reqwest_retry_after_the_layer_resends_inside_the_window() {
    let server = refusing_for_two_seconds().await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RateLimitLayer::new().middleware())
        .with(reqwest_retry())
        .build();
    let response = client
        .post(server.url("/capture"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        server.count("POST", "/capture") > 2,
        "{} sent",
        server.count("POST", "/capture")
    );
}

/// reqwest-retry before (outside) the layer, as the docs advise: a call the layer declines at a
/// gate closed for an hour still reads as `Throttled` and as rate limited. reqwest-retry wraps
/// every error it returns in its `RetryError`, whose source is the `reqwest_middleware::Error`
/// holding the `Throttled`.
#[tokio::test(start_paused = true)]
async fn throttled_is_found_under_reqwest_retry_before_the_layer() {
    use tower_retry_after::RateLimitedExt;
    let server = TestServer::start(|_, _, _| (429, vec![header("retry-after", 3600)])).await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(reqwest_retry())
        .with(RateLimitLayer::new().middleware())
        .build();
    // The 429 is over the cap: the layer returns it; reqwest-retry retries it, and the layer
    // declines that retry at the closed gate, unsent.
    let result = client.get(server.url("/items")).send().await;
    assert_eq!(
        server.count("GET", "/items"),
        1,
        "the retry was declined, unsent"
    );
    let error = result.as_ref().unwrap_err();
    assert!(
        tower_retry_after::reqwest::throttled(error).is_some(),
        "Throttled not found under reqwest-retry's error: {error:?}"
    );
    assert!(
        result.rate_limited().is_some(),
        "not read as rate limited: {error}"
    );
}
