//! [`clone_body_fn`]: a closure that copies request bodies, with the default table.

use std::fmt;

use super::{Action, Attempt, Policy, StatusPolicy};

/// The default table ([`StatusPolicy`]) with request bodies copied by `clone`: for a body type
/// that does not implement [`ReplayBody`](super::ReplayBody), typically one from another crate.
/// [`StatusPolicy::clone_body_with`] does the same for a table with overrides.
///
/// # Example
///
/// ```
/// use tower_retry_after::RateLimitLayer;
/// use tower_retry_after::policy::clone_body_fn;
///
/// /// A body type of another crate's, cloneable but unknown to this one.
/// #[derive(Clone)]
/// struct Payload(Vec<u8>);
///
/// let layer = RateLimitLayer::new().with_policy(clone_body_fn(|body: &Payload| Some(body.clone())));
/// # let _ = layer;
/// ```
pub fn clone_body_fn<F, B>(clone: F) -> CloneBodyFn<F>
where
    F: Fn(&B) -> Option<B>,
{
    StatusPolicy::new().clone_body_with(clone)
}

/// A table whose request bodies are copied by a closure; see [`clone_body_fn`].
#[derive(Clone)]
pub struct CloneBodyFn<F> {
    table: StatusPolicy,
    clone: F,
}

impl<F> CloneBodyFn<F> {
    pub(crate) fn new(table: StatusPolicy, clone: F) -> Self {
        CloneBodyFn { table, clone }
    }
}

impl<F> fmt::Debug for CloneBodyFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloneBodyFn")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl<B, ResBody, F> Policy<B, ResBody> for CloneBodyFn<F>
where
    F: Fn(&B) -> Option<B>,
{
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
        self.table.action(attempt)
    }

    fn clone_body(&self, body: &B) -> Option<B> {
        (self.clone)(body)
    }
}
