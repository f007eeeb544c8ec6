//! What the shared gate does with many waiters on one key, on a paused clock against a
//! simulated limiter: refused requests per gate episode, the time from the gate opening to the
//! last waiter's release against the server's own pace, and the memory a waiting call costs.
//!
//! Run: `cargo bench --bench gate` (prints a markdown table; the figures are simulated time
//! and allocator counts, so they do not depend on the machine's load).

#[path = "../tests/support/limiter.rs"]
mod limiter;

use std::alloc::System;
use std::future::Future;
use std::time::Duration;

use http::{Request, Response};
use limiter::{Headers, Limiter, Model, retry_after};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use tokio::time::Instant;
use tower::{BoxError, Layer, ServiceExt};
use tower_retry_after::RateLimitLayer;

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const SECOND: Duration = Duration::from_secs(1);
const LIMIT: u32 = 100;

fn live_bytes() -> isize {
    let stats = ALLOCATOR.stats();
    stats.bytes_allocated as isize - stats.bytes_deallocated as isize + stats.bytes_reallocated
}

fn request() -> Request<String> {
    Request::get("http://api.test/items")
        .body(String::new())
        .unwrap()
}

fn paused<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(future)
}

type Call = tokio::task::JoinHandle<Result<Response<String>, BoxError>>;

fn spawn(layer: &RateLimitLayer, limiter: &Limiter, calls: usize) -> Vec<Call> {
    (0..calls)
        .map(|_| tokio::spawn(layer.layer(limiter.clone()).oneshot(request())))
        .collect()
}

/// The heap a waiting call holds, per waiter: in all, and what taking its place at the gate
/// added (the calls are spawned first, then polled, on a current-thread runtime).
struct Memory {
    per_call: f64,
    at_the_gate: f64,
}

/// One call meets a 429 and closes the gate; `waiters` more arrive while it is closed. Returns
/// the heap the waiters hold while they wait, and how many calls were served.
async fn episode(limiter: &Limiter, waiters: usize) -> (Memory, usize) {
    let layer = RateLimitLayer::new();
    let mut calls = spawn(&layer, limiter, 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let before = live_bytes();
    calls.extend(spawn(&layer, limiter, waiters));
    let spawned = live_bytes();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let waiting = live_bytes();
    let memory = Memory {
        per_call: (waiting - before) as f64 / waiters as f64,
        at_the_gate: (waiting - spawned) as f64 / waiters as f64,
    };
    let mut served = 0;
    for call in calls {
        let status = call.await.unwrap().map(|response| response.status());
        served += usize::from(status.ok() == Some(http::StatusCode::OK));
    }
    (memory, served)
}

struct Row {
    served: usize,
    refused_max: usize,
    refused_episodes: usize,
    drain: Duration,
    pace: Option<Duration>,
}

/// After the first refusal: the most refusals in any window, the number of windows, and the
/// time from the gate opening (the first request accepted) to the last accepted request.
fn measure(limiter: &Limiter, served: usize, window: Duration, pace: Option<Duration>) -> Row {
    let log = limiter.log();
    let first = log.iter().position(|(_, status)| *status == 429).unwrap();
    let start = log[first].0;
    let open = log[first..]
        .iter()
        .find(|(_, status)| *status == 200)
        .map(|(at, _)| *at)
        .unwrap();
    let mut per_window = Vec::new();
    for (at, status) in &log[first + 1..] {
        let index = ((*at - start).as_nanos() / window.as_nanos()) as usize;
        if per_window.len() <= index {
            per_window.resize(index + 1, 0);
        }
        per_window[index] += usize::from(*status == 429);
    }
    let last = log
        .iter()
        .filter(|(_, status)| *status == 200)
        .map(|(at, _)| *at)
        .max()
        .unwrap();
    Row {
        served,
        refused_max: per_window.iter().copied().max().unwrap_or(0),
        refused_episodes: per_window.len(),
        drain: last - open,
        pace,
    }
}

fn main() {
    println!(
        "| waiters | limiter | served | refused per episode (max) | episodes | gate open → last release | server's pace | heap per waiting call | of which its place at the gate |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for waiters in [10, 100, 1_000, 10_000] {
        // Refuses everything for 5 s, then accepts everything: the server's pace is unbounded.
        let (row, memory) = paused(async {
            let open = Instant::now() + 5 * SECOND;
            let limiter = Limiter::new(Model::ClosedUntil(open), Headers::RetryAfter);
            let (memory, served) = episode(&limiter, waiters).await;
            (measure(&limiter, served, SECOND * 3600, None), memory)
        });
        print_row(waiters, "closed 5 s, then open", &row, Some(memory));

        for (headers, name) in [
            (Headers::RetryAfter, "100 per 1 s, Retry-After only"),
            (Headers::Draft8, "100 per 1 s, draft 08 meters"),
        ] {
            let row = paused(async {
                let model = Model::FixedWindow {
                    limit: LIMIT,
                    window: SECOND,
                };
                let limiter =
                    Limiter::new(model, headers).scripted(vec![(429, retry_after(SECOND))]);
                let (_, served) = episode(&limiter, waiters).await;
                // Every window serves LIMIT: the last of waiters + 1 calls is served in the
                // window that starts this long after the first.
                let windows = (waiters as u32 + 1).div_ceil(LIMIT) - 1;
                measure(&limiter, served, SECOND, Some(SECOND * windows))
            });
            print_row(waiters, name, &row, None);
        }
    }
}

fn print_row(waiters: usize, limiter: &str, row: &Row, memory: Option<Memory>) {
    let pace = row
        .pace
        .map_or("unbounded".to_owned(), |pace| format!("{pace:.2?}"));
    let heap = memory.map_or(("".to_owned(), "".to_owned()), |memory| {
        (
            format!("{:.0} B", memory.per_call),
            format!("{:.0} B", memory.at_the_gate),
        )
    });
    println!(
        "| {waiters} | {limiter} | {}/{} | {} | {} | {:.3?} | {pace} | {} | {} |",
        row.served,
        waiters + 1,
        row.refused_max,
        row.refused_episodes,
        row.drain,
        heap.0,
        heap.1
    );
}
