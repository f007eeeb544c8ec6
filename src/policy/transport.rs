//! Transport errors: which ones sent nothing.

use crate::BoxError;

/// Whether `error` happened while connecting, before any byte of the request was sent: then
/// retrying cannot run the request twice, whatever its method.
///
/// Recognises hyper-util's legacy client errors (`is_connect`) anywhere in the error's source
/// chain, so the answer survives wrapping by other layers, and, with the `reqwest` feature,
/// reqwest's (`is_connect`), bare or as a `reqwest_middleware::Error`. With neither feature,
/// no error is known to be a connect error.
///
/// # Example
///
/// ```
/// use tower_retry_after::BoxError;
/// use tower_retry_after::policy::is_connect_error;
///
/// let timeout: BoxError = "request timed out".into();
/// assert!(!is_connect_error(&timeout));
/// ```
pub fn is_connect_error(error: &BoxError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error.as_ref());
    while let Some(error) = cause {
        if is_hyper_util_connect_error(error) || is_reqwest_connect_error(error) {
            return true;
        }
        cause = error.source();
    }
    false
}

// A reqwest error wrapped in reqwest-middleware's is transparent: its `source()` skips the
// reqwest error itself, so each is asked directly.
#[cfg(feature = "reqwest")]
fn is_reqwest_connect_error(error: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(error) = error.downcast_ref::<reqwest_middleware::Error>() {
        return error.is_connect();
    }
    error
        .downcast_ref::<reqwest::Error>()
        .is_some_and(reqwest::Error::is_connect)
}

#[cfg(not(feature = "reqwest"))]
fn is_reqwest_connect_error(_error: &(dyn std::error::Error + 'static)) -> bool {
    false
}

#[cfg(feature = "hyper-util")]
fn is_hyper_util_connect_error(error: &(dyn std::error::Error + 'static)) -> bool {
    error
        .downcast_ref::<hyper_util::client::legacy::Error>()
        .is_some_and(hyper_util::client::legacy::Error::is_connect)
}

#[cfg(not(feature = "hyper-util"))]
fn is_hyper_util_connect_error(_error: &(dyn std::error::Error + 'static)) -> bool {
    false
}
