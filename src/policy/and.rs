//! [`And`]: one policy decides, another may veto.

use super::{Action, Attempt, Policy};

/// A policy where the first decides and the second may veto with [`Action::Return`]; made by
/// [`PolicyExt::and`](super::PolicyExt::and).
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::{classify_fn, Action, Attempt, PolicyExt, StatusPolicy};
///
/// let policy = StatusPolicy::new().and(classify_fn(|_: &Attempt<'_, _>| Action::Return));
/// # fn on_a_hyper_client(_: impl tower_retry_after::policy::Policy<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>) {}
/// # on_a_hyper_client(policy);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct And<A, B> {
    first: A,
    second: B,
}

impl<A, B> And<A, B> {
    pub(crate) fn new(first: A, second: B) -> Self {
        And { first, second }
    }
}

impl<Body, ResBody, A, B> Policy<Body, ResBody> for And<A, B>
where
    A: Policy<Body, ResBody>,
    B: Policy<Body, ResBody>,
{
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
        match self.first.classify(attempt) {
            Action::Return => Action::Return,
            decided => match self.second.classify(attempt) {
                Action::Return => Action::Return,
                _ => decided,
            },
        }
    }

    fn clone_body(&self, body: &Body) -> Option<Body> {
        self.first
            .clone_body(body)
            .or_else(|| self.second.clone_body(body))
    }
}
