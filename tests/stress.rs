//! Thousands of calls on a few keys against an in-process service that answers 429s, meters
//! and 503s at random, while calls are cancelled at random; a watcher samples every key's gate
//! throughout. Asserted: a gate is never brought forward (a key closed until T stays closed
//! until T), no request reaches the service inside a window a 429 named for its key (on the
//! paused clock, where that is exact), and at the end no waiter is left and no quota is
//! reserved.
//!
//! Two runs: one on the paused clock (deterministic, minutes simulated), and one on four worker
//! threads in real time with windows of tens of milliseconds, where the gate's locks race for
//! real.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
use tower_retry_after::{BoxError, Gates, Key, RateLimitLayer};

const KEYS: usize = 4;

fn key(index: usize) -> Key {
    Key::named(format!("api-{index}"))
}

/// What the service did, per key: when each request arrived, and each window it named; per
/// call, the windows its own refusals named and when its requests arrived; and how many
/// requests were cancelled before it answered.
struct Log {
    arrivals: Vec<Vec<Instant>>,
    windows: Vec<Vec<(Instant, Instant)>>,
    calls: HashMap<usize, CallLog>,
    dropped_in_flight: usize,
}

/// One call's requests, as the service saw them.
#[derive(Default)]
struct CallLog {
    arrivals: Vec<Instant>,
    windows: Vec<(Instant, Instant)>,
}

/// Held while the service answers: dropped before it is marked answered, the call was
/// cancelled in flight.
struct InFlight {
    log: Arc<Mutex<Log>>,
    answered: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.answered {
            self.log.lock().unwrap().dropped_in_flight += 1;
        }
    }
}

/// An answer drawn at random: a 429 naming a window of one to three `unit`s; with `meters`,
/// sometimes a 429 whose meter is spent for one to three seconds, and a 200 whose meter
/// reports a random remaining quota; a 503; else a plain 200. Returns the window a 429 named.
fn answer(
    rng: &mut StdRng,
    unit: Duration,
    meters: bool,
) -> (u16, Vec<(&'static str, String)>, Option<Duration>) {
    let policy = || ("ratelimit-policy", "\"q\";q=20;w=3".to_owned());
    match rng.random_range(0..100) {
        0..8 => {
            let window = unit * rng.random_range(1..=3);
            let headers = vec![("retry-after", format!("{:.3}", window.as_secs_f64()))];
            (429, headers, Some(window))
        }
        8..10 if meters => {
            let reset = rng.random_range(1..=3);
            let headers = vec![policy(), ("ratelimit", format!("\"q\";r=0;t={reset}"))];
            (429, headers, Some(Duration::from_secs(reset)))
        }
        10..15 => (503, Vec::new(), None),
        _ if meters => {
            let remaining = rng.random_range(0..20);
            let headers = vec![policy(), ("ratelimit", format!("\"q\";r={remaining};t=3"))];
            (200, headers, None)
        }
        _ => (200, Vec::new(), None),
    }
}

/// Runs `calls` calls over `KEYS` keys through one layer whose gates remember at most
/// `capacity` keys; cancels about one in ten after a random time. Returns what the service
/// logged, what the watcher saw, and the gates.
async fn run(
    calls: usize,
    unit: Duration,
    meters: bool,
    capacity: usize,
    seed: u64,
) -> (Log, Watched, Gates) {
    let log = Arc::new(Mutex::new(Log {
        arrivals: vec![Vec::new(); KEYS],
        windows: vec![Vec::new(); KEYS],
        calls: HashMap::new(),
        dropped_in_flight: 0,
    }));
    let rng = Arc::new(Mutex::new(StdRng::seed_from_u64(seed)));
    let service_log = log.clone();
    let service_rng = rng.clone();
    let inner = service_fn(move |request: Request<String>| {
        let (log, rng) = (service_log.clone(), service_rng.clone());
        async move {
            let index: usize = request.uri().path()[1..].parse().unwrap();
            let call: usize = request.uri().query().unwrap().parse().unwrap();
            {
                let mut log = log.lock().unwrap();
                log.arrivals[index].push(Instant::now());
                log.calls
                    .entry(call)
                    .or_default()
                    .arrivals
                    .push(Instant::now());
            }
            let (status, headers, window) = answer(&mut rng.lock().unwrap(), unit, meters);
            // The answer takes a little while, as it does over a network; its window runs
            // from when it is sent.
            let mut in_flight = InFlight {
                log: log.clone(),
                answered: false,
            };
            tokio::time::sleep(unit / 20).await;
            in_flight.answered = true;
            if let Some(window) = window {
                let now = Instant::now();
                let mut log = log.lock().unwrap();
                log.windows[index].push((now, now + window));
                let named = (now, now + window);
                log.calls.entry(call).or_default().windows.push(named);
            }
            let mut response = Response::builder().status(status);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            Ok::<_, BoxError>(response.body(String::new()).unwrap())
        }
    });
    let gates = Gates::with_capacity(capacity);
    let layer = RateLimitLayer::new()
        .gates(gates.clone())
        .key(|request| {
            let index: usize = request.uri.path()[1..].parse().ok()?;
            Some(key(index))
        })
        .retry_after_cap(unit * 10)
        .max_wait(unit * 40);
    let service = ServiceBuilder::new().layer(layer).service(inner);

    let watching = Arc::new(AtomicBool::new(true));
    let watcher = tokio::spawn(watch(gates.clone(), watching.clone()));
    let mut tasks = Vec::new();
    for call in 0..calls {
        let mut service = service.clone();
        let (cancel, start) = {
            let mut rng = rng.lock().unwrap();
            // Any moment of the call, waiting or in flight; half of them early, when a call
            // let straight through is still in flight.
            let longest = if rng.random_bool(0.5) { 0.1 } else { 10.0 };
            let cancel = rng
                .random_bool(0.1)
                .then(|| unit.mul_f64(rng.random_range(0.0..longest)));
            (cancel, unit * rng.random_range(0..400) / 4)
        };
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(start).await;
            let request = Request::get(format!("/{}?{call}", call % KEYS))
                .body(String::new())
                .unwrap();
            let call = async { service.ready().await?.call(request).await };
            match cancel {
                Some(after) => {
                    let _ = tokio::time::timeout(after, call).await;
                }
                None => {
                    let _ = call.await;
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    watching.store(false, Ordering::SeqCst);
    drop(service);
    let watched = watcher.await.unwrap();
    let log = Arc::into_inner(log).unwrap().into_inner().unwrap();
    (log, watched, gates)
}

/// What the watcher saw.
struct Watched {
    /// The most any gate reopened before the time it had said.
    brought_forward: Duration,
    /// How many samples found a gate closed.
    closed: usize,
}

/// Samples each key's gate every millisecond until told to stop. A snapshot's `closed_for`
/// is measured from a moment between `before` and `after`, so a gate read as closed until
/// at least `before + closed_for` must, at any later sample taken before then, read as closed
/// until at most `after + closed_for` no earlier. A millisecond of rounding is allowed:
/// timers fire on the millisecond.
async fn watch(gates: Gates, watching: Arc<AtomicBool>) -> Watched {
    let mut promised: HashMap<usize, Instant> = HashMap::new();
    let mut worst = Duration::ZERO;
    let mut closed = 0;
    while watching.load(Ordering::SeqCst) {
        for index in 0..KEYS {
            let before = Instant::now();
            let closed_for = gates
                .snapshot(&key(index))
                .and_then(|snapshot| snapshot.closed_for());
            let after = Instant::now();
            if let Some(&until) = promised.get(&index) {
                if until > after {
                    let reopens = after + closed_for.unwrap_or_default();
                    worst = worst.max(until.saturating_duration_since(reopens));
                }
            }
            if let Some(closed_for) = closed_for {
                closed += 1;
                let until = promised.entry(index).or_insert(before);
                *until = (*until).max(before + closed_for);
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Watched {
        brought_forward: worst.saturating_sub(Duration::from_millis(1)),
        closed,
    }
}

/// At the end, every gate is idle: nobody waiting, nothing reserved.
fn assert_settled(gates: &Gates) {
    for index in 0..KEYS {
        if let Some(snapshot) = gates.snapshot(&key(index)) {
            assert_eq!(snapshot.waiters(), 0, "key {index}");
            assert_eq!(snapshot.in_flight(), 0, "key {index}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn thousands_of_calls_with_random_429s_and_cancellations_on_the_paused_clock() {
    let (log, watched, gates) = run(5_000, Duration::from_secs(1), true, KEYS, 11).await;
    assert_eq!(watched.brought_forward, Duration::ZERO);
    assert!(watched.closed > 10_000, "{}", watched.closed);
    assert_settled(&gates);
    assert!(log.dropped_in_flight > 0, "no call was cancelled in flight");
    let mut named = 0;
    for index in 0..KEYS {
        named += log.windows[index].len();
        for arrived in &log.arrivals[index] {
            for (from, until) in &log.windows[index] {
                assert!(
                    arrived <= from || arrived >= until,
                    "key {index}: arrived {:?} into a window of {:?}",
                    *arrived - *from,
                    *until - *from
                );
            }
        }
    }
    let arrivals: usize = log.arrivals.iter().map(Vec::len).sum();
    println!(
        "{arrivals} arrivals, {named} windows, {} samples closed",
        watched.closed
    );
    assert!(named > 50, "only {named} windows named");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thousands_of_calls_racing_on_four_threads() {
    let (log, watched, gates) = run(2_000, Duration::from_millis(20), false, KEYS, 12).await;
    assert_eq!(watched.brought_forward, Duration::ZERO);
    assert!(watched.closed > 100, "{}", watched.closed);
    assert_settled(&gates);
    assert_no_retry_inside_its_own_window(&log);
    let arrivals: usize = log.arrivals.iter().map(Vec::len).sum();
    let named: usize = log.windows.iter().map(Vec::len).sum();
    println!(
        "{arrivals} arrivals, {named} windows, {} samples closed",
        watched.closed
    );
    assert!(
        arrivals > 200 && named > 10,
        "{arrivals} arrivals, {named} windows"
    );
}

/// Every refused call's own retry waits out the window its refusal named: whether its gate
/// holds it (the call takes its place there under the lock that records the closure, so no
/// other thread can forget the gate or let it through in between) or the registry is too
/// full to keep the key (the call sleeps the wait itself).
fn assert_no_retry_inside_its_own_window(log: &Log) -> usize {
    let mut refused_then_retried = 0;
    for (call, seen) in &log.calls {
        for (from, until) in &seen.windows {
            let retries: Vec<&Instant> = seen.arrivals.iter().filter(|at| *at > from).collect();
            refused_then_retried += usize::from(!retries.is_empty());
            for at in retries {
                assert!(
                    at >= until,
                    "call {call}: retried {:?} into a window of {:?}",
                    *at - *from,
                    *until - *from
                );
            }
        }
    }
    refused_then_retried
}

/// Between asking whether the gate holds a retry's wait and entering the gate, no other thread
/// can forget the gate to make room: the retry would go through a fresh, open one, inside its
/// window.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_calls_retry_never_lands_inside_its_window_on_a_full_registry() {
    for seed in [21, 22, 23] {
        let (log, watched, gates) = run(2_000, Duration::from_millis(20), true, 2, seed).await;
        assert_eq!(watched.brought_forward, Duration::ZERO);
        assert_settled(&gates);
        let retried = assert_no_retry_inside_its_own_window(&log);
        assert!(
            retried > 50,
            "seed {seed}: only {retried} refused calls retried"
        );
        assert!(gates.len() <= 2);
    }
}
