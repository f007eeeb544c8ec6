//! What is retried, and how a request is sent again.
//!
//! A [`Policy`] sees each [`Attempt`] (the request, and what came back: a response, or the
//! inner service's error) and answers with an [`Action`]: hand it to the caller, retry after a
//! wait, or treat it as rate limited. It also says how the request body is replayed: a body it
//! cannot copy is sent once and never retried.
//!
//! [`StatusPolicy`] is the default, with the table from the crate's design: 429 is rate
//! limited on any method, 408/500/502/503/504 and mid-flight transport errors are retried only
//! for idempotent requests, connect errors (nothing was sent) on any method. Overrides merge
//! over that table. Whatever a policy says, an answer that came after the server ran the
//! request sends a non-idempotent request no second time: a response reqwest got by following
//! a redirect below the layer, or an error it cannot place before one (see
//! the `reqwest` module, feature `reqwest`).
//!
//! Policies combine with [`PolicyExt::and`] and [`PolicyExt::or`]; a closure becomes one with
//! [`classify_fn`], and a closure that copies a body type of your own joins the default table
//! with [`clone_body_fn`].
//!
//! # Example
//!
//! A closure's `&Attempt<'_, _>` leaves the response body to the client the policy goes on, so
//! one policy serves a hyper-util client (`Incoming`), a reqwest client, or a test's stand-in:
//!
//! ```
//! use bytes::Bytes;
//! use http::StatusCode;
//! use http_body_util::Full;
//! use hyper::body::Incoming;
//! use tower_retry_after::policy::{classify_fn, Action, Attempt, Behaviour, Policy, PolicyExt, StatusPolicy};
//!
//! /// The policy for a hyper-util client: requests with `Full<Bytes>` bodies, `Incoming` responses.
//! fn policy() -> impl Policy<Full<Bytes>, Incoming> + Clone {
//!     // 520 (an origin error behind a CDN) is retried like a 502; 502 and 503 keep their defaults.
//!     let table = StatusPolicy::new().on(StatusCode::from_u16(520).unwrap(), Behaviour::RetryIfIdempotent);
//!     // Never retry anything under /payments, whatever the table says.
//!     let payments = classify_fn(|attempt: &Attempt<'_, _>| {
//!         if attempt.request().uri.path().starts_with("/payments") {
//!             Action::Return
//!         } else {
//!             Action::Retry
//!         }
//!     });
//!     table.and(payments)
//! }
//! # let _ = policy();
//! ```

mod and;
mod attempt;
mod classify_fn;
mod clone_body_fn;
mod idempotent;
mod or;
mod redirected;
mod replay;
mod status;
mod transport;

use http::Response;

use crate::BoxError;

pub use and::And;
pub use attempt::Attempt;
pub use classify_fn::{ClassifyFn, classify_fn};
pub use clone_body_fn::{CloneBodyFn, clone_body_fn};
pub use idempotent::is_idempotent;
pub use or::Or;
#[cfg(feature = "reqwest")]
pub(crate) use redirected::Redirected;
pub(crate) use redirected::after_redirect;
pub use replay::ReplayBody;
pub use status::{Behaviour, StatusPolicy};
pub use transport::is_connect_error;

/// What an attempt produced: a response, or the inner service's error.
#[derive(Debug)]
#[non_exhaustive]
pub enum Outcome<'a, ResBody> {
    /// The server answered.
    Response(&'a Response<ResBody>),
    /// The inner service failed (a transport error, a timeout, …).
    Error(&'a BoxError),
}

impl<'a, ResBody> Outcome<'a, ResBody> {
    /// The outcome an attempt's result describes.
    pub(crate) fn of(result: &'a Result<Response<ResBody>, BoxError>) -> Self {
        match result {
            Ok(response) => Outcome::Response(response),
            Err(error) => Outcome::Error(error),
        }
    }
}

impl<ResBody> Clone for Outcome<'_, ResBody> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<ResBody> Copy for Outcome<'_, ResBody> {}

/// What to do with an attempt's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Hand the outcome to the caller.
    Return,
    /// A transient failure: retry, after the server's instruction if it gave one (a
    /// `Retry-After` on a 503), otherwise after a guessed backoff. Counts against the
    /// transient retries.
    Retry,
    /// The server is rate limiting the client: retry after its instruction (or a guess), if the
    /// layer retries rate-limited responses at all. Counts against the rate-limited retries.
    RateLimited,
}

/// Decides what is retried, and how a request body is replayed.
///
/// `B` is the request body type, `ResBody` the response body type. A policy is cloned for each
/// call, so `&mut self` state lives as long as one call and its retries.
///
/// By the time [`classify`](Policy::classify) runs, a response carries what the layer read of
/// its headers, a [`RateLimitInfo`](crate::RateLimitInfo), in its extensions: a policy can
/// decide by the server's meters as well as by the status.
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::{Action, Attempt, Policy, ReplayBody};
///
/// /// Retries every 5xx, on any method: only for an API whose writes are all idempotent.
/// #[derive(Clone)]
/// struct AllWritesIdempotent;
///
/// // Generic over both bodies, so it serves any client: it reads neither.
/// impl<B: ReplayBody, ResBody> Policy<B, ResBody> for AllWritesIdempotent {
///     fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
///         match attempt.response() {
///             Some(response) if response.status().as_u16() == 429 => Action::RateLimited,
///             Some(response) if response.status().is_server_error() => Action::Retry,
///             Some(_) => Action::Return,
///             None => Action::Retry,
///         }
///     }
///
///     fn clone_body(&self, body: &B) -> Option<B> {
///         body.replay()
///     }
/// }
/// # fn on_a_hyper_client(_: impl tower_retry_after::policy::Policy<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>) {}
/// # on_a_hyper_client(AllWritesIdempotent);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Policy` for request bodies `{B}` and response bodies `{ResBody}`",
    label = "the layer's policy must be a `Policy<{B}, {ResBody}>`",
    note = "a `classify_fn` closure classifies only the response body its `Attempt` names: write `&Attempt<'_, _>`, and the client's body is taken (`hyper::body::Incoming` for a hyper-util client)",
    note = "a policy of your own: implement `Policy<B, ResBody>` generically over the body types it does not read (`impl<B: ReplayBody, ResBody> Policy<B, ResBody> for MyPolicy`)"
)]
pub trait Policy<B, ResBody> {
    /// What to do with this attempt's outcome.
    ///
    /// A response carries what the layer read of its headers, as a
    /// [`RateLimitInfo`](crate::RateLimitInfo) in its extensions, by the time it is classified.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use tower::{Service, ServiceBuilder, ServiceExt};
    /// use tower_retry_after::policy::{classify_fn, Action, Attempt, PolicyExt, StatusPolicy};
    /// use tower_retry_after::{CallCost, RateLimitInfo, RateLimitLayer};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), tower::BoxError> {
    /// // GitHub answers a spent quota with 403 and `x-ratelimit-remaining: 0`: that 403 is a
    /// // rate limit, waited out until the meter's reset.
    /// let github = StatusPolicy::new().or(classify_fn(|attempt: &Attempt<'_, _>| {
    ///     let Some(response) = attempt.response() else { return Action::Return };
    ///     let info = response.extensions().get::<RateLimitInfo>();
    ///     let spent = info.and_then(RateLimitInfo::binding_meter).is_some_and(|meter| meter.is_exhausted());
    ///     if response.status() == 403 && spent { Action::RateLimited } else { Action::Return }
    /// }));
    ///
    /// # // A stand-in for the API: the first request is refused so, for a second.
    /// # let answered = Arc::new(AtomicUsize::new(0));
    /// # let api = move |_: http::Request<String>| {
    /// #     let spent = answered.fetch_add(1, Ordering::SeqCst) == 0;
    /// #     let response = match spent {
    /// #         true => http::Response::builder().status(403).header("x-ratelimit-remaining", "0"),
    /// #         false => http::Response::builder().header("x-ratelimit-remaining", "4999"),
    /// #     };
    /// #     async move { response.header("x-ratelimit-reset", "1").body(String::new()) }
    /// # };
    /// let mut client = ServiceBuilder::new()
    ///     .layer(RateLimitLayer::new().with_policy(github))
    ///     .service_fn(api);
    /// let request = http::Request::get("https://api.github.test/user").body(String::new())?;
    /// let response = client.ready().await?.call(request).await?;
    /// assert_eq!(response.status(), 200);
    /// assert_eq!(response.extensions().get::<CallCost>().unwrap().attempts(), 2);
    /// # Ok(())
    /// # }
    /// ```
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action;

    /// A copy of the request body for another attempt; `None` (the default) means the request
    /// is sent once and never retried.
    fn clone_body(&self, _body: &B) -> Option<B> {
        None
    }
}

impl<B, ResBody, P> Policy<B, ResBody> for &mut P
where
    P: Policy<B, ResBody> + ?Sized,
{
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
        (**self).classify(attempt)
    }

    fn clone_body(&self, body: &B) -> Option<B> {
        (**self).clone_body(body)
    }
}

impl<B, ResBody, P> Policy<B, ResBody> for Box<P>
where
    P: Policy<B, ResBody> + ?Sized,
{
    fn classify(&mut self, attempt: &Attempt<'_, ResBody>) -> Action {
        (**self).classify(attempt)
    }

    fn clone_body(&self, body: &B) -> Option<B> {
        (**self).clone_body(body)
    }
}

/// Combinators for policies.
pub trait PolicyExt: Sized {
    /// `self` decides, and `other` may veto: where `other` says [`Action::Return`], the outcome
    /// is returned. A body is copied by whichever of the two can.
    ///
    /// ```
    /// use tower_retry_after::policy::{classify_fn, Action, Attempt, PolicyExt, StatusPolicy};
    ///
    /// let no_retries_for_uploads = StatusPolicy::new().and(classify_fn(|attempt: &Attempt<'_, _>| {
    ///     if attempt.request().uri.path() == "/upload" { Action::Return } else { Action::Retry }
    /// }));
    /// # fn on_a_hyper_client(_: impl tower_retry_after::policy::Policy<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>) {}
    /// # on_a_hyper_client(no_retries_for_uploads);
    /// ```
    fn and<Q>(self, other: Q) -> And<Self, Q> {
        And::new(self, other)
    }

    /// `self` decides, and where it says [`Action::Return`], `other` decides. A body is copied
    /// by whichever of the two can.
    ///
    /// ```
    /// use tower_retry_after::policy::{classify_fn, Action, Attempt, PolicyExt, StatusPolicy};
    ///
    /// // Also retry 409 Conflict, which this API uses for "try again".
    /// let conflicts_too = StatusPolicy::new().or(classify_fn(|attempt: &Attempt<'_, _>| {
    ///     match attempt.response() {
    ///         Some(response) if response.status() == 409 => Action::Retry,
    ///         _ => Action::Return,
    ///     }
    /// }));
    /// # fn on_a_hyper_client(_: impl tower_retry_after::policy::Policy<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>) {}
    /// # on_a_hyper_client(conflicts_too);
    /// ```
    fn or<Q>(self, other: Q) -> Or<Self, Q> {
        Or::new(self, other)
    }
}

impl<P> PolicyExt for P {}

#[cfg(test)]
mod tests {
    use super::*;

    fn get() -> http::request::Parts {
        http::Request::get("http://api.test/")
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    fn classify(policy: &mut impl Policy<String, ()>, status: u16) -> Action {
        let response = Response::builder().status(status).body(()).unwrap();
        policy.classify(&Attempt::new(&get(), Outcome::Response(&response), 1))
    }

    fn copies(policy: &impl Policy<String, ()>) -> Option<String> {
        policy.clone_body(&"payload".to_owned())
    }

    fn always(action: Action) -> impl Policy<String, ()> + Clone {
        classify_fn(move |_: &Attempt<'_, ()>| action)
    }

    #[test]
    fn and_lets_the_second_policy_veto_but_not_decide() {
        let mut vetoed = StatusPolicy::new().and(always(Action::Return));
        assert_eq!(classify(&mut vetoed, 503), Action::Return, "the veto");
        let mut agreed = StatusPolicy::new().and(always(Action::RateLimited));
        assert_eq!(
            classify(&mut agreed, 503),
            Action::Retry,
            "the first decides"
        );
        assert_eq!(classify(&mut agreed, 200), Action::Return);
    }

    #[test]
    fn combined_and_boxed_policies_copy_a_body_with_whichever_can() {
        let replays = StatusPolicy::new;
        let never = || always(Action::Retry);
        assert_eq!(copies(&replays().and(never())).as_deref(), Some("payload"));
        assert_eq!(copies(&never().and(replays())).as_deref(), Some("payload"));
        assert_eq!(copies(&replays().or(never())).as_deref(), Some("payload"));
        assert_eq!(copies(&never().or(replays())).as_deref(), Some("payload"));
        assert_eq!(copies(&never().and(never())), None);
        assert_eq!(copies(&never().or(never())), None);
        let boxed: Box<dyn Policy<String, ()>> = Box::new(replays());
        assert_eq!(copies(&boxed).as_deref(), Some("payload"));
    }

    #[test]
    fn an_attempt_shows_its_request_its_outcome_and_its_number() {
        let request = get();
        let response = Response::builder().status(503).body(()).unwrap();
        let answered = Attempt::new(&request, Outcome::Response(&response), 2);
        assert_eq!(answered.request().uri, "http://api.test/");
        assert_eq!(
            answered.response().map(Response::status),
            Some(503.try_into().unwrap())
        );
        assert!(answered.error().is_none());
        assert_eq!(answered.number(), 2);
        let error: BoxError = "connection reset".into();
        let failed = Attempt::<()>::new(&request, Outcome::Error(&error), 1);
        assert!(failed.response().is_none());
        assert_eq!(failed.error().unwrap().to_string(), "connection reset");
        assert!(matches!(failed.outcome(), Outcome::Error(_)));
        assert_eq!(failed.number(), 1);
    }

    /// A body type this crate does not know.
    #[derive(Clone, Debug, PartialEq)]
    struct Payload(u8);

    #[test]
    fn clone_body_fn_copies_with_its_closure_and_classifies_by_its_table() {
        let response = |status| Response::builder().status(status).body(()).unwrap();
        let mut default = clone_body_fn(|body: &Payload| Some(body.clone()));
        assert_eq!(
            Policy::<Payload, ()>::clone_body(&default, &Payload(7)),
            Some(Payload(7))
        );
        let classify = |policy: &mut dyn Policy<Payload, ()>, status| {
            let answer = response(status);
            policy.classify(&Attempt::new(&get(), Outcome::Response(&answer), 1))
        };
        assert_eq!(classify(&mut default, 429), Action::RateLimited);
        assert_eq!(classify(&mut default, 520), Action::Return);
        let mut table = StatusPolicy::new()
            .on(
                http::StatusCode::from_u16(520).unwrap(),
                Behaviour::RetryIfIdempotent,
            )
            .clone_body_with(|_: &Payload| None);
        assert_eq!(classify(&mut table, 520), Action::Retry);
        assert_eq!(Policy::<Payload, ()>::clone_body(&table, &Payload(7)), None);
    }
}
