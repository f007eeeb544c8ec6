//! The workload the demo and the simulator both run, the clients they compare, and the tables
//! they print: one code for both, so that what differs between their figures is the network
//! and the clock, nothing else.
//!
//! `workers` tasks share `requests` requests; each worker makes its requests one after the
//! other, and keeps each until it is served: a 429 (or a call the client declined to send) is
//! tried again after the wait it named, 1 s without one. For the plain client that loop is its
//! whole strategy; under the layer it is what happens after the layer gave a request back.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use indicatif::ProgressBar;
use rand::RngExt;
use tokio::time::Instant;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{RateLimit, RateLimitLayer, Throttled};

use crate::limiter::{Algorithm, Headers, Limiter, PHASE};

/// The limiter and the workload, from the command line.
#[derive(Clone, Copy, Debug)]
pub struct Args {
    pub limit: u32,
    pub window: Duration,
    pub workers: usize,
    pub requests: usize,
    pub algorithm: Algorithm,
    /// How many windows each limit of a changing limit lasts.
    pub phase: u32,
    pub headers: Headers,
    /// The shortest and longest round trip of a request: the server holds each request half
    /// of a round trip drawn between them before its limiter decides, and half after. Without
    /// it every answer is read before the next call is sent, and nothing is ever in flight
    /// when a window runs out.
    pub round_trip: (Duration, Duration),
    /// Every header style in turn, one table row each.
    pub matrix: bool,
}

pub const FLAGS: &str = "--limit N --window SECONDS --workers N --requests N \
     --limiter first-request|aligned|token-bucket|sliding|sliding-counter|leaky|changing|in-flight \
     (--aligned: aligned) --phase WINDOWS (of changing) \
     --headers draft-8|draft-6|x-ratelimit|x-ratelimit-epoch|retry-after|none \
     --round-trip MS-MS --matrix";

impl Default for Args {
    fn default() -> Self {
        Args {
            limit: 50,
            window: Duration::from_secs(1),
            workers: 50,
            requests: 400,
            algorithm: Algorithm::FirstRequest,
            phase: PHASE,
            headers: Headers::Draft8,
            round_trip: (Duration::from_millis(20), Duration::from_millis(80)),
            matrix: false,
        }
    }
}

impl Args {
    /// Reads `flag` (taking its value from `value` if it has one); `false` if it is not one of
    /// the flags shared by the demo and the simulator.
    pub fn read(
        &mut self,
        flag: &str,
        mut value: impl FnMut() -> Result<String, String>,
    ) -> Result<bool, String> {
        let mut number = || {
            let text = value()?;
            match text.parse::<u64>() {
                Ok(number) if number > 0 => Ok(number),
                _ => Err(format!("{flag} {text}: not a positive whole number")),
            }
        };
        match flag {
            "--limit" => {
                let limit = number()?;
                self.limit = u32::try_from(limit)
                    .map_err(|_| format!("--limit {limit}: more than {} a window", u32::MAX))?;
            }
            "--window" => self.window = Duration::from_secs(number()?),
            "--workers" => self.workers = number()? as usize,
            "--requests" => self.requests = number()? as usize,
            "--phase" => {
                let windows = number()?;
                self.phase = u32::try_from(windows)
                    .map_err(|_| format!("--phase {windows}: more than {} windows", u32::MAX))?;
            }
            "--aligned" => self.algorithm = Algorithm::Aligned,
            "--matrix" => self.matrix = true,
            "--limiter" => {
                let name = value()?;
                self.algorithm = *Algorithm::ALL
                    .iter()
                    .find(|algorithm| algorithm.flag() == name)
                    .ok_or(format!("unknown limiter {name}"))?;
            }
            "--round-trip" => {
                let text = value()?;
                let milliseconds = |text: &str| text.parse().map(Duration::from_millis);
                let (shortest, longest) = text.split_once('-').unwrap_or((&text, &text));
                self.round_trip = match (milliseconds(shortest), milliseconds(longest)) {
                    (Ok(shortest), Ok(longest)) if shortest <= longest => (shortest, longest),
                    _ => return Err(format!("--round-trip {text}: not MS or MS-MS")),
                };
            }
            "--headers" => {
                let name = value()?;
                self.headers = *Headers::ALL
                    .iter()
                    .find(|headers| headers.flag() == name)
                    .ok_or(format!("unknown header style {name}"))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The header styles to run: the one asked for, or all of them for the matrix.
    pub fn styles(&self) -> Vec<Headers> {
        if self.matrix {
            Headers::ALL.to_vec()
        } else {
            vec![self.headers]
        }
    }

    /// A round trip drawn from `rng`.
    pub fn draw_round_trip<R: RngExt + ?Sized>(&self, rng: &mut R) -> Duration {
        let (shortest, longest) = self.round_trip;
        rng.random_range(shortest..=longest)
    }

    pub fn describe(&self) -> String {
        let mut limiter = self.algorithm.describe().to_owned();
        if self.algorithm == Algorithm::Changing {
            write!(limiter, ", each for {} windows", self.phase).expect("a String takes all");
        }
        format!(
            "limiter: {} requests per {:?}, {limiter}; workload: {} requests from {} workers; round trips {:?} to {:?}",
            self.limit,
            self.window,
            self.requests,
            self.workers,
            self.round_trip.0,
            self.round_trip.1,
        )
    }
}

/// How a client meets the limiter.
#[derive(Clone, Copy)]
pub enum Client {
    /// Sleeps each 429's `Retry-After` (1 s without one) and sends again: what most code does.
    Plain,
    /// The same, but a `Retry-After` pauses every worker until it ends, as DESIGN asks of the
    /// layer ("a 429's `Retry-After` still closes the whole key"): what is left of the plain
    /// client's lead once it honours the server's instruction as the layer must.
    PlainPausing,
    /// Under `RateLimitLayer`, configured from its defaults by this function.
    Layer(fn(RateLimitLayer) -> RateLimitLayer),
}

/// The clients compared side by side, in this order. A variant of the layer (one behaviour
/// switched off, say) is one more line here, between the first (the plain client) and the last
/// (the layer's defaults): the demo shows those two unless asked for all.
pub const CLIENTS: [(&str, Client); 5] = [
    ("plain, sleeps each Retry-After", Client::Plain),
    ("plain, pauses all on Retry-After", Client::PlainPausing),
    (
        "RateLimitLayer, slow_start(false)",
        Client::Layer(|layer| layer.slow_start(false)),
    ),
    (
        "RateLimitLayer, learn_limits(false)",
        Client::Layer(|layer| layer.learn_limits(false)),
    ),
    ("RateLimitLayer, defaults", Client::Layer(|layer| layer)),
];

/// What the clients measured of one run.
pub struct Measured {
    /// From the start to the last request served.
    pub completion: Duration,
    /// Each request's time from the worker starting it to its success, shortest first.
    pub latencies: Vec<Duration>,
}

/// Runs the workload through `service` as `client`, every request a GET of `url`; `layer` is
/// the layer's starting point (the simulator seeds its jitter). Each served request moves
/// `progress` on.
pub async fn run<S, B>(
    args: &Args,
    client: Client,
    layer: RateLimitLayer,
    service: S,
    url: &str,
    progress: &ProgressBar,
) -> Result<Measured, BoxError>
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    RateLimit<S>: Service<Request<Full<Bytes>>, Response = Response<B>, Error = BoxError>
        + Clone
        + Send
        + 'static,
    <RateLimit<S> as Service<Request<Full<Bytes>>>>::Future: Send,
    B: Body<Data: Send, Error: Into<BoxError>> + Send + 'static,
{
    match client {
        Client::Plain => workers(args, service, url, progress, Pause::Own).await,
        Client::PlainPausing => workers(args, service, url, progress, Pause::All).await,
        Client::Layer(configure) => {
            let service = ServiceBuilder::new()
                .layer(configure(layer))
                .service(service);
            workers(args, service, url, progress, Pause::Own).await
        }
    }
}

/// Whom a `Retry-After` a worker is told pauses.
#[derive(Clone, Copy, PartialEq)]
enum Pause {
    /// That worker alone.
    Own,
    /// Every worker, until the latest instruction any was told ends.
    All,
}

async fn workers<S, B>(
    args: &Args,
    service: S,
    url: &str,
    progress: &ProgressBar,
    pause: Pause,
) -> Result<Measured, BoxError>
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: Body<Data: Send, Error: Into<BoxError>> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let paused_until = Arc::new(Mutex::new(started));
    let mut tasks = Vec::new();
    for _ in 0..args.workers {
        let (mut service, next, progress) = (service.clone(), next.clone(), progress.clone());
        let paused_until = paused_until.clone();
        let url = url.to_owned();
        let requests = args.requests;
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < requests {
                let begun = Instant::now();
                loop {
                    if pause == Pause::All {
                        // A pause another worker extends meanwhile holds this one too.
                        loop {
                            let until = *paused_until.lock().expect("never poisoned");
                            if until <= Instant::now() {
                                break;
                            }
                            tokio::time::sleep_until(until).await;
                        }
                    }
                    let Some(wait) = send(&mut service, &url).await? else {
                        break;
                    };
                    match wait {
                        Some(named) if pause == Pause::All => {
                            let mut until = paused_until.lock().expect("never poisoned");
                            *until = (*until).max(Instant::now() + named);
                        }
                        _ => tokio::time::sleep(wait.unwrap_or(Duration::from_secs(1))).await,
                    }
                }
                latencies.push(begun.elapsed());
                progress.inc(1);
            }
            Ok::<_, BoxError>(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    let completion = started.elapsed();
    latencies.sort();
    Ok(Measured {
        completion,
        latencies,
    })
}

/// Sends one request and reads its whole response: `None` if it was served, or the wait the
/// client was told before trying again (a 429's `Retry-After`, or how long the layer says its
/// gate stays closed).
async fn send<S, B>(service: &mut S, url: &str) -> Result<Option<Option<Duration>>, BoxError>
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    B: Body<Error: Into<BoxError>>,
{
    let request = Request::get(url).body(Full::new(Bytes::new()))?;
    let ready = service.ready().await.map_err(Into::into)?;
    let response = match ready.call(request).await.map_err(Into::into) {
        Ok(response) => response,
        Err(error) => match error.downcast_ref::<Throttled>() {
            Some(throttled) => return Ok(Some(Some(throttled.retry_after()))),
            None => return Err(error),
        },
    };
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok()?.parse().ok())
        .map(Duration::from_secs);
    response.into_body().collect().await.map_err(Into::into)?;
    Ok((status == StatusCode::TOO_MANY_REQUESTS).then_some(retry_after))
}

/// One run: what the clients measured and what the limiter saw.
pub struct Outcome {
    pub measured: Measured,
    /// Every request the limiter received: when (since it was made), and whether accepted.
    pub log: Vec<(Duration, bool)>,
    /// The least time the limiter allows for the workload.
    pub physical_limit: Duration,
}

impl Outcome {
    pub fn new(measured: Measured, limiter: &Limiter, requests: usize) -> Self {
        Outcome {
            measured,
            log: limiter.log().to_vec(),
            physical_limit: limiter.physical_limit(requests),
        }
    }

    /// Whether every request was served before the run was stopped.
    pub fn finished(&self) -> bool {
        !self.measured.latencies.is_empty()
    }

    /// Completion over the physical limit (`None` where the limiter allows it all at once),
    /// or, for a run stopped unfinished, what it had reached when stopped.
    pub fn completion_ratio(&self) -> Option<f64> {
        (!self.physical_limit.is_zero())
            .then(|| self.measured.completion.as_secs_f64() / self.physical_limit.as_secs_f64())
    }

    pub fn refused(&self) -> usize {
        self.log.iter().filter(|(_, accepted)| !accepted).count()
    }

    /// Completion over the physical limit; a dash where the limiter allows it all at once.
    fn ratio(&self) -> String {
        match self.completion_ratio() {
            None => "—".to_owned(),
            Some(ratio) if self.finished() => format!("{ratio:.2}"),
            Some(ratio) => format!("unfinished at {ratio:.0}"),
        }
    }

    /// The latency at or below which `share` of the requests were served (nearest rank).
    fn latency(&self, share: f64) -> Duration {
        let latencies = &self.measured.latencies;
        if latencies.is_empty() {
            return self.measured.completion;
        }
        let rank = (share * latencies.len() as f64).ceil() as usize;
        latencies[rank.clamp(1, latencies.len()) - 1]
    }
}

/// One run's `clients` side by side (`outcomes` in their order): a markdown table, a client a
/// row.
pub fn runs_table(clients: &[(&str, Client)], outcomes: &[Outcome]) -> String {
    let mut table = String::from(
        "| client | requests sent | refused (429) | completion | physical limit | completion / limit | latency p50 | p99 | max |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for ((name, _), outcome) in clients.iter().zip(outcomes) {
        let _ = writeln!(
            table,
            "| {name} | {} | {} | {:.2?} | {:.2?} | {} | {:.2?} | {:.2?} | {:.2?} |",
            outcome.log.len(),
            outcome.refused(),
            outcome.measured.completion,
            outcome.physical_limit,
            outcome.ratio(),
            outcome.latency(0.5),
            outcome.latency(0.99),
            outcome.latency(1.0),
        );
    }
    table
}

/// Every header style's runs: a markdown table, a style a row, each of `clients`' refusals and
/// completion over the physical limit side by side: how each client fares against each style.
pub fn matrix_table(clients: &[(&str, Client)], rows: &[(Headers, Vec<Outcome>)]) -> String {
    let mut table = String::from("| server sends |");
    let mut rule = String::from("|---|");
    for (name, _) in clients {
        let _ = write!(table, " {name}: refused | completion / limit |");
        rule.push_str("---:|---:|");
    }
    let _ = writeln!(table, "\n{rule}");
    for (headers, outcomes) in rows {
        let _ = write!(table, "| {} |", headers.describe());
        for outcome in outcomes {
            let _ = write!(table, " {} | {} |", outcome.refused(), outcome.ratio());
        }
        table.push('\n');
    }
    table
}
