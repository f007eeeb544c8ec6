//! [`classify_fn`]: a closure as a policy.

use std::fmt;
use std::marker::PhantomData;

use super::{Action, Attempt, Policy};

/// Makes a policy of a closure that classifies attempts. It copies no body: on its own it
/// retries nothing with a body, so it is meant to be combined with a policy that does
/// ([`PolicyExt::and`](super::PolicyExt::and), [`PolicyExt::or`](super::PolicyExt::or)).
///
/// The closure classifies the response body its [`Attempt`] names: write `&Attempt<'_, _>`,
/// and it is the body of the client the policy goes on (`hyper::body::Incoming` for a
/// hyper-util client). A closure that names another (`&Attempt<'_, String>` on a hyper-util
/// client) is not a policy for that client, and the compile error says so.
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::{classify_fn, Action, Attempt};
///
/// let only_429 = classify_fn(|attempt: &Attempt<'_, _>| match attempt.response() {
///     Some(response) if response.status() == 429 => Action::RateLimited,
///     _ => Action::Return,
/// });
/// # fn on_a_hyper_client(_: impl tower_retry_after::policy::Policy<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>) {}
/// # on_a_hyper_client(only_429);
/// ```
pub fn classify_fn<F, ResBody>(classify: F) -> ClassifyFn<F, ResBody>
where
    F: FnMut(&Attempt<'_, ResBody>) -> Action,
{
    ClassifyFn {
        classify,
        response: PhantomData,
    }
}

/// A policy made of a closure; see [`classify_fn`].
pub struct ClassifyFn<F, ResBody> {
    classify: F,
    // Names the response body type, so the closure's signature is fixed where it is written.
    response: PhantomData<fn(ResBody)>,
}

impl<F: Clone, ResBody> Clone for ClassifyFn<F, ResBody> {
    fn clone(&self) -> Self {
        ClassifyFn {
            classify: self.classify.clone(),
            response: PhantomData,
        }
    }
}

impl<F, ResBody> fmt::Debug for ClassifyFn<F, ResBody> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassifyFn").finish_non_exhaustive()
    }
}

impl<B, ResBody, F> Policy<B, ResBody> for ClassifyFn<F, ResBody>
where
    F: FnMut(&Attempt<'_, ResBody>) -> Action,
{
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
        (self.classify)(attempt)
    }
}
