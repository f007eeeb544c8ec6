//! A fleet sharing one credential: several sets of gates, as several processes have, calling
//! one limiter, with and without a shared store. Paused clock; the limiter answers each request
//! 50 ms after it arrives, or after round trips drawn from a seed where a test says so.

#[path = "support/limiter.rs"]
mod limiter;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use http::{Request, Response};
use limiter::{Algorithm, Headers, Limiter, Model, retry_after};
use tokio::time::Instant;
use tower::{BoxError, Layer, Service, ServiceExt};
use tower_retry_after::store::{
    MemoryStore, Reservation, Respects, StoreFuture, Ticket, Window, WindowStore,
};
use tower_retry_after::{CallCost, Gates, HeldBy, Key, Notice, RateLimitLayer, Throttled};

const SECOND: Duration = Duration::from_secs(1);
const PROCESSES: usize = 4;
const WORKERS: usize = 25;
const CALLS_EACH: usize = 4;

/// What a fleet's run cost: requests the limiter refused, and how long the last call took.
struct Run {
    refused: usize,
    served: usize,
    took: Duration,
}

/// 4 processes × 25 workers, 4 calls each, against 20 requests a second; each process its own
/// gates, sharing `store` if given.
async fn fleet(headers: Headers, store: Option<Arc<MemoryStore>>) -> Run {
    fleet_on(Algorithm::FirstRequest, headers, store).await
}

/// The same fleet against a limiter of shape `algorithm`.
async fn fleet_on(algorithm: Algorithm, headers: Headers, store: Option<Arc<MemoryStore>>) -> Run {
    fleet_of(RateLimitLayer::new(), algorithm, headers, store).await
}

/// The same fleet, each process's layer set as `layer` is.
async fn fleet_of(
    layer: RateLimitLayer,
    algorithm: Algorithm,
    headers: Headers,
    store: Option<Arc<MemoryStore>>,
) -> Run {
    let gates = || store.clone().map_or_else(Gates::new, Gates::with_store);
    fleet_with(layer, algorithm, headers, gates).await
}

/// The same fleet, each process's layer set as `layer` is, on the gates `gates` gives it.
async fn fleet_with(
    layer: RateLimitLayer,
    algorithm: Algorithm,
    headers: Headers,
    gates: impl Fn() -> Gates,
) -> Run {
    let model = Model::Shaped {
        algorithm,
        limit: 20,
        window: SECOND,
    };
    let limiter = Limiter::new(model, headers).with_latency(Duration::from_millis(50));
    fleet_against(limiter, layer, gates).await
}

/// The same fleet, each process's layer set as `layer` is, on the gates `gates` gives it,
/// calling `limiter`.
async fn fleet_against(limiter: Limiter, layer: RateLimitLayer, gates: impl Fn() -> Gates) -> Run {
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..PROCESSES {
        let layer = layer.clone().gates(gates());
        for _ in 0..WORKERS {
            let service = layer.layer(limiter.clone());
            workers.push(tokio::spawn(async move {
                let mut served = 0;
                for _ in 0..CALLS_EACH {
                    let request = Request::get("http://api.test/items")
                        .body(String::new())
                        .unwrap();
                    let response = service.clone().oneshot(request).await.unwrap();
                    served += usize::from(response.status() == 200);
                }
                served
            }));
        }
    }
    let mut served = 0;
    for worker in workers {
        served += worker.await.unwrap();
    }
    Run {
        refused: limiter.refused(),
        served,
        took: started.elapsed(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_fleet_sharing_a_store_spends_no_more_than_the_meters_report() {
    let alone = fleet(Headers::Draft8, None).await;
    let shared = fleet(Headers::Draft8, Some(Arc::new(MemoryStore::new()))).await;
    eprintln!(
        "draft 08: shared {} refused in {:?}, alone {} in {:?}",
        shared.refused, shared.took, alone.refused, alone.took
    );
    let calls = PROCESSES * WORKERS * CALLS_EACH;
    // Alone, a call refused on every attempt gives up with the 429: that is the baseline's
    // cost, not this test's subject. Shared, every call is served.
    assert_eq!(shared.served, calls, "alone: {} served", alone.served);
    // 400 calls at 20 a second: the last window opens at 19 s.
    let physical = 19 * SECOND;
    assert!(
        shared.refused <= 1,
        "refused {} (each process alone: {})",
        shared.refused,
        alone.refused
    );
    assert!(alone.refused > 20, "each process alone: {}", alone.refused);
    assert!(
        shared.took.as_secs_f64() <= 1.10 * physical.as_secs_f64() + 0.1,
        "took {:?}",
        shared.took
    );
}

#[tokio::test(start_paused = true)]
async fn a_fleet_sharing_a_store_learns_the_limit_a_server_does_not_publish() {
    let alone = fleet(Headers::RetryAfter, None).await;
    let shared = fleet(Headers::RetryAfter, Some(Arc::new(MemoryStore::new()))).await;
    eprintln!(
        "retry-after: shared {} refused in {:?}, alone {} in {:?}",
        shared.refused, shared.took, alone.refused, alone.took
    );
    let calls = PROCESSES * WORKERS * CALLS_EACH;
    // Alone, a call refused on every attempt gives up with the 429: that is the baseline's
    // cost, not this test's subject. Shared, every call is served.
    assert_eq!(shared.served, calls, "alone: {} served", alone.served);
    // Each process alone learns its own share and restores it at once, as the fleet does
    // its whole limit: the store's gain is the refusals each process would meet learning.
    assert!(
        shared.refused < alone.refused,
        "refused {} (each process alone: {})",
        shared.refused,
        alone.refused
    );
    // The fleet learns by the gate's law, which reads a 1 s window's length from whole-second
    // instructions as up to 1.05 s (never early).
    let physical = 19 * SECOND;
    assert!(
        shared.took.as_secs_f64() <= 1.20 * physical.as_secs_f64(),
        "took {:?}",
        shared.took
    );
}

/// A layer set not to learn limits is not paced by what its fleet learned either: sharing a
/// store, its processes go until the server refuses them, window after window, as the layer's
/// own gate lets them, where the defaults learn the window and meet it seldom.
#[tokio::test(start_paused = true)]
async fn a_fleet_whose_layers_do_not_learn_limits_is_not_paced_by_the_law() {
    let run = |layer| {
        let store = Some(Arc::new(MemoryStore::new()));
        fleet_of(layer, Algorithm::FirstRequest, Headers::RetryAfter, store)
    };
    let learned = run(RateLimitLayer::new()).await;
    let unlearned = run(RateLimitLayer::new().learn_limits(false)).await;
    eprintln!(
        "learned {} refused in {:?}, unlearned {} in {:?}",
        learned.refused, learned.took, unlearned.refused, unlearned.took
    );
    assert!(
        unlearned.refused > 10 * learned.refused.max(1),
        "not learning: {} refused, learning: {}",
        unlearned.refused,
        learned.refused
    );
}

/// The fleet learns by the gate's law on other shapes of limiter than windows from the first
/// request (the test above) as well, against the physical limit (19 s for 400 calls at 20 a
/// second, either shape full at the start): within a fifth of it on a token bucket, refused
/// less often than the processes each learning alone; on aligned windows 1.18 times it in
/// most runs, and up to 1.47 where the wake-up order (which varies run to run) lets a rate
/// tried from zero go on between refusals (BENCHMARKS.md). There the fleet is refused 22 to
/// 42 times over runs, against 40 for the processes alone: fewer in most runs, not in every
/// one, so only the token bucket's refusals are compared.
#[tokio::test(start_paused = true)]
async fn without_meters_a_fleet_learns_aligned_windows_and_token_buckets_once_for_all() {
    for (algorithm, bound) in [(Algorithm::TokenBucket, 1.20), (Algorithm::Aligned, 1.50)] {
        let alone = fleet_on(algorithm, Headers::RetryAfter, None).await;
        let store = Some(Arc::new(MemoryStore::new()));
        let shared = fleet_on(algorithm, Headers::RetryAfter, store).await;
        let name = algorithm.flag();
        eprintln!(
            "{name}: shared {} refused in {:?}, alone {} in {:?}",
            shared.refused, shared.took, alone.refused, alone.took
        );
        assert_eq!(shared.served, PROCESSES * WORKERS * CALLS_EACH, "{name}");
        if algorithm == Algorithm::TokenBucket {
            assert!(shared.refused < alone.refused, "{name}");
        }
        let ratio = shared.took.as_secs_f64() / 19.0;
        assert!(
            ratio <= bound,
            "{name}: {ratio:.2} times the physical limit"
        );
    }
}

/// A reset written as an epoch second may fall up to a second before the one read, and every
/// answer of a window names the same second: released at it, each 1 s window would cost two.
/// The store sends a window's last request early, alone, as a gate does, and its answer times
/// the next window: the fleet is never refused, and within 1.30 × the physical limit.
#[tokio::test(start_paused = true)]
async fn a_fleet_told_its_resets_to_the_second_spends_a_window_in_close_to_its_length() {
    for algorithm in [Algorithm::FirstRequest, Algorithm::Sliding] {
        let store = Some(Arc::new(MemoryStore::new()));
        let shared = fleet_on(algorithm, Headers::XRateLimitEpoch, store).await;
        let name = algorithm.flag();
        eprintln!("{name}: {} refused in {:?}", shared.refused, shared.took);
        assert_eq!(shared.served, PROCESSES * WORKERS * CALLS_EACH, "{name}");
        assert_eq!(shared.refused, 0, "{name}");
        let ratio = shared.took.as_secs_f64() / 19.0;
        assert!(ratio <= 1.30, "{name}: {ratio:.2} times the physical limit");
    }
}

/// The same with round trips that vary, seeds 1 to 10: each way 10 to 40 ms, so answers come
/// back in another order than their requests went, and the figures of a window's first answers
/// already count requests still out. A store that held the calls till the reset read wherever
/// all that was left was taken by requests out sent no last request early in those windows
/// (the processes' gates, told the spent window, held their calls too): windows from the first
/// request took up to 1.32 × the physical limit on these seeds (1.56 in 100), sliding logs 1.36.
/// Held calls now look again as the answers come, as a gate's queue wakes on each.
#[tokio::test(start_paused = true)]
async fn a_fleet_told_its_resets_to_the_second_keeps_to_them_when_round_trips_vary() {
    // A sliding log frees its oldest requests first, a few at a time, which the last request
    // sent early cannot always read as a new window: 1.21 to 1.36 on these seeds (over seeds
    // 1–100, a mean of 1.24 and 10 over 1.30). A token bucket's full time moves later as it
    // is spent: restored at the earliest second read, a window came every two seconds (2.01
    // on two of these seeds, 26 of 100); at a second read a second later, 1.01 to 1.03.
    // A run's figures also move with the real time it starts at: the gates anchor their wall
    // clock then, and resets written as epoch seconds fall at a phase of it (seed 9's sliding
    // log reads 1.41; with a figure restated taken as room given back, 1.36 on a quiet machine
    // and 1.41 under load), so each bound stands clear of that spread.
    for (algorithm, bound) in [
        (Algorithm::FirstRequest, 1.30),
        (Algorithm::Sliding, 1.45),
        (Algorithm::TokenBucket, 1.20),
    ] {
        for seed in 1..=10 {
            let model = Model::Shaped {
                algorithm,
                limit: 20,
                window: SECOND,
            };
            let limiter =
                Limiter::new(model, Headers::XRateLimitEpoch).with_round_trips_drawn_from(seed);
            let store = Arc::new(MemoryStore::new());
            let gates = || Gates::with_store(store.clone());
            let layer = RateLimitLayer::new().jitter_seed(seed);
            let shared = fleet_against(limiter, layer, gates).await;
            let name = algorithm.flag();
            let ratio = shared.took.as_secs_f64() / 19.0;
            eprintln!(
                "{name}, seed {seed}: {} refused, {ratio:.2}",
                shared.refused
            );
            assert_eq!(
                shared.served,
                PROCESSES * WORKERS * CALLS_EACH,
                "{name} {seed}"
            );
            assert!(
                shared.refused <= 2,
                "{name} {seed}: one in ten windows at most"
            );
            assert!(
                ratio <= bound,
                "{name} {seed}: {ratio:.2} × the physical limit"
            );
        }
    }
}

/// Told nothing, a refusal's closure is the layer's guess, and a gate ends it by its law's next
/// reset where that is sooner; so does the fleet's store. (Where the store took each guess for
/// the server's word, this fleet was refused 34 to 49 times in 1.21 to 1.36 times the physical
/// limit over 20 runs; since, 24 to 31 times in 1.09 to 1.30 over 100, the time varying with
/// the order the processes' calls wake in, and 2 runs in 100 over 1.25.)
#[tokio::test(start_paused = true)]
async fn told_nothing_a_fleet_ends_a_guess_by_its_laws_reset_as_a_gate_does() {
    let alone = fleet(Headers::None, None).await;
    let shared = fleet(Headers::None, Some(Arc::new(MemoryStore::new()))).await;
    eprintln!(
        "told nothing: shared {} refused in {:?}, alone {} in {:?}",
        shared.refused, shared.took, alone.refused, alone.took
    );
    assert_eq!(shared.served, PROCESSES * WORKERS * CALLS_EACH);
    assert!(shared.refused < alone.refused, "alone: {}", alone.refused);
    // Under two refusals a window of the 19 the run takes.
    assert!(shared.refused <= 33, "refused {}", shared.refused);
    let ratio = shared.took.as_secs_f64() / 19.0;
    assert!(ratio <= 1.35, "{ratio:.2} times the physical limit");
}

/// A process whose gates share a store learns a limit no one publishes as fast as it does
/// alone: the store runs the gate's own law, and the process's gate leaves the release after
/// a refusal to it. (Where the gate released on its own ramp and the store took each guess
/// for the server's word, 1.20 to 1.30 times the physical limit, refused 28 to 59 times,
/// against 1.11 to 1.20 and 25 alone.) The 100 calls of the fleet above, one set of gates,
/// ten runs each way: the wake-up order varies from run to run.
#[tokio::test(start_paused = true)]
async fn a_process_sharing_a_store_learns_an_unpublished_limit_as_fast_as_alone() {
    let (mut alone, mut shared) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        let one = Gates::new();
        let run = fleet_with(
            RateLimitLayer::new(),
            Algorithm::FirstRequest,
            Headers::None,
            || one.clone(),
        );
        alone.push(run.await);
        let one = Gates::with_store(Arc::new(MemoryStore::new()));
        let run = fleet_with(
            RateLimitLayer::new(),
            Algorithm::FirstRequest,
            Headers::None,
            || one.clone(),
        );
        shared.push(run.await);
    }
    let mean = |runs: &[Run]| {
        let took: f64 = runs.iter().map(|run| run.took.as_secs_f64() / 19.0).sum();
        let refused: usize = runs.iter().map(|run| run.refused).sum();
        (took / runs.len() as f64, refused as f64 / runs.len() as f64)
    };
    let ((alone_took, alone_refused), (shared_took, shared_refused)) =
        (mean(&alone), mean(&shared));
    eprintln!(
        "one process, told nothing: alone {alone_took:.3} x, {alone_refused:.1} refused; \
         sharing a store {shared_took:.3} x, {shared_refused:.1} refused (means of 10)"
    );
    assert!(
        shared
            .iter()
            .all(|run| run.served == PROCESSES * WORKERS * CALLS_EACH)
    );
    assert!(
        shared_took <= alone_took + 0.05,
        "{shared_took:.3} against {alone_took:.3}"
    );
    assert!(
        shared_refused <= alone_refused + 3.0,
        "{shared_refused} against {alone_refused}"
    );
}

/// What another process sharing `store` tells it on meeting a closure of `wait` on api.test.
async fn closed_by_another_process(store: &MemoryStore, wait: Duration) {
    let now = std::time::SystemTime::now();
    let closed = Window {
        closed_until: Some(now + wait),
        ..Window::default()
    };
    let key = Key::from_origin("http://api.test").unwrap();
    store.merge(&key, closed, None, now).await.unwrap();
}

/// A call held by the store after it waited at its own gate was sent on a service it had not
/// polled ready: a concurrency limit beneath the layer panics on that.
#[tokio::test(start_paused = true)]
async fn a_call_the_store_held_after_waiting_at_its_gate_is_sent_only_on_a_ready_service() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(429, retry_after(SECOND))]);
    let store = Arc::new(MemoryStore::new());
    let layer = RateLimitLayer::new().gates(Gates::with_store(store.clone()));
    let service = layer.layer(tower::limit::ConcurrencyLimit::new(limiter.clone(), 10));
    let request = || {
        Request::get("http://api.test/items")
            .body(String::new())
            .unwrap()
    };
    let refused = tokio::spawn(service.clone().oneshot(request()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiting = tokio::spawn(service.clone().oneshot(request()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Meanwhile another process met a closure of 5 s.
    closed_by_another_process(&store, 5 * SECOND).await;
    for call in [refused, waiting] {
        assert_eq!(call.await.unwrap().unwrap().status(), 200);
    }
    let log = limiter.log();
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(
        log[1].0 >= log[0].0 + 4 * SECOND,
        "held by the other process's closure"
    );
}

/// In a fleet too, a guess is the key's, not one call's: a call refused on its fourth attempt
/// (three 503s before) sleeps its own grown backoff, 2 to 4 s, but the store holds another
/// process only for the first guess, at most half a second, as no probe of the key was refused.
/// The fleet's store keeps each closure as told, so nothing else would end the call's guess.
#[tokio::test(start_paused = true)]
async fn a_guess_closes_the_fleet_for_the_keys_refused_probes_not_for_one_calls_retries() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::None).scripted(vec![
        (503, vec![]),
        (503, vec![]),
        (503, vec![]),
        (429, vec![]),
    ]);
    let store = Arc::new(MemoryStore::new());
    let process = || {
        RateLimitLayer::new()
            .gates(Gates::with_store(store.clone()))
            .jitter_seed(7)
            .layer(limiter.clone())
    };
    let request = || {
        Request::get("http://api.test/items")
            .body(String::new())
            .unwrap()
    };
    // Both made now: a process reads the store's wall clock from when its gates were made,
    // and on the paused clock a later one would read it behind.
    let (first, second) = (process(), process());
    let unlucky = tokio::spawn(first.oneshot(request()));
    limiter.until_refused(1).await;
    let refused_at = Instant::now();
    let other = second.oneshot(request()).await.unwrap();
    assert_eq!(other.status(), 200);
    let held = Instant::now() - refused_at;
    assert!(held <= SECOND / 2, "the other process held {held:?}");
    assert_eq!(unlucky.await.unwrap().unwrap().status(), 200);
    assert!(Instant::now() - refused_at >= 2 * SECOND, "its own backoff");
    assert_eq!(limiter.log().len(), 6);
}

/// A call the store holds, its own gate knowing nothing, asks the operator's hook before its
/// first attempt, as a wait at its gate would: a veto ends it at once, sending nothing.
#[tokio::test(start_paused = true)]
async fn a_call_the_store_holds_asks_the_hook_first_and_a_veto_ends_it_unsent() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter);
    let store = Arc::new(MemoryStore::new());
    closed_by_another_process(&store, 5 * SECOND).await;
    let told = Arc::new(Mutex::new(Vec::new()));
    let process = |allow: bool| {
        let told = told.clone();
        RateLimitLayer::new()
            .gates(Gates::with_store(store.clone()))
            .on_rate_limit(move |notice: &Notice<'_>| {
                if let Notice::Wait { by, attempt, .. } = notice {
                    told.lock().unwrap().push((*by, *attempt));
                }
                allow
            })
            .layer(limiter.clone())
    };
    let request = || {
        Request::get("http://api.test/items")
            .body(String::new())
            .unwrap()
    };
    let error = process(false).oneshot(request()).await.unwrap_err();
    assert!(error.downcast_ref::<Throttled>().is_some(), "{error}");
    assert!(limiter.log().is_empty(), "sent though vetoed");
    assert_eq!(*told.lock().unwrap(), [(HeldBy::Fleet, 1)]);
    let started = Instant::now();
    assert_eq!(
        process(true).oneshot(request()).await.unwrap().status(),
        200
    );
    assert!(
        started.elapsed() >= 4 * SECOND,
        "held by the other process's closure"
    );
    assert_eq!(*told.lock().unwrap(), [(HeldBy::Fleet, 1); 2]);
}

/// An instruction beyond the cap is returned at once to the call that met it, and kept and
/// shared all the same: every process's calls on the key fail fast, sending nothing, until it
/// passes.
#[tokio::test(start_paused = true)]
async fn an_instruction_beyond_the_cap_fails_every_process_fast_until_it_passes() {
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(429, retry_after(3600 * SECOND))]);
    let store = Arc::new(MemoryStore::new());
    let [first, second] = [0, 1].map(|_| {
        let layer = RateLimitLayer::new().gates(Gates::with_store(store.clone()));
        layer.layer(limiter.clone())
    });
    let request = || {
        Request::get("http://api.test/items")
            .body(String::new())
            .unwrap()
    };
    let refused = first.clone().oneshot(request()).await.unwrap();
    assert_eq!(refused.status(), 429);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let error = second.clone().oneshot(request()).await.unwrap_err();
    let throttled = error.downcast_ref::<Throttled>().expect("throttled");
    assert!(started.elapsed() < Duration::from_millis(100), "held");
    assert!(
        throttled.retry_after() > 3590 * SECOND,
        "{:?}",
        throttled.retry_after()
    );
    assert_eq!(limiter.log().len(), 1, "nothing sent inside the hour");
    tokio::time::sleep(3600 * SECOND).await;
    assert_eq!(second.oneshot(request()).await.unwrap().status(), 200);
    assert_eq!(limiter.log().len(), 2);
}

/// A call by `process` on the key is turned away at once, sending nothing.
async fn turned_away_at_once<S>(name: &str, process: S)
where
    S: Service<Request<String>, Response = Response<String>, Error = BoxError>,
{
    let request = Request::get("http://api.test/items")
        .body(String::new())
        .unwrap();
    let started = Instant::now();
    let outcome = process.oneshot(request).await;
    let throttled = matches!(&outcome, Err(error) if error.is::<Throttled>());
    let status = outcome.as_ref().map(|response| response.status());
    assert!(throttled, "{name}: {status:?}");
    let took = started.elapsed();
    assert!(took < Duration::from_millis(100), "{name}: held {took:?}");
}

/// An instruction just above the cap, met by one process, fails the others' calls fast as it
/// fails the first's: what the server named is its instruction still when the store tells it,
/// not a closure a call may wait because it is no longer than the cap and its spread.
#[tokio::test(start_paused = true)]
async fn an_instruction_just_above_the_cap_fails_the_other_processes_fast_too() {
    let cap = 30 * SECOND;
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(429, retry_after(cap + SECOND))]);
    let store = Arc::new(MemoryStore::new());
    let [first, second] = [0, 1].map(|_| {
        let layer = RateLimitLayer::new()
            .retry_after_cap(cap)
            .gates(Gates::with_store(store.clone()));
        layer.layer(limiter.clone())
    });
    let request = || {
        Request::get("http://api.test/items")
            .body(String::new())
            .unwrap()
    };
    let met = first.clone().oneshot(request()).await.unwrap();
    assert_eq!(met.status(), 429);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for (name, process) in [("first", &first), ("second", &second)] {
        turned_away_at_once(name, process.clone()).await;
    }
    assert_eq!(
        limiter.log().len(),
        1,
        "nothing sent inside the instruction"
    );
}

/// A window the server said is spent until just above the cap turns every process's calls
/// away, as it turns away the calls of the process that read it: the server's own zero is its
/// instruction, told by the store as such. (A window the fleet's requests out took whole is
/// no instruction: their answers may give some back.)
#[tokio::test(start_paused = true)]
async fn a_window_spent_until_just_above_the_cap_fails_the_other_processes_fast_too() {
    let cap = 30 * SECOND;
    let spent = vec![
        ("ratelimit-limit", "10".to_string()),
        ("ratelimit-remaining", "0".to_string()),
        ("ratelimit-reset", (cap + SECOND).as_secs().to_string()),
    ];
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(200, spent)]);
    let store = Arc::new(MemoryStore::new());
    let [first, second] = [0, 1].map(|_| {
        let layer = RateLimitLayer::new()
            .retry_after_cap(cap)
            .gates(Gates::with_store(store.clone()));
        layer.layer(limiter.clone())
    });
    let request = || {
        Request::get("http://api.test/items")
            .body(String::new())
            .unwrap()
    };
    let read = first.clone().oneshot(request()).await.unwrap();
    assert_eq!(read.status(), 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for (name, process) in [("first", &first), ("second", &second)] {
        turned_away_at_once(name, process.clone()).await;
    }
    assert_eq!(limiter.log().len(), 1, "nothing sent inside the window");
}

/// A closure named over the cap (30.2 s, cap 30 s) beside a later window the server spent
/// (40 s): a process that does not respect quotas is held by the closure alone, whose
/// instruction is over its cap, and fails fast, sending nothing.
#[tokio::test(start_paused = true)]
async fn an_over_cap_closure_beside_a_later_spent_window_fails_unmetered_processes_fast() {
    let cap = 30 * SECOND;
    let spent = vec![
        ("ratelimit-limit", "10".to_string()),
        ("ratelimit-remaining", "0".to_string()),
        ("ratelimit-reset", "40".to_string()),
    ];
    let refused = vec![("retry-after", "30.2".to_string())];
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter)
        .scripted(vec![(200, spent), (429, refused)]);
    let store = Arc::new(MemoryStore::new());
    let process = |metered: bool| {
        let layer = RateLimitLayer::new()
            .retry_after_cap(cap)
            .respect_remaining(metered)
            .gates(Gates::with_store(store.clone()));
        let layer = if metered {
            layer
        } else {
            layer.slow_start(false).learn_limits(false)
        };
        layer.layer(limiter.clone())
    };
    let [metered, unmetered, other] = [process(true), process(false), process(false)];
    let request = || {
        Request::get("http://api.test/items")
            .body(String::new())
            .unwrap()
    };
    assert_eq!(metered.oneshot(request()).await.unwrap().status(), 200);
    let met = unmetered.oneshot(request()).await.unwrap();
    assert_eq!(met.status(), 429, "over the cap: returned at once");
    tokio::time::sleep(Duration::from_millis(100)).await;
    turned_away_at_once("unmetered", other).await;
    assert_eq!(limiter.log().len(), 2, "nothing sent inside the closure");
}

/// A store a round trip away: it hears each question 10 ms after it is asked, as a store
/// across a network does.
struct Distant(Arc<MemoryStore>);

const TO_THE_STORE: Duration = Duration::from_millis(10);

impl WindowStore for Distant {
    fn reserve(&self, key: &Key, respects: Respects, now: SystemTime) -> StoreFuture<Reservation> {
        let (store, key) = (self.0.clone(), key.clone());
        Box::pin(async move {
            tokio::time::sleep(TO_THE_STORE).await;
            store.reserve(&key, respects, now).await
        })
    }

    fn merge(
        &self,
        key: &Key,
        window: Window,
        ticket: Option<Ticket>,
        now: SystemTime,
    ) -> StoreFuture<()> {
        let (store, key) = (self.0.clone(), key.clone());
        Box::pin(async move {
            tokio::time::sleep(TO_THE_STORE).await;
            store.merge(&key, window, ticket, now).await
        })
    }
}

/// A store that never answers.
struct Silent;

impl WindowStore for Silent {
    fn reserve(&self, _: &Key, _: Respects, _: SystemTime) -> StoreFuture<Reservation> {
        Box::pin(std::future::pending())
    }

    fn merge(&self, _: &Key, _: Window, _: Option<Ticket>, _: SystemTime) -> StoreFuture<()> {
        Box::pin(std::future::pending())
    }
}

/// Asking the store is part of sending, as the request's own time is: bounded by the store's
/// deadline, it spends nothing of the call's budget. A call that may wait nothing still asks
/// (the fleet's reservations need it), and past the deadline goes by its own gate.
#[tokio::test(start_paused = true)]
async fn asking_a_silent_store_is_bounded_by_its_deadline_and_spends_no_budget() {
    let deadline = Duration::from_millis(200);
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter);
    let layer = RateLimitLayer::new()
        .max_wait(Duration::ZERO)
        .gates(Gates::with_store_deadline(Silent, deadline));
    let request = Request::get("http://api.test/items")
        .body(String::new())
        .unwrap();
    let started = Instant::now();
    let response = layer.layer(limiter.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let asked = started.elapsed();
    assert!(asked >= deadline && asked < deadline * 2, "{asked:?}");
    let cost = response.extensions().get::<CallCost>().unwrap();
    assert_eq!(cost.waited(), Duration::ZERO, "max_wait(0) waits nothing");
    assert_eq!(limiter.log().len(), 1);
}

/// A store 90 ms away that holds every question 100 ms from when it was asked.
struct Holding {
    asks: Arc<AtomicUsize>,
}

const STORE_TRIP: Duration = Duration::from_millis(90);
const STORE_HOLD: Duration = Duration::from_millis(100);

impl WindowStore for Holding {
    fn reserve(&self, _: &Key, _: Respects, now: SystemTime) -> StoreFuture<Reservation> {
        self.asks.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(STORE_TRIP).await;
            Ok(Reservation::NotBefore {
                until: now + STORE_HOLD,
                window: Window::default(),
            })
        })
    }

    fn merge(&self, _: &Key, _: Window, _: Option<Ticket>, _: SystemTime) -> StoreFuture<()> {
        Box::pin(async { Ok(()) })
    }
}

/// A store's hold runs from the question: all of it spends the call's budget, the time the
/// answer took included, so a store that holds every question holds a call no longer than
/// its `max_wait` (and one question more).
#[tokio::test(start_paused = true)]
async fn a_store_that_holds_every_question_spends_the_calls_budget_from_each_question() {
    let max_wait = SECOND;
    let asks = Arc::new(AtomicUsize::new(0));
    let limiter = Limiter::new(Model::ClosedUntil(Instant::now()), Headers::RetryAfter);
    let store = Holding { asks: asks.clone() };
    let layer = RateLimitLayer::new()
        .max_wait(max_wait)
        .gates(Gates::with_store_deadline(store, SECOND));
    let request = Request::get("http://api.test/items")
        .body(String::new())
        .unwrap();
    let started = Instant::now();
    let outcome = layer.layer(limiter.clone()).oneshot(request).await;
    let held = started.elapsed();
    let throttled = matches!(&outcome, Err(error) if error.is::<Throttled>());
    assert!(throttled, "held by the store to the end");
    assert!(limiter.log().is_empty(), "nothing sent");
    let asked = asks.load(Ordering::SeqCst);
    assert!(
        held <= max_wait + STORE_HOLD,
        "held {held:?} on a max_wait of {max_wait:?}, asked {asked} times"
    );
    let waited = outcome
        .unwrap_err()
        .downcast::<Throttled>()
        .unwrap()
        .cost()
        .waited();
    assert!(
        waited <= max_wait,
        "it says it waited {waited:?}, past its max_wait"
    );
}

/// A process that flushes its gates before its runtime goes has told the fleet its last
/// answer: an hour's closure it met holds the next process, which sends nothing. (Unflushed,
/// the answer's task is dropped with the runtime and the next process is refused again.)
#[test]
fn a_process_that_flushes_its_gates_before_it_exits_leaves_the_fleet_its_last_answer() {
    let store = Arc::new(Distant(Arc::new(MemoryStore::new())));
    let sent = Arc::new(AtomicUsize::new(0));
    let server = tower::service_fn({
        let sent = sent.clone();
        move |_: Request<String>| {
            sent.fetch_add(1, Ordering::Relaxed);
            async {
                http::Response::builder()
                    .status(429)
                    .header("retry-after", "3600")
                    .body(String::new())
            }
        }
    });
    // Each process its own runtime, dropped when its call is done, as a process's at exit.
    let process = || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            let gates = Gates::with_store(store.clone());
            let client = RateLimitLayer::new()
                .gates(gates.clone())
                .layer(server.clone());
            let request = Request::get("http://api.test/items")
                .body(String::new())
                .unwrap();
            let answer = client.oneshot(request).await;
            let flushed = tokio::time::timeout(20 * SECOND, gates.flush()).await;
            flushed.expect("flushed within the store's give-up");
            answer
        })
    };
    let refused = process().expect("the 429 itself");
    assert_eq!(
        refused.status(),
        429,
        "an hour is over the cap: returned at once"
    );
    let error = process().expect_err("held by the first process's closure");
    assert!(error.downcast_ref::<Throttled>().is_some(), "{error}");
    assert_eq!(sent.load(Ordering::Relaxed), 1);
}
