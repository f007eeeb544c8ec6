//! Token meters end to end: an OpenAI-style API whose token quota binds before its request
//! quota, on a window longer than the cap (six minutes), and callers that declare what each
//! request spends (`TokenCost`). A hyper-util client through the README's stack against a real
//! server on loopback that counts what it received and what it refused. The clock is paused.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use support::token_api::{SPENDS, token_api};
use support::{TestServer, client};
use tokio::time::Instant;
use tower::util::BoxCloneService;
use tower::{ServiceBuilder, ServiceExt};
use tower_retry_after::{BoxError, HeldBy, RateLimitLayer, Throttled, TokenCost, Unit};

type Client =
    BoxCloneService<Request<Full<Bytes>>, http::Response<hyper::body::Incoming>, BoxError>;

fn stack() -> Client {
    BoxCloneService::new(
        ServiceBuilder::new()
            .timeout(Duration::from_secs(300))
            .layer(RateLimitLayer::new())
            .service(client()),
    )
}

fn request(server: &TestServer, declared: bool) -> Request<Full<Bytes>> {
    let mut request = Request::post(server.url("/v1/chat/completions"));
    if declared {
        request = request.extension(TokenCost::new(100, SPENDS - 100));
    }
    request.body(Full::default()).unwrap()
}

/// How `tasks` tasks making `each` calls in turn fared: the calls answered 200, and the
/// token holds they met (each with how long it took to be told).
async fn run(
    client: &Client,
    server: &TestServer,
    declared: bool,
    tasks: usize,
    each: usize,
) -> (usize, Vec<Duration>) {
    let tasks: Vec<_> = (0..tasks)
        .map(|_| {
            let (client, requests) = (client.clone(), (0..each).map(|_| request(server, declared)));
            let requests: Vec<_> = requests.collect();
            tokio::spawn(async move {
                let (mut answered, mut held) = (0, Vec::new());
                for request in requests {
                    let started = Instant::now();
                    match client.clone().oneshot(request).await {
                        Ok(response) if response.status() == StatusCode::OK => answered += 1,
                        Ok(_) => {}
                        Err(error) => {
                            let throttled = error.downcast_ref::<Throttled>().unwrap();
                            // The declared cost not covered, or the meter said spent.
                            assert!(matches!(
                                throttled.held_by(),
                                HeldBy::TokenCost { unit: Unit::Tokens }
                                    | HeldBy::SpentMeter {
                                        unit: Unit::Tokens,
                                        ..
                                    }
                            ));
                            held.push(started.elapsed());
                        }
                    }
                }
                (answered, held)
            })
        })
        .collect();
    let (mut answered, mut held) = (0, Vec::new());
    for task in tasks {
        let (a, h) = task.await.unwrap();
        answered += a;
        held.extend(h);
    }
    (answered, held)
}

/// Ten tasks of three calls each against a quota of ten requests' tokens: declaring the cost,
/// the quota is spent and no request is refused, cold (the key's first calls) or warm (its
/// token meter already known); the calls it cannot cover fail at once, the window's reset
/// six minutes away, beyond the cap. Without the declaration the layer learns the meter is
/// spent only once the server says so.
#[tokio::test(start_paused = true)]
async fn declared_token_costs_keep_calls_off_a_token_quota_longer_than_the_cap() {
    let mut figures = Vec::new();
    for declared in [true, false] {
        for warm in [false, true] {
            let (server, refused) = token_api(10 * SPENDS).await;
            let client = stack();
            if warm {
                let first = client.clone().oneshot(request(&server, declared)).await;
                assert_eq!(first.unwrap().status(), StatusCode::OK);
            }
            let (answered, held) = run(&client, &server, declared, 10, 3).await;
            let refused = *refused.lock().unwrap();
            figures.push((declared, warm, refused, answered));
            assert_eq!(answered + usize::from(warm), 10, "the quota spent whole");
            if declared {
                assert!(refused <= 1, "warm {warm}: {refused} refused");
                assert!(held.iter().all(|took| *took <= Duration::from_millis(1)));
            }
        }
    }
    let refused = |declared| {
        figures
            .iter()
            .filter(|(d, ..)| *d == declared)
            .map(|(.., refused, _)| *refused)
            .sum::<u64>()
    };
    assert!(
        refused(true) < refused(false),
        "(declared, warm, refused, answered): {figures:?}"
    );
    println!("(declared, warm, refused, answered): {figures:?}");
}
