//! [`RateLimit`]: the service that reads rate-limit headers and retries what is safe.

use std::task::{Context, Poll};

use http::{Request, Response};
use tower_service::Service;

use crate::future::ResponseFuture;
use crate::gate::Gates;
use crate::jitter::Jitter;
use crate::key::{KeyFn, by_origin};
use crate::layer::{RateLimitLayer, Settings};
use crate::policy::{BoxError, Policy, StatusPolicy};

/// Reads every response's rate-limit headers, attaches them as a
/// [`RateLimitInfo`](crate::RateLimitInfo), and retries what its [`Policy`] allows, waiting as
/// long as the server said (never less) within each call's budget. See the
/// [crate documentation](crate).
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
    settings: Settings,
    gates: Gates,
    key: KeyFn,
    jitter: Jitter,
}

impl<S: std::fmt::Debug, P: std::fmt::Debug> std::fmt::Debug for RateLimit<S, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .field("settings", &self.settings)
            .field("gates", &self.gates)
            .finish_non_exhaustive()
    }
}

impl<S> RateLimit<S> {
    /// Wraps `inner` with the default settings and [`StatusPolicy`].
    pub fn new(inner: S) -> Self {
        RateLimit::with_policy(inner, StatusPolicy::new())
    }

    /// A [`RateLimitLayer`] with the default settings, to configure and apply.
    pub fn layer() -> RateLimitLayer {
        RateLimitLayer::new()
    }
}

impl<S, P> RateLimit<S, P> {
    /// Wraps `inner` with the default settings and `policy`.
    pub fn with_policy(inner: S, policy: P) -> Self {
        RateLimit::with_settings(
            inner,
            policy,
            Settings::default(),
            Gates::new(),
            by_origin(),
            Jitter::Random,
        )
    }

    pub(crate) fn with_settings(
        inner: S,
        policy: P,
        settings: Settings,
        gates: Gates,
        key: KeyFn,
        jitter: Jitter,
    ) -> Self {
        RateLimit {
            inner,
            policy,
            settings,
            gates,
            key,
            jitter,
        }
    }

    /// The gates this service holds its calls at, to read a key's state or share them.
    pub fn gates(&self) -> &Gates {
        &self.gates
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
        ResponseFuture::new(
            ready,
            self.policy.clone(),
            self.settings,
            self.gates.clone(),
            &self.key,
            self.jitter.for_call(),
            request,
        )
    }
}
