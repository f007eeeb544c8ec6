//! The same workload against a rate-limited server, two ways: a plain client that retries each
//! 429 on its own after `Retry-After` (what most code does), and the same client under
//! `RateLimitLayer`. The server runs in-process on 127.0.0.1.
//!
//! The server is a fixed-window limiter per client, `L` requests per `W`, the window starting at
//! the client's first request (as express-rate-limit's memory store does), answering 429 with
//! `Retry-After` in whole seconds left in the window; `--aligned` switches to Rack::Attack's
//! style, windows aligned to the clock and `Retry-After` the whole period. Its meters follow
//! `--headers`.
//!
//! Run: `cargo run --example demo`, or with flags:
//! `cargo run --example demo -- --limit 50 --window 1 --workers 50 --requests 400
//!  --headers draft-8|draft-6|x-ratelimit|retry-after|none [--aligned]`

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::RateLimitLayer;

/// What the limiter tells its clients beside 429.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Style {
    None,
    RetryAfter,
    Draft6,
    Draft8,
    XRateLimit,
}

#[derive(Clone, Copy, Debug)]
struct Args {
    limit: u32,
    window: Duration,
    workers: usize,
    requests: usize,
    style: Style,
    aligned: bool,
}

impl Args {
    fn parse() -> Result<Args, String> {
        let mut args = Args {
            limit: 50,
            window: Duration::from_secs(1),
            workers: 50,
            requests: 400,
            style: Style::Draft8,
            aligned: false,
        };
        let mut given = std::env::args().skip(1);
        while let Some(flag) = given.next() {
            let mut value = || given.next().ok_or(format!("{flag} needs a value"));
            let number = |text: String| {
                text.parse::<u64>()
                    .map_err(|error| format!("{text}: {error}"))
            };
            match flag.as_str() {
                "--limit" => args.limit = number(value()?)? as u32,
                "--window" => args.window = Duration::from_secs(number(value()?)?),
                "--workers" => args.workers = number(value()?)? as usize,
                "--requests" => args.requests = number(value()?)? as usize,
                "--aligned" => args.aligned = true,
                "--headers" => {
                    args.style = match value()?.as_str() {
                        "none" => Style::None,
                        "retry-after" => Style::RetryAfter,
                        "draft-6" => Style::Draft6,
                        "draft-8" => Style::Draft8,
                        "x-ratelimit" => Style::XRateLimit,
                        other => return Err(format!("unknown header style {other}")),
                    }
                }
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if args.limit == 0 || args.window.is_zero() || args.workers == 0 || args.requests == 0 {
            return Err("limit, window, workers and requests must be positive".into());
        }
        Ok(args)
    }

    /// The least time the server allows for the workload: the last request can only be served
    /// in the window that starts ⌊(M−1)/L⌋ windows after the first.
    fn physical_limit(&self) -> Duration {
        self.window * ((self.requests as u32 - 1) / self.limit)
    }
}

/// A fixed-window limiter per client address, counting what it received.
struct Limiter {
    args: Args,
    windows: Mutex<HashMap<IpAddr, (SystemTime, u32)>>,
    received: AtomicUsize,
    refused: AtomicUsize,
}

impl Limiter {
    fn answer(&self, client: IpAddr) -> Response<Full<Bytes>> {
        self.received.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now();
        let window = self.args.window;
        let (start, used) = {
            let mut windows = self.windows.lock().unwrap();
            let entry = windows.entry(client).or_insert((now, 0));
            let current = if self.args.aligned {
                // Rack::Attack: windows aligned to the clock.
                let since_epoch = now.duration_since(UNIX_EPOCH).unwrap();
                let index = since_epoch.as_nanos() / window.as_nanos();
                UNIX_EPOCH + window * index as u32
            } else if now >= entry.0 + window {
                // express-rate-limit: a new window opens at the first request after the last.
                now
            } else {
                entry.0
            };
            if current != entry.0 {
                *entry = (current, 0);
            }
            entry.1 += 1;
            *entry
        };
        let left = (start + window)
            .duration_since(now)
            .unwrap_or(Duration::ZERO);
        let left_seconds = left.as_millis().div_ceil(1000) as u64;
        let remaining = self.args.limit.saturating_sub(used);
        let refused = used > self.args.limit;
        let mut response = Response::builder();
        response = match self.args.style {
            Style::None | Style::RetryAfter => response,
            Style::Draft6 => response
                .header(
                    "ratelimit-policy",
                    format!("{};w={}", self.args.limit, window.as_secs()),
                )
                .header("ratelimit-limit", self.args.limit)
                .header("ratelimit-remaining", remaining)
                .header("ratelimit-reset", left_seconds),
            Style::Draft8 => response
                .header(
                    "ratelimit-policy",
                    format!("\"fixed\";q={};w={}", self.args.limit, window.as_secs()),
                )
                .header(
                    "ratelimit",
                    format!("\"fixed\";r={remaining};t={left_seconds}"),
                ),
            Style::XRateLimit => response
                .header("x-ratelimit-limit", self.args.limit)
                .header("x-ratelimit-remaining", remaining)
                .header(
                    "x-ratelimit-reset",
                    (start + window)
                        .duration_since(UNIX_EPOCH)
                        .unwrap()
                        .as_secs(),
                ),
        };
        if refused {
            self.refused.fetch_add(1, Ordering::Relaxed);
            response = response.status(StatusCode::TOO_MANY_REQUESTS);
            if self.args.style != Style::None {
                let wait = if self.args.aligned {
                    window.as_secs()
                } else {
                    left_seconds.max(1)
                };
                response = response.header("retry-after", wait);
            }
        }
        response.body(Full::new(Bytes::from_static(b"{}"))).unwrap()
    }
}

async fn serve(limiter: Arc<Limiter>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, peer)) = listener.accept().await {
            let limiter = limiter.clone();
            let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                let response = limiter.answer(peer.ip());
                async move { Ok::<_, Infallible>(response) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    Ok(address)
}

/// What one run measured.
struct Run {
    sent: usize,
    refused: usize,
    completion: Duration,
}

type Plain = Client<HttpConnector, Full<Bytes>>;

fn client() -> Plain {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends one request and waits for its whole response; the status and `Retry-After`.
async fn send<S>(service: &mut S, url: &str) -> Result<(StatusCode, Option<Duration>), BoxError>
where
    S: Service<Request<Full<Bytes>>, Response = Response<hyper::body::Incoming>>,
    S::Error: Into<BoxError>,
{
    let request = Request::get(url).body(Full::new(Bytes::new()))?;
    let response = service
        .ready()
        .await
        .map_err(Into::into)?
        .call(request)
        .await
        .map_err(Into::into)?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok()?.parse().ok())
        .map(Duration::from_secs);
    response.into_body().collect().await?;
    Ok((status, retry_after))
}

/// Runs the workload: `workers` tasks share `requests` requests; each request is done when it
/// is answered with something other than 429. `retry_on_429` is the plain client's loop.
async fn run<S>(args: Args, label: &str, service: S, retry_on_429: bool) -> Result<Run, BoxError>
where
    S: Service<Request<Full<Bytes>>, Response = Response<hyper::body::Incoming>>
        + Clone
        + Send
        + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    let limiter = Arc::new(Limiter {
        args,
        windows: Mutex::new(HashMap::new()),
        received: AtomicUsize::new(0),
        refused: AtomicUsize::new(0),
    });
    let url = format!("http://{}/items", serve(limiter.clone()).await?);
    let progress = ProgressBar::new(args.requests as u64).with_style(
        ProgressStyle::with_template("{prefix:>24} [{bar:40}] {pos}/{len} {elapsed}")?
            .progress_chars("=> "),
    );
    progress.set_prefix(label.to_owned());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..args.workers {
        let (mut service, url, next, progress) =
            (service.clone(), url.clone(), next.clone(), progress.clone());
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < args.requests {
                loop {
                    let (status, retry_after) = send(&mut service, &url).await?;
                    if status != StatusCode::TOO_MANY_REQUESTS {
                        break;
                    }
                    if retry_on_429 {
                        tokio::time::sleep(retry_after.unwrap_or(Duration::from_secs(1))).await;
                    }
                }
                progress.inc(1);
            }
            Ok::<_, BoxError>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let completion = started.elapsed();
    progress.finish();
    Ok(Run {
        sent: limiter.received.load(Ordering::Relaxed),
        refused: limiter.refused.load(Ordering::Relaxed),
        completion,
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse().map_err(|error| format!("{error}\n\nflags: --limit N --window SECONDS --workers N --requests N --headers draft-8|draft-6|x-ratelimit|retry-after|none [--aligned]"))?;
    println!(
        "limiter: {} requests per {:?} per client ({} windows), headers {:?}; workload: {} requests, {} workers\n",
        args.limit,
        args.window,
        if args.aligned {
            "clock-aligned"
        } else {
            "first-request"
        },
        args.style,
        args.requests,
        args.workers,
    );
    let plain = run(args, "plain client", client(), true).await?;
    let layered = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .service(client());
    let layer = run(args, "under RateLimitLayer", layered, false).await?;

    let physical = args.physical_limit();
    println!(
        "\n| client | requests sent | refused (429) | completion | physical limit ⌊(M−1)/L⌋·W | completion / limit |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, run) in [
        ("plain, retrying each 429 itself", &plain),
        ("under RateLimitLayer", &layer),
    ] {
        let ratio = if physical.is_zero() {
            "—".to_owned()
        } else {
            format!(
                "{:.2}",
                run.completion.as_secs_f64() / physical.as_secs_f64()
            )
        };
        println!(
            "| {name} | {} | {} | {:.2?} | {physical:?} | {ratio} |",
            run.sent, run.refused, run.completion
        );
    }
    Ok(())
}
