//! Windows longer than the cap, end to end: hourly and daily quotas, and instructions beyond
//! the cap and beyond the horizon. A hyper-util client through the guide's stack (a timeout
//! outside the layer, one gate per API token, as in `guide::gate`) against a real server on loopback that counts
//! what it received. The clock is paused, and the server's `Date` runs on it, as a real
//! server's runs on its own clock: an hour passes in an instant, and the server sees it pass.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use support::{TestServer, client, header};
use tokio::time::Instant;
use tower::util::BoxCloneService;
use tower::{ServiceBuilder, ServiceExt};
use tower_retry_after::{BoxError, Gates, HeldBy, Key, RateLimitLayer, Throttled};

const SECOND: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);
const TOKEN: &str = "Bearer ghp_0123";

type Client =
    BoxCloneService<Request<Full<Bytes>>, http::Response<hyper::body::Incoming>, BoxError>;

/// The guide's stack: a timeout outside the layer, one gate per API token.
fn stack(layer: RateLimitLayer) -> Client {
    let layer = layer.key(|request| match request.headers.get("authorization") {
        Some(token) => Some(Key::credential(token.as_bytes())),
        None => Key::origin(request),
    });
    BoxCloneService::new(
        ServiceBuilder::new()
            .timeout(Duration::from_secs(300))
            .layer(layer)
            .service(client()),
    )
}

/// A server's clock: the wall clock when the test began, run forward by the paused clock.
#[derive(Clone, Copy)]
struct ServerClock {
    wall: SystemTime,
    start: Instant,
}

impl ServerClock {
    fn new() -> Self {
        ServerClock {
            wall: SystemTime::now(),
            start: Instant::now(),
        }
    }

    /// The server's time now, in whole seconds since the epoch.
    fn seconds(&self) -> u64 {
        let now = self.wall + self.start.elapsed();
        now.duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    fn date(&self) -> String {
        httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(self.seconds()))
    }
}

/// How one call ended: its status, or how long it was held, by what, and how long it took.
#[derive(Debug)]
enum Ended {
    Answered(StatusCode),
    Throttled {
        retry_after: Duration,
        held_by: HeldBy,
        took: Duration,
    },
}

async fn call(client: &Client, url: String) -> Ended {
    send(client.clone(), url).await
}

async fn send(client: Client, url: String) -> Ended {
    let request = Request::get(url)
        .header("authorization", TOKEN)
        .body(Full::default())
        .unwrap();
    let started = Instant::now();
    match client.oneshot(request).await {
        Ok(response) => Ended::Answered(response.status()),
        Err(error) => {
            let throttled = error
                .downcast_ref::<Throttled>()
                .unwrap_or_else(|| panic!("neither answered nor throttled: {error}"));
            Ended::Throttled {
                retry_after: throttled.retry_after(),
                held_by: throttled.held_by(),
                took: started.elapsed(),
            }
        }
    }
}

/// `tasks` tasks making `each` calls in turn on `url`: how every call ended.
async fn calls(client: &Client, url: &str, tasks: usize, each: usize) -> Vec<Ended> {
    let tasks: Vec<_> = (0..tasks)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_owned());
            tokio::spawn(async move {
                let mut ended = Vec::new();
                for _ in 0..each {
                    ended.push(send(client.clone(), url.clone()).await);
                }
                ended
            })
        })
        .collect();
    let mut ended = Vec::new();
    for task in tasks {
        ended.extend(task.await.unwrap());
    }
    ended
}

/// A GitHub-style API: an hourly quota of 5,000 of which `left` remain, counted down by each
/// request, a 403 with `remaining: 0` once spent, and a new quota at the epoch reset an hour
/// after the first request. `resource` adds `x-ratelimit-resource: core`.
async fn hourly_api(left: u64, resource: bool) -> (TestServer, ServerClock) {
    let clock = ServerClock::new();
    let window = Arc::new(Mutex::new((left, clock.seconds() + 3600)));
    let server = TestServer::start(move |_, _, _| {
        let now = clock.seconds();
        let mut window = window.lock().unwrap();
        if now >= window.1 {
            *window = (5_000, window.1 + 3600);
        }
        let status = if window.0 == 0 {
            403
        } else {
            window.0 -= 1;
            200
        };
        let mut headers = vec![
            header("date", clock.date()),
            header("x-ratelimit-limit", 5_000),
            header("x-ratelimit-remaining", window.0),
            header("x-ratelimit-reset", window.1),
        ];
        if resource {
            headers.push(header("x-ratelimit-resource", "core"));
        }
        (status, headers)
    })
    .await;
    (server, clock)
}

/// Once an hourly quota is spent, not one more request goes until its reset, with or without
/// GitHub's resource header: every later call fails at once, told how long is left and by
/// what; the token's snapshot says it; after the reset, calls flow again.
#[tokio::test(start_paused = true)]
async fn a_spent_hourly_quota_is_never_walked_into_and_fails_calls_fast_until_its_reset() {
    for resource in [false, true] {
        let (server, _) = hourly_api(13, resource).await;
        let gates = Gates::new();
        let client = stack(RateLimitLayer::new().gates(gates.clone()));
        let ended = calls(&client, &server.url("/user"), 10, 3).await;
        let (answered, throttled): (Vec<_>, Vec<_>) = ended
            .iter()
            .partition(|ended| matches!(ended, Ended::Answered(_)));
        assert_eq!(
            server.count("GET", "/user"),
            13,
            "resource {resource}: the quota and not one request more: {ended:?}"
        );
        assert!(
            answered
                .iter()
                .all(|ended| matches!(ended, Ended::Answered(StatusCode::OK))),
            "resource {resource}: none refused: {answered:?}"
        );
        assert_eq!(throttled.len(), 17);
        for ended in throttled {
            let Ended::Throttled {
                retry_after,
                held_by,
                took,
            } = ended
            else {
                unreachable!()
            };
            assert!(*took <= Duration::from_millis(1), "held {took:?}");
            assert!(
                *retry_after > HOUR - 2 * SECOND && *retry_after <= HOUR + SECOND,
                "{retry_after:?}"
            );
            assert!(
                matches!(held_by, HeldBy::SpentMeter { .. }),
                "resource {resource}: {held_by:?}"
            );
        }
        let token = Key::credential(TOKEN);
        let snapshot = gates.snapshot(&token).expect("known");
        assert_eq!(snapshot.remaining(), Some(0), "resource {resource}");
        assert!(snapshot.closed_for().unwrap() > HOUR - 2 * SECOND);
        let spent: Vec<_> = gates
            .limits(&token)
            .into_iter()
            .filter(|(_, gate)| gate.is_exhausted())
            .map(|(limit, _)| limit)
            .collect();
        let expected = if resource {
            token.within("core")
        } else {
            token
        };
        assert_eq!(
            spent,
            std::slice::from_ref(&expected),
            "the limit that holds the token"
        );
        assert!(gates.keys().contains(&expected));

        tokio::time::sleep(HOUR).await;
        let after_reset = calls(&client, &server.url("/user"), 2, 2).await;
        assert!(
            after_reset
                .iter()
                .all(|ended| matches!(ended, Ended::Answered(StatusCode::OK))),
            "resource {resource}: {after_reset:?}"
        );
        assert_eq!(server.count("GET", "/user"), 17);
    }
}

/// A 429 with `Retry-After: 3600`: the call that met it has it at once; the key's next calls
/// fail at once for the hour, sending nothing, and go again once it has passed.
#[tokio::test(start_paused = true)]
async fn an_instruction_of_an_hour_is_sent_once_and_later_calls_fail_fast() {
    let clock = ServerClock::new();
    let server = TestServer::start(move |_, _, nth| {
        let status = if nth == 0 { 429 } else { 200 };
        let headers = vec![header("date", clock.date()), header("retry-after", 3600)];
        (status, headers)
    })
    .await;
    let client = stack(RateLimitLayer::new());
    let started = Instant::now();
    let first = call(&client, server.url("/items")).await;
    assert!(matches!(
        first,
        Ended::Answered(StatusCode::TOO_MANY_REQUESTS)
    ));
    assert_eq!(started.elapsed(), Duration::ZERO, "returned at once");
    let later = calls(&client, &server.url("/items"), 5, 2).await;
    for ended in &later {
        let Ended::Throttled {
            retry_after,
            held_by,
            took,
        } = ended
        else {
            panic!("sent into the hour: {later:?}");
        };
        assert_eq!(*took, Duration::ZERO);
        assert!(*retry_after >= HOUR, "{retry_after:?}");
        assert_eq!(
            *held_by,
            HeldBy::RetryAfter {
                status: StatusCode::TOO_MANY_REQUESTS
            }
        );
    }
    assert_eq!(server.count("GET", "/items"), 1);
    tokio::time::sleep(HOUR + 2 * SECOND).await;
    assert!(matches!(
        call(&client, server.url("/items")).await,
        Ended::Answered(StatusCode::OK)
    ));
    assert_eq!(server.count("GET", "/items"), 2);
}

/// With a cap of 2 s, `Retry-After: 20` is handed back at once, and the next calls are not sent
/// a millisecond later, each a certain refusal: they fail fast for the 20 s.
#[tokio::test(start_paused = true)]
async fn an_instruction_over_a_short_cap_holds_the_next_calls_too() {
    let server = TestServer::start(|_, _, nth| {
        let status = if nth == 0 { 429 } else { 200 };
        (status, vec![header("retry-after", 20)])
    })
    .await;
    let client = stack(RateLimitLayer::new().retry_after_cap(2 * SECOND));
    let first = call(&client, server.url("/items")).await;
    assert!(matches!(
        first,
        Ended::Answered(StatusCode::TOO_MANY_REQUESTS)
    ));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let next = call(&client, server.url("/items")).await;
    assert!(
        matches!(next, Ended::Throttled { retry_after, .. } if retry_after > 19 * SECOND),
        "{next:?}"
    );
    assert_eq!(server.count("GET", "/items"), 1);
    tokio::time::sleep(21 * SECOND).await;
    assert!(matches!(
        call(&client, server.url("/items")).await,
        Ended::Answered(StatusCode::OK)
    ));
}

/// A draft 08 daily policy at `r=0`: the quota of the day is spent, its reset hours away:
/// calls fail fast, nothing is sent.
#[tokio::test(start_paused = true)]
async fn a_spent_daily_policy_fails_calls_fast() {
    let server = TestServer::start(|_, _, nth| {
        let remaining = if nth == 0 { 0 } else { 999 };
        let headers = vec![
            header("ratelimit-policy", r#""day";q=1000;w=86400"#),
            header("ratelimit", format!(r#""day";r={remaining};t=50000"#)),
        ];
        (200, headers)
    })
    .await;
    let gates = Gates::new();
    let client = stack(RateLimitLayer::new().gates(gates.clone()));
    assert!(matches!(
        call(&client, server.url("/items")).await,
        Ended::Answered(StatusCode::OK)
    ));
    let later = calls(&client, &server.url("/items"), 4, 2).await;
    for ended in &later {
        assert!(
            matches!(
                ended,
                Ended::Throttled { retry_after, took, .. }
                    if *retry_after > 49_990 * SECOND && *took == Duration::ZERO
            ),
            "{later:?}"
        );
    }
    assert_eq!(server.count("GET", "/items"), 1);
    let snapshot = gates.snapshot(&Key::credential(TOKEN)).unwrap();
    assert!(snapshot.is_exhausted());
}

/// An instruction beyond the horizon is absurd or hostile: returned at once, and not
/// remembered, so the key's next call is sent. No server can lock a key for years.
#[tokio::test(start_paused = true)]
async fn an_instruction_beyond_the_horizon_is_returned_at_once_and_not_remembered() {
    for absurd in ["2147483647", "Sun, 01 Jan 2090 00:00:00 GMT"] {
        let server =
            TestServer::start(move |_, _, _| (429, vec![header("retry-after", absurd)])).await;
        let gates = Gates::new();
        let client = stack(RateLimitLayer::new().gates(gates.clone()));
        for sent in 1..=3 {
            let started = Instant::now();
            let ended = call(&client, server.url("/items")).await;
            assert!(
                matches!(ended, Ended::Answered(StatusCode::TOO_MANY_REQUESTS)),
                "{absurd}: {ended:?}"
            );
            assert_eq!(started.elapsed(), Duration::ZERO, "{absurd}");
            assert_eq!(server.count("GET", "/items"), sent, "{absurd}");
        }
        let closed = gates
            .snapshot(&Key::credential(TOKEN))
            .and_then(|gate| gate.closed_for());
        assert_eq!(closed, None, "{absurd}: nothing remembered");
    }
}

/// Nor does a refusal naming years hold the calls after it: the learned law takes it as a
/// refusal that named no time, and a key it learned to let one request go a window does
/// not stall once that request is answered (before, the fifth call waited the patience,
/// 10 s, for an answer of a request its round had no token left to send).
#[tokio::test(start_paused = true)]
async fn refusals_naming_years_between_acceptances_hold_no_later_call_long() {
    let server = TestServer::start(|_, _, nth| match nth % 2 {
        0 => (429, vec![header("retry-after", "3000000000")]),
        _ => (200, Vec::new()),
    })
    .await;
    let client = stack(RateLimitLayer::new());
    let started = Instant::now();
    for _ in 0..6 {
        call(&client, server.url("/items")).await;
    }
    assert!(started.elapsed() < SECOND, "{:?}", started.elapsed());
    assert_eq!(server.count("GET", "/items"), 6);
}

/// With `respect_remaining(false)`, a 403 whose meter is spent for an hour is still an
/// instruction beyond the cap for the call that met it: returned at once, never retried on a
/// guessed backoff into the spent window. (Later calls are sent: that is the opt-out.)
#[tokio::test(start_paused = true)]
async fn opting_out_of_holding_calls_never_resends_a_refused_one_into_a_spent_hour() {
    let (server, _) = hourly_api(0, true).await;
    let client = stack(RateLimitLayer::new().respect_remaining(false));
    let ended = calls(&client, &server.url("/user"), 10, 3).await;
    assert!(
        ended
            .iter()
            .all(|ended| matches!(ended, Ended::Answered(StatusCode::FORBIDDEN))),
        "{ended:?}"
    );
    assert_eq!(server.count("GET", "/user"), 30, "each call sent once");
}
