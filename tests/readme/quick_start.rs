use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::{CallCost, RateLimitInfo, RateLimitLayer};

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    call("http://127.0.0.1:3000").await // your API's base URL
}

async fn call(api: &str) -> Result<(), BoxError> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut client = ServiceBuilder::new()
        .timeout(Duration::from_secs(300)) // outside the layer: bounds the whole call, waits included
        .layer(RateLimitLayer::new())
        .service(client);

    let request = http::Request::get(format!("{api}/user")).body(Full::default())?;
    let response = client.ready().await?.call(request).await?;

    // What the server said about its limits, and what the call cost.
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    let cost = response.extensions().get::<CallCost>().unwrap();
    let left = info.binding_meter().and_then(|meter| meter.remaining());
    println!(
        "{}: {left:?} left; {} request(s) sent, {:?} waited",
        response.status(),
        cost.attempts(),
        cost.waited()
    );
    response.into_body().collect().await?;
    Ok(())
}
