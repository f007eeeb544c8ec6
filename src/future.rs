//! [`ResponseFuture`]: one call, every attempt and wait of it, as an explicit state machine.
//!
//! ```text
//!            ┌──────────── Waiting (at the key's gate) ◀──┐ closed
//!            ▼ let through                                 │
//! new ─▶ gate ─▶ Readying ─▶ Calling ─▶ read, record, classify ─▶ Return / declined ─▶ done
//!            ▲                                    │ retry
//!            └──────────── Sleeping (transient) ◀─┤
//!            └──────────── (rate limited: the gate is closed, so the call waits there) ◀┘
//! ```
//!
//! Invariants: every attempt passes its key's gate; a retry is only decided once the next body
//! is in hand (a body that cannot be copied is sent once); every wait, at the gate or asleep,
//! counts against the call's budget, and a wait that cannot fit ends the call with the last
//! response (or, before any response, with [`Throttled`]); dropping the future at any point
//! leaves the gate's queue and releases what it held (`Place` and `Pass` do so on drop).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, SystemTime};

use http::request::Parts;
use http::{Request, Response};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::budget::{Budget, Decision, Declined};
use crate::gate::{Entered, Gates, Pass, Place, Quota, Report};
use crate::headers::RateLimitInfo;
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
        // The next attempt's body, copied before its wait so a retry never lacks one.
        next: Option<B>,
        // The last response, kept while a retry waits at the gate: if the wait cannot fit,
        // the caller gets it.
        last: Option<S::Response>,
        budget: Budget,
        settings: Settings,
        gate: Gating,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Calling { #[pin] future: F },
        // A transient failure's backoff.
        Sleeping { #[pin] sleep: Sleep },
        // At the gate: asleep until the head of the queue may look again, or the budget ends.
        Waiting { #[pin] sleep: Sleep, since: Instant },
        Readying,
        Throttled { error: Option<Throttled> },
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

impl<S, P, B, ResBody> ResponseFuture<S, P, B>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    P: Policy<B, ResBody>,
{
    pub(crate) fn new(
        mut service: S,
        policy: P,
        settings: Settings,
        gates: Gates,
        key: &KeyFn,
        request: Request<B>,
    ) -> Self {
        let (parts, body) = request.into_parts();
        // A layer that only observes holds no gate: it neither waits nor blocks a later call.
        let key = settings.retry_on_rate_limit.then(|| key(&parts)).flatten();
        let (sent, kept) = match policy.clone_body(&body) {
            Some(copy) => (copy, Some(body)),
            None => (body, None),
        };
        let mut gate = Gating {
            gates,
            key,
            respect_remaining: settings.respect_remaining,
            retry_after_cap: settings.retry_after_cap,
            pass: None,
            place: None,
        };
        let now = Instant::now();
        let (state, next) = match gate.enter(now, settings.max_wait) {
            Ok(()) => {
                let future = service.call(Request::from_parts(parts.clone(), sent));
                (State::Calling { future }, None)
            }
            Err(blocked) => {
                trace_gate(&gate, &parts, &blocked, 0);
                (blocked.into_state(now, settings.max_wait), Some(sent))
            }
        };
        ResponseFuture {
            state,
            service,
            policy,
            request: parts,
            body: kept,
            next,
            last: None,
            budget: Budget::default(),
            settings,
            gate,
        }
    }
}

impl<S, P, B, ResBody> Future for ResponseFuture<S, P, B>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    S::Error: Into<BoxError>,
    P: Policy<B, ResBody>,
{
    type Output = Result<Response<ResBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Calling { future } => {
                    let result = ready!(future.poll(cx));
                    let now = Instant::now();
                    let (outcome, info) = match result {
                        Ok(mut response) => {
                            let info =
                                RateLimitInfo::from_headers(response.headers(), SystemTime::now());
                            response.extensions_mut().insert(info.clone());
                            (Ok(response), Some(info))
                        }
                        Err(error) => (Err(error.into()), None),
                    };
                    let classified = match &outcome {
                        Ok(response) => Outcome::Response(response),
                        Err(error) => Outcome::Error(error),
                    };
                    let action = this.policy.classify(this.request, classified);
                    let instruction = info.as_ref().and_then(RateLimitInfo::instructed_wait);
                    let decision = (action != Action::Return).then(|| {
                        this.budget
                            .decide(action, instruction, this.settings, rand::random())
                    });
                    this.gate
                        .record(action, decision.as_ref(), info.as_ref(), now);
                    let Some(mut decision) = decision else {
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
                        return Poll::Ready(outcome);
                    }
                    *this.last = outcome.ok();
                    if action == Action::RateLimited && this.gate.key.is_some() {
                        // The response closed the gate: the call waits there with every other.
                        this.budget.spend(action, Duration::ZERO);
                        let next = this.gate.next_state(now, None, this.budget, this.settings);
                        this.state.set(next);
                    } else {
                        this.budget.spend(action, decision.wait);
                        this.state.set(State::Sleeping {
                            sleep: tokio::time::sleep(decision.wait),
                        });
                    }
                }
                StateProj::Sleeping { sleep } => {
                    ready!(sleep.poll(cx));
                    let now = Instant::now();
                    let request = Some(&*this.request);
                    let next = this
                        .gate
                        .next_state(now, request, this.budget, this.settings);
                    this.state.set(next);
                }
                StateProj::Waiting { mut sleep, since } => {
                    let since = *since;
                    let now = Instant::now();
                    let deadline = since + this.budget.time_left(this.settings);
                    let place = this.gate.place.as_mut().expect("waiting holds a place");
                    match place.poll(now, cx.waker()) {
                        Ok(pass) => {
                            this.gate.place = None;
                            this.gate.pass = Some(pass);
                            this.budget.add_wait(now - since);
                            this.state.set(State::Readying);
                        }
                        Err(_) if now >= deadline => {
                            this.gate.place = None;
                            this.budget.add_wait(now - since);
                            return Poll::Ready(match this.last.take() {
                                Some(response) => Ok(response),
                                None => Err(this.gate.throttled().into()),
                            });
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
                    ready!(this.service.poll_ready(cx)).map_err(Into::into)?;
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
                StateProj::Throttled { error } => {
                    let error = error
                        .take()
                        .expect("a throttled call is polled to its end once");
                    return Poll::Ready(Err(error.into()));
                }
            }
        }
    }
}

/// Why a call cannot go at once.
enum Blocked {
    /// It waits at the gate, which is closed for this long at least.
    Queued(Duration),
    /// The gate stays closed longer than the call may wait.
    Throttled(Throttled),
}

impl Blocked {
    fn into_state<F>(self, now: Instant, budget: Duration) -> State<F> {
        match self {
            Blocked::Queued(_) => State::Waiting {
                sleep: tokio::time::sleep_until(now + budget),
                since: now,
            },
            Blocked::Throttled(error) => State::Throttled { error: Some(error) },
        }
    }
}

impl Gating {
    /// Passes the gate, or says why the call cannot go yet.
    fn enter(&mut self, now: Instant, budget: Duration) -> Result<(), Blocked> {
        let Some(key) = &self.key else {
            return Ok(());
        };
        match self.gates.enter(key, now, budget) {
            Entered::Admitted(pass) => {
                self.pass = Some(pass);
                Ok(())
            }
            Entered::Queued(place) => {
                self.place = Some(place);
                Err(Blocked::Queued(self.closed_for()))
            }
            Entered::Throttled(closed_for) => {
                Err(Blocked::Throttled(Throttled::new(key.clone(), closed_for)))
            }
        }
    }

    /// The state of a call about to make its next attempt: through the gate, or waiting at it.
    /// A wait at the gate is traced for `request`, unless the call's own decision already was.
    fn next_state<F>(
        &mut self,
        now: Instant,
        request: Option<&Parts>,
        budget: &Budget,
        settings: &Settings,
    ) -> State<F> {
        let left = budget.time_left(settings);
        match self.enter(now, left) {
            Ok(()) => State::Readying,
            Err(blocked) => {
                if let Some(request) = request {
                    trace_gate(self, request, &blocked, budget.retries());
                }
                blocked.into_state(now, left)
            }
        }
    }

    /// How long the gate stays closed, as far as is known (a call may also wait behind others).
    fn closed_for(&self) -> Duration {
        self.key
            .as_ref()
            .and_then(|key| self.gates.snapshot(key))
            .and_then(|gate| gate.closed_for())
            .unwrap_or(Duration::ZERO)
    }

    fn throttled(&self) -> Throttled {
        let key = self.key.clone().expect("only a gated call waits");
        Throttled::new(key, self.closed_for())
    }

    /// The key to name in an event: the gate's, or the origin for an ungated call.
    fn key_for(&self, request: &Parts) -> Option<Key> {
        self.key.clone().or_else(|| Key::origin(request))
    }

    /// Tells the gate what the attempt's outcome said about the key.
    fn record(
        &mut self,
        action: Action,
        decision: Option<&Decision>,
        info: Option<&RateLimitInfo>,
        now: Instant,
    ) {
        let Some(pass) = self.pass.take() else {
            return;
        };
        let Some(info) = info else {
            // A transport error says nothing about the limit: dropping the pass says so.
            return;
        };
        let closes = action == Action::RateLimited
            && decision.is_some_and(|decision| decision.declined != Some(Declined::OverCap));
        let report = Report {
            closed_until: decision
                .filter(|_| closes)
                .map(|decision| now + decision.wait),
            // A window longer than the cap is not held against later calls, as an instruction
            // over the cap is not: blocking them for an hour is worse than letting them decide.
            quota: quota(info).filter(|quota| {
                self.respect_remaining && quota.reset_at <= now + self.retry_after_cap
            }),
            interval: interval(info),
        };
        pass.answered(report, now);
    }
}

/// The binding meter's quota, where the server gave both what is left and when it resets.
fn quota(info: &RateLimitInfo) -> Option<Quota> {
    let meter = info.binding_meter()?;
    Some(Quota {
        remaining: meter.remaining()?,
        reset_at: meter.reset_at()?,
    })
}

/// The server's slowest policy as a spacing between requests.
fn interval(info: &RateLimitInfo) -> Option<Duration> {
    info.meters()
        .iter()
        .filter_map(|meter| {
            let limit = u32::try_from(meter.limit()?)
                .ok()
                .filter(|limit| *limit > 0)?;
            Some(meter.window()? / limit)
        })
        .max()
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

/// One event for a call that meets a closed gate: it waits there, or is throttled.
fn trace_gate(gate: &Gating, request: &Parts, blocked: &Blocked, retries: u32) {
    let (closed_for, will_retry) = match blocked {
        Blocked::Queued(closed_for) => (*closed_for, true),
        Blocked::Throttled(throttled) => (throttled.retry_after(), false),
    };
    tracing::info!(
        target: "tower_retry_after",
        key = gate.key_for(request).map(tracing::field::display),
        reason = "Gate",
        wait_ms = millis(closed_for),
        attempt = retries + 1,
        will_retry,
        "rate-limit wait",
    );
}

fn millis(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}
