//! Vendors' limits end to end: a hyper-util client through `RateLimitLayer` (defaults, stacked
//! with a timeout as the README shows) against a real server on loopback replaying what each
//! vendor sends, asserting by count what was sent and when. The clock is paused; instants the
//! servers write (epoch and RFC 3339 resets, `Date`) are read from the wall clock, which the
//! paused clock does not move, so each is written relative to the same `Date`.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use support::{TestServer, client, header};
use tokio::time::Instant;
use tower::util::BoxCloneService;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_retry_after::headers::Found;
use tower_retry_after::{BoxError, RateLimitInfo, RateLimitLayer, TokenCost};

const SECOND: Duration = Duration::from_secs(1);

type Headers = Vec<(&'static str, String)>;

type Client =
    BoxCloneService<Request<Full<Bytes>>, http::Response<hyper::body::Incoming>, BoxError>;

fn stack(layer: RateLimitLayer) -> Client {
    BoxCloneService::new(
        ServiceBuilder::new()
            .timeout(Duration::from_secs(300))
            .layer(layer)
            .service(client()),
    )
}

async fn send(
    client: &mut Client,
    method: Method,
    url: String,
) -> Result<http::Response<hyper::body::Incoming>, BoxError> {
    let request = Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    client.ready().await?.call(request).await
}

/// The status of a call of `method` on `path` through a clone of `client`, to await or spawn.
fn status_of(
    client: &Client,
    server: &TestServer,
    method: Method,
    path: &str,
) -> impl Future<Output = StatusCode> + Send + 'static {
    let mut client = client.clone();
    let url = server.url(path);
    async move { send(&mut client, method, url).await.unwrap().status() }
}

/// The wall clock's second now, and `Date` for it.
fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn date(seconds: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(seconds))
}

/// `seconds` since the epoch as RFC 3339, UTC.
fn rfc3339(seconds: u64) -> String {
    let days = seconds / 86_400;
    let (hour, minute, second) = (seconds % 86_400 / 3_600, seconds % 3_600 / 60, seconds % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// GitHub: 200s with a falling `x-ratelimit-remaining`, a 403 at zero, then the epoch reset.
/// The 403 is a refusal (the resource proves the server is GitHub): the POST is sent again once,
/// after the reset and not before, and the next call after it waits for nothing.
#[tokio::test(start_paused = true)]
async fn github_a_403_at_zero_is_retried_once_at_the_epoch_reset() {
    let now = now_seconds();
    let server = TestServer::start(move |_, _, nth| {
        let (status, remaining, reset) = match nth {
            0 => (200, 2, now + 3_600),
            1 => (200, 1, now + 3_600),
            2 => (403, 0, now + 5),
            _ => (200, 4_999, now + 3_600),
        };
        let headers = vec![
            header("date", date(now)),
            header("x-ratelimit-limit", 5_000),
            header("x-ratelimit-remaining", remaining),
            header("x-ratelimit-reset", reset),
            header("x-ratelimit-resource", "core"),
        ];
        (status, headers)
    })
    .await;
    let mut client = stack(RateLimitLayer::new());
    let start = Instant::now();
    for _ in 0..3 {
        let response = send(&mut client, Method::POST, server.url("/repos/o/r/issues")).await;
        assert_eq!(response.unwrap().status(), StatusCode::OK);
    }
    assert_eq!(
        server.count("POST", "/repos/o/r/issues"),
        4,
        "the 403 sent again once"
    );
    let arrivals = server.arrivals("POST", "/repos/o/r/issues");
    assert!(arrivals[3] - start >= 5 * SECOND, "not before the reset");
    assert!(arrivals[3] - start <= 7 * SECOND, "not long after it");
    let response = send(&mut client, Method::POST, server.url("/repos/o/r/issues")).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert!(server.arrivals("POST", "/repos/o/r/issues")[4] - arrivals[3] < SECOND);
}

/// REST paths carry ids, so most calls go to a route never answered: they count against the
/// limit most answers named (GitHub's `core`), so a spent core limit holds them too.
#[tokio::test(start_paused = true)]
async fn github_a_route_never_answered_is_held_by_the_spent_core_limit() {
    let now = now_seconds();
    let server = TestServer::start(move |_, path, nth| {
        let spent = path == "/repos/o/r/issues/1" && nth == 0;
        let (status, remaining, reset) = if spent {
            (403, 0, now + 5)
        } else {
            (200, 4_000, now + 3_600)
        };
        let headers = vec![
            header("date", date(now)),
            header("x-ratelimit-remaining", remaining),
            header("x-ratelimit-reset", reset),
            header("x-ratelimit-resource", "core"),
        ];
        (status, headers)
    })
    .await;
    let client = stack(RateLimitLayer::new());
    let call = |path| status_of(&client, &server, Method::POST, path);
    assert_eq!(call("/user").await, StatusCode::OK);
    let start = Instant::now();
    let refused = tokio::spawn(call("/repos/o/r/issues/1"));
    tokio::time::sleep(SECOND).await;
    assert_eq!(call("/repos/o/r/issues/2").await, StatusCode::OK);
    assert_eq!(refused.await.unwrap(), StatusCode::OK);
    let second = server.arrivals("POST", "/repos/o/r/issues/2");
    assert_eq!(second.len(), 1, "sent once, never refused");
    assert!(
        second[0] - start >= 5 * SECOND,
        "held to the reset: {:?}",
        second[0] - start
    );
}

/// A 403 with a spent meter from a server that does not prove itself GitHub is returned as any
/// 403 is, sent once; one line of configuration makes it a refusal.
#[tokio::test(start_paused = true)]
async fn a_403_is_a_refusal_where_one_line_says_so() {
    let now = now_seconds();
    let server = TestServer::start(move |_, _, nth| {
        let status = if nth == 0 { 403 } else { 200 };
        // The retry comes after the reset, and so does the server's clock: a `Date` left
        // behind it would be read as another clock's, against which the reset is not past.
        let server_now = if nth == 0 { now } else { now + 2 };
        let headers = vec![
            header("date", date(server_now)),
            header("x-ratelimit-remaining", 0),
            header("x-ratelimit-reset", now + 2),
        ];
        (status, headers)
    })
    .await;
    let mut plain = stack(RateLimitLayer::new());
    let response = send(&mut plain, Method::POST, server.url("/a"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(server.count("POST", "/a"), 1);

    let forbidden_is_refusal =
        |_: &http::HeaderMap, _: &_, found: &mut Found<'_>| found.forbidden_is_refusal();
    let mut told = stack(RateLimitLayer::new().read_headers_with(forbidden_is_refusal));
    let response = send(&mut told, Method::POST, server.url("/b"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        server.count("POST", "/b"),
        2,
        "retried once, after the reset"
    );
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    assert!(
        !info.is_refusal(StatusCode::FORBIDDEN),
        "the 200's meter is spent, but not a 403"
    );
}

/// GitHub's resources are separate limits of one token: a spent search quota holds searches
/// until its reset, and calls to the core API go on meanwhile.
#[tokio::test(start_paused = true)]
async fn github_a_spent_search_limit_does_not_hold_the_core_api() {
    let now = now_seconds();
    let server = TestServer::start(move |_, path, nth| {
        let (status, resource, remaining, reset) = match (path, nth) {
            ("/search/code", 0) => (403, "search", 0, now + 30),
            ("/search/code", _) => (200, "search", 29, now + 60),
            _ => (200, "core", 4_000, now + 3_600),
        };
        let headers = vec![
            header("date", date(now)),
            header("x-ratelimit-remaining", remaining),
            header("x-ratelimit-reset", reset),
            header("x-ratelimit-resource", resource),
        ];
        (status, headers)
    })
    .await;
    let client = stack(RateLimitLayer::new());
    // The token's first call, as most clients make it: the core API's.
    let mut first = client.clone();
    let response = send(&mut first, Method::GET, server.url("/user"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let start = Instant::now();
    let search = tokio::spawn(status_of(&client, &server, Method::GET, "/search/code"));
    tokio::time::sleep(SECOND).await;
    let another_search = tokio::spawn(status_of(&client, &server, Method::GET, "/search/code"));
    for _ in 0..3 {
        let mut client = client.clone();
        let response = send(&mut client, Method::GET, server.url("/user"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert_eq!(search.await.unwrap(), StatusCode::OK);
    let user = server.arrivals("GET", "/user");
    assert_eq!(user.len(), 4);
    assert!(
        user[3] - start < 2 * SECOND,
        "core calls went at once: {:?}",
        user[3] - start
    );
    assert_eq!(another_search.await.unwrap(), StatusCode::OK);
    let searches = server.arrivals("GET", "/search/code");
    assert_eq!(searches.len(), 3, "each search sent once after the refusal");
    for arrival in &searches[1..] {
        assert!(
            *arrival - start >= 30 * SECOND,
            "searches wait for the reset"
        );
    }
}

/// Discord's bucket for `path` (the channel's routes share one, the guild's another), and what a
/// healthy answer on it says.
fn discord_bucket(path: &str) -> (&'static str, Headers) {
    let bucket = if path.starts_with("/channels") {
        "a1"
    } else {
        "b2"
    };
    let headers = vec![
        header("x-ratelimit-limit", 5),
        header("x-ratelimit-remaining", 4),
        header("x-ratelimit-reset-after", 1),
        header("x-ratelimit-bucket", bucket),
    ];
    (bucket, headers)
}

/// Discord's global 429: every route of the token waits 6 s.
fn discord_global() -> Headers {
    vec![
        header("retry-after", 6),
        header("x-ratelimit-global", "true"),
        header("x-ratelimit-scope", "global"),
    ]
}

/// Discord's global 429 closes every route of the token: a call on another route meets that
/// closure as a wait like any other, so the operator's hook is asked first (and its veto
/// ends the call at once, throttled, unsent).
#[tokio::test(start_paused = true)]
async fn discord_a_global_429_met_on_another_route_asks_the_hook_before_the_wait() {
    let server = TestServer::start(move |_, path, nth| match (path, nth) {
        ("/guilds/2", 1) => (429, discord_global()),
        _ => (200, discord_bucket(path).1),
    })
    .await;
    let waits = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let told = waits.clone();
    let layer =
        RateLimitLayer::new().on_rate_limit(move |notice: &tower_retry_after::Notice<'_>| {
            let tower_retry_after::Notice::Wait { wait, attempt, .. } = notice else {
                return true;
            };
            told.lock().unwrap().push((*wait, *attempt));
            false
        });
    let client = stack(layer);
    let call = |path| status_of(&client, &server, Method::POST, path);
    // Each route's first answer names its bucket; the guild's second is the global 429.
    assert_eq!(call("/channels/1/messages").await, StatusCode::OK);
    assert_eq!(call("/guilds/2").await, StatusCode::OK);
    assert_eq!(
        call("/guilds/2").await,
        StatusCode::TOO_MANY_REQUESTS,
        "its retry vetoed"
    );
    let started = Instant::now();
    let mut channel = client.clone();
    let vetoed = send(
        &mut channel,
        Method::POST,
        server.url("/channels/1/messages"),
    )
    .await;
    let throttled = vetoed.unwrap_err();
    assert!(
        throttled.is::<tower_retry_after::Throttled>(),
        "{throttled:?}"
    );
    assert_eq!(started.elapsed(), Duration::ZERO, "ended at once");
    assert_eq!(server.count("POST", "/channels/1/messages"), 1);
    let waits = waits.lock().unwrap().clone();
    assert_eq!(
        waits.len(),
        2,
        "the guild's retry and the channel call: {waits:?}"
    );
    let (wait, attempt) = waits[1];
    assert!(wait >= 5 * SECOND, "{waits:?}");
    assert_eq!(attempt, 1, "before the channel call's first attempt");
}

/// Discord: a bucket's 429 holds that bucket's route only; a global 429 holds every route of
/// the token.
#[tokio::test(start_paused = true)]
async fn discord_a_bucket_429_holds_its_route_and_a_global_429_holds_every_route() {
    let server = TestServer::start(move |_, path, nth| {
        let (bucket, mut headers) = discord_bucket(path);
        let status = match (path, nth) {
            ("/channels/1/messages", 1) => {
                headers = vec![
                    header("retry-after", 4),
                    header("x-ratelimit-remaining", 0),
                    header("x-ratelimit-reset-after", 4),
                    header("x-ratelimit-bucket", bucket),
                    header("x-ratelimit-scope", "user"),
                ];
                429
            }
            ("/guilds/2", 2) => {
                headers = discord_global();
                429
            }
            _ => 200,
        };
        (status, headers)
    })
    .await;
    let client = stack(RateLimitLayer::new());
    let call = |path| status_of(&client, &server, Method::POST, path);
    // Each route's first answer names its bucket.
    assert_eq!(call("/channels/1/messages").await, StatusCode::OK);
    assert_eq!(call("/guilds/2").await, StatusCode::OK);
    let start = Instant::now();
    let channel = tokio::spawn(call("/channels/1/messages"));
    tokio::time::sleep(SECOND).await;
    let same_bucket = tokio::spawn(call("/channels/1/messages"));
    assert_eq!(call("/guilds/2").await, StatusCode::OK);
    let guild = server.arrivals("POST", "/guilds/2");
    assert!(guild[1] - start < 2 * SECOND, "the other bucket went on");
    assert_eq!(channel.await.unwrap(), StatusCode::OK);
    assert_eq!(same_bucket.await.unwrap(), StatusCode::OK);
    let channel = server.arrivals("POST", "/channels/1/messages");
    assert_eq!(channel.len(), 4, "the bucket's 429 sent again once");
    for arrival in &channel[2..] {
        assert!(
            *arrival - start >= 4 * SECOND,
            "the bucket waits out its 429"
        );
    }

    // The global limit: the refused guild call and a channel call made after it both wait.
    let global_at = Instant::now();
    let guild = tokio::spawn(call("/guilds/2"));
    tokio::time::sleep(SECOND).await;
    assert_eq!(call("/channels/1/messages").await, StatusCode::OK);
    assert_eq!(guild.await.unwrap(), StatusCode::OK);
    let channel = server.arrivals("POST", "/channels/1/messages");
    assert_eq!(channel.len(), 5);
    assert!(
        channel[4] - global_at >= 6 * SECOND,
        "every route waits out the global limit: {:?}",
        channel[4] - global_at
    );
    assert_eq!(server.count("POST", "/guilds/2"), 4);
}

/// Two processes' clients, their gates sharing one store.
fn two_processes() -> (Client, Client) {
    let store = std::sync::Arc::new(tower_retry_after::store::MemoryStore::new());
    let process = || {
        let gates = tower_retry_after::Gates::with_store(store.clone());
        stack(RateLimitLayer::new().gates(gates))
    };
    (process(), process())
}

/// Discord's global 429 one process meets holds every route of the token in the processes
/// sharing its store: each of them asks the store only of the bucket its call's route counts
/// against, so the closure is told under every bucket the process knows, as well as the token's.
#[tokio::test(start_paused = true)]
async fn discord_a_global_429_one_process_meets_holds_another_processs_other_routes() {
    let server = TestServer::start(move |_, path, nth| match (path, nth) {
        ("/guilds/2", 1) => (429, discord_global()),
        _ => (200, discord_bucket(path).1),
    })
    .await;
    let (first, second) = two_processes();
    // Each process's first answers name the buckets.
    assert_eq!(
        status_of(&first, &server, Method::POST, "/guilds/2").await,
        StatusCode::OK
    );
    assert_eq!(
        status_of(&first, &server, Method::POST, "/channels/1/messages").await,
        StatusCode::OK
    );
    assert_eq!(
        status_of(&second, &server, Method::POST, "/channels/1/messages").await,
        StatusCode::OK
    );
    let global_at = Instant::now();
    let refused = tokio::spawn(status_of(&first, &server, Method::POST, "/guilds/2"));
    tokio::time::sleep(SECOND).await;
    assert_eq!(
        server.count("POST", "/guilds/2"),
        2,
        "the 429 met, its retry waiting"
    );
    assert_eq!(
        status_of(&second, &server, Method::POST, "/channels/1/messages").await,
        StatusCode::OK
    );
    assert_eq!(refused.await.unwrap(), StatusCode::OK);
    let channel = server.arrivals("POST", "/channels/1/messages");
    assert_eq!(channel.len(), 3);
    assert!(
        channel[2] - global_at >= 6 * SECOND,
        "the other process sent into the global limit after {:?}",
        channel[2] - global_at
    );
}

/// An answer naming another limit than its call was gated by (a key's first answer, before
/// its routes are known) speaks for the limit it names in the processes sharing the store too:
/// one process's first answer says the guild's bucket is spent, and the other process, which
/// knows the route's bucket, waits for its reset.
#[tokio::test(start_paused = true)]
async fn discord_a_spent_bucket_one_processs_first_answer_names_holds_another_process() {
    let server = TestServer::start(move |_, path, nth| {
        let (bucket, mut headers) = discord_bucket(path);
        if nth == 1 {
            headers = vec![
                header("x-ratelimit-limit", 5),
                header("x-ratelimit-remaining", 0),
                header("x-ratelimit-reset-after", 5),
                header("x-ratelimit-bucket", bucket),
            ];
        }
        (200, headers)
    })
    .await;
    let (first, second) = two_processes();
    assert_eq!(
        status_of(&second, &server, Method::POST, "/guilds/2").await,
        StatusCode::OK
    );
    let spent_at = Instant::now();
    assert_eq!(
        status_of(&first, &server, Method::POST, "/guilds/2").await,
        StatusCode::OK,
        "the first process's first answer: the bucket is spent for 5 s"
    );
    assert_eq!(
        status_of(&second, &server, Method::POST, "/guilds/2").await,
        StatusCode::OK
    );
    let guild = server.arrivals("POST", "/guilds/2");
    assert!(
        guild[2] - spent_at >= 5 * SECOND,
        "sent into the spent bucket after {:?}",
        guild[2] - spent_at
    );
}

/// OpenAI: the token meter spent while requests remain holds the next call until the token
/// reset; the request meter alone would have let it go.
#[tokio::test(start_paused = true)]
async fn openai_a_spent_token_meter_holds_calls_while_requests_remain() {
    let server = TestServer::start(move |_, _, nth| {
        let tokens_left = if nth == 0 { 0 } else { 90_000 };
        let headers = vec![
            header("x-ratelimit-limit-requests", 500),
            header("x-ratelimit-remaining-requests", 499 - nth),
            header("x-ratelimit-reset-requests", "120ms"),
            header("x-ratelimit-limit-tokens", 150_000),
            header("x-ratelimit-remaining-tokens", tokens_left),
            header("x-ratelimit-reset-tokens", "2.5s"),
        ];
        (200, headers)
    })
    .await;
    let mut client = stack(RateLimitLayer::new());
    let start = Instant::now();
    for _ in 0..2 {
        let response = send(
            &mut client,
            Method::POST,
            server.url("/v1/chat/completions"),
        )
        .await;
        assert_eq!(response.unwrap().status(), StatusCode::OK);
    }
    let arrivals = server.arrivals("POST", "/v1/chat/completions");
    assert_eq!(arrivals.len(), 2, "nothing refused, nothing sent twice");
    assert!(
        arrivals[1] - start >= Duration::from_millis(2_500),
        "{:?}",
        arrivals[1] - start
    );
    assert!(arrivals[1] - start < 4 * SECOND);
}

/// OpenAI with declared costs: calls that say what they will spend share the token meter the
/// server last reported, so those it cannot pay for wait for its reset instead of being sent
/// to be refused; calls that declare nothing are not held by it.
#[tokio::test(start_paused = true)]
async fn openai_calls_declaring_their_tokens_wait_for_the_reset_when_the_meter_lacks_them() {
    let server = TestServer::start(move |_, _, nth| {
        let headers = vec![
            header("x-ratelimit-limit-requests", 500),
            header("x-ratelimit-remaining-requests", 499 - nth),
            header("x-ratelimit-limit-tokens", 10_000),
            header("x-ratelimit-remaining-tokens", 1_000),
            header("x-ratelimit-reset-tokens", "3s"),
        ];
        (200, headers)
    })
    .await;
    let client = stack(RateLimitLayer::new());
    let call = |cost: Option<TokenCost>| {
        let mut client = client.clone();
        let url = server.url("/v1/chat/completions");
        async move {
            let mut request = Request::post(url);
            if let Some(cost) = cost {
                request = request.extension(cost);
            }
            let request = request.body(Full::new(Bytes::from_static(b"{}"))).unwrap();
            client
                .ready()
                .await?
                .call(request)
                .await
                .map(|r| r.status())
        }
    };
    // The first answer reports 1,000 tokens left for 3 s.
    assert_eq!(call(None).await.unwrap(), StatusCode::OK);
    let start = Instant::now();
    let costly = (0..3)
        .map(|_| tokio::spawn(call(Some(TokenCost::new(300, 200)))))
        .collect::<Vec<_>>();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        call(None).await.unwrap(),
        StatusCode::OK,
        "declaring nothing, not held"
    );
    for task in costly {
        assert_eq!(task.await.unwrap().unwrap(), StatusCode::OK);
    }
    let arrivals = server.arrivals("POST", "/v1/chat/completions");
    assert_eq!(arrivals.len(), 5, "nothing sent twice");
    let at_once = arrivals[1..]
        .iter()
        .filter(|at| **at - start < SECOND)
        .count();
    assert_eq!(at_once, 3, "two costly calls and the one declaring nothing");
    let last = *arrivals.last().unwrap() - start;
    assert!(
        last >= 3 * SECOND,
        "the third costly call waited for the reset: {last:?}"
    );
}

/// Anthropic: an RFC 3339 reset is read against `Date`: a spent request meter holds the next
/// call until that instant, whatever the client's clock says.
#[tokio::test(start_paused = true)]
async fn anthropic_an_rfc3339_reset_is_read_against_date() {
    // The server's clock is an hour behind the client's: only `Date` gives the right wait.
    let server_now = now_seconds() - 3_600;
    let server = TestServer::start(move |_, _, nth| {
        let remaining = if nth == 0 { 0 } else { 40 };
        let headers = vec![
            header("date", date(server_now)),
            header("anthropic-ratelimit-requests-limit", 50),
            header("anthropic-ratelimit-requests-remaining", remaining),
            header(
                "anthropic-ratelimit-requests-reset",
                rfc3339(server_now + 3),
            ),
        ];
        (200, headers)
    })
    .await;
    let mut client = stack(RateLimitLayer::new());
    let start = Instant::now();
    for _ in 0..2 {
        let response = send(&mut client, Method::POST, server.url("/v1/messages")).await;
        assert_eq!(response.unwrap().status(), StatusCode::OK);
    }
    let arrivals = server.arrivals("POST", "/v1/messages");
    assert_eq!(arrivals.len(), 2);
    assert!(
        arrivals[1] - start >= 3 * SECOND,
        "{:?}",
        arrivals[1] - start
    );
    assert!(
        arrivals[1] - start < 5 * SECOND,
        "not the hour the clocks differ by"
    );
}

/// The vendors whose limits are meters: a spent one holds the next call until its reset,
/// read in each vendor's own fields (GitLab's epoch, Zendesk's named meter, Atlassian's Beta-
/// pair, Shopify's full bucket with the wait its 429 gives, AWS's milliseconds, HubSpot's
/// burst window at zero with no reset, Azure's token reset with no `Retry-After`).
#[tokio::test(start_paused = true)]
async fn every_vendors_spent_limit_holds_the_next_call_until_its_reset() {
    let now = now_seconds();
    let styles: Vec<(&str, u16, Headers, Duration)> = vec![
        (
            "gitlab",
            200,
            vec![
                header("date", date(now)),
                header("ratelimit-limit", 600),
                header("ratelimit-remaining", 0),
                header("ratelimit-reset", now + 3),
                header("ratelimit-name", "throttle_authenticated_api"),
            ],
            3 * SECOND,
        ),
        (
            "zendesk",
            200,
            vec![header(
                "zendesk-ratelimit-tickets-index",
                "total=100; remaining=0; resets=4",
            )],
            4 * SECOND,
        ),
        (
            "atlassian",
            200,
            vec![
                header("beta-ratelimit-policy", r#""tenant";q=100;w=60"#),
                header("beta-ratelimit", r#""tenant";r=0;t=5"#),
            ],
            5 * SECOND,
        ),
        (
            "shopify",
            429,
            vec![
                header("x-shopify-shop-api-call-limit", "40/40"),
                header("retry-after", "2.0"),
            ],
            2 * SECOND,
        ),
        (
            "aws",
            429,
            vec![header("x-amz-retry-after", 1_500)],
            Duration::from_millis(1_500),
        ),
        (
            "hubspot",
            429,
            vec![
                header("x-hubspot-ratelimit-max", 100),
                header("x-hubspot-ratelimit-remaining", 0),
                header("x-hubspot-ratelimit-interval-milliseconds", 2_000),
            ],
            2 * SECOND,
        ),
        (
            "azure",
            429,
            vec![header("x-rate-limit-reset-tokens", 3)],
            3 * SECOND,
        ),
    ];
    for (vendor, status, headers, wait) in styles {
        let first = (status, headers);
        let server = TestServer::start(move |_, _, nth| {
            if nth == 0 {
                first.clone()
            } else {
                (200, vec![])
            }
        })
        .await;
        let mut client = stack(RateLimitLayer::new());
        let start = Instant::now();
        let calls = if status == 429 { 1 } else { 2 };
        for _ in 0..calls {
            let response = send(&mut client, Method::POST, server.url("/"))
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{vendor}");
        }
        let arrivals = server.arrivals("POST", "/");
        assert_eq!(
            arrivals.len(),
            2,
            "{vendor}: sent once more, after the wait"
        );
        let waited = arrivals[1] - start;
        assert!(waited >= wait, "{vendor}: {waited:?}, not before {wait:?}");
        assert!(waited < wait + 2 * SECOND, "{vendor}: {waited:?}");
    }
}

/// X: a 429 whose daily user cap is spent while the endpoint's meter has room names the cap's
/// reset, a day away, as its wait: far beyond the cap, so the call gets the 429 at once, with
/// no guessed retry.
#[tokio::test(start_paused = true)]
async fn x_a_spent_daily_cap_is_the_wait_and_no_guess_is_retried() {
    let now = now_seconds();
    let server = TestServer::start(move |_, _, _| {
        let headers = vec![
            header("date", date(now)),
            header("x-rate-limit-limit", 15),
            header("x-rate-limit-remaining", 14),
            header("x-rate-limit-reset", now + 900),
            header("x-user-limit-24hour-remaining", 0),
            header("x-user-limit-24hour-reset", now + 86_400),
        ];
        (429, headers)
    })
    .await;
    let mut client = stack(RateLimitLayer::new());
    let start = Instant::now();
    let response = send(&mut client, Method::POST, server.url("/2/tweets"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(Instant::now() - start < SECOND, "no wait");
    assert_eq!(server.count("POST", "/2/tweets"), 1, "no guessed retry");
    let info = response.extensions().get::<RateLimitInfo>().unwrap();
    assert_eq!(
        info.instructed_wait(),
        Some(86_400 * SECOND),
        "the daily reset, not a guess"
    );
}

/// Azure: its token reset on a response that is no refusal is a meter's reset and an
/// instruction that closes nothing: the next call goes at once.
#[tokio::test(start_paused = true)]
async fn azure_a_token_reset_on_an_accepted_response_holds_no_call() {
    let server = TestServer::start(move |_, _, _| {
        let headers = vec![
            header("x-ratelimit-remaining-tokens", 90_000),
            header("x-rate-limit-reset-tokens", 30),
        ];
        (200, headers)
    })
    .await;
    let mut client = stack(RateLimitLayer::new());
    let start = Instant::now();
    for _ in 0..2 {
        let response = send(&mut client, Method::POST, server.url("/openai/deployments"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let arrivals = server.arrivals("POST", "/openai/deployments");
    assert_eq!(arrivals.len(), 2);
    assert!(arrivals[1] - start < SECOND, "{:?}", arrivals[1] - start);
}

/// Stripe: a refusal for too many requests in flight backs off alone: it closes nothing for
/// the key's other calls, and the server's `Stripe-Should-Retry: false` is never sent again.
#[tokio::test(start_paused = true)]
async fn stripe_a_concurrency_refusal_holds_no_other_call() {
    let server = TestServer::start(move |_, path, nth| match (path, nth) {
        ("/v1/charges", 0) => (
            429,
            vec![
                header("stripe-rate-limited-reason", "global-concurrency"),
                header("stripe-should-retry", "true"),
            ],
        ),
        ("/v1/refunds", 0) => (409, vec![header("stripe-should-retry", "false")]),
        _ => (200, vec![]),
    })
    .await;
    let client = stack(RateLimitLayer::new().jitter_seed(1));
    let start = Instant::now();
    let charge = tokio::spawn({
        let mut client = client.clone();
        let url = server.url("/v1/charges");
        async move { send(&mut client, Method::POST, url).await.unwrap().status() }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut other = client.clone();
    let response = send(&mut other, Method::POST, server.url("/v1/customers"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(server.arrivals("POST", "/v1/customers")[0] - start < Duration::from_millis(100));
    assert_eq!(charge.await.unwrap(), StatusCode::OK);
    assert_eq!(
        server.count("POST", "/v1/charges"),
        2,
        "the refused charge retried once"
    );
    let response = send(&mut other, Method::POST, server.url("/v1/refunds"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(server.count("POST", "/v1/refunds"), 1);
}
