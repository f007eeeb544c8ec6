//! [`CallCost`]: what one call spent on being rate limited, for the caller to log or meter.

use std::time::Duration;

/// What one call through the layer cost: how many requests it sent, and how long it waited.
///
/// The layer puts it in the extensions of every response it returns, retried or not, beside
/// the [`RateLimitInfo`](crate::RateLimitInfo); a call that gave up waiting carries it in its
/// [`Throttled`](crate::Throttled) error. It counts what the client did, not what the server
/// says: log or meter it without relying on the server's meters.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Duration;
/// use tower::{Service, ServiceBuilder, ServiceExt};
/// use tower_retry_after::{CallCost, RateLimitLayer};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), tower::BoxError> {
/// // A server that refuses the first request for a second.
/// let answered = Arc::new(AtomicUsize::new(0));
/// let mut client = ServiceBuilder::new()
///     .layer(RateLimitLayer::new())
///     .service_fn(move |_request: http::Request<String>| {
///         let refused = answered.fetch_add(1, Ordering::SeqCst) == 0;
///         async move {
///             let response = match refused {
///                 true => http::Response::builder().status(429).header("retry-after", "1"),
///                 false => http::Response::builder(),
///             };
///             response.body(String::new())
///         }
///     });
///
/// let request = http::Request::get("https://api.test/items").body(String::new())?;
/// let response = client.ready().await?.call(request).await?;
/// let cost = response.extensions().get::<CallCost>().unwrap();
/// assert_eq!(cost.attempts(), 2);
/// assert!(cost.waited() >= Duration::from_secs(1));
/// tracing::info!(attempts = cost.attempts(), waited = ?cost.waited(), "called the API");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallCost {
    attempts: u32,
    waited: Duration,
}

impl CallCost {
    pub(crate) fn new(attempts: u32, waited: Duration) -> Self {
        CallCost { attempts, waited }
    }

    /// How many requests the call sent, the first included: 1 for a call answered at once, 0
    /// for one that gave up at its key's gate before sending anything.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// How long the call waited, at its key's gate and asleep before its retries, all added
    /// up: what it spent of [`max_wait`](crate::RateLimitLayer::max_wait). The time the
    /// requests themselves took is not in it, nor the time asking a shared store took where it
    /// let the call go (see [`Gates::with_store`](crate::Gates::with_store)).
    pub fn waited(&self) -> Duration {
        self.waited
    }
}
