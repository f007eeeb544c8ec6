//! [`ResponseFuture`]: one call, every attempt and wait of it, as an explicit state machine.
//!
//! ```text
//! Entering ─▶ gate ─┬─ let through ─▶ (Reserving) ─▶ Readying ─▶ Calling ─▶ read, record, ─▶ done
//!                   │                                                 classify
//!                   ├─ closed ──▶ Waiting ──┘                        │ retry
//!                   └─ closed too long ──▶ Throttled (or the last outcome)
//!    ▲                                                               │
//!    └──── Sleeping (a transient failure's backoff, or a rate-limited wait the gate does not
//!          hold) ◀───────────────────────────────────────────────────┤
//!          Waiting (rate limited, the gate holds the wait) ◀─────────┘
//! ```
//!
//! Reserving happens only where the gates share a store with other processes: the request is
//! reserved there (a task, within a deadline) before it is sent, or the store holds the call
//! and it sleeps, as from a closed gate. Each state holds what it needs: the next attempt's body until it is sent, the place at the
//! gate while waiting, the pass while the request is out. Invariants: every attempt passes its
//! key's gate, and takes its place there when first polled, not when made; a retry is decided
//! only with the next body in hand (a body that cannot be copied is sent once); a rate-limited
//! retry never goes before the server's time, whatever the gate remembers; every wait, at the
//! gate or asleep, counts against the call's budget, and a wait that cannot fit ends the call
//! with the last outcome, or, once a wait has begun, with [`Throttled`] (carrying the head of the
//! response the call had: its body is dropped when the wait begins, so that a waiting call
//! holds no connection); whichever way a call ends, with a response or `Throttled`, it says
//! what it cost ([`CallCost`]); dropping the future at any point leaves the gate's queue and releases
//! what it held (a place and a pass do so on drop).

mod answer;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::request::Parts;
use http::{Request, Response, response};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::BoxError;
use crate::budget::Budget;
use crate::config::Config;
use crate::cost::CallCost;
use crate::events;
use crate::gate::call::{
    Call, Entered, Episode, NotYet, Pass, Place, Reservation, Reserving, after,
};
use crate::jitter::Draws;
use crate::key::Key;
use crate::notice::Notice;
use crate::policy::Policy;
use crate::telemetry;
use crate::throttled::{HeldBy, Throttled};
use crate::tokens::TokenCost;

pin_project! {
    /// The response future of [`RateLimit`](crate::RateLimit).
    #[project = Projection]
    pub struct ResponseFuture<S, P, B>
    where
        S: Service<Request<B>>,
    {
        #[pin]
        state: State<S::Future, B>,
        service: S,
        policy: P,
        config: Arc<Config>,
        request: Parts,
        // The body kept for replay; `None` when the request can only be sent once.
        replay: Option<B>,
        // The last attempt's outcome, kept while the next one waits: if the wait cannot fit,
        // the caller gets what is kept of it.
        last: Option<Kept>,
        budget: Budget,
        // The call's handle on its key's gate; `None` for a call that is not gated.
        gate: Option<Call>,
        // The service was polled ready for the next attempt: by the caller, for the first,
        // until it is sent or the call waits (a wait gives the readiness back).
        ready: bool,
        draws: Draws,
    }
}

pin_project! {
    #[project = StateProj]
    #[project_replace = StateOwned]
    enum State<F, B> {
        // Not yet at the gate: the attempt takes its place when first polled.
        Entering { body: B },
        // At the gate: asleep until the head of the queue may look again, or the budget ends.
        Waiting { sleep: Timer, since: Instant, place: Place, body: B },
        // A backoff the call sleeps itself, since then.
        Sleeping { sleep: Timer, since: Instant, body: B },
        // Let through by its gate: waiting for the store shared with other processes to
        // reserve the request.
        Reserving { reserving: Reserving, pass: Pass, body: B },
        // Let through: waiting for the service to take the request.
        Readying { pass: Option<Pass>, body: B },
        // The request is out.
        Calling { #[pin] future: F, pass: Option<Pass> },
        Done,
    }
}

/// A waiting state's timer, boxed: waits are rare beside calls, and a small state is cheap to
/// move on every step of every call.
type Timer = Pin<Box<Sleep>>;

/// What comes after a step of the call: another state, or the call's result.
// A step is returned and at once moved into the future's state, never kept: boxing the state
// to shrink it would allocate on every step of every call.
#[allow(clippy::large_enum_variant)]
enum Step<F, B, R> {
    Next(State<F, B>),
    Finish(Result<R, BoxError>),
}

/// What a call keeps of its last attempt while the next one waits.
enum Kept {
    /// A response's head: its body was dropped when the wait began, so that a waiting call
    /// holds no connection (over hyper-util, an unread body pins one).
    Head(response::Parts),
    /// The inner service's error.
    Error(BoxError),
}

impl<S, P, B, ResBody> ResponseFuture<S, P, B>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    P: Policy<B, ResBody>,
{
    pub(crate) fn new(service: S, policy: P, config: Arc<Config>, request: Request<B>) -> Self {
        let (parts, body) = request.into_parts();
        if parts.uri.authority().is_none() && config.warned.server_side() {
            events::server_side(&parts);
        }
        let cost = parts.extensions.get::<TokenCost>().copied();
        let gate = config
            .key_of(&parts)
            .map(|key| config.gates.call(key, cost, &config.settings));
        let (sent, replay) = match policy.clone_body(&body) {
            Some(copy) => (copy, Some(body)),
            None => (body, None),
        };
        ResponseFuture {
            state: State::Entering { body: sent },
            service,
            policy,
            draws: config.draws(),
            config,
            request: parts,
            replay,
            last: None,
            budget: Budget::default(),
            gate,
            ready: true,
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
            let step = match this.state.as_mut().project() {
                StateProj::Entering { .. } => {
                    match this.state.as_mut().project_replace(State::Done) {
                        StateOwned::Entering { body } => this.enter(body, Instant::now()),
                        _ => continue,
                    }
                }
                StateProj::Calling { future, pass } => {
                    let result = ready!(future.poll(cx));
                    let pass = pass.take();
                    this.answered(result, pass)
                }
                StateProj::Sleeping { sleep, since, .. } => {
                    ready!(sleep.as_mut().poll(cx));
                    let (key, waited) =
                        (this.gate.as_ref().map(Call::key), Instant::now() - *since);
                    events::waited(key, waited, this.budget.retries() + 1);
                    telemetry::waited(key, waited);
                    match this.state.as_mut().project_replace(State::Done) {
                        StateOwned::Sleeping { body, .. } => Step::Next(State::Entering { body }),
                        _ => continue,
                    }
                }
                StateProj::Waiting {
                    sleep,
                    since,
                    place,
                    ..
                } => {
                    let since = *since;
                    let now = Instant::now();
                    let deadline = after(since, this.budget.time_left(&this.config.settings));
                    // Asked before the deadline is checked: a gate that opens at the very
                    // instant the budget ends lets the call go, as entering promised.
                    match place.poll(now, deadline.saturating_duration_since(now), cx.waker()) {
                        Ok(pass) => {
                            this.budget.add_wait(now - since);
                            let key = this.gate.as_ref().map(Call::key);
                            events::waited(key, now - since, this.budget.retries() + 1);
                            telemetry::waited(key, now - since);
                            match this.state.as_mut().project_replace(State::Done) {
                                StateOwned::Waiting { body, .. } => this.clear(pass, body),
                                _ => continue,
                            }
                        }
                        Err(NotYet::GiveUp(throttled)) => {
                            // Closed longer than the call may wait: it gives up now, rather
                            // than sleep out its budget first.
                            this.budget.add_wait(now - since);
                            telemetry::waited(this.gate.as_ref().map(Call::key), now - since);
                            this.throttled(throttled)
                        }
                        Err(NotYet::Reroute) => {
                            // It waited here, then leaves to arrive again elsewhere: that wait
                            // is told as any other, whatever it meets next.
                            this.budget.add_wait(now - since);
                            let key = this.gate.as_ref().map(Call::key);
                            events::waited(key, now - since, this.budget.retries() + 1);
                            telemetry::waited(key, now - since);
                            match this.state.as_mut().project_replace(State::Done) {
                                StateOwned::Waiting { body, .. } => {
                                    Step::Next(State::Entering { body })
                                }
                                _ => continue,
                            }
                        }
                        Err(_) if now >= deadline => {
                            // The budget is spent, whatever the gate would say later.
                            this.budget.add_wait(deadline - since);
                            let key = this.gate.as_ref().map(Call::key);
                            telemetry::waited(key, deadline - since);
                            let throttled = place.throttled(now);
                            this.throttled(throttled)
                        }
                        Err(NotYet::LookAgain(look_again)) => {
                            let wake = look_again.map_or(deadline, |at| at.min(deadline));
                            if sleep.deadline() != wake {
                                sleep.as_mut().reset(wake);
                            }
                            ready!(sleep.as_mut().poll(cx));
                            continue;
                        }
                    }
                }
                StateProj::Reserving { reserving, .. } => {
                    let answer = ready!(reserving.poll(cx));
                    let asked = reserving.asked();
                    match this.state.as_mut().project_replace(State::Done) {
                        StateOwned::Reserving { pass, body, .. } => {
                            this.reserved(answer, asked, pass, body)
                        }
                        _ => continue,
                    }
                }
                StateProj::Readying { .. } => {
                    if let Err(error) = ready!(this.service.poll_ready(cx)) {
                        // The attempt cannot be sent: the caller gets the last attempt's error,
                        // or why.
                        Step::Finish(Err(match this.last.take() {
                            Some(Kept::Error(last)) => last,
                            _ => error.into(),
                        }))
                    } else {
                        *this.last = None;
                        match this.state.as_mut().project_replace(State::Done) {
                            StateOwned::Readying { pass, body } => this.send(pass, body),
                            _ => continue,
                        }
                    }
                }
                StateProj::Done => panic!("a ResponseFuture is polled after it completed"),
            };
            match step {
                Step::Next(state) => this.state.set(state),
                Step::Finish(result) => {
                    this.state.set(State::Done);
                    return Poll::Ready(result);
                }
            }
        }
    }
}

impl<S, P, B, ResBody> Projection<'_, S, P, B>
where
    S: Service<Request<B>, Response = Response<ResBody>> + Clone,
    S::Error: Into<BoxError>,
    P: Policy<B, ResBody>,
{
    /// The attempt with `body` arrives at its gate: it goes, waits there, or gives up.
    fn enter(&mut self, body: B, now: Instant) -> Step<S::Future, B, S::Response> {
        let Some(gate) = self.gate.as_mut() else {
            return self.go(None, body);
        };
        let budget = self.budget.time_left(&self.config.settings);
        let entered = gate.enter(now, budget, self.request.uri.path());
        self.entered(entered, body, now)
    }

    /// What the attempt with `body` met at its gate at `now`, acted on.
    fn entered(
        &mut self,
        entered: Entered,
        body: B,
        now: Instant,
    ) -> Step<S::Future, B, S::Response> {
        match entered {
            Entered::Admitted(pass) => self.go(Some(pass), body),
            Entered::Queued(place) => {
                let attempt = self.budget.retries() + 1;
                let (wait, held) = (place.estimate(now), place.throttled(now));
                let by = held.held_by();
                if !self.wait_allowed(place.key(), wait, by, attempt) {
                    return self.throttled(held);
                }
                events::at_gate(place.key(), wait, by, attempt, None);
                self.wait(place, body, now)
            }
            Entered::Throttled(throttled) => self.throttled(throttled),
            Entered::NotBefore(until, by) => {
                // Spread as an instruction is: the calls held until one instant leave apart;
                // but never past the call's budget (the gate let the hold itself through only
                // where it fits).
                let settings = &self.config.settings;
                let held = until.saturating_duration_since(now);
                let left = self.budget.time_left(settings).max(held);
                let wait = settings
                    .backoff
                    .instructed(held, self.draws.unit())
                    .min(left);
                let attempt = self.budget.retries() + 1;
                if let Some(key) = self.gate.as_ref().map(|gate| gate.key().clone()) {
                    if !self.wait_allowed(&key, wait, by, attempt) {
                        return self.throttled(Throttled::new(key, held, by));
                    }
                    events::at_gate(&key, wait, by, attempt, None);
                }
                self.sleep(wait, body, now)
            }
            Entered::Held(until) => {
                let wait = until.saturating_duration_since(now);
                let attempt = self.budget.retries() + 1;
                if let Some(key) = self.gate.as_ref().map(|gate| gate.key().clone()) {
                    if !self.wait_allowed(&key, wait, HeldBy::Fleet, attempt) {
                        return self.throttled(Throttled::new(key, wait, HeldBy::Fleet));
                    }
                    events::at_gate(&key, wait, HeldBy::Fleet, attempt, None);
                }
                self.sleep(wait, body, now)
            }
        }
    }

    /// Whether the operator's hook lets a call on `key` wait `wait`, held by `by`, before its
    /// attempt `attempt`.
    fn wait_allowed(&self, key: &Key, wait: Duration, by: HeldBy, attempt: u32) -> bool {
        self.config.notify(&Notice::Wait {
            key,
            wait,
            by,
            attempt,
        })
    }

    /// A key's episode turned: the operator is told, in an event and through the hook.
    fn episode(&self, key: &Key, episode: Episode) {
        events::episode(key, &episode);
        match episode {
            Episode::Closed(closed) => telemetry::closed(key, closed.left),
            Episode::Reopened => telemetry::closed(key, Duration::ZERO),
        }
        let notice = match episode {
            Episode::Closed(closed) => Notice::Closed {
                key,
                left: closed.left,
                by: closed.by,
            },
            Episode::Reopened => Notice::Reopened { key },
        };
        self.config.notify(&notice);
    }

    /// The attempt with `body` sleeps `wait` from `now` before it arrives at its gate again,
    /// holding no readiness meanwhile (as at the gate).
    fn sleep(&mut self, wait: Duration, body: B, now: Instant) -> Step<S::Future, B, S::Response> {
        self.unready();
        self.budget.add_wait(wait);
        Step::Next(State::Sleeping {
            sleep: Box::pin(tokio::time::sleep_until(after(now, wait))),
            since: now,
            body,
        })
    }

    /// Gives back the readiness the service was polled for: a service polled ready may hold a
    /// permit (a concurrency limit) that others need while this call waits.
    fn unready(&mut self) {
        if *self.ready {
            *self.service = self.service.clone();
            *self.ready = false;
        }
    }

    /// The attempt with `body`, let through by its gate with `pass`, has what it needs before
    /// it is sent: a reservation from the store its gates share with other processes, if they
    /// do.
    fn clear(&mut self, pass: Pass, body: B) -> Step<S::Future, B, S::Response> {
        match self.gate.as_ref().and_then(Call::reserve) {
            Some(reserving) => Step::Next(State::Reserving {
                reserving,
                pass,
                body,
            }),
            None => self.proceed(Some(pass), body),
        }
    }

    /// The store's `answer` for the attempt with `body` and `pass`: it goes, or (its gate having
    /// learned what the store knows) sleeps until the store would let it.
    fn reserved(
        &mut self,
        answer: Option<Reservation>,
        asked: Instant,
        pass: Pass,
        body: B,
    ) -> Step<S::Future, B, S::Response> {
        let Some(gate) = self.gate.as_ref() else {
            return self.proceed(Some(pass), body);
        };
        let now = Instant::now();
        // Asking the store is part of sending, as the request's own time is (bounded by the
        // store's deadline), where it lets the call go; a hold runs from the question, and
        // spends the budget from then, as far as the budget goes.
        if matches!(answer, Some(Reservation::NotBefore { .. })) {
            let left = self.budget.time_left(&self.config.settings);
            self.budget.add_wait(now.duration_since(asked).min(left));
        }
        let budget = self.budget.time_left(&self.config.settings);
        let (entered, episode) = gate.reserved(answer, pass, now, budget);
        if let Some(episode) = episode {
            self.episode(gate.key(), episode);
        }
        match entered {
            Entered::Admitted(pass) => self.proceed(Some(pass), body),
            held => self.entered(held, body, now),
        }
    }

    /// The attempt with `body` goes with `pass`: at once on a service polled ready for it,
    /// otherwise once the service is ready.
    fn proceed(&mut self, pass: Option<Pass>, body: B) -> Step<S::Future, B, S::Response> {
        if *self.ready {
            self.send(pass, body)
        } else {
            Step::Next(State::Readying { pass, body })
        }
    }

    /// The attempt with `body` goes through its gate, with `pass` (none if it is not gated):
    /// the first on the service the caller polled ready, a retry once its service is ready.
    fn go(&mut self, pass: Option<Pass>, body: B) -> Step<S::Future, B, S::Response> {
        match pass {
            Some(pass) => self.clear(pass, body),
            None => self.proceed(None, body),
        }
    }

    /// The attempt with `body` waits at its gate from `now`, in `place`, at most what is left
    /// of the call's budget.
    fn wait(&mut self, place: Place, body: B, now: Instant) -> Step<S::Future, B, S::Response> {
        self.unready();
        let left = self.budget.time_left(&self.config.settings);
        Step::Next(State::Waiting {
            sleep: Box::pin(tokio::time::sleep_until(after(now, left))),
            since: now,
            place,
            body,
        })
    }

    /// Sends the attempt with `body` on a service that is ready.
    fn send(&mut self, pass: Option<Pass>, body: B) -> Step<S::Future, B, S::Response> {
        let (key, attempt) = (self.gate.as_ref().map(Call::key), self.budget.retries() + 1);
        events::sent(key, attempt);
        telemetry::sent(key, attempt);
        let request = Request::from_parts(self.request.clone(), body);
        let future = self.service.call(request);
        *self.ready = false;
        Step::Next(State::Calling { future, pass })
    }

    /// The call gives up at its gate: `throttled`, with what is kept of the last attempt.
    fn throttled(&mut self, throttled: Throttled) -> Step<S::Future, B, S::Response> {
        let attempt = self.budget.retries() + 1;
        telemetry::failed_fast(throttled.key());
        events::at_gate(
            throttled.key(),
            throttled.retry_after(),
            throttled.held_by(),
            attempt,
            Some(&throttled),
        );
        // The attempt held at the gate was never sent: only those before it were.
        let cost = CallCost::new(attempt - 1, self.budget.waited());
        Step::Finish(give_up(self.last.take(), throttled.with_cost(cost)))
    }
}

/// How a call ends when its wait cannot fit: with `throttled` (nothing was sent, or the
/// response it had is kept only as its head), or with the last attempt's transport error.
fn give_up<R>(last: Option<Kept>, throttled: Throttled) -> Result<R, BoxError> {
    Err(match last {
        Some(Kept::Error(error)) => error,
        Some(Kept::Head(head)) => throttled.after(head).into(),
        None => throttled.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;
    use http::StatusCode;

    #[test]
    fn giving_up_keeps_the_last_error_or_the_last_responses_head() {
        let held_by = crate::HeldBy::RetryAfter {
            status: StatusCode::TOO_MANY_REQUESTS,
        };
        let throttled = || Throttled::new(Key::named("api"), Duration::from_secs(9), held_by);
        let (head, _) = Response::builder()
            .status(429)
            .header("retry-after", "9")
            .body(())
            .unwrap()
            .into_parts();
        let error = give_up::<()>(Some(Kept::Head(head)), throttled()).unwrap_err();
        let after_response = error.downcast_ref::<Throttled>().unwrap();
        assert_eq!(after_response.status(), Some(StatusCode::TOO_MANY_REQUESTS));
        assert_eq!(after_response.headers().unwrap()["retry-after"], "9");
        let reset: BoxError = "connection reset".into();
        let error = give_up::<()>(Some(Kept::Error(reset)), throttled()).unwrap_err();
        assert_eq!(error.to_string(), "connection reset");
        let error = give_up::<()>(None, throttled()).unwrap_err();
        assert_eq!(error.downcast_ref::<Throttled>().unwrap().status(), None);
    }
}
