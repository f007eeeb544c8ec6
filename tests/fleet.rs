//! A fleet sharing one credential: several sets of gates, as several processes have, calling
//! one limiter, with and without a shared store. Paused clock; the limiter answers each request
//! 50 ms after it arrives.

#[path = "support/limiter.rs"]
mod limiter;

use std::sync::Arc;
use std::time::Duration;

use http::Request;
use limiter::{Headers, Limiter, Model};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};
use tower_retry_after::{Gates, MemoryStore, RateLimitLayer};

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
    let limiter = Limiter::new(
        Model::FixedWindow {
            limit: 20,
            window: SECOND,
        },
        headers,
    )
    .with_latency(Duration::from_millis(50));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..PROCESSES {
        let gates = store.clone().map_or_else(Gates::new, Gates::with_store);
        let layer = RateLimitLayer::new().gates(gates);
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
    if std::env::var("FLEET_DEBUG").is_ok() && store.is_some() {
        let log = limiter.log();
        let t0 = log[0].0;
        let line: Vec<String> = log
            .iter()
            .map(|(at, status)| {
                format!(
                    "{:.3}{}",
                    (*at - t0).as_secs_f64(),
                    if *status == 429 { "X" } else { "" }
                )
            })
            .collect();
        eprintln!("{}", line.join(" "));
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
    assert_eq!((alone.served, shared.served), (calls, calls));
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
    assert_eq!((alone.served, shared.served), (calls, calls));
    assert!(
        shared.refused * 3 < alone.refused,
        "refused {} (each process alone: {})",
        shared.refused,
        alone.refused
    );
}
