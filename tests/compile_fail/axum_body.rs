//! A proxy forwarding axum's `Body` as it is: the default policy cannot replay it.
//!
//! Called through the trait so that the error is the bound that fails (E0277). As a method
//! (`upstream.ready()`, `upstream.oneshot(..)`) rustc's method lookup reports E0599, "the
//! method exists but its trait bounds were not satisfied", and does not say which.

use axum::body::Body;
use http::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use tower::Service;
use tower_retry_after::RateLimit;

fn forward(mut upstream: RateLimit<Client<HttpConnector, Body>>, request: Request<Body>) {
    let _ = Service::call(&mut upstream, request);
}

fn main() {
    let _ = forward;
}
