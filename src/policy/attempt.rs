//! [`Attempt`]: what a policy is shown of one attempt.

use http::Response;
use http::request::Parts;

use super::Outcome;
use crate::BoxError;

/// One attempt of a call, as a [`Policy`](super::Policy) sees it: the request, what came back,
/// and which attempt of the call it was.
///
/// Read through accessors, so that the layer can show a policy more about an attempt later
/// without breaking the policies written against it.
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::{classify_fn, Action, Attempt};
///
/// // Gives up on anything but a 429 after the second attempt.
/// let patient_only_for_429 = classify_fn(|attempt: &Attempt<'_, _>| {
///     match attempt.response() {
///         Some(response) if response.status() == 429 => Action::RateLimited,
///         Some(response) if response.status().is_server_error() && attempt.number() < 2 => {
///             Action::Retry
///         }
///         _ => Action::Return,
///     }
/// });
/// # fn on_a_hyper_client(_: impl tower_retry_after::policy::Policy<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>) {}
/// # on_a_hyper_client(patient_only_for_429);
/// ```
#[derive(Debug)]
pub struct Attempt<'a, ResBody> {
    request: &'a Parts,
    outcome: Outcome<'a, ResBody>,
    number: u32,
}

impl<ResBody> Clone for Attempt<'_, ResBody> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<ResBody> Copy for Attempt<'_, ResBody> {}

impl<'a, ResBody> Attempt<'a, ResBody> {
    pub(crate) fn new(request: &'a Parts, outcome: Outcome<'a, ResBody>, number: u32) -> Self {
        Attempt {
            request,
            outcome,
            number,
        }
    }

    /// The request that was sent (its body aside).
    pub fn request(&self) -> &'a Parts {
        self.request
    }

    /// What came back: a response, or the inner service's error.
    pub fn outcome(&self) -> Outcome<'a, ResBody> {
        self.outcome
    }

    /// The response, if the server answered.
    pub fn response(&self) -> Option<&'a Response<ResBody>> {
        match self.outcome {
            Outcome::Response(response) => Some(response),
            Outcome::Error(_) => None,
        }
    }

    /// The inner service's error, if it failed.
    pub fn error(&self) -> Option<&'a BoxError> {
        match self.outcome {
            Outcome::Error(error) => Some(error),
            Outcome::Response(_) => None,
        }
    }

    /// Which attempt of the call this was: 1 for the first, 2 for the first retry.
    pub fn number(&self) -> u32 {
        self.number
    }
}
