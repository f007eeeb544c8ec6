//! The simulation: the demo's workload and limiter, over a simulated network, on a paused
//! clock, with every random draw seeded, so the same seed gives the same report byte for byte.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;
use tower::{BoxError, Service};
use tower_retry_after::RateLimitLayer;

use crate::limiter::{Headers, Limiter};
use crate::trace;
use crate::workload::{self, Args, CLIENTS, Client, Outcome};

/// The server's wall clock at the start of the first window a run could see: Tue, 14 Nov
/// 2023 22:13:20 GMT (each run adds a seeded fraction of a window to it).
const EPOCH_START: Duration = Duration::from_secs(1_700_000_000);

/// The limiter behind a simulated network: a tower service on tokio's clock. Each request
/// takes a round trip drawn from `args`: half of it on the way to the limiter, which decides
/// when the request arrives, half on the way back.
#[derive(Clone)]
pub struct Network {
    args: Args,
    limiter: Arc<Mutex<Limiter>>,
    /// Draws the round trips, in the order calls are made (which a paused current-thread
    /// runtime repeats exactly).
    rng: Arc<Mutex<SmallRng>>,
    /// The server's wall clock when `started`.
    wall_start: Duration,
    started: Instant,
}

impl Network {
    /// A fresh limiter for `args`, its windows at a phase drawn from `seed`, and round trips
    /// drawn from `seed` too.
    pub fn new(args: &Args, headers: Headers, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        // Where the run starts in the server's clock matters to windows aligned to it and to
        // whole-second epoch resets: a seeded phase, as a real client has a random one.
        let phase = rng.random_range(0..args.window.as_nanos() as u64);
        let wall_start = EPOCH_START + Duration::from_nanos(phase);
        Network {
            args: *args,
            limiter: Arc::new(Mutex::new(
                Limiter::new(args.algorithm, headers, args.limit, args.window, wall_start)
                    .holding(mean_hold(args))
                    .phases(args.phase),
            )),
            rng: Arc::new(Mutex::new(rng)),
            wall_start,
            started: Instant::now(),
        }
    }

    pub fn outcome(&self, measured: workload::Measured, requests: usize) -> Outcome {
        Outcome::new(measured, &self.limiter.lock().unwrap(), requests)
    }
}

/// How long the server holds a request it accepted, on average: the back half of a round trip
/// drawn from `args` (`t - t / 2` of a trip `t`), as tokio's timer takes it. That timer wakes
/// on whole milliseconds, and every call begins on one (the clock starts on one and moves only
/// to timers), so each half is taken rounded up to a whole millisecond: 25.5 ms for trips of
/// 20–80 ms, not the 25 ms drawn, which would leave the physical limit of a cap on requests in
/// flight 2 % below what the network allows.
fn mean_hold(args: &Args) -> Duration {
    const MILLISECOND: u128 = 1_000_000;
    let up = |nanos: u128| nanos.div_ceil(MILLISECOND) * MILLISECOND;
    let (shortest, longest) = args.round_trip;
    let (low, high) = (shortest - shortest / 2, longest - longest / 2);
    let (low, high) = (low.as_nanos(), high.as_nanos());
    if low == high {
        return Duration::from_nanos(up(low) as u64);
    }
    // Uniform over `low..=high`: each stretch that rounds up to the same millisecond, weighed
    // by its length.
    let (mut weighed, mut from) = (0, low);
    while from < high {
        let to = ((from / MILLISECOND + 1) * MILLISECOND).min(high);
        weighed += (to - from) * up(to);
        from = to;
    }
    Duration::from_nanos((weighed / (high - low)) as u64)
}

impl Service<Request<Full<Bytes>>> for Network {
    type Response = Response<Full<Bytes>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<Full<Bytes>>) -> Self::Future {
        let round_trip = self.args.draw_round_trip(&mut *self.rng.lock().unwrap());
        let there = round_trip / 2;
        let back = round_trip - there;
        let network = self.clone();
        Box::pin(async move {
            tokio::time::sleep(there).await;
            let wall = network.wall_start + (Instant::now() - network.started);
            let response = network.limiter.lock().unwrap().answer(wall);
            tokio::time::sleep(back).await;
            if response.status().is_success() {
                network.limiter.lock().unwrap().finished();
            }
            Ok(response.map(|()| Full::new(Bytes::new())))
        })
    }
}

/// One run of the workload against a fresh limiter sending `headers`, made by `client`, on
/// a paused runtime of its own (so a run's figures do not depend on the runs before it).
pub fn run(args: &Args, headers: Headers, (name, client): (&str, Client), seed: u64) -> Outcome {
    let _run = trace::run(name, args, headers, seed).entered();
    paused(async {
        trace::run_began();
        let network = Network::new(args, headers, seed);
        let layer = RateLimitLayer::new().jitter_seed(seed);
        let url = "http://api.test/items";
        let progress = ProgressBar::hidden();
        let physical = network
            .limiter
            .lock()
            .unwrap()
            .physical_limit(args.requests);
        // A client that locks itself out never finishes: it is stopped well past any figure
        // worth reporting, and reported unfinished.
        let deadline = physical * 10 + Duration::from_secs(60);
        let run = workload::run(args, client, layer, network.clone(), url, &progress);
        let measured = match tokio::time::timeout(deadline, run).await {
            Ok(measured) => measured.expect("the simulated network never fails"),
            Err(_) => workload::Measured {
                completion: deadline,
                latencies: Vec::new(),
            },
        };
        network.outcome(measured, args.requests)
    })
}

/// Every client's run for each header style `args` asks for: a style and its outcomes, in
/// `CLIENTS`' order.
pub fn runs(args: &Args, seed: u64) -> Vec<(Headers, Vec<Outcome>)> {
    args.styles()
        .into_iter()
        .map(|headers| {
            let outcomes = CLIENTS
                .iter()
                .map(|&client| run(args, headers, client, seed))
                .collect();
            (headers, outcomes)
        })
        .collect()
}

pub fn paused<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(future)
}
