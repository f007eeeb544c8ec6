//! The simulator: deterministic (the same seed gives the same tables and picture, byte for
//! byte), its network really takes a round trip, and what the layer does against it (its
//! modules are the example's own).

#![allow(dead_code)] // the example's modules: each test takes the part it needs

#[path = "../examples/simulate/limiter.rs"]
mod limiter;
#[path = "../examples/simulate/sim.rs"]
mod sim;
#[path = "../examples/simulate/sweep.rs"]
mod sweep;
#[path = "../examples/simulate/timeline.rs"]
mod timeline;
#[path = "../examples/simulate/trace.rs"]
mod trace;
#[path = "../examples/simulate/workload.rs"]
mod workload;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use limiter::{Algorithm, Headers};
use tokio::time::Instant;
use tower::ServiceExt;
use workload::{Args, Measured, Outcome};

/// Where the client `name` stands in `workload::CLIENTS`, and so in each run's outcomes.
fn client(name: &str) -> usize {
    let names = workload::CLIENTS.map(|(name, _)| name);
    names.iter().position(|known| *known == name).expect(name)
}

/// The default workload (50 workers, 400 requests) at a limit of 20 per 1 s: more workers than
/// a window admits, as in BENCHMARKS.md's `--limit 20` tables.
fn fifty_workers_on_a_limit_of_twenty() -> Args {
    Args {
        limit: 20,
        ..Args::default()
    }
}

fn report(seed: u64) -> (String, String) {
    let args = Args {
        requests: 200,
        matrix: true,
        ..fifty_workers_on_a_limit_of_twenty()
    };
    let rows = sim::runs(&args, seed);
    let mut tables = workload::matrix_table(&workload::CLIENTS, &rows);
    for (_, outcomes) in &rows {
        tables.push_str(&workload::runs_table(&workload::CLIENTS, outcomes));
    }
    let picture = timeline::svg("determinism", &rows[0].1).unwrap();
    (tables, picture)
}

#[test]
fn the_same_seed_gives_the_same_report_byte_for_byte() {
    let first = report(7);
    assert_eq!(first, report(7));
    assert_ne!(first.0, report(8).0, "the seed does reach the draws");
}

#[test]
fn a_call_through_the_network_takes_a_round_trip_and_is_decided_half_way() {
    sim::paused(async {
        let args = Args::default();
        let network = sim::Network::new(&args, Headers::Draft8, 7);
        let mut trips = Vec::new();
        for _ in 0..50 {
            let sent = Instant::now();
            let request = Request::get("http://api.test/").body(Full::new(Bytes::new()));
            let response = network.clone().oneshot(request.unwrap()).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            trips.push((sent, Instant::now() - sent));
        }
        let measured = Measured {
            completion: Duration::ZERO,
            latencies: Vec::new(),
        };
        let log = network.outcome(measured, 1).log;
        let start = trips[0].0;
        for (&(sent, trip), &(arrived, _)) in trips.iter().zip(&log) {
            assert!(
                (Duration::from_millis(20)..=Duration::from_millis(80)).contains(&trip),
                "{trip:?}"
            );
            assert_eq!(arrived, sent - start + trip / 2, "decided half way");
        }
        let shortest = trips.iter().map(|(_, trip)| trip).min().unwrap();
        let longest = trips.iter().map(|(_, trip)| trip).max().unwrap();
        assert!(
            *longest - *shortest > Duration::from_millis(30),
            "trips spread over the range: {shortest:?} to {longest:?}"
        );
    });
}

/// Under meters the layer with its defaults is never refused: the slow start sends one request
/// to a cold key and the quota its answer reports. Without the slow start, the 50 workers'
/// first requests go before any answer comes back, and 30 of them find a window of 20 spent.
#[test]
fn the_layer_under_meters_is_refused_only_at_a_cold_start_without_the_slow_start() {
    for (args, blind) in [
        (fifty_workers_on_a_limit_of_twenty(), 30),
        (Args::default(), 0),
        (
            Args {
                algorithm: Algorithm::Aligned,
                ..fifty_workers_on_a_limit_of_twenty()
            },
            30,
        ),
    ] {
        let rows = sim::runs(&args, 7);
        let (_, outcomes) = &rows[0];
        let plain = &outcomes[client("plain, sleeps each Retry-After")];
        let without_slow_start = &outcomes[client("RateLimitLayer, slow_start(false)")];
        let layer = outcomes.last().unwrap();
        assert_eq!(layer.refused(), 0, "{}", args.describe());
        assert!(
            without_slow_start.refused() <= blind,
            "{}: {}",
            args.describe(),
            without_slow_start.refused()
        );
        assert!(plain.refused() > 10 * blind.max(1));
        assert_eq!(layer.measured.latencies.len(), args.requests);
    }
}

/// Where the server publishes no quota, the layer learns it: against fixed windows of 20 a
/// second, 50 workers, it is refused at most 3 % as often as the plain client with
/// `Retry-After` only, and 5 % with nothing, and about ten times as often without learning.
#[test]
fn without_meters_the_learned_limit_keeps_the_layer_off_the_wall() {
    for algorithm in [Algorithm::FirstRequest, Algorithm::Aligned] {
        for (headers, share) in [(Headers::RetryAfter, 3), (Headers::None, 5)] {
            let args = Args {
                algorithm,
                headers,
                ..fifty_workers_on_a_limit_of_twenty()
            };
            let rows = sim::runs(&args, 7);
            let (_, outcomes) = &rows[0];
            let plain = outcomes[client("plain, sleeps each Retry-After")].refused();
            let unlearned = outcomes[client("RateLimitLayer, learn_limits(false)")].refused();
            let layer = outcomes.last().unwrap().refused();
            let described = args.describe();
            assert!(
                layer * 100 <= plain * share,
                "{described}: {layer} of {plain}"
            );
            assert!(unlearned > 5 * layer, "{described}: {unlearned} unlearned");
        }
    }
}

/// One run of the plain client and of the layer's defaults on `args` with `seed`.
fn plain_and_layer(args: &Args, seed: u64) -> (workload::Outcome, workload::Outcome) {
    let plain = workload::CLIENTS[client("plain, sleeps each Retry-After")];
    let defaults = workload::CLIENTS[client("RateLimitLayer, defaults")];
    (
        sim::run(args, args.headers, plain, seed),
        sim::run(args, args.headers, defaults, seed),
    )
}

/// Never worse than doing nothing: where the server sends `Retry-After` only, on windows from
/// the first request and sliding windows the layer finishes within 1.05 × the plain client's
/// time, refused at most a tenth as often, on every seed.
#[test]
fn without_meters_the_layer_is_never_slower_than_doing_nothing_on_windows() {
    for algorithm in [Algorithm::FirstRequest, Algorithm::Sliding] {
        for seed in 1..=10 {
            let args = Args {
                algorithm,
                headers: Headers::RetryAfter,
                ..fifty_workers_on_a_limit_of_twenty()
            };
            let (plain, layer) = plain_and_layer(&args, seed);
            let (done, plainly) = (layer.measured.completion, plain.measured.completion);
            let described = args.describe();
            assert!(
                done.as_secs_f64() <= 1.05 * plainly.as_secs_f64(),
                "{described}, seed {seed}: {done:?} against {plainly:?}"
            );
            assert!(
                layer.refused() * 10 <= plain.refused(),
                "{described}, seed {seed}: refused {} against {}",
                layer.refused(),
                plain.refused()
            );
        }
    }
}

/// Under a cap in flight told `Retry-After` the plain client is quicker than the layer only by
/// sending while the instruction holds. Held to it as the layer is (DESIGN's one exception to
/// "never worse than doing nothing"), it takes more than twice as long, refused tens of times
/// as often, on every seed.
#[test]
fn under_a_cap_in_flight_the_layer_beats_the_plain_client_that_honours_retry_after() {
    let pausing = workload::CLIENTS[client("plain, pauses all on Retry-After")];
    let defaults = workload::CLIENTS[client("RateLimitLayer, defaults")];
    let args = Args {
        algorithm: Algorithm::InFlight,
        headers: Headers::RetryAfter,
        ..fifty_workers_on_a_limit_of_twenty()
    };
    for seed in 1..=10 {
        let paused = sim::run(&args, args.headers, pausing, seed);
        let layer = sim::run(&args, args.headers, defaults, seed);
        let (done, pausingly) = (layer.measured.completion, paused.measured.completion);
        let described = args.describe();
        assert!(
            2 * done <= pausingly,
            "{described}, seed {seed}: {done:?} against {pausingly:?}"
        );
        assert!(
            layer.refused() * 20 <= paused.refused(),
            "{described}, seed {seed}: refused {} against {}",
            layer.refused(),
            paused.refused()
        );
    }
}

/// Where sending in bursts is what costs (a leaky bucket, a counter that counts refusals too),
/// the plain client is refused over and over; the layer paces at the rate it learned and
/// finishes sooner, refused at most a tenth as often, on every seed and header style.
#[test]
fn on_limiters_that_punish_bursts_the_layer_beats_doing_nothing() {
    for algorithm in [Algorithm::Leaky, Algorithm::SlidingCounter] {
        for headers in [Headers::RetryAfter, Headers::None] {
            for seed in 1..=10 {
                let args = Args {
                    algorithm,
                    headers,
                    ..fifty_workers_on_a_limit_of_twenty()
                };
                let (plain, layer) = plain_and_layer(&args, seed);
                let described = args.describe();
                assert!(layer.finished(), "{described}, seed {seed}");
                assert!(
                    layer.measured.completion.as_secs_f64()
                        <= 1.05 * plain.measured.completion.as_secs_f64(),
                    "{described}, seed {seed}: {:?} against {:?}",
                    layer.measured.completion,
                    plain.measured.completion
                );
                assert!(
                    layer.refused() * 10 <= plain.refused(),
                    "{described}, seed {seed}: refused {} against {}",
                    layer.refused(),
                    plain.refused()
                );
            }
        }
    }
}

/// A reset written as an epoch second may fall up to a second before the one read. Where the
/// window opens at its first request (or a sliding log's at its newest), the release at the
/// second read would start each window just after a whole second and read the next reset two
/// seconds on: each window would cost two. The window's last request goes early instead,
/// alone, and its answer (a new window, or room a log gave back) opens the next window: never
/// refused, within 1.30 × the physical limit on every seed; windows aligned to the clock,
/// whose reset the second names exactly, lose nothing by it. A token bucket's reset (when it
/// is full) moves later as it is spent, so its later answers name a later second: the last
/// request waits for them, and the whole quota comes back at the later second read, not in
/// a burst every two seconds (2.01 × before) nor into a bucket still drained.
#[test]
fn a_reset_written_to_the_second_costs_close_to_its_window_not_a_second_more() {
    for (algorithm, bound) in [
        (Algorithm::FirstRequest, 1.30),
        (Algorithm::Sliding, 1.30),
        (Algorithm::Aligned, 1.06),
        (Algorithm::TokenBucket, 1.20),
    ] {
        let args = Args {
            algorithm,
            headers: Headers::XRateLimitEpoch,
            ..fifty_workers_on_a_limit_of_twenty()
        };
        never_refused_and_within(&args, bound);
    }
}

/// The defaults on `args`, over seeds 1–10: never refused, and within `bound` × the physical
/// limit on every seed.
fn never_refused_and_within(args: &Args, bound: f64) {
    let defaults = workload::CLIENTS[client("RateLimitLayer, defaults")];
    for seed in 1..=10 {
        let layer = sim::run(args, args.headers, defaults, seed);
        let described = args.describe();
        assert_eq!(layer.refused(), 0, "{described}, seed {seed}");
        let ratio = layer.completion_ratio().expect("finished");
        assert!(ratio <= bound, "{described}, seed {seed}: {ratio:.2}");
    }
}

/// A meter whose figure rises within one window (a token bucket refilling, a cap on requests
/// in flight freeing a slot) is followed: what the server gave back is spent, and its reset
/// moves with it, so that no reset read before the last spending brings a burst on early.
#[test]
fn meters_that_give_back_within_a_window_are_followed_not_burst_into() {
    for (algorithm, limit, bound) in [
        (Algorithm::TokenBucket, 50, 1.05),
        (Algorithm::InFlight, 20, 4.5),
    ] {
        let args = Args {
            algorithm,
            limit,
            headers: Headers::Draft8,
            ..Args::default()
        };
        never_refused_and_within(&args, bound);
    }
}

/// One run's figures for the sweep's verdict: `refused` of its requests refused, done in
/// `ratio` × a physical limit of 20 s (`None`: unfinished).
fn outcome(refused: usize, ratio: Option<f64>) -> Outcome {
    let physical_limit = Duration::from_secs(20);
    Outcome {
        measured: Measured {
            completion: physical_limit.mul_f64(ratio.unwrap_or(10.0)),
            latencies: ratio.map_or(vec![], |_| vec![Duration::from_millis(50)]),
        },
        log: (0..refused).map(|_| (Duration::ZERO, false)).collect(),
        physical_limit,
    }
}

/// The verdict `headers` gives the defaults on `algorithm` (windows of a second), refused
/// `refused` times in `ratio` × the physical limit, where the plain client was refused 800
/// times in 1.30 ×.
fn verdict(
    algorithm: Algorithm,
    headers: Headers,
    refused: usize,
    ratio: Option<f64>,
) -> Result<(), &'static str> {
    let row = sweep::Row {
        algorithm,
        headers,
        window: Duration::from_secs(1),
        seeds: vec![],
    };
    let outcomes = [
        outcome(800, Some(1.30)),
        outcome(0, None),
        outcome(refused, ratio),
    ];
    row.verdict(&outcomes)
}

/// The sweep holds each header style to its own bar: told no quota, refused a tenth as often
/// as the plain client and within the shape's bound; told meters, never refused and within
/// 1.10 ×; told a reset that names a second on windows of a second, refused once in ten
/// windows and within 1.30 ×. Never worse than doing nothing on every style.
#[test]
fn the_sweep_holds_each_header_style_to_its_own_bar() {
    use Algorithm::{FirstRequest, Sliding, TokenBucket};
    use Headers::{Draft8, RetryAfter, XRateLimitEpoch};
    assert_eq!(verdict(TokenBucket, RetryAfter, 80, Some(1.15)), Ok(()));
    assert_eq!(
        verdict(TokenBucket, RetryAfter, 81, Some(1.15)),
        Err("refused too often")
    );
    assert_eq!(verdict(TokenBucket, Draft8, 0, Some(1.10)), Ok(()));
    assert_eq!(
        verdict(TokenBucket, Draft8, 1, Some(1.05)),
        Err("refused too often")
    );
    assert_eq!(
        verdict(TokenBucket, Draft8, 0, Some(1.15)),
        Err("far from the limit")
    );
    // 1.25 × 20 s is 25 windows of a second: two refusals allowed, not three.
    for algorithm in [FirstRequest, Sliding] {
        assert_eq!(verdict(algorithm, XRateLimitEpoch, 2, Some(1.25)), Ok(()));
        assert_eq!(
            verdict(algorithm, XRateLimitEpoch, 3, Some(1.25)),
            Err("refused too often")
        );
        assert_eq!(
            verdict(algorithm, XRateLimitEpoch, 0, Some(1.31)),
            Err("far from the limit")
        );
    }
    assert_eq!(
        verdict(TokenBucket, XRateLimitEpoch, 0, Some(1.25)),
        Err("far from the limit")
    );
    assert_eq!(verdict(TokenBucket, Draft8, 0, None), Err("unfinished"));
    // Past 1.05 × the plain client's 1.30, on any style.
    assert_eq!(
        verdict(TokenBucket, RetryAfter, 0, Some(1.37)),
        Err("slower than plain")
    );
}

/// The command line's numbers are read whole or refused with a reason: a limit past what the
/// limiter counts is no limit of 0 (which the limiter cannot be made with).
#[test]
fn a_limit_too_large_to_count_is_refused_with_a_reason() {
    let mut args = Args::default();
    let read = |args: &mut Args, text: &str| args.read("--limit", || Ok(text.to_owned()));
    assert_eq!(read(&mut args, "4294967295"), Ok(true));
    assert_eq!(args.limit, u32::MAX);
    let refused = read(&mut args, "4294967296").unwrap_err();
    assert!(refused.contains("--limit 4294967296"), "{refused}");
    assert_eq!(args.limit, u32::MAX, "the limit read before stands");
}

/// A cap on requests in flight is held to the time the simulated server holds a request it
/// accepted (from its verdict to its answer reaching the client): the physical limit's round
/// is that hold's mean, as the network really takes it, not as it was drawn. The network
/// sleeps on tokio's timer, which wakes on whole milliseconds: each half of a round trip drawn
/// in nanoseconds is taken rounded up.
#[test]
fn the_in_flight_round_is_the_hold_the_network_really_takes() {
    sim::paused(async {
        let args = Args {
            algorithm: Algorithm::InFlight,
            ..fifty_workers_on_a_limit_of_twenty()
        };
        let started = Instant::now();
        let network = sim::Network::new(&args, Headers::None, 7);
        let calls = 40_000;
        let mut answered = Vec::new();
        for _ in 0..calls {
            let request = Request::get("http://api.test/").body(Full::new(Bytes::new()));
            let response = network.clone().oneshot(request.unwrap()).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            answered.push(Instant::now() - started);
        }
        let nothing = || Measured {
            completion: Duration::ZERO,
            latencies: Vec::new(),
        };
        let log = network.outcome(nothing(), 1).log;
        let held: Duration = answered
            .iter()
            .zip(&log)
            .map(|(&answered, &(arrived, _))| answered - arrived)
            .sum();
        let mean_hold = held / calls;
        // Limit 20: a cap of 5, so a 6th request is one round on.
        let round = network.outcome(nothing(), 6).physical_limit;
        let gap = mean_hold.as_secs_f64() - round.as_secs_f64();
        assert!(
            gap.abs() < 0.000_2,
            "the server holds a request {mean_hold:?} on average; a round is {round:?}"
        );
    });
}

/// The plain client that honours a `Retry-After` as DESIGN asks of the layer: every worker
/// waits until it ends, not only the one that was told, and until the latest one any was told.
/// Against a server that refuses the first requests it receives (naming what `refusals` say)
/// and accepts the rest, two workers sharing four requests, each send at the time returned.
fn sends_of(client: workload::Client, refusals: &'static [&'static str]) -> Vec<Duration> {
    sim::paused(async move {
        let start = Instant::now();
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = sent.clone();
        let server = tower::service_fn(move |_: Request<Full<Bytes>>| {
            let mut log = log.lock().unwrap();
            log.push(Instant::now() - start);
            let mut response = http::Response::new(Full::new(Bytes::new()));
            if let Some(named) = refusals.get(log.len() - 1) {
                *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                let named = http::HeaderValue::from_static(named);
                response.headers_mut().insert("retry-after", named);
            }
            std::future::ready(Ok::<_, std::convert::Infallible>(response))
        });
        let args = Args {
            workers: 2,
            requests: 4,
            ..Args::default()
        };
        let progress = indicatif::ProgressBar::hidden();
        let layer = tower_retry_after::RateLimitLayer::new();
        workload::run(&args, client, layer, server, "http://api.test/", &progress)
            .await
            .unwrap();
        sent.lock().unwrap().clone()
    })
}

#[test]
fn the_plain_client_that_pauses_all_sends_nothing_while_a_retry_after_it_was_told_holds() {
    let seconds = |sent: Vec<Duration>| sent.iter().map(Duration::as_secs).collect::<Vec<_>>();
    let plain = workload::CLIENTS[client("plain, sleeps each Retry-After")].1;
    let pausing = workload::CLIENTS[client("plain, pauses all on Retry-After")].1;
    assert_eq!(
        seconds(sends_of(pausing, &["1"])),
        [0, 1, 1, 1, 1],
        "the refused one, then nothing till the second is up"
    );
    assert_eq!(
        seconds(sends_of(plain, &["1"])),
        [0, 0, 0, 0, 1],
        "the plain client pauses the refused worker alone"
    );
    assert_eq!(
        seconds(sends_of(pausing, &["1", "2"])),
        [0, 1, 3, 3, 3, 3],
        "a pause extended while a worker waits holds it too"
    );
}
