//! An OpenAI-style API whose token quota binds before its request quota, on a window of six
//! minutes (longer than the default cap), for tests of declared token costs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::{TestServer, header};

/// What every request spends of the token quota, and what its caller declares.
pub const SPENDS: u64 = 500;
/// The token quota's window.
pub const WINDOW: Duration = Duration::from_secs(360);

/// An API with `tokens` a six-minute window, each request spending [`SPENDS`]: a request the
/// quota cannot cover is refused (429) with what is left, and no `Retry-After`, as OpenAI's
/// token refusals come; the request quota never binds.
pub async fn token_api(tokens: u64) -> (TestServer, Arc<Mutex<u64>>) {
    let refused = Arc::new(Mutex::new(0));
    let count = refused.clone();
    let left = Arc::new(Mutex::new(tokens));
    let start = Instant::now();
    let server = TestServer::start(move |_, _, _| {
        let mut left = left.lock().unwrap();
        let status = if *left >= SPENDS {
            *left -= SPENDS;
            200
        } else {
            *count.lock().unwrap() += 1;
            429
        };
        let reset = WINDOW.saturating_sub(start.elapsed()).as_secs();
        let headers = vec![
            header("x-ratelimit-limit-requests", 10_000),
            header("x-ratelimit-remaining-requests", 9_999),
            header("x-ratelimit-reset-requests", "6ms"),
            header("x-ratelimit-limit-tokens", tokens),
            header("x-ratelimit-remaining-tokens", *left),
            header(
                "x-ratelimit-reset-tokens",
                format!("{}m{}s", reset / 60, reset % 60),
            ),
        ];
        (status, headers)
    })
    .await;
    (server, refused)
}
