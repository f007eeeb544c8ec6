//! What a request counts against: a [`Key`] names one rate limit, and every call with that key
//! waits on the same gate.

use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use http::uri::{Authority, Scheme};

/// The rate limit a request counts against.
///
/// By default the origin the request is sent to (`scheme://authority`, from the URI, or the
/// `Host` header for a relative URI): servers count clients per origin unless they say
/// otherwise. A [`key function`](crate::RateLimitLayer::key) can name another limit: one per
/// credential, or per tenant header.
///
/// # Example
///
/// ```
/// use tower_retry_after::Key;
///
/// let (parts, _) = http::Request::get("https://api.test/v1/items").body(()).unwrap().into_parts();
/// assert_eq!(Key::origin(&parts).unwrap().to_string(), "https://api.test");
/// assert_eq!(Key::named("tenant-42").to_string(), "tenant-42");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    // Cloned from the request without copying: the URI's parts are reference-counted.
    Origin(Option<Scheme>, Authority),
    Named(Arc<str>),
}

impl Key {
    /// The origin `request` is sent to; `None` if neither its URI nor its `Host` header names
    /// one.
    pub fn origin(request: &Parts) -> Option<Key> {
        let authority = match request.uri.authority() {
            Some(authority) => authority.clone(),
            None => request
                .headers
                .get(http::header::HOST)?
                .to_str()
                .ok()?
                .parse()
                .ok()?,
        };
        Some(Key(Repr::Origin(request.uri.scheme().cloned(), authority)))
    }

    /// A key of your own naming.
    pub fn named(name: impl Into<Arc<str>>) -> Key {
        Key(Repr::Named(name.into()))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Origin(Some(scheme), authority) => write!(f, "{scheme}://{authority}"),
            Repr::Origin(None, authority) => write!(f, "{authority}"),
            Repr::Named(name) => f.write_str(name),
        }
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

/// Names the key of a request: the default is [`Key::origin`]; `None` leaves the request ungated.
pub(crate) type KeyFn = Arc<dyn Fn(&Parts) -> Option<Key> + Send + Sync>;

/// The default key function.
pub(crate) fn by_origin() -> KeyFn {
    Arc::new(Key::origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, host: Option<&str>) -> Parts {
        let mut request = http::Request::get(uri);
        if let Some(host) = host {
            request = request.header("host", host);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn the_origin_is_scheme_and_authority() {
        let key = Key::origin(&parts("https://api.test:8443/v1/items?page=2", None)).unwrap();
        assert_eq!(key.to_string(), "https://api.test:8443");
        assert_eq!(
            key,
            Key::origin(&parts("https://API.test:8443/other", None)).unwrap(),
            "authorities compare without case"
        );
        assert_ne!(
            key,
            Key::origin(&parts("http://api.test:8443/", None)).unwrap()
        );
    }

    #[test]
    fn a_relative_uri_counts_against_its_host() {
        let key = Key::origin(&parts("/v1/items", Some("api.test"))).unwrap();
        assert_eq!(key.to_string(), "api.test");
        assert_eq!(Key::origin(&parts("/v1/items", None)), None);
        assert_eq!(Key::origin(&parts("/v1/items", Some("bad host"))), None);
    }

    #[test]
    fn named_keys_are_their_names() {
        assert_eq!(Key::named("tenant-1"), Key::named(String::from("tenant-1")));
        assert_ne!(
            Key::named("api.test"),
            Key::origin(&parts("/", Some("api.test"))).unwrap()
        );
        assert_eq!(format!("{:?}", Key::named("x")), "Key(x)");
    }
}
