//! Ten thousand calls, fifty at a time, through the default stack (a timeout outside the
//! layer) against a loopback server that answers each request with a fault drawn from a seeded
//! generator: rate limits sane and hostile, 502s, 503s, resets, silences, slow answers.
//!
//! Every request the server received is counted by method and path (one path per call), with
//! what it answered, and the run asserts: no POST received again after anything but a 429; no
//! request on the key arrived inside a window a 429 named; no call waited beyond its bound;
//! and the heap held by the client is flat across the run (live bytes after each thousand
//! calls, by a counting allocator; this file holds one test so nothing else allocates).

mod support;

use std::alloc::System;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use support::raw::{RawServer, Reply};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{RateLimitLayer, Throttled};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const CALLS: usize = 10_000;
const WORKERS: usize = 50;
const SECOND: Duration = Duration::from_secs(1);
/// The slowest the server answers.
const SLOW: Duration = Duration::from_secs(2);
/// The longest instruction the layer waits out, and its total wait per call: tight enough
/// that a call meeting several windows runs out of it.
const CAP: Duration = Duration::from_secs(3);
const MAX_WAIT: Duration = Duration::from_secs(30);

/// What the server did with one request, as far as the invariants care.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answered {
    /// A 429 naming a window of this length.
    Window(Duration),
    /// A 429 whose headers name nothing a client can use: waited out on a guess.
    Unreadable,
    /// A 429 naming a wait no sane server asks for: returned at once, never sent again.
    OverCap,
    /// An answer that took `SLOW`.
    Slow,
    Other,
}

fn draw(rng: &mut StdRng) -> (Reply, Answered) {
    match rng.random_range(0..1000) {
        0..700 => (Reply::status(200), Answered::Other),
        700..730 => {
            let seconds = rng.random_range(1..=3);
            let reply = Reply::status(429).header("retry-after", seconds.to_string());
            (reply, Answered::Window(seconds * SECOND))
        }
        730..740 => (
            Reply::status(429).header("retry-after", b"\xff\xfe".to_vec()),
            Answered::Unreadable,
        ),
        740..750 => (
            Reply::status(429).header("retry-after", "100000000000000000000"),
            Answered::OverCap,
        ),
        750..760 => (
            Reply::status(429).header("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
            Answered::OverCap,
        ),
        760..820 => (Reply::status(502), Answered::Other),
        820..860 => (
            Reply::status(503).header("retry-after", "1"),
            Answered::Other,
        ),
        860..900 => (Reply::ResetInHead, Answered::Other),
        900..940 => (Reply::CloseWithoutAnswer, Answered::Other),
        _ => (Reply::status(200).after(SLOW), Answered::Slow),
    }
}

fn live_bytes() -> isize {
    let stats = ALLOCATOR.stats();
    stats.bytes_allocated as isize - stats.bytes_deallocated as isize
}

/// What the server received for each call: when each attempt arrived, and what it answered.
/// Room for every attempt is made before the run, so the record allocates nothing during it.
type Record = Vec<Vec<(Instant, Answered)>>;

/// The most attempts a call makes: the first, three transient retries, ten rate-limited ones.
const ATTEMPTS: usize = 14;

#[tokio::test(start_paused = true)]
async fn ten_thousand_calls_with_random_faults_keep_every_rule() {
    let record: Arc<Mutex<Record>> = Arc::new(Mutex::new(
        (0..CALLS).map(|_| Vec::with_capacity(ATTEMPTS)).collect(),
    ));
    let log = record.clone();
    let rng = Mutex::new(StdRng::seed_from_u64(2026));
    let server = RawServer::unlogged(move |_, path| {
        let (reply, answered) = draw(&mut rng.lock().unwrap());
        let call: usize = path.trim_start_matches("/call/").parse().unwrap();
        log.lock().unwrap()[call].push((Instant::now(), answered));
        reply
    })
    .await;

    // hyper-util's client with a timer for its pool, so idle connections expire by time and
    // the heap is read with none of them left.
    let client = Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build_http();
    let service = ServiceBuilder::new()
        .timeout(Duration::from_secs(300))
        .layer(
            RateLimitLayer::new()
                .retry_after_cap(CAP)
                .max_wait(MAX_WAIT)
                .jitter_seed(7),
        )
        .service(client);
    let next = Arc::new(AtomicUsize::new(0));
    // How long each call took, and whether the layer declined to send it at all.
    let calls = Arc::new(Mutex::new(vec![(Duration::ZERO, false); CALLS]));
    let mut heap = Vec::new();
    for batch in 1..=CALLS / 1000 {
        let mut workers = Vec::new();
        for _ in 0..WORKERS {
            let (mut service, next, server) = (service.clone(), next.clone(), server.clone());
            let calls = calls.clone();
            workers.push(tokio::spawn(async move {
                loop {
                    let call = next.fetch_add(1, Ordering::SeqCst);
                    if call >= batch * 1000 {
                        return;
                    }
                    let method = if call % 2 == 0 {
                        Method::POST
                    } else {
                        Method::GET
                    };
                    let request = Request::builder()
                        .method(method)
                        .uri(server.url(&format!("/call/{call}")))
                        .body(Full::new(Bytes::from_static(b"{\"capture\":1}")))
                        .unwrap();
                    let started = Instant::now();
                    let result = service.ready().await.unwrap().call(request).await;
                    // Declined before sending: Throttled, with no response of its own.
                    let throttled = result.as_ref().is_err_and(|error| {
                        error
                            .downcast_ref::<Throttled>()
                            .is_some_and(|throttled| throttled.status().is_none())
                    });
                    calls.lock().unwrap()[call] = (started.elapsed(), throttled);
                    if let Ok(response) = result {
                        let _ = response.into_body().collect().await;
                    }
                }
            }));
        }
        for worker in workers {
            worker.await.unwrap();
        }
        next.store(batch * 1000, Ordering::SeqCst);
        // Idle connections expire from the pool before the heap is read.
        tokio::time::sleep(Duration::from_secs(120)).await;
        heap.push(live_bytes());
    }

    let record = record.lock().unwrap();
    // A call's bound: the layer's total wait, plus the time its attempts took to be answered,
    // plus a millisecond a wait: tokio's timer fires on the millisecond after a deadline.
    let mut out_of_time = 0;
    let calls = calls.lock().unwrap();
    for (call, (attempts, (took, _))) in record.iter().zip(calls.iter()).enumerate() {
        let answering = attempts
            .iter()
            .filter(|(_, answered)| *answered == Answered::Slow);
        let timer = Duration::from_millis(attempts.len() as u64);
        let bound = MAX_WAIT + answering.count() as u32 * SLOW + timer;
        assert!(
            *took <= bound,
            "call {call} took {took:?}, bound {bound:?}: {attempts:?}"
        );
        out_of_time += usize::from(*took > MAX_WAIT / 2);
    }
    let mut posts_resent = 0;
    let mut throttled = 0;
    for (call, (attempts, (_, declined))) in record.iter().zip(calls.iter()).enumerate() {
        assert_eq!(attempts.is_empty(), *declined, "call {call}");
        if *declined {
            throttled += 1;
            continue;
        }
        assert!(attempts.len() <= ATTEMPTS, "call {call}: {attempts:?}");
        let over_cap = attempts.iter().position(|(_, a)| *a == Answered::OverCap);
        assert!(
            over_cap.is_none_or(|at| at == attempts.len() - 1),
            "call {call} was sent again after a wait over the cap: {attempts:?}"
        );
        if call % 2 == 1 {
            continue;
        }
        for (_, answered) in &attempts[..attempts.len() - 1] {
            assert!(
                matches!(answered, Answered::Window(_) | Answered::Unreadable),
                "POST {call} was sent again after {answered:?}"
            );
            posts_resent += 1;
        }
    }
    assert!(posts_resent > 100, "too few 429s on POST: {posts_resent}");

    let mut windows: Vec<(Instant, Instant)> = record
        .iter()
        .flatten()
        .filter_map(|(at, answered)| match answered {
            Answered::Window(window) => Some((*at, *at + *window)),
            _ => None,
        })
        .collect();
    windows.sort();
    assert!(windows.len() > 200, "{}", windows.len());
    for (call, attempts) in record.iter().enumerate() {
        for (arrived, _) in attempts {
            let opened_before = windows.partition_point(|(named, _)| named < arrived);
            if let Some((named, ends)) = windows[..opened_before]
                .iter()
                .find(|(_, ends)| arrived < ends)
            {
                panic!(
                    "call {call} arrived {:?} into a window named for {:?}",
                    *arrived - *named,
                    *ends - *named
                );
            }
        }
    }

    let settled = heap[1];
    let growth = heap
        .iter()
        .skip(1)
        .map(|bytes| bytes - settled)
        .max()
        .unwrap();
    let attempts: usize = record.iter().map(Vec::len).sum();
    println!(
        "{attempts} requests for {CALLS} calls; {posts_resent} POSTs sent again after a 429; \
         {} windows named; {out_of_time} calls waited over half the budget; \
         {throttled} declined before sending; \
         live heap after each thousand calls: {heap:?}",
        windows.len()
    );
    // A byte leaked a call would be 8 KB here.
    assert!(growth < 4 << 10, "heap grew by {growth} bytes: {heap:?}");
}
