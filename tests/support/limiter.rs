//! A simulated rate limiter: a tower service that answers at once, on tokio's clock, and
//! records every request it received with the status it gave. Shared by the gate tests and
//! the gate benchmark.

#![allow(dead_code)] // each user takes the part it needs

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use tokio::time::Instant;
use tower::{BoxError, Service};

/// What the limiter sends beside its verdict.
#[derive(Clone, Copy, PartialEq)]
pub enum Headers {
    /// `Retry-After` on a 429, nothing else.
    RetryAfter,
    /// `Retry-After` on a 429, and the draft 08 pair on every response.
    Draft8,
}

/// How the limiter decides.
#[derive(Clone, Copy)]
pub enum Model {
    /// Refuses everything until `until`, then accepts everything.
    ClosedUntil(Instant),
    /// `limit` requests per `window`, the window opening at its first request.
    FixedWindow { limit: u32, window: Duration },
}

#[derive(Clone)]
pub struct Limiter {
    state: Arc<Mutex<LimiterState>>,
    latency: Duration,
}

struct LimiterState {
    model: Model,
    headers: Headers,
    window_start: Option<Instant>,
    used: u32,
    /// Every request: when it arrived and the status it got.
    log: Vec<(Instant, u16)>,
    /// Scripted answers, used before the model: status and headers.
    script: Vec<(u16, Vec<(&'static str, String)>)>,
}

impl Limiter {
    pub fn new(model: Model, headers: Headers) -> Self {
        Limiter {
            state: Arc::new(Mutex::new(LimiterState {
                model,
                headers,
                window_start: None,
                used: 0,
                log: Vec::new(),
                script: Vec::new(),
            })),
            latency: Duration::ZERO,
        }
    }

    /// Answers each request this long after it arrives (decided when it arrives).
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Answers these first, in order, before the model decides.
    pub fn scripted(self, answers: Vec<(u16, Vec<(&'static str, String)>)>) -> Self {
        self.state.lock().unwrap().script = answers.into_iter().rev().collect();
        self
    }

    pub fn log(&self) -> Vec<(Instant, u16)> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn refused(&self) -> usize {
        self.log()
            .iter()
            .filter(|(_, status)| *status == 429)
            .count()
    }

    fn answer(&self) -> Response<String> {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap();
        let (status, mut headers) = match state.script.pop() {
            Some(scripted) => scripted,
            None => state.decide(now),
        };
        if state.headers == Headers::Draft8 && status != 200 && headers.is_empty() {
            headers = state.meters(now, 0);
        }
        state.log.push((now, status));
        let mut response = Response::builder().status(status);
        for (name, value) in headers {
            response = response.header(name, value);
        }
        response.body(String::new()).unwrap()
    }
}

impl LimiterState {
    fn decide(&mut self, now: Instant) -> (u16, Vec<(&'static str, String)>) {
        match self.model {
            Model::ClosedUntil(until) if now < until => (429, retry_after(until - now)),
            Model::ClosedUntil(_) => (200, vec![]),
            Model::FixedWindow { limit, window } => {
                let start = match self.window_start {
                    Some(start) if now < start + window => start,
                    _ => {
                        self.used = 0;
                        *self.window_start.insert(now)
                    }
                };
                let left = start + window - now;
                if self.used < limit {
                    self.used += 1;
                    let remaining = u64::from(limit - self.used);
                    let headers = match self.headers {
                        Headers::Draft8 => self.meters(now, remaining),
                        Headers::RetryAfter => vec![],
                    };
                    (200, headers)
                } else {
                    let mut headers = retry_after(left);
                    if self.headers == Headers::Draft8 {
                        headers.extend(self.meters(now, 0));
                    }
                    (429, headers)
                }
            }
        }
    }

    fn meters(&self, now: Instant, remaining: u64) -> Vec<(&'static str, String)> {
        let Model::FixedWindow { limit, window } = self.model else {
            return vec![];
        };
        let left = self
            .window_start
            .map_or(window, |start| start + window - now);
        vec![
            (
                "ratelimit-policy",
                format!("\"w\";q={limit};w={}", window.as_secs()),
            ),
            (
                "ratelimit",
                format!("\"w\";r={remaining};t={}", ceil_seconds(left)),
            ),
        ]
    }
}

fn ceil_seconds(duration: Duration) -> u64 {
    duration.as_millis().div_ceil(1000) as u64
}

pub fn retry_after(left: Duration) -> Vec<(&'static str, String)> {
    vec![("retry-after", ceil_seconds(left).max(1).to_string())]
}

impl Service<Request<String>> for Limiter {
    type Response = Response<String>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<String>, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<String>) -> Self::Future {
        let (answer, latency) = (self.answer(), self.latency);
        Box::pin(async move {
            tokio::time::sleep(latency).await;
            Ok(answer)
        })
    }
}
