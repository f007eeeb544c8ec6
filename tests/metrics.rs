//! The layer's numbers through the `metrics` facade (feature `metrics`): what was sent,
//! refused, retried, failed fast and waited, and each key's gauges, labelled by the key as
//! events show it, never a credential. Recorded into the example's recorder, installed for
//! the test's thread (the paused runtime runs every task on it).

#[path = "../examples/metrics/prometheus.rs"]
mod prometheus;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response};
use prometheus::Prometheus;
use tower::{Layer, Service, ServiceExt};
use tower_retry_after::{Key, RateLimitLayer};

/// Answers the first request with 429 and `Retry-After: retry_after`, the rest with 200 and
/// the quota left of 100; counts what it received.
fn server(
    retry_after: &'static str,
    received: Arc<AtomicUsize>,
) -> impl Service<Request<String>, Response = Response<String>, Error = tower::BoxError, Future: Send>
+ Clone {
    tower::service_fn(move |_request: Request<String>| {
        let nth = received.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let response = if nth == 0 {
                Response::builder()
                    .status(429)
                    .header("retry-after", retry_after)
            } else {
                Response::builder()
                    .header("ratelimit-policy", r#""default";q=100;w=60"#)
                    .header("ratelimit", format!(r#""default";r={};t=59"#, 100 - nth))
            };
            Ok::<_, tower::BoxError>(response.body(String::new()).unwrap())
        }
    })
}

/// Ten calls through `layer`, the first alone; the export once they ended, and how many
/// requests the server received.
async fn ten_calls(layer: RateLimitLayer, retry_after: &'static str) -> (String, usize) {
    let prometheus = Prometheus::default();
    let _installed = metrics::set_default_local_recorder(&prometheus);
    let received = Arc::new(AtomicUsize::new(0));
    let service = layer.layer(server(retry_after, received.clone()));
    let request = || {
        Request::get("https://api.test/v1/items")
            .header("authorization", "Bearer sk-live-0123456789")
            .body(String::new())
            .unwrap()
    };
    let first = tokio::spawn(service.clone().oneshot(request()));
    tokio::time::sleep(Duration::from_millis(5)).await;
    let others: Vec<_> = (0..9)
        .map(|_| tokio::spawn(service.clone().oneshot(request())))
        .collect();
    for call in std::iter::once(first).chain(others) {
        let _ = call.await.unwrap();
    }
    (prometheus.render(), received.load(Ordering::SeqCst))
}

/// A label's value is written escaped: a limit's name comes from a server's header, and a quote
/// or a line break in it would end the label or the line (another series, made up).
#[test]
fn a_label_with_a_quote_or_a_line_break_stays_one_label() {
    let prometheus = Prometheus::default();
    let _installed = metrics::set_default_local_recorder(&prometheus);
    metrics::gauge!("remaining", "key" => "api [core\"} 1\nforged{a=\"b]").set(7.0);
    let export = prometheus.render();
    assert_eq!(
        export.trim_end(),
        r#"remaining{key="api [core\"} 1\nforged{a=\"b]"} 7"#,
        "{export}"
    );
}

/// The value of the series `name` in `export`.
fn value(export: &str, name: &str) -> f64 {
    export
        .lines()
        .find(|line| line.split('{').next() == Some(name))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{export}"))
}

fn by_credential() -> RateLimitLayer {
    RateLimitLayer::new().key(|request: &http::request::Parts| {
        let token = request.headers.get("authorization")?;
        Some(Key::credential(token.as_bytes()))
    })
}

#[tokio::test(start_paused = true)]
async fn the_counters_say_what_was_sent_refused_retried_and_waited() {
    let (export, received) = ten_calls(by_credential(), "2").await;
    assert_eq!(received, 11, "the refused one, its retry, nine more");
    assert_eq!(
        value(&export, "tower_retry_after_requests_sent_total"),
        11.0
    );
    assert_eq!(value(&export, "tower_retry_after_refused_total"), 1.0);
    assert_eq!(value(&export, "tower_retry_after_retries_total"), 1.0);
    // The retry and the nine held at the gate each waited out the 2 s the server named.
    assert_eq!(value(&export, "tower_retry_after_wait_seconds_count"), 10.0);
    let waited = value(&export, "tower_retry_after_wait_seconds_sum");
    assert!((19.0..30.0).contains(&waited), "{waited}");
    assert_eq!(value(&export, "tower_retry_after_remaining"), 90.0);
    assert_eq!(value(&export, "tower_retry_after_waiters"), 0.0);
    assert_eq!(
        value(&export, "tower_retry_after_closed_seconds"),
        0.0,
        "reopened"
    );
}

#[tokio::test(start_paused = true)]
async fn a_key_is_labelled_by_its_fingerprint_never_its_credential() {
    let (export, _) = ten_calls(by_credential(), "2").await;
    assert!(!export.contains("sk-live"), "{export}");
    assert!(export.contains(r#"key="credential:"#), "{export}");
}

#[tokio::test(start_paused = true)]
async fn calls_turned_away_at_a_closed_gate_are_counted_as_failed_fast() {
    // An hour's closure, beyond the cap: the first call gets its 429 at once, and the nine
    // after it fail fast, sending nothing.
    let (export, received) = ten_calls(by_credential(), "3600").await;
    assert_eq!(received, 1);
    assert_eq!(value(&export, "tower_retry_after_failed_fast_total"), 9.0);
    assert_eq!(value(&export, "tower_retry_after_requests_sent_total"), 1.0);
    let closed = value(&export, "tower_retry_after_closed_seconds");
    assert!((3600.0..3700.0).contains(&closed), "{closed}");
}

/// A server that answers after `delay`, naming the limit each answer counts against as GitHub
/// does (`x-ratelimit-resource: core`), with `remaining` of its 5,000 left for an hour.
fn github_core(
    remaining: u32,
    delay: Duration,
) -> impl tower::Service<
    Request<String>,
    Response = Response<String>,
    Error = tower::BoxError,
    Future = impl Send,
> + Clone
+ Send {
    tower::service_fn(move |_request: Request<String>| async move {
        tokio::time::sleep(delay).await;
        let reset = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600;
        let response = Response::builder()
            .header("x-ratelimit-resource", "core")
            .header("x-ratelimit-limit", "5000")
            .header("x-ratelimit-remaining", remaining.to_string())
            .header("x-ratelimit-reset", reset.to_string());
        Ok::<_, tower::BoxError>(response.body(String::new()).unwrap())
    })
}

/// Ten calls to a server that names the limit each answer counts against (GitHub's
/// `x-ratelimit-resource`), the first alone: the nine held behind it wait at the gate until
/// its answer, then go to the gate of the limit it named. Each of their waits is in the
/// histogram, as in what the call says it cost.
#[tokio::test(start_paused = true)]
async fn a_wait_at_a_gate_the_call_left_for_its_limits_is_recorded() {
    let prometheus = Prometheus::default();
    let _installed = metrics::set_default_local_recorder(&prometheus);
    let service = RateLimitLayer::new().layer(github_core(4000, Duration::from_millis(200)));
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let request = Request::get("https://api.test/v1/items")
                .body(String::new())
                .unwrap();
            tokio::spawn(service.clone().oneshot(request))
        })
        .collect();
    let mut waited = Duration::ZERO;
    let mut waits = 0;
    for call in calls {
        let response = call.await.unwrap().unwrap();
        let cost = *response
            .extensions()
            .get::<tower_retry_after::CallCost>()
            .unwrap();
        if cost.waited() > Duration::ZERO {
            waits += 1;
            waited += cost.waited();
        }
    }
    assert_eq!(waits, 9, "the nine behind the first waited");
    let export = prometheus.render();
    assert_eq!(
        value(&export, "tower_retry_after_wait_seconds_count"),
        9.0,
        "{export}"
    );
    let sum = value(&export, "tower_retry_after_wait_seconds_sum");
    assert!(
        (sum - waited.as_secs_f64()).abs() < 0.01,
        "{sum} vs {waited:?}"
    );
}

/// A wait is recorded as it was taken, when it ends: a call dropped during its backoff
/// recorded no wait it never took.
#[tokio::test(start_paused = true)]
async fn a_call_dropped_during_its_backoff_records_no_wait() {
    let prometheus = Prometheus::default();
    let _installed = metrics::set_default_local_recorder(&prometheus);
    let received = Arc::new(AtomicUsize::new(0));
    let counted = received.clone();
    let failing = tower::service_fn(move |_request: Request<String>| {
        counted.fetch_add(1, Ordering::SeqCst);
        async {
            let response = Response::builder().status(503).body(String::new());
            Ok::<_, tower::BoxError>(response.unwrap())
        }
    });
    let service = RateLimitLayer::new().layer(failing);
    let request = || {
        Request::get("https://api.test/v1/items")
            .body(String::new())
            .unwrap()
    };
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        service.clone().oneshot(request()),
    );
    assert!(dropped.await.is_err(), "dropped during its first backoff");
    assert_eq!(received.load(Ordering::SeqCst), 1);
    assert!(
        !prometheus
            .render()
            .contains("tower_retry_after_wait_seconds"),
        "{}",
        prometheus.render()
    );
    let started = tokio::time::Instant::now();
    let answered = service.oneshot(request()).await.unwrap();
    assert_eq!(
        answered.status(),
        503,
        "three retries, then the last answer"
    );
    let export = prometheus.render();
    assert_eq!(value(&export, "tower_retry_after_wait_seconds_count"), 3.0);
    let sum = value(&export, "tower_retry_after_wait_seconds_sum");
    assert!(
        (sum - started.elapsed().as_secs_f64()).abs() < 0.01,
        "{sum} vs {:?}",
        started.elapsed()
    );
}

/// One call to a server that names the limit its answer counts against: the quota it says is
/// left is that limit's gauge, from its first answer on.
#[tokio::test(start_paused = true)]
async fn the_first_answer_that_names_its_limit_sets_that_limits_remaining() {
    let prometheus = Prometheus::default();
    let _installed = metrics::set_default_local_recorder(&prometheus);
    let service = RateLimitLayer::new().layer(github_core(4321, Duration::ZERO));
    let request = Request::get("https://api.test/v1/items")
        .body(String::new())
        .unwrap();
    service.oneshot(request).await.unwrap();
    let export = prometheus.render();
    assert!(
        export.contains(r#"tower_retry_after_remaining{key="https://api.test [core]"} 4321"#),
        "{export}"
    );
}

/// A window the server said is spent closes the key for its reset, and the gauge says so;
/// once the reset passed and the key's calls are answered again, the gauge is back to 0, as
/// after a refusal's closure ("0 once it reopens").
#[tokio::test(start_paused = true)]
async fn the_closed_gauge_is_zero_again_once_a_spent_window_has_passed() {
    let prometheus = Prometheus::default();
    let _installed = metrics::set_default_local_recorder(&prometheus);
    let received = Arc::new(AtomicUsize::new(0));
    let counted = received.clone();
    let inner = tower::service_fn(move |_request: Request<String>| {
        let nth = counted.fetch_add(1, Ordering::SeqCst);
        let remaining = if nth == 0 { 0 } else { 9 };
        async move {
            let response = Response::builder()
                .header("x-ratelimit-limit", "10")
                .header("x-ratelimit-remaining", remaining.to_string())
                .header("x-ratelimit-reset", "2")
                .body(String::new())
                .unwrap();
            Ok::<_, tower::BoxError>(response)
        }
    });
    let service = RateLimitLayer::new().layer(inner);
    let get = || {
        Request::get("https://api.test/v1/items")
            .body(String::new())
            .unwrap()
    };
    service.clone().oneshot(get()).await.unwrap();
    let closed = value(&prometheus.render(), "tower_retry_after_closed_seconds");
    assert!((1.9..2.1).contains(&closed), "{closed}");
    for _ in 0..3 {
        service.clone().oneshot(get()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    service.clone().oneshot(get()).await.unwrap();
    assert_eq!(received.load(Ordering::SeqCst), 5);
    let export = prometheus.render();
    assert_eq!(value(&export, "tower_retry_after_remaining"), 9.0);
    assert_eq!(
        value(&export, "tower_retry_after_closed_seconds"),
        0.0,
        "reopened: {export}"
    );
}
