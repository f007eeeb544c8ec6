//! The rate limiter that the demo serves over loopback and the simulator serves over its
//! simulated network: one client's quota, counted by one of eight algorithms (the shapes real
//! limiters come in) and told with one of six header styles. It reads no clock: each answer is given the server's wall clock (the
//! system's in the demo, a simulated one in the simulator), so both run the very same limiter.
//!
//! Every figure a header carries is in whole seconds, rounded the way real servers round:
//! countdowns up (a server that rounded them down would ask for retries inside its window),
//! `Date` down (as HTTP dates are).

use std::collections::VecDeque;
use std::time::{Duration, UNIX_EPOCH};

use http::{Response, StatusCode};

/// How the limiter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// `limit` per `window`, a window opening at the first request after the last one ended
    /// (express-rate-limit's memory store). Refused requests count too.
    FirstRequest,
    /// `limit` per `window`, windows aligned to the clock (Rack::Attack). Refused requests
    /// count too.
    Aligned,
    /// A bucket of `limit` tokens, full at the start, refilled at `limit` per `window`; a
    /// refused request takes no token.
    TokenBucket,
    /// At most `limit` accepted requests in any span of `window` (a log of the accepted ones:
    /// counting refused ones would lock out a client that keeps asking).
    Sliding,
    /// A sliding counter that counts refused requests too (the two-window estimate of
    /// Cloudflare's and many Redis recipes': the last window's count, weighted by how much of
    /// it the span still covers, plus this window's): a client that keeps asking keeps itself
    /// locked out.
    SlidingCounter,
    /// A leaky bucket without burst (nginx's `limit_req` with no `burst`): one request per
    /// `window / limit`, a request sooner than that after the last accepted one is refused.
    Leaky,
    /// Fixed windows opening at the first request, whose limit changes: `limit` for the first
    /// [`PHASE`] windows (or as many as [`Limiter::phases`] says), a quarter of it for as many
    /// more, then twice it.
    Changing,
    /// At most a quarter of `limit` (at least one) requests in flight at the server, whatever
    /// the rate: a request arriving while that many are being served is refused.
    InFlight,
}

/// How many windows each limit of [`Algorithm::Changing`] lasts, unless told otherwise.
pub const PHASE: u32 = 5;

impl Algorithm {
    pub const ALL: [Algorithm; 8] = [
        Algorithm::FirstRequest,
        Algorithm::Aligned,
        Algorithm::TokenBucket,
        Algorithm::Sliding,
        Algorithm::SlidingCounter,
        Algorithm::Leaky,
        Algorithm::Changing,
        Algorithm::InFlight,
    ];

    /// Its name on the command line.
    pub fn flag(self) -> &'static str {
        match self {
            Algorithm::FirstRequest => "first-request",
            Algorithm::Aligned => "aligned",
            Algorithm::TokenBucket => "token-bucket",
            Algorithm::Sliding => "sliding",
            Algorithm::SlidingCounter => "sliding-counter",
            Algorithm::Leaky => "leaky",
            Algorithm::Changing => "changing",
            Algorithm::InFlight => "in-flight",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Algorithm::FirstRequest => "fixed windows opening at the client's first request",
            Algorithm::Aligned => "fixed windows aligned to the clock",
            Algorithm::TokenBucket => "a token bucket",
            Algorithm::Sliding => "a sliding window log",
            Algorithm::SlidingCounter => "a sliding counter that counts refused requests",
            Algorithm::Leaky => "a leaky bucket without burst",
            Algorithm::Changing => "fixed windows whose limit changes (L, L/4, 2L)",
            Algorithm::InFlight => "a cap on requests in flight (L/4)",
        }
    }
}

/// What the limiter tells its client. Every style but `None` sends `Retry-After` on a 429.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Headers {
    /// `RateLimit-Policy` and `RateLimit` (IETF draft 08 and later): `"default";r=R;t=T`.
    Draft8,
    /// `RateLimit-Policy`, `RateLimit-Limit`, `-Remaining`, `-Reset` (IETF drafts up to 06).
    Draft6,
    /// `X-RateLimit-Limit`, `-Remaining`, and `-Reset` as a countdown.
    XRateLimit,
    /// `X-RateLimit-Limit`, `-Remaining`, and `-Reset` as the epoch second when it resets,
    /// with a `Date` on every response (GitHub's style).
    XRateLimitEpoch,
    /// `Retry-After` on a 429, nothing else.
    RetryAfter,
    /// A bare 429.
    None,
}

impl Headers {
    pub const ALL: [Headers; 6] = [
        Headers::Draft8,
        Headers::Draft6,
        Headers::XRateLimit,
        Headers::XRateLimitEpoch,
        Headers::RetryAfter,
        Headers::None,
    ];

    /// Its name on the command line.
    pub fn flag(self) -> &'static str {
        match self {
            Headers::Draft8 => "draft-8",
            Headers::Draft6 => "draft-6",
            Headers::XRateLimit => "x-ratelimit",
            Headers::XRateLimitEpoch => "x-ratelimit-epoch",
            Headers::RetryAfter => "retry-after",
            Headers::None => "none",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Headers::Draft8 => "draft 08 meters",
            Headers::Draft6 => "draft 06 meters",
            Headers::XRateLimit => "`X-RateLimit-*` with a delta reset",
            Headers::XRateLimitEpoch => "`X-RateLimit-*` with an epoch reset and `Date`",
            Headers::RetryAfter => "`Retry-After` only",
            Headers::None => "nothing",
        }
    }
}

/// What the count says about one request.
struct Verdict {
    accepted: bool,
    /// The limit in force, as the meters publish it: a limit that changes says so.
    limit: u32,
    /// Requests the client may still make now.
    remaining: u32,
    /// Until the whole quota is back: the window's end; for a token bucket, until it is full;
    /// for a sliding window, until the last counted request leaves the span. Whole quota, not
    /// one more request, because a meter says "`remaining` now, the full limit after the
    /// reset": a reset at the next token would promise a full quota that is not there.
    reset: Duration,
    /// On a refusal, until a request would be accepted.
    retry_after: Duration,
}

/// One client's quota.
#[derive(Clone)]
pub struct Limiter {
    algorithm: Algorithm,
    headers: Headers,
    limit: u32,
    window: Duration,
    /// The wall clock (since the Unix epoch) when the limiter was made.
    start: Duration,
    /// The latest the wall clock read: a clock stepped back reads as this.
    latest: Duration,
    /// Fixed windows: the current one's start, and the requests counted in it.
    window_start: Option<Duration>,
    used: u32,
    /// Token bucket, in exact integers: a token is `window` nanoseconds' worth of units, and
    /// `limit` units flow in each nanosecond, so `limit` tokens come back per `window`.
    level: u128,
    refilled: Duration,
    /// Sliding window: when each accepted request still in the span arrived.
    accepted: VecDeque<Duration>,
    /// Sliding counter: the window before the current one's count (the current one's is
    /// `used`, from `window_start`).
    previous: u32,
    /// Leaky bucket: when the next request may be accepted.
    next_slot: Duration,
    /// Requests in flight: accepted and not yet finished.
    serving: u32,
    /// How long the server takes on average to serve a request it accepted.
    hold: Duration,
    /// How many windows each limit of [`Algorithm::Changing`] lasts.
    phase: u32,
    /// Every request: when it arrived (since `start`) and whether it was accepted.
    log: Vec<(Duration, bool)>,
}

impl Limiter {
    /// A limiter of `limit` requests per `window` (whole seconds: every header speaks whole
    /// seconds), made at `now` on the server's wall clock.
    pub fn new(
        algorithm: Algorithm,
        headers: Headers,
        limit: u32,
        window: Duration,
        now: Duration,
    ) -> Self {
        assert!(limit > 0 && !window.is_zero() && window.subsec_nanos() == 0);
        Limiter {
            algorithm,
            headers,
            limit,
            window,
            start: now,
            latest: now,
            window_start: None,
            used: 0,
            level: u128::from(limit) * window.as_nanos(),
            refilled: now,
            accepted: VecDeque::new(),
            previous: 0,
            next_slot: now,
            serving: 0,
            hold: Duration::ZERO,
            phase: PHASE,
            log: Vec::new(),
        }
    }

    /// The same limiter, told that serving a request takes `hold` on average (from its
    /// verdict to its [`finished`](Self::finished)): what bounds a cap on requests in flight.
    pub fn holding(self, hold: Duration) -> Self {
        Limiter { hold, ..self }
    }

    /// The same limiter, each limit of [`Algorithm::Changing`] lasting `windows` windows: a
    /// drop the law must follow down and a rise it must find, as short or as long as asked.
    pub fn phases(self, windows: u32) -> Self {
        assert!(windows > 0);
        Limiter {
            phase: windows,
            ..self
        }
    }

    /// A request this limiter accepted has been served: it is no longer in flight. (Called
    /// for accepted requests only.)
    pub fn finished(&mut self) {
        self.serving = self.serving.saturating_sub(1);
    }

    /// How many requests may be in flight under [`Algorithm::InFlight`].
    pub fn in_flight_cap(&self) -> u32 {
        (self.limit / 4).max(1)
    }

    /// Every request so far: when it arrived (since the limiter was made) and whether it was
    /// accepted.
    pub fn log(&self) -> &[(Duration, bool)] {
        &self.log
    }

    /// Counts a request arriving at `now` (the server's wall clock, since the Unix epoch) and
    /// answers it. A wall clock can be stepped back: a time earlier than one read before is
    /// read as that one, as a server timing its windows on a monotonic clock would.
    pub fn answer(&mut self, now: Duration) -> Response<()> {
        let now = now.max(self.latest);
        self.latest = now;
        let verdict = match self.algorithm {
            Algorithm::FirstRequest => {
                let start = match self.window_start {
                    Some(start) if now < start + self.window => start,
                    _ => now,
                };
                self.count_in_window(start, now)
            }
            Algorithm::Aligned => {
                let into_window = now.as_nanos() % self.window.as_nanos();
                self.count_in_window(now - nanos(into_window), now)
            }
            Algorithm::TokenBucket => self.take_token(now),
            Algorithm::Sliding => self.log_in_span(now),
            Algorithm::SlidingCounter => self.count_sliding(now),
            Algorithm::Leaky => self.leak(now),
            Algorithm::Changing => {
                let start = match self.window_start {
                    Some(start) if now < start + self.window => start,
                    _ => now,
                };
                let limit = self.changing_limit(start);
                self.count_in_window_of(start, now, limit)
            }
            Algorithm::InFlight => self.serve(),
        };
        self.log.push((now - self.start, verdict.accepted));
        self.respond(&verdict, now)
    }

    /// The least time from the limiter's start in which it can accept `requests` requests:
    /// what no client can beat, however it paces. For the four classic shapes it is worked
    /// out in closed form (and a test checks it against the quickest client); for a leaky
    /// bucket it is one interval per request after the first; for a counter that counts
    /// refused requests and a changing limit it is that quickest client itself: each request sent at the first millisecond the limiter would accept it,
    /// asked of a copy, so that asking costs nothing. Under a cap on requests in flight it
    /// is the cap's rounds, each request held as long as the server serves one on average
    /// ([`holding`](Self::holding)): what no client beats in expectation.
    pub fn physical_limit(&self, requests: usize) -> Duration {
        let requests = requests as u32;
        // The window, counted from the first, in which the last request can be accepted.
        let last_window = requests.saturating_sub(1) / self.limit;
        match self.algorithm {
            Algorithm::SlidingCounter | Algorithm::Changing => {
                self.quickest_client(requests as usize)
            }
            Algorithm::Leaky => self.leak_interval() * requests.saturating_sub(1),
            Algorithm::InFlight => {
                let rounds = requests.div_ceil(self.in_flight_cap());
                self.hold * rounds.saturating_sub(1)
            }
            Algorithm::FirstRequest | Algorithm::Sliding => self.window * last_window,
            Algorithm::Aligned if last_window == 0 => Duration::ZERO,
            Algorithm::Aligned => {
                // The first window is what is left of the one the start falls in.
                let into_window = self.start.as_nanos() % self.window.as_nanos();
                self.window - nanos(into_window) + self.window * (last_window - 1)
            }
            Algorithm::TokenBucket => {
                let beyond_burst = requests.saturating_sub(self.limit);
                nanos(
                    (self.window * beyond_burst)
                        .as_nanos()
                        .div_ceil(self.limit.into()),
                )
            }
        }
    }

    /// Every request sent at the first millisecond a fresh copy of this limiter would accept
    /// it, each try asked of a copy of that copy: the time of the last.
    fn quickest_client(&self, requests: usize) -> Duration {
        let mut limiter = Limiter::new(
            self.algorithm,
            self.headers,
            self.limit,
            self.window,
            self.start,
        )
        .phases(self.phase);
        let mut now = self.start;
        for _ in 0..requests {
            while limiter.clone().answer(now).status() != StatusCode::OK {
                now += Duration::from_millis(1);
            }
            limiter.answer(now);
        }
        now - self.start
    }

    /// The limit of [`Algorithm::Changing`] for the window that opened at `start`.
    fn changing_limit(&self, start: Duration) -> u32 {
        let windows = ((start - self.start).as_nanos() / self.window.as_nanos()) as u32;
        match windows / self.phase {
            0 => self.limit,
            1 => (self.limit / 4).max(1),
            _ => self.limit * 2,
        }
    }

    fn count_in_window(&mut self, start: Duration, now: Duration) -> Verdict {
        self.count_in_window_of(start, now, self.limit)
    }

    fn count_in_window_of(&mut self, start: Duration, now: Duration, limit: u32) -> Verdict {
        if self.window_start != Some(start) {
            self.window_start = Some(start);
            self.used = 0;
        }
        self.used += 1;
        let reset = start + self.window - now;
        Verdict {
            accepted: self.used <= limit,
            limit,
            remaining: limit.saturating_sub(self.used),
            reset,
            retry_after: reset,
        }
    }

    /// The two-window estimate, every request counted: accepted while the estimate before it
    /// is below the limit.
    fn count_sliding(&mut self, now: Duration) -> Verdict {
        let window = self.window.as_nanos();
        let start = now - nanos(now.as_nanos() % window);
        match self.window_start {
            Some(known) if known == start => {}
            Some(known) if known + self.window == start => {
                self.previous = self.used;
                self.used = 0;
            }
            _ => {
                self.previous = 0;
                self.used = 0;
            }
        }
        self.window_start = Some(start);
        let into = (now - start).as_nanos();
        // The previous window's count still in the span, in units of 1 / `window`.
        let weighted = |into: u128| u128::from(self.previous) * (window - into);
        let limit = u128::from(self.limit);
        let accepted = weighted(into) + u128::from(self.used) * window < limit * window;
        self.used += 1;
        let used = u128::from(self.used);
        // Until the estimate is below the limit again with nothing more sent: within this
        // window, as the previous one's weight fades, or within the next, as this one's does.
        let (count, weight, from) = if used < limit {
            (used, u128::from(self.previous), into)
        } else {
            (0, used, 0)
        };
        let faded = match weight {
            0 => 0,
            // The first instant into a window where `weight` × what is left of it falls
            // below what `count` leaves of the limit.
            weight => (window + 1).saturating_sub((limit - count) * window / weight),
        };
        let retry_after = if used < limit && faded >= window {
            nanos(window - into)
        } else if used < limit {
            nanos(faded.saturating_sub(from))
        } else {
            nanos(window - into + faded.min(window))
        };
        let estimate = (weighted(into) + used * window) / window;
        Verdict {
            accepted,
            limit: self.limit,
            remaining: self.limit.saturating_sub(estimate as u32),
            reset: nanos(2 * window - into),
            retry_after: if accepted {
                Duration::ZERO
            } else {
                retry_after
            },
        }
    }

    /// One request per `window / limit`: refused ones take no slot.
    fn leak_interval(&self) -> Duration {
        nanos(self.window.as_nanos() / u128::from(self.limit))
    }

    fn leak(&mut self, now: Duration) -> Verdict {
        let interval = self.leak_interval();
        let accepted = now >= self.next_slot;
        if accepted {
            self.next_slot = now + interval;
        }
        Verdict {
            accepted,
            limit: self.limit,
            remaining: u32::from(now >= self.next_slot),
            reset: self.next_slot.saturating_sub(now),
            retry_after: self.next_slot.saturating_sub(now),
        }
    }

    /// Accepted while fewer than the cap are in flight; it is the server that frees a slot,
    /// by [`finished`](Self::finished).
    fn serve(&mut self) -> Verdict {
        let accepted = self.serving < self.in_flight_cap();
        if accepted {
            self.serving += 1;
        }
        Verdict {
            accepted,
            limit: self.limit,
            remaining: self.in_flight_cap() - self.serving,
            reset: Duration::from_secs(1),
            retry_after: Duration::from_secs(1),
        }
    }

    fn take_token(&mut self, now: Duration) -> Verdict {
        let token = self.window.as_nanos();
        let rate = u128::from(self.limit);
        let full = rate * token;
        self.level = (self.level + (now - self.refilled).as_nanos() * rate).min(full);
        self.refilled = now;
        let accepted = self.level >= token;
        if accepted {
            self.level -= token;
        }
        Verdict {
            accepted,
            limit: self.limit,
            remaining: (self.level / token) as u32,
            reset: nanos((full - self.level).div_ceil(rate)),
            retry_after: nanos(token.saturating_sub(self.level).div_ceil(rate)),
        }
    }

    fn log_in_span(&mut self, now: Duration) -> Verdict {
        while self
            .accepted
            .front()
            .is_some_and(|&at| at + self.window <= now)
        {
            self.accepted.pop_front();
        }
        let accepted = self.accepted.len() < self.limit as usize;
        if accepted {
            self.accepted.push_back(now);
        }
        // Never empty here: it holds the request just accepted, or the `limit` that refused it.
        let (oldest, newest) = (self.accepted[0], self.accepted[self.accepted.len() - 1]);
        Verdict {
            accepted,
            limit: self.limit,
            remaining: self.limit - self.accepted.len() as u32,
            reset: newest + self.window - now,
            retry_after: oldest + self.window - now,
        }
    }

    fn respond(&self, verdict: &Verdict, now: Duration) -> Response<()> {
        let (limit, remaining) = (verdict.limit, verdict.remaining);
        let reset = whole_seconds_up(verdict.reset);
        let window = self.window.as_secs();
        let fields: Vec<(&str, String)> = match self.headers {
            Headers::Draft8 => vec![
                (
                    "ratelimit-policy",
                    format!("\"default\";q={limit};w={window}"),
                ),
                ("ratelimit", format!("\"default\";r={remaining};t={reset}")),
            ],
            Headers::Draft6 => vec![
                ("ratelimit-policy", format!("{limit};w={window}")),
                ("ratelimit-limit", limit.to_string()),
                ("ratelimit-remaining", remaining.to_string()),
                ("ratelimit-reset", reset.to_string()),
            ],
            Headers::XRateLimit => vec![
                ("x-ratelimit-limit", limit.to_string()),
                ("x-ratelimit-remaining", remaining.to_string()),
                ("x-ratelimit-reset", reset.to_string()),
            ],
            Headers::XRateLimitEpoch => vec![
                ("x-ratelimit-limit", limit.to_string()),
                ("x-ratelimit-remaining", remaining.to_string()),
                (
                    "x-ratelimit-reset",
                    whole_seconds_up(now + verdict.reset).to_string(),
                ),
                (
                    "date",
                    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(now.as_secs())),
                ),
            ],
            Headers::RetryAfter | Headers::None => vec![],
        };
        let mut response = Response::builder();
        for (name, value) in fields {
            response = response.header(name, value);
        }
        if !verdict.accepted {
            response = response.status(StatusCode::TOO_MANY_REQUESTS);
            if self.headers != Headers::None {
                // Never 0: a refusal's wait is never empty, and rounds up to 1 at least.
                let wait = whole_seconds_up(verdict.retry_after);
                response = response.header("retry-after", wait);
            }
        }
        response.body(()).unwrap()
    }
}

fn whole_seconds_up(duration: Duration) -> u64 {
    duration.as_nanos().div_ceil(1_000_000_000) as u64
}

fn nanos(nanos: u128) -> Duration {
    Duration::from_nanos(nanos as u64)
}
