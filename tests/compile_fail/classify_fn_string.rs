//! A `classify_fn` closure naming `String` responses, on a hyper-util client (`Incoming`).

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use tower::{Service, ServiceBuilder};
use tower_retry_after::RateLimitLayer;
use tower_retry_after::policy::{Action, Attempt, PolicyExt, StatusPolicy, classify_fn};

fn call(client: Client<HttpConnector, Full<Bytes>>, request: Request<Full<Bytes>>) {
    let policy = StatusPolicy::new().or(classify_fn(|_: &Attempt<'_, String>| Action::Retry));
    let mut upstream = ServiceBuilder::new()
        .layer(RateLimitLayer::new().with_policy(policy))
        .service(client);
    let _ = Service::call(&mut upstream, request);
}

fn main() {
    let _ = call;
}
