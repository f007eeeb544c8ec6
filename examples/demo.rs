//! The main job on an embedded default: a rate-limited server runs in-process on loopback, a
//! plain hyper client calls it, and each response's rate-limit headers are read with
//! `RateLimitInfo`.
//!
//! The server is a fixed-window limiter (5 requests per 2 s window, the window starting at the
//! first request) that answers with the IETF draft 08 `RateLimit` and `RateLimit-Policy`
//! headers, and with `Retry-After` on a 429.
//!
//! Run: `cargo run --example demo`

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower_retry_after::RateLimitInfo;

const LIMIT: u32 = 5;
const WINDOW: Duration = Duration::from_secs(2);
const REQUESTS: usize = 12;

/// A fixed window: `LIMIT` requests per `WINDOW`, the window opening at its first request.
struct FixedWindow {
    opened: Option<Instant>,
    used: u32,
}

impl FixedWindow {
    /// Counts a request; returns what is left in the window and how long until it closes, or
    /// `None` if the window was already spent.
    fn admit(&mut self, now: Instant) -> (Option<u32>, Duration) {
        let opened = match self.opened {
            Some(opened) if now < opened + WINDOW => opened,
            _ => {
                self.used = 0;
                *self.opened.insert(now)
            }
        };
        let left = opened + WINDOW - now;
        if self.used == LIMIT {
            return (None, left);
        }
        self.used += 1;
        (Some(LIMIT - self.used), left)
    }
}

async fn limiter(
    window: Arc<Mutex<FixedWindow>>,
    _request: Request<Incoming>,
) -> Result<Response<Empty<Bytes>>, Infallible> {
    let (remaining, left) = window.lock().unwrap().admit(Instant::now());
    // Whole seconds, rounded up, as express-rate-limit writes them: never earlier than the truth.
    let seconds = left.as_millis().div_ceil(1000);
    let policy = format!(r#""default";q={LIMIT};w={}"#, WINDOW.as_secs());
    let mut response = Response::builder().header("ratelimit-policy", policy);
    response = match remaining {
        Some(remaining) => response.status(StatusCode::OK).header(
            "ratelimit",
            format!(r#""default";r={remaining};t={seconds}"#),
        ),
        None => response
            .status(StatusCode::TOO_MANY_REQUESTS)
            .header("ratelimit", format!(r#""default";r=0;t={seconds}"#))
            .header("retry-after", seconds.to_string()),
    };
    Ok(response.body(Empty::new()).unwrap())
}

async fn serve() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let window = Arc::new(Mutex::new(FixedWindow {
        opened: None,
        used: 0,
    }));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let window = window.clone();
            let service = service_fn(move |request| limiter(window.clone(), request));
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    Ok(address)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let address = serve().await?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    println!("limiter on http://{address}: {LIMIT} requests per {WINDOW:?}\n");
    println!(
        "{:>3}  {:>6}  {:>11}  {:>9}  {:>8}",
        "#", "status", "retry-after", "remaining", "reset in"
    );

    for number in 1..=REQUESTS {
        let request = Request::get(format!("http://{address}/")).body(Empty::new())?;
        let response = client.request(request).await?;
        let info = RateLimitInfo::from_headers(response.headers(), SystemTime::now());
        let meter = info.binding_meter();
        println!(
            "{number:>3}  {:>6}  {:>11}  {:>9}  {:>8}",
            response.status().as_u16(),
            shown(info.retry_after().map(|wait| format!("{wait:?}"))),
            shown(
                meter
                    .and_then(|meter| meter.remaining())
                    .map(|r| r.to_string())
            ),
            shown(
                meter
                    .and_then(|meter| meter.reset_in())
                    .map(|t| format!("{t:?}"))
            ),
        );
        response.into_body().collect().await?;
        // Without the layer, a client that wants to be polite waits by hand.
        if let Some(wait) = info.retry_after() {
            tokio::time::sleep(wait).await;
        }
    }
    Ok(())
}

fn shown(figure: Option<String>) -> String {
    figure.unwrap_or_else(|| "-".to_owned())
}
