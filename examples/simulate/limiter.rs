//! The limiters the simulation runs against, on tokio's clock: each answers at once, and logs
//! every request with the time it arrived and the status it got.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use tokio::time::Instant;
use tower::BoxError;

/// A rate limiter's algorithm and the headers it sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// `limit` per `window`, windows aligned to the clock; a 429 says `Retry-After` = the
    /// whole window (Rack::Attack's style).
    FixedWindowWholePeriod,
    /// `limit` per `window`, each window opening at the first request after the last; a 429
    /// says `Retry-After` = the whole seconds left (express-rate-limit's memory store), with
    /// the draft 08 meters on every response.
    FixedWindowRemaining,
    /// A token bucket: `limit` tokens, refilled at `limit / window`; a 429 says `Retry-After`
    /// = the whole seconds until the next token (rounded up).
    TokenBucket,
    /// GitHub's style: `limit` per `window`, `x-ratelimit-remaining` and an epoch
    /// `x-ratelimit-reset` on every response, a 429 with no `Retry-After`.
    EpochReset,
}

impl Model {
    pub const ALL: [Model; 4] = [
        Model::FixedWindowWholePeriod,
        Model::FixedWindowRemaining,
        Model::TokenBucket,
        Model::EpochReset,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Model::FixedWindowWholePeriod => "fixed window, Retry-After = period",
            Model::FixedWindowRemaining => "fixed window, Retry-After = time left, draft 08",
            Model::TokenBucket => "token bucket, Retry-After = next token",
            Model::EpochReset => "GitHub-style epoch reset, no Retry-After",
        }
    }
}

/// The simulated wall clock's start, for epoch resets and `Date`: Tue, 14 Nov 2023 22:13:20 GMT.
const EPOCH_START: u64 = 1_700_000_000;

#[derive(Clone)]
pub struct Limiter {
    state: Arc<Mutex<State>>,
}

struct State {
    model: Model,
    limit: u32,
    window: Duration,
    start: Instant,
    window_start: Option<Instant>,
    used: u32,
    tokens: f64,
    refilled: Instant,
    log: Vec<(Duration, bool)>,
}

impl Limiter {
    pub fn new(model: Model, limit: u32, window: Duration) -> Self {
        let now = Instant::now();
        Limiter {
            state: Arc::new(Mutex::new(State {
                model,
                limit,
                window,
                start: now,
                window_start: None,
                used: 0,
                tokens: f64::from(limit),
                refilled: now,
                log: Vec::new(),
            })),
        }
    }

    /// Every request: when it arrived (from the start) and whether it was accepted.
    pub fn log(&self) -> Vec<(Duration, bool)> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn answer(&self) -> Response<String> {
        let mut state = self.state.lock().unwrap();
        let now = Instant::now();
        let (accepted, headers) = state.decide(now);
        let since_start = now - state.start;
        state.log.push((since_start, accepted));
        let mut response = Response::builder().status(if accepted {
            StatusCode::OK
        } else {
            StatusCode::TOO_MANY_REQUESTS
        });
        for (name, value) in headers {
            response = response.header(name, value);
        }
        response.body(String::new()).unwrap()
    }
}

fn whole_seconds(duration: Duration) -> u64 {
    duration.as_nanos().div_ceil(1_000_000_000) as u64
}

impl State {
    fn decide(&mut self, now: Instant) -> (bool, Vec<(&'static str, String)>) {
        let since_start = now - self.start;
        match self.model {
            Model::FixedWindowWholePeriod => {
                let index = since_start.as_nanos() / self.window.as_nanos();
                let start = self.start + self.window * index as u32;
                self.count_in(start);
                let accepted = self.used <= self.limit;
                let headers = if accepted {
                    vec![]
                } else {
                    vec![("retry-after", self.window.as_secs().to_string())]
                };
                (accepted, headers)
            }
            Model::FixedWindowRemaining => {
                let start = match self.window_start {
                    Some(start) if now < start + self.window => start,
                    _ => now,
                };
                self.count_in(start);
                let left = whole_seconds(start + self.window - now).max(1);
                let accepted = self.used <= self.limit;
                let remaining = self.limit.saturating_sub(self.used);
                let mut headers = vec![
                    (
                        "ratelimit-policy",
                        format!("\"w\";q={};w={}", self.limit, self.window.as_secs()),
                    ),
                    ("ratelimit", format!("\"w\";r={remaining};t={left}")),
                ];
                if !accepted {
                    headers.push(("retry-after", left.to_string()));
                }
                (accepted, headers)
            }
            Model::TokenBucket => {
                let rate = f64::from(self.limit) / self.window.as_secs_f64();
                let elapsed = (now - self.refilled).as_secs_f64();
                self.tokens = (self.tokens + elapsed * rate).min(f64::from(self.limit));
                self.refilled = now;
                if self.tokens >= 1.0 {
                    self.tokens -= 1.0;
                    (true, vec![])
                } else {
                    let wait = Duration::from_secs_f64((1.0 - self.tokens) / rate);
                    (
                        false,
                        vec![("retry-after", whole_seconds(wait).max(1).to_string())],
                    )
                }
            }
            Model::EpochReset => {
                let index = since_start.as_nanos() / self.window.as_nanos();
                let start = self.start + self.window * index as u32;
                self.count_in(start);
                let accepted = self.used <= self.limit;
                let reset = EPOCH_START + whole_seconds(start + self.window - self.start);
                let wall = EPOCH_START + since_start.as_secs();
                let date = std::time::UNIX_EPOCH + Duration::from_secs(wall);
                let headers = vec![
                    ("x-ratelimit-limit", self.limit.to_string()),
                    (
                        "x-ratelimit-remaining",
                        self.limit.saturating_sub(self.used).to_string(),
                    ),
                    ("x-ratelimit-reset", reset.to_string()),
                    ("date", httpdate::fmt_http_date(date)),
                ];
                (accepted, headers)
            }
        }
    }

    /// Counts a request in the window that started at `start`.
    fn count_in(&mut self, start: Instant) {
        if self.window_start != Some(start) {
            self.window_start = Some(start);
            self.used = 0;
        }
        self.used += 1;
    }
}

impl tower::Service<Request<String>> for Limiter {
    type Response = Response<String>;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Response<String>, BoxError>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<String>) -> Self::Future {
        std::future::ready(Ok(self.answer()))
    }
}
