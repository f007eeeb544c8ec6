//! Which requests may run twice without harm.

use http::request::Parts;
use http::{HeaderName, Method};

/// Named once: a name looked up by `&str` is parsed again on every call.
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// Whether sending `request` twice has the effect of sending it once: an idempotent method
/// (RFC 9110 §9.2.2: GET, HEAD, OPTIONS, TRACE, PUT, DELETE), or any request carrying an
/// `Idempotency-Key` header with a value (the server deduplicates it by that value: an empty
/// one names nothing to deduplicate by).
///
/// # Example
///
/// ```
/// use tower_retry_after::policy::is_idempotent;
///
/// let (get, _) = http::Request::get("/").body(()).unwrap().into_parts();
/// assert!(is_idempotent(&get));
/// let (post, _) = http::Request::post("/").body(()).unwrap().into_parts();
/// assert!(!is_idempotent(&post));
/// let (keyed, _) = http::Request::post("/")
///     .header("idempotency-key", "8e03978e-40d5-43e8-bc93-6894a57f9324")
///     .body(())
///     .unwrap()
///     .into_parts();
/// assert!(is_idempotent(&keyed));
/// ```
pub fn is_idempotent(request: &Parts) -> bool {
    matches!(
        request.method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    ) || request
        .headers
        .get_all(IDEMPOTENCY_KEY)
        .iter()
        .any(|key| !key.as_bytes().trim_ascii().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: &str, key: bool) -> Parts {
        let mut request = http::Request::builder().method(method).uri("/");
        if key {
            request = request.header("Idempotency-Key", "k");
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn rfc_9110_idempotent_methods_are_idempotent() {
        for method in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"] {
            assert!(is_idempotent(&parts(method, false)), "{method}");
        }
    }

    #[test]
    fn other_methods_are_not_unless_keyed() {
        for method in ["POST", "PATCH", "CONNECT", "PURGE"] {
            assert!(!is_idempotent(&parts(method, false)), "{method}");
            assert!(is_idempotent(&parts(method, true)), "{method} with a key");
        }
    }

    #[test]
    fn an_empty_idempotency_key_keys_nothing() {
        for empty in ["", " "] {
            let (post, _) = http::Request::post("/")
                .header("Idempotency-Key", empty)
                .body(())
                .unwrap()
                .into_parts();
            assert!(!is_idempotent(&post), "{empty:?}");
        }
    }
}
