//! The retry rules one by one, over a scripted inner service on a paused clock.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::time::Instant;
use tower::{BoxError, Layer, Service, ServiceExt};
use tower_retry_after::{RateLimitInfo, RateLimitLayer};

const SECOND: Duration = Duration::from_secs(1);

/// What the inner service answers to one attempt.
type Answer = Result<Response<String>, &'static str>;

/// An inner service answering from a script (then 200s), recording when each attempt came.
#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    attempts: Arc<Mutex<Vec<Instant>>>,
}

impl Script {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Self {
        let script = Script::default();
        script.answers.lock().unwrap().extend(answers);
        script
    }

    fn repeat(answer: Response<String>, times: usize) -> Self {
        Script::new((0..times).map(|_| Ok(clone(&answer))))
    }

    fn attempts(&self) -> Vec<Instant> {
        self.attempts.lock().unwrap().clone()
    }

    fn gaps(&self) -> Vec<Duration> {
        self.attempts()
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .collect()
    }

    fn service(
        &self,
    ) -> impl Service<Request<String>, Response = Response<String>, Error = BoxError, Future: Send> + Clone
    {
        let script = self.clone();
        tower::service_fn(move |_request: Request<String>| {
            let script = script.clone();
            async move {
                script.attempts.lock().unwrap().push(Instant::now());
                let answer = script.answers.lock().unwrap().pop_front();
                match answer {
                    Some(Ok(response)) => Ok(response),
                    Some(Err(error)) => Err(BoxError::from(error)),
                    None => Ok(Response::new(String::new())),
                }
            }
        })
    }
}

fn clone(response: &Response<String>) -> Response<String> {
    let mut copy = Response::new(response.body().clone());
    *copy.status_mut() = response.status();
    *copy.headers_mut() = response.headers().clone();
    copy
}

fn status(code: u16, headers: &[(&'static str, &'static str)]) -> Response<String> {
    let mut response = Response::builder().status(code);
    for (name, value) in headers {
        response = response.header(*name, *value);
    }
    response.body(String::new()).unwrap()
}

async fn call(
    layer: RateLimitLayer,
    script: &Script,
    method: &str,
) -> Result<Response<String>, BoxError> {
    let mut service = tower::Layer::layer(&layer, script.service());
    let request = Request::builder()
        .method(method)
        .uri("http://api.test/items")
        .body("{}".to_owned())
        .unwrap();
    service.ready().await?.call(request).await
}

#[tokio::test(start_paused = true)]
async fn count_binds_below_the_crossover_and_time_above_it() {
    // Defaults: 10 rate-limited retries, 120 s: the crossover is at 12 s a wait.
    let short = Script::repeat(status(429, &[("retry-after", "5")]), 100);
    call(RateLimitLayer::new(), &short, "POST").await.unwrap();
    assert_eq!(
        short.attempts().len(),
        11,
        "5 s waits: the count of 10 retries binds"
    );

    let long = Script::repeat(status(429, &[("retry-after", "25")]), 100);
    call(RateLimitLayer::new(), &long, "POST").await.unwrap();
    assert_eq!(
        long.attempts().len(),
        5,
        "25 s waits: four fit in 120 s, a fifth does not"
    );
}

#[tokio::test(start_paused = true)]
async fn a_budget_set_alone_lowers_the_cap_to_half_of_it_and_is_never_raised() {
    let script = Script::repeat(status(429, &[("retry-after", "30")]), 1);
    let layer = RateLimitLayer::new().max_wait(10 * SECOND);
    let started = Instant::now();
    let response = call(layer.clone(), &script, "POST").await.unwrap();
    assert_eq!(
        response.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "30 s is over the 5 s cap that follows a 10 s budget: returned at once"
    );
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(script.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn zero_retry_counts_retry_none() {
    let failing = Script::repeat(status(503, &[]), 5);
    let response = call(RateLimitLayer::new().transient_retries(0), &failing, "GET").await;
    assert_eq!(response.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(failing.attempts().len(), 1);
    let refusing = Script::repeat(status(429, &[("retry-after", "2")]), 5);
    let response = call(
        RateLimitLayer::new().rate_limited_retries(0),
        &refusing,
        "GET",
    )
    .await;
    assert_eq!(response.unwrap().status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refusing.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn observe_only_neither_sleeps_nor_retries_but_surfaces_what_it_read() {
    let script = Script::repeat(status(429, &[("retry-after", "2")]), 5);
    let started = Instant::now();
    let layer = RateLimitLayer::new().retry_on_rate_limit(false);
    let response = call(layer, &script, "GET").await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(script.attempts().len(), 1);
    assert_eq!(started.elapsed(), Duration::ZERO);
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    assert_eq!(info.retry_after(), Some(2 * SECOND));
}

#[tokio::test(start_paused = true)]
async fn observe_only_still_retries_transient_failures() {
    let script = Script::repeat(status(503, &[]), 1);
    let layer = RateLimitLayer::new().retry_on_rate_limit(false);
    assert_eq!(call(layer, &script, "GET").await.unwrap().status(), 200);
    assert_eq!(script.attempts().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_meter_that_said_zero_is_an_instruction() {
    let exhausted = status(429, &[("ratelimit", r#""default";r=0;t=3"#)]);
    let script = Script::repeat(exhausted, 1);
    call(RateLimitLayer::new(), &script, "POST").await.unwrap();
    let gap = script.gaps()[0];
    assert!(
        gap >= 3 * SECOND && gap <= 3 * SECOND + 3 * SECOND / 10,
        "{gap:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_on_a_retried_503_is_honoured() {
    let script = Script::repeat(status(503, &[("retry-after", "5")]), 1);
    call(RateLimitLayer::new(), &script, "GET").await.unwrap();
    let gap = script.gaps()[0];
    assert!(
        gap >= 5 * SECOND && gap <= 5 * SECOND + SECOND / 2,
        "{gap:?}"
    );
}

/// `retry-after-ms` far short of `Retry-After` is another instruction, not the same one
/// unrounded: the retry waits the longer, and so does the key's next call.
#[tokio::test(start_paused = true)]
async fn a_retry_after_ms_far_short_of_retry_after_does_not_shorten_the_wait() {
    let refused = status(429, &[("retry-after", "30"), ("retry-after-ms", "1")]);
    let script = Script::repeat(refused, 1);
    let layer = RateLimitLayer::new();
    call(layer.clone(), &script, "POST").await.unwrap();
    let gap = script.gaps()[0];
    assert!(gap >= 30 * SECOND && gap <= 33 * SECOND, "{gap:?}");
    assert_eq!(script.attempts().len(), 2, "the 429, then its retry");
}

#[tokio::test(start_paused = true)]
async fn instructed_waits_are_never_shorter_than_the_instruction_and_spread_within_a_tenth() {
    let script = Script::repeat(status(429, &[("retry-after", "2")]), 10);
    let layer = RateLimitLayer::new().rate_limited_retries(10);
    call(layer, &script, "POST").await.unwrap();
    let gaps = script.gaps();
    assert_eq!(gaps.len(), 10);
    assert!(
        gaps.iter()
            .all(|gap| *gap >= 2 * SECOND && *gap <= 2 * SECOND + SECOND / 5),
        "{gaps:?}"
    );
    let distinct: std::collections::HashSet<_> = gaps.iter().collect();
    assert!(
        distinct.len() > 1,
        "the spread is random, not a constant: {gaps:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn guessed_waits_grow_between_attempts() {
    let script = Script::repeat(status(503, &[]), 3);
    call(RateLimitLayer::new(), &script, "GET").await.unwrap();
    let gaps = script.gaps();
    let bounds = [(250, 500), (500, 1000), (1000, 2000)];
    for (gap, (low, high)) in gaps.iter().zip(bounds) {
        let millis = gap.as_millis();
        assert!((low..=high).contains(&millis), "{gaps:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn every_response_carries_what_was_read_the_last_429_too() {
    let limited = status(429, &[("retry-after", "1"), ("x-ratelimit-remaining", "0")]);
    let script = Script::repeat(limited, 100);
    let response = call(RateLimitLayer::new(), &script, "GET").await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    assert_eq!(info.meters()[0].remaining(), Some(0));

    let fine = Script::new([Ok(status(200, &[("x-ratelimit-remaining", "7")]))]);
    let response = call(RateLimitLayer::new(), &fine, "GET").await.unwrap();
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    assert_eq!(info.meters()[0].remaining(), Some(7));
}

#[tokio::test(start_paused = true)]
async fn transport_errors_are_retried_only_for_idempotent_requests() {
    let errors = || Script::new([Err("connection reset"), Err("connection reset")]);
    let get = errors();
    assert!(call(RateLimitLayer::new(), &get, "GET").await.is_ok());
    assert_eq!(get.attempts().len(), 3);
    let post = errors();
    let error = call(RateLimitLayer::new(), &post, "POST")
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "connection reset");
    assert_eq!(post.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_last_outcome_goes_back_when_retries_run_out() {
    let script = Script::new([
        Ok(status(503, &[("x-attempt", "1")])),
        Ok(status(503, &[("x-attempt", "2")])),
        Ok(status(503, &[("x-attempt", "3")])),
        Ok(status(503, &[("x-attempt", "4")])),
    ]);
    let response = call(RateLimitLayer::new(), &script, "GET").await.unwrap();
    assert_eq!(response.headers()["x-attempt"], "4");
}

#[tokio::test(start_paused = true)]
async fn the_server_can_forbid_or_allow_a_retry() {
    let forbidden = Script::repeat(status(429, &[("x-should-retry", "false")]), 5);
    call(RateLimitLayer::new(), &forbidden, "GET")
        .await
        .unwrap();
    assert_eq!(forbidden.attempts().len(), 1);
    let allowed = Script::repeat(status(500, &[("x-should-retry", "true")]), 1);
    call(RateLimitLayer::new(), &allowed, "POST").await.unwrap();
    assert_eq!(allowed.attempts().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_while_it_waits_sends_nothing_more() {
    let script = Script::repeat(status(429, &[("retry-after", "10")]), 5);
    let layer = RateLimitLayer::new();
    let outcome = tokio::time::timeout(5 * SECOND, call(layer, &script, "GET")).await;
    assert!(outcome.is_err(), "the call was still waiting");
    tokio::time::sleep(60 * SECOND).await;
    assert_eq!(script.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_request_without_a_replayable_body_is_sent_once() {
    use tower_retry_after::policy::{Action, Attempt, Policy, StatusPolicy};

    /// Classifies like the default table, but copies no body.
    #[derive(Clone)]
    struct SendOnce;
    impl Policy<String, String> for SendOnce {
        fn classify(&mut self, attempt: &Attempt<'_, String>) -> Action {
            StatusPolicy::new().action(attempt)
        }
    }
    let script = Script::repeat(status(429, &[("retry-after", "1")]), 5);
    let layer = RateLimitLayer::new().with_policy(SendOnce);
    let mut service = tower::Layer::layer(&layer, script.service());
    let request = Request::post("http://api.test/")
        .body("{}".to_owned())
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(script.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_seeded_layer_draws_the_same_waits_every_run() {
    async fn gaps(seed: u64) -> Vec<Duration> {
        let script = Script::repeat(status(503, &[]), 3);
        call(RateLimitLayer::new().jitter_seed(seed), &script, "GET")
            .await
            .unwrap();
        script.gaps()
    }
    let first = gaps(7).await;
    assert_eq!(first, gaps(7).await);
    assert_ne!(first, gaps(8).await);
}

/// A service that stops being ready after its first call (a closed buffer, a failed pool).
#[derive(Clone)]
struct ReadyOnce<S> {
    inner: S,
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

impl<S: Service<Request<String>, Error = BoxError>> Service<Request<String>> for ReadyOnce<S> {
    type Response = S::Response;
    type Error = BoxError;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        if self.calls.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            return std::task::Poll::Ready(Err("the service closed".into()));
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<String>) -> S::Future {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.call(request)
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_the_service_cannot_take_ends_the_call_with_why() {
    let script = Script::new([Ok(status(429, &[("retry-after", "1")]))]);
    let service = ReadyOnce {
        inner: script.service(),
        calls: Arc::default(),
    };
    let error = RateLimitLayer::new()
        .layer(service)
        .oneshot(
            Request::post("http://api.test/capture")
                .body(String::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "the service closed");
    assert_eq!(script.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_retry_the_service_cannot_take_after_a_transport_error_ends_with_that_error() {
    let script = Script::new([Err("connection reset")]);
    let service = ReadyOnce {
        inner: script.service(),
        calls: Arc::default(),
    };
    let error = RateLimitLayer::new()
        .layer(service)
        .oneshot(
            Request::get("http://api.test/items")
                .body(String::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "connection reset");
    assert_eq!(script.attempts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_ungated_call_still_sleeps_out_the_servers_wait() {
    let script = Script::repeat(status(429, &[("retry-after", "2")]), 1);
    let layer = RateLimitLayer::new().key(|_: &http::request::Parts| None);
    call(layer, &script, "POST").await.unwrap();
    let gap = script.gaps()[0];
    assert!(
        gap >= 2 * SECOND && gap <= 2 * SECOND + SECOND / 5,
        "{gap:?}"
    );
}

/// An inner service that must be polled ready before every call, as tower lets a service
/// demand (a concurrency limit holds a permit from `poll_ready` to `call`); a clone starts
/// unready, as a permit-holding service's clone does. Counts its `poll_ready`s.
struct Strict<S> {
    inner: S,
    ready: bool,
    polls: Arc<AtomicUsize>,
}

impl<S: Clone> Clone for Strict<S> {
    fn clone(&self) -> Self {
        Strict {
            inner: self.inner.clone(),
            ready: false,
            polls: self.polls.clone(),
        }
    }
}

impl<S: Service<Request<String>>> Service<Request<String>> for Strict<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        let ready = self.inner.poll_ready(cx);
        self.ready = matches!(ready, Poll::Ready(Ok(())));
        ready
    }

    fn call(&mut self, request: Request<String>) -> S::Future {
        assert!(
            std::mem::take(&mut self.ready),
            "called without being polled ready"
        );
        self.inner.call(request)
    }
}

#[tokio::test(start_paused = true)]
async fn every_retry_polls_its_service_ready_and_the_first_attempt_uses_the_callers() {
    let script = Script::new([Err("connection reset"), Ok(status(503, &[]))]);
    let polls = Arc::new(AtomicUsize::new(0));
    let inner = Strict {
        inner: script.service(),
        ready: false,
        polls: polls.clone(),
    };
    let mut service = tower::Layer::layer(&RateLimitLayer::new(), inner);
    let request = Request::get("http://api.test/items")
        .body(String::new())
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(script.attempts().len(), 3);
    assert_eq!(
        polls.load(Ordering::SeqCst),
        3,
        "one poll_ready per attempt: the caller's for the first, the call's for each retry"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refusal_the_policy_returns_closes_the_key_with_the_instructions_spread() {
    use tower_retry_after::policy::{Behaviour, StatusPolicy};
    use tower_retry_after::{Gates, Key};
    let inner = tower::service_fn(|_request: Request<String>| async {
        let response = Response::builder()
            .status(429)
            .header("retry-after", "10")
            .body(String::new())
            .unwrap();
        Ok::<_, BoxError>(response)
    });
    let gates = Gates::new();
    let policy = StatusPolicy::new().on(StatusCode::TOO_MANY_REQUESTS, Behaviour::Return);
    let layer = RateLimitLayer::new()
        .with_policy(policy)
        .gates(gates.clone())
        .jitter_seed(7);
    let request = Request::get("http://api.test/")
        .body(String::new())
        .unwrap();
    let key = Key::origin(&request.clone().into_parts().0).unwrap();
    let response = layer.layer(inner).oneshot(request).await.unwrap();
    assert_eq!(response.status(), 429, "returned, not retried");
    let closed = gates.snapshot(&key).unwrap().closed_for().unwrap();
    // Closed as any instruction closes it: never less, plus its share of the spread, so that
    // the calls it holds do not all leave at the same instant.
    assert!(closed > Duration::from_secs(10), "{closed:?}");
    assert!(closed <= Duration::from_secs(11), "{closed:?}");
}
