//! A simulated rate limiter as a tower service: the simulator's own limiter (one family of
//! limiters for the simulator, the demo and the tests), answering at once on tokio's clock, or
//! a server that refuses everything until a time; every request it received is recorded with
//! the status it gave. Shared by the gate tests and the gate benchmark. Its answers come after a
//! fixed latency, or after round trips drawn as the simulator draws them, from a seed.

#![allow(dead_code)] // each user takes the part it needs

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;
use tower::{BoxError, Service};

#[path = "../../examples/simulate/limiter.rs"]
mod simulated;

pub use simulated::{Algorithm, Headers};

/// Where the limiter's wall clock stands when it is made: what `Date` and epoch resets say.
const WALL_AT_START: Duration = Duration::from_secs(1_700_000_000);

/// How the limiter decides.
#[derive(Clone, Copy)]
pub enum Model {
    /// Refuses everything until `until`, with a `Retry-After` of the time left, then accepts
    /// everything.
    ClosedUntil(Instant),
    /// `limit` requests per `window` (whole seconds), the window opening at its first request:
    /// the simulator's first-request limiter.
    FixedWindow { limit: u32, window: Duration },
    /// `limit` requests per `window` by the simulator's limiter of that shape.
    Shaped {
        algorithm: Algorithm,
        limit: u32,
        window: Duration,
    },
}

#[derive(Clone)]
pub struct Limiter {
    state: Arc<Mutex<LimiterState>>,
    latency: Latency,
}

/// How long a request takes to reach the limiter and its answer to come back.
#[derive(Clone)]
enum Latency {
    /// Decided on arrival, answered this long after.
    Fixed(Duration),
    /// Each way drawn anew from 10 to 40 ms.
    Drawn(Arc<Mutex<SmallRng>>),
}

/// What decides: the simulator's limiter, or a closure until a time.
enum Decides {
    Counting(simulated::Limiter),
    ClosedUntil(Instant),
}

struct LimiterState {
    decides: Decides,
    /// When the limiter was made: its wall clock is [`WALL_AT_START`] then.
    origin: Instant,
    /// Every request: when it arrived and the status it got.
    log: Vec<(Instant, u16)>,
    /// Scripted answers, used before the model: status and headers.
    script: Vec<(u16, Vec<(&'static str, String)>)>,
}

impl Limiter {
    pub fn new(model: Model, headers: Headers) -> Self {
        Limiter {
            state: Arc::new(Mutex::new(LimiterState {
                decides: match model {
                    Model::ClosedUntil(until) => Decides::ClosedUntil(until),
                    Model::FixedWindow { limit, window } => {
                        Decides::Counting(simulated::Limiter::new(
                            Algorithm::FirstRequest,
                            headers,
                            limit,
                            window,
                            WALL_AT_START,
                        ))
                    }
                    Model::Shaped {
                        algorithm,
                        limit,
                        window,
                    } => Decides::Counting(simulated::Limiter::new(
                        algorithm,
                        headers,
                        limit,
                        window,
                        WALL_AT_START,
                    )),
                },
                origin: Instant::now(),
                log: Vec::new(),
                script: Vec::new(),
            })),
            latency: Latency::Fixed(Duration::ZERO),
        }
    }

    /// Answers each request this long after it arrives (decided when it arrives).
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = Latency::Fixed(latency);
        self
    }

    /// Each request takes 10 to 40 ms to arrive and its answer as long again, each drawn anew
    /// from `seed`'s sequence: requests sent in one order may arrive, and be answered, in
    /// another.
    pub fn with_round_trips_drawn_from(mut self, seed: u64) -> Self {
        self.latency = Latency::Drawn(Arc::new(Mutex::new(SmallRng::seed_from_u64(seed))));
        self
    }

    /// Answers these first, in order, before the model decides.
    pub fn scripted(self, answers: Vec<(u16, Vec<(&'static str, String)>)>) -> Self {
        self.state.lock().unwrap().script = answers.into_iter().rev().collect();
        self
    }

    pub fn log(&self) -> Vec<(Instant, u16)> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn refused(&self) -> usize {
        self.log()
            .iter()
            .filter(|(_, status)| *status == 429)
            .count()
    }

    /// Returns once the limiter has refused `times` requests, looking every millisecond of
    /// tokio's clock.
    pub async fn until_refused(&self, times: usize) {
        while self.refused() < times {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn answer(&self) -> Response<String> {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap();
        let response = match state.script.pop() {
            Some((status, headers)) => {
                let mut response = Response::builder().status(status);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                response.body(()).unwrap()
            }
            None => state.decide(now),
        };
        state.log.push((now, response.status().as_u16()));
        response.map(|()| String::new())
    }
}

impl LimiterState {
    fn decide(&mut self, now: Instant) -> Response<()> {
        let wall = WALL_AT_START + (now - self.origin);
        match &mut self.decides {
            Decides::Counting(limiter) => limiter.answer(wall),
            Decides::ClosedUntil(until) if now < *until => {
                let mut response = Response::builder().status(429);
                for (name, value) in retry_after(*until - now) {
                    response = response.header(name, value);
                }
                response.body(()).unwrap()
            }
            Decides::ClosedUntil(_) => Response::new(()),
        }
    }
}

fn ceil_seconds(duration: Duration) -> u64 {
    duration.as_millis().div_ceil(1000) as u64
}

/// A `Retry-After` of `left`, in whole seconds rounded up, never 0.
pub fn retry_after(left: Duration) -> Vec<(&'static str, String)> {
    vec![("retry-after", ceil_seconds(left).max(1).to_string())]
}

impl Service<Request<String>> for Limiter {
    type Response = Response<String>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<String>, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<String>) -> Self::Future {
        match &self.latency {
            Latency::Fixed(latency) => {
                let (answer, latency) = (self.answer(), *latency);
                Box::pin(async move {
                    tokio::time::sleep(latency).await;
                    Ok(answer)
                })
            }
            Latency::Drawn(draws) => {
                let draw = || Duration::from_millis(draws.lock().unwrap().random_range(10..=40));
                let (there, back) = (draw(), draw());
                let limiter = self.clone();
                Box::pin(async move {
                    tokio::time::sleep(there).await;
                    let answer = limiter.answer();
                    tokio::time::sleep(back).await;
                    Ok(answer)
                })
            }
        }
    }
}
