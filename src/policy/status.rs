//! [`StatusPolicy`]: the default table of what is retried, with overrides merged over it.

use std::sync::Arc;

use http::{HeaderName, Response, StatusCode};

use super::replay::ReplayBody;
use super::{Action, Attempt, CloneBodyFn, Outcome, Policy, is_connect_error, is_idempotent};
use crate::headers::RateLimitInfo;

/// What an outcome means for retrying, before the request's idempotency is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Behaviour {
    /// Hand it to the caller.
    Return,
    /// Retry only if the request is idempotent: the server may have acted on it.
    RetryIfIdempotent,
    /// Retry on any method: the server did not act on it.
    Retry,
    /// The server is rate limiting: retry on any method (a limiter rejects before the
    /// application runs, so nothing executed).
    RateLimited,
}

/// The default policy: the table below, with any [`on`](StatusPolicy::on) overrides merged
/// over it, and a server's `x-should-retry` or `Stripe-Should-Retry` header over both.
///
/// | outcome | behaviour |
/// |---|---|
/// | 429 | rate limited, on any method, POST included |
/// | 403 whose headers mark it a refusal ([`RateLimitInfo::is_refusal`]: GitHub's spent limits) | rate limited |
/// | 408, 500, 502, 503, 504 | retried only if the request is idempotent |
/// | 501, 505, 511, other 5xx | returned |
/// | other 4xx, 2xx, 3xx | returned |
/// | transport error while connecting (nothing sent) | retried on any method (under reqwest, which may have followed a redirect first, only if idempotent) |
/// | other transport error (timeout, reset mid-flight) | retried only if idempotent |
///
/// Idempotent: see [`is_idempotent`]. `x-should-retry: false` (or `Stripe-Should-Retry`) on a
/// response returns it; `true` on a 4xx or 5xx retries it on any method (the server says it is
/// safe), and leaves a rate-limited outcome rate limited.
///
/// Request bodies replay through [`ReplayBody`].
///
/// # Example
///
/// ```
/// use http::StatusCode;
/// use tower_retry_after::policy::{Behaviour, StatusPolicy};
///
/// // Overriding 520 changes 520 and nothing else: 502 and 503 keep their defaults.
/// let policy = StatusPolicy::new()
///     .on(StatusCode::from_u16(520).unwrap(), Behaviour::RetryIfIdempotent)
///     .on(StatusCode::SERVICE_UNAVAILABLE, Behaviour::RateLimited);
/// # let _ = policy;
/// ```
#[derive(Clone, Debug, Default)]
pub struct StatusPolicy {
    // Shared: the policy is cloned for every call, and most tables have no override, which
    // then costs the clone nothing.
    overrides: Option<Arc<Vec<(StatusCode, Behaviour)>>>,
}

impl StatusPolicy {
    /// The default table, without overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the behaviour for one status, leaving every other status as it was.
    pub fn on(mut self, status: StatusCode, behaviour: Behaviour) -> Self {
        let overrides = Arc::make_mut(self.overrides.get_or_insert_default());
        overrides.retain(|(known, _)| *known != status);
        overrides.push((status, behaviour));
        self
    }

    /// The behaviour for a response status: the override if there is one, else the default.
    pub fn behaviour(&self, status: StatusCode) -> Behaviour {
        self.overridden(status)
            .unwrap_or_else(|| default_behaviour(status))
    }

    fn overridden(&self, status: StatusCode) -> Option<Behaviour> {
        self.overrides
            .iter()
            .flat_map(|overrides| overrides.iter())
            .find(|(known, _)| *known == status)
            .map(|(_, behaviour)| *behaviour)
    }

    /// The behaviour for a response: a refusal by another status (a 403 its headers mark as
    /// one, see [`RateLimitInfo::is_refusal`]) is rate limited unless that status has an
    /// override; any other response is looked up by its status.
    fn behaviour_of<ResBody>(&self, response: &Response<ResBody>) -> Behaviour {
        let status = response.status();
        // Only a 403 is a refusal by its headers: other statuses skip the lookup.
        let refused_by_headers = status == StatusCode::FORBIDDEN
            && response
                .extensions()
                .get::<RateLimitInfo>()
                .is_some_and(|info| info.is_refusal(status));
        match self.overridden(status) {
            Some(behaviour) => behaviour,
            None if refused_by_headers => Behaviour::RateLimited,
            None => default_behaviour(status),
        }
    }

    /// The same table, with request bodies copied by `clone`: for a body type [`ReplayBody`]
    /// does not cover (see [`clone_body_fn`](super::clone_body_fn)).
    ///
    /// ```
    /// use http::StatusCode;
    /// use tower_retry_after::policy::{Behaviour, StatusPolicy};
    ///
    /// #[derive(Clone)]
    /// struct Payload(Vec<u8>);
    ///
    /// let policy = StatusPolicy::new()
    ///     .on(StatusCode::from_u16(520).unwrap(), Behaviour::RetryIfIdempotent)
    ///     .clone_body_with(|body: &Payload| Some(body.clone()));
    /// # let _ = policy;
    /// ```
    pub fn clone_body_with<F, B>(self, clone: F) -> CloneBodyFn<F>
    where
        F: Fn(&B) -> Option<B>,
    {
        CloneBodyFn::new(self, clone)
    }

    /// The action for an attempt: what [`Policy::classify`] answers. Usable from a policy of
    /// your own.
    pub fn action<ResBody>(&self, attempt: &Attempt<'_, ResBody>) -> Action {
        let request = attempt.request();
        let behaviour = match attempt.outcome() {
            Outcome::Response(response) => {
                let status = response.status();
                let behaviour = self.behaviour_of(response);
                // The server's verdict can stop a retry, or start one for a failure: a success
                // the table returns is returned whatever it says, without looking.
                if behaviour == Behaviour::Return && !is_failure(status) {
                    return Action::Return;
                }
                match should_retry(response.headers()) {
                    Some(false) => Behaviour::Return,
                    Some(true) if behaviour == Behaviour::RateLimited => behaviour,
                    Some(true) if is_failure(status) => Behaviour::Retry,
                    _ => behaviour,
                }
            }
            Outcome::Error(error) if is_connect_error(error) => Behaviour::Retry,
            Outcome::Error(_) => Behaviour::RetryIfIdempotent,
        };
        match behaviour {
            Behaviour::Return => Action::Return,
            Behaviour::RetryIfIdempotent if is_idempotent(request) => Action::Retry,
            Behaviour::RetryIfIdempotent => Action::Return,
            Behaviour::Retry => Action::Retry,
            Behaviour::RateLimited => Action::RateLimited,
        }
    }
}

impl<B: ReplayBody, ResBody> Policy<B, ResBody> for StatusPolicy {
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
        self.action(attempt)
    }

    fn clone_body(&self, body: &B) -> Option<B> {
        body.replay()
    }
}

fn default_behaviour(status: StatusCode) -> Behaviour {
    match status.as_u16() {
        429 => Behaviour::RateLimited,
        408 | 500 | 502 | 503 | 504 => Behaviour::RetryIfIdempotent,
        _ => Behaviour::Return,
    }
}

fn is_failure(status: StatusCode) -> bool {
    status.is_client_error() || status.is_server_error()
}

/// Named once: a name looked up by `&str` is parsed again on every call.
const X_SHOULD_RETRY: HeaderName = HeaderName::from_static("x-should-retry");

const STRIPE_SHOULD_RETRY: HeaderName = HeaderName::from_static("stripe-should-retry");

/// The server's own verdict, `x-should-retry: true|false` (OpenAI, Anthropic) or
/// `Stripe-Should-Retry`, in any case. Where several lines disagree, `false` wins: a retry the
/// server forbade in one of them may run a request twice that it said must not be.
fn should_retry(headers: &http::HeaderMap) -> Option<bool> {
    let names = [X_SHOULD_RETRY, STRIPE_SHOULD_RETRY];
    let verdicts = names
        .iter()
        .flat_map(|name| headers.get_all(name))
        .filter_map(|value| {
            let value = value.as_bytes().trim_ascii();
            if value.eq_ignore_ascii_case(b"false") {
                Some(false)
            } else if value.eq_ignore_ascii_case(b"true") {
                Some(true)
            } else {
                None
            }
        });
    verdicts.reduce(|all, verdict| all && verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Response;
    use http::request::Parts;

    fn request(method: &str) -> Parts {
        http::Request::builder()
            .method(method)
            .uri("http://api.test/")
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    fn response(status: u16, should_retry: Option<&'static str>) -> Response<()> {
        let mut response = Response::builder().status(status);
        if let Some(value) = should_retry {
            response = response.header("x-should-retry", value);
        }
        response.body(()).unwrap()
    }

    fn verdict<ResBody>(
        policy: &StatusPolicy,
        request: &Parts,
        outcome: Outcome<'_, ResBody>,
    ) -> Action {
        policy.action(&Attempt::new(request, outcome, 1))
    }

    fn action(policy: &StatusPolicy, method: &str, status: u16) -> Action {
        verdict(
            policy,
            &request(method),
            Outcome::Response(&response(status, None)),
        )
    }

    #[test]
    fn the_default_table() {
        let policy = StatusPolicy::new();
        for method in ["GET", "POST"] {
            assert_eq!(
                action(&policy, method, 429),
                Action::RateLimited,
                "{method}"
            );
            for status in [
                200, 201, 301, 304, 400, 401, 403, 404, 409, 422, 501, 505, 511, 599,
            ] {
                assert_eq!(
                    action(&policy, method, status),
                    Action::Return,
                    "{method} {status}"
                );
            }
        }
        for status in [408, 500, 502, 503, 504] {
            assert_eq!(
                action(&policy, "GET", status),
                Action::Retry,
                "GET {status}"
            );
            assert_eq!(
                action(&policy, "PUT", status),
                Action::Retry,
                "PUT {status}"
            );
            assert_eq!(
                action(&policy, "POST", status),
                Action::Return,
                "POST {status}"
            );
            assert_eq!(
                action(&policy, "PATCH", status),
                Action::Return,
                "PATCH {status}"
            );
        }
    }

    #[test]
    fn an_override_changes_its_status_and_nothing_else() {
        let policy = StatusPolicy::new().on(
            StatusCode::from_u16(520).unwrap(),
            Behaviour::RetryIfIdempotent,
        );
        assert_eq!(action(&policy, "GET", 520), Action::Retry);
        assert_eq!(action(&StatusPolicy::new(), "GET", 520), Action::Return);
        for status in [408, 500, 502, 503, 504] {
            assert_eq!(action(&policy, "GET", status), Action::Retry, "{status}");
            assert_eq!(action(&policy, "POST", status), Action::Return, "{status}");
        }
        assert_eq!(action(&policy, "POST", 429), Action::RateLimited);
        assert_eq!(action(&policy, "GET", 501), Action::Return);
    }

    #[test]
    fn a_later_override_of_the_same_status_replaces_the_earlier() {
        let policy = StatusPolicy::new()
            .on(StatusCode::BAD_GATEWAY, Behaviour::Retry)
            .on(StatusCode::BAD_GATEWAY, Behaviour::Return);
        assert_eq!(action(&policy, "GET", 502), Action::Return);
        assert_eq!(policy.overrides.unwrap().len(), 1);
    }

    #[test]
    fn overrides_can_loosen_and_tighten() {
        let policy = StatusPolicy::new()
            .on(StatusCode::BAD_GATEWAY, Behaviour::Retry)
            .on(StatusCode::TOO_MANY_REQUESTS, Behaviour::Return)
            .on(StatusCode::SERVICE_UNAVAILABLE, Behaviour::RateLimited);
        assert_eq!(action(&policy, "POST", 502), Action::Retry);
        assert_eq!(action(&policy, "GET", 429), Action::Return);
        assert_eq!(action(&policy, "POST", 503), Action::RateLimited);
    }

    #[test]
    fn an_idempotency_key_makes_a_post_retryable() {
        let mut keyed = request("POST");
        keyed
            .headers
            .insert("idempotency-key", "k".parse().unwrap());
        let outcome = response(502, None);
        assert_eq!(
            verdict(&StatusPolicy::new(), &keyed, Outcome::Response(&outcome)),
            Action::Retry
        );
    }

    #[test]
    fn x_should_retry_overrides_the_table() {
        let policy = StatusPolicy::new();
        let post = request("POST");
        let says = |status, value| {
            verdict(
                &policy,
                &post,
                Outcome::Response(&response(status, Some(value))),
            )
        };
        assert_eq!(says(502, "true"), Action::Retry);
        assert_eq!(says(409, "true"), Action::Retry);
        assert_eq!(says(429, "true"), Action::RateLimited);
        assert_eq!(says(429, "false"), Action::Return);
        assert_eq!(says(200, "true"), Action::Return);
        assert_eq!(says(502, "maybe"), Action::Return);
        let get = request("GET");
        let outcome = response(503, Some("false"));
        assert_eq!(
            verdict(&policy, &get, Outcome::Response(&outcome)),
            Action::Return
        );
    }

    #[test]
    fn of_verdicts_that_disagree_false_wins_whichever_header_or_line_comes_first() {
        let post = request("POST");
        let says = |lines: &[(&str, &str)]| {
            let mut response = Response::builder().status(503);
            for (name, value) in lines {
                response = response.header(*name, *value);
            }
            let response = response.body(()).unwrap();
            verdict(&StatusPolicy::new(), &post, Outcome::Response(&response))
        };
        let (x, stripe) = ("x-should-retry", "stripe-should-retry");
        assert_eq!(says(&[(x, "true"), (x, "false")]), Action::Return);
        assert_eq!(says(&[(x, "false"), (x, "true")]), Action::Return);
        assert_eq!(says(&[(stripe, "false"), (x, "true")]), Action::Return);
        assert_eq!(says(&[(x, "true"), (stripe, "false")]), Action::Return);
        assert_eq!(says(&[(x, "maybe"), (stripe, "true")]), Action::Retry);
        assert_eq!(says(&[(x, "TRUE")]), Action::Retry);
        let get = request("GET");
        let upper = Response::builder()
            .status(503)
            .header(x, "False")
            .body(())
            .unwrap();
        assert_eq!(
            verdict(&StatusPolicy::new(), &get, Outcome::Response(&upper)),
            Action::Return,
            "a verdict in capitals is still the server's"
        );
    }

    #[test]
    fn a_success_is_retried_only_when_an_override_says_so_and_x_should_retry_does_not_widen_it() {
        let accepted = |value| response(202, value);
        let verdict = |policy: &StatusPolicy, method, outcome: &Response<()>| {
            verdict(policy, &request(method), Outcome::Response(outcome))
        };
        let polling = StatusPolicy::new().on(StatusCode::ACCEPTED, Behaviour::Retry);
        assert_eq!(verdict(&polling, "POST", &accepted(None)), Action::Retry);
        let idempotent_only =
            StatusPolicy::new().on(StatusCode::ACCEPTED, Behaviour::RetryIfIdempotent);
        assert_eq!(
            verdict(&idempotent_only, "POST", &accepted(Some("true"))),
            Action::Return,
            "`true` retries a failure on any method, not a success"
        );
        assert_eq!(
            verdict(&idempotent_only, "GET", &accepted(Some("false"))),
            Action::Return
        );
        assert_eq!(
            verdict(&StatusPolicy::new(), "GET", &accepted(Some("true"))),
            Action::Return
        );
    }

    #[test]
    fn transport_errors_that_are_not_connect_errors_need_idempotency() {
        let error: crate::BoxError = "connection reset".into();
        let policy = StatusPolicy::new();
        assert_eq!(
            verdict::<()>(&policy, &request("GET"), Outcome::Error(&error)),
            Action::Retry
        );
        assert_eq!(
            verdict::<()>(&policy, &request("POST"), Outcome::Error(&error)),
            Action::Return
        );
    }
}
