//! Two clients of one API sharing one set of gates: a 429 that either meets holds both, so the
//! second does not walk into the window the server named.
//!
//! Run: `cargo run --example shared_gates`

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_retry_after::{Gates, Key, RateLimitLayer};

/// A server that refuses everything for its first two seconds, logging what it received.
async fn serve(log: Arc<Mutex<Vec<(Duration, u16)>>>) -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let started = Instant::now();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            let service = service_fn(move |_request| {
                let at = started.elapsed();
                let refused = at < Duration::from_secs(2);
                let mut response = Response::builder();
                if refused {
                    let left = (Duration::from_secs(2) - at).as_millis().div_ceil(1000);
                    response = response
                        .status(StatusCode::TOO_MANY_REQUESTS)
                        .header("retry-after", left.to_string());
                }
                log.lock()
                    .unwrap()
                    .push((at, if refused { 429 } else { 200 }));
                async move { Ok::<_, Infallible>(response.body(Full::new(Bytes::new())).unwrap()) }
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
    let log = Arc::new(Mutex::new(Vec::new()));
    let address = serve(log.clone()).await?;
    let url = format!("http://{address}/items");

    let gates = Gates::new();
    let reads = ServiceBuilder::new()
        .layer(RateLimitLayer::new().gates(gates.clone()))
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let writes = ServiceBuilder::new()
        .layer(
            RateLimitLayer::new()
                .gates(gates.clone())
                .transient_retries(1),
        )
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());

    let started = Instant::now();
    let read = tokio::spawn(reads.oneshot(Request::get(&url).body(Full::new(Bytes::new()))?));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (parts, _) = Request::get(&url).body(())?.into_parts();
    let key = Key::origin(&parts).expect("an absolute URL names its origin");
    let snapshot = gates
        .snapshot(&key)
        .expect("the read's 429 closed the gate");
    println!(
        "the reads client met a 429; the gate for {key} is closed for {:?}",
        snapshot.closed_for()
    );

    let write = writes
        .oneshot(Request::post(&url).body(Full::new(Bytes::from("{}")))?)
        .await?;
    println!(
        "the writes client, sharing the gate: {} after {:.2?}",
        write.status(),
        started.elapsed()
    );
    let read = read.await??;
    println!(
        "the reads client: {} after {:.2?}",
        read.status(),
        started.elapsed()
    );
    read.into_body().collect().await?;
    write.into_body().collect().await?;

    let log = log.lock().unwrap();
    let refused = log.iter().filter(|(_, status)| *status == 429).count();
    println!(
        "the server received {} requests, refused {refused}:",
        log.len()
    );
    for (at, status) in log.iter() {
        println!("  {at:>8.2?} {status}");
    }
    Ok(())
}
