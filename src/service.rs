//! [`RateLimit`]: the service that reads rate-limit headers and retries what is safe.

use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower_service::Service;

use crate::BoxError;
use crate::config::Config;
use crate::future::ResponseFuture;
use crate::gate::Gates;
use crate::policy::{Policy, StatusPolicy};

/// Reads every response's rate-limit headers, attaches them as a
/// [`RateLimitInfo`](crate::RateLimitInfo), and retries what its [`Policy`] allows, waiting as
/// long as the server said (never less) within each call's budget. See the
/// [crate documentation](crate).
///
/// # When a call does not compile
///
/// `RateLimit<S, P>` is a `Service<Request<B>>` where its policy is a
/// [`Policy<B, ResBody>`](Policy) for the inner service's bodies; with the default policy, where
/// `B` is a [`ReplayBody`](crate::policy::ReplayBody) (axum's `Body` is not). Called as a
/// method (`client.ready()`, `client.oneshot(request)`), a body or policy that does not fit
/// is reported as E0599, "the method `ready` exists for struct `RateLimit<..>`, but its trait
/// bounds were not satisfied": rustc's method lookup stops at the `Service` bound and names
/// neither. Called through the trait once, `Service::call(&mut client, request)` or
/// `ServiceExt::oneshot(client, request)`, the same mistake is E0277, naming the body or policy
/// and the fix (the recipes: [`ReplayBody`](crate::policy::ReplayBody)).
///
/// # Example
///
/// ```
/// use tower_retry_after::RateLimit;
///
/// let service = RateLimit::new(tower::service_fn(|_request: http::Request<String>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
/// }));
/// # let _ = service;
/// ```
#[derive(Clone)]
pub struct RateLimit<S, P = StatusPolicy> {
    inner: S,
    policy: P,
    config: Arc<Config>,
}

impl<S: std::fmt::Debug, P: std::fmt::Debug> std::fmt::Debug for RateLimit<S, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .field("config", &self.config)
            .finish()
    }
}

impl<S> RateLimit<S> {
    /// Wraps `inner` with the default settings and [`StatusPolicy`].
    pub fn new(inner: S) -> Self {
        RateLimit::with_policy(inner, StatusPolicy::new())
    }
}

impl<S, P> RateLimit<S, P> {
    /// Wraps `inner` with the default settings and `policy`.
    pub fn with_policy(inner: S, policy: P) -> Self {
        RateLimit::with_config(inner, policy, Arc::default())
    }

    pub(crate) fn with_config(inner: S, policy: P, config: Arc<Config>) -> Self {
        RateLimit {
            inner,
            policy,
            config,
        }
    }

    /// The gates this service holds its calls at, to read a key's state or share them.
    pub fn gates(&self) -> &Gates {
        &self.config.gates
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, P, B, ResBody> Service<Request<B>> for RateLimit<S, P>
where
    S: Service<Request<B>, Response = Response<ResBody>> + Clone,
    S::Error: Into<BoxError>,
    P: Policy<B, ResBody> + Clone,
{
    type Response = Response<ResBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S, P, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The service that was polled ready sends the first attempt; its clone stays behind for
        // the next call (tower's convention for a service moved into a future).
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        ResponseFuture::new(ready, self.policy.clone(), self.config.clone(), request)
    }
}
