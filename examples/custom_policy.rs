//! A policy of your own: the default table with one status overridden, combined with a
//! closure that vetoes retries for one path. The server it calls runs on loopback: `/flaky`
//! answers 520 once (an origin error behind a CDN), `/payments/charge` answers 502.
//!
//! Run: `cargo run --example custom_policy`

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::RateLimitLayer;
use tower_retry_after::policy::{Action, Attempt, Behaviour, PolicyExt, StatusPolicy, classify_fn};

type Log = Arc<Mutex<Vec<String>>>;

async fn serve(log: Log) -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            let service = service_fn(move |request: Request<Incoming>| {
                let path = request.uri().path().to_owned();
                let mut log = log.lock().unwrap();
                let earlier = log.iter().filter(|seen| **seen == path).count();
                log.push(path.clone());
                let status = match (path.as_str(), earlier) {
                    ("/flaky", 0) => 520,
                    ("/payments/charge", _) => 502,
                    _ => 200,
                };
                let response = Response::builder()
                    .status(status)
                    .body(Full::new(Bytes::new()));
                async move { Ok::<_, Infallible>(response.unwrap()) }
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
    let log = Log::default();
    let address = serve(log.clone()).await?;

    // 520 is retried like a 502; every other status keeps its default.
    let table = StatusPolicy::new().on(StatusCode::from_u16(520)?, Behaviour::RetryIfIdempotent);
    // Nothing under /payments is ever retried, whatever the table says.
    let no_payment_retries = classify_fn(|attempt: &Attempt<'_, Incoming>| {
        if attempt.request().uri.path().starts_with("/payments") {
            Action::Return
        } else {
            Action::Retry
        }
    });
    let policy = table.and(no_payment_retries);

    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut client = ServiceBuilder::new()
        .layer(RateLimitLayer::new().with_policy(policy))
        .service(client);

    for path in ["/flaky", "/payments/charge"] {
        // PUT is idempotent: the default table would retry a 502 on it.
        let request =
            Request::put(format!("http://{address}{path}")).body(Full::new(Bytes::from("{}")))?;
        let response = client.ready().await?.call(request).await?;
        let sent = log
            .lock()
            .unwrap()
            .iter()
            .filter(|seen| *seen == path)
            .count();
        println!("PUT {path}: {} after {sent} request(s)", response.status());
        response.into_body().collect().await?;
    }
    Ok(())
}
