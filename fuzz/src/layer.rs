//! The whole layer on a paused clock, against a service that answers from a fuzzer-chosen
//! script as a real server would: statuses, rate-limit headers, delays and transport errors,
//! over up to four calls in a row on one layer (so a window one call met holds the next), the
//! caller pausing between them.
//!
//! The server's clock runs with the paused clock: a fixed origin (the vectors' NOW and a
//! fuzzer-chosen fraction of a second) plus the time elapsed. Each answer's `Date` is its
//! writer's clock in whole seconds, rounded down, as HTTP-dates are; the writer is one of
//! - backend A, whose clock is true (the client's wall clock reads the same);
//! - backend B, behind the same host, whose clock runs [`SLOW_BY`] behind A's;
//! - a cache that answers with the first answer's `Date` and no `Age`: a stale `Date`.
//!
//! Every instant an answer names (a `Retry-After` HTTP-date, an epoch `x-ratelimit-reset`) is
//! written in its own `Date`'s clock, some seconds after it.
//!
//! An input is read byte by byte. The first three bytes are the run:
//! - the method (bits 0–1), the cap and `max_wait` (bits 2–3, see [`DURATIONS`]), the number of
//!   calls less one (bits 4–5), a horizon of an hour instead of the default two days (bit 6);
//! - the fraction of a second the server's clock reads past the origin, in 256ths;
//! - the caller's pause before each call after the first, two bits a call (see [`GAPS`]).
//!
//! Then every four bytes make one scripted answer: status, headers, a value, and its timing (a
//! delay in bits 0–2, its writer in bits 3–4). Answers beyond the script are a plain 200.
//!
//! Checked for every input, each bound read from the answer's own headers with the crate's
//! reading rules (`RateLimitInfo::from_headers`, see [`Reading`]), never from the layer's state:
//! - no attempt of any later call arrives inside the window a 429's `Retry-After` named (read
//!   against its own `Date`), nor before the reset of a meter an answer said is spent, for
//!   every one within the horizon;
//! - a call that met an instruction over the cap ends at once with that response;
//! - while what the server said holds a call longer than it may wait (the cap and the spread
//!   an instruction that long gets), the call ends at once with `Throttled`, sends nothing, and
//!   is told at least the time left; and a call ends so only then: nothing beyond the horizon
//!   is remembered, and nothing is held longer than the server said;
//! - after nothing but 429s whose one instruction lies beyond the horizon, a call goes at once:
//!   such a refusal closes nothing, not even for a guess;
//! - a retry never follows its answer back to back: at least the backoff's floor, and at least
//!   the answer's own instruction;
//! - a POST or PATCH goes again only after a 429, or an answer that said
//!   `x-should-retry: true`; nothing goes again after `x-should-retry: false`;
//! - no call waits beyond `max_wait` (plus the time its answers took, and a millisecond a wait
//!   for the timer), nor makes more attempts than its counts allow;
//! - nothing panics.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, Method, Request, Response};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_retry_after::{BoxError, Meter, RateLimitInfo, RateLimitLayer, Throttled};
use tower_service::Service;

const SECOND: Duration = Duration::from_secs(1);
/// What the server's clock reads when a run starts, before the fuzzer's fraction of a second:
/// Tue, 14 Nov 2023 22:13:20 GMT.
const ORIGIN: Duration = Duration::from_secs(1_700_000_000);
/// How far backend B's clock runs behind backend A's.
const SLOW_BY: Duration = Duration::from_secs(5);
/// A `Date` names whole seconds: when it was written, its clock read at most this much past it.
const DATE_RESOLUTION: Duration = SECOND;
const DEFAULT_HORIZON: Duration = Duration::from_secs(2 * 86_400);
const SHORT_HORIZON: Duration = Duration::from_secs(3_600);

/// The least a guessed wait can be: half the default 500 ms base.
const FLOOR: Duration = Duration::from_millis(250);
/// The most spread the default backoff adds to an instruction (never more than a tenth of it).
const SPREAD: Duration = SECOND;
const TRANSIENT_RETRIES: u32 = 3;
const RATE_LIMITED_RETRIES: u32 = 10;

/// The cap and `max_wait` a run sets (`None`: left to follow the other), and the two in force:
/// of the two, the one left unset follows the one set.
const DURATIONS: [(Option<u64>, Option<u64>, Duration, Duration); 4] = [
    (
        None,
        None,
        Duration::from_secs(60),
        Duration::from_secs(120),
    ),
    (
        Some(3),
        Some(6),
        Duration::from_secs(3),
        Duration::from_secs(6),
    ),
    (
        Some(10),
        None,
        Duration::from_secs(10),
        Duration::from_secs(120),
    ),
    (
        None,
        Some(8),
        Duration::from_secs(4),
        Duration::from_secs(8),
    ),
];

/// The caller's pauses between calls: none, past a short window, past the default cap, past an
/// hour's instruction with its spread.
const GAPS: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_secs(2),
    Duration::from_secs(65),
    Duration::from_secs(3_601),
];

/// How long after its answer's `Date` an epoch reset is: a few seconds, past the default cap,
/// an hour, and three days (beyond every horizon).
const EPOCH_RESETS: [u64; 6] = [1, 3, 5, 61, 3_600, 3 * 86_400];

/// Who writes an answer, and so its `Date`.
#[derive(Clone, Copy, Debug)]
enum Writer {
    /// Backend A: its clock is true.
    True,
    /// Backend B: its clock runs `SLOW_BY` behind.
    Slow,
    /// A cache without `Age`: the first answer's `Date`.
    Cache,
}

/// A header value as its answer's writer writes it.
#[derive(Clone, Debug)]
enum Written {
    Text(String),
    /// An HTTP-date this long after the answer's own `Date`.
    DateAfter(Duration),
    /// Epoch seconds this long after the answer's own `Date`.
    EpochAfter(Duration),
}

/// One scripted answer.
#[derive(Clone, Debug)]
struct Answer {
    /// `None`: a transport error.
    status: Option<u16>,
    headers: Vec<(&'static str, Written)>,
    delay: Duration,
    writer: Writer,
}

impl Answer {
    /// What the server answers beyond the script.
    fn plain() -> Self {
        Answer {
            status: Some(200),
            headers: Vec::new(),
            delay: Duration::ZERO,
            writer: Writer::True,
        }
    }
}

/// The clocks of the servers behind the host, which run with the paused clock.
struct Server {
    started: Instant,
    /// How far past `ORIGIN` the true clock reads at `started`.
    phase: Duration,
    /// The first answer's `Date`, which the cache answers with.
    cached: Option<SystemTime>,
}

impl Server {
    /// The true time at `at`: backend A's clock, and the client's.
    fn true_time(&self, at: Instant) -> SystemTime {
        UNIX_EPOCH + ORIGIN + self.phase + (at - self.started)
    }

    /// The `Date` `writer` writes at `at`.
    fn date(&mut self, writer: Writer, at: Instant) -> SystemTime {
        let reads = match writer {
            Writer::True => self.true_time(at),
            Writer::Slow => self.true_time(at) - SLOW_BY,
            Writer::Cache => self.cached.unwrap_or_else(|| self.true_time(at)),
        };
        let date = UNIX_EPOCH + Duration::from_secs(epoch_seconds(reads));
        self.cached.get_or_insert(date);
        date
    }
}

fn epoch_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// `answer`'s headers, written at `date` by its writer's clock.
fn write(answer: &Answer, date: SystemTime) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("date", httpdate::fmt_http_date(date).parse().unwrap());
    for (name, written) in &answer.headers {
        let value = match written {
            Written::Text(text) => text.clone(),
            Written::DateAfter(after) => httpdate::fmt_http_date(date + *after),
            Written::EpochAfter(after) => epoch_seconds(date + *after).to_string(),
        };
        headers.append(*name, value.parse().unwrap());
    }
    headers
}

/// One attempt the service received, and what it answered.
#[derive(Debug)]
struct Attempt {
    call: usize,
    arrived: Instant,
    answered: Instant,
    status: Option<u16>,
    headers: HeaderMap,
    /// When it was answered, by the client's wall clock (in step with backend A's). It is read
    /// only where an answer has no `Date`, and every answer here has one.
    received: SystemTime,
}

/// How one call ended.
#[derive(Debug)]
enum Outcome {
    Response(u16),
    /// `Throttled`, with the time it said is left; `after_response`: once a wait had begun,
    /// carrying the response it had.
    Throttled {
        retry_after: Duration,
        after_response: bool,
    },
    Failed,
}

/// When one call began and ended, and how.
#[derive(Debug)]
struct Call {
    started: Instant,
    ended: Instant,
    outcome: Outcome,
}

struct Shared {
    script: VecDeque<Answer>,
    attempts: Vec<Attempt>,
    call: usize,
    server: Server,
}

#[derive(Clone)]
struct Scripted(Arc<Mutex<Shared>>);

impl Service<Request<String>> for Scripted {
    type Response = Response<String>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<String>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<String>) -> Self::Future {
        let shared = self.0.clone();
        Box::pin(async move {
            let arrived = Instant::now();
            let answer = shared.lock().unwrap().script.pop_front();
            let answer = answer.unwrap_or_else(Answer::plain);
            tokio::time::sleep(answer.delay).await;
            let answered = Instant::now();
            let mut shared = shared.lock().unwrap();
            // Written as it is answered: the layer reads it the same instant.
            let headers = match answer.status {
                Some(_) => write(&answer, shared.server.date(answer.writer, answered)),
                // A transport error carries no headers.
                None => HeaderMap::new(),
            };
            let attempt = Attempt {
                call: shared.call,
                arrived,
                answered,
                status: answer.status,
                headers: headers.clone(),
                received: shared.server.true_time(answered),
            };
            shared.attempts.push(attempt);
            let status = answer.status.ok_or("connection reset by peer")?;
            let mut response = Response::builder().status(status).body(String::new())?;
            *response.headers_mut() = headers;
            Ok(response)
        })
    }
}

/// A `Retry-After` value, some sane, some not.
fn retry_after(byte: u8) -> Written {
    let text = match byte % 16 {
        0 => "0",
        1 => "1",
        2 => "2",
        3 => "5",
        4 => "30",
        5 => "61",
        6 => "1.5",
        7 => "-1",
        8 => "soon",
        9 => "99999999999999999999",
        10 => return Written::DateAfter(3 * SECOND),
        11 => "Fri, 31 Dec 9999 23:59:59 GMT",
        12 => return Written::DateAfter(SECOND),
        13 => return Written::DateAfter(3_600 * SECOND),
        // The default horizon, and a second beyond it.
        14 => "172800",
        _ => "172801",
    };
    Written::Text(text.into())
}

fn answer(bytes: &[u8]) -> Answer {
    let [status, flags, value, timing] = [bytes[0], bytes[1], bytes[2], bytes[3]];
    let status = match status % 12 {
        0..=2 => Some(429),
        3 => Some(200),
        4 => Some(500),
        5 => Some(502),
        6 => Some(503),
        7 => Some(504),
        8 => Some(408),
        9 => Some(400),
        10 => Some(520),
        _ => None,
    };
    let text = |text: String| Written::Text(text);
    let mut headers = Vec::new();
    if flags & 1 != 0 {
        headers.push(("retry-after", retry_after(value)));
    }
    if flags & 2 != 0 {
        headers.push(("retry-after-ms", text(format!("{}", u32::from(value) * 20))));
    }
    if flags & 4 != 0 {
        headers.push(("ratelimit-policy", text("\"q\";q=10;w=10".into())));
        headers.push((
            "ratelimit",
            text(format!("\"q\";r={};t={}", value % 4, value % 7)),
        ));
    }
    if flags & 8 != 0 {
        headers.push(("x-ratelimit-remaining", text(format!("{}", value % 3))));
        // Bit 64: the reset as an epoch instant in the writer's clock, else a countdown.
        let reset = if flags & 64 != 0 {
            let after = EPOCH_RESETS[usize::from(value / 3) % EPOCH_RESETS.len()];
            Written::EpochAfter(Duration::from_secs(after))
        } else {
            text(format!("{}", value % 90))
        };
        headers.push(("x-ratelimit-reset", reset));
    }
    if flags & 16 != 0 {
        let verdict = if value & 1 == 0 { "true" } else { "false" };
        headers.push(("x-should-retry", text(verdict.into())));
    }
    if flags & 32 != 0 {
        headers.push(("retry-after", retry_after(value.rotate_left(3))));
    }
    let delay = match timing & 7 {
        1 => Duration::from_millis(10),
        2 => Duration::from_millis(300),
        3 => SECOND,
        4 => 5 * SECOND,
        _ => Duration::ZERO,
    };
    let writer = match (timing >> 3) & 3 {
        2 => Writer::Slow,
        3 => Writer::Cache,
        _ => Writer::True,
    };
    Answer {
        status,
        headers,
        delay,
        writer,
    }
}

/// What a run is held to: its settings in force.
struct Terms {
    method: Method,
    cap: Duration,
    max_wait: Duration,
    horizon: Duration,
}

impl Terms {
    /// The longest a call waits at its gate: the cap, with the most spread an instruction of
    /// the cap's length gets.
    fn longest_wait(&self) -> Duration {
        with_spread(self.cap)
    }
}

/// The most an instructed wait of `wait` comes to: lifted to the floor, with its whole spread.
fn with_spread(wait: Duration) -> Duration {
    wait.max(FLOOR) + SPREAD.min(wait / 10)
}

/// The fuzz target: see the module's documentation.
pub fn layer(data: &[u8]) {
    let Some((&[run, phase, gaps], rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let method =
        [Method::GET, Method::POST, Method::PUT, Method::PATCH][usize::from(run % 4)].clone();
    let (cap_set, max_wait_set, cap, max_wait) = DURATIONS[usize::from(run >> 2) % 4];
    let calls = usize::from((run >> 4) % 4) + 1;
    let short_horizon = run & 64 != 0;
    let terms = Terms {
        method,
        cap,
        max_wait,
        horizon: if short_horizon {
            SHORT_HORIZON
        } else {
            DEFAULT_HORIZON
        },
    };
    let script: VecDeque<Answer> = rest.chunks_exact(4).take(64).map(answer).collect();

    let mut layer =
        RateLimitLayer::new().jitter_seed(u64::from_le_bytes([run, phase, gaps, 0, 0, 0, 0, 0]));
    if let Some(cap) = cap_set {
        layer = layer.retry_after_cap(Duration::from_secs(cap));
    }
    if let Some(max_wait) = max_wait_set {
        layer = layer.max_wait(Duration::from_secs(max_wait));
    }
    if short_horizon {
        layer = layer.retry_after_horizon(SHORT_HORIZON);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let (attempts, calls_made) = runtime.block_on(async {
        let shared = Arc::new(Mutex::new(Shared {
            script,
            attempts: Vec::new(),
            call: 0,
            server: Server {
                started: Instant::now(),
                phase: SECOND * u32::from(phase) / 256,
                cached: None,
            },
        }));
        let mut service = layer.layer(Scripted(shared.clone()));
        let mut calls_made = Vec::new();
        for call in 0..calls {
            if call > 0 {
                tokio::time::sleep(GAPS[usize::from(gaps >> (2 * (call - 1))) % 4]).await;
            }
            shared.lock().unwrap().call = call;
            let request = Request::builder()
                .method(terms.method.clone())
                .uri("http://api.example/resource")
                .body("{}".to_owned())
                .unwrap();
            let started = Instant::now();
            std::future::poll_fn(|cx| service.poll_ready(cx))
                .await
                .unwrap();
            let outcome = match service.call(request).await {
                Ok(response) => Outcome::Response(response.status().as_u16()),
                Err(error) => match error.downcast_ref::<Throttled>() {
                    Some(throttled) => Outcome::Throttled {
                        retry_after: throttled.retry_after(),
                        after_response: throttled.status().is_some(),
                    },
                    None => Outcome::Failed,
                },
            };
            calls_made.push(Call {
                started,
                ended: Instant::now(),
                outcome,
            });
        }
        let attempts = std::mem::take(&mut shared.lock().unwrap().attempts);
        (attempts, calls_made)
    });
    check(&attempts, &terms, &calls_made);
}

/// What one answer says of the waits it names, read from its headers alone.
///
/// A `Retry-After` date is read against the answer's own `Date` alone: the rule never lets an
/// instruction be read shorter, so that bound is exact. A spent meter's epoch reset the rule
/// lets the layer read up to `Date`'s second shorter (tightened by what earlier answers said of
/// the server's clock, within that second), so its least is read as if the answer's clock had
/// read the latest its `Date` allows, `Date` plus a second; a countdown does not move with
/// `Date`, so that reading is exact for it too. The harness knows each writer's true clock, but
/// does not check against it: where a backend's clock lags another's, that tightening is early
/// on the lagging clock by up to the second, which the rule allows.
#[derive(Debug)]
struct Reading {
    /// The least the answer's own call waits before a retry, and what the cap is weighed
    /// against: its `Retry-After` and the latest reset of a meter it says is spent.
    instruction: Option<Duration>,
    /// The least it holds every later attempt for: a 429's `Retry-After` and the resets of the
    /// meters it says are spent, those within the horizon.
    holds_at_least: Duration,
    /// The most it may hold later calls for: the same read loosest, with the whole spread.
    holds_at_most: Duration,
    /// The same without the spread: the most the server may have instructed. A later call
    /// whose cap this exceeds is turned away, however little spread its closure drew.
    instructed_at_most: Duration,
    /// A 429 whose one instruction lies beyond the horizon, with no meter: it closes nothing,
    /// not even for the guess a 429 without an instruction gets.
    absurd_refusal: bool,
}

fn read(attempt: &Attempt, horizon: Duration) -> Reading {
    let own = RateLimitInfo::from_headers(&attempt.headers, attempt.received);
    let latest =
        RateLimitInfo::from_headers(&date_a_second_later(&attempt.headers), attempt.received);
    let spent = |info: &RateLimitInfo| {
        let resets = info.meters().iter().filter(|meter| meter.is_exhausted());
        resets.filter_map(Meter::reset_in).collect::<Vec<_>>()
    };
    let retry_after = own.retry_after();
    let window = retry_after.filter(|_| attempt.status == Some(429));
    let least_spent = spent(&latest);
    // The layer's reading lies within a second above the least: a reset that far inside the
    // horizon is remembered however the layer read it.
    let remembered = least_spent
        .iter()
        .copied()
        .filter(|reset| *reset + DATE_RESOLUTION <= horizon);
    let holds_at_least = window
        .filter(|wait| *wait <= horizon)
        .into_iter()
        .chain(remembered);
    let holds_at_most = window
        .into_iter()
        .chain(spent(&own))
        .filter(|wait| *wait <= horizon);
    let instructed_at_most = holds_at_most.max();
    Reading {
        instruction: retry_after.max(least_spent.iter().copied().max()),
        holds_at_least: holds_at_least.max().unwrap_or_default(),
        holds_at_most: instructed_at_most.map_or(Duration::ZERO, with_spread),
        instructed_at_most: instructed_at_most.unwrap_or_default(),
        absurd_refusal: attempt.status == Some(429)
            && own.meters().is_empty()
            && retry_after.is_some_and(|wait| wait > horizon),
    }
}

/// `headers` with their `Date` a second later.
fn date_a_second_later(headers: &HeaderMap) -> HeaderMap {
    let mut later = headers.clone();
    let date = headers["date"].to_str().unwrap();
    let date = httpdate::parse_http_date(date).unwrap() + DATE_RESOLUTION;
    later.insert("date", httpdate::fmt_http_date(date).parse().unwrap());
    later
}

fn check(attempts: &[Attempt], terms: &Terms, calls: &[Call]) {
    let readings: Vec<Option<Reading>> = attempts
        .iter()
        .map(|attempt| attempt.status.map(|_| read(attempt, terms.horizon)))
        .collect();
    for (index, (attempt, reading)) in attempts.iter().zip(&readings).enumerate() {
        let later = &attempts[index + 1..];
        let retry = later.first().filter(|next| next.call == attempt.call);
        let Some(reading) = reading else {
            if let Some(retry) = retry {
                assert!(
                    retry.arrived >= attempt.answered + FLOOR,
                    "back to back: {attempts:#?}"
                );
            }
            continue;
        };
        // What the answer holds, it holds for every later attempt, of any call.
        for next in later {
            assert!(
                next.arrived >= attempt.answered + reading.holds_at_least,
                "sent {:?} into a window of {:?}: {attempts:#?}",
                next.arrived - attempt.answered,
                reading.holds_at_least,
            );
        }
        // An instruction over the cap ends its call at once, with that response.
        if reading.instruction.is_some_and(|wait| wait > terms.cap) {
            let call = &calls[attempt.call];
            assert!(retry.is_none(), "retried after {reading:?}: {attempts:#?}");
            assert_eq!(call.ended, attempt.answered, "{attempts:#?}");
            assert!(
                matches!(call.outcome, Outcome::Response(status) if Some(status) == attempt.status),
                "{call:?} after {reading:?}: {attempts:#?}"
            );
        }
        let Some(retry) = retry else {
            continue;
        };
        let least = reading.instruction.unwrap_or_default().max(FLOOR);
        assert!(
            retry.arrived >= attempt.answered + least,
            "retried {:?} after an answer, at least {least:?} owed: {attempts:#?}",
            retry.arrived - attempt.answered
        );
        let verdict = attempt.headers.get("x-should-retry");
        assert!(
            verdict.is_none_or(|verdict| verdict != "false"),
            "retried though the server said not to: {attempts:#?}"
        );
        if matches!(terms.method, Method::POST | Method::PATCH) {
            let allowed = attempt.status == Some(429) || verdict.is_some_and(|v| v == "true");
            assert!(
                allowed,
                "a {} sent again after {attempt:?}: {attempts:#?}",
                terms.method
            );
        }
    }
    for (index, call) in calls.iter().enumerate() {
        check_call(index, call, attempts, &readings, terms);
    }
}

/// Whether call `index` was held at its start as what was answered before it says, and kept to
/// its budget and counts.
fn check_call(
    index: usize,
    call: &Call,
    attempts: &[Attempt],
    readings: &[Option<Reading>],
    terms: &Terms,
) {
    let mine: Vec<&Attempt> = attempts.iter().filter(|a| a.call == index).collect();
    // How long the answers before the call still hold it, at least and at most.
    let earlier = attempts
        .iter()
        .zip(readings)
        .filter(|(attempt, _)| attempt.call < index)
        .filter_map(|(attempt, reading)| Some((attempt.answered, reading.as_ref()?)));
    let left = |hold: fn(&Reading) -> Duration| {
        earlier
            .clone()
            .map(|(answered, reading)| {
                (answered + hold(reading)).saturating_duration_since(call.started)
            })
            .max()
            .unwrap_or_default()
    };
    let (at_least, at_most) = (left(|r| r.holds_at_least), left(|r| r.holds_at_most));
    let instructed = left(|r| r.instructed_at_most);
    let turned_away = match call.outcome {
        Outcome::Throttled {
            retry_after,
            after_response: false,
        } if mine.is_empty() && call.ended == call.started => Some(retry_after),
        _ => None,
    };
    if at_least > terms.longest_wait() {
        let told = turned_away.unwrap_or_else(|| {
            panic!("call {index} not turned away, held {at_least:?}: {call:?} {attempts:#?}")
        });
        assert!(
            told >= at_least,
            "told {told:?} of {at_least:?}: {attempts:#?}"
        );
    }
    // After nothing but such refusals (and transport errors, which say nothing), nothing holds
    // the call: it goes at once. Before any answer was accepted, nothing is learned either.
    let absurd_only = attempts
        .iter()
        .zip(readings)
        .filter(|(attempt, _)| attempt.call < index)
        .all(|(_, reading)| reading.as_ref().is_none_or(|r| r.absurd_refusal));
    if index > 0 && absurd_only {
        assert!(
            mine.first()
                .is_some_and(|first| first.arrived == call.started),
            "call {index} held after refusals beyond the horizon: {call:?} {attempts:#?}"
        );
    }
    if mine.is_empty() {
        let told = turned_away
            .unwrap_or_else(|| panic!("call {index} sent nothing: {call:?} {attempts:#?}"));
        // Turned away by a closure longer than it may wait, or by an instruction over its cap.
        let beyond = at_most > terms.longest_wait() || instructed > terms.cap;
        assert!(
            beyond && told <= at_most,
            "call {index} turned away for {told:?}, held at most {at_most:?}: {attempts:#?}"
        );
    }
    let answering: Duration = mine.iter().map(|a| a.answered - a.arrived).sum();
    let timer = Duration::from_millis(mine.len() as u64 + 1);
    let took = call.ended - call.started;
    assert!(
        took <= terms.max_wait + answering + timer,
        "call {index} took {took:?}: {attempts:#?}"
    );
    assert!(mine.len() as u32 <= 1 + TRANSIENT_RETRIES + RATE_LIMITED_RETRIES);
}
