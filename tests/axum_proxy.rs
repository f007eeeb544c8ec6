//! The proxy recipe (`examples/axum_proxy/proxy.rs`) end to end: requests into its axum app
//! are forwarded through the layer to a real hyper server on loopback that counts them by
//! method and path. A buffered body is sent again where the policy retries; a body over the
//! limit, or one that streams, is sent once. The clock is paused.

#[path = "../examples/axum_proxy/proxy.rs"]
mod proxy;
mod support;

use axum::body::Body;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use support::{TestServer, fails, header};
use tower::ServiceExt;

/// Sends `request` into a fresh proxy app whose upstream is `server`.
async fn through_the_proxy(server: &TestServer, request: Request<Body>) -> Response<Body> {
    let app = proxy::app(proxy::Proxy::new(server.url("")));
    app.oneshot(request).await.unwrap()
}

fn request(method: Method, path: &str, body: Body) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(format!("http://proxy.test/patient{path}"))
        .body(body)
        .unwrap()
}

/// The bodies the server received for this method and path, in order.
fn bodies(server: &TestServer, method: &str, path: &str) -> Vec<Bytes> {
    let received = server.received().into_iter();
    let matching = received.filter(|r| r.method == method && r.path == path);
    matching.map(|r| r.body).collect()
}

#[tokio::test(start_paused = true)]
async fn a_forwarded_post_answered_502_is_sent_exactly_once() {
    let server = TestServer::start(fails(502, usize::MAX, vec![])).await;
    let body = Body::from(r#"{"item":1}"#);
    let response = through_the_proxy(&server, request(Method::POST, "/orders", body)).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(bodies(&server, "POST", "/orders"), [r#"{"item":1}"#]);
}

/// A request the app received over HTTP/2 (an app serving it) is forwarded over the
/// upstream client's HTTP/1.1: the version is the hop's, not the request's.
#[tokio::test(start_paused = true)]
async fn a_request_received_over_http2_is_forwarded_over_http1() {
    let server = TestServer::start(fails(503, 0, vec![])).await;
    let mut received = request(Method::GET, "/items", Body::empty());
    *received.version_mut() = http::Version::HTTP_2;
    let response = through_the_proxy(&server, received).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.count("GET", "/items"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_forwarded_get_answered_503_is_retried() {
    let server = TestServer::start(fails(503, 1, vec![])).await;
    let response = through_the_proxy(&server, request(Method::GET, "/items", Body::empty())).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.count("GET", "/items"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_buffered_post_refused_with_429_is_sent_again_with_its_body() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 1)])).await;
    let body = Body::from(r#"{"item":1}"#);
    let response = through_the_proxy(&server, request(Method::POST, "/orders", body)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        bodies(&server, "POST", "/orders"),
        [r#"{"item":1}"#, r#"{"item":1}"#]
    );
}

#[tokio::test(start_paused = true)]
async fn a_post_over_the_limit_refused_with_429_is_sent_once() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 1)])).await;
    let large = vec![b'x'; proxy::REPLAYABLE_UP_TO + 1];
    let body = Body::from(large.clone());
    let response = through_the_proxy(&server, request(Method::POST, "/uploads", body)).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(bodies(&server, "POST", "/uploads"), [large]);
}

#[tokio::test(start_paused = true)]
async fn a_streamed_post_refused_with_429_is_sent_once() {
    let server = TestServer::start(fails(429, 1, vec![header("retry-after", 1)])).await;
    let chunks = ["{\"item\":", "1}"].map(|chunk| Ok::<_, std::io::Error>(Bytes::from(chunk)));
    let body = Body::from_stream(futures_util::stream::iter(chunks));
    let response = through_the_proxy(&server, request(Method::POST, "/orders", body)).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(bodies(&server, "POST", "/orders"), [r#"{"item":1}"#]);
}
