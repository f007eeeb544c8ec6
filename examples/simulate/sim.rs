//! The simulation: client strategies against limiter models on a paused clock, with every
//! random draw seeded, so the same seed gives the same report byte for byte.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_retry_after::RateLimitLayer;

use crate::limiter::{Limiter, Model};

/// Requests per window, and the window, of every model.
pub const LIMIT: u32 = 50;
pub const WINDOW: Duration = Duration::from_secs(2);
/// What every retrying strategy may spend on one call: the layer's defaults.
const MAX_WAIT: Duration = Duration::from_secs(120);
const MAX_RETRIES: u32 = 10;

/// How a client meets a 429.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// It hands the 429 back.
    NoRetry,
    /// Each call sleeps its own `Retry-After` (1 s without one) and tries again.
    SleepRetryAfter,
    /// `tower::retry` with exponential backoff (500 ms · 2^n, at most 20 s, jittered).
    TowerRetry,
    /// `RateLimitLayer` with its defaults.
    Layer,
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [
        Strategy::NoRetry,
        Strategy::SleepRetryAfter,
        Strategy::TowerRetry,
        Strategy::Layer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::NoRetry => "no retry",
            Strategy::SleepRetryAfter => "sleep Retry-After per call",
            Strategy::TowerRetry => "tower::retry, exponential",
            Strategy::Layer => "RateLimitLayer",
        }
    }
}

/// What one run measured.
pub struct Outcome {
    pub sent: usize,
    pub refused: usize,
    pub served: usize,
    /// When the last call that was served ended: the time to serve the workload.
    pub completion: Duration,
    /// How long the longest call took, served or not (every call starts at once).
    pub longest_call: Duration,
    /// Every request the limiter received: when, and whether it was accepted.
    pub log: Vec<(Duration, bool)>,
}

/// The least time the limiter allows for `callers` requests made at once.
pub fn physical_limit(model: Model, callers: usize) -> Duration {
    let requests = callers as u32;
    match model {
        Model::TokenBucket => {
            let beyond_burst = requests.saturating_sub(LIMIT);
            WINDOW * beyond_burst / LIMIT
        }
        _ => WINDOW * ((requests - 1) / LIMIT),
    }
}

/// `callers` calls at once against a fresh `model`, made the `strategy` way, on the current
/// (paused) runtime.
pub async fn run(model: Model, strategy: Strategy, callers: usize, seed: u64) -> Outcome {
    let limiter = Limiter::new(model, LIMIT, WINDOW);
    let started = Instant::now();
    let layer = RateLimitLayer::new().jitter_seed(seed);
    let ends = Arc::new(Mutex::new(Vec::new()));
    let mut calls = Vec::new();
    for caller in 0..callers {
        let (limiter, layer, ends) = (limiter.clone(), layer.clone(), ends.clone());
        let rng =
            SmallRng::seed_from_u64(seed ^ (caller as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        calls.push(tokio::spawn(async move {
            let status = match strategy {
                Strategy::NoRetry => limiter.answer().status(),
                Strategy::SleepRetryAfter => sleep_retry_after(&limiter).await,
                Strategy::TowerRetry => tower_retry(limiter, rng).await,
                Strategy::Layer => {
                    let service = ServiceBuilder::new().layer(layer).service(limiter);
                    service
                        .oneshot(request())
                        .await
                        .map_or(StatusCode::TOO_MANY_REQUESTS, |response| response.status())
                }
            };
            ends.lock()
                .unwrap()
                .push((Instant::now() - started, status == StatusCode::OK));
        }));
    }
    for call in calls {
        call.await.unwrap();
    }
    let ends = ends.lock().unwrap().clone();
    let log = limiter.log();
    Outcome {
        sent: log.len(),
        refused: log.iter().filter(|(_, accepted)| !accepted).count(),
        served: ends.iter().filter(|(_, served)| *served).count(),
        completion: ends
            .iter()
            .filter(|(_, served)| *served)
            .map(|(end, _)| *end)
            .max()
            .unwrap_or_default(),
        longest_call: ends.iter().map(|(end, _)| *end).max().unwrap_or_default(),
        log,
    }
}

fn request() -> Request<String> {
    Request::get("http://api.test/items")
        .body(String::new())
        .unwrap()
}

/// What most code does: sleep the `Retry-After` of each 429 (1 s without one), try again.
async fn sleep_retry_after(limiter: &Limiter) -> StatusCode {
    let mut waited = Duration::ZERO;
    for _ in 0..=MAX_RETRIES {
        let response = limiter.answer();
        if response.status() != StatusCode::TOO_MANY_REQUESTS {
            return response.status();
        }
        let wait = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok()?.parse().ok())
            .map_or(Duration::from_secs(1), Duration::from_secs);
        if waited + wait > MAX_WAIT {
            return response.status();
        }
        waited += wait;
        tokio::time::sleep(wait).await;
    }
    StatusCode::TOO_MANY_REQUESTS
}

/// `tower::retry` with the usual exponential backoff, retrying 429s.
async fn tower_retry(limiter: Limiter, rng: SmallRng) -> StatusCode {
    let policy = Exponential {
        retries: 0,
        waited: Duration::ZERO,
        rng,
    };
    let service = ServiceBuilder::new()
        .layer(tower::retry::RetryLayer::new(policy))
        .service(limiter);
    service
        .oneshot(request())
        .await
        .map_or(StatusCode::TOO_MANY_REQUESTS, |response| response.status())
}

#[derive(Clone)]
struct Exponential {
    retries: u32,
    waited: Duration,
    rng: SmallRng,
}

impl tower::retry::Policy<Request<String>, Response<String>, BoxError> for Exponential {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _request: &mut Request<String>,
        result: &mut Result<Response<String>, BoxError>,
    ) -> Option<Self::Future> {
        let refused =
            matches!(result, Ok(response) if response.status() == StatusCode::TOO_MANY_REQUESTS);
        if !refused || self.retries == MAX_RETRIES {
            return None;
        }
        let ceiling =
            (Duration::from_millis(500) * 2u32.pow(self.retries)).min(Duration::from_secs(20));
        let wait = ceiling.mul_f64(0.5 + 0.5 * self.rng.random::<f64>());
        if self.waited + wait > MAX_WAIT {
            return None;
        }
        self.retries += 1;
        self.waited += wait;
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, request: &Request<String>) -> Option<Request<String>> {
        Some(request.clone())
    }
}

/// Runs every model × callers × strategy on one paused runtime each, and writes the markdown
/// table; returns it with the runs of `timeline` (model, callers) for the picture.
pub fn report(
    seed: u64,
    callers: &[usize],
    timeline: (Model, usize),
) -> (String, Vec<(Strategy, Outcome)>) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| limiter | callers | strategy | sent | refused | served | completion / physical limit | longest call |"
    );
    let _ = writeln!(table, "|---|---:|---|---:|---:|---:|---:|---:|");
    let mut pictured = Vec::new();
    for model in Model::ALL {
        for &callers in callers {
            for strategy in Strategy::ALL {
                let outcome = paused(run(model, strategy, callers, seed));
                let physical = physical_limit(model, callers);
                let ratio = if physical.is_zero() {
                    // The limiter allows it all at once: no ratio to give.
                    "—".to_owned()
                } else {
                    format!(
                        "{:.2}",
                        outcome.completion.as_secs_f64() / physical.as_secs_f64()
                    )
                };
                let _ = writeln!(
                    table,
                    "| {} | {callers} | {} | {} | {} | {}/{callers} | {ratio} | {:.2?} |",
                    model.name(),
                    strategy.name(),
                    outcome.sent,
                    outcome.refused,
                    outcome.served,
                    outcome.longest_call,
                );
                if (model, callers) == timeline {
                    pictured.push((strategy, outcome));
                }
            }
        }
    }
    (table, pictured)
}

fn paused<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(future)
}
