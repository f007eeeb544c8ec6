//! What a request counts against: a [`Key`] names one rate limit, and every call with that key
//! waits on the same gate.
//!
//! A key is shown in tracing events and in [`Throttled`](crate::Throttled): an origin without
//! its userinfo, a name as written, a credential only as a fingerprint. Maps of keys hash them
//! with a seed of this process, so keys an attacker chooses cannot be made to collide.

use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};
use std::net::Ipv6Addr;
use std::sync::{Arc, OnceLock};

use http::Uri;
use http::request::Parts;
use http::uri::{Authority, Scheme};

/// The rate limit a request counts against.
///
/// By default the origin the request is sent to (`scheme://host:port`, from the URI, or the
/// `Host` header for a relative URI; a URI's userinfo is no part of it): servers count clients
/// per origin unless they say otherwise. So two APIs on one origin share one gate (a 429 from
/// GitHub's search API holds calls to its core API too) unless a
/// [`key function`](crate::RateLimitLayer::key) names them apart: one key per credential
/// ([`Key::credential`]), per tenant or per API ([`Key::named`]).
///
/// To read a gate ([`Gates::snapshot`](crate::Gates::snapshot)) no request is needed: the key
/// of an origin is [`Key::from_origin`] (or [`Key::from_uri`]), and a credential's key is the
/// same whoever makes it.
///
/// # Example
///
/// ```
/// use tower_retry_after::Key;
///
/// let (parts, _) = http::Request::get("https://api.test/v1/items").body(()).unwrap().into_parts();
/// assert_eq!(Key::origin(&parts).unwrap().to_string(), "https://api.test");
/// assert_eq!(Key::origin(&parts).unwrap(), Key::from_origin("https://api.test").unwrap());
/// assert_eq!(Key::named("tenant-42").to_string(), "tenant-42");
/// // Only a fingerprint of a credential is kept, and shown.
/// let token = Key::credential("Bearer sk-live-0123");
/// assert!(token.to_string().starts_with("credential:"));
/// assert!(!token.to_string().contains("sk-live"));
/// assert_eq!(token, Key::credential("Bearer sk-live-0123"));
/// ```
#[derive(Clone)]
pub struct Key {
    repr: Repr,
    // Hashed once, when the key is made: every call looks its key up a few times, and hashing
    // an authority byte by byte each time cost more than the rest of the lookup.
    hash: u64,
}

#[derive(Clone)]
enum Repr {
    // Behind one reference count: a call's key is cloned into its tickets and compared with
    // the gate's clone of it, and a count and a pointer are cheaper than the URI's parts.
    Origin(Arc<Origin>),
    Named(Arc<str>),
    // Only a fingerprint of the credential: the key is printed in events and errors.
    Credential(u64),
    // One of several limits the server keeps for a key (GitHub's resource, Discord's bucket).
    Group(Arc<(Key, Box<str>)>),
}

impl Key {
    /// The origin `request` is sent to, without the URI's userinfo; `None` if neither its URI
    /// nor its `Host` header names one.
    pub fn origin(request: &Parts) -> Option<Key> {
        if request.uri.authority().is_some() {
            return Key::from_uri(&request.uri);
        }
        let host = request
            .headers
            .get(http::header::HOST)?
            .to_str()
            .ok()?
            .parse()
            .ok()?;
        // A relative URI has no scheme: the key is the host alone, as the request names it.
        Key::of_origin(None, host)
    }

    /// The origin of `uri` (`scheme://host:port`, without its userinfo, path or query): the
    /// key of every request sent to it, by default. `None` for a URI without a host.
    ///
    /// For a key to read a gate with ([`Gates::snapshot`](crate::Gates::snapshot)) without
    /// building a request.
    ///
    /// ```
    /// use tower_retry_after::Key;
    ///
    /// let uri: http::Uri = "https://api.test/v1/items?page=2".parse().unwrap();
    /// assert_eq!(Key::from_uri(&uri).unwrap().to_string(), "https://api.test");
    /// assert_eq!(Key::from_uri(&"/v1/items".parse().unwrap()), None);
    /// ```
    pub fn from_uri(uri: &Uri) -> Option<Key> {
        Key::of_origin(uri.scheme().cloned(), uri.authority()?.clone())
    }

    /// The origin written as `scheme://host[:port]` (a trailing `/` is allowed), the same key
    /// as [`Key::origin`] gives every request sent there.
    ///
    /// A path or query is an error rather than ignored: every path of an origin shares its
    /// gate, and a key that looked like `https://api.test/search` would suggest otherwise.
    /// A host without a scheme is an error too: it would not be the key of any request sent
    /// with a full URI, as clients send them.
    ///
    /// ```
    /// use tower_retry_after::Key;
    ///
    /// let key = Key::from_origin("https://API.test:8443").unwrap();
    /// assert_eq!(key.to_string(), "https://api.test:8443");
    /// let error = Key::from_origin("api.test").unwrap_err();
    /// assert_eq!(error.to_string(), "invalid origin: no scheme; write it as https://host[:port]");
    /// assert!(Key::from_origin("https://api.test/search").is_err());
    /// ```
    pub fn from_origin(origin: &str) -> Result<Key, InvalidOrigin> {
        let uri: Uri = origin
            .parse()
            .map_err(|_| InvalidOrigin(Problem::NotAUri))?;
        if uri.scheme().is_none() {
            return Err(InvalidOrigin(Problem::NoScheme));
        }
        if uri
            .path_and_query()
            .is_some_and(|rest| rest.as_str() != "/")
        {
            return Err(InvalidOrigin(Problem::PathOrQuery));
        }
        // `http` takes `https://user@:80` as a URI; as an origin it names no server.
        if uri.host().is_none_or(str::is_empty) {
            return Err(InvalidOrigin(Problem::NoHost));
        }
        Key::from_uri(&uri).ok_or(InvalidOrigin(Problem::NoHost))
    }

    /// The key of `authority` under `scheme`: without userinfo, in lower case.
    fn of_origin(scheme: Option<Scheme>, authority: Authority) -> Option<Key> {
        // Userinfo is a credential, no part of the origin: it would be printed with the key.
        let text = authority.as_str();
        let (host_and_port, had_userinfo) = match text.bytes().rposition(|byte| byte == b'@') {
            Some(at) => (&text[at + 1..], true),
            None => (text, false),
        };
        // A port names the same origin however it is written (RFC 3986 §6.2.3): the scheme's
        // own port or an empty one as none (`https://api.test:443` and `https://api.test:` are
        // `https://api.test`), and without leading zeros. One server, one limit, one gate.
        let host_end = match host_and_port.strip_prefix('[') {
            Some(bracketed) => bracketed
                .find(']')
                .map_or(host_and_port.len(), |end| end + 2),
            None => host_and_port.find(':').unwrap_or(host_and_port.len()),
        };
        let (host, port) = host_and_port.split_at(host_end);
        let default_port = match scheme.as_ref().map(Scheme::as_str) {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        };
        let number = authority
            .port_u16()
            .filter(|number| Some(*number) != default_port);
        // (`:` and the digits of the number, if one is kept.)
        let kept = number.map_or(0, |number| {
            2 + number.checked_ilog10().unwrap_or(0) as usize
        });
        let written_otherwise = port.len() != kept;
        // Authorities compare without case, and an IPv6 address however it is written
        // (`[::1]` is `[0:0:0:0:0:0:0:1]`; reqwest writes one, `http::Uri` keeps the other):
        // written once here as RFC 5952 does, keys compare byte for byte.
        let canonical = host
            .strip_prefix('[')
            .and_then(|host| host.strip_suffix(']'))
            .and_then(|address| address.parse::<Ipv6Addr>().ok())
            .map(|address| format!("[{address}]"));
        let authority = if had_userinfo
            || written_otherwise
            || canonical
                .as_deref()
                .is_some_and(|canonical| canonical != host)
            || host.bytes().any(|byte| byte.is_ascii_uppercase())
        {
            let host = canonical.unwrap_or_else(|| host.to_ascii_lowercase());
            match number {
                Some(number) => format!("{host}:{number}").parse().ok()?,
                None => host.parse().ok()?,
            }
        } else {
            authority
        };
        let hash = map_hash(|hasher| {
            hasher.write_u8(0);
            hasher.write(scheme.as_ref().map_or("", Scheme::as_str).as_bytes());
            hasher.write(authority.as_str().as_bytes());
        });
        Some(Key {
            repr: Repr::Origin(Arc::new(Origin { scheme, authority })),
            hash,
        })
    }

    /// Whether this is the key of the origin `scheme://authority` written exactly as its key
    /// writes it (in lower case, without userinfo): [`Key::from_uri`] would give it again.
    fn is_origin(&self, scheme: Option<&Scheme>, authority: &Authority) -> bool {
        match &self.repr {
            Repr::Origin(origin) => {
                origin.authority.as_str() == authority.as_str()
                    && origin.scheme.as_ref().map(Scheme::as_str) == scheme.map(Scheme::as_str)
            }
            _ => false,
        }
    }

    /// A key of your own naming, shown as written in events and errors: name a credential
    /// with [`Key::credential`] instead.
    pub fn named(name: impl Into<Arc<str>>) -> Key {
        let name = name.into();
        let hash = map_hash(|hasher| {
            hasher.write_u8(1);
            hasher.write(name.as_bytes());
        });
        Key {
            repr: Repr::Named(name),
            hash,
        }
    }

    /// A key for a credential (an API token, an `Authorization` value), for servers that
    /// count per credential. Only a 64-bit fingerprint of it is kept, and shown
    /// (`credential:` and 16 hex digits): the credential never reaches an event or an error.
    /// The fingerprint is the same in every process, so processes sharing a store share the
    /// key's gate; it identifies a credential, it does not protect one an attacker could guess.
    pub fn credential(secret: impl AsRef<[u8]>) -> Key {
        let fingerprint = fingerprint(secret.as_ref());
        let hash = map_hash(|hasher| {
            hasher.write_u8(2);
            hasher.write_u64(fingerprint);
        });
        Key {
            repr: Repr::Credential(fingerprint),
            hash,
        }
    }
}

impl Key {
    /// The key of the limit named `group`, one of several a server keeps for this key (GitHub's
    /// resources, Discord's buckets: see [`RateLimitInfo::limit_group`]). Once an answer names
    /// a route's limit, the layer gates that route's calls by this key: read its gate with
    /// [`Gates::snapshot`](crate::Gates::snapshot).
    ///
    /// [`RateLimitInfo::limit_group`]: crate::RateLimitInfo::limit_group
    ///
    /// ```
    /// use tower_retry_after::Key;
    ///
    /// let api = Key::from_origin("https://api.github.com").unwrap();
    /// let search = api.within("search");
    /// assert_eq!(search.to_string(), "https://api.github.com [search]");
    /// assert_ne!(search, api.within("core"));
    /// ```
    pub fn within(&self, group: &str) -> Key {
        let hash = map_hash(|hasher| {
            hasher.write_u8(3);
            hasher.write_u64(self.hash);
            hasher.write(group.as_bytes());
        });
        Key {
            repr: Repr::Group(Arc::new((self.clone(), Box::from(group)))),
            hash,
        }
    }

    /// The name of the limit this key is one of, if it is one (see [`Key::within`]).
    ///
    /// ```
    /// use tower_retry_after::Key;
    ///
    /// let token = Key::credential("Bearer ghp_0123");
    /// assert_eq!(token.within("core").limit_name(), Some("core"));
    /// assert_eq!(token.limit_name(), None);
    /// ```
    pub fn limit_name(&self) -> Option<&str> {
        match &self.repr {
            Repr::Group(group) => Some(&group.1),
            _ => None,
        }
    }
}

/// A key's origin: the scheme and authority of a URI, cloned from it without copying.
struct Origin {
    scheme: Option<Scheme>,
    authority: Authority,
}

/// Why [`Key::from_origin`] did not take a string as an origin.
///
/// The message says what is wrong but does not repeat the string: it may hold a credential
/// (`https://user:password@host`), and errors are logged.
///
/// # Example
///
/// ```
/// use tower_retry_after::Key;
///
/// let error = Key::from_origin("https://api.test/v1").unwrap_err();
/// assert!(error.to_string().starts_with("invalid origin: a path or query is no part of it"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidOrigin(Problem);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Problem {
    NotAUri,
    NoScheme,
    PathOrQuery,
    NoHost,
}

impl fmt::Display for InvalidOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Problem::NotAUri => "invalid origin: not a URI",
            Problem::NoScheme => "invalid origin: no scheme; write it as https://host[:port]",
            Problem::PathOrQuery => {
                "invalid origin: a path or query is no part of it; every path of an origin \
                 shares its gate unless a key function names them apart"
            }
            Problem::NoHost => "invalid origin: no host",
        })
    }
}

impl std::error::Error for InvalidOrigin {}

/// The seed of every map of keys in this process: random, so that the keys an attacker can
/// choose (hosts, names) cannot be made to collide in the gates' table.
fn seed() -> &'static RandomState {
    static SEED: OnceLock<RandomState> = OnceLock::new();
    SEED.get_or_init(RandomState::new)
}

/// A key's hash for maps: what `write` feeds, under this process's seed.
fn map_hash(write: impl FnOnce(&mut dyn Hasher)) -> u64 {
    let mut hasher = seed().build_hasher();
    write(&mut hasher);
    hasher.finish()
}

/// A credential's fingerprint, the same in every process and every build: FNV-1a, then mixed
/// so that every bit depends on every byte.
fn fingerprint(secret: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in secret {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
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
            (Repr::Origin(origin), Repr::Origin(other)) => {
                Arc::ptr_eq(origin, other)
                    || (origin.scheme.as_ref().map(Scheme::as_str)
                        == other.scheme.as_ref().map(Scheme::as_str)
                        && origin.authority.as_str() == other.authority.as_str())
            }
            (Repr::Named(name), Repr::Named(other_name)) => same_text(name, other_name),
            (Repr::Credential(fingerprint), Repr::Credential(other)) => fingerprint == other,
            (Repr::Group(group), Repr::Group(other)) => group == other,
            _ => false,
        }
    }
}

impl Eq for Key {}

/// Whether two texts are equal, without reading them when they are one text: a key and its
/// clones share theirs, and every call's key is compared with the gate's clone of it.
fn same_text(text: &str, other: &str) -> bool {
    std::ptr::eq(text, other) || text == other
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Hashes a [`Key`] by the hash it already holds.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Keys only ever write their hash; anything else is folded in, not lost.
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// The hasher of maps keyed by [`Key`].
pub(crate) type BuildKeyHasher = BuildHasherDefault<KeyHasher>;

impl Key {
    /// The key's name in a store shared by processes: one name per key, as in the gates
    /// (printed, a key named `https://api.test` and the origin look alike, as do a key named
    /// `t [g]` and the limit `g` of `t`). Its kind first, then what names it; a group's key
    /// after its length, so that no group name can reach into it.
    #[cfg(feature = "redis")]
    pub(crate) fn store_name(&self) -> String {
        match &self.repr {
            Repr::Origin(_) => format!("o:{self}"),
            Repr::Named(name) => format!("n:{name}"),
            Repr::Credential(fingerprint) => format!("c:{fingerprint:016x}"),
            Repr::Group(group) => {
                let key = group.0.store_name();
                format!("g:{}:{key}{}", key.len(), group.1)
            }
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Origin(origin) => match &origin.scheme {
                Some(scheme) => write!(f, "{scheme}://{}", origin.authority),
                None => write!(f, "{}", origin.authority),
            },
            Repr::Named(name) => f.write_str(name),
            Repr::Credential(fingerprint) => write!(f, "credential:{fingerprint:016x}"),
            Repr::Group(group) => write!(f, "{} [{}]", group.0, group.1),
        }
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

/// Names the key of a request; `None` leaves the request ungated.
#[derive(Clone)]
pub(crate) enum KeyFunction {
    /// [`Key::origin`], the default.
    Origin(ByOrigin),
    /// A function of the layer's user.
    Custom(KeyFn),
}

/// A key function of the layer's user.
pub(crate) type KeyFn = Arc<dyn Fn(&Parts) -> Option<Key> + Send + Sync>;

impl Default for KeyFunction {
    fn default() -> Self {
        KeyFunction::Origin(ByOrigin::default())
    }
}

impl KeyFunction {
    /// The key `request` counts against.
    pub(crate) fn key_of(&self, request: &Parts) -> Option<Key> {
        match self {
            KeyFunction::Origin(by_origin) => by_origin.key_of(request),
            KeyFunction::Custom(key) => key(request),
        }
    }
}

/// [`Key::origin`], remembering the key of the first origin it named.
///
/// Most clients call one origin, and deriving its key for every call (its case checked, its
/// userinfo looked for, its bytes hashed under the process's seed) cost more than passing the
/// gate. A request whose scheme and authority are exactly the remembered key's gets that key;
/// any other is derived as [`Key::origin`] derives it, so the key never depends on the memo.
#[derive(Clone, Default)]
pub(crate) struct ByOrigin {
    first: OnceLock<Key>,
}

impl ByOrigin {
    fn key_of(&self, request: &Parts) -> Option<Key> {
        let uri = &request.uri;
        if let (Some(first), Some(authority)) = (self.first.get(), uri.authority()) {
            if first.is_origin(uri.scheme(), authority) {
                return Some(first.clone());
            }
        }
        let key = Key::origin(request)?;
        if uri.authority().is_some() {
            // Only a key of the URI's own origin: a relative URI's comes from its `Host`.
            let _ = self.first.set(key.clone());
        }
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "redis")]
    #[test]
    fn keys_that_print_alike_have_names_of_their_own_in_a_shared_store() {
        let origin = Key::from_origin("https://api.test").expect("an origin");
        let credential = Key::credential("Bearer sk");
        let alike = [
            (Key::named("https://api.test"), origin.clone()),
            (Key::named(credential.to_string()), credential.clone()),
            (Key::named("t [g]"), Key::named("t").within("g")),
            (
                Key::named("a").within("b").within("c"),
                Key::named("a [b]").within("c"),
            ),
        ];
        for (one, other) in alike {
            assert_eq!(one.to_string(), other.to_string(), "printed alike");
            assert_ne!(one.store_name(), other.store_name(), "{one:?}, {other:?}");
        }
        assert_eq!(origin.store_name(), "o:https://api.test");
        assert_eq!(Key::named("t").within("g").store_name(), "g:3:n:tg");
    }

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
    fn a_uri_or_an_origin_names_the_key_its_requests_get() {
        let request = Key::origin(&parts("https://API.test:8443/v1/items?page=2", None));
        let uri: Uri = "https://alice:hunter2@api.TEST:8443/other".parse().unwrap();
        assert_eq!(Key::from_uri(&uri), request);
        for origin in ["https://api.test:8443", "HTTPS://api.Test:8443/"] {
            assert_eq!(Key::from_origin(origin).ok(), request, "{origin}");
        }
        assert_ne!(Key::from_origin("http://api.test:8443").ok(), request);
        assert_eq!(Key::from_uri(&"/v1/items".parse().unwrap()), None);
    }

    #[test]
    fn what_is_not_an_origin_is_told_apart_without_being_repeated() {
        let problem = |origin| Key::from_origin(origin).unwrap_err().0;
        assert_eq!(problem("api.test"), Problem::NoScheme);
        assert_eq!(problem("/v1/items"), Problem::NoScheme);
        assert_eq!(problem("https://api.test/search"), Problem::PathOrQuery);
        assert_eq!(problem("https://api.test?page=2"), Problem::PathOrQuery);
        assert_eq!(problem("https://api test"), Problem::NotAUri);
        assert_eq!(problem(""), Problem::NotAUri);
        assert_eq!(problem("https://user:hunter2@:80"), Problem::NoHost);
        let shown = Key::from_origin("https://user:hunter2@api.test/v1")
            .unwrap_err()
            .to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
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

    #[test]
    fn a_uris_userinfo_is_no_part_of_its_origin() {
        let with_secret = Key::origin(&parts("https://alice:hunter2@API.test:8443/v1", None));
        let plain = Key::origin(&parts("https://api.test:8443/v1", None));
        assert_eq!(with_secret, plain);
        assert_eq!(with_secret.unwrap().to_string(), "https://api.test:8443");
        let host_only = Key::origin(&parts("/v1", Some("bob@api.test"))).unwrap();
        assert_eq!(host_only.to_string(), "api.test");
    }

    #[test]
    fn a_credential_is_kept_and_shown_only_as_a_fingerprint() {
        let token = Key::credential("Bearer sk-live-0123");
        assert_eq!(token, Key::credential(b"Bearer sk-live-0123"));
        assert_ne!(token, Key::credential("Bearer sk-live-0124"));
        assert_ne!(token, Key::named("Bearer sk-live-0123"));
        let shown = format!("{token} {token:?}");
        assert!(!shown.contains("sk-live"), "{shown}");
        let Repr::Credential(fingerprint) = token.repr else {
            panic!("not a credential key");
        };
        assert_eq!(token.to_string(), format!("credential:{fingerprint:016x}"));
        // The same in every process and build: processes sharing a store share the gate.
        assert_eq!(super::fingerprint(b""), 0xecba_3df2_c338_3c52);
        assert_eq!(super::fingerprint(b"Bearer sk"), 0x1740_2608_1642_3fa0);
    }

    #[test]
    fn the_default_key_function_gives_every_request_its_origin_whatever_it_remembers() {
        let by_origin = ByOrigin::default();
        let requests = [
            parts("/v1", Some("api.test")),
            parts("https://api.test/v1", None),
            parts("https://api.test/v2?page=3", None),
            parts("http://api.test/v1", None),
            parts("https://API.test/v1", None),
            parts("https://alice@api.test/v1", None),
            parts("https://api.test:8443/v1", None),
            parts("https://api.other/v1", None),
            parts("/v1", None),
        ];
        for request in &requests {
            assert_eq!(
                by_origin.key_of(request),
                Key::origin(request),
                "{}",
                request.uri
            );
        }
        let first = by_origin.first.get().map(Key::to_string);
        assert_eq!(
            first.as_deref(),
            Some("https://api.test"),
            "a relative URI's key is not remembered"
        );
        let Some(Key {
            repr: Repr::Origin(remembered),
            ..
        }) = by_origin.first.get()
        else {
            panic!("an origin's key is remembered");
        };
        let Some(Key {
            repr: Repr::Origin(given),
            ..
        }) = by_origin.key_of(&requests[2])
        else {
            panic!("an origin's key");
        };
        assert!(
            Arc::ptr_eq(remembered, &given),
            "the remembered key is given again, not derived"
        );
    }

    #[test]
    fn a_custom_key_function_is_called_for_every_request() {
        let named = KeyFunction::Custom(Arc::new(|request: &Parts| {
            Some(Key::named(request.uri.path()))
        }));
        assert_eq!(
            named.key_of(&parts("https://api.test/v1", None)),
            Some(Key::named("/v1"))
        );
        assert_eq!(
            KeyFunction::default().key_of(&parts("https://api.test/v1", None)),
            Key::from_origin("https://api.test").ok()
        );
    }

    #[test]
    fn keys_sharing_their_text_are_equal_without_reading_it_and_others_by_reading_it() {
        assert!(same_text("api.test", "api.test"));
        let text = String::from("api.test");
        assert!(same_text(&text, "api.test"), "equal text elsewhere");
        assert!(!same_text(&text, "api.tesT"));
        assert!(!same_text(&text[..3], &text), "a prefix of the same text");
    }

    #[test]
    fn map_hashes_are_seeded_for_this_process() {
        let key = Key::named("tenant-1");
        assert_eq!(
            key.hash,
            Key::named("tenant-1").hash,
            "one seed per process"
        );
        let elsewhere = RandomState::new().hash_one((1u8, "tenant-1"));
        assert_ne!(key.hash, elsewhere, "another process's seed");
    }
}
