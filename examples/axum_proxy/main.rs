//! An axum app that forwards its requests to a rate-limited upstream through
//! `RateLimitLayer`: the recipe is `proxy.rs` (what is buffered to be retried, what is sent
//! once, and what the downstream caller sees of a 429). `tests/axum_proxy.rs` counts what it
//! forwards.
//!
//! The upstream runs on loopback: 3 requests per 4-second window. Six patient requests go at
//! once (one a POST with a JSON body, buffered and so retried like the rest), then two hasty
//! ones.
//!
//! Run: `cargo run --example axum_proxy`

mod proxy;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{Request, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::{BoxError, ServiceExt};

/// The upstream: 3 requests per 4-second window, with `Retry-After` and draft 08 meters.
async fn upstream() -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let window = Arc::new(Mutex::new((Instant::now(), 0u32)));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let window = window.clone();
            let service = service_fn(move |_request| {
                let now = Instant::now();
                let (start, used) = {
                    let mut window = window.lock().unwrap();
                    if now >= window.0 + Duration::from_secs(4) {
                        *window = (now, 0);
                    }
                    window.1 += 1;
                    *window
                };
                let left = (start + Duration::from_secs(4) - now)
                    .as_millis()
                    .div_ceil(1000);
                let remaining = 3u32.saturating_sub(used);
                let mut response = Response::builder()
                    .header("ratelimit-policy", r#""w";q=3;w=4"#)
                    .header("ratelimit", format!(r#""w";r={remaining};t={left}"#));
                if used > 3 {
                    response = response.status(429).header("retry-after", left.to_string());
                }
                async move {
                    Ok::<_, Infallible>(response.body(Full::new(Bytes::from("item"))).unwrap())
                }
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
async fn main() -> Result<(), BoxError> {
    let upstream = format!("http://{}", upstream().await?);
    let app = proxy::app(proxy::Proxy::new(upstream));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The downstream callers: six patient requests at once, then two hasty ones.
    let downstream = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let started = Instant::now();
    let mut calls = Vec::new();
    let patient = [("GET", "patient", ""); 5].into_iter();
    let post = ("POST", "patient", r#"{"item":1}"#);
    for (method, mode, body) in patient.chain([post]).chain([("GET", "hasty", ""); 2]) {
        let request = Request::builder()
            .method(method)
            .uri(format!("http://{address}/{mode}/items"))
            .body(Full::new(Bytes::from(body)))?;
        let call = downstream.clone().oneshot(request);
        calls.push((
            method,
            mode,
            tokio::spawn(async move { (call.await, started.elapsed()) }),
        ));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (method, mode, call) in calls {
        let (response, took) = call.await?;
        let response = response?;
        let retry_after = response.headers().get("retry-after").cloned();
        println!(
            "{method:>4} {mode:>7}: {} after {took:.2?}{}",
            response.status(),
            retry_after.map_or(String::new(), |wait| format!(
                ", Retry-After: {}",
                wait.to_str().unwrap_or("?")
            ))
        );
        response.into_body().collect().await?;
    }
    Ok(())
}
