//! Calling GitHub and OpenAI through `RateLimitLayer`, against local servers imitating what each
//! sends: GitHub's `x-ratelimit-*` with `x-ratelimit-resource` and a 403 when the quota is spent;
//! OpenAI's request and token meters with Go-duration resets. Neither needs configuration: the
//! layer reads both out of the box. The one line shown is for a server that answers spent
//! limits with 403 without proving it is GitHub.
//!
//! Run: `cargo run --example vendors`

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};
use tower_retry_after::headers::Found;
use tower_retry_after::{Key, RateLimitInfo, RateLimitLayer};

/// What an imitation answers its `nth` request (from 0): a status and headers.
type Answer = fn(u64) -> (u16, Vec<(&'static str, String)>);

async fn serve(answer: Answer) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let seen = Arc::new(AtomicU64::new(0));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            let service = service_fn(move |_request| {
                let (status, headers) = answer(seen.fetch_add(1, Ordering::Relaxed));
                let mut response = Response::builder().status(status);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                async move { Ok::<_, Infallible>(response.body(Full::new(Bytes::from("{}"))).unwrap()) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    Ok(format!("http://{address}"))
}

fn epoch_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// GitHub: a window ending two seconds after the first call, three calls left in it; the
/// third call is answered 403 (another client of the same token spent the last one), and the
/// quota is whole again after the reset.
fn github(nth: u64) -> (u16, Vec<(&'static str, String)>) {
    static WINDOW_ENDS: OnceLock<u64> = OnceLock::new();
    let window_ends = *WINDOW_ENDS.get_or_init(|| epoch_seconds() + 2);
    let (status, remaining, reset) = match nth {
        0 => (200, 2, window_ends),
        1 => (200, 1, window_ends),
        2 => (403, 0, window_ends),
        _ => (200, 4_999, window_ends + 3_600),
    };
    let headers = vec![
        ("date", httpdate::fmt_http_date(SystemTime::now())),
        ("x-ratelimit-limit", "5000".to_owned()),
        ("x-ratelimit-remaining", remaining.to_string()),
        ("x-ratelimit-reset", reset.to_string()),
        ("x-ratelimit-resource", "core".to_owned()),
    ];
    (status, headers)
}

/// OpenAI: requests to spare, but the first answer spends the token meter for 1.5 s.
fn openai(nth: u64) -> (u16, Vec<(&'static str, String)>) {
    let tokens_left = if nth == 0 { 0 } else { 148_000 };
    let headers = vec![
        ("x-ratelimit-limit-requests", "500".to_owned()),
        (
            "x-ratelimit-remaining-requests",
            (499 - nth.min(499)).to_string(),
        ),
        ("x-ratelimit-reset-requests", "120ms".to_owned()),
        ("x-ratelimit-limit-tokens", "150000".to_owned()),
        ("x-ratelimit-remaining-tokens", tokens_left.to_string()),
        ("x-ratelimit-reset-tokens", "1.5s".to_owned()),
    ];
    (200, headers)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let github_api = serve(github).await?;
    let openai_api = serve(openai).await?;
    let layer = RateLimitLayer::new()
        // One limit per token, as both APIs count.
        .key(|request| match request.headers.get("authorization") {
            Some(token) => Some(Key::credential(token.as_bytes())),
            None => Key::origin(request),
        })
        // Only for a server that answers spent limits with 403 but does not send
        // `x-ratelimit-resource` (GitHub does, so this line changes nothing here).
        .read_headers_with(|_: &http::HeaderMap, _: &_, found: &mut Found<'_>| {
            found.forbidden_is_refusal()
        });
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut client = ServiceBuilder::new()
        .timeout(Duration::from_secs(300))
        .layer(layer)
        .service(client);

    let started = Instant::now();
    for (api, token, path) in [
        (&github_api, "token ghp_one", "/repos/o/r/issues"),
        (&github_api, "token ghp_one", "/repos/o/r/issues"),
        (&github_api, "token ghp_one", "/repos/o/r/issues"),
        (&github_api, "token ghp_one", "/repos/o/r/issues"),
        (&openai_api, "Bearer sk-one", "/v1/chat/completions"),
        (&openai_api, "Bearer sk-one", "/v1/chat/completions"),
    ] {
        let request = Request::post(format!("{api}{path}"))
            .header("authorization", token)
            .body(Full::new(Bytes::from(r#"{"x":1}"#)))?;
        let response = client.ready().await?.call(request).await?;
        let status = response.status();
        let meters = response
            .extensions()
            .get::<RateLimitInfo>()
            .map(|info| {
                info.meters()
                    .iter()
                    .map(|meter| {
                        format!(
                            "{} {:?} left",
                            meter.name().unwrap_or("quota"),
                            meter.remaining()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        response.into_body().collect().await?;
        println!(
            "{:>6.2?}  POST {path:<22} {status}  {meters}",
            started.elapsed()
        );
    }
    println!(
        "GitHub's 403 at zero was waited out to its reset and sent again once; OpenAI's second \
         call waited for the spent token meter's reset, with requests to spare."
    );
    Ok(())
}
