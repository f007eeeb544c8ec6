//! [`Or`]: one policy decides, another decides where the first returns.

use http::request::Parts;

use super::{Action, Outcome, Policy};

/// A policy where the first decides, and the second decides what the first would return; made
/// by [`PolicyExt::or`](super::PolicyExt::or).
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::{classify_fn, Action, Outcome, PolicyExt, StatusPolicy};
///
/// let policy = StatusPolicy::new().or(classify_fn(|_: &http::request::Parts, _: Outcome<'_, String>| Action::Retry));
/// # let _ = policy;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Or<A, B> {
    first: A,
    second: B,
}

impl<A, B> Or<A, B> {
    pub(crate) fn new(first: A, second: B) -> Self {
        Or { first, second }
    }
}

impl<Body, ResBody, A, B> Policy<Body, ResBody> for Or<A, B>
where
    A: Policy<Body, ResBody>,
    B: Policy<Body, ResBody>,
{
    fn classify(&mut self, request: &Parts, outcome: Outcome<'_, ResBody>) -> Action {
        match self.first.classify(request, outcome) {
            Action::Return => self.second.classify(request, outcome),
            decided => decided,
        }
    }

    fn clone_body(&self, body: &Body) -> Option<Body> {
        self.first
            .clone_body(body)
            .or_else(|| self.second.clone_body(body))
    }
}
