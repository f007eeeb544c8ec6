//! An axum app that calls a rate-limited upstream through `RateLimitLayer`.
//!
//! What the downstream caller sees when the upstream says 429 is this app's choice, made here
//! so: while the wait fits the call's budget, a clean wait (the layer holds the call and every
//! other call to that upstream, and the caller just gets the answer later); when it does not
//! (the upstream asked for longer than the layer will wait, or the layer declined to send),
//! `503 Service Unavailable` with the upstream's `Retry-After`. Not 429: the downstream caller
//! did not exceed any limit of this app's; the upstream is temporarily unavailable to it.
//!
//! Two routes show both: `/patient/...` waits up to the defaults; `/hasty/...` waits two
//! seconds at most in all. The upstream runs on loopback: 3 requests per 4-second window.
//!
//! Run: `cargo run --example axum_proxy`

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, Request, Response, StatusCode};
use axum::routing::get;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_retry_after::{RateLimit, RateLimitInfo, RateLimitLayer, Throttled};

type Upstream = RateLimit<Client<HttpConnector, Full<Bytes>>>;

#[derive(Clone)]
struct Proxy {
    upstream: String,
    patient: Upstream,
    hasty: Upstream,
}

/// Proxies `GET /{patient|hasty}/{path}` to the upstream's `/{path}`.
async fn proxy(
    State(proxy): State<Proxy>,
    Path((mode, path)): Path<(String, String)>,
) -> Response<Body> {
    let client = if mode == "hasty" {
        proxy.hasty
    } else {
        proxy.patient
    };
    // A body held in memory can be sent again; a streamed one could only be sent once.
    let request = Request::get(format!("{}/{path}", proxy.upstream))
        .body(Full::new(Bytes::new()))
        .unwrap();
    match client.oneshot(request).await {
        Ok(response) if response.status() == StatusCode::TOO_MANY_REQUESTS => {
            let wait = response
                .extensions()
                .get::<RateLimitInfo>()
                .and_then(RateLimitInfo::instructed_wait);
            unavailable(wait)
        }
        Ok(response) => {
            let (parts, body) = response.into_parts();
            Response::from_parts(parts, Body::new(body))
        }
        Err(error) => match error.downcast_ref::<Throttled>() {
            Some(throttled) => unavailable(Some(throttled.retry_after())),
            None => Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Body::from(error.to_string()))
                .unwrap(),
        },
    }
}

/// `503` with the upstream's wait, in whole seconds rounded up, as `Retry-After`.
fn unavailable(wait: Option<Duration>) -> Response<Body> {
    let mut response = Response::builder().status(StatusCode::SERVICE_UNAVAILABLE);
    if let Some(wait) = wait {
        let seconds = wait.as_millis().div_ceil(1000).max(1);
        response = response.header("retry-after", HeaderValue::from(seconds as u64));
    }
    response.body(Body::from("upstream rate limited")).unwrap()
}

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
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let patient = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .service(client.clone());
    let hasty = ServiceBuilder::new()
        .layer(
            RateLimitLayer::new()
                .retry_after_cap(Duration::from_secs(1))
                .max_wait(Duration::from_secs(2)),
        )
        .service(client);
    let state = Proxy {
        upstream: format!("http://{}", upstream().await?),
        patient,
        hasty,
    };
    let app = Router::new()
        .route("/{mode}/{*path}", get(proxy))
        .with_state(state);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The downstream callers: six patient requests at once, then two hasty ones.
    let downstream = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let started = Instant::now();
    let mut calls = Vec::new();
    for mode in ["patient"; 6].into_iter().chain(["hasty"; 2]) {
        let request =
            Request::get(format!("http://{address}/{mode}/items")).body(Full::new(Bytes::new()))?;
        let call = downstream.clone().oneshot(request);
        calls.push((
            mode,
            tokio::spawn(async move { (call.await, started.elapsed()) }),
        ));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (mode, call) in calls {
        let (response, took) = call.await?;
        let response = response?;
        let retry_after = response.headers().get("retry-after").cloned();
        println!(
            "{mode:>7}: {} after {took:.2?}{}",
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
