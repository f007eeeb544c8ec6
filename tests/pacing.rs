//! Not arriving at the wall: the slow start on a key nothing is known of, pacing by the quota a
//! server publishes, and learning the one it does not. Paced clock, simulated limiter with a
//! round trip, so requests are in flight when answers come back, as over a network.

#[path = "support/limiter.rs"]
mod limiter;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::Request;
use limiter::{Headers, Limiter, Model};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};
use tower_retry_after::RateLimitLayer;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

fn request() -> Request<String> {
    Request::get("http://api.test/items")
        .body(String::new())
        .unwrap()
}

/// `workers` tasks share `requests` calls through `layer`, each worker making its calls one
/// after the other, as a job queue does. Returns when the last call was served.
async fn workload(
    layer: &RateLimitLayer,
    limiter: &Limiter,
    workers: usize,
    requests: usize,
) -> Duration {
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let (service, next) = (layer.layer(limiter.clone()), next.clone());
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < requests {
                    let response = service.clone().oneshot(request()).await.unwrap();
                    assert_eq!(response.status(), 200);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    started.elapsed()
}

/// The arrivals at `limiter` in each slice of `slice` from `start`, until the last.
fn arrivals_by(limiter: &Limiter, start: Instant, slice: Duration) -> Vec<usize> {
    let mut counts = Vec::new();
    for (at, _) in limiter.log() {
        let index = ((at - start).as_nanos() / slice.as_nanos()) as usize;
        if counts.len() <= index {
            counts.resize(index + 1, 0);
        }
        counts[index] += 1;
    }
    counts
}

fn fixed_window(headers: Headers) -> Limiter {
    Limiter::new(
        Model::FixedWindow {
            limit: 20,
            window: SECOND,
        },
        headers,
    )
    .with_latency(25 * MS)
}

/// The 429s `limiter` answered, as times from its first request.
fn refusals(limiter: &Limiter) -> Vec<Duration> {
    let start = limiter.log()[0].0;
    limiter
        .log()
        .iter()
        .filter(|(_, status)| *status == 429)
        .map(|(at, _)| *at - start)
        .collect()
}

/// `calls` calls at once through `layer`, each its own task.
async fn at_once(layer: &RateLimitLayer, limiter: &Limiter, calls: usize) {
    let tasks: Vec<_> = (0..calls)
        .map(|_| tokio::spawn(layer.layer(limiter.clone()).oneshot(request())))
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().status(), 200);
    }
}

#[tokio::test(start_paused = true)]
async fn a_cold_key_sends_one_request_and_the_quota_its_answer_reports() {
    let limiter = fixed_window(Headers::Draft8);
    let started = Instant::now();
    at_once(&RateLimitLayer::new(), &limiter, 50).await;
    // One request, then, a round trip later, the 19 its answer said remain; the other 30 in
    // the windows after.
    assert_eq!(arrivals_by(&limiter, started, 25 * MS)[..2], [1, 19]);
    assert!(refusals(&limiter).is_empty(), "{:?}", refusals(&limiter));

    // Without it, the 50 go before any answer comes back, and 30 find the window spent.
    let blind = fixed_window(Headers::Draft8);
    at_once(&RateLimitLayer::new().slow_start(false), &blind, 50).await;
    assert_eq!(refusals(&blind).len(), 30);
}

#[tokio::test(start_paused = true)]
async fn without_meters_the_first_answer_starts_a_ramp_that_doubles_each_round_trip() {
    let limiter = Limiter::new(
        Model::FixedWindow {
            limit: 1000,
            window: SECOND,
        },
        Headers::RetryAfter,
    )
    .with_latency(25 * MS);
    let started = Instant::now();
    at_once(&RateLimitLayer::new(), &limiter, 50).await;
    assert_eq!(
        arrivals_by(&limiter, started, 25 * MS),
        [1, 2, 4, 8, 16, 19],
        "one request a round trip for each healthy answer"
    );
}

#[tokio::test(start_paused = true)]
async fn a_layer_without_the_slow_start_or_the_quota_sends_every_call_at_once() {
    for layer in [
        RateLimitLayer::new().slow_start(false),
        RateLimitLayer::new().respect_remaining(false),
    ] {
        let limiter = fixed_window(Headers::Draft8);
        let started = Instant::now();
        let tasks: Vec<_> = (0..10)
            .map(|_| tokio::spawn(layer.layer(limiter.clone()).oneshot(request())))
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(arrivals_by(&limiter, started, 25 * MS), [10]);
    }
}

#[tokio::test(start_paused = true)]
async fn without_meters_the_ramp_meets_the_wall_with_fewer_requests_out() {
    let first_window =
        |limiter: &Limiter| refusals(limiter).iter().filter(|at| **at < SECOND).count();
    let ramped = fixed_window(Headers::RetryAfter);
    at_once(&RateLimitLayer::new(), &ramped, 50).await;
    let blind = fixed_window(Headers::RetryAfter);
    at_once(&RateLimitLayer::new().slow_start(false), &blind, 50).await;
    let (ramped, blind) = (first_window(&ramped), first_window(&blind));
    assert_eq!(blind, 30, "all 50 out before the first answer");
    assert!(ramped <= 16, "{ramped}: at most the last round of the ramp");
}

#[tokio::test(start_paused = true)]
async fn a_learned_limit_keeps_a_retry_after_only_limiter_off_the_wall_after_the_cold_start() {
    let limiter = fixed_window(Headers::RetryAfter);
    let took = workload(&RateLimitLayer::new(), &limiter, 50, 400).await;
    let refused = refusals(&limiter);
    // After the cold start's window (its ramp met the wall) only a raise on trial meets it:
    // one request at a window's start, each raise refused in a row waiting twice as long.
    let later: Vec<_> = refused.iter().filter(|at| **at > 3 * SECOND).collect();
    let windows = (took.as_secs() - 3) as usize;
    assert!(later.len() * 3 <= windows, "{later:?} in {windows} windows");
    for pair in later.windows(2) {
        assert!(*pair[1] - *pair[0] >= SECOND, "two in a window: {later:?}");
    }
    assert!(took < 19 * SECOND * 12 / 10, "{took:?}");

    let unlearned = fixed_window(Headers::RetryAfter);
    workload(
        &RateLimitLayer::new().learn_limits(false),
        &unlearned,
        50,
        400,
    )
    .await;
    let unlearned_later = refusals(&unlearned)
        .iter()
        .filter(|at| **at > 3 * SECOND)
        .count();
    assert!(
        unlearned_later > 10 * later.len().max(1),
        "{unlearned_later}"
    );
}

/// A server on the paused clock whose clock starts at a whole second, and that answers each
/// request with its `Date` (whole seconds, rounded down, as HTTP dates are) and a meter whose
/// reset is the next whole second as an epoch instant, `remaining` as given.
fn epoch_server(
    remaining: &'static [u64],
) -> impl tower::Service<
    Request<String>,
    Response = http::Response<String>,
    Error = tower::BoxError,
    Future = impl Send,
> + Clone {
    let start = Instant::now();
    let answered = Arc::new(AtomicUsize::new(0));
    tower::service_fn(move |_request: Request<String>| {
        let nth = answered.fetch_add(1, Ordering::SeqCst);
        let server_now = std::time::UNIX_EPOCH
            + Duration::from_secs(1_700_000_000)
            + Instant::now().duration_since(start);
        let whole = server_now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let response = http::Response::builder()
            .header("date", httpdate::fmt_http_date(server_now))
            .header("x-ratelimit-limit", "10")
            .header("x-ratelimit-remaining", remaining[nth].to_string())
            .header("x-ratelimit-reset", (whole + 1).to_string())
            .body(String::new())
            .unwrap();
        async move { Ok::<_, tower::BoxError>(response) }
    })
}

#[tokio::test(start_paused = true)]
async fn an_epoch_reset_is_read_against_the_tightest_bound_of_the_servers_clock() {
    let gates = tower_retry_after::Gates::new();
    let layer = RateLimitLayer::new().gates(gates.clone());
    let server = epoch_server(&[5, 0]);
    // Just after the server's clock turned a second, its `Date` says nearly the exact time.
    tokio::time::sleep(10 * MS).await;
    layer
        .layer(server.clone())
        .oneshot(request())
        .await
        .unwrap();
    // 900 ms later its `Date` still says the same second: alone, that reads the reset a
    // second away; the first response bounds the clock 900 ms later than that.
    tokio::time::sleep(900 * MS).await;
    layer.layer(server).oneshot(request()).await.unwrap();
    let key = tower_retry_after::Key::from_origin("http://api.test").unwrap();
    let closed_for = gates.snapshot(&key).unwrap().closed_for().unwrap();
    assert!(closed_for <= 100 * MS, "{closed_for:?}");
    assert!(closed_for >= 90 * MS, "never early: {closed_for:?}");
}
