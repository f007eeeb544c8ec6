//! The layer's numbers, exported in Prometheus's text format. The layer records through the
//! `metrics` facade (feature `metrics`); the application installs a recorder. In production
//! that is an exporter crate (`metrics-exporter-prometheus`, say); here it is a small one
//! written out in `prometheus.rs`, so that the example shows all there is to it and builds quickly.
//!
//! Twenty calls go to a server on loopback that refuses the first with `429` and
//! `Retry-After: 1`, then answers with its meters; the export that follows shows what was
//! sent, refused, retried and waited, and each key's gauges.
//!
//! Run: `cargo run --features metrics --example metrics`

mod prometheus;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_retry_after::RateLimitLayer;

use prometheus::Prometheus;

/// A server that refuses its first request for a second, then answers with its meters.
async fn serve() -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let seen = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            let service = service_fn(move |_request| {
                let nth = seen.fetch_add(1, Ordering::Relaxed);
                let response = if nth == 0 {
                    Response::builder()
                        .status(StatusCode::TOO_MANY_REQUESTS)
                        .header("retry-after", "1")
                } else {
                    let left = 100usize.saturating_sub(nth);
                    Response::builder()
                        .header("ratelimit-policy", r#""default";q=100;w=60"#)
                        .header("ratelimit", format!(r#""default";r={left};t=59"#))
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
    let prometheus = Prometheus::default();
    metrics::set_global_recorder(prometheus.clone()).map_err(|error| error.to_string())?;

    let address = serve().await?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let client = ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .service(client);
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let request = Request::get(format!("http://{address}/items"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            tokio::spawn(client.clone().oneshot(request))
        })
        .collect();
    for call in calls {
        call.await??.into_body().collect().await?;
    }
    print!("{}", prometheus.render());
    Ok(())
}
