//! A fleet sharing one credential: several worker processes call one rate-limited server,
//! once with each process's own gates and once with the gates shared on Redis, and the figures
//! side by side. Each "process" is a runtime of its own on its own thread, with its own HTTP
//! client, its own gates and its own Redis connection: what they share is only what separate
//! processes would, the server and Redis.
//!
//! The server is the demo's embedded limiter (first-request fixed windows, 20 requests a
//! second by default; `--limiter aligned|token-bucket|sliding`) on loopback, each request held
//! for a round trip of 20–80 ms.
//!
//! Run: `REDIS_URL=redis://127.0.0.1:6379/ cargo run --example fleet --features redis`, with
//! flags `--processes 4 --workers 25 --requests 400 --limit 20 --headers draft-8|retry-after`
//! and `--kill-redis-after SECONDS` (shuts the Redis down mid-run, with `SHUTDOWN NOSAVE`: every
//! call must still complete). Without `REDIS_URL` only the per-process rows run.

#[path = "simulate/limiter.rs"]
mod limiter;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::Request;
use http_body_util::{Empty, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rand::RngExt;
use tokio::net::TcpListener;
use tower::{BoxError, Layer, ServiceExt};
use tower_retry_after::store::RedisStore;
use tower_retry_after::{Gates, RateLimitLayer};

use limiter::{Algorithm, Headers, Limiter};

/// What the command line asked for.
#[derive(Clone, Debug)]
struct Args {
    processes: usize,
    workers: usize,
    requests: usize,
    limit: u32,
    algorithm: Algorithm,
    headers: Vec<Headers>,
    kill_redis_after: Option<Duration>,
    redis: Option<String>,
}

impl Args {
    fn read() -> Result<Args, BoxError> {
        let mut args = Args {
            processes: 4,
            workers: 25,
            requests: 400,
            limit: 20,
            algorithm: Algorithm::FirstRequest,
            headers: vec![Headers::Draft8, Headers::RetryAfter],
            kill_redis_after: None,
            redis: std::env::var("REDIS_URL").ok(),
        };
        let mut given = std::env::args().skip(1);
        while let Some(flag) = given.next() {
            let value = given.next().ok_or(format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--processes" => args.processes = value.parse()?,
                "--workers" => args.workers = value.parse()?,
                "--requests" => args.requests = value.parse()?,
                "--limit" => args.limit = value.parse()?,
                "--kill-redis-after" => {
                    args.kill_redis_after = Some(Duration::from_secs_f64(value.parse()?));
                }
                "--limiter" => {
                    let algorithm = Algorithm::ALL.into_iter().find(|name| name.flag() == value);
                    args.algorithm = algorithm.ok_or(format!("unknown limiter {value}"))?;
                }
                "--headers" => {
                    let style = Headers::ALL.into_iter().find(|style| style.flag() == value);
                    args.headers = vec![style.ok_or(format!("unknown headers {value}"))?];
                }
                _ => return Err(format!("unknown flag {flag}").into()),
            }
        }
        Ok(args)
    }
}

/// The server's wall clock.
fn wall_clock() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

/// Serves `limiter` on loopback, each request held for a round trip of 20–80 ms; returns its
/// address.
async fn serve(limiter: Arc<Mutex<Limiter>>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let limiter = limiter.clone();
            let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                let limiter = limiter.clone();
                async move {
                    let round_trip = Duration::from_millis(rand::rng().random_range(20..=80));
                    tokio::time::sleep(round_trip / 2).await;
                    let response = limiter.lock().unwrap().answer(wall_clock());
                    tokio::time::sleep(round_trip - round_trip / 2).await;
                    if response.status().is_success() {
                        limiter.lock().unwrap().finished();
                    }
                    let body = Full::new(Bytes::from_static(b"{}"));
                    Ok::<_, Infallible>(response.map(|()| body))
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .auto_date_header(false)
                .serve_connection(TokioIo::new(stream), service);
            tokio::spawn(connection);
        }
    });
    Ok(address)
}

/// One worker process: its own runtime, client, gates (on Redis at `redis`, or its own) and
/// `workers` workers taking calls from the fleet's `next` until `requests` are done. Before
/// its runtime goes it flushes its gates, as a process of a fleet does before it exits: what
/// it still tells the store (its last answers) would go with the runtime, and the others
/// would wait on requests the store counts out. Returns how many calls it completed.
fn process(
    args: &Args,
    url: String,
    redis: Option<String>,
    prefix: String,
    next: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<Result<usize, String>> {
    let (workers, requests) = (args.workers, args.requests);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| error.to_string())?;
        runtime.block_on(async move {
            let gates = match redis {
                Some(redis) => {
                    let store = RedisStore::open(&redis).map_err(|error| error.to_string())?;
                    Gates::with_store(store.prefix(&prefix))
                }
                None => Gates::new(),
            };
            let http = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
            let client = RateLimitLayer::new().gates(gates.clone()).layer(http);
            let mut tasks = Vec::new();
            for _ in 0..workers {
                let (client, url, next) = (client.clone(), url.clone(), next.clone());
                tasks.push(tokio::spawn(async move {
                    let mut done = 0;
                    while next.fetch_add(1, Ordering::Relaxed) < requests {
                        // A call the layer gives up on (its wait would not fit) is made again:
                        // every call must complete.
                        loop {
                            let request = Request::get(&url).body(Empty::new()).unwrap();
                            match client.clone().oneshot(request).await {
                                Ok(response) if response.status() == 200 => break,
                                _ => tokio::time::sleep(Duration::from_millis(100)).await,
                            }
                        }
                        done += 1;
                    }
                    done
                }));
            }
            let mut done = 0;
            for task in tasks {
                done += task.await.map_err(|error| error.to_string())?;
            }
            gates.flush().await;
            Ok(done)
        })
    })
}

/// What one fleet run cost.
struct Run {
    refused: usize,
    completed: usize,
    took: Duration,
    physical: Duration,
}

/// The fleet against a fresh limiter sending `headers`, on Redis if `redis` is given.
async fn run(args: &Args, headers: Headers, redis: Option<&str>) -> Result<Run, BoxError> {
    let window = Duration::from_secs(1);
    // Round trips of 20–80 ms, half of each after the verdict: 25 ms served on average.
    let limiter = Limiter::new(args.algorithm, headers, args.limit, window, wall_clock())
        .holding(Duration::from_millis(25));
    let limiter = Arc::new(Mutex::new(limiter));
    let address = serve(limiter.clone()).await?;
    let url = format!("http://{address}/items");
    let prefix = format!("fleet:{}:{}:", std::process::id(), headers.flag());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let processes: Vec<_> = (0..args.processes)
        .map(|_| {
            let redis = redis.map(str::to_owned);
            process(args, url.clone(), redis, prefix.clone(), next.clone())
        })
        .collect();
    if let (Some(redis), Some(after)) = (redis, args.kill_redis_after) {
        tokio::time::sleep(after).await;
        shut_down(redis).await;
    }
    let mut completed = 0;
    for process in processes {
        completed += tokio::task::block_in_place(|| process.join())
            .map_err(|_| "a worker process panicked")??;
    }
    let took = started.elapsed();
    let limiter = limiter.lock().unwrap();
    let refused = limiter
        .log()
        .iter()
        .filter(|(_, accepted)| !accepted)
        .count();
    Ok(Run {
        refused,
        completed,
        took,
        physical: limiter.physical_limit(args.requests),
    })
}

/// Shuts the Redis at `url` down, as a crash would take it.
async fn shut_down(url: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    if let Ok(mut connection) = client.get_multiplexed_async_connection().await {
        let _: Result<(), _> = redis::cmd("SHUTDOWN")
            .arg("NOSAVE")
            .query_async(&mut connection)
            .await;
        println!("Redis shut down mid-run");
    }
}

/// The layer's keys Redis still holds under this run's prefixes, with their times to live in
/// milliseconds (-1: none); deleted once read, not to linger after the example.
async fn keys_left(url: &str) -> Result<Vec<i64>, BoxError> {
    let client = redis::Client::open(url)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("fleet:{}:*", std::process::id()))
        .query_async(&mut connection)
        .await?;
    let mut ttls = Vec::new();
    for key in keys {
        ttls.push(
            redis::cmd("PTTL")
                .arg(&key)
                .query_async(&mut connection)
                .await?,
        );
        redis::cmd("DEL")
            .arg(&key)
            .query_async::<()>(&mut connection)
            .await?;
    }
    Ok(ttls)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), BoxError> {
    let args = Args::read()?;
    println!(
        "{} processes × {} workers, {} requests in all, against {} requests a second, \
         round trips of 20–80 ms\nlimiter: {}",
        args.processes,
        args.workers,
        args.requests,
        args.limit,
        args.algorithm.describe()
    );
    for headers in &args.headers {
        println!("headers: {}", headers.describe());
    }
    println!();
    if args.redis.is_none() {
        println!("REDIS_URL is not set: the per-process rows only\n");
    }
    let mut rows = Vec::new();
    for &headers in &args.headers {
        let alone = run(&args, headers, None).await?;
        rows.push((headers, "per process", alone));
        if let Some(redis) = args.redis.as_deref() {
            let shared = run(&args, headers, Some(redis)).await?;
            rows.push((headers, "on Redis", shared));
        }
    }
    println!(
        "{:<12} {:<12} {:>9} {:>8} {:>9} {:>10} {:>6}",
        "headers", "gates", "completed", "refused", "took", "physical", "ratio"
    );
    for (headers, gates, run) in &rows {
        println!(
            "{:<12} {:<12} {:>9} {:>8} {:>8.2}s {:>9.2}s {:>6.2}",
            headers.flag(),
            gates,
            run.completed,
            run.refused,
            run.took.as_secs_f64(),
            run.physical.as_secs_f64(),
            run.took.as_secs_f64() / run.physical.as_secs_f64().max(1.0)
        );
    }
    if let (Some(redis), None) = (args.redis.as_deref(), args.kill_redis_after) {
        // Every key expires on its own: a little after the last time it names (after two
        // windows, none is left), or an hour after its last write where the fleet learned how
        // fast the key may go.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let ttls = keys_left(redis).await?;
        let hour = i64::try_from(Duration::from_secs(3600).as_millis())?;
        let left = ttls.len();
        println!("\nkeys of the layer in Redis 2 s after the runs: {left}, expiring on their own");
        if ttls.iter().any(|ttl| !(0..=hour).contains(ttl)) {
            return Err(format!("a key of the layer lingers: {ttls:?} ms to live").into());
        }
    }
    Ok(())
}
