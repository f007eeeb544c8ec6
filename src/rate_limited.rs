//! [`RateLimited`]: whether a call's result says it was rate limited, and for how long, read
//! by [`RateLimitedExt`] from the result, whichever way the layer ended the call.

use std::error::Error;
use std::time::{Duration, SystemTime};

use http::{Extensions, HeaderMap, StatusCode};

use crate::BoxError;
use crate::headers::RateLimitInfo;
use crate::throttled::{HeldBy, Throttled};

/// A call was rate limited: how long until the server would take it again, as far as the
/// server or the key's gate said, and what said so. Read from a call's result with
/// [`RateLimitedExt::rate_limited`].
///
/// Rate limiting reaches a caller two ways, and this reads both alike:
///
/// - **A refusal, returned**: `Ok(response)` with status 429, or a 403 that
///   [`RateLimitInfo::is_refusal`] marks as one (GitHub's). The layer returns it when it will
///   not wait: the server's wait is over `retry_after_cap`, the call's budget or retries are
///   spent, or its body cannot be replayed. [`retry_after`](Self::retry_after) is the wait the
///   response names ([`RateLimitInfo::instructed_wait`]), [`status`](Self::status) its status.
/// - **A call the layer declined to send**: `Err` holding [`Throttled`], because the key's gate
///   stays closed longer than the call may wait. [`retry_after`](Self::retry_after) is the time
///   the gate has left, [`held_by`](Self::held_by) what holds it, and [`sent`](Self::sent) is
///   false when the call gave up before sending anything.
///
/// Every wait is counted from when the call ended: the receipt of the response, or the moment
/// the call gave up.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use tower_retry_after::{RateLimited, RateLimitedExt, Throttled};
///
/// // A 429 the layer returned, and the call after it that the gate declined.
/// let refused = http::Response::builder()
///     .status(429)
///     .header("retry-after", "3600")
///     .body(())
///     .unwrap();
/// let limited = Ok::<_, tower_retry_after::BoxError>(refused).rate_limited().unwrap();
/// assert_eq!(limited.retry_after(), Some(Duration::from_secs(3600)));
/// assert_eq!(limited.status(), Some(http::StatusCode::TOO_MANY_REQUESTS));
/// assert!(limited.sent() && limited.held_by().is_none());
///
/// // An error type of your own that holds a `Throttled` reads it the same way.
/// fn wait_of(error: &tower_retry_after::BoxError) -> Option<Duration> {
///     let limited = RateLimited::from(error.downcast_ref::<Throttled>()?);
///     tracing::warn!(wait = ?limited.retry_after(), sent = limited.sent(), "rate limited");
///     limited.retry_after()
/// }
/// assert_eq!(wait_of(&"connection reset".into()), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimited {
    retry_after: Option<Duration>,
    status: Option<StatusCode>,
    held_by: Option<HeldBy>,
    sent: bool,
}

impl RateLimited {
    /// How long until the server would take the call again, from when the call ended: the wait
    /// a refusal names, or the time a [`Throttled`] says its gate has left. `None` for a
    /// refusal that named no time (a 429 without `Retry-After` or a spent meter): when to come
    /// back is then the caller's guess.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The status of the refusal the caller got, or for a [`Throttled`] the status of the last
    /// response its call had (`None` if it had none: it gave up before sending, or after a
    /// transport error).
    pub fn status(&self) -> Option<StatusCode> {
        self.status
    }

    /// What holds the key's calls back, where the layer declined to send ([`Throttled`]);
    /// `None` for a refusal the server returned.
    pub fn held_by(&self) -> Option<HeldBy> {
        self.held_by
    }

    /// Whether the call sent any request: false only when the layer declined at the key's gate
    /// before the first, so the call reached the server not at all and spent none of its quota.
    pub fn sent(&self) -> bool {
        self.sent
    }

    /// A response with `status`, `headers` and `extensions` is a refusal: as the layer read it
    /// (the [`RateLimitInfo`] in its extensions), or as its headers read now, for a response
    /// that did not pass through the layer.
    pub(crate) fn refusal(
        status: StatusCode,
        headers: &HeaderMap,
        extensions: &Extensions,
    ) -> Option<RateLimited> {
        let read_now;
        let info = match extensions.get::<RateLimitInfo>() {
            Some(info) => info,
            None => {
                read_now = RateLimitInfo::from_headers(headers, SystemTime::now());
                &read_now
            }
        };
        info.is_refusal(status).then(|| RateLimited {
            retry_after: info.instructed_wait(),
            status: Some(status),
            held_by: None,
            sent: true,
        })
    }
}

impl From<&Throttled> for RateLimited {
    fn from(throttled: &Throttled) -> Self {
        RateLimited {
            retry_after: Some(throttled.retry_after()),
            status: throttled.status(),
            held_by: Some(throttled.held_by()),
            sent: throttled.cost().attempts() > 0,
        }
    }
}

/// Reads whether a call's result was rate limited, and for how long: one arm of a match for
/// every way rate limiting reaches a caller (see [`RateLimited`]).
///
/// Implemented for the result of a tower stack over `http` (a hyper-util client under the
/// layer, with or without a `Timeout` outside it), and, with the `reqwest` feature, for a
/// `reqwest_middleware` client's (`Result<reqwest::Response, reqwest_middleware::Error>`).
/// It borrows the result, as `reqwest_retry::Retryable::from_reqwest_response` and
/// `tower::retry::Policy::retry` do, so it serves a caller's match and a retry policy alike.
///
/// What is not rate limited reads `None`:
///
/// - a response that is not a refusal (a 403 that [`RateLimitInfo::is_refusal`] does not mark
///   as one is a plain 403), and a transport error;
/// - **an outer timeout's `Elapsed`** (`tower::timeout::Timeout`, or `tokio::time::timeout`
///   around a reqwest call). It says only that the call took longer than the timeout, which a
///   slow or hung server does as well as a wait, and it names no time to come back. With the
///   timeout above `max_wait` plus the attempts' own time, as the layer advises, the layer ends
///   every rate-limited call itself first, with the refusal or [`Throttled`]: `Elapsed` then
///   means the server was slow, and backing off for a rate limit would be the wrong answer.
///   Below that, it may have cut a wait: the key's gate still says so
///   ([`Gates::snapshot`](crate::Gates::snapshot), `closed_for`), and the timeout is the
///   setting to fix.
///
/// # Example
///
/// The four ways a call through the layer can end, and the one arm for being rate limited:
///
/// ```
/// use std::time::Duration;
/// use tower::{Service, ServiceBuilder, ServiceExt};
/// use tower_retry_after::{RateLimitLayer, RateLimitedExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), tower::BoxError> {
/// // A server that refuses everything for an hour: longer than the layer waits.
/// let mut client = ServiceBuilder::new()
///     .timeout(Duration::from_secs(300))
///     .layer(RateLimitLayer::new())
///     .service_fn(|_request: http::Request<String>| async {
///         http::Response::builder()
///             .status(429)
///             .header("retry-after", "3600")
///             .body(String::new())
///     });
///
/// for _ in 0..2 {
///     let request = http::Request::get("https://api.test/items").body(String::new())?;
///     let result = client.ready().await?.call(request).await;
///     match result.rate_limited() {
///         // The first call gets the 429; the second is declined at the gate, unsent.
///         Some(limited) => {
///             assert!(limited.retry_after() > Some(Duration::from_secs(3500)));
///             println!("come back in {:?}", limited.retry_after());
///         }
///         None => {
///             let response = result?; // a timeout's `Elapsed` or a transport error is `?`'s
///             println!("{}", response.status());
///         }
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub trait RateLimitedExt {
    /// `Some` if the result says the call was rate limited: a refusal returned, or a call the
    /// layer declined to send ([`Throttled`]); `None` otherwise.
    fn rate_limited(&self) -> Option<RateLimited>;
}

impl<B> RateLimitedExt for Result<http::Response<B>, BoxError> {
    fn rate_limited(&self) -> Option<RateLimited> {
        match self {
            Ok(response) => {
                RateLimited::refusal(response.status(), response.headers(), response.extensions())
            }
            Err(error) => throttled(error).map(RateLimited::from),
        }
    }
}

/// The [`Throttled`] in `error`'s source chain, so that it is found under the layers that wrap
/// the errors of the services they hold.
fn throttled(error: &BoxError) -> Option<&Throttled> {
    let error: &(dyn Error + 'static) = error.as_ref();
    std::iter::successors(Some(error), |cause| (*cause).source())
        .find_map(|cause| cause.downcast_ref::<Throttled>())
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::*;
    use crate::cost::CallCost;
    use crate::headers::Unit;
    use crate::key::Key;

    type Result = std::result::Result<http::Response<()>, BoxError>;

    /// A response with `status` and `headers`, with the layer's reading of them attached.
    fn read(status: u16, headers: &[(&str, &str)]) -> http::Response<()> {
        let mut response = unread(status, headers);
        let info = RateLimitInfo::from_headers(response.headers(), SystemTime::now());
        response.extensions_mut().insert(info);
        response
    }

    /// A response with `status` and `headers`, as a service without the layer returns it.
    fn unread(status: u16, headers: &[(&str, &str)]) -> http::Response<()> {
        let mut response = http::Response::builder().status(status);
        for (name, value) in headers {
            response = response.header(*name, *value);
        }
        response.body(()).unwrap()
    }

    fn throttled(held_by: HeldBy) -> Throttled {
        Throttled::new(Key::named("api"), Duration::from_secs(90), held_by)
    }

    const SPENT_HOUR: [(&str, &str); 3] = [
        ("x-ratelimit-resource", "core"),
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", "3600"),
    ];

    #[test]
    fn a_returned_429_is_rate_limited_for_the_longest_wait_it_names() {
        let headers = [
            ("retry-after", "20"),
            ("ratelimit", r#""default";r=0;t=40"#),
        ];
        let limited = Result::Ok(read(429, &headers)).rate_limited().unwrap();
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(40)));
        assert_eq!(limited.status(), Some(StatusCode::TOO_MANY_REQUESTS));
        assert_eq!(limited.held_by(), None);
        assert!(limited.sent());
    }

    #[test]
    fn a_429_that_names_no_time_is_rate_limited_for_an_unknown_wait() {
        let limited = Result::Ok(read(429, &[])).rate_limited().unwrap();
        assert_eq!(limited.retry_after(), None);
    }

    #[test]
    fn a_403_is_rate_limited_only_where_the_reading_marks_it_a_refusal() {
        let limited = Result::Ok(read(403, &SPENT_HOUR)).rate_limited().unwrap();
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(3600)));
        assert_eq!(limited.status(), Some(StatusCode::FORBIDDEN));
        let plain = [
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "3600"),
        ];
        assert_eq!(Result::Ok(read(403, &plain)).rate_limited(), None);
        assert_eq!(Result::Ok(read(403, &[])).rate_limited(), None);
    }

    #[test]
    fn a_spent_meter_on_an_answered_call_is_not_rate_limited() {
        assert_eq!(Result::Ok(read(200, &SPENT_HOUR)).rate_limited(), None);
        assert_eq!(
            Result::Ok(read(503, &[("retry-after", "9")])).rate_limited(),
            None
        );
    }

    #[test]
    fn a_response_the_layer_did_not_read_is_read_from_its_headers() {
        let limited = Result::Ok(unread(429, &[("retry-after", "30")]))
            .rate_limited()
            .unwrap();
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(30)));
        let refused = Result::Ok(unread(403, &SPENT_HOUR)).rate_limited().unwrap();
        assert_eq!(refused.retry_after(), Some(Duration::from_secs(3600)));
    }

    #[test]
    fn a_call_declined_at_the_gate_is_rate_limited_for_the_time_the_gate_has_left() {
        let held_by = HeldBy::SpentMeter {
            status: StatusCode::FORBIDDEN,
            unit: Unit::Requests,
        };
        let error: BoxError = throttled(held_by).into();
        let limited = Result::Err(error).rate_limited().unwrap();
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(90)));
        assert_eq!(limited.held_by(), Some(held_by));
        assert_eq!(limited.status(), None);
        assert!(!limited.sent(), "declined before the first request");
    }

    #[test]
    fn a_call_that_gave_up_waiting_to_retry_says_it_sent_and_what_it_had() {
        let held_by = HeldBy::Queue;
        let head = unread(429, &[]).into_parts().0;
        let error: BoxError = throttled(held_by)
            .with_cost(CallCost::new(1, Duration::from_secs(5)))
            .after(head)
            .into();
        let limited = Result::Err(error).rate_limited().unwrap();
        assert_eq!(limited.status(), Some(StatusCode::TOO_MANY_REQUESTS));
        assert_eq!(limited.held_by(), Some(HeldBy::Queue));
        assert!(limited.sent());
    }

    /// An error of a layer outside this one, holding this one's as its source.
    #[derive(Debug)]
    struct Wrapped(Throttled);

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("outer layer failed")
        }
    }

    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn throttled_is_found_under_an_error_that_wraps_it() {
        let error: BoxError = Wrapped(throttled(HeldBy::Fleet)).into();
        let limited = Result::Err(error).rate_limited().unwrap();
        assert_eq!(limited.held_by(), Some(HeldBy::Fleet));
    }

    #[test]
    fn a_timeout_or_a_transport_error_is_not_rate_limited() {
        let elapsed: BoxError = tower::timeout::error::Elapsed::new().into();
        assert_eq!(Result::Err(elapsed).rate_limited(), None);
        let reset: BoxError = std::io::Error::from(std::io::ErrorKind::ConnectionReset).into();
        assert_eq!(Result::Err(reset).rate_limited(), None);
    }
}
