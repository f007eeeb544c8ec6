//! [`ResponseFuture`]: one call, every attempt and wait of it, as an explicit state machine.
//!
//! ```text
//! Entering ─▶ gate ─┬─ let through ──▶ Readying ─▶ Calling ─▶ read, record, classify ─▶ done
//!                   ├─ closed ──▶ Waiting ──┘                        │ retry
//!                   └─ closed too long ──▶ Throttled (or the last outcome)
//!    ▲                                                               │
//!    └──── Sleeping (a transient failure's backoff, or a rate-limited wait the gate does not
//!          hold) ◀───────────────────────────────────────────────────┤
//!    └──── (rate limited, the gate holds the wait) ◀─────────────────┘
//! ```
//!
//! Invariants: every attempt passes its key's gate, and takes its place there when first
//! polled, not when made; a retry is decided only with the next body in hand (a body that
//! cannot be copied is sent once); a rate-limited retry never goes before the server's time,
//! whatever the gate remembers; every wait, at the gate or asleep, counts against the call's
//! budget, and a wait that cannot fit ends the call with the last outcome (or, before any
//! attempt, with [`Throttled`]); dropping the future at any point leaves the gate's queue and
//! releases what it held (`Place` and `Pass` do so on drop).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, SystemTime};

use http::request::Parts;
use http::{Request, Response, StatusCode};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::budget::{Budget, Decision, Declined};
use crate::gate::{Entered, Gates, Pass, Place, Quota, Report, after};
use crate::headers::RateLimitInfo;
use crate::jitter::Draws;
use crate::key::{Key, KeyFn};
use crate::layer::Settings;
use crate::policy::{Action, BoxError, Outcome, Policy};
use crate::throttled::Throttled;

pin_project! {
    /// The response future of [`RateLimit`](crate::RateLimit).
    pub struct ResponseFuture<S, P, B>
    where
        S: Service<Request<B>>,
    {
        #[pin]
        state: State<S::Future>,
        service: S,
        policy: P,
        request: Parts,
        // The body kept for replay; `None` when the request can only be sent once.
        body: Option<B>,
        // The next attempt's body: the first attempt's, or a retry's, copied before its wait
        // so a retry never lacks one.
        next: Option<B>,
        // The last outcome (a response or an error), kept while a retry waits: if the wait
        // cannot fit, the caller gets it.
        last: Option<Result<S::Response, BoxError>>,
        budget: Budget,
        settings: Settings,
        gate: Gating,
        // The call's own decision already announced the wait it is about to take at the gate.
        announced: bool,
        draws: Draws,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        // Not yet at the gate: the call takes its place when first polled.
        Entering,
        Calling { #[pin] future: F },
        // A backoff the call sleeps itself.
        Sleeping { #[pin] sleep: Sleep },
        // At the gate: asleep until the head of the queue may look again, or the budget ends.
        Waiting { #[pin] sleep: Sleep, since: Instant },
        Readying,
        Done,
    }
}

/// The call's key and what it holds at its gate.
struct Gating {
    gates: Gates,
    key: Option<Key>,
    respect_remaining: bool,
    retry_after_cap: Duration,
    pass: Option<Pass>,
    place: Option<Place>,
}

/// Where the next attempt stands at the gate.
enum Entry<F> {
    Go,
    Wait(State<F>),
    Throttled(Throttled),
}

impl<S, P, B, ResBody> ResponseFuture<S, P, B>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    P: Policy<B, ResBody>,
{
    pub(crate) fn new(
        service: S,
        policy: P,
        settings: Settings,
        gates: Gates,
        key: &KeyFn,
        draws: Draws,
        request: Request<B>,
    ) -> Self {
        let (parts, body) = request.into_parts();
        // A layer that only observes holds no gate: it neither waits nor blocks a later call.
        let key = settings.retry_on_rate_limit.then(|| key(&parts)).flatten();
        let (sent, kept) = match policy.clone_body(&body) {
            Some(copy) => (copy, Some(body)),
            None => (body, None),
        };
        ResponseFuture {
            state: State::Entering,
            service,
            policy,
            request: parts,
            body: kept,
            next: Some(sent),
            last: None,
            budget: Budget::default(),
            announced: false,
            draws,
            gate: Gating {
                gates,
                key,
                respect_remaining: settings.respect_remaining,
                retry_after_cap: settings.retry_after_cap,
                pass: None,
                place: None,
            },
            settings,
        }
    }
}

impl<S, P, B, ResBody> Future for ResponseFuture<S, P, B>
where
    S: Service<Request<B>, Response = Response<ResBody>> + Clone,
    S::Error: Into<BoxError>,
    P: Policy<B, ResBody>,
{
    type Output = Result<Response<ResBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Entering => {
                    let now = Instant::now();
                    let first = this.budget.retries() == 0;
                    match this.gate.enter(now, this.budget, this.settings) {
                        // The first attempt goes on the service the caller polled ready.
                        Entry::Go if first => {
                            let body = this.next.take().expect("the first body is in hand");
                            let request = Request::from_parts(this.request.clone(), body);
                            this.state.set(State::Calling {
                                future: this.service.call(request),
                            });
                        }
                        Entry::Go => {
                            *this.announced = false;
                            this.state.set(State::Readying);
                        }
                        Entry::Wait(waiting) => {
                            if !std::mem::take(this.announced) {
                                trace_gate(this.gate, this.request, this.budget, None);
                            }
                            // Waiting holds no readiness: a service polled ready may hold a
                            // permit (a concurrency limit) that others need meanwhile.
                            *this.service = this.service.clone();
                            this.state.set(waiting);
                        }
                        Entry::Throttled(throttled) => {
                            trace_gate(this.gate, this.request, this.budget, Some(&throttled));
                            this.state.set(State::Done);
                            return Poll::Ready(give_up(this.last.take(), throttled));
                        }
                    }
                }
                StateProj::Calling { future } => {
                    let result = ready!(future.poll(cx));
                    let now = Instant::now();
                    let (outcome, said) = match result {
                        Ok(mut response) => {
                            let info =
                                RateLimitInfo::from_headers(response.headers(), SystemTime::now());
                            let said = this.gate.said(&info, now);
                            response.extensions_mut().insert(info);
                            (Ok(response), Some(said))
                        }
                        Err(error) => (Err(error.into()), None),
                    };
                    let classified = match &outcome {
                        Ok(response) => Outcome::Response(response),
                        Err(error) => Outcome::Error(error),
                    };
                    let action = this.policy.classify(this.request, classified);
                    let instruction = said.as_ref().and_then(|said| said.instruction);
                    let unit = this.draws.unit();
                    let decision = (action != Action::Return)
                        .then(|| this.budget.decide(action, instruction, this.settings, unit));
                    let refused = outcome
                        .as_ref()
                        .is_ok_and(|response| response.status() == StatusCode::TOO_MANY_REQUESTS);
                    let closure = closure(
                        refused,
                        action,
                        decision.as_ref(),
                        instruction,
                        this.settings,
                        unit,
                    );
                    this.gate
                        .record(said, refused, closure.map(|wait| after(now, wait)), now);
                    let Some(mut decision) = decision else {
                        this.state.set(State::Done);
                        return Poll::Ready(outcome);
                    };
                    if decision.declined.is_none() {
                        *this.next = this
                            .body
                            .as_ref()
                            .and_then(|body| this.policy.clone_body(body));
                        if this.next.is_none() {
                            decision.declined = Some(Declined::NotReplayable);
                        }
                    }
                    trace(this.gate, this.request, this.budget, &decision);
                    if decision.declined.is_some() {
                        this.state.set(State::Done);
                        return Poll::Ready(outcome);
                    }
                    *this.last = Some(outcome);
                    let held = action == Action::RateLimited && this.gate.holds(now, decision.wait);
                    if held {
                        // The gate is closed at least as long: the call waits there with
                        // every other call on the key.
                        this.budget.spend(action, Duration::ZERO);
                        *this.announced = true;
                        this.state.set(State::Entering);
                    } else {
                        this.budget.spend(action, decision.wait);
                        this.state.set(State::Sleeping {
                            sleep: tokio::time::sleep_until(after(now, decision.wait)),
                        });
                    }
                }
                StateProj::Sleeping { sleep } => {
                    ready!(sleep.poll(cx));
                    this.state.set(State::Entering);
                }
                StateProj::Waiting { mut sleep, since } => {
                    let since = *since;
                    let now = Instant::now();
                    let deadline = after(since, this.budget.time_left(this.settings));
                    let place = this.gate.place.as_mut().expect("waiting holds a place");
                    // Asked before the deadline is checked: a gate that opens at the very
                    // instant the budget ends lets the call go, as entering promised.
                    match place.poll(now, cx.waker()) {
                        Ok(pass) => {
                            this.gate.place = None;
                            this.gate.pass = Some(pass);
                            this.budget.add_wait(now - since);
                            this.state.set(State::Readying);
                        }
                        Err(_) if now >= deadline => {
                            // The budget is spent, whatever the gate would say later.
                            this.gate.place = None;
                            this.budget.add_wait(deadline - since);
                            let throttled = this.gate.throttled(now);
                            trace_gate(this.gate, this.request, this.budget, Some(&throttled));
                            this.state.set(State::Done);
                            return Poll::Ready(give_up(this.last.take(), throttled));
                        }
                        Err(look_again) => {
                            let wake = look_again.map_or(deadline, |at| at.min(deadline));
                            if sleep.deadline() != wake {
                                sleep.as_mut().reset(wake);
                            }
                            ready!(sleep.poll(cx));
                        }
                    }
                }
                StateProj::Readying => {
                    if let Err(error) = ready!(this.service.poll_ready(cx)) {
                        // The attempt cannot be sent: a retry's caller gets what the last
                        // attempt got, the first attempt's gets why.
                        this.state.set(State::Done);
                        return Poll::Ready(this.last.take().unwrap_or_else(|| Err(error.into())));
                    }
                    let body = this
                        .next
                        .take()
                        .expect("an attempt is readied only with its body in hand");
                    *this.last = None;
                    let request = Request::from_parts(this.request.clone(), body);
                    this.state.set(State::Calling {
                        future: this.service.call(request),
                    });
                }
                StateProj::Done => panic!("a ResponseFuture is polled after it completed"),
            }
        }
    }
}

/// How a call ends when its wait at the gate cannot fit: with the last outcome if it has one
/// (a response, or the transport error of an attempt that was sent), else with `Throttled`
/// (nothing was sent).
fn give_up<R>(last: Option<Result<R, BoxError>>, throttled: Throttled) -> Result<R, BoxError> {
    last.unwrap_or_else(|| Err(throttled.into()))
}

/// How long a response closes its key's gate: a 429 or a rate-limited outcome closes it for the
/// wait the layer decided, or, when the policy returns it, for the server's instruction. An
/// instruction above the cap leaves the gate open.
fn closure(
    refused: bool,
    action: Action,
    decision: Option<&Decision>,
    instruction: Option<Duration>,
    settings: &Settings,
    unit: f64,
) -> Option<Duration> {
    if instruction.is_some_and(|instruction| instruction > settings.retry_after_cap) {
        return None;
    }
    match decision {
        Some(decision) if action == Action::RateLimited => Some(decision.wait),
        _ if refused => Some(match instruction {
            Some(instruction) => settings.backoff.instructed(instruction, unit),
            None => settings.backoff.guessed(0, unit),
        }),
        _ => None,
    }
}

impl Gating {
    /// Where the next attempt stands at the gate.
    fn enter<F>(&mut self, now: Instant, budget: &Budget, settings: &Settings) -> Entry<F> {
        let Some(key) = &self.key else {
            return Entry::Go;
        };
        let left = budget.time_left(settings);
        match self.gates.enter(key, now, left, self.respect_remaining) {
            Entered::Admitted(pass) => {
                self.pass = Some(pass);
                Entry::Go
            }
            Entered::Queued(place) => {
                self.place = Some(place);
                Entry::Wait(State::Waiting {
                    sleep: tokio::time::sleep_until(after(now, left)),
                    since: now,
                })
            }
            Entered::Throttled(closed_for) => {
                Entry::Throttled(Throttled::new(key.clone(), closed_for))
            }
        }
    }

    /// Whether the key's gate is closed for at least `wait`: then the call may wait there;
    /// otherwise (no key, or the gate could not keep the closure) it sleeps the wait itself.
    fn holds(&self, now: Instant, wait: Duration) -> bool {
        self.key.as_ref().is_some_and(|key| {
            self.gates
                .closed_for(key, now)
                .is_some_and(|closed_for| closed_for >= wait)
        })
    }

    fn throttled(&self, now: Instant) -> Throttled {
        let key = self.key.clone().expect("only a gated call waits");
        let closed_for = self.gates.closed_for(&key, now).unwrap_or(Duration::ZERO);
        Throttled::new(key, closed_for)
    }

    /// The key to name in an event: the gate's, or the origin for an ungated call.
    fn key_for(&self, request: &Parts) -> Option<Key> {
        self.key.clone().or_else(|| Key::origin(request))
    }

    /// What the gate and the retry need from a response's reading, taken before the reading
    /// is handed to the caller on the response.
    fn said(&self, info: &RateLimitInfo, now: Instant) -> Said {
        Said {
            instruction: info.instructed_wait(),
            // A window longer than the cap is not held against later calls, as an instruction
            // over the cap is not: blocking them for an hour is worse than letting them decide.
            quota: self
                .respect_remaining
                .then(|| quota(info, after(now, self.retry_after_cap)))
                .flatten(),
            interval: interval(info),
        }
    }

    /// Tells the gate what the attempt's outcome said about the key (`None`: a transport
    /// error, which says nothing about the limit).
    fn record(
        &mut self,
        said: Option<Said>,
        refused: bool,
        closed_until: Option<Instant>,
        now: Instant,
    ) {
        let Some(pass) = self.pass.take() else {
            return;
        };
        let Some(said) = said else {
            // Dropping the pass tells the gate no answer came.
            return;
        };
        let report = Report {
            refused,
            closed_until,
            quota: said.quota,
            interval: said.interval,
        };
        pass.answered(report, now);
    }
}

/// What one response said that the layer acts on.
struct Said {
    /// How long the server said to wait, if it did.
    instruction: Option<Duration>,
    /// The quota closest to running out, when the layer respects what remains.
    quota: Option<Quota>,
    /// The spacing the server's shortest policy asks for.
    interval: Option<Duration>,
}

/// The quota closest to running out among the meters that say what is left and reset by
/// `horizon`.
fn quota(info: &RateLimitInfo, horizon: Instant) -> Option<Quota> {
    info.meters()
        .iter()
        .filter_map(|meter| {
            let reset_at = meter.reset_at().filter(|reset_at| *reset_at <= horizon)?;
            Some(Quota {
                remaining: meter.remaining()?,
                reset_at,
            })
        })
        .min_by_key(|quota| (quota.remaining, std::cmp::Reverse(quota.reset_at)))
}

/// The server's policy with the shortest window, as a spacing between requests: the rate that
/// binds a burst (a day's quota says how many in a day, not how far apart).
fn interval(info: &RateLimitInfo) -> Option<Duration> {
    info.meters()
        .iter()
        .filter_map(|meter| {
            let limit = u32::try_from(meter.limit()?)
                .ok()
                .filter(|limit| *limit > 0)?;
            let window = meter.window()?;
            Some((window, window / limit))
        })
        .min()
        .map(|(_, spacing)| spacing)
}

/// One event for every wait the layer decides, taken or declined: a wait the caller cannot see
/// is a stall they cannot debug.
fn trace(gate: &Gating, request: &Parts, budget: &Budget, decision: &Decision) {
    tracing::info!(
        target: "tower_retry_after",
        key = gate.key_for(request).map(tracing::field::display),
        reason = ?decision.reason,
        wait_ms = millis(decision.wait),
        attempt = budget.retries() + 1,
        will_retry = decision.declined.is_none(),
        declined = decision.declined.map(tracing::field::display),
        "rate-limit wait",
    );
}

/// One event for a call that meets a closed gate and waits there, or is throttled by it.
fn trace_gate(gate: &Gating, request: &Parts, budget: &Budget, throttled: Option<&Throttled>) {
    let closed_for = match throttled {
        Some(throttled) => throttled.retry_after(),
        None => gate
            .key
            .as_ref()
            .and_then(|key| gate.gates.closed_for(key, Instant::now()))
            .unwrap_or(Duration::ZERO),
    };
    tracing::info!(
        target: "tower_retry_after",
        key = gate.key_for(request).map(tracing::field::display),
        reason = "Gate",
        wait_ms = millis(closed_for),
        attempt = budget.retries() + 1,
        will_retry = throttled.is_none(),
        declined = throttled.map(tracing::field::display),
        "rate-limit wait",
    );
}

fn millis(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pairs: &[(&'static str, &'static str)]) -> RateLimitInfo {
        let mut headers = http::HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, http::HeaderValue::from_static(value));
        }
        RateLimitInfo::from_headers(&headers, SystemTime::now())
    }

    #[test]
    fn giving_up_returns_the_last_outcome_and_throttled_only_before_any_attempt() {
        let throttled = || Throttled::new(Key::named("api"), Duration::from_secs(9));
        assert_eq!(give_up(Some(Ok(429)), throttled()).unwrap(), 429);
        let reset: BoxError = "connection reset".into();
        let error = give_up::<u16>(Some(Err(reset)), throttled()).unwrap_err();
        assert_eq!(error.to_string(), "connection reset");
        let error = give_up::<u16>(None, throttled()).unwrap_err();
        assert!(error.is::<Throttled>());
    }

    #[test]
    fn the_pace_is_the_shortest_windows_not_the_slowest_average() {
        let policies = info(&[(
            "ratelimit-policy",
            r#""minute";q=100;w=60, "day";q=5000;w=86400"#,
        )]);
        assert_eq!(interval(&policies), Some(Duration::from_millis(600)));
        assert_eq!(interval(&info(&[])), None);
    }

    #[test]
    fn the_quota_is_the_meter_closest_to_running_out_within_the_cap() {
        let now = Instant::now();
        let meters = info(&[
            (
                "ratelimit-policy",
                r#""minute";q=100;w=60, "day";q=5000;w=86400"#,
            ),
            ("ratelimit", r#""minute";r=40;t=30, "day";r=3;t=36000"#),
        ]);
        let within_a_minute = quota(&meters, now + Duration::from_secs(60)).unwrap();
        assert_eq!(
            within_a_minute.remaining, 40,
            "the day's window is beyond the cap"
        );
        let within_a_day = quota(&meters, now + Duration::from_secs(86_400)).unwrap();
        assert_eq!(within_a_day.remaining, 3);
    }

    #[test]
    fn a_429_closes_the_gate_whatever_the_policy_but_not_beyond_the_cap() {
        let settings = Settings::default();
        let thirty = Some(Duration::from_secs(30));
        let returned = closure(true, Action::Return, None, thirty, &settings, 0.0);
        assert_eq!(returned, thirty);
        let over_cap = closure(
            true,
            Action::Return,
            None,
            Some(Duration::from_secs(61)),
            &settings,
            0.0,
        );
        assert_eq!(over_cap, None);
        assert_eq!(
            closure(false, Action::Return, None, thirty, &settings, 0.0),
            None
        );
        let guessed = closure(true, Action::Return, None, None, &settings, 0.0);
        assert_eq!(guessed, Some(Duration::from_millis(250)));
    }

    #[test]
    fn a_rate_limited_outcome_closes_the_gate_for_the_wait_decided_a_transient_one_not_at_all() {
        let settings = Settings::default();
        let four = Duration::from_secs(4);
        let decided = Decision {
            wait: four,
            reason: crate::budget::Reason::Guessed,
            declined: None,
        };
        let closed_for =
            |retried, action| closure(retried, action, Some(&decided), None, &settings, 0.0);
        // Rate limited by the policy (a 503 it maps so), not a 429: closed for the wait decided.
        assert_eq!(closed_for(false, Action::RateLimited), Some(four));
        // A 429 on a later retry, without an instruction: its own backoff, not the first guess.
        assert_eq!(closed_for(true, Action::RateLimited), Some(four));
        // A transient retry (a 503) closes nothing: its backoff is the call's own.
        assert_eq!(closed_for(false, Action::Retry), None);
    }

    #[test]
    fn a_policy_of_zero_requests_gives_no_pace() {
        let none_allowed = info(&[("ratelimit-policy", r#""closed";q=0;w=60"#)]);
        assert_eq!(none_allowed.meters()[0].limit(), Some(0));
        assert_eq!(interval(&none_allowed), None);
    }
}
