//! The same workload against a rate-limited server, side by side: a plain client that retries
//! each 429 on its own after `Retry-After` (what most code does), and the same client under
//! `RateLimitLayer`. The server runs in-process on 127.0.0.1 and holds each request for a
//! round trip drawn between 20 and 80 ms (half before its limiter decides, half after), as a
//! server across a network would: requests are in flight when a window runs out.
//!
//! The limiter (`--limiter`) counts `L` requests per `W` for its one client, by fixed windows
//! opening at the client's first request (express-rate-limit's memory store, the default),
//! fixed windows aligned to the clock (Rack::Attack; `--aligned` says the same), a token
//! bucket, a sliding window log, a sliding counter that counts refused requests, a leaky
//! bucket without burst, fixed windows whose limit changes, or a cap on requests in flight;
//! it tells its client what `--headers` says. Both are the
//! simulator's own (`examples/simulate/`), as is the workload, so `cargo run --example
//! simulate` with the same flags predicts this demo's figures.
//!
//! Run: `cargo run --example demo`, or with flags:
//! `cargo run --example demo -- --limit 50 --window 1 --workers 50 --requests 400
//!  --limiter first-request|aligned|token-bucket|sliding|sliding-counter|leaky|changing|in-flight
//!  --headers draft-8|draft-6|x-ratelimit|x-ratelimit-epoch|retry-after|none
//!  --round-trip 20-80 [--matrix] [--all-clients]`; `--matrix` runs every header style and
//! prints one row each; `--all-clients` adds the layer's variants (`slow_start(false)`,
//! `learn_limits(false)`) and a plain client that pauses every worker on a `Retry-After` (as
//! the layer does) to the plain client and the layer's defaults.

#[path = "simulate/limiter.rs"]
mod limiter;
#[path = "simulate/workload.rs"]
mod workload;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::net::TcpListener;
use tower::BoxError;
use tower_retry_after::RateLimitLayer;

use limiter::{Headers, Limiter};
use workload::{Args, CLIENTS, Outcome};

/// What the table's less obvious columns mean, a line each.
const LEGEND: &str = "\
physical limit: the least time the limiter allows for the workload, were every request sent the instant it allows
completion / limit: completion over the physical limit; 1.00 is as soon as the limiter allows, 2.00 twice as long";

/// The clients to run: the plain one and the layer's defaults, or with `all` every one.
fn clients(all: bool) -> Vec<(&'static str, workload::Client)> {
    if all {
        CLIENTS.to_vec()
    } else {
        vec![CLIENTS[0], CLIENTS[CLIENTS.len() - 1]]
    }
}

/// One line that says how the layer's defaults fared against the plain client in `outcomes`
/// (in the order of `clients`: the plain client first, the defaults last).
fn conclusion(outcomes: &[Outcome]) -> String {
    let (plain, layer) = (&outcomes[0], &outcomes[outcomes.len() - 1]);
    let times = |count: usize| if count == 1 { "time" } else { "times" };
    let (refused, plain_refused) = (layer.refused(), plain.refused());
    let (completion, plain_completion) = (layer.measured.completion, plain.measured.completion);
    format!(
        "the layer was refused {refused} {}, the plain client {plain_refused} {}, and finished \
         in {:.2}× the plain client's time ({completion:.2?} against {plain_completion:.2?})",
        times(refused),
        times(plain_refused),
        completion.as_secs_f64() / plain_completion.as_secs_f64(),
    )
}

/// The server's wall clock.
fn wall_clock() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

/// Serves `limiter` on loopback; returns its address.
async fn serve(limiter: Arc<Mutex<Limiter>>, args: Args) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let limiter = limiter.clone();
            let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                let limiter = limiter.clone();
                async move {
                    let round_trip = args.draw_round_trip(&mut rand::rng());
                    tokio::time::sleep(round_trip / 2).await;
                    let response = limiter.lock().unwrap().answer(wall_clock());
                    tokio::time::sleep(round_trip - round_trip / 2).await;
                    if response.status().is_success() {
                        limiter.lock().unwrap().finished();
                    }
                    let body = Full::new(Bytes::from_static(b"{}"));
                    Ok::<_, Infallible>(response.map(|()| body))
                }
            });
            // hyper would add a `Date` to every response: only the styles that send one do.
            let connection = hyper::server::conn::http1::Builder::new()
                .auto_date_header(false)
                .serve_connection(TokioIo::new(stream), service);
            tokio::spawn(connection);
        }
    });
    Ok(address)
}

/// One run against a fresh server whose limiter sends `headers`, made by `client`.
async fn run(
    args: &Args,
    headers: Headers,
    (name, client): (&str, workload::Client),
) -> Result<Outcome, BoxError> {
    let limiter = Limiter::new(
        args.algorithm,
        headers,
        args.limit,
        args.window,
        wall_clock(),
    )
    .holding((args.round_trip.0 + args.round_trip.1) / 4)
    .phases(args.phase);
    let limiter = Arc::new(Mutex::new(limiter));
    let address = serve(limiter.clone(), *args).await?;
    let progress = ProgressBar::new(args.requests as u64).with_style(
        ProgressStyle::with_template("{prefix:>54} [{bar:30}] {pos}/{len} {elapsed}")?
            .progress_chars("=> "),
    );
    progress.set_prefix(format!("{}, {name}", headers.flag()));
    let http = Client::builder(TokioExecutor::new()).build_http();
    let url = format!("http://{address}/items");
    let layer = RateLimitLayer::new();
    let measured = workload::run(args, client, layer, http, &url, &progress).await?;
    progress.finish();
    let outcome = Outcome::new(measured, &limiter.lock().unwrap(), args.requests);
    Ok(outcome)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = Args::default();
    let mut all_clients = false;
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = || given.next().ok_or(format!("{flag} needs a value"));
        if flag == "--all-clients" {
            all_clients = true;
        } else if !args.read(&flag, value)? {
            let flags = workload::FLAGS;
            return Err(format!("unknown flag {flag}\n\nflags: {flags} --all-clients").into());
        }
    }
    let clients = clients(all_clients);
    println!("{}\n", args.describe());
    let mut rows = Vec::new();
    for headers in args.styles() {
        let mut outcomes = Vec::new();
        for &client in &clients {
            outcomes.push(run(&args, headers, client).await?);
        }
        if !args.matrix {
            println!(
                "\nheaders: {}\n{}\n{LEGEND}\n\n{}",
                headers.flag(),
                workload::runs_table(&clients, &outcomes),
                conclusion(&outcomes),
            );
        }
        rows.push((headers, outcomes));
    }
    if args.matrix {
        println!("\n{}\n{LEGEND}\n", workload::matrix_table(&clients, &rows));
        for (headers, outcomes) in &rows {
            println!("{}: {}", headers.flag(), conclusion(outcomes));
        }
    }
    Ok(())
}
