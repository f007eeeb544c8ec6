//! The shared gate, with many tasks on a paused clock against a simulated limiter that
//! records every request it receives and what it answered.

#[path = "support/limiter.rs"]
mod limiter;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use limiter::{Algorithm, Headers, Limiter, Model, retry_after};
use tokio::time::Instant;
use tower::{BoxError, Layer, Service, ServiceExt};
use tower_retry_after::store::{MemoryStore, Reservation, Respects, Window, WindowStore};
use tower_retry_after::{Backoff, Gates, Key, RateLimitLayer, Throttled};

const SECOND: Duration = Duration::from_secs(1);

fn request(host: &str) -> Request<String> {
    Request::get(format!("http://{host}/items"))
        .body(String::new())
        .unwrap()
}

/// Starts `calls` calls through `layer` to `limiter`, each its own task.
fn spawn_calls(
    layer: &RateLimitLayer,
    limiter: &Limiter,
    calls: usize,
) -> Vec<tokio::task::JoinHandle<Result<Response<String>, BoxError>>> {
    (0..calls)
        .map(|_| {
            let service = layer.layer(limiter.clone());
            tokio::spawn(service.oneshot(request("api.test")))
        })
        .collect()
}

async fn statuses(
    calls: Vec<tokio::task::JoinHandle<Result<Response<String>, BoxError>>>,
) -> Vec<u16> {
    let mut statuses = Vec::new();
    for call in calls {
        statuses.push(
            call.await
                .unwrap()
                .map_or(0, |response| response.status().as_u16()),
        );
    }
    statuses
}

/// A first call meets a 429 and closes the gate; `waiters` more calls arrive while it is
/// closed. Returns when every call has finished.
async fn episode(limiter: &Limiter, waiters: usize) -> Vec<u16> {
    let layer = RateLimitLayer::new();
    let first = spawn_calls(&layer, limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut calls = first;
    calls.extend(spawn_calls(&layer, limiter, waiters));
    statuses(calls).await
}

#[tokio::test(start_paused = true)]
async fn one_429_holds_every_call_on_the_key_once_and_costs_one_refusal() {
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 5 * SECOND),
        Headers::RetryAfter,
    );
    let started = Instant::now();
    let statuses = episode(&limiter, 99).await;
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    assert_eq!(limiter.refused(), 1, "only the first call met the limit");
    let during = limiter
        .log()
        .iter()
        .filter(|(at, _)| *at < started + 5 * SECOND)
        .count();
    assert_eq!(during, 1, "nothing was sent while the gate was closed");
    assert_eq!(limiter.log().len(), 101);
}

#[tokio::test(start_paused = true)]
async fn with_the_rate_unknown_waiters_never_leave_in_the_same_instant() {
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 2 * SECOND),
        Headers::RetryAfter,
    );
    episode(&limiter, 1000).await;
    let accepted: Vec<Instant> = limiter
        .log()
        .into_iter()
        .filter(|(_, status)| *status == 200)
        .map(|(at, _)| at)
        .collect();
    assert_eq!(accepted.len(), 1001);
    for pair in accepted.windows(2) {
        assert!(
            pair[1] > pair[0],
            "two requests left in the same instant: {pair:?}"
        );
    }
}

/// Counts the refusals in each window of a fixed-window limiter, after the first one.
fn refusals_per_window(limiter: &Limiter, window: Duration) -> Vec<usize> {
    let log = limiter.log();
    let first_refusal = log.iter().position(|(_, status)| *status == 429).unwrap();
    let start = log[first_refusal].0;
    let mut counts = Vec::new();
    for (at, status) in &log[first_refusal + 1..] {
        let index = ((*at - start).as_millis() / window.as_millis()) as usize;
        if counts.len() <= index {
            counts.resize(index + 1, 0);
        }
        counts[index] += usize::from(*status == 429);
    }
    counts
}

#[tokio::test(start_paused = true)]
async fn refusals_stay_at_one_per_episode_with_retry_after_only() {
    let window = SECOND;
    let limiter = Limiter::new(
        Model::FixedWindow { limit: 10, window },
        Headers::RetryAfter,
    )
    .scripted(vec![(429, retry_after(window))]);
    let statuses = episode(&limiter, 100).await;
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    let refusals = refusals_per_window(&limiter, window);
    assert!(refusals.iter().all(|count| *count <= 1), "{refusals:?}");
}

#[tokio::test(start_paused = true)]
async fn with_meters_the_gate_lets_out_exactly_what_remains_and_nothing_is_refused() {
    let window = SECOND;
    let limiter = Limiter::new(Model::FixedWindow { limit: 10, window }, Headers::Draft8)
        .scripted(vec![(429, retry_after(window))]);
    let statuses = episode(&limiter, 100).await;
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    assert_eq!(limiter.refused(), 1, "only the scripted first refusal");
}

/// A leaky bucket of 20 a second that sends meters: each answer says none is left, with a
/// reset rounded up to the next second, and the policy says 20 a second. Its reset gives
/// back one request, not 20.
#[tokio::test(start_paused = true)]
async fn a_reset_whose_restored_quota_was_refused_restores_nothing_the_next_time() {
    let model = Model::Shaped {
        algorithm: Algorithm::Leaky,
        limit: 20,
        window: SECOND,
    };
    let limiter = Limiter::new(model, Headers::Draft8).with_latency(Duration::from_millis(20));
    let layer = RateLimitLayer::new();
    let calls = spawn_calls(&layer, &limiter, 60);
    tokio::time::sleep(20 * SECOND).await;
    // The first reset restores the policy's 20, and all but one are refused; after that,
    // each reset's first request probes, and the meters it reads hold the rest.
    assert!(
        limiter.refused() <= 20,
        "refused {} times in 20 s",
        limiter.refused()
    );
    let accepted = limiter.log().len() - limiter.refused();
    assert!(
        accepted >= 15,
        "{accepted} accepted in 20 s: the key still goes"
    );
    for call in calls {
        call.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn a_shorter_retry_after_never_brings_the_gate_forward() {
    let limiter =
        Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter).scripted(vec![
            (429, vec![("retry-after", "10".into())]),
            (429, vec![("retry-after", "2".into())]),
        ]);
    let layer = RateLimitLayer::new();
    let started = Instant::now();
    let calls = spawn_calls(&layer, &limiter, 2);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let later = spawn_calls(&layer, &limiter, 1);
    statuses(calls).await;
    statuses(later).await;
    let log = limiter.log();
    assert_eq!(log.len(), 5);
    assert!(
        log[2..].iter().all(|(at, _)| *at >= started + 10 * SECOND),
        "{log:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_spent_window_holds_the_next_call_and_sends_nothing_until_its_reset() {
    let spent = vec![("ratelimit", "\"d\";r=0;t=30".to_owned())];
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(200, spent)]);
    let layer = RateLimitLayer::new();
    let started = Instant::now();
    statuses(spawn_calls(&layer, &limiter, 1)).await;
    statuses(spawn_calls(&layer, &limiter, 1)).await;
    let log = limiter.log();
    assert_eq!(log.len(), 2);
    assert!(log[1].0 >= started + 30 * SECOND, "{log:?}");
}

#[tokio::test(start_paused = true)]
async fn a_response_without_meters_does_not_erase_what_an_earlier_one_said() {
    // Two requests in flight together: the first answer says the window is spent, the second,
    // a moment later, says nothing.
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let log = arrivals.clone();
    let service = tower::service_fn(move |_request: Request<String>| {
        let log = log.clone();
        async move {
            let nth = {
                let mut log = log.lock().unwrap();
                log.push(Instant::now());
                log.len()
            };
            tokio::time::sleep(Duration::from_millis(10 * nth as u64)).await;
            let mut response = Response::builder();
            if nth == 1 {
                response = response.header("ratelimit", "\"d\";r=0;t=30");
            }
            Ok::<_, BoxError>(response.body(String::new()).unwrap())
        }
    });
    let gated = RateLimitLayer::new().layer(service);
    let started = Instant::now();
    let both = (
        gated.clone().oneshot(request("api.test")),
        gated.clone().oneshot(request("api.test")),
    );
    let (first, second) = tokio::join!(both.0, both.1);
    first.unwrap();
    second.unwrap();
    gated.oneshot(request("api.test")).await.unwrap();
    let arrivals = arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 3);
    assert!(arrivals[2] >= started + 30 * SECOND, "{arrivals:?}");
}

#[tokio::test(start_paused = true)]
async fn opting_out_of_429_retries_never_blocks_the_next_call() {
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 30 * SECOND),
        Headers::RetryAfter,
    );
    let layer = RateLimitLayer::new().retry_on_rate_limit(false);
    let started = Instant::now();
    assert_eq!(statuses(spawn_calls(&layer, &limiter, 1)).await, [429]);
    assert_eq!(statuses(spawn_calls(&layer, &limiter, 1)).await, [429]);
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert!(layer_gates_are_empty(&layer));
}

#[tokio::test(start_paused = true)]
async fn opting_out_of_remaining_never_blocks_the_next_call() {
    let spent = vec![("ratelimit", "\"d\";r=0;t=30".to_owned())];
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(200, spent)]);
    let layer = RateLimitLayer::new().respect_remaining(false);
    let started = Instant::now();
    statuses(spawn_calls(&layer, &limiter, 2)).await;
    assert!(limiter.log().iter().all(|(at, _)| *at == started));
}

fn layer_gates_are_empty(layer: &RateLimitLayer) -> bool {
    let service = layer.layer(Limiter::new(
        Model::ClosedUntil(Instant::now()),
        Headers::RetryAfter,
    ));
    service.gates().is_empty()
}

#[tokio::test(start_paused = true)]
async fn a_gate_closed_longer_than_a_call_may_wait_throttles_it_without_sending() {
    let gates = Gates::new();
    let patient = RateLimitLayer::new()
        .gates(gates.clone())
        .retry_after_cap(Duration::from_secs(600))
        .max_wait(Duration::from_secs(1200));
    let hasty = RateLimitLayer::new().gates(gates.clone());
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 300 * SECOND),
        Headers::RetryAfter,
    );
    let first = spawn_calls(&patient, &limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let error = hasty
        .layer(limiter.clone())
        .oneshot(request("api.test"))
        .await
        .unwrap_err();
    let throttled = error
        .downcast_ref::<Throttled>()
        .expect("a Throttled error");
    assert!(throttled.retry_after() > 290 * SECOND);
    assert_eq!(throttled.key(), &key());
    assert_eq!(limiter.log().len(), 1, "the throttled call sent nothing");
    assert_eq!(statuses(first).await, [200]);
}

/// The key of every request to the limiter: its origin.
/// A call waiting at its gate holds no readiness of the service beneath it: a concurrency limit
/// there lets calls on other keys go meanwhile, instead of lending its one permit to a wait.
#[tokio::test(start_paused = true)]
async fn a_call_waiting_at_its_gate_holds_no_permit_of_a_concurrency_limit_beneath() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(429, retry_after(5 * SECOND))]);
    let service = RateLimitLayer::new().layer(tower::limit::ConcurrencyLimit::new(limiter, 1));
    let refused = tokio::spawn(service.clone().oneshot(request("a.test")));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiting = tokio::spawn(service.clone().oneshot(request("a.test")));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let other = service.oneshot(request("b.test")).await.unwrap();
    assert_eq!(other.status(), 200);
    assert!(
        started.elapsed() < SECOND,
        "held {:?} behind a call waiting at another key's gate",
        started.elapsed()
    );
    for call in [refused, waiting] {
        assert_eq!(call.await.unwrap().unwrap().status(), 200);
    }
}

fn key() -> Key {
    let (parts, _) = request("api.test").into_parts();
    Key::origin(&parts).unwrap()
}

#[tokio::test(start_paused = true)]
async fn dropping_ten_thousand_waiters_leaves_none_behind() {
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 60 * SECOND),
        Headers::RetryAfter,
    );
    let layer = RateLimitLayer::new();
    let service = layer.layer(limiter.clone());
    let gates = service.gates().clone();
    let first = spawn_calls(&layer, &limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let waiters = spawn_calls(&layer, &limiter, 10_000);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let key = key();
    // The first call waits too: its retry, for the end of the closure its 429 caused.
    assert_eq!(gates.snapshot(&key).unwrap().waiters(), 10_001);
    for waiter in &waiters {
        waiter.abort();
    }
    first[0].abort();
    for waiter in waiters.into_iter().chain(first) {
        let _ = waiter.await;
    }
    let snapshot = gates.snapshot(&key).unwrap();
    assert_eq!(snapshot.waiters(), 0);
    assert_eq!(snapshot.in_flight(), 0);
    assert_eq!(limiter.log().len(), 1);
}

/// Every key's answer leaves a quota window with room, which its gate remembers for the
/// window's minute, and the paused clock never gets there: a key let in past the capacity
/// would stay, and the check after its call sees it. A hundred times the capacity in keys
/// makes over 800 sweeps of the full registry (one per eighth of its capacity turned away).
#[tokio::test(start_paused = true)]
async fn the_registry_holds_at_most_its_capacity_however_many_distinct_keys_pass() {
    let capacity = 100;
    let gates = Gates::with_capacity(capacity);
    let layer = RateLimitLayer::new().gates(gates.clone());
    let meters = tower::service_fn(|_request: Request<String>| async {
        let response = Response::builder()
            .header("ratelimit", "\"d\";r=5;t=60")
            .body(String::new())
            .unwrap();
        Ok::<_, BoxError>(response)
    });
    let mut service = layer.layer(meters);
    for host in 0..100 * capacity {
        let request = request(&format!("h{host}.test"));
        service.ready().await.unwrap().call(request).await.unwrap();
        assert!(
            gates.len() <= capacity,
            "{} gates once h{host}.test passed",
            gates.len()
        );
    }
    assert_eq!(
        gates.len(),
        capacity,
        "the sweeps forget no gate that remembers a window"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_in_flight_gives_back_its_share_of_the_quota() {
    // The first response says one request remains; the next request hangs until dropped.
    let answered = Arc::new(Mutex::new(0));
    let counter = answered.clone();
    let service = tower::service_fn(move |_request: Request<String>| {
        let counter = counter.clone();
        async move {
            let nth = {
                let mut count = counter.lock().unwrap();
                *count += 1;
                *count
            };
            if nth == 2 {
                std::future::pending::<()>().await;
            }
            let response = Response::builder()
                .header("ratelimit", "\"d\";r=1;t=60")
                .body(String::new())
                .unwrap();
            Ok::<_, BoxError>(response)
        }
    });
    let layer = RateLimitLayer::new();
    let gated = layer.layer(service);
    let gates = gated.gates().clone();
    gated.clone().oneshot(request("api.test")).await.unwrap();
    let hanging = tokio::spawn(gated.clone().oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(gates.snapshot(&key()).unwrap().in_flight(), 1);
    hanging.abort();
    let _ = hanging.await;
    assert_eq!(gates.snapshot(&key()).unwrap().in_flight(), 0);
    let started = Instant::now();
    gated.oneshot(request("api.test")).await.unwrap();
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "the quota it held is free again"
    );
    assert_eq!(*answered.lock().unwrap(), 3);
}

/// A store that counts the reservations handed back, and the answers merged with a ticket.
#[derive(Default)]
struct Counting {
    store: MemoryStore,
    given_back: Mutex<usize>,
    answered: Mutex<usize>,
}

impl WindowStore for Counting {
    fn reserve(
        &self,
        key: &Key,
        respects: Respects,
        now: std::time::SystemTime,
    ) -> tower_retry_after::store::StoreFuture<Reservation> {
        self.store.reserve(key, respects, now)
    }

    fn merge(
        &self,
        key: &Key,
        window: Window,
        ticket: Option<tower_retry_after::store::Ticket>,
        now: std::time::SystemTime,
    ) -> tower_retry_after::store::StoreFuture<()> {
        *self.answered.lock().unwrap() += usize::from(ticket.is_some());
        self.store.merge(key, window, ticket, now)
    }

    fn give_back(
        &self,
        key: &Key,
        ticket: tower_retry_after::store::Ticket,
        now: std::time::SystemTime,
    ) -> tower_retry_after::store::StoreFuture<()> {
        *self.given_back.lock().unwrap() += 1;
        self.store.give_back(key, ticket, now)
    }
}

/// A call dropped in flight hands its reservation back as such, not as an answer that said
/// nothing: the fleet's law must not count the request accepted.
#[tokio::test(start_paused = true)]
async fn a_call_dropped_in_flight_hands_its_reservation_back_unanswered() {
    let service = tower::service_fn(|_request: Request<String>| async {
        std::future::pending::<()>().await;
        Ok::<_, BoxError>(Response::new(String::new()))
    });
    let store = Arc::new(Counting::default());
    let gated = RateLimitLayer::new()
        .gates(Gates::with_store(store.clone()))
        .layer(service);
    let hanging = tokio::spawn(gated.oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    hanging.abort();
    let _ = hanging.await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(*store.given_back.lock().unwrap(), 1, "handed back");
    assert_eq!(*store.answered.lock().unwrap(), 0, "not told as an answer");
}

#[tokio::test(start_paused = true)]
async fn a_probe_dropped_on_its_way_lets_the_next_waiter_probe() {
    // The first request is refused for 5 s; the second, the probe, never comes back.
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let log = arrivals.clone();
    let service = tower::service_fn(move |_request: Request<String>| {
        let log = log.clone();
        async move {
            let nth = {
                let mut log = log.lock().unwrap();
                log.push(Instant::now());
                log.len()
            };
            let mut response = Response::builder();
            match nth {
                1 => response = response.status(429).header("retry-after", "5"),
                2 => std::future::pending::<()>().await,
                _ => {}
            }
            Ok::<_, BoxError>(response.body(String::new()).unwrap())
        }
    });
    let gated = RateLimitLayer::new().layer(service);
    let started = Instant::now();
    let first = tokio::spawn(gated.clone().oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let waiters: Vec<_> = (0..3)
        .map(|_| tokio::spawn(gated.clone().oneshot(request("api.test"))))
        .collect();
    tokio::time::sleep(6 * SECOND).await;
    assert_eq!(
        arrivals.lock().unwrap().len(),
        2,
        "only the probe went at 5 s"
    );
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    for waiter in waiters {
        assert_eq!(waiter.await.unwrap().unwrap().status(), 200);
    }
    assert!(
        started.elapsed() < 7 * SECOND,
        "the next waiter probed at once"
    );
}

/// Two layers whose gates share one store, as two processes sharing one credential would, and
/// a limiter that refuses everything for 20 s.
fn two_processes_and_a_limiter_closed_for_20_s() -> (RateLimitLayer, RateLimitLayer, Limiter) {
    let store = Arc::new(tower_retry_after::store::MemoryStore::new());
    let first = RateLimitLayer::new().gates(Gates::with_store(store.clone()));
    let second = RateLimitLayer::new().gates(Gates::with_store(store));
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 20 * SECOND),
        Headers::RetryAfter,
    );
    (first, second, limiter)
}

/// Two sets of gates sharing one store stand for two processes sharing one credential.
#[tokio::test(start_paused = true)]
async fn a_429_met_by_one_process_holds_another_sharing_its_store() {
    let (first, second, limiter) = two_processes_and_a_limiter_closed_for_20_s();
    let started = Instant::now();
    let refused = spawn_calls(&first, &limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let other = spawn_calls(&second, &limiter, 1);
    assert_eq!(statuses(other).await, [200]);
    assert_eq!(statuses(refused).await, [200]);
    let log = limiter.log();
    assert_eq!(
        limiter.refused(),
        1,
        "the second process never met the limit: {log:?}"
    );
    assert!(log[1..].iter().all(|(at, _)| *at >= started + 20 * SECOND));
}

#[tokio::test(start_paused = true)]
async fn without_a_shared_store_each_process_meets_the_limit_itself() {
    let first = RateLimitLayer::new();
    let second = RateLimitLayer::new();
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 20 * SECOND),
        Headers::RetryAfter,
    );
    let refused = spawn_calls(&first, &limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    statuses(spawn_calls(&second, &limiter, 1)).await;
    statuses(refused).await;
    assert_eq!(limiter.refused(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_429_is_never_retried_early_even_when_the_registry_is_full() {
    // The only place is taken by a key with a quota window; a 429 for another key must still
    // hold its retry for the server's time.
    let gates = Gates::with_capacity(1);
    let layer = RateLimitLayer::new().gates(gates.clone());
    let quota = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter).scripted(
        vec![(200, vec![("ratelimit", "\"d\";r=5;t=30".to_owned())])],
    );
    layer.layer(quota).oneshot(request("a.test")).await.unwrap();
    let limited = Limiter::new(
        Model::ClosedUntil(Instant::now() + 5 * SECOND),
        Headers::RetryAfter,
    );
    let started = Instant::now();
    let status = layer
        .layer(limited.clone())
        .oneshot(request("b.test"))
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    assert_eq!(limited.log().len(), 2, "{:?}", limited.log());
    assert_sent_again_no_sooner(&limited, started + 5 * SECOND);
}

/// Panics unless the limiter's second request arrived at `opens` or later.
fn assert_sent_again_no_sooner(limiter: &Limiter, opens: Instant) {
    let log = limiter.log();
    assert!(
        log[1].0 >= opens,
        "sent again {:?} before the window ended",
        opens - log[1].0
    );
}

#[tokio::test(start_paused = true)]
async fn without_meters_a_steady_load_is_not_starved_after_a_closure() {
    // One 429 (1 s), then a server with 100 ms latency that accepts everything, and 20 new
    // calls a second: the backlog leaves one at a time, then the gate opens for all.
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + SECOND),
        Headers::RetryAfter,
    )
    .with_latency(Duration::from_millis(100));
    // A short budget, so that a backlog growing faster than it drains shows as failed calls.
    let layer = RateLimitLayer::new()
        .retry_after_cap(5 * SECOND)
        .max_wait(10 * SECOND);
    let mut calls = Vec::new();
    for _ in 0..400 {
        calls.extend(spawn_calls(&layer, &limiter, 1));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now() - 400 * Duration::from_millis(50);
    let statuses = statuses(calls).await;
    let failed = statuses.iter().filter(|status| **status != 200).count();
    assert_eq!(failed, 0, "calls not served: {failed}");
    // Calls sent before the first 429 came back (one round trip) met the closure unknowing;
    // none sent after it did.
    let informed = started + Duration::from_millis(100);
    let late_refusals = limiter
        .log()
        .iter()
        .filter(|(at, status)| *at >= informed && *status == 429)
        .count();
    assert_eq!(late_refusals, 0);
}

/// A call waiting to retry does not keep the response it waits after, so neither its body nor
/// its connection is held for the whole wait; a call that gives up has that response's head,
/// in `Throttled`, not the response.
#[tokio::test(start_paused = true)]
async fn a_retry_that_meets_a_gate_closed_too_long_gives_up_with_its_last_responses_head() {
    let gates = Gates::new();
    let patient = RateLimitLayer::new()
        .gates(gates.clone())
        .retry_after_cap(Duration::from_secs(600))
        .max_wait(Duration::from_secs(1200));
    let hasty = RateLimitLayer::new().gates(gates);
    // A 503 first (the hasty call sleeps its backoff), then a 429 for 300 s to the patient one.
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 300 * SECOND),
        Headers::RetryAfter,
    )
    .scripted(vec![(503, vec![("x-trace", "first".to_owned())])]);
    let hasty_call = spawn_calls(&hasty, &limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let patient_call = spawn_calls(&patient, &limiter, 1);
    let error = hasty_call
        .into_iter()
        .next()
        .unwrap()
        .await
        .unwrap()
        .unwrap_err();
    let throttled = error.downcast_ref::<Throttled>().expect("Throttled");
    assert_eq!(throttled.status().map(|status| status.as_u16()), Some(503));
    assert_eq!(throttled.headers().unwrap()["x-trace"], "first");
    assert!(throttled.info().is_some(), "what was read of it, too");
    assert!(throttled.retry_after() > 290 * SECOND);
    assert_eq!(statuses(patient_call).await, [200]);
}

#[tokio::test(start_paused = true)]
async fn a_huge_budget_does_not_overflow() {
    let limiter = Limiter::new(
        Model::ClosedUntil(Instant::now() + 5 * SECOND),
        Headers::RetryAfter,
    );
    let layer = RateLimitLayer::new()
        .max_wait(Duration::MAX)
        .retry_after_cap(Duration::MAX);
    assert_eq!(statuses(spawn_calls(&layer, &limiter, 2)).await, [200, 200]);
}

#[tokio::test(start_paused = true)]
async fn a_429_the_policy_returns_still_closes_the_gate() {
    let refusal = vec![
        ("retry-after", "30".to_owned()),
        ("x-should-retry", "false".to_owned()),
    ];
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(429, refusal)]);
    let layer = RateLimitLayer::new();
    let started = Instant::now();
    assert_eq!(statuses(spawn_calls(&layer, &limiter, 1)).await, [429]);
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "returned at once, as the server asked"
    );
    assert_eq!(statuses(spawn_calls(&layer, &limiter, 1)).await, [200]);
    let log = limiter.log();
    assert!(log[1].0 >= started + 30 * SECOND, "{log:?}");
}

#[tokio::test(start_paused = true)]
async fn a_transient_failure_never_closes_the_gate() {
    let gates = Gates::new();
    let inner = tower::service_fn(|_request: Request<String>| async {
        Ok::<_, BoxError>(Response::builder().status(503).body(String::new()).unwrap())
    });
    let layer = RateLimitLayer::new().gates(gates.clone());
    let call = tokio::spawn(layer.layer(inner).oneshot(request("api.test")));
    for _ in 0..20 {
        tokio::time::sleep(SECOND / 10).await;
        let closed = gates.snapshot(&key()).and_then(|gate| gate.closed_for());
        assert_eq!(closed, None, "a 503's backoff closed the gate");
    }
    let response = call.await.unwrap().unwrap();
    assert_eq!(response.status(), 503, "three retries, then the last 503");
    assert_eq!(
        gates.snapshot(&key()).and_then(|gate| gate.closed_for()),
        None
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_cap_covers_the_closure_exactly_waits_it_out() {
    // A 429 returned to its caller: it closes the gate for 300 s and nobody waits there.
    let refusal = vec![
        ("retry-after", "300".to_owned()),
        ("x-should-retry", "false".to_owned()),
    ];
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(429, refusal)]);
    let gates = Gates::new();
    let patient = RateLimitLayer::new()
        .gates(gates.clone())
        .retry_after_cap(Duration::from_secs(600))
        .max_wait(Duration::from_secs(1200));
    assert_eq!(statuses(spawn_calls(&patient, &limiter, 1)).await, [429]);
    // A default call's cap, 60 s, is then exactly what is left of the instruction; it waits
    // that out, and the spread the closure was given after it.
    let instructed = limiter.log()[0].0 + Duration::from_secs(300);
    tokio::time::advance(instructed - 60 * SECOND - Instant::now()).await;
    let closed_for = gates.snapshot(&key()).and_then(|gate| gate.closed_for());
    let opens = Instant::now() + closed_for.unwrap();
    let exact = RateLimitLayer::new().gates(gates.clone());
    let response = exact
        .layer(limiter.clone())
        .oneshot(request("api.test"))
        .await;
    assert_eq!(response.unwrap().status(), 200);
    let log = limiter.log();
    assert_eq!(log.len(), 2);
    let timer = Duration::from_millis(1);
    assert!(
        log[1].0 >= opens && log[1].0 <= opens + timer,
        "sent the moment the gate opened: {:?} after",
        log[1].0 - opens
    );
}

/// An instruction above the cap is waited by no call, the one that met it (handed its 429 at
/// once) or the next (turned away): not even where the spread its closure was given leaves
/// that closure within the cap and the spread an instruction of the cap's length may get.
#[tokio::test(start_paused = true)]
async fn an_instruction_above_the_cap_is_waited_by_no_call_whatever_its_spread() {
    for seed in 1..=8 {
        let refusal = vec![("retry-after", "60.5".to_owned())];
        let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
            .scripted(vec![(429, refusal.clone()), (429, refusal)]);
        let layer = RateLimitLayer::new().gates(Gates::new()).jitter_seed(seed);
        let client = layer.layer(limiter.clone());
        let first = client.clone().oneshot(request("api.test")).await.unwrap();
        assert_eq!(
            first.status(),
            429,
            "seed {seed}: over the cap, returned at once"
        );
        let started = Instant::now();
        let second = client.oneshot(request("api.test")).await;
        let throttled = second
            .as_ref()
            .err()
            .and_then(|error| error.downcast_ref::<Throttled>());
        assert!(
            throttled.is_some() && limiter.log().len() == 1 && started.elapsed().is_zero(),
            "seed {seed}: waited {:?}, sent {}",
            started.elapsed(),
            limiter.log().len()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_reads_the_keys_meters_aged_to_now() {
    // Answers from the back: first three left, then none.
    let fields = Arc::new(Mutex::new(vec!["\"d\";r=0;t=10", "\"d\";r=3;t=10"]));
    let service = tower::service_fn(move |_request: Request<String>| {
        let field = fields.lock().unwrap().pop().expect("two answers");
        async move {
            let response = Response::builder().header("ratelimit", field);
            Ok::<_, BoxError>(response.body(String::new()).unwrap())
        }
    });
    let gates = Gates::new();
    assert!(gates.is_empty());
    let gated = RateLimitLayer::new().gates(gates.clone()).layer(service);
    gated.clone().oneshot(request("api.test")).await.unwrap();
    assert_eq!(gates.len(), 1);
    assert!(!gates.is_empty());

    tokio::time::sleep(4 * SECOND).await;
    let room = gates.snapshot(&key()).unwrap();
    assert_eq!(room.remaining(), Some(3));
    assert_eq!(
        room.reset_in(),
        Some(6 * SECOND),
        "aged by the four seconds"
    );
    assert!(!room.is_exhausted());
    assert_eq!(room.closed_for(), None);

    gated.oneshot(request("api.test")).await.unwrap();
    let spent = gates.snapshot(&key()).unwrap();
    assert_eq!(spent.remaining(), Some(0));
    assert_eq!(spent.reset_in(), Some(10 * SECOND));
    assert!(spent.is_exhausted());
    assert_eq!(spent.closed_for(), Some(10 * SECOND));
}

#[tokio::test(start_paused = true)]
async fn a_first_call_on_a_key_is_counted_while_it_is_out() {
    let service = tower::service_fn(|_request: Request<String>| async {
        tokio::time::sleep(SECOND).await;
        Ok::<_, BoxError>(Response::new(String::new()))
    });
    let gates = Gates::new();
    let gated = RateLimitLayer::new().gates(gates.clone()).layer(service);
    let call = tokio::spawn(gated.oneshot(request("api.test")));
    tokio::time::sleep(SECOND / 10).await;
    let gate = gates
        .snapshot(&key())
        .expect("the key has a gate from its first call");
    assert_eq!(gate.in_flight(), 1);
    call.await.unwrap().unwrap();
    assert_eq!(gates.snapshot(&key()).map_or(0, |gate| gate.in_flight()), 0);
}

/// A closure the layer guesses (no `Retry-After`) holds the key's calls no longer than the
/// cap, however long its backoff says, so a call whose budget is ample waits it out instead of
/// failing fast.
#[tokio::test(start_paused = true)]
async fn a_guessed_closure_never_exceeds_the_cap() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(429, vec![])]);
    let gates = Gates::new();
    let slow_guesses = Backoff::new()
        .base(Duration::from_secs(300))
        .max(Duration::from_secs(3600));
    let guessing = RateLimitLayer::new()
        .gates(gates.clone())
        .backoff(slow_guesses)
        .jitter_seed(7);
    let first = spawn_calls(&guessing, &limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let closed_for = gates.snapshot(&key()).and_then(|gate| gate.closed_for());
    let closed_for = closed_for.expect("the 429 closed the gate");
    assert!(closed_for <= 60 * SECOND, "closed for {closed_for:?}");
    // A call with the default budget waits the closure out instead of failing fast.
    let next = spawn_calls(&RateLimitLayer::new().gates(gates), &limiter, 1);
    assert_eq!(statuses(next).await, [200]);
    // The first call's own guess does not fit its budget: it has its 429 back at once.
    assert_eq!(statuses(first).await, [429]);
}

/// A guess is the key's, not one call's: a call refused on its fourth attempt (three 503s
/// before) sleeps its own grown backoff, 2 to 4 s, but a layer that does not learn holds the
/// key's other calls only for the first guess, at most half a second, as no probe of the key was
/// refused.
#[tokio::test(start_paused = true)]
async fn a_guess_closes_the_key_for_its_refused_probes_not_for_one_calls_retries() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::None).scripted(vec![
        (503, vec![]),
        (503, vec![]),
        (503, vec![]),
        (429, vec![]),
    ]);
    let gates = Gates::new();
    let layer = not_learning(&gates);
    let unlucky = spawn_calls(&layer, &limiter, 1);
    limiter.until_refused(1).await;
    let refused_at = Instant::now();
    let closed_for = closed_for(&gates);
    assert!(closed_for <= SECOND / 2, "closed for {closed_for:?}");
    let next = spawn_calls(&layer, &limiter, 1);
    assert_eq!(statuses(next).await, [200]);
    assert!(Instant::now() - refused_at <= SECOND / 2);
    assert_eq!(statuses(unlucky).await, [200]);
    assert!(Instant::now() - refused_at >= 2 * SECOND, "its own backoff");
    assert_eq!(limiter.log().len(), 6);
}

/// The key's guess doubles with each of its probes the server refuses: a key refused three
/// times in a row from its first request (the slow start's probe, then the probe after each
/// closure) is closed for the third guess, 1 to 2 s, where its first closure was at most half a
/// second.
#[tokio::test(start_paused = true)]
async fn a_guess_doubles_with_each_probe_the_server_refuses() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::None).scripted(vec![
        (429, vec![]),
        (429, vec![]),
        (429, vec![]),
    ]);
    let gates = Gates::new();
    let call = spawn_calls(&not_learning(&gates), &limiter, 1);
    let mut closures = Vec::new();
    for refused in 1..=3 {
        limiter.until_refused(refused).await;
        closures.push(closed_for(&gates));
    }
    assert!(closures[0] <= SECOND / 2, "{closures:?}");
    assert!(
        closures[2] >= SECOND && closures[2] <= 2 * SECOND,
        "{closures:?}"
    );
    assert_eq!(statuses(call).await, [200]);
}

/// A layer on `gates` that does not learn limits, its jitter seeded.
fn not_learning(gates: &Gates) -> RateLimitLayer {
    RateLimitLayer::new()
        .gates(gates.clone())
        .learn_limits(false)
        .jitter_seed(7)
}

/// How long api.test's gate is closed for, where a refusal just closed it.
fn closed_for(gates: &Gates) -> Duration {
    let gate = gates.snapshot(&key()).expect("the key has a gate");
    gate.closed_for().expect("the refusal closed the key")
}

/// A shared store merges reports of different windows by the gate's rule, not into the
/// smallest count and the latest reset: a per-second window's zero holds every process until
/// its own reset, not a per-minute one's, and a spent window of half a second is not stretched
/// over the next whole window.
#[tokio::test]
async fn a_shared_store_merges_quota_by_the_gates_rule() {
    let now = std::time::SystemTime::now();
    let quota = |remaining, reset_in: Duration| Window {
        quota: Some((remaining, now + reset_in)),
        ..Window::default()
    };
    // When the store holds the next call: it reserves what is left first.
    let held_until = |reports: Vec<Window>| async move {
        let store = MemoryStore::new();
        let key = Key::named("api");
        for report in reports {
            store.merge(&key, report, None, now).await.unwrap();
        }
        loop {
            match store.reserve(&key, Respects::ALL, now).await.unwrap() {
                Reservation::Granted(_) => continue,
                Reservation::NotBefore { until, .. } => break until.duration_since(now).unwrap(),
            }
        }
    };
    let spent_second = quota(0, 2 * SECOND);
    let minute_with_room = quota(40, 55 * SECOND);
    for reports in [
        vec![spent_second, minute_with_room],
        vec![minute_with_room, spent_second],
    ] {
        assert_eq!(
            held_until(reports).await,
            2 * SECOND,
            "held for the second, not the minute"
        );
    }
    let spent_instant = quota(0, SECOND / 2);
    let next_window = quota(99, 61 * SECOND);
    assert_eq!(
        held_until(vec![spent_instant, next_window]).await,
        SECOND / 2,
        "the spent window holds until its own reset, no longer"
    );
    // Within one window the lowest count stands, and the earliest reset of a window with room.
    let store = MemoryStore::new();
    let key = Key::named("api");
    store
        .merge(&key, quota(5, 10 * SECOND), None, now)
        .await
        .unwrap();
    store
        .merge(&key, quota(3, 9 * SECOND), None, now)
        .await
        .unwrap();
    for _ in 0..3 {
        let granted = store.reserve(&key, Respects::ALL, now).await.unwrap();
        assert!(matches!(granted, Reservation::Granted(_)));
    }
    assert!(matches!(
        store.reserve(&key, Respects::ALL, now).await.unwrap(),
        Reservation::NotBefore { until, .. } if until == now + 9 * SECOND
    ));
}

/// A closure learned again from a shared store keeps its reopening. Converted to this
/// process's clock afresh at every call, against a new reading of both clocks, it could land a
/// little later each time, and a later closure counts as a new one (the reopening moves, a new
/// epoch starts, a probe's answer is taken for a stale one).
#[tokio::test(start_paused = true)]
async fn a_shared_closure_learned_again_keeps_its_reopening() {
    let (first, second, limiter) = two_processes_and_a_limiter_closed_for_20_s();
    let started = Instant::now();
    let refused = spawn_calls(&first, &limiter, 1);
    let mut others = Vec::new();
    for _ in 0..5 {
        tokio::time::sleep(SECOND).await;
        others.extend(spawn_calls(&second, &limiter, 1));
    }
    assert!(statuses(others).await.iter().all(|status| *status == 200));
    statuses(refused).await;
    let log = limiter.log();
    assert_eq!(limiter.refused(), 1, "{log:?}");
    // The closure is 20 s plus a spread of at most a second; then one probe and the rest.
    let last = log.iter().map(|(at, _)| *at - started).max().unwrap();
    assert!(last < 22 * SECOND, "the reopening moved to {last:?}");
}

/// Panics unless a call through `layer` to `service` is sent at once and answered.
async fn assert_goes_at_once<S>(layer: &RateLimitLayer, service: S, which: &str)
where
    S: Service<Request<String>, Response = Response<String>, Error = BoxError> + Clone,
{
    let started = Instant::now();
    let response = layer.layer(service).oneshot(request("api.test")).await;
    assert!(response.is_ok(), "{which}: {response:?}");
    assert_eq!(started.elapsed(), Duration::ZERO, "{which} waited");
}

/// What the services these tests script are.
trait Scripted:
    Service<Request<String>, Response = Response<String>, Error = BoxError, Future: Send>
    + Clone
    + Send
    + 'static
{
}

impl<S> Scripted for S where
    S: Service<Request<String>, Response = Response<String>, Error = BoxError, Future: Send>
        + Clone
        + Send
        + 'static
{
}

/// Records that a request arrives now; its number, from 1.
fn arrives(arrivals: &Mutex<Vec<Instant>>) -> usize {
    let mut log = arrivals.lock().unwrap();
    log.push(Instant::now());
    log.len()
}

/// A service that answers its first request `429, Retry-After: 1` and every request (that one
/// too) with `headers`; it records in `arrivals` when each request arrived.
fn refuses_once_then_sends(
    headers: &'static [(&'static str, &'static str)],
    arrivals: Arc<Mutex<Vec<Instant>>>,
) -> impl Scripted {
    tower::service_fn(move |_request: Request<String>| {
        let first = arrives(&arrivals) == 1;
        async move {
            let mut response = Response::builder();
            if first {
                response = response.status(429).header("retry-after", "1");
            }
            for (name, value) in headers {
                response = response.header(*name, *value);
            }
            Ok::<_, BoxError>(response.body(String::new()).unwrap())
        }
    })
}

/// The server's policy paces the calls released after a 429: with two requests a 10 s window,
/// the waiters leave 5 s apart, not in a burst the limiter would refuse.
#[tokio::test(start_paused = true)]
async fn waiters_leave_a_closure_at_the_pace_of_the_servers_policy() {
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let policy = &[("ratelimit-policy", r#""w";q=2;w=10"#)][..];
    let service = refuses_once_then_sends(policy, Arc::clone(&arrivals));
    let layer = RateLimitLayer::new().slow_start(false);
    let first = tokio::spawn(layer.layer(service.clone()).oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let calls: Vec<_> = (0..3)
        .map(|_| tokio::spawn(layer.layer(service.clone()).oneshot(request("api.test"))))
        .chain([first])
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().status(), 200);
    }
    let arrivals = arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 5, "one refusal, four calls sent once each");
    let gaps: Vec<_> = arrivals[1..]
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .collect();
    assert!(
        gaps.iter()
            .any(|gap| *gap >= 5 * SECOND - Duration::from_millis(10)),
        "released at the policy's pace, 5 s apart: {gaps:?}"
    );
}

/// A pace drawn from a day's policy (86 400 s / 5 000 = 17 s a request) is not applied to the
/// calls released after a 429: most of them would run out of budget, with a quota of one a day
/// every call would fail, and the pace would stay in force for calls an hour later.
#[tokio::test(start_paused = true)]
async fn a_pace_drawn_from_a_window_longer_than_the_cap_is_not_applied() {
    for policy in [
        &[("ratelimit-policy", r#""day";q=5000;w=86400"#)][..],
        &[("ratelimit-policy", r#""day";q=1;w=86400"#)][..],
        &[(
            "ratelimit-policy",
            r#""hour";q=1000;w=3600, "day";q=5000;w=86400"#,
        )][..],
    ] {
        let arrivals = Arc::default();
        let service = refuses_once_then_sends(policy, Arc::clone(&arrivals));
        let layer = RateLimitLayer::new();
        let started = Instant::now();
        let first = tokio::spawn(layer.layer(service.clone()).oneshot(request("api.test")));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let calls: Vec<_> = (0..20)
            .map(|_| tokio::spawn(layer.layer(service.clone()).oneshot(request("api.test"))))
            .chain([first])
            .collect();
        for call in calls {
            let response = call.await.unwrap();
            assert_eq!(
                response.map(|r| r.status().as_u16()).ok(),
                Some(200),
                "{policy:?}"
            );
        }
        assert!(
            started.elapsed() < 3 * SECOND,
            "{policy:?}: {:?}",
            started.elapsed()
        );
        tokio::time::sleep(3600 * SECOND).await;
        assert_goes_at_once(&layer, service, "an hour later").await;
        assert_eq!(arrivals.lock().unwrap().len(), 23);
    }
}

/// A service that refuses its first request for `refusal`, never answers its second, and
/// accepts the rest; it records when each request arrived.
fn hangs_on_the_probe(refusal: &'static str, arrivals: Arc<Mutex<Vec<Instant>>>) -> impl Scripted {
    tower::service_fn(move |_request: Request<String>| {
        let nth = arrives(&arrivals);
        async move {
            let mut response = Response::builder();
            match nth {
                1 => response = response.status(429).header("retry-after", refusal),
                2 => std::future::pending::<()>().await,
                _ => {}
            }
            Ok::<_, BoxError>(response.body(String::new()).unwrap())
        }
    })
}

/// A probe after a 429 that never answers holds the gate for the probe timeout, no longer:
/// then the next probe goes, and the waiters and later calls get through instead of failing at
/// the end of their budget.
#[tokio::test(start_paused = true)]
async fn a_probe_that_never_answers_holds_the_gate_no_longer_than_the_probe_timeout() {
    for (layer, timeout) in [
        (RateLimitLayer::new(), 10 * SECOND),
        (RateLimitLayer::new().probe_timeout(3 * SECOND), 3 * SECOND),
    ] {
        let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let service = hangs_on_the_probe("5", arrivals.clone());
        let started = Instant::now();
        let first = tokio::spawn(layer.layer(service.clone()).oneshot(request("api.test")));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let waiters: Vec<_> = (0..3)
            .map(|_| tokio::spawn(layer.layer(service.clone()).oneshot(request("api.test"))))
            .collect();
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap().unwrap().status(), 200);
        }
        let reopened = started + 5 * SECOND;
        let log = arrivals.lock().unwrap().clone();
        assert!(
            log[1] >= reopened,
            "the probe went at {:?}",
            log[1] - started
        );
        assert!(
            log[2] >= log[1] + timeout && log[2] <= log[1] + timeout + SECOND,
            "the next probe went {:?} after the hung one",
            log[2] - log[1]
        );
        assert_goes_at_once(&layer, service, "a later call").await;
        first.abort();
    }
}

/// When every unit of a window's quota is out, waiters are woken at the window's reset, not
/// only by the answers: one slow answer does not hold them past it.
#[tokio::test(start_paused = true)]
async fn when_a_windows_quota_is_all_in_flight_waiters_wake_at_its_reset() {
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let log = arrivals.clone();
    let service = tower::service_fn(move |_request: Request<String>| {
        let nth = arrives(&log);
        async move {
            let mut response = Response::builder();
            match nth {
                1 => {
                    response = response
                        .header("x-ratelimit-remaining", "1")
                        .header("x-ratelimit-reset", "2");
                }
                2 => tokio::time::sleep(100 * SECOND).await,
                _ => {}
            }
            Ok::<_, BoxError>(response.body(String::new()).unwrap())
        }
    });
    let gated = RateLimitLayer::new().layer(service);
    let started = Instant::now();
    gated.clone().oneshot(request("api.test")).await.unwrap();
    let slow = tokio::spawn(gated.clone().oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    gated.oneshot(request("api.test")).await.unwrap();
    let third = arrivals.lock().unwrap()[2] - started;
    assert!(
        third >= 2 * SECOND && third <= 2 * SECOND + SECOND / 10,
        "sent {third:?} after the first, not at the reset"
    );
    slow.await.unwrap().unwrap();
}

/// With the registry full, a 429 for a new key never makes room by forgetting a gate closed by
/// a 429 still in force, even one with no call waiting or out: that key's next call would go
/// inside its window.
#[tokio::test(start_paused = true)]
async fn a_full_registry_never_forgets_a_closure_that_still_holds() {
    let gates = Gates::with_capacity(1);
    let layer = RateLimitLayer::new().gates(gates.clone());
    // Each 429 goes back to its caller: the gate alone remembers it.
    let refusal = |wait: &str| {
        let headers = vec![
            ("retry-after", wait.to_owned()),
            ("x-should-retry", "false".to_owned()),
        ];
        Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
            .scripted(vec![(429, headers)])
    };
    let a = refusal("30");
    let b = refusal("5");
    let started = Instant::now();
    let first = layer.layer(a.clone()).oneshot(request("a.test")).await;
    assert_eq!(first.unwrap().status(), 429);
    let other = layer.layer(b.clone()).oneshot(request("b.test")).await;
    assert_eq!(other.unwrap().status(), 429);
    tokio::time::sleep(SECOND).await;
    let again = layer.layer(a.clone()).oneshot(request("a.test")).await;
    assert_eq!(again.unwrap().status(), 200);
    assert_sent_again_no_sooner(&a, started + 30 * SECOND);
}

/// A spent window reported for a new key on a full registry takes the place of a key that only
/// knows a quota with room: dropped, the key's next call would go inside the spent window.
#[tokio::test(start_paused = true)]
async fn a_spent_window_on_a_new_key_takes_the_place_of_a_key_that_holds_nothing() {
    let gates = Gates::with_capacity(1);
    let layer = RateLimitLayer::new().gates(gates.clone());
    let answering = |field: &str| {
        Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
            .scripted(vec![(200, vec![("ratelimit", field.to_owned())])])
    };
    let roomy = answering("\"d\";r=50;t=60");
    layer.layer(roomy).oneshot(request("a.test")).await.unwrap();
    let spent = answering("\"d\";r=0;t=30");
    let started = Instant::now();
    layer
        .layer(spent.clone())
        .oneshot(request("b.test"))
        .await
        .unwrap();
    layer
        .layer(spent.clone())
        .oneshot(request("b.test"))
        .await
        .unwrap();
    let log = spent.log();
    assert!(log[1].0 >= started + 30 * SECOND, "{log:?}");
    assert_eq!(gates.len(), 1);
}

/// With `respect_remaining(false)`, the calls queued behind a 429 are held by its own
/// `Retry-After` alone, never paced by the policy or held by the spent window the answers
/// report; the refused call itself is not resent into the window the server said is spent.
#[tokio::test(start_paused = true)]
async fn a_layer_that_does_not_respect_remaining_is_held_only_by_the_429() {
    let arrivals = Arc::default();
    let metered = &[
        ("ratelimit-policy", r#""w";q=2;w=10"#),
        ("ratelimit", r#""w";r=0;t=10"#),
    ];
    let service = refuses_once_then_sends(metered, Arc::clone(&arrivals));
    let shared = Gates::new();
    let unmetered = RateLimitLayer::new()
        .respect_remaining(false)
        .gates(shared.clone());
    let started = Instant::now();
    let first = tokio::spawn(
        unmetered
            .layer(service.clone())
            .oneshot(request("api.test")),
    );
    tokio::time::sleep(Duration::from_millis(10)).await;
    let waiters: Vec<_> = (0..5)
        .map(|_| {
            tokio::spawn(
                unmetered
                    .layer(service.clone())
                    .oneshot(request("api.test")),
            )
        })
        .collect();
    for waiter in waiters {
        assert_eq!(waiter.await.unwrap().unwrap().status(), 200);
    }
    assert!(
        started.elapsed() < 2 * SECOND,
        "held {:?}: by the pace or the spent window",
        started.elapsed()
    );
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    let refused_retry = arrivals.lock().unwrap().last().copied().unwrap();
    assert!(
        refused_retry >= started + 10 * SECOND,
        "the refused call went again {:?} after, inside the 10 s its answer said are spent",
        refused_retry - started
    );
}

/// A layer that respects the quota waits out a spent window without turning it into a closure
/// of the shared gate, so a layer that does not respect the quota is not held by it.
#[tokio::test(start_paused = true)]
async fn a_spent_window_never_holds_a_layer_that_does_not_respect_remaining() {
    let spent = vec![("ratelimit", "\"d\";r=0;t=30".to_owned())];
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(200, spent)]);
    let shared = Gates::new();
    let metered = RateLimitLayer::new().gates(shared.clone());
    let unmetered = RateLimitLayer::new()
        .respect_remaining(false)
        .gates(shared.clone());
    statuses(spawn_calls(&metered, &limiter, 1)).await;
    let held = spawn_calls(&metered, &limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let started = Instant::now();
    assert_eq!(statuses(spawn_calls(&unmetered, &limiter, 1)).await, [200]);
    assert_eq!(started.elapsed(), Duration::ZERO, "the opt-out opts out");
    assert_eq!(statuses(held).await, [200]);
}

/// A call held behind a probe (or by a pace) that gives up is told, in `retry_after`, how long
/// until the gate could let it through, not 0: the gate is not closed, but it cannot let the
/// call through for a while yet.
#[tokio::test(start_paused = true)]
async fn a_call_that_gives_up_behind_a_probe_is_told_how_long_until_it_could_go() {
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let service = hangs_on_the_probe("1", arrivals.clone());
    let patient = RateLimitLayer::new();
    let first = tokio::spawn(patient.layer(service.clone()).oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let hasty = RateLimitLayer::new()
        .gates(patient.layer(service.clone()).gates().clone())
        .retry_after_cap(2 * SECOND)
        .max_wait(4 * SECOND);
    let error = hasty
        .layer(service)
        .oneshot(request("api.test"))
        .await
        .unwrap_err();
    let throttled = error.downcast_ref::<Throttled>().expect("Throttled");
    // The probe holds the gate until it answers, or for the probe timeout (10 s).
    let probe_deadline = arrivals.lock().unwrap()[1] + 10 * SECOND;
    assert_eq!(
        throttled.retry_after(),
        probe_deadline - Instant::now(),
        "what the probe out may still hold the gate"
    );
    first.abort();
}

/// A call whose retry meets a gate another call closed for longer than it may wait ends at
/// once, before any wait: it has its response whole, body included, not `Throttled`.
#[tokio::test(start_paused = true)]
async fn a_retry_the_gate_holds_beyond_the_budget_returns_the_response_whole() {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let service = tower::service_fn(move |_request: Request<String>| {
        let nth = arrives(&arrivals);
        async move {
            let (wait, latency) = if nth == 1 { ("5", 10) } else { ("300", 0) };
            tokio::time::sleep(Duration::from_millis(latency)).await;
            let response = Response::builder()
                .status(429)
                .header("retry-after", wait)
                .body(format!("refusal {nth}"))
                .unwrap();
            Ok::<_, BoxError>(response)
        }
    });
    let gates = Gates::new();
    // Both requests out at once: no slow start on the key the first one opens.
    let hasty = RateLimitLayer::new().gates(gates.clone()).slow_start(false);
    let patient = RateLimitLayer::new()
        .gates(gates)
        .retry_after_cap(Duration::from_secs(600))
        .max_wait(Duration::from_secs(1200));
    let first = tokio::spawn(hasty.layer(service.clone()).oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let closing = tokio::spawn(patient.layer(service).oneshot(request("api.test")));
    let response = first.await.unwrap().expect("the response, not Throttled");
    assert_eq!(response.status(), 429);
    assert_eq!(response.body(), "refusal 1");
    closing.abort();
}

/// The same for a transient failure's retry: a 503 answered while another call's 429 keeps
/// the gate closed longer than the call may wait ends the call at once with the 503 whole.
/// Sleeping its backoff first would only meet the same closed gate (DESIGN: drop, not clamp).
#[tokio::test(start_paused = true)]
async fn a_transient_failures_retry_the_gate_holds_beyond_the_budget_returns_it_at_once() {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let log = arrivals.clone();
    let service = tower::service_fn(move |_request: Request<String>| {
        let nth = arrives(&arrivals);
        async move {
            let response = if nth == 1 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Response::builder().status(429).header("retry-after", "300")
            } else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Response::builder().status(503)
            };
            let response = response.body(format!("answer {nth}")).unwrap();
            Ok::<_, BoxError>(response)
        }
    });
    let layer = RateLimitLayer::new()
        .slow_start(false)
        .retry_after_cap(Duration::from_secs(5))
        .max_wait(Duration::from_secs(10));
    let closing = tokio::spawn(layer.layer(service.clone()).oneshot(request("api.test")));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let started = Instant::now();
    let response = layer
        .layer(service)
        .oneshot(request("api.test"))
        .await
        .expect("the response, not Throttled");
    assert_eq!(response.status(), 503);
    assert_eq!(response.body(), "answer 2");
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(50),
        "no backoff slept"
    );
    assert_eq!(log.lock().unwrap().len(), 2, "nothing sent again");
    assert_eq!(closing.await.unwrap().unwrap().status(), 429);
}
