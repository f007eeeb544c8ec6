//! [`ResponseFuture`]: one call, every attempt and wait of it, as an explicit state machine.
//!
//! ```text
//! Calling ──outcome──▶ read headers, classify ──Return / declined──▶ done
//!    ▲                          │ retry
//!    └── Readying ◀── Sleeping ◀┘
//! ```
//!
//! Invariants: a retry is only decided once the next request is in hand (a body that cannot be
//! copied is sent once); every wait is checked against the call's budget before it starts; the
//! outcome handed back is always the last one the inner service produced.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::SystemTime;

use http::request::Parts;
use http::{Request, Response};
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower_service::Service;

use crate::budget::{Budget, Decision, Declined};
use crate::headers::RateLimitInfo;
use crate::key::Origin;
use crate::layer::Settings;
use crate::policy::{Action, BoxError, Outcome, Policy};

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
        budget: Budget,
        settings: Settings,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Calling { #[pin] future: F },
        Sleeping { #[pin] sleep: Sleep },
        Readying,
    }
}

impl<S, P, B, ResBody> ResponseFuture<S, P, B>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    P: Policy<B, ResBody>,
{
    pub(crate) fn new(mut service: S, policy: P, settings: Settings, request: Request<B>) -> Self {
        let (parts, body) = request.into_parts();
        let (sent, kept) = match policy.clone_body(&body) {
            Some(copy) => (copy, Some(body)),
            None => (body, None),
        };
        let future = service.call(Request::from_parts(parts.clone(), sent));
        ResponseFuture {
            state: State::Calling { future },
            service,
            policy,
            request: parts,
            body: kept,
            next: None,
            budget: Budget::default(),
            settings,
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
                    let (outcome, instruction) = match ready!(future.poll(cx)) {
                        Ok(mut response) => {
                            let info =
                                RateLimitInfo::from_headers(response.headers(), SystemTime::now());
                            let instruction = info.instructed_wait();
                            response.extensions_mut().insert(info);
                            (Ok(response), instruction)
                        }
                        Err(error) => (Err(error.into()), None),
                    };
                    let classified = match &outcome {
                        Ok(response) => Outcome::Response(response),
                        Err(error) => Outcome::Error(error),
                    };
                    let action = this.policy.classify(this.request, classified);
                    if action == Action::Return {
                        return Poll::Ready(outcome);
                    }
                    let mut decision =
                        this.budget
                            .decide(action, instruction, this.settings, rand::random());
                    if decision.declined.is_none() {
                        *this.next = this
                            .body
                            .as_ref()
                            .and_then(|body| this.policy.clone_body(body));
                        if this.next.is_none() {
                            decision.declined = Some(Declined::NotReplayable);
                        }
                    }
                    trace(this.request, this.budget, &decision);
                    if decision.declined.is_some() {
                        return Poll::Ready(outcome);
                    }
                    this.budget.spend(action, decision.wait);
                    this.state.set(State::Sleeping {
                        sleep: tokio::time::sleep(decision.wait),
                    });
                }
                StateProj::Sleeping { sleep } => {
                    ready!(sleep.poll(cx));
                    this.state.set(State::Readying);
                }
                StateProj::Readying => {
                    ready!(this.service.poll_ready(cx)).map_err(Into::into)?;
                    let body = this
                        .next
                        .take()
                        .expect("a retry is decided only with its body in hand");
                    let request = Request::from_parts(this.request.clone(), body);
                    this.state.set(State::Calling {
                        future: this.service.call(request),
                    });
                }
            }
        }
    }
}

/// One event for every wait the layer decides, taken or declined: a wait the caller cannot see
/// is a stall they cannot debug.
fn trace(request: &Parts, budget: &Budget, decision: &Decision) {
    tracing::info!(
        target: "tower_retry_after",
        key = %Origin(&request.uri),
        reason = ?decision.reason,
        wait_ms = u64::try_from(decision.wait.as_millis()).unwrap_or(u64::MAX),
        attempt = budget.retries() + 1,
        will_retry = decision.declined.is_none(),
        declined = decision.declined.map(tracing::field::display),
        "rate-limit wait",
    );
}
