//! A reqwest client with the layer as its middleware: one `.with(...)` line. The server it
//! calls runs on loopback and refuses the first request with `429` and `Retry-After: 1`; the
//! POST is waited out and sent again once, as it would be through a hyper-util stack.
//!
//! Run: `cargo run --features reqwest --example reqwest_client`

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use reqwest_middleware::ClientBuilder;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower_retry_after::{CallCost, Gates, Key, RateLimitInfo, RateLimitLayer};

/// A server that refuses its first request for a second, then answers with its meters.
async fn serve() -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let seen = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            let service = service_fn(move |_request| {
                let first = seen.fetch_add(1, Ordering::Relaxed) == 0;
                let response = if first {
                    Response::builder()
                        .status(StatusCode::TOO_MANY_REQUESTS)
                        .header("retry-after", "1")
                } else {
                    Response::builder()
                        .header("ratelimit-policy", r#""default";q=100;w=60"#)
                        .header("ratelimit", r#""default";r=98;t=59"#)
                };
                async move { Ok::<_, Infallible>(response.body(Full::new(Bytes::from("{}"))).unwrap()) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    Ok(address)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = serve().await?;
    // Kept to read the gates later; give the same `Gates` to a hyper stack's layer and a 429
    // either sees holds the other's calls too.
    let gates = Gates::new();
    let layer = RateLimitLayer::new().gates(gates.clone());
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(layer.middleware())
        .build();

    let started = Instant::now();
    // reqwest's own `timeout` bounds each request sent; this bounds the whole call, waits
    // included.
    let call = client
        .post(format!("http://{address}/orders"))
        .header("content-type", "application/json")
        .body(r#"{"item":1}"#)
        .send();
    let response = tokio::time::timeout(Duration::from_secs(300), call).await??;
    let cost = response.extensions().get::<CallCost>().copied();
    println!(
        "status {} after {:.2?}: {} request(s) sent (the 429's second waited out)",
        response.status(),
        started.elapsed(),
        cost.map_or(0, |cost| cost.attempts()),
    );
    if let Some(meter) = response
        .extensions()
        .get::<RateLimitInfo>()
        .and_then(RateLimitInfo::binding_meter)
    {
        println!(
            "quota {:?} of {:?} left, resetting in {:?}",
            meter.remaining(),
            meter.limit(),
            meter.reset_in()
        );
    }
    response.bytes().await?;
    let origin = Key::from_origin(&format!("http://{address}"))?;
    if let Some(gate) = gates.snapshot(&origin) {
        println!("the origin's gate: {:?} left", gate.remaining());
    }
    Ok(())
}
