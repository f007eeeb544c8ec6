//! How an attempt's answer is taken: read, classified and decided on, offered to the hook,
//! recorded at the gate; then the call ends, or goes on to its next attempt's wait.

use std::time::{Duration, SystemTime};

use http::Response;
use tokio::time::Instant;
use tower_service::Service;

use super::{Kept, Projection, State, Step};
use crate::BoxError;
use crate::budget::{Answer, Decision, Declined, closure};
use crate::cost::CallCost;
use crate::events;
use crate::gate::call::{Call, Held, Pass, Retry, Said, after};
use crate::key::Key;
use crate::policy::{Action, Attempt, Outcome, Policy, after_redirect, is_idempotent};
use crate::telemetry;
use crate::throttled::HeldBy;

impl<S, P, B, ResBody> Projection<'_, S, P, B>
where
    S: Service<http::Request<B>, Response = Response<ResBody>> + Clone,
    S::Error: Into<BoxError>,
    P: Policy<B, ResBody>,
{
    /// The attempt came back: what it said is read, the policy classifies it and the budget
    /// decides on a wait, the hook may veto it, the gate takes in the answer, and the call ends
    /// or goes on to the next attempt's wait.
    pub(super) fn answered(
        &mut self,
        result: Result<S::Response, S::Error>,
        pass: Option<Pass>,
    ) -> Step<S::Future, B, S::Response> {
        let now = Instant::now();
        let (outcome, said) = self.read(result, pass.as_ref(), now);
        let attempt = self.budget.retries() + 1;
        // What the call cost if it ends with this outcome: nothing more is waited before then.
        let cost = CallCost::new(attempt, self.budget.waited());
        let answer = said.as_ref().map_or_else(Answer::default, Said::answer);
        let cause = said.as_ref().map(Said::held_by);
        let (unit, decision, next) = self.decide(&outcome, answer, attempt);
        let decision = decision.map(|decision| self.hooked(decision, cause, attempt));
        let held = match (pass, said) {
            (Some(pass), Some(said)) => {
                self.record(pass, &said, answer, decision.as_ref(), unit, now)
            }
            // A transport error says nothing about the limit: dropping the pass tells the gate
            // no answer came.
            _ => Held::Free,
        };
        let Some(decision) = decision else {
            return Step::Finish(with_cost(outcome, cost));
        };
        let key = self.gate.as_ref().map(Call::key);
        let Some(body) = next.filter(|_| decision.retries()) else {
            events::wait_decided(key, self.request, &decision, cause, attempt);
            return Step::Finish(with_cost(outcome, cost));
        };
        if let Held::Waiting(place) = &held {
            // A retry the hook was not asked about (a transient failure's) that meets a
            // closure waits there as a call arriving at it does: asked first. So is a
            // rate-limited retry the gate holds longer than the wait the hook allowed (another
            // call closed the key for longer): the hook is asked of the wait it will take.
            let (wait, by) = (place.estimate(now), place.throttled(now).held_by());
            let asked = decision.action == Action::RateLimited && wait <= decision.wait;
            if !asked && !self.wait_allowed(place.key(), wait, by, attempt + 1) {
                let vetoed = decision.declined(Declined::Vetoed);
                events::wait_decided(key, self.request, &vetoed, cause, attempt);
                return Step::Finish(with_cost(outcome, cost));
            }
        }
        events::wait_decided(key, self.request, &decision, cause, attempt);
        if let Held::Throttled(throttled) = &held {
            // The gate stays closed longer than the call may wait, and nothing was waited yet:
            // the caller has the response whole.
            events::at_gate(
                throttled.key(),
                throttled.retry_after(),
                throttled.held_by(),
                attempt + 1,
                Some(throttled),
            );
            return Step::Finish(with_cost(outcome, cost));
        }
        self.retry(outcome, decision, body, held, now)
    }

    /// What the attempt's result says: the response, read at `now`, or the error.
    fn read(
        &mut self,
        result: Result<S::Response, S::Error>,
        pass: Option<&Pass>,
        now: Instant,
    ) -> (Result<S::Response, BoxError>, Option<Said>) {
        match result {
            Ok(mut response) => {
                // The receipt on the wall clock, beside `now` on the monotonic one: the reading
                // measures every time it finds from these two.
                let wall = SystemTime::now();
                let floor = pass.and_then(|pass| pass.server_floor(now));
                let (settings, readers) = (&self.config.settings, &self.config.readers);
                let said = Said::read(&mut response, now, wall, floor, settings, readers);
                (Ok(response), Some(said))
            }
            Err(error) => (Err(error.into()), None),
        }
    }

    /// What the policy makes of attempt `attempt`'s outcome and the budget of the wait it asks
    /// for: the jitter's draw, the decision (none where the outcome is returned), and the next
    /// attempt's body where the call retries.
    fn decide(
        &mut self,
        outcome: &Result<S::Response, BoxError>,
        answer: Answer,
        attempt: u32,
    ) -> (f64, Option<Decision>, Option<B>) {
        let settings = &self.config.settings;
        // After a redirect the request had run, whatever the last hop said (or, where the
        // client does not tell, may have): only a request that may run twice is sent again.
        let ran = after_redirect(outcome) && !is_idempotent(self.request);
        let action = if ran {
            Action::Return
        } else {
            self.policy
                .classify(&Attempt::new(self.request, Outcome::of(outcome), attempt))
        };
        if answer.refused {
            telemetry::refused(self.gate.as_ref().map(Call::key));
        }
        // The jitter's draw, only where a wait may follow: a response the policy returns that
        // was not a refusal ends the call and closes no gate, and most calls end so.
        let unit = if action == Action::Return && !answer.refused {
            0.0
        } else {
            self.draws.unit()
        };
        let Some(decision) = (action != Action::Return).then(|| {
            self.budget
                .decide(action, answer.instruction, settings, unit)
        }) else {
            return (unit, None, None);
        };
        // The next attempt's body, copied now: a retry is decided only with it in hand.
        let next = self
            .replay
            .as_ref()
            .filter(|_| decision.retries())
            .and_then(|body| self.policy.clone_body(body));
        let decision = decision.with_body(next.is_some());
        if let Err(error) = outcome {
            // tower's `Timeout` fails an attempt with "request timed out", hyper-util's connect
            // timeout with "... timed out": either way, each attempt is bounded, not the call.
            if decision.retries()
                && timed_out(error.as_ref())
                && self.config.warned.timeout_inside()
            {
                events::timeout_inside(decision.wait);
            }
        }
        (unit, Some(decision), next)
    }

    /// `decision`, once the operator's hook had its say on a rate-limited wait it would take
    /// (`cause`: what set it) before attempt `attempt + 1`: a veto declines it.
    fn hooked(&self, decision: Decision, cause: Option<HeldBy>, attempt: u32) -> Decision {
        let asks = self.config.hook.is_some()
            && decision.action == Action::RateLimited
            && decision.retries();
        if !asks {
            return decision;
        }
        let key = self.gate.as_ref().map(Call::key).cloned();
        let key = key.or_else(|| Key::origin(self.request));
        let by = cause.unwrap_or(HeldBy::Queue);
        let allowed = key
            .as_ref()
            .is_none_or(|key| self.wait_allowed(key, decision.wait, by, attempt + 1));
        if allowed {
            decision
        } else {
            decision.declined(Declined::Vetoed)
        }
    }

    /// The gate takes in what the answer `said` (read at `now`) and the closure the decision
    /// sets; where the call retries (a refusal or a transient failure: either meets the gate),
    /// the gate says whether it holds the retry.
    fn record(
        &self,
        pass: Pass,
        said: &Said,
        answer: Answer,
        decision: Option<&Decision>,
        unit: f64,
        now: Instant,
    ) -> Held {
        let settings = &self.config.settings;
        // An instruction as the layer keeps it: lifted to the floor, so that no two attempts
        // are ever back to back.
        let floor = settings.backoff.floor();
        let retry = decision
            .filter(|decision| decision.retries())
            .map(|decision| Retry {
                wait: decision.wait,
                instructed: answer.instruction.map(|wait| wait.max(floor)),
                budget: self.budget.time_left(settings),
            });
        let closed_until = closure(answer, decision, settings, unit, || pass.refused_probes())
            .map(|wait| after(now, wait));
        let mut report = said.report(closed_until);
        report.instructed_until = report
            .instructed_until
            .map(|until| until.max(after(now, floor)));
        if let Some(gate) = self.gate.as_ref() {
            let quota = report.quota;
            let learned = said
                .names_a_limit()
                .then(|| gate.learn_limit(self.request.uri.path(), said, &mut report, now))
                .flatten();
            // What the answer said of a limit other than the call's own is told as that
            // limit's: its quota left, and the turn of its episode.
            if let Some((limit, episode)) = learned {
                if let Some(quota) = quota {
                    telemetry::remaining(&limit, quota.remaining);
                }
                if let Some(episode) = episode {
                    self.episode(&limit, episode);
                }
            }
            if let Some(quota) = report.quota {
                telemetry::remaining(gate.key(), quota.remaining);
            }
        }
        let (held, episode) = pass.answered(report, said.tokens(), now, retry);
        if let Some((episode, gate)) = episode.zip(self.gate.as_ref()) {
            self.episode(gate.key(), episode);
        }
        held
    }

    /// The call goes on to its next attempt with `body` after `decision`'s wait: at the gate,
    /// where it `held` the retry, or asleep; `outcome` is kept in case it is the last.
    fn retry(
        &mut self,
        outcome: Result<S::Response, BoxError>,
        decision: Decision,
        body: B,
        held: Held,
        now: Instant,
    ) -> Step<S::Future, B, S::Response> {
        *self.last = Some(match outcome {
            Ok(response) => Kept::Head(response.into_parts().0),
            Err(error) => Kept::Error(error),
        });
        match held {
            // The gate is closed at least as long: the call waits there with every other
            // call on the key.
            Held::Waiting(place) => {
                self.budget.spend(&decision, Duration::ZERO);
                self.wait(place, body, now)
            }
            _ => {
                self.budget.spend(&decision, decision.wait);
                Step::Next(State::Sleeping {
                    sleep: Box::pin(tokio::time::sleep_until(after(now, decision.wait))),
                    since: now,
                    body,
                })
            }
        }
    }
}

/// Whether `error`, or an error it wraps, says a timeout cut the attempt short.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |error| error.source())
        .any(|error| error.to_string().contains("timed out"))
}

/// `outcome`, with what the call `cost` in a response's extensions.
fn with_cost<R>(
    outcome: Result<Response<R>, BoxError>,
    cost: CallCost,
) -> Result<Response<R>, BoxError> {
    outcome.map(|mut response| {
        response.extensions_mut().insert(cost);
        response
    })
}
