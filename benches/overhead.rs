//! What the layer costs on the happy path, where nothing is retried.
//!
//! - `call/*`: one call through a service that answers at once (`benches/calls/`), bare, under
//!   the layer, and under `tower::retry` with a policy that reads `Retry-After` (its peer), for
//!   a response without rate-limit headers, with draft 08 headers and `Retry-After`, and with
//!   GitHub's five. The difference from bare is what each adds to a call; the same calls are
//!   counted in instructions by `cargo bench --bench instructions`, which the load does not
//!   sway.
//! - `loopback/*`: batches of concurrent requests from a hyper-util client to a hyper server on
//!   127.0.0.1 that answers at once, bare and under the layer: layer/bare throughput, for
//!   information (on a shared machine it swings more than the layer's share of a request).
//! - `loopback_plain/*`: the same against a server that sends no rate-limit headers: what the
//!   layer costs before reading any (the request kept for a retry, the key, the gate).
//! - With the `reqwest` feature, `reqwest_call/*` and `reqwest_loopback/*`: the same two
//!   measures for a reqwest client, bare (a `reqwest-middleware` chain without the layer) and
//!   with `RateLimitLayer::middleware`; per call, the chain ends in a middleware that answers
//!   at once.
//!
//! Run: `cargo bench --bench overhead` (`--features reqwest` for the reqwest cases).

mod calls;

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tower::{Service, ServiceExt};
use tower_retry_after::RateLimitLayer;

/// Polls a future that is ready at once, as a service answering without I/O makes it.
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the no-op service answers at once"),
    }
}

fn per_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("call");
    for (name, headers) in calls::RESPONSES {
        let mut bare = calls::answering(headers);
        group.bench_function(format!("bare/{name}"), |b| {
            b.iter(|| now(bare.call(black_box(calls::request()))))
        });
        let mut layered = calls::layer(calls::answering(headers));
        group.bench_function(format!("layer/{name}"), |b| {
            b.iter(|| now(layered.call(black_box(calls::request()))))
        });
        let mut peer = calls::peer(calls::answering(headers));
        group.bench_function(format!("peer/{name}"), |b| {
            b.iter(|| now(peer.call(black_box(calls::request()))))
        });
    }
    group.finish();
}

/// A hyper server on loopback that answers every request at once with 200 and, if `meters`, a
/// draft 08 pair.
async fn serve(meters: bool) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service_fn(move |_request| async move {
                let mut response = Response::builder();
                if meters {
                    response = response
                        .header("ratelimit-policy", r#""default";q=100000;w=60"#)
                        .header("ratelimit", r#""default";r=99999;t=60"#);
                }
                let response = response.body(Full::new(Bytes::from_static(b"{}"))).unwrap();
                Ok::<_, Infallible>(response)
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    address
}

/// Requests in one measured batch.
const BATCH: usize = 64;

/// `BATCH` requests, `concurrency` at a time.
async fn batch<S>(service: &S, url: &str, concurrency: usize)
where
    S: Service<Request<Full<Bytes>>, Response = Response<hyper::body::Incoming>> + Clone,
    S::Error: std::fmt::Debug,
{
    for _ in 0..BATCH / concurrency {
        wave(service, url, concurrency).await;
    }
}

async fn wave<S>(service: &S, url: &str, concurrency: usize)
where
    S: Service<Request<Full<Bytes>>, Response = Response<hyper::body::Incoming>> + Clone,
    S::Error: std::fmt::Debug,
{
    let calls = (0..concurrency).map(|_| {
        let service = service.clone();
        let request = Request::get(url).body(Full::new(Bytes::new())).unwrap();
        async move {
            let response = service.oneshot(request).await.unwrap();
            response.into_body().collect().await.unwrap();
        }
    });
    futures_util::future::join_all(calls).await;
}

fn loopback(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (name, meters, concurrencies) in [
        ("loopback", true, &[1, 8, 64][..]),
        ("loopback_plain", false, &[64][..]),
    ] {
        let address = runtime.block_on(serve(meters));
        let url = format!("http://{address}/");
        compare(c, &runtime, name, &url, concurrencies);
    }
}

/// The time of `batches` batches on `measured`, each followed by one on `other`, untimed.
///
/// Both sides of a comparison then run on the same machine state: measured one after the
/// other, the drift between two runs of a few seconds (which core the client's thread lands
/// on, the pool's connections) moved single-request ratios by 20 %.
async fn alternating<S, T>(
    measured: &S,
    other: &T,
    url: &str,
    concurrency: usize,
    batches: u64,
) -> Duration
where
    S: Service<Request<Full<Bytes>>, Response = Response<hyper::body::Incoming>> + Clone,
    S::Error: std::fmt::Debug,
    T: Service<Request<Full<Bytes>>, Response = Response<hyper::body::Incoming>> + Clone,
    T::Error: std::fmt::Debug,
{
    let mut elapsed = Duration::ZERO;
    for _ in 0..batches {
        let start = std::time::Instant::now();
        batch(measured, url, concurrency).await;
        elapsed += start.elapsed();
        batch(other, url, concurrency).await;
    }
    elapsed
}

/// Bare and layered throughput against the server at `url`, one concurrency after the other.
fn compare(
    c: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    name: &str,
    url: &str,
    concurrencies: &[usize],
) {
    let bare = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let layered = tower::Layer::layer(&RateLimitLayer::new(), bare.clone());
    let mut group = c.benchmark_group(name);
    group.throughput(criterion::Throughput::Elements(BATCH as u64));
    for &concurrency in concurrencies {
        group.bench_function(format!("bare/{concurrency}"), |b| {
            b.to_async(runtime)
                .iter_custom(|batches| alternating(&bare, &layered, url, concurrency, batches))
        });
        group.bench_function(format!("layer/{concurrency}"), |b| {
            b.to_async(runtime)
                .iter_custom(|batches| alternating(&layered, &bare, url, concurrency, batches))
        });
    }
    group.finish();
}

/// The reqwest cases: the layer as middleware, beside a chain without it.
#[cfg(feature = "reqwest")]
mod reqwest_client {
    use super::*;
    use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

    /// The end of a chain that answers at once with `headers`, sending nothing.
    struct Answering(&'static [(&'static str, &'static str)]);

    #[async_trait::async_trait]
    impl Middleware for Answering {
        async fn handle(
            &self,
            _request: reqwest::Request,
            _extensions: &mut http::Extensions,
            _next: Next<'_>,
        ) -> reqwest_middleware::Result<reqwest::Response> {
            let mut response = Response::new("");
            for (name, value) in self.0 {
                response
                    .headers_mut()
                    .insert(*name, http::HeaderValue::from_static(value));
            }
            Ok(reqwest::Response::from(response))
        }
    }

    fn request(url: &reqwest::Url) -> reqwest::Request {
        let mut request = reqwest::Request::new(http::Method::POST, url.clone());
        let headers = request.headers_mut();
        headers.insert("content-type", "application/json".parse().unwrap());
        headers.insert("authorization", "Bearer 0123456789abcdef".parse().unwrap());
        *request.body_mut() = Some(reqwest::Body::from(&b"{\"name\":\"x\"}"[..]));
        request
    }

    pub(super) fn per_call(c: &mut Criterion) {
        let realistic: &'static [(&str, &str)] = &[
            ("content-type", "application/json"),
            ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
            ("ratelimit-policy", r#""default";q=100;w=60"#),
            ("ratelimit", r#""default";r=99;t=60"#),
        ];
        let url: reqwest::Url = "http://api.test/v1/items".parse().unwrap();
        let mut group = c.benchmark_group("reqwest_call");
        for (name, headers) in [("no_headers", &[][..]), ("ratelimit_headers", realistic)] {
            let bare = ClientBuilder::new(reqwest::Client::new())
                .with(Answering(headers))
                .build();
            group.bench_function(format!("bare/{name}"), |b| {
                b.iter(|| now(bare.execute(black_box(request(&url)))).unwrap())
            });
            let layered = ClientBuilder::new(reqwest::Client::new())
                .with(RateLimitLayer::new().middleware())
                .with(Answering(headers))
                .build();
            group.bench_function(format!("layer/{name}"), |b| {
                b.iter(|| now(layered.execute(black_box(request(&url)))).unwrap())
            });
        }
        group.finish();
    }

    async fn wave(client: &ClientWithMiddleware, url: &str, concurrency: usize) {
        let calls = (0..concurrency).map(|_| async move {
            let response = client.get(url).send().await.unwrap();
            response.bytes().await.unwrap();
        });
        futures_util::future::join_all(calls).await;
    }

    /// As `super::alternating`, for reqwest clients.
    async fn alternating(
        measured: &ClientWithMiddleware,
        other: &ClientWithMiddleware,
        url: &str,
        concurrency: usize,
        batches: u64,
    ) -> Duration {
        let mut elapsed = Duration::ZERO;
        for _ in 0..batches {
            let start = std::time::Instant::now();
            for _ in 0..BATCH / concurrency {
                wave(measured, url, concurrency).await;
            }
            elapsed += start.elapsed();
            for _ in 0..BATCH / concurrency {
                wave(other, url, concurrency).await;
            }
        }
        elapsed
    }

    pub(super) fn loopback(c: &mut Criterion) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let address = runtime.block_on(serve(true));
        let url = format!("http://{address}/");
        // One connection pool under both, as `compare` shares one hyper-util client.
        let client = reqwest::Client::new();
        let bare = ClientBuilder::new(client.clone()).build();
        let layered = ClientBuilder::new(client)
            .with(RateLimitLayer::new().middleware())
            .build();
        let mut group = c.benchmark_group("reqwest_loopback");
        group.throughput(criterion::Throughput::Elements(BATCH as u64));
        for concurrency in [1, 8, 64] {
            group.bench_function(format!("bare/{concurrency}"), |b| {
                b.to_async(&runtime)
                    .iter_custom(|batches| alternating(&bare, &layered, &url, concurrency, batches))
            });
            group.bench_function(format!("layer/{concurrency}"), |b| {
                b.to_async(&runtime)
                    .iter_custom(|batches| alternating(&layered, &bare, &url, concurrency, batches))
            });
        }
        group.finish();
    }
}

#[cfg(feature = "reqwest")]
criterion_group!(
    benches,
    per_call,
    loopback,
    reqwest_client::per_call,
    reqwest_client::loopback
);
#[cfg(not(feature = "reqwest"))]
criterion_group!(benches, per_call, loopback);
criterion_main!(benches);
