//! Keys as a user names them: per credential with the origin as the fallback, and two APIs on
//! one origin, together or apart. Against a real hyper server on loopback that counts what it
//! received, on a paused clock.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http::request::Parts;
use http_body_util::Full;
use support::{TestServer, client, header};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{Gates, Key, RateLimitLayer};

const SECOND: Duration = Duration::from_secs(1);

/// Sends a GET to `path` on `server` through `layer`, with `token` as its `Authorization`, in
/// a task of its own.
fn spawn_get(
    layer: &RateLimitLayer,
    server: &TestServer,
    path: &str,
    token: Option<&'static str>,
) -> JoinHandle<u16> {
    let mut request = Request::get(server.url(path));
    if let Some(token) = token {
        request = request.header("authorization", token);
    }
    let request = request.body(Full::new(Bytes::new())).unwrap();
    let mut service = ServiceBuilder::new().layer(layer.clone()).service(client());
    tokio::spawn(async move {
        let response = service.ready().await.unwrap().call(request).await.unwrap();
        response.status().as_u16()
    })
}

/// The first request to `path` is refused for `seconds`; every other request is answered.
fn refuses_first(
    path: &'static str,
    seconds: u64,
) -> impl Fn(&http::Method, &str, usize) -> (u16, Vec<(&'static str, String)>) {
    move |_, asked, nth| {
        if asked == path && nth == 0 {
            (429, vec![header("retry-after", seconds)])
        } else {
            (200, vec![])
        }
    }
}

/// How long after `start` the first request to `path` arrived.
fn arrived(server: &TestServer, path: &str, start: Instant) -> Duration {
    server.arrivals("GET", path)[0] - start
}

/// The key function of the `key` setter's documentation.
fn per_token_or_origin(request: &Parts) -> Option<Key> {
    match request.headers.get("authorization") {
        Some(token) => Some(Key::credential(token.as_bytes())),
        None => Key::origin(request),
    }
}

/// A request without the token the key function looks for is still held at its origin's gate
/// (`None` would leave it ungated), while a request with a token has a gate of its own.
#[tokio::test(start_paused = true)]
async fn a_request_without_a_token_is_held_at_its_origin_under_the_documented_key() {
    let server = TestServer::start(refuses_first("/refused", 2)).await;
    let gates = Gates::new();
    let layer = RateLimitLayer::new()
        .gates(gates.clone())
        .key(per_token_or_origin);
    let start = Instant::now();
    let refused = spawn_get(&layer, &server, "/refused", None);
    tokio::time::sleep(SECOND / 2).await;
    let origin = Key::from_origin(&server.url("")).unwrap();
    assert!(gates.snapshot(&origin).unwrap().closed_for().is_some());

    let anonymous = spawn_get(&layer, &server, "/anonymous", None);
    let with_token = spawn_get(&layer, &server, "/token", Some("Bearer sk-1"));
    assert_eq!(with_token.await.unwrap(), 200);
    assert!(arrived(&server, "/token", start) < SECOND);
    assert_eq!(anonymous.await.unwrap(), 200);
    assert!(arrived(&server, "/anonymous", start) >= 2 * SECOND);
    assert_eq!(refused.await.unwrap(), 200);
    assert!(gates.snapshot(&Key::credential("Bearer sk-1")).is_some());
}

/// GitHub-like: a search API and a core API on one origin. By default a 429 from search holds
/// core calls too; a key function that names search apart lets core calls go.
#[tokio::test(start_paused = true)]
async fn two_apis_on_one_origin_share_one_gate_unless_keyed_apart() {
    let by_api = |request: &Parts| match request.uri.path().starts_with("/search/") {
        true => Some(Key::named("search")),
        false => Key::origin(request),
    };
    for (layer, keyed_apart) in [
        (RateLimitLayer::new(), false),
        (RateLimitLayer::new().key(by_api), true),
    ] {
        let server = TestServer::start(refuses_first("/search/code", 5)).await;
        let start = Instant::now();
        let search = spawn_get(&layer, &server, "/search/code", None);
        tokio::time::sleep(SECOND / 2).await;
        assert_eq!(
            spawn_get(&layer, &server, "/core", None).await.unwrap(),
            200
        );
        let core = arrived(&server, "/core", start);
        match keyed_apart {
            true => assert!(core < SECOND, "core held {core:?} by search's 429"),
            false => assert!(core >= 5 * SECOND, "core sent {core:?} into a closed gate"),
        }
        assert_eq!(search.await.unwrap(), 200);
    }
}

/// `https://api.test:443` and `https://api.test` are one origin (RFC 3986 §6.2.3): one server,
/// one limit. reqwest's `Url` drops a default port, so a reqwest client and a hyper stack that
/// spell it out would otherwise hold their calls at two gates. A 429 seen through one spelling
/// holds calls through the other. (A scripted inner service: nothing listens on 443 here.)
#[tokio::test(start_paused = true)]
async fn an_origin_with_its_default_port_written_out_is_the_same_gate() {
    assert_eq!(
        Key::from_origin("https://api.test:443").unwrap(),
        Key::from_origin("https://api.test").unwrap()
    );
    assert_eq!(
        Key::from_origin("http://API.test:80").unwrap().to_string(),
        "http://api.test"
    );
    assert_ne!(
        Key::from_origin("https://api.test:80").unwrap(),
        Key::from_origin("https://api.test").unwrap()
    );
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = sent.clone();
    let inner = tower::service_fn(move |_: Request<String>| {
        let first = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
        async move {
            let status = if first { 429 } else { 200 };
            let response = http::Response::builder()
                .status(status)
                .header("retry-after", "600")
                .body(String::new())
                .unwrap();
            Ok::<_, tower::BoxError>(response)
        }
    });
    let mut service = ServiceBuilder::new()
        .layer(RateLimitLayer::new().gates(Gates::new()))
        .service(inner);
    let get = |uri: &str| Request::get(uri).body(String::new()).unwrap();
    let refused = service
        .ready()
        .await
        .unwrap()
        .call(get("https://api.test:443/a"))
        .await;
    assert_eq!(
        refused.unwrap().status(),
        429,
        "600 s is over the cap: returned at once"
    );
    let held = service
        .ready()
        .await
        .unwrap()
        .call(get("https://api.test/b"))
        .await;
    assert!(
        held.as_ref()
            .is_err_and(|error| error.is::<tower_retry_after::Throttled>()),
        "the same origin's gate is closed for 600 s: {:?}",
        held.map(|response| response.status())
    );
    assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// An empty port is the port left out (RFC 3986 §6.2.3: "an explicit ":port", for which the
/// port is empty or the default for the scheme, is equivalent to one where the port and its
/// ":" delimiter are elided"), and a port with leading zeros is that port: reqwest's `Url`
/// writes both as the origin's usual spelling, so a hyper stack given them would otherwise
/// hold its calls at other gates than a reqwest client's.
#[test]
fn an_empty_port_or_a_port_with_leading_zeros_is_the_same_origin() {
    let key = |uri: &str| Key::from_uri(&uri.parse().unwrap()).unwrap();
    assert_eq!(key("https://api.test:/v1"), key("https://api.test/v1"));
    assert_eq!(
        key("https://api.test:08443/v1"),
        key("https://api.test:8443/v1")
    );
    assert_eq!(
        Key::from_origin("https://api.test:").unwrap().to_string(),
        "https://api.test"
    );
    // An IPv6 host's colons are the host's, not a port's.
    assert_eq!(key("http://[::1]:08080/v1"), key("http://[::1]:8080/v1"));
    assert_eq!(
        key("http://[::1]:08080/v1").to_string(),
        "http://[::1]:8080"
    );
    assert_eq!(key("http://[::1]:/v1").to_string(), "http://[::1]");
    assert_eq!(key("http://[::1]:80/v1"), key("http://[::1]/v1"));
}

/// An IPv6 address written two ways (RFC 4291 §2.2) is one host: reqwest's `Url` writes it as
/// RFC 5952 does and `http::Uri` as given, so a hyper stack and a reqwest client on one base
/// URL would otherwise hold their calls at two gates.
#[test]
fn an_ipv6_address_written_two_ways_is_the_same_origin() {
    let key = |origin: &str| Key::from_origin(origin).unwrap();
    for (one, other) in [
        ("http://[::1]:8080", "http://[0:0:0:0:0:0:0:1]:8080"),
        ("http://[2001:db8::1]", "http://[2001:0DB8:0000::0001]"),
        ("http://[::ffff:7f00:1]", "http://[::ffff:127.0.0.1]"),
    ] {
        assert_eq!(key(one), key(other), "{one} and {other}");
        assert_eq!(key(one).to_string(), key(other).to_string());
    }
    assert_eq!(key("http://[0:0::1]:80").to_string(), "http://[::1]");
    assert_ne!(key("http://[::1]"), key("http://[::2]"));
}

/// A 429 seen on `http://127.0.0.1:{port}` holds a call to `http://127.0.0.1:0{port}`: one
/// server, one limit, one gate.
#[tokio::test(start_paused = true)]
async fn a_port_written_with_a_leading_zero_is_held_at_the_same_gate() {
    let server = TestServer::start(refuses_first("/refused", 600)).await;
    let layer = RateLimitLayer::new().gates(Gates::new());
    let refused = spawn_get(&layer, &server, "/refused", None);
    assert_eq!(
        refused.await.unwrap(),
        429,
        "600 s is over the cap: returned at once"
    );
    let port = server.address.port();
    let request = Request::get(format!("http://127.0.0.1:0{port}/other"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let mut service = ServiceBuilder::new().layer(layer).service(client());
    let held = service.ready().await.unwrap().call(request).await;
    assert!(
        held.as_ref()
            .is_err_and(|error| error.is::<tower_retry_after::Throttled>()),
        "the origin's gate is closed for 600 s: {:?}",
        held.map(|response| response.status())
    );
    assert_eq!(
        server.count("GET", "/other"),
        0,
        "nothing sent into the closure"
    );
}
