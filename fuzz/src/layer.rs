//! The whole layer on a paused clock, against a service that answers from a fuzzer-chosen
//! script: statuses, rate-limit headers, delays and transport errors, over up to three calls
//! in a row on one layer (so a window one call met holds the next).
//!
//! An input is read byte by byte. The first chooses the method and the settings; then every
//! four bytes make one scripted answer: status, headers, a value, a delay. Answers beyond the
//! script are a plain 200.
//!
//! Checked for every input:
//! - no attempt reaches the service inside a window a 429 named (its instruction, when within
//!   the cap), nor before the reset of a meter a response reported spent (within the cap);
//! - a retry never follows its answer back to back: at least the backoff's floor, and at least
//!   the answer's own instruction;
//! - a POST or PATCH goes again only after a 429, or an answer that said
//!   `x-should-retry: true`; nothing goes again after `x-should-retry: false`;
//! - an instruction over the cap ends its call at once;
//! - no call waits beyond `max_wait` (plus the time its answers took, and a millisecond a wait
//!   for the timer), nor makes more attempts than its counts allow;
//! - nothing panics.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use http::{HeaderMap, Method, Request, Response};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_retry_after::{BoxError, RateLimitInfo, RateLimitLayer};
use tower_service::Service;

/// Stands for an HTTP-date three seconds after the answer's own `Date`, written when the
/// answer is: the instruction is then exactly 3 s whatever the wall clock reads.
const THREE_SECONDS_AFTER_DATE: &str = "<date + 3 s>";

/// The least a guessed wait can be: half the default 500 ms base.
const FLOOR: Duration = Duration::from_millis(250);
const TRANSIENT_RETRIES: u32 = 3;
const RATE_LIMITED_RETRIES: u32 = 10;

/// One scripted answer.
#[derive(Clone, Debug)]
struct Answer {
    /// `None`: a transport error.
    status: Option<u16>,
    headers: Vec<(&'static str, String)>,
    delay: Duration,
}

/// One attempt the service received, and what it answered.
#[derive(Debug)]
struct Attempt {
    call: usize,
    arrived: Instant,
    answered: Instant,
    status: Option<u16>,
    headers: HeaderMap,
    /// When it was answered, by the wall clock the layer reads dates against.
    received: SystemTime,
}

/// When one call began and ended.
struct Call {
    started: Instant,
    ended: Instant,
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Answer>,
    attempts: Vec<Attempt>,
    call: usize,
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
            let answer = shared.lock().unwrap().script.pop_front().unwrap_or(Answer {
                status: Some(200),
                headers: Vec::new(),
                delay: Duration::ZERO,
            });
            tokio::time::sleep(answer.delay).await;
            // A transport error carries no headers. The server's clock runs a second ahead of
            // the client's, so a response never looks older than it is (its `Date` is whole
            // seconds): countdowns read the same here and in the layer, whenever it reads them.
            let mut headers = HeaderMap::new();
            let received = SystemTime::now();
            let date = received + Duration::from_secs(1);
            if answer.status.is_some() {
                headers.insert("date", httpdate::fmt_http_date(date).parse().unwrap());
                for (name, value) in &answer.headers {
                    let value = match value.as_str() {
                        THREE_SECONDS_AFTER_DATE => {
                            httpdate::fmt_http_date(date + Duration::from_secs(3))
                        }
                        value => value.to_owned(),
                    };
                    headers.append(*name, value.parse().unwrap());
                }
            }
            let mut shared = shared.lock().unwrap();
            let call = shared.call;
            shared.attempts.push(Attempt {
                call,
                arrived,
                answered: Instant::now(),
                status: answer.status,
                headers: headers.clone(),
                received,
            });
            let status = answer.status.ok_or("connection reset by peer")?;
            let mut response = Response::builder().status(status).body(String::new())?;
            *response.headers_mut() = headers;
            Ok(response)
        })
    }
}

/// A `Retry-After` value, some sane, some not.
fn retry_after(byte: u8) -> String {
    match byte % 12 {
        0 => "0".into(),
        1 => "1".into(),
        2 => "2".into(),
        3 => "5".into(),
        4 => "30".into(),
        5 => "61".into(),
        6 => "1.5".into(),
        7 => "-1".into(),
        8 => "soon".into(),
        9 => "99999999999999999999".into(),
        10 => THREE_SECONDS_AFTER_DATE.into(),
        _ => "Fri, 31 Dec 9999 23:59:59 GMT".into(),
    }
}

fn answer(bytes: &[u8]) -> Answer {
    let [status, flags, value, delay] = [bytes[0], bytes[1], bytes[2], bytes[3]];
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
    let mut headers = Vec::new();
    if flags & 1 != 0 {
        headers.push(("retry-after", retry_after(value)));
    }
    if flags & 2 != 0 {
        headers.push(("retry-after-ms", format!("{}", u32::from(value) * 20)));
    }
    if flags & 4 != 0 {
        headers.push(("ratelimit-policy", "\"q\";q=10;w=10".into()));
        headers.push((
            "ratelimit",
            format!("\"q\";r={};t={}", value % 4, value % 7),
        ));
    }
    if flags & 8 != 0 {
        headers.push(("x-ratelimit-remaining", format!("{}", value % 3)));
        headers.push(("x-ratelimit-reset", format!("{}", value % 90)));
    }
    if flags & 16 != 0 {
        let verdict = if value & 1 == 0 { "true" } else { "false" };
        headers.push(("x-should-retry", verdict.into()));
    }
    if flags & 32 != 0 {
        headers.push(("retry-after", retry_after(value.rotate_left(3))));
    }
    let delay = match delay % 5 {
        0 | 1 => Duration::ZERO,
        2 => Duration::from_millis(10),
        3 => Duration::from_secs(1),
        _ => Duration::from_secs(5),
    };
    Answer {
        status,
        headers,
        delay,
    }
}

/// The fuzz target: see the module's documentation.
pub fn layer(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let method =
        [Method::GET, Method::POST, Method::PUT, Method::PATCH][usize::from(first % 4)].clone();
    let (cap, max_wait) = match (first >> 2) % 3 {
        0 => (Duration::from_secs(60), Duration::from_secs(120)),
        1 => (Duration::from_secs(3), Duration::from_secs(6)),
        _ => (Duration::from_secs(10), Duration::from_secs(60)),
    };
    let calls = usize::from((first >> 4) % 3) + 1;
    let script: VecDeque<Answer> = rest.chunks_exact(4).take(64).map(answer).collect();

    let shared = Arc::new(Mutex::new(Shared {
        script,
        ..Shared::default()
    }));
    let mut service = RateLimitLayer::new()
        .retry_after_cap(cap)
        .max_wait(max_wait)
        .jitter_seed(u64::from(first))
        .layer(Scripted(shared.clone()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let mut calls_made = Vec::new();
    runtime.block_on(async {
        for call in 0..calls {
            shared.lock().unwrap().call = call;
            let request = Request::builder()
                .method(method.clone())
                .uri("http://api.example/resource")
                .body("{}".to_owned())
                .unwrap();
            let started = Instant::now();
            std::future::poll_fn(|cx| service.poll_ready(cx))
                .await
                .unwrap();
            let _ = service.call(request).await;
            calls_made.push(Call {
                started,
                ended: Instant::now(),
            });
        }
    });
    let shared = shared.lock().unwrap();
    check(&shared.attempts, &method, cap, max_wait, &calls_made);
}

fn check(attempts: &[Attempt], method: &Method, cap: Duration, max_wait: Duration, calls: &[Call]) {
    let idempotent = !matches!(*method, Method::POST | Method::PATCH);
    for (index, attempt) in attempts.iter().enumerate() {
        let info = RateLimitInfo::from_headers(&attempt.headers, attempt.received);
        let instructed = info.instructed_wait();
        let instruction = instructed.filter(|wait| *wait <= cap);
        let later = &attempts[index + 1..];
        // A 429's window holds every later attempt, of any call.
        if attempt.status == Some(429) {
            if let Some(window) = instruction {
                for next in later {
                    assert!(
                        next.arrived >= attempt.answered + window,
                        "sent {:?} into a {window:?} window: {attempts:#?}",
                        next.arrived - attempt.answered
                    );
                }
            }
        }
        // A spent meter holds every later attempt until its reset.
        if attempt.status.is_some() {
            for meter in info.meters().iter().filter(|meter| meter.is_exhausted()) {
                let Some(reset) = meter.reset_in().filter(|reset| *reset <= cap) else {
                    continue;
                };
                for next in later {
                    assert!(
                        next.arrived >= attempt.answered + reset,
                        "sent {:?} into a spent window of {reset:?}: {attempts:#?}",
                        next.arrived - attempt.answered
                    );
                }
            }
        }
        let retry = later.first().filter(|next| next.call == attempt.call);
        // A wait over the cap ends the call at once, whatever the answer.
        if instructed.is_some_and(|wait| wait > cap) {
            assert!(
                retry.is_none(),
                "retried after {instructed:?}: {attempts:#?}"
            );
            assert_eq!(calls[attempt.call].ended, attempt.answered, "{attempts:#?}");
        }
        let Some(retry) = retry else {
            continue;
        };
        let least = instruction.unwrap_or_default().max(FLOOR);
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
        if !idempotent {
            let allowed = attempt.status == Some(429) || verdict.is_some_and(|v| v == "true");
            assert!(
                allowed,
                "a {method} sent again after {attempt:?}: {attempts:#?}"
            );
        }
    }
    for (index, call) in calls.iter().enumerate() {
        let mine: Vec<&Attempt> = attempts.iter().filter(|a| a.call == index).collect();
        let answering: Duration = mine.iter().map(|a| a.answered - a.arrived).sum();
        let timer = Duration::from_millis(mine.len() as u64 + 1);
        let took = call.ended - call.started;
        assert!(
            took <= max_wait + answering + timer,
            "call {index} took {took:?}: {attempts:#?}"
        );
        assert!(mine.len() as u32 <= 1 + TRANSIENT_RETRIES + RATE_LIMITED_RETRIES);
    }
}
