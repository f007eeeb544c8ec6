//! What a request counts against: a [`Key`] names one rate limit, and every call with that key
//! waits on the same gate.

use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
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
#[derive(Clone)]
pub struct Key {
    repr: Repr,
    // Hashed once, when the key is made: every call looks its key up a few times, and hashing
    // an authority byte by byte without case each time cost more than the rest of the lookup.
    hash: u64,
}

#[derive(Clone)]
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
        // Authorities compare without case; lowered once here, keys compare byte for byte.
        let authority = if authority
            .as_str()
            .bytes()
            .any(|byte| byte.is_ascii_uppercase())
        {
            authority.as_str().to_ascii_lowercase().parse().ok()?
        } else {
            authority
        };
        let scheme = request.uri.scheme().cloned();
        let hash = fingerprint(
            scheme
                .as_ref()
                .map_or(&b""[..], |scheme| scheme.as_str().as_bytes()),
            authority.as_str().as_bytes(),
        );
        Some(Key {
            repr: Repr::Origin(scheme, authority),
            hash,
        })
    }

    /// A key of your own naming.
    pub fn named(name: impl Into<Arc<str>>) -> Key {
        let name = name.into();
        // Distinct from every origin's: a name is not an authority.
        let hash = fingerprint(b"\0", name.as_bytes());
        Key {
            repr: Repr::Named(name),
            hash,
        }
    }
}

/// A 64-bit fingerprint of a scheme and a name, the name without case (as authorities
/// compare): FNV-1a, then mixed so that every bit depends on every byte.
fn fingerprint(scheme: &[u8], name: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in scheme
        .iter()
        .chain(b"://")
        .chain(name)
        .map(u8::to_ascii_lowercase)
    {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^ (hash >> 33)
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.repr == other.repr
    }
}

impl PartialEq for Repr {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Repr::Origin(scheme, authority), Repr::Origin(other_scheme, other_authority)) => {
                scheme.as_ref().map(Scheme::as_str) == other_scheme.as_ref().map(Scheme::as_str)
                    && authority.as_str() == other_authority.as_str()
            }
            (Repr::Named(name), Repr::Named(other_name)) => name == other_name,
            _ => false,
        }
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Hashes a [`Key`] by the fingerprint it already holds.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Keys only ever write their fingerprint; anything else is folded in, not lost.
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, fingerprint: u64) {
        self.0 = fingerprint;
    }
}

/// The hasher of maps keyed by [`Key`].
pub(crate) type BuildKeyHasher = BuildHasherDefault<KeyHasher>;

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
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
        let shouted = Key::origin(&parts("https://API.test:8443/", None)).unwrap();
        assert_eq!(shouted.to_string(), "https://api.test:8443");
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
    fn equal_keys_hash_alike_and_case_does_not_count() {
        let lower = Key::origin(&parts("https://api.test/", None)).unwrap();
        let upper = Key::origin(&parts("https://API.TEST/", None)).unwrap();
        assert_eq!(lower.hash, upper.hash);
        let other = Key::origin(&parts("https://api.other/", None)).unwrap();
        assert_ne!(lower.hash, other.hash);
        let mut map = std::collections::HashMap::with_hasher(BuildKeyHasher::default());
        map.insert(lower, 1);
        assert_eq!(map.get(&upper), Some(&1));
        assert_eq!(map.get(&other), None);
        assert_eq!(map.get(&Key::named("https://api.test")), None);
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

    /// A fingerprint only sorts keys into buckets: two that share one are still told apart by
    /// what they name.
    #[test]
    fn keys_sharing_a_fingerprint_are_still_told_apart() {
        let forged = |key: Key, hash: u64| Key { hash, ..key };
        let a = Key::named("a");
        assert_ne!(a, forged(Key::named("b"), a.hash));
        let https = Key::origin(&parts("https://api.test/", None)).unwrap();
        let http = Key::origin(&parts("http://api.test/", None)).unwrap();
        let other = Key::origin(&parts("https://api.other/", None)).unwrap();
        assert_ne!(https, forged(http, https.hash), "another scheme");
        assert_ne!(https, forged(other, https.hash), "another authority");
        assert_ne!(a, forged(https.clone(), a.hash), "a name is not an origin");
        assert_eq!(https, forged(https.clone(), https.hash));
    }

    #[test]
    fn maps_of_keys_hash_by_the_fingerprint_and_fold_in_any_other_bytes() {
        use std::hash::BuildHasher;
        let key = Key::named("tenant-1");
        assert_eq!(BuildKeyHasher::default().hash_one(&key), key.hash);
        let fold = |bytes: &[u8]| {
            let mut hasher = KeyHasher::default();
            hasher.write(bytes);
            hasher.finish()
        };
        assert_ne!(fold(&[1, 2]), fold(&[1, 0]));
        assert_ne!(fold(&[1, 2]), fold(&[2, 1]));
    }
}
