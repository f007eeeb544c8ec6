//! [`Or`]: one policy decides, another decides where the first returns.

use super::{Action, Attempt, Policy};

/// A policy where the first decides, and the second decides what the first would return; made
/// by [`PolicyExt::or`](super::PolicyExt::or).
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::{classify_fn, Action, Attempt, PolicyExt, StatusPolicy};
///
/// let policy = StatusPolicy::new().or(classify_fn(|_: &Attempt<'_, _>| Action::Retry));
/// # fn on_a_hyper_client(_: impl tower_retry_after::policy::Policy<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>) {}
/// # on_a_hyper_client(policy);
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
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
        match self.first.classify(attempt) {
            Action::Return => self.second.classify(attempt),
            decided => decided,
        }
    }

    fn clone_body(&self, body: &Body) -> Option<Body> {
        self.first
            .clone_body(body)
            .or_else(|| self.second.clone_body(body))
    }
}
