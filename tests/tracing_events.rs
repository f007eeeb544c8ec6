//! The layer's tracing events, at the level each fits: one `info` per episode of a key
//! (closed, spent, reopened), a `debug` per wait decided (with its key, reason, cause, wait,
//! attempt and whether it will retry) and per wait over (with the true wait), a `trace` per
//! attempt sent, and one per round the law that learns an unpublished limit judged. And the
//! operator's hook, told the same and able to veto a wait.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Request, Response};
use std::time::Duration;
use tower::{Layer, Service, ServiceExt};
use tower_retry_after::{Notice, RateLimitLayer};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

type Events = Arc<Mutex<Vec<BTreeMap<String, String>>>>;

/// Records the fields of every event with the crate's targets.
struct Capture(Events);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let target = event.metadata().target();
        if target == "tower_retry_after" || target.starts_with("tower_retry_after::") {
            let mut fields = Fields::default();
            event.record(&mut fields);
            let level = event.metadata().level().to_string();
            fields.0.insert("level".to_owned(), level);
            self.0.lock().unwrap().push(fields.0);
        }
    }
}

/// Installs a capturing subscriber on this test's thread for as long as the guard lives, its
/// events unread. Every test here runs the layer under one: `tracing` caches each callsite's
/// interest for the whole process, computed on the thread that first reaches it, and a test
/// reaching a callsite with no subscriber would cache it as never wanted, so that another test
/// capturing its events concurrently would miss them.
fn unread() -> tracing::subscriber::DefaultGuard {
    tracing::subscriber::set_default(
        tracing_subscriber::registry().with(Capture(Events::default())),
    )
}

/// The events whose message is `message`.
fn named<'a>(
    events: &'a [BTreeMap<String, String>],
    message: &str,
) -> Vec<&'a BTreeMap<String, String>> {
    events
        .iter()
        .filter(|event| event["message"] == message)
        .collect()
}

/// The waits decided: at the gate, or before a retry.
fn waits(events: &[BTreeMap<String, String>]) -> Vec<&BTreeMap<String, String>> {
    named(events, "rate-limit wait")
}

/// The waits met at a closed gate.
fn at_gate(events: &[BTreeMap<String, String>]) -> Vec<&BTreeMap<String, String>> {
    waits(events)
        .into_iter()
        .filter(|event| event["reason"] == "Gate")
        .collect()
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Answers 429 with `Retry-After` from `waits` in turn, then 200.
fn refusing(
    waits: &'static [&'static str],
) -> impl Service<Request<String>, Response = Response<String>, Error = tower::BoxError, Future: Send>
+ Clone {
    let answered = Arc::new(Mutex::new(0));
    tower::service_fn(move |_request: Request<String>| {
        let answered = answered.clone();
        async move {
            let mut count = answered.lock().unwrap();
            let response = match waits.get(*count) {
                Some(wait) => Response::builder().status(429).header("retry-after", *wait),
                None => Response::builder().status(200),
            };
            *count += 1;
            Ok::<_, tower::BoxError>(response.body(String::new()).unwrap())
        }
    })
}

/// One call to a server answering as [`refusing`] does; the events it emitted.
async fn call_with_waits(waits: &'static [&'static str]) -> Vec<BTreeMap<String, String>> {
    let events = Events::default();
    let guard = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(Capture(events.clone())),
    );
    let inner = refusing(waits);
    let mut service = RateLimitLayer::new().layer(inner);
    let request = Request::post("https://api.test:8443/v1/charges")
        .body(String::new())
        .unwrap();
    service.ready().await.unwrap().call(request).await.unwrap();
    drop(guard);
    events.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_wait_taken_is_an_event_with_its_key_reason_wait_and_attempt() {
    let events = call_with_waits(&["2"]).await;
    let decided = waits(&events);
    assert_eq!(decided.len(), 1, "{events:#?}");
    let event = decided[0];
    assert_eq!(event["level"], "DEBUG");
    assert_eq!(event["key"], "https://api.test:8443");
    assert_eq!(event["reason"], "Instructed");
    assert_eq!(event["cause"], "the Retry-After of a 429 Too Many Requests");
    assert_eq!(event["attempt"], "1");
    assert_eq!(event["will_retry"], "true");
    let wait: u64 = event["wait_ms"].parse().unwrap();
    assert!((2000..2200).contains(&wait), "{wait}");
}

#[tokio::test(start_paused = true)]
async fn a_guessed_wait_says_so() {
    let events = call_with_waits(&["0"]).await;
    assert_eq!(waits(&events)[0]["reason"], "Guessed");
}

#[tokio::test(start_paused = true)]
async fn a_declined_wait_is_an_event_too_with_the_reason_it_was_declined() {
    let events = call_with_waits(&["1", "3600"]).await;
    let decided = waits(&events);
    assert_eq!(decided.len(), 2, "{events:#?}");
    assert_eq!(decided[1]["attempt"], "2");
    assert_eq!(decided[1]["will_retry"], "false");
    assert!(
        decided[1]["declined"].contains("retry_after_cap"),
        "{:?}",
        decided[1]
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_that_meets_a_closed_gate_says_so() {
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(Capture(events.clone())),
    );
    let inner = refusing(&["2"]);
    let layer = RateLimitLayer::new();
    let request = || {
        Request::post("https://api.test:8443/v1/charges")
            .body(String::new())
            .unwrap()
    };
    let first = tokio::spawn(layer.layer(inner.clone()).oneshot(request()));
    tokio::time::sleep(Duration::from_millis(10)).await;
    layer.layer(inner).oneshot(request()).await.unwrap();
    first.await.unwrap().unwrap();

    let events = events.lock().unwrap().clone();
    let at_gate = at_gate(&events);
    assert_eq!(at_gate.len(), 1, "{events:#?}");
    assert_eq!(at_gate[0]["key"], "https://api.test:8443");
    assert_eq!(
        at_gate[0]["cause"],
        "the Retry-After of a 429 Too Many Requests"
    );
    assert_eq!(at_gate[0]["will_retry"], "true");
    assert_eq!(at_gate[0]["attempt"], "1", "its first attempt waits");
    let wait: u64 = at_gate[0]["wait_ms"].parse().unwrap();
    assert!((1900..=2200).contains(&wait), "{wait}");
}

/// Every event the crate emits while `calls` run, and what each call ended with.
async fn events_of<F: std::future::Future>(calls: F) -> (Vec<BTreeMap<String, String>>, F::Output) {
    let events = Events::default();
    let guard = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(Capture(events.clone())),
    );
    let output = calls.await;
    drop(guard);
    let events = events.lock().unwrap().clone();
    (events, output)
}

/// A first call through `layer` meets a 429 for 50 s; a second, allowed to wait only 20 s,
/// is throttled at the gate. Its result.
async fn throttled_second_call(
    layer: RateLimitLayer,
    request: impl Fn() -> Request<String>,
) -> Result<Response<String>, tower::BoxError> {
    let first = tokio::spawn(layer.layer(refusing(&["50"])).oneshot(request()));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let hasty = layer
        .retry_after_cap(Duration::from_secs(10))
        .max_wait(Duration::from_secs(20));
    let throttled = hasty.layer(refusing(&[])).oneshot(request()).await;
    first.abort();
    throttled
}

/// The default key leaves a URI's userinfo out, so no event and no `Throttled` prints it.
#[tokio::test(start_paused = true)]
async fn a_uris_userinfo_never_reaches_an_event_or_an_error() {
    let layer = RateLimitLayer::new();
    let request = || {
        Request::get("https://alice:hunter2@api.test/v1/items")
            .body(String::new())
            .unwrap()
    };
    let (events, results) = events_of(throttled_second_call(layer, request)).await;
    let error = results.unwrap_err();
    let message = format!("{error} {error:?}");
    assert!(!message.contains("hunter2"), "{message}");
    assert!(message.contains("https://api.test"), "{message}");
    assert!(!events.is_empty());
    for event in &events {
        assert!(!format!("{event:?}").contains("hunter2"), "{event:?}");
        assert_eq!(event["key"], "https://api.test");
    }
    let throttled = at_gate(&events)[0];
    assert_eq!(throttled["will_retry"], "false");
    assert_eq!(
        throttled["attempt"], "1",
        "throttled before its first attempt"
    );
}

/// A key made from a credential is shown as a fingerprint, never as the credential.
#[tokio::test(start_paused = true)]
async fn a_credential_key_is_shown_as_a_fingerprint() {
    let layer = RateLimitLayer::new().key(|request: &http::request::Parts| {
        let token = request.headers.get("authorization")?;
        Some(tower_retry_after::Key::credential(token.as_bytes()))
    });
    let request = || {
        Request::get("https://api.test/v1/items")
            .header("authorization", "Bearer sk-live-0123456789")
            .body(String::new())
            .unwrap()
    };
    let (events, results) = events_of(throttled_second_call(layer, request)).await;
    let error = results.unwrap_err();
    let throttled = error
        .downcast_ref::<tower_retry_after::Throttled>()
        .unwrap();
    let shown = throttled.key().to_string();
    assert!(shown.starts_with("credential:"), "{shown}");
    for text in [format!("{error} {error:?}"), format!("{events:?}")] {
        assert!(!text.contains("sk-live"), "{text}");
        assert!(text.contains(&shown), "{text}");
    }
}

/// A retry that meets a gate another call closed for longer than it may wait: one event, for
/// the retry (attempt 2), declined at the gate.
#[tokio::test(start_paused = true)]
async fn a_retry_throttled_at_the_gate_before_any_wait_says_so() {
    let answered = Arc::new(Mutex::new(0));
    let service = tower::service_fn(move |_request: Request<String>| {
        let answered = answered.clone();
        async move {
            let nth = {
                let mut count = answered.lock().unwrap();
                *count += 1;
                *count
            };
            let (wait, latency) = if nth == 1 { ("5", 10) } else { ("300", 0) };
            tokio::time::sleep(Duration::from_millis(latency)).await;
            let response = Response::builder().status(429).header("retry-after", wait);
            Ok::<_, tower::BoxError>(response.body(String::new()).unwrap())
        }
    });
    let gates = tower_retry_after::Gates::new();
    // Both requests out at once: no slow start on the key the first one opens.
    let hasty = RateLimitLayer::new().gates(gates.clone()).slow_start(false);
    let patient = RateLimitLayer::new()
        .gates(gates)
        .retry_after_cap(Duration::from_secs(600))
        .max_wait(Duration::from_secs(1200));
    let request = || {
        Request::get("https://api.test/")
            .body(String::new())
            .unwrap()
    };
    let (events, response) = events_of(async {
        let first = tokio::spawn(hasty.layer(service.clone()).oneshot(request()));
        tokio::time::sleep(Duration::from_millis(1)).await;
        let closing = tokio::spawn(patient.layer(service).oneshot(request()));
        let response = first.await.unwrap();
        closing.abort();
        response
    })
    .await;
    assert_eq!(response.unwrap().status(), 429);
    let at_gate = at_gate(&events);
    assert_eq!(at_gate.len(), 1, "{events:#?}");
    assert_eq!(at_gate[0]["attempt"], "2");
    assert_eq!(at_gate[0]["will_retry"], "false");
}

/// Thirty calls through one layer against a server that answers the first with a 429 and
/// `Retry-After: 2`, then 200: the events they emitted, how many requests it received, and
/// the calls' statuses (`None` for an error).
async fn thirty_calls(
    layer: RateLimitLayer,
) -> (Vec<BTreeMap<String, String>>, usize, Vec<Option<u16>>) {
    let received = Arc::new(Mutex::new(0));
    let counted = received.clone();
    let inner = tower::service_fn(move |_request: Request<String>| {
        let received = counted.clone();
        async move {
            let nth = {
                let mut count = received.lock().unwrap();
                *count += 1;
                *count
            };
            tokio::time::sleep(Duration::from_millis(30)).await;
            let response = match nth {
                1 => Response::builder().status(429).header("retry-after", "2"),
                _ => Response::builder().status(200),
            };
            Ok::<_, tower::BoxError>(response.body(String::new()).unwrap())
        }
    });
    let service = layer.layer(inner);
    let (events, statuses) = events_of(async {
        let first = tokio::spawn(service.clone().oneshot(get()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let calls: Vec<_> = (0..29)
            .map(|_| tokio::spawn(service.clone().oneshot(get())))
            .collect();
        let mut statuses = Vec::new();
        for call in std::iter::once(first).chain(calls) {
            let result = call.await.unwrap();
            statuses.push(result.ok().map(|response| response.status().as_u16()));
        }
        statuses
    })
    .await;
    let received = *received.lock().unwrap();
    (events, received, statuses)
}

fn get() -> Request<String> {
    Request::get("https://api.test/v1/items")
        .body(String::new())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn an_episode_is_one_info_when_the_key_closes_and_one_when_it_reopens_however_many_calls() {
    let (events, _, _) = thirty_calls(RateLimitLayer::new()).await;
    let info: Vec<_> = events
        .iter()
        .filter(|event| event["level"] == "INFO")
        .collect();
    assert_eq!(info.len(), 2, "{info:#?}");
    assert_eq!(info[0]["episode"], "closed");
    assert_eq!(
        info[0]["cause"],
        "the Retry-After of a 429 Too Many Requests"
    );
    let closed: u64 = info[0]["closed_ms"].parse().unwrap();
    assert!((2000..2300).contains(&closed), "{closed}");
    assert_eq!(info[1]["episode"], "reopened");
    // Each call that waited says so at debug, with what held it.
    let at_gate = at_gate(&events);
    assert_eq!(at_gate.len(), 29, "{events:#?}");
    assert!(at_gate.iter().all(|event| event["level"] == "DEBUG"));
}

#[tokio::test(start_paused = true)]
async fn a_wait_over_says_how_long_the_call_truly_waited() {
    let (events, _, _) = thirty_calls(RateLimitLayer::new()).await;
    let over = named(&events, "rate-limit wait over");
    assert_eq!(over.len(), 30, "the retry and the 29 held: {events:#?}");
    for event in &over {
        assert_eq!(event["level"], "DEBUG");
        let waited: u64 = event["waited_ms"].parse().unwrap();
        // Held by the 2 s the first answer named (it came back 30 ms in; the others
        // arrived at 50 ms), and its spread: never less, and not the probe's timeout.
        assert!((1900..4000).contains(&waited), "{event:?}");
    }
    // Each names the attempt the wait came before: the 29 their first, the retry its second.
    let mut attempts: Vec<&str> = over.iter().map(|event| event["attempt"].as_str()).collect();
    attempts.sort_unstable();
    assert_eq!(attempts, [["1"; 29].as_slice(), &["2"]].concat());
}

#[tokio::test(start_paused = true)]
async fn each_attempt_sent_is_a_trace_event() {
    let events = call_with_waits(&["1", "1"]).await;
    let sent = named(&events, "attempt sent");
    let attempts: Vec<&str> = sent.iter().map(|event| event["attempt"].as_str()).collect();
    assert_eq!(attempts, ["1", "2", "3"]);
    assert!(sent.iter().all(|event| event["level"] == "TRACE"));
}

/// `layer` with a hook that writes down each notice it is told (as `Debug` shows it) and
/// answers it with `approve`.
fn told(
    layer: RateLimitLayer,
    approve: fn(&Notice<'_>) -> bool,
) -> (RateLimitLayer, Arc<Mutex<Vec<String>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let written = notices.clone();
    let layer = layer.on_rate_limit(move |notice: &Notice<'_>| {
        written.lock().unwrap().push(format!("{notice:?}"));
        approve(notice)
    });
    (layer, notices)
}

#[tokio::test(start_paused = true)]
async fn the_hook_vetoes_a_wait_and_the_call_ends_with_what_it_has() {
    let (layer, notices) = told(RateLimitLayer::new(), |notice| {
        !matches!(notice, Notice::Wait { .. })
    });
    let (_, received, statuses) = thirty_calls(layer).await;
    let notices = notices.lock().unwrap().clone();
    // The first call's retry and the 29 calls' waits at the closed gate were all vetoed: the
    // server got the first request only; it ended with its 429, the others with `Throttled`.
    assert_eq!(received, 1, "{notices:#?}");
    assert_eq!(statuses[0], Some(429));
    assert!(statuses[1..].iter().all(Option::is_none), "{statuses:?}");
    let waits = notices.iter().filter(|n| n.starts_with("Wait")).count();
    assert_eq!(waits, 30, "{notices:#?}");
    assert_eq!(
        notices.iter().filter(|n| n.starts_with("Closed")).count(),
        1,
        "one episode: {notices:#?}"
    );
}

/// Through `layer`, a key's first call goes alone; then a call whose server fails it (a 503
/// after 100 ms) and, 10 ms later, one refused for 50 s: the statuses the refused call and the
/// failing one end with.
async fn a_failure_beside_a_refusal(layer: RateLimitLayer) -> (u16, u16) {
    let service = layer.layer(tower::service_fn(|request: Request<String>| async move {
        let status = match request.uri().path() {
            "/refused" => 429,
            "/failing" => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                503
            }
            _ => 200,
        };
        let mut response = Response::builder().status(status);
        if status == 429 {
            response = response.header("retry-after", "50");
        }
        Ok::<_, tower::BoxError>(response.body(String::new()).unwrap())
    }));
    let get = |path: &str| {
        Request::get(format!("http://api.test{path}"))
            .body(String::new())
            .unwrap()
    };
    service.clone().oneshot(get("/ok")).await.unwrap();
    let failing = tokio::spawn(service.clone().oneshot(get("/failing")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let refused = service.clone().oneshot(get("/refused")).await.unwrap();
    let failed = failing.await.unwrap().unwrap();
    (refused.status().as_u16(), failed.status().as_u16())
}

/// A transient failure's retry that meets the gate a 429 closed meanwhile waits there, as a
/// call arriving at it does: the hook is asked first, and its veto ends the call at once with
/// its 503.
#[tokio::test(start_paused = true)]
async fn a_transient_retry_held_at_a_closed_gate_asks_the_hook_first() {
    let _unread = unread();
    let waits = Arc::new(Mutex::new(Vec::new()));
    let told = waits.clone();
    let layer = RateLimitLayer::new().on_rate_limit(move |notice: &Notice<'_>| {
        let Notice::Wait { attempt, .. } = notice else {
            return true;
        };
        told.lock().unwrap().push(*attempt);
        false
    });
    let started = tokio::time::Instant::now();
    let (refused, failed) = a_failure_beside_a_refusal(layer).await;
    assert_eq!(refused, 429, "its own retry vetoed");
    assert_eq!(failed, 503);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // Each before the second attempt: the 429's retry, and the 503's.
    assert_eq!(*waits.lock().unwrap(), [2, 2]);
}

#[tokio::test(start_paused = true)]
async fn the_hook_is_told_each_wait_and_once_per_episode() {
    let (layer, notices) = told(RateLimitLayer::new(), |_| true);
    let (_, received, statuses) = thirty_calls(layer).await;
    assert!(statuses.iter().all(|status| *status == Some(200)));
    let notices = notices.lock().unwrap().clone();
    let count = |kind: &str| notices.iter().filter(|n| n.starts_with(kind)).count();
    assert_eq!(received, 31, "the refused one, its retry and 29");
    assert_eq!(count("Wait"), 30, "{notices:#?}");
    assert_eq!(count("Closed"), 1, "{notices:#?}");
    assert_eq!(count("Reopened"), 1, "{notices:#?}");
}

/// A service that answers its `n`th request (from 1) with `answer(n)`, and counts them.
fn numbered<F>(
    answer: F,
) -> (
    Arc<Mutex<usize>>,
    impl tower::Service<
        Request<String>,
        Response = Response<String>,
        Error = tower::BoxError,
        Future = impl Send,
    > + Clone
    + Send,
)
where
    F: Fn(usize) -> Result<Response<String>, tower::BoxError> + Clone + Send + 'static,
{
    let received = Arc::new(Mutex::new(0));
    let counter = received.clone();
    let service = tower::service_fn(move |_request: Request<String>| {
        let nth = {
            let mut count = counter.lock().unwrap();
            *count += 1;
            *count
        };
        std::future::ready(answer(nth))
    });
    (received, service)
}

#[tokio::test(start_paused = true)]
async fn a_keys_first_call_is_no_episode() {
    let inner = tower::service_fn(|_request: Request<String>| async {
        Ok::<_, tower::BoxError>(Response::new(String::new()))
    });
    let (layer, notices) = told(RateLimitLayer::new(), |_| true);
    let service = layer.layer(inner);
    let (events, ()) = events_of(async {
        let response = service.oneshot(get()).await.unwrap();
        assert_eq!(response.status(), 200);
    })
    .await;
    // The slow start's first call goes alone, as a probe does, but nothing was closed: nothing
    // reopens.
    assert!(
        named(&events, "rate-limit episode").is_empty(),
        "{events:?}"
    );
    assert!(notices.lock().unwrap().is_empty(), "{notices:?}");
}

#[tokio::test(start_paused = true)]
async fn the_hook_is_not_asked_about_a_transient_retry() {
    let _unread = unread();
    let (received, inner) = numbered(|nth| {
        let status = if nth == 1 { 503 } else { 200 };
        Ok(Response::builder()
            .status(status)
            .body(String::new())
            .unwrap())
    });
    // A hook that vetoes every wait it is told of: a 503's backoff is not a rate-limited
    // wait, so it is not told of it, and the GET is retried.
    let (layer, notices) = told(RateLimitLayer::new(), |_| false);
    let response = layer.layer(inner).oneshot(get()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(*received.lock().unwrap(), 2, "the 503 and its retry");
    assert!(notices.lock().unwrap().is_empty(), "{notices:?}");
}

#[tokio::test(start_paused = true)]
async fn refusals_that_come_back_together_are_one_episode() {
    let received = Arc::new(Mutex::new(0));
    let inner = tower::service_fn(move |_request: Request<String>| {
        let received = received.clone();
        async move {
            let nth = {
                let mut count = received.lock().unwrap();
                *count += 1;
                *count
            };
            tokio::time::sleep(Duration::from_millis(30 + nth)).await;
            let response = if nth <= 10 {
                Response::builder().status(429).header("retry-after", "2")
            } else {
                Response::builder().status(200)
            };
            Ok::<_, tower::BoxError>(response.body(String::new()).unwrap())
        }
    });
    // No slow start: the ten go out together, and their ten refusals come back one by one.
    let service = RateLimitLayer::new().slow_start(false).layer(inner);
    let (events, ()) = events_of(async {
        let calls: Vec<_> = (0..10)
            .map(|_| tokio::spawn(service.clone().oneshot(get())))
            .collect();
        for call in calls {
            assert_eq!(call.await.unwrap().unwrap().status(), 200);
        }
    })
    .await;
    let episodes: Vec<&str> = named(&events, "rate-limit episode")
        .iter()
        .map(|event| event["episode"].as_str())
        .collect();
    assert_eq!(episodes, ["closed", "reopened"], "{events:#?}");
}

/// The warnings among `events`.
fn warnings(events: &[BTreeMap<String, String>]) -> Vec<&BTreeMap<String, String>> {
    events
        .iter()
        .filter(|event| event["level"] == "WARN")
        .collect()
}

#[tokio::test(start_paused = true)]
async fn requests_a_server_receives_are_warned_of_once() {
    let service = RateLimitLayer::new().layer(refusing(&[]));
    let (events, ()) = events_of(async {
        for _ in 0..3 {
            let request = Request::get("/v1/items")
                .header("host", "api.test")
                .body(String::new())
                .unwrap();
            service.clone().oneshot(request).await.unwrap();
        }
    })
    .await;
    let warned = warnings(&events);
    assert_eq!(warned.len(), 1, "{events:#?}");
    assert!(warned[0]["message"].contains("not on a server's router"));
    assert_eq!(warned[0]["uri"], "/v1/items");
    // A client's request, with its server named, is not warned of.
    let (events, _) = events_of(service.clone().oneshot(get())).await;
    assert!(warnings(&events).is_empty(), "{events:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_timeout_inside_the_layer_is_warned_of_once() {
    let slow = tower::service_fn(|_request: Request<String>| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok::<_, tower::BoxError>(Response::new(String::new()))
    });
    let service = tower::ServiceBuilder::new()
        .layer(RateLimitLayer::new())
        .timeout(Duration::from_secs(2))
        .service(slow);
    let (events, result) = events_of(service.oneshot(get())).await;
    assert!(result.is_err(), "every attempt timed out");
    let sent = named(&events, "attempt sent").len();
    assert_eq!(sent, 4, "the first and three transient retries");
    let warned = warnings(&events);
    assert_eq!(warned.len(), 1, "{events:#?}");
    assert!(warned[0]["message"].contains("put the timeout outside"));
}

#[tokio::test(start_paused = true)]
async fn a_failure_that_is_no_timeout_is_retried_without_the_warning() {
    let (attempts, flaky) = numbered(|nth| {
        if nth == 1 {
            let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
            return Err(reset.into());
        }
        Ok(Response::new(String::new()))
    });
    let service = RateLimitLayer::new().layer(flaky);
    let (events, result) = events_of(service.oneshot(get())).await;
    assert_eq!(result.unwrap().status(), 200);
    assert_eq!(*attempts.lock().unwrap(), 2, "the reset GET was retried");
    assert!(warnings(&events).is_empty(), "{events:#?}");
}

#[tokio::test(start_paused = true)]
async fn the_hook_is_told_which_attempt_a_wait_comes_before() {
    let _unread = unread();
    let (_, inner) = numbered(|nth| {
        let response = if nth == 1 {
            Response::builder().status(429).header("retry-after", "1")
        } else {
            Response::builder().status(200)
        };
        Ok(response.body(String::new()).unwrap())
    });
    let attempts_told = Arc::new(Mutex::new(Vec::new()));
    let told = attempts_told.clone();
    let layer = RateLimitLayer::new().on_rate_limit(move |notice: &Notice<'_>| {
        if let Notice::Wait { attempt, .. } = notice {
            told.lock().unwrap().push(*attempt);
        }
        true
    });
    let response = layer.layer(inner).oneshot(get()).await.unwrap();
    assert_eq!(response.status(), 200);
    // The 429 was attempt 1: its wait comes before attempt 2.
    assert_eq!(*attempts_told.lock().unwrap(), [2]);
}

/// Accepts `limit` requests a second (fixed windows from the start) and refuses the rest
/// with a bare 429: a limit no header tells of.
fn unpublished(
    limit: usize,
) -> impl Service<Request<String>, Response = Response<String>, Error = tower::BoxError, Future: Send>
+ Clone {
    let start = tokio::time::Instant::now();
    let counted = Arc::new(Mutex::new((0u64, 0usize)));
    tower::service_fn(move |_request: Request<String>| {
        let counted = counted.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let window = start.elapsed().as_secs();
            let mut counted = counted.lock().unwrap();
            if counted.0 != window {
                *counted = (window, 0);
            }
            counted.1 += 1;
            let status = if counted.1 <= limit { 200 } else { 429 };
            Ok(Response::builder()
                .status(status)
                .body(String::new())
                .unwrap())
        }
    })
}

#[tokio::test(start_paused = true)]
async fn each_round_the_learning_law_judged_is_a_trace_event_with_its_key_and_what_it_learned() {
    let service = RateLimitLayer::new().layer(unpublished(3));
    let calls = (0..12).map(|_| service.clone().oneshot(get()));
    let (events, results) = events_of(futures_util::future::join_all(calls)).await;
    assert!(results.iter().all(Result::is_ok));
    let judged = named(&events, "round judged");
    assert!(judged.len() >= 2, "{events:#?}");
    for event in &judged {
        assert_eq!(event["level"], "TRACE");
        assert_eq!(event["key"], "https://api.test");
    }
    // A window's three accepted and the fourth refused: the burst is three.
    let first = judged[0];
    assert_eq!(
        (first["accepted"].as_str(), first["refused"].as_str()),
        ("3", "true")
    );
    assert_eq!(first["burst"], "3", "{first:?}");
    assert_eq!(first["rate_owing"], "false", "nothing cut yet: {first:?}");
    assert_eq!(first["burst_owing"], "false", "{first:?}");
    let rounds: Vec<u64> = judged
        .iter()
        .map(|event| event["round"].parse().unwrap())
        .collect();
    assert!(
        rounds.windows(2).all(|pair| pair[0] < pair[1]),
        "each told once: {rounds:?}"
    );
}

/// GitHub names the limit each answer counts against (`x-ratelimit-resource`). A key's first
/// answer, a 429 of its `core` limit for 2 s, closes that limit: an episode the operator is
/// told of, once closed and once reopened, in the event and through the hook.
#[tokio::test(start_paused = true)]
async fn a_refusal_that_names_its_limit_is_an_episode_closed_before_it_reopens() {
    let (_, inner) = numbered(|nth| {
        let response = if nth == 1 {
            Response::builder()
                .status(429)
                .header("retry-after", "2")
                .header("x-ratelimit-resource", "core")
        } else {
            Response::builder()
                .status(200)
                .header("x-ratelimit-resource", "core")
        };
        Ok(response.body(String::new()).unwrap())
    });
    let notices = Arc::new(Mutex::new(Vec::new()));
    let told = notices.clone();
    let layer = RateLimitLayer::new().on_rate_limit(move |notice: &Notice<'_>| {
        let kind = format!("{notice:?}");
        told.lock()
            .unwrap()
            .push(kind.split(' ').next().unwrap().to_owned());
        true
    });
    let service = layer.layer(inner);
    let (events, ()) = events_of(async {
        let response = service.oneshot(get()).await.unwrap();
        assert_eq!(response.status(), 200);
    })
    .await;
    let episodes: Vec<&str> = named(&events, "rate-limit episode")
        .iter()
        .map(|event| event["episode"].as_str())
        .collect();
    assert_eq!(episodes, ["closed", "reopened"], "{events:#?}");
    let notices = notices.lock().unwrap().clone();
    let turns: Vec<&String> = notices.iter().filter(|n| *n != "Wait").collect();
    assert_eq!(turns, ["Closed", "Reopened"], "{notices:?}");
}

/// Two calls out at once: the first is refused for 30 s, the second, a moment later, for 2 s.
/// The second's retry waits at the gate the first closed, 30 s, not the 2 s its own answer
/// named: the hook that allows waits of ten seconds at most is told that wait, and vetoes it.
#[tokio::test(start_paused = true)]
async fn the_hook_is_told_the_wait_a_retry_held_at_the_gate_takes() {
    let _unread = unread();
    let (received, inner) = numbered(|nth| {
        let response = match nth {
            1 => Response::builder().status(429).header("retry-after", "30"),
            2 => Response::builder().status(429).header("retry-after", "2"),
            _ => Response::builder().status(200),
        };
        Ok(response.body(String::new()).unwrap())
    });
    let inner = tower::ServiceBuilder::new()
        .and_then(|response: Response<String>| async move {
            let delay = if response.status() == 429 { 10 } else { 0 };
            tokio::time::sleep(Duration::from_millis(delay)).await;
            Ok::<_, tower::BoxError>(response)
        })
        .service(inner);
    let told = Arc::new(Mutex::new(Vec::new()));
    let waits = told.clone();
    let layer =
        RateLimitLayer::new()
            .slow_start(false)
            .on_rate_limit(move |notice: &Notice<'_>| match notice {
                Notice::Wait { wait, .. } => {
                    waits.lock().unwrap().push(*wait);
                    *wait <= Duration::from_secs(10)
                }
                _ => true,
            });
    let service = layer.layer(inner);
    let started = tokio::time::Instant::now();
    let first = tokio::spawn(service.clone().oneshot(get()));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let second = service.clone().oneshot(get()).await.unwrap();
    let waited = started.elapsed();
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.status(), 429, "its 30 s wait vetoed");
    assert!(
        waited < Duration::from_secs(10),
        "waited {waited:?}: {:?}",
        told.lock().unwrap()
    );
    assert_eq!(second.status(), 429, "{:?}", told.lock().unwrap());
    assert_eq!(*received.lock().unwrap(), 2);
}

/// A transient failure's retry that meets a closed gate, its wait vetoed by the hook: the
/// call ends with its 503, and its event says it will not retry, and why.
#[tokio::test(start_paused = true)]
async fn a_transient_retry_vetoed_at_a_closed_gate_is_an_event_that_says_it_will_not_retry() {
    let layer = RateLimitLayer::new()
        .on_rate_limit(|notice: &Notice<'_>| !matches!(notice, Notice::Wait { .. }));
    let (events, statuses) = events_of(a_failure_beside_a_refusal(layer)).await;
    assert_eq!(statuses, (429, 503));
    let transient: Vec<_> = waits(&events)
        .into_iter()
        .filter(|event| event["reason"] != "Instructed")
        .collect();
    assert_eq!(transient.len(), 1, "{events:#?}");
    assert_eq!(transient[0]["will_retry"], "false", "{events:#?}");
    assert!(transient[0]["declined"].contains("hook"), "{events:#?}");
}

/// The probe after a closure refused again: the key never reopened, so it is one episode,
/// closed once and reopened once, however many times the probe is refused.
#[tokio::test(start_paused = true)]
async fn a_refused_probe_closes_no_second_episode() {
    let events = call_with_waits(&["2", "2"]).await;
    let episodes: Vec<&str> = named(&events, "rate-limit episode")
        .iter()
        .map(|event| event["episode"].as_str())
        .collect();
    assert_eq!(episodes, ["closed", "reopened"], "{events:#?}");
}

/// Two processes share a store; the first meets a 429 for 2 s. The second's call, held by the
/// store until the closure ends, is told of the episode in its own process as the first is:
/// closed, then reopened (never a reopening of a key it never saw close).
#[tokio::test(start_paused = true)]
async fn a_closure_a_call_learns_from_the_store_is_an_episode_closed_before_it_reopens() {
    let _unread = unread();
    let (_, inner) = numbered(|nth| {
        let response = if nth == 1 {
            Response::builder().status(429).header("retry-after", "2")
        } else {
            Response::builder().status(200)
        };
        Ok(response.body(String::new()).unwrap())
    });
    let store = Arc::new(tower_retry_after::store::MemoryStore::new());
    let process = |turns: Arc<Mutex<Vec<&'static str>>>| {
        RateLimitLayer::new()
            .gates(tower_retry_after::Gates::with_store(store.clone()))
            .on_rate_limit(move |notice: &Notice<'_>| {
                match notice {
                    Notice::Closed { .. } => turns.lock().unwrap().push("closed"),
                    Notice::Reopened { .. } => turns.lock().unwrap().push("reopened"),
                    _ => {}
                }
                true
            })
            .layer(inner.clone())
    };
    let (first_turns, second_turns) = (Arc::default(), Arc::default());
    let (first, second) = (
        process(Arc::clone(&first_turns)),
        process(Arc::clone(&second_turns)),
    );
    let refused = tokio::spawn(first.oneshot(get()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = second.oneshot(get()).await.unwrap();
    assert_eq!(held.status(), 200);
    assert_eq!(refused.await.unwrap().unwrap().status(), 200);
    assert_eq!(*first_turns.lock().unwrap(), ["closed", "reopened"]);
    assert_eq!(*second_turns.lock().unwrap(), ["closed", "reopened"]);
}

/// A window the server said is spent is an episode as a refusal is: one `info` (and one
/// notice) when it is spent, one when the key's calls go again after its reset.
#[tokio::test(start_paused = true)]
async fn a_spent_window_is_one_info_when_spent_and_one_when_the_key_reopens() {
    let (received, inner) = numbered(|nth| {
        let remaining = if nth == 1 { 0 } else { 9 };
        Ok(Response::builder()
            .header("x-ratelimit-limit", "10")
            .header("x-ratelimit-remaining", remaining.to_string())
            .header("x-ratelimit-reset", "2")
            .body(String::new())
            .unwrap())
    });
    let (layer, notices) = told(RateLimitLayer::new(), |_| true);
    let service = layer.layer(inner);
    let (events, ()) = events_of(async {
        for _ in 0..4 {
            let response = service.clone().oneshot(get()).await.unwrap();
            assert_eq!(response.status(), 200);
        }
    })
    .await;
    assert_eq!(*received.lock().unwrap(), 4);
    let episodes: Vec<&str> = named(&events, "rate-limit episode")
        .iter()
        .map(|event| event["episode"].as_str())
        .collect();
    assert_eq!(episodes, ["spent", "reopened"], "{events:#?}");
    let notices = notices.lock().unwrap().clone();
    let count = |kind: &str| notices.iter().filter(|n| n.starts_with(kind)).count();
    assert_eq!(count("Closed"), 1, "{notices:#?}");
    assert_eq!(count("Reopened"), 1, "{notices:#?}");
}

/// The hook of `Notice`'s documentation, "never wait out a rate limit of more than ten
/// seconds": a 429 naming 10.001 s is returned at once (not read as ten whole seconds), one
/// naming 2 s is waited.
#[tokio::test(start_paused = true)]
async fn the_documented_hook_returns_a_rate_limit_of_more_than_ten_seconds_at_once() {
    let _unread = unread();
    let (received, inner) = numbered(|nth| {
        let response = match nth {
            1 => Response::builder()
                .status(429)
                .header("retry-after-ms", "10001"),
            2 => Response::builder().status(429).header("retry-after", "2"),
            _ => Response::builder().status(200),
        };
        Ok(response.body(String::new()).unwrap())
    });
    let layer = RateLimitLayer::new()
        .jitter_seed(1)
        .on_rate_limit(|notice: &Notice<'_>| match notice {
            Notice::Wait { wait, .. } => *wait <= Duration::from_secs(10),
            _ => true,
        });
    let service = layer.layer(inner);
    let started = tokio::time::Instant::now();
    let refused = service.clone().oneshot(get()).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(started.elapsed(), Duration::ZERO, "returned at once");
    tokio::time::sleep(Duration::from_secs(11)).await;
    let waited = service.oneshot(get()).await.unwrap();
    assert_eq!(waited.status(), 200, "two seconds are waited");
    assert_eq!(*received.lock().unwrap(), 3);
}

/// A transient failure's backoff is a wait the layer decided, as a wait at the gate is: its
/// end is told with the true wait (`events.rs`: "and its end with the true wait").
#[tokio::test(start_paused = true)]
async fn a_backoff_after_a_503_says_when_it_is_over() {
    let (_received, inner) = numbered(|nth| {
        let status = if nth == 1 { 503 } else { 200 };
        Ok(Response::builder()
            .status(status)
            .body(String::new())
            .unwrap())
    });
    let service = RateLimitLayer::new().layer(inner);
    let (events, ()) = events_of(async {
        let response = service.oneshot(get()).await.unwrap();
        assert_eq!(response.status(), 200);
    })
    .await;
    assert_eq!(waits(&events).len(), 1, "{events:#?}");
    let over = named(&events, "rate-limit wait over");
    assert_eq!(over.len(), 1, "{events:#?}");
    assert_eq!(over[0]["attempt"], "2");
}
