//! The minimal stack: a hyper-util client under `RateLimitLayer`, with a timeout outside it so
//! that the whole call, waits included, has a bound. The server it calls runs on loopback and
//! refuses the first request with `429` and `Retry-After: 1`.
//!
//! Run: `cargo run --example hyper_client`

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{RateLimitInfo, RateLimitLayer};

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
async fn main() -> Result<(), BoxError> {
    let address = serve().await?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut client = ServiceBuilder::new()
        .timeout(Duration::from_secs(300))
        .layer(RateLimitLayer::new())
        .service(client);

    let started = Instant::now();
    let request = Request::post(format!("http://{address}/orders"))
        .body(Full::new(Bytes::from(r#"{"item":1}"#)))?;
    let response = client.ready().await?.call(request).await?;
    println!(
        "status {} after {:.2?} (the 429's second waited out)",
        response.status(),
        started.elapsed()
    );
    if let Some(info) = response.extensions().get::<RateLimitInfo>() {
        let meter = info.binding_meter().expect("the server sent its meters");
        println!(
            "quota {:?} of {:?} left, resetting in {:?}",
            meter.remaining(),
            meter.limit(),
            meter.reset_in()
        );
    }
    response.into_body().collect().await?;
    Ok(())
}
