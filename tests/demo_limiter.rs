//! The limiter the demo and the simulator serve: the yardstick every figure they print is
//! measured against. Each algorithm refuses the request over its limit with the right
//! `Retry-After`, each header style says what its servers say, rounded as they round, and the
//! physical limit is what the quickest possible client achieves.

#![allow(dead_code)] // the example's module: the tests take the part they need

#[path = "../examples/simulate/limiter.rs"]
mod limiter;

use std::time::Duration;

use http::{Response, StatusCode};
use limiter::{Algorithm, Headers, Limiter};

/// A time on the server's wall clock, in milliseconds since the Unix epoch.
fn at(milliseconds: u64) -> Duration {
    Duration::from_millis(milliseconds)
}

fn header(response: &Response<()>, name: &str) -> Option<String> {
    let value = response.headers().get(name)?;
    Some(value.to_str().unwrap().to_owned())
}

/// 3 requests per 10 s, made at 1,000.3 s, sending `headers`.
fn three_per_ten_seconds(algorithm: Algorithm, headers: Headers) -> Limiter {
    Limiter::new(
        algorithm,
        headers,
        3,
        Duration::from_secs(10),
        at(1_000_300),
    )
}

/// Asks at each time in `accepted` (each must be accepted), then at `refused_at`: the
/// `Retry-After` of that refusal.
fn retry_after_of_the_refusal(limiter: &mut Limiter, accepted: &[u64], refused_at: u64) -> String {
    for &time in accepted {
        let response = limiter.answer(at(time));
        assert_eq!(response.status(), StatusCode::OK, "at {time} ms");
    }
    let response = limiter.answer(at(refused_at));
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    header(&response, "retry-after").unwrap()
}

#[test]
fn a_window_from_the_first_request_refuses_the_fourth_until_ten_seconds_after_the_first() {
    let mut limiter = three_per_ten_seconds(Algorithm::FirstRequest, Headers::RetryAfter);
    // The window is 1,000.5 to 1,010.5: 8.3 s are left at 1,002.2, so 9 whole seconds.
    let wait =
        retry_after_of_the_refusal(&mut limiter, &[1_000_500, 1_001_000, 1_002_000], 1_002_200);
    assert_eq!(wait, "9");
    assert_eq!(
        limiter.answer(at(1_010_499)).status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(limiter.answer(at(1_010_500)).status(), StatusCode::OK);
}

#[test]
fn an_aligned_window_refuses_the_fourth_until_the_clock_turns_the_window() {
    let mut limiter = three_per_ten_seconds(Algorithm::Aligned, Headers::RetryAfter);
    // The window is 1,000 to 1,010 on the clock: 3 s left at 1,007, not a nanosecond more.
    let wait =
        retry_after_of_the_refusal(&mut limiter, &[1_003_000, 1_004_000, 1_005_000], 1_007_000);
    assert_eq!(wait, "3");
    assert_eq!(
        limiter.answer(at(1_009_999)).status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(limiter.answer(at(1_010_000)).status(), StatusCode::OK);
}

#[test]
fn a_token_bucket_refuses_the_fourth_until_its_next_token() {
    let mut limiter = three_per_ten_seconds(Algorithm::TokenBucket, Headers::RetryAfter);
    // A token every 3.33 s: 1 s after the burst, 2.33 s are left until the next one.
    let wait =
        retry_after_of_the_refusal(&mut limiter, &[1_000_300, 1_000_300, 1_000_300], 1_001_300);
    assert_eq!(wait, "3");
    // The token is back 10/3 s after the burst (to the nanosecond above); the refusal took none.
    let token = at(1_000_300) + Duration::from_nanos(3_333_333_334);
    let early = limiter.answer(token - Duration::from_nanos(1));
    assert_eq!(early.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        header(&early, "retry-after").unwrap(),
        "1",
        "a nanosecond, rounded up"
    );
    assert_eq!(limiter.answer(token).status(), StatusCode::OK);
}

#[test]
fn a_sliding_window_refuses_until_the_oldest_counted_request_leaves_the_span() {
    let mut limiter = three_per_ten_seconds(Algorithm::Sliding, Headers::RetryAfter);
    // 1,001 leaves the span at 1,011: 3 s after 1,008.
    let wait =
        retry_after_of_the_refusal(&mut limiter, &[1_001_000, 1_004_000, 1_006_000], 1_008_000);
    assert_eq!(wait, "3");
    assert_eq!(
        limiter.answer(at(1_010_999)).status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(limiter.answer(at(1_011_000)).status(), StatusCode::OK);
    // The refusals were not counted: 1,004 leaves at 1,014, 2.5 s after 1,011.5.
    let refused = limiter.answer(at(1_011_500));
    assert_eq!(header(&refused, "retry-after").unwrap(), "3");
}

#[test]
fn a_bare_429_has_no_retry_after_and_every_other_style_has_one() {
    for headers in Headers::ALL {
        let mut limiter = Limiter::new(
            Algorithm::FirstRequest,
            headers,
            1,
            Duration::from_secs(1),
            at(1_000_000),
        );
        limiter.answer(at(1_000_000));
        let refused = limiter.answer(at(1_000_400));
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry_after = header(&refused, "retry-after");
        let expected = (headers != Headers::None).then(|| "1".to_owned());
        assert_eq!(retry_after, expected, "{headers:?}");
    }
}

/// The second of 3 requests per 10 s, 1.5 s into a window from the first request at
/// 1,000.3 s, sending `headers`.
fn second_request(headers: Headers) -> Response<()> {
    let mut limiter = three_per_ten_seconds(Algorithm::FirstRequest, headers);
    limiter.answer(at(1_000_300));
    limiter.answer(at(1_001_800))
}

#[test]
fn meters_count_down_in_whole_seconds_rounded_up() {
    // 8.5 s left in the window: 9.
    let draft8 = second_request(Headers::Draft8);
    assert_eq!(
        header(&draft8, "ratelimit-policy").unwrap(),
        "\"default\";q=3;w=10"
    );
    assert_eq!(header(&draft8, "ratelimit").unwrap(), "\"default\";r=1;t=9");
    let draft6 = second_request(Headers::Draft6);
    assert_eq!(header(&draft6, "ratelimit-policy").unwrap(), "3;w=10");
    assert_eq!(header(&draft6, "ratelimit-limit").unwrap(), "3");
    assert_eq!(header(&draft6, "ratelimit-remaining").unwrap(), "1");
    assert_eq!(header(&draft6, "ratelimit-reset").unwrap(), "9");
    let x = second_request(Headers::XRateLimit);
    assert_eq!(header(&x, "x-ratelimit-limit").unwrap(), "3");
    assert_eq!(header(&x, "x-ratelimit-remaining").unwrap(), "1");
    assert_eq!(header(&x, "x-ratelimit-reset").unwrap(), "9");
    assert_eq!(header(&x, "date"), None);
    assert_eq!(second_request(Headers::RetryAfter).headers().len(), 0);
}

#[test]
fn an_epoch_reset_rounds_the_window_end_up_and_its_date_rounds_down() {
    // The window ends at 1,010.3 s: 1,011. The request came at 1,001.8 s: Date says 1,001.
    let epoch = second_request(Headers::XRateLimitEpoch);
    assert_eq!(header(&epoch, "x-ratelimit-reset").unwrap(), "1011");
    assert_eq!(header(&epoch, "x-ratelimit-remaining").unwrap(), "1");
    let date = httpdate::parse_http_date(&header(&epoch, "date").unwrap()).unwrap();
    assert_eq!(date, std::time::UNIX_EPOCH + Duration::from_secs(1_001));
}

#[test]
fn a_token_bucket_reports_whole_tokens_left_and_the_time_until_it_is_full() {
    let mut limiter = three_per_ten_seconds(Algorithm::TokenBucket, Headers::XRateLimit);
    limiter.answer(at(1_000_300));
    limiter.answer(at(1_000_300));
    // One token is left; 2 s later 0.6 more have come (3 per 10 s), this request leaves 0.6,
    // and the 2.4 missing take 8 s to come.
    let response = limiter.answer(at(1_002_300));
    assert_eq!(header(&response, "x-ratelimit-remaining").unwrap(), "0");
    assert_eq!(header(&response, "x-ratelimit-reset").unwrap(), "8");
}

#[test]
fn a_sliding_window_reports_the_room_left_and_when_the_last_counted_request_leaves() {
    let mut limiter = three_per_ten_seconds(Algorithm::Sliding, Headers::XRateLimit);
    limiter.answer(at(1_001_000));
    let response = limiter.answer(at(1_004_500));
    assert_eq!(header(&response, "x-ratelimit-remaining").unwrap(), "1");
    assert_eq!(header(&response, "x-ratelimit-reset").unwrap(), "10");
    let later = limiter.answer(at(1_006_000));
    assert_eq!(header(&later, "x-ratelimit-remaining").unwrap(), "0");
    assert_eq!(header(&later, "x-ratelimit-reset").unwrap(), "10");
}

/// A client that sends, every millisecond from the limiter's start, as many requests as it
/// accepts: when its `requests`-th is accepted, from the start.
fn quickest_client(limiter: &mut Limiter, start: Duration, requests: usize) -> Duration {
    let mut served = 0;
    let mut now = start;
    loop {
        assert!(now - start < Duration::from_secs(60), "never served");
        while limiter.answer(now).status() == StatusCode::OK {
            served += 1;
            if served == requests {
                return now - start;
            }
        }
        now += Duration::from_millis(1);
    }
}

#[test]
fn the_physical_limit_is_what_the_quickest_client_achieves() {
    // 4 per 2 s: a token every 500 ms, so every limit falls on a millisecond.
    let start = at(1_000_250);
    let closed_forms = [
        Algorithm::FirstRequest,
        Algorithm::Aligned,
        Algorithm::TokenBucket,
        Algorithm::Sliding,
    ];
    for algorithm in closed_forms {
        for requests in [1, 4, 5, 10, 30] {
            let window = Duration::from_secs(2);
            let mut limiter = Limiter::new(algorithm, Headers::None, 4, window, start);
            let physical = limiter.physical_limit(requests);
            let quickest = quickest_client(&mut limiter, start, requests);
            assert_eq!(physical, quickest, "{algorithm:?}, {requests} requests");
        }
    }
}

#[test]
fn a_token_bucket_holds_no_more_than_its_limit_however_long_it_rests() {
    let mut limiter = three_per_ten_seconds(Algorithm::TokenBucket, Headers::RetryAfter);
    limiter.answer(at(1_000_300));
    // 100 s of rest would be 30 tokens: the bucket holds 3.
    let wait =
        retry_after_of_the_refusal(&mut limiter, &[1_100_300, 1_100_300, 1_100_300], 1_100_300);
    assert_eq!(wait, "4", "a whole token to come: 3.33 s");
}

/// Asks at each millisecond in `times`: whether each was accepted.
fn verdicts(limiter: &mut Limiter, times: &[u64]) -> Vec<bool> {
    times
        .iter()
        .map(|&time| limiter.answer(at(time)).status() == StatusCode::OK)
        .collect()
}

#[test]
fn a_leaky_bucket_without_burst_refuses_a_request_sooner_than_its_interval_after_the_last_accepted()
{
    // 3 per 10 s: one per 3.333 s; the refused one at 1,002 s takes no slot.
    let mut limiter = three_per_ten_seconds(Algorithm::Leaky, Headers::RetryAfter);
    let times = [1_000_300, 1_000_301, 1_002_000, 1_003_634, 1_003_640];
    assert_eq!(
        verdicts(&mut limiter, &times),
        [true, false, false, true, false]
    );
    let wait = retry_after_of_the_refusal(&mut limiter, &[], 1_004_000);
    assert_eq!(wait, "3", "the next slot at 1,006.97 s");
    assert_eq!(
        limiter.physical_limit(4),
        Duration::from_nanos(9_999_999_999)
    );
    assert_eq!(limiter.physical_limit(1), Duration::ZERO);
}

#[test]
fn a_sliding_counter_counts_refused_requests_and_weighs_the_last_window_by_what_the_span_covers() {
    let mut limiter = Limiter::new(
        Algorithm::SlidingCounter,
        Headers::RetryAfter,
        3,
        Duration::from_secs(10),
        at(1_000_000),
    );
    // Window [1,000, 1,010): 3 accepted, then a refusal that counts too.
    let times = [1_000_000, 1_001_000, 1_002_000, 1_003_000];
    assert_eq!(verdicts(&mut limiter, &times), [true, true, true, false]);
    // At 1,012.5 the last window (4 counted) weighs 4 × 0.75 = 3: still the limit.
    assert_eq!(verdicts(&mut limiter, &[1_012_500]), [false]);
    // At 1,016 it weighs 4 × 0.4 + 1 (the refusal just counted) = 2.6: below 3.
    assert_eq!(verdicts(&mut limiter, &[1_016_000]), [true]);
    // A client that hammers it never gets through: its refusals keep it at the limit.
    let mut hammered = Limiter::new(
        Algorithm::SlidingCounter,
        Headers::RetryAfter,
        3,
        Duration::from_secs(10),
        at(1_000_000),
    );
    let every_second: Vec<u64> = (0..60).map(|second| 1_000_000 + 1_000 * second).collect();
    let accepted = verdicts(&mut hammered, &every_second);
    assert_eq!(accepted.iter().filter(|&&ok| ok).count(), 3);
}

#[test]
fn a_sliding_counters_retry_after_is_when_the_estimate_falls_below_the_limit() {
    let mut limiter = Limiter::new(
        Algorithm::SlidingCounter,
        Headers::RetryAfter,
        3,
        Duration::from_secs(10),
        at(1_000_000),
    );
    let wait =
        retry_after_of_the_refusal(&mut limiter, &[1_000_000, 1_000_000, 1_000_000], 1_001_000);
    // 4 counted in this window: the next one must weigh them below 3, at 2.5 s into it.
    assert_eq!(wait, "12", "11.5 s, rounded up");
}

#[test]
fn a_limit_that_changes_is_a_quarter_after_five_windows_and_twice_after_ten_unless_told() {
    let mut limiter = Limiter::new(
        Algorithm::Changing,
        Headers::RetryAfter,
        8,
        Duration::from_secs(1),
        at(1_000_000),
    );
    let accepted_in = |limiter: &mut Limiter, window: u64| {
        let times = vec![1_000_000 + 1_000 * window; 20];
        verdicts(limiter, &times).iter().filter(|&&ok| ok).count()
    };
    let counts: Vec<usize> = (0..12)
        .map(|window| accepted_in(&mut limiter, window))
        .collect();
    assert_eq!(counts, [8, 8, 8, 8, 8, 2, 2, 2, 2, 2, 16, 16]);
    let mut longer = Limiter::new(
        Algorithm::Changing,
        Headers::RetryAfter,
        8,
        Duration::from_secs(1),
        at(1_000_000),
    )
    .phases(2);
    let counts: Vec<usize> = (0..6)
        .map(|window| accepted_in(&mut longer, window))
        .collect();
    assert_eq!(
        counts,
        [8, 8, 2, 2, 16, 16],
        "each limit for the windows it is told"
    );
}

/// A server whose limit changes says so: each window's meters give the limit in force then,
/// not the one it started with.
#[test]
fn a_limit_that_changes_is_published_as_it_changes() {
    let mut limiter = Limiter::new(
        Algorithm::Changing,
        Headers::Draft8,
        8,
        Duration::from_secs(1),
        at(1_000_000),
    );
    let published = |limiter: &mut Limiter, window: u64| {
        let response = limiter.answer(at(1_000_000 + 1_000 * window));
        let policy = header(&response, "ratelimit-policy").unwrap();
        format!("{policy} {}", header(&response, "ratelimit").unwrap())
    };
    let first_in_windows: Vec<String> = [0, 5, 10]
        .into_iter()
        .map(|window| published(&mut limiter, window))
        .collect();
    assert_eq!(
        first_in_windows,
        [
            r#""default";q=8;w=1 "default";r=7;t=1"#,
            r#""default";q=2;w=1 "default";r=1;t=1"#,
            r#""default";q=16;w=1 "default";r=15;t=1"#,
        ]
    );
}

#[test]
fn a_cap_on_requests_in_flight_refuses_while_that_many_are_served_whatever_the_rate() {
    let mut limiter = Limiter::new(
        Algorithm::InFlight,
        Headers::None,
        8,
        Duration::from_secs(1),
        at(1_000_000),
    )
    .holding(Duration::from_millis(25));
    assert_eq!(verdicts(&mut limiter, &[1_000_000; 3]), [true, true, false]);
    limiter.finished();
    assert_eq!(verdicts(&mut limiter, &[1_000_001; 2]), [true, false]);
    // 10 requests, 2 at a time, 25 ms each: 5 rounds, the last beginning after 4.
    assert_eq!(limiter.physical_limit(10), Duration::from_millis(100));
}

/// The demo's limiter runs on the real wall clock, which can be stepped back: it reads a time
/// earlier than one it read before as that one, never panics, and answers as it would then.
#[test]
fn a_clock_stepped_back_is_read_as_the_latest_time_it_read() {
    for algorithm in Algorithm::ALL {
        let answers = |times: &[u64]| {
            let mut limiter = three_per_ten_seconds(algorithm, Headers::RetryAfter);
            let last = times.iter().map(|&time| limiter.answer(at(time))).last();
            let last = last.unwrap();
            (last.status(), header(&last, "retry-after"))
        };
        let stepped_back = [1_000_300, 1_000_400, 1_000_500, 1_000_600, 999_000];
        let as_latest = [1_000_300, 1_000_400, 1_000_500, 1_000_600, 1_000_600];
        assert_eq!(answers(&stepped_back), answers(&as_latest), "{algorithm:?}");
    }
}
