//! The server's clock as the layer meets it: `Date`s that lag the ones before (another backend
//! behind the same host, a cache without `Age`), and `Date`'s one-second resolution. Every
//! server here runs its clock with the paused one, so its `Date` advances as tokio's time does.

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use support::{TestServer, client, header};
use tokio::time::Instant;
use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::RateLimitLayer;

const SECOND: Duration = Duration::from_secs(1);
/// Tue, 14 Nov 2023 19:42:25 GMT.
const AT_19_42_25: Duration = Duration::from_secs(1_699_990_945);

/// A server's clock on the paused clock: it read `origin` when it was made, and runs with
/// tokio's time.
#[derive(Clone, Copy)]
struct ServerClock {
    origin: SystemTime,
    made: Instant,
}

impl ServerClock {
    fn reading(origin: Duration) -> Self {
        ServerClock {
            origin: UNIX_EPOCH + origin,
            made: Instant::now(),
        }
    }

    fn now(&self) -> SystemTime {
        self.origin + self.made.elapsed()
    }

    /// The `Date` a backend whose clock runs `behind` this one writes now: whole seconds,
    /// rounded down, as HTTP-dates are.
    fn date(&self, behind: Duration) -> SystemTime {
        let reads = self.now() - behind;
        UNIX_EPOCH + Duration::from_secs(epoch_seconds(reads))
    }
}

fn epoch_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// One scripted answer: after `delay`, `status`, dated by a backend whose clock runs `behind`
/// the server's, with the headers `headers` writes for that `Date`.
struct Scripted {
    delay: Duration,
    status: u16,
    behind: Duration,
    headers: fn(SystemTime) -> Vec<(&'static str, String)>,
}

/// When one attempt arrived and was answered, and the `Date` it was answered with.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    arrived: Instant,
    answered: Instant,
    date: SystemTime,
}

/// Backends behind one host, answering from a script (then plain 200s) on `clock`.
#[derive(Clone)]
struct Backends {
    clock: ServerClock,
    script: Arc<Mutex<VecDeque<Scripted>>>,
    attempts: Arc<Mutex<Vec<Attempt>>>,
}

impl Backends {
    fn new(clock: ServerClock, script: impl IntoIterator<Item = Scripted>) -> Self {
        Backends {
            clock,
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            attempts: Arc::default(),
        }
    }

    fn attempts(&self) -> Vec<Attempt> {
        self.attempts.lock().unwrap().clone()
    }

    fn service(
        &self,
    ) -> impl Service<Request<String>, Response = Response<String>, Error = BoxError, Future: Send> + Clone
    {
        let backends = self.clone();
        tower::service_fn(move |_request: Request<String>| {
            let backends = backends.clone();
            async move {
                let arrived = Instant::now();
                let answer = backends.script.lock().unwrap().pop_front();
                let answer = answer.unwrap_or(Scripted {
                    delay: Duration::ZERO,
                    status: 200,
                    behind: Duration::ZERO,
                    headers: |_| Vec::new(),
                });
                tokio::time::sleep(answer.delay).await;
                let date = backends.clock.date(answer.behind);
                let mut response = Response::builder()
                    .status(answer.status)
                    .header("date", httpdate::fmt_http_date(date));
                for (name, value) in (answer.headers)(date) {
                    response = response.header(name, value);
                }
                backends.attempts.lock().unwrap().push(Attempt {
                    arrived,
                    answered: Instant::now(),
                    date,
                });
                Ok::<_, BoxError>(response.body(String::new())?)
            }
        })
    }
}

async fn get(service: &mut (impl Service<Request<String>, Error = BoxError> + Clone)) {
    let request = Request::get("http://api.test/items")
        .body(String::new())
        .unwrap();
    let _ = service.ready().await.unwrap().call(request).await;
}

/// A `Retry-After` HTTP-date three seconds after the answer's own `Date`.
fn three_seconds_after(date: SystemTime) -> Vec<(&'static str, String)> {
    vec![header(
        "retry-after",
        httpdate::fmt_http_date(date + 3 * SECOND),
    )]
}

/// A meter with room left: no instruction, but a `Date` the layer learns the server's clock
/// from.
fn room_left(_: SystemTime) -> Vec<(&'static str, String)> {
    vec![header("x-ratelimit-remaining", 5)]
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_date_is_waited_from_its_own_date_when_earlier_dates_were_later() {
    // The key's first answer says 19:42:27 (with a meter, so the layer learns the server's
    // clock from it); the next is slow, and its backend's clock (or a
    // cache without `Age`) says 19:42:25 when it answers five seconds later, with a
    // `Retry-After` of 19:42:28. What earlier answers say of the server's clock (19:42:32 by
    // then) is not that answer's clock: read against it, the instruction has passed.
    let clock = ServerClock::reading(AT_19_42_25 + 2 * SECOND);
    let backends = Backends::new(
        clock,
        [
            Scripted {
                delay: Duration::ZERO,
                status: 200,
                behind: Duration::ZERO,
                headers: room_left,
            },
            Scripted {
                delay: 5 * SECOND,
                status: 429,
                behind: 7 * SECOND,
                headers: three_seconds_after,
            },
        ],
    );
    let mut service = RateLimitLayer::new()
        .jitter_seed(1)
        .layer(backends.service());
    get(&mut service).await;
    get(&mut service).await;
    let attempts = backends.attempts();
    assert_eq!(attempts.len(), 3, "{attempts:?}");
    let refusal = attempts[1];
    assert_eq!(
        httpdate::fmt_http_date(refusal.date),
        "Tue, 14 Nov 2023 19:42:25 GMT"
    );
    let waited = attempts[2].arrived - refusal.answered;
    assert!(waited >= 3 * SECOND, "retried {waited:?} after, 3 s owed");
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_date_is_not_read_short_by_the_fraction_of_dates_second() {
    // The server's clock turns 19:42:25 as the first answer (a 503 with a meter) is written;
    // the retry's answer, within the same second, says 19:42:25 too, and names 19:42:28. The
    // first answer bounds the server's clock a fraction of a second past that `Date`; an
    // instruction is read against its own `Date` alone, so the fraction is not taken off: 3 s,
    // not 2.6 s.
    let clock = ServerClock::reading(AT_19_42_25);
    let backends = Backends::new(
        clock,
        [
            Scripted {
                delay: Duration::ZERO,
                status: 503,
                behind: Duration::ZERO,
                headers: room_left,
            },
            Scripted {
                delay: Duration::ZERO,
                status: 429,
                behind: Duration::ZERO,
                headers: three_seconds_after,
            },
        ],
    );
    let mut service = RateLimitLayer::new()
        .jitter_seed(1)
        .layer(backends.service());
    get(&mut service).await;
    let attempts = backends.attempts();
    assert_eq!(attempts.len(), 3, "{attempts:?}");
    let refusal = attempts[1];
    assert_eq!(
        refusal.date, attempts[0].date,
        "the same second: {attempts:?}"
    );
    assert!(refusal.answered > attempts[0].answered);
    let waited = attempts[2].arrived - refusal.answered;
    assert!(waited >= 3 * SECOND, "retried {waited:?} after, 3 s owed");
}

/// When backend B wrote a 429, and the instant its `Retry-After` and its spent meter's reset
/// both name, on its own clock.
#[derive(Clone, Copy, Debug)]
struct Refusal {
    written: Instant,
    until: SystemTime,
}

#[tokio::test(start_paused = true)]
async fn two_backends_whose_clocks_differ_are_each_waited_by_their_own_clock() {
    // Behind one host, backend A answers with its true `Date`, backend B with a `Date` 5 s
    // slow, in turn. Every answer carries meters; B refuses, naming the end of the refusal 3 s
    // after its own `Date` twice: as a `Retry-After` date and as a spent meter's epoch reset.
    let clock = ServerClock::reading(Duration::from_secs(1_700_000_000) + SECOND / 3);
    let slow_by = 5 * SECOND;
    let refusals: Arc<Mutex<Vec<Refusal>>> = Arc::default();
    let said = refusals.clone();
    let server = TestServer::start(move |_, _, nth| {
        if nth % 2 == 0 {
            let date = clock.date(Duration::ZERO);
            let reset = epoch_seconds(date) + 60;
            return (
                200,
                vec![
                    header("date", httpdate::fmt_http_date(date)),
                    header("x-ratelimit-remaining", 5),
                    header("x-ratelimit-reset", reset),
                ],
            );
        }
        let date = clock.date(slow_by);
        let until = date + 3 * SECOND;
        said.lock().unwrap().push(Refusal {
            written: Instant::now(),
            until,
        });
        (
            429,
            vec![
                header("date", httpdate::fmt_http_date(date)),
                header("retry-after", httpdate::fmt_http_date(until)),
                header("x-ratelimit-remaining", 0),
                header("x-ratelimit-reset", epoch_seconds(until)),
            ],
        )
    })
    .await;
    let layer = RateLimitLayer::new().jitter_seed(7);
    let mut service = ServiceBuilder::new().layer(layer).service(client());
    for _ in 0..4 {
        let request = Request::get(server.url("/items"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = service.ready().await.unwrap().call(request).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let arrivals = server.arrivals("GET", "/items");
    let refusals = refusals.lock().unwrap().clone();
    assert_eq!(
        arrivals.len(),
        7,
        "A, then each later call refused by B once and let by A"
    );
    assert_eq!(refusals.len(), 3);
    for refusal in &refusals {
        let later: Vec<Instant> = arrivals
            .iter()
            .copied()
            .filter(|at| *at > refusal.written)
            .collect();
        assert!(!later.is_empty(), "the refused call is retried");
        for at in later {
            // By B's own clock, nothing is sent before the time it named has come.
            let b_reads = clock.origin + (at - clock.made) - slow_by;
            assert!(
                b_reads >= refusal.until,
                "sent when B's clock read {:?} before {refusal:?}",
                refusal.until.duration_since(b_reads).unwrap()
            );
            // Nor sooner than the 3 s its `Date` says are left, whatever A's `Date`s, 5 s
            // ahead, said of the server's clock.
            let waited = at - refusal.written;
            assert!(waited >= 3 * SECOND, "sent {waited:?} after {refusal:?}");
        }
    }
}
