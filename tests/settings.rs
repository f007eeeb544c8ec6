//! The cap and `max_wait`, in every combination of set and unset: what the user set is never
//! overridden. The ones left unset follow the ones set, ones set at odds are refused when the
//! layer is built (with a message naming the setting to change), and no call waits beyond a
//! `max_wait` the user set. Over a scripted service on a paused clock.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response};
use tokio::time::Instant;
use tower::{BoxError, Layer, ServiceExt};
use tower_retry_after::{CallCost, RateLimitLayer, Throttled};

const SECOND: Duration = Duration::from_secs(1);

/// A service that refuses every request, naming `wait` seconds; counts what it received.
fn refusing(
    wait: u64,
    received: Arc<AtomicUsize>,
) -> impl tower::Service<Request<String>, Response = Response<String>, Error = BoxError, Future: Send>
+ Clone {
    tower::service_fn(move |_request: Request<String>| {
        received.fetch_add(1, Ordering::SeqCst);
        async move {
            let response = Response::builder()
                .status(429)
                .header("retry-after", wait.to_string())
                .body(String::new())?;
            Ok::<_, BoxError>(response)
        }
    })
}

/// A layer with the cap and budget set as given, or the panic's message if it is refused.
fn build(cap: Option<Duration>, max_wait: Option<Duration>) -> Result<RateLimitLayer, String> {
    catch_unwind(AssertUnwindSafe(|| {
        let mut layer = RateLimitLayer::new();
        if let Some(cap) = cap {
            layer = layer.retry_after_cap(cap);
        }
        if let Some(max_wait) = max_wait {
            layer = layer.max_wait(max_wait);
        }
        layer
    }))
    .map_err(|panic| *panic.downcast::<String>().expect("a message"))
}

/// How long one call took, and what it cost, against a server naming `wait` seconds each time.
async fn one_call(layer: &RateLimitLayer, wait: u64) -> (Duration, CallCost, usize) {
    let received = Arc::new(AtomicUsize::new(0));
    let service = layer.layer(refusing(wait, received.clone()));
    let request = Request::post("http://api.test/items")
        .body(String::new())
        .unwrap();
    let started = Instant::now();
    let cost = match service.oneshot(request).await {
        Ok(response) => *response.extensions().get::<CallCost>().unwrap(),
        Err(error) => error.downcast_ref::<Throttled>().unwrap().cost(),
    };
    (started.elapsed(), cost, received.load(Ordering::SeqCst))
}

#[tokio::test(start_paused = true)]
async fn no_call_waits_beyond_a_max_wait_the_user_set_and_settings_at_odds_are_refused() {
    let caps = [
        None,
        Some(Duration::ZERO),
        Some(2 * SECOND),
        Some(100 * SECOND),
    ];
    let budgets = [
        None,
        Some(Duration::ZERO),
        Some(5 * SECOND),
        Some(150 * SECOND),
        Some(300 * SECOND),
    ];
    for cap in caps {
        for max_wait in budgets {
            let at_odds =
                matches!((cap, max_wait), (Some(cap), Some(max_wait)) if cap * 2 > max_wait);
            let layer = match build(cap, max_wait) {
                Err(message) => {
                    assert!(at_odds, "{cap:?}, {max_wait:?} refused: {message}");
                    assert!(
                        message.contains("lower retry_after_cap or raise max_wait"),
                        "{message}"
                    );
                    continue;
                }
                Ok(layer) => layer,
            };
            assert!(!at_odds, "{cap:?}, {max_wait:?} accepted");
            // The budget in force: the one set, or the default following a raised cap.
            let budget = max_wait
                .unwrap_or_else(|| cap.map_or(120 * SECOND, |cap| (cap * 2).max(120 * SECOND)));
            // The cap in force: the one set, or at most half the budget.
            let in_force = cap.unwrap_or_else(|| (budget / 2).min(60 * SECOND));
            for wait in [1, 3, 30, 90] {
                let (took, cost, received) = one_call(&layer, wait).await;
                let case = format!("cap {cap:?}, max_wait {max_wait:?}, Retry-After: {wait}");
                assert!(
                    cost.waited() <= budget,
                    "{case}: waited {:?}",
                    cost.waited()
                );
                assert!(took <= budget, "{case}: took {took:?}");
                if Duration::from_secs(wait) > in_force {
                    assert_eq!(received, 1, "{case}: over the cap, returned at once");
                    assert_eq!(took, Duration::ZERO, "{case}");
                } else {
                    assert!(received > 1, "{case}: within the cap and budget, retried");
                }
                // The instruction the last answer gave holds the key's gate: let it pass.
                tokio::time::sleep(Duration::from_secs(wait) + 2 * SECOND).await;
            }
        }
    }
}

#[test]
fn a_raised_cap_alone_raises_the_budget_it_needs_and_a_lowered_budget_alone_lowers_the_cap() {
    assert!(build(Some(300 * SECOND), None).is_ok());
    assert!(build(None, Some(SECOND)).is_ok());
    let message = build(Some(300 * SECOND), Some(300 * SECOND)).unwrap_err();
    assert_eq!(
        message,
        "retry_after_cap(300s) is more than half of max_wait(300s): one wait of the cap's \
         length could spend the whole budget; lower retry_after_cap or raise max_wait to at \
         least 600s"
    );
}
