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
//!
//! Run: `cargo bench --bench overhead`.

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

criterion_group!(benches, per_call, loopback);
criterion_main!(benches);
