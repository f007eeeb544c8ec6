//! Every line of `tests/vectors/ratelimit-headers.txt` (header test vectors gathered from real
//! servers and the IETF drafts) is a case here, with what the crate reads from it.
//!
//! Where a vector's own expectation is a guess or differs from DESIGN.md's header section, the
//! design decides and the case says why. Formats the crate does not read (a JavaScript date, X's
//! per-user limit, Akamai's next-request time) are asserted to read as nothing rather than as a
//! wrong number. Vendors' own headers have their file and cases in `vendor_vectors.rs`.

mod support;

use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use support::vectors::{
    Case, NOW, NOW_DATE, assert_cases_read_as_expected, assert_one_case_a_line, at, not_read, reads,
};
use tower_retry_after::RateLimitInfo;

const VECTORS: &str = include_str!("vectors/ratelimit-headers.txt");

fn cases() -> Vec<Case> {
    vec![
        // IETF drafts 01-03
        reads("RateLimit-Limit: 100", "_[l=100]"),
        reads(
            "RateLimit-Limit: 10, 10;w=1, 50;w=60, 1000;w=3600, 5000;w=86400",
            "_[l=10 w=1s]; _[l=50 w=60s]; _[l=1000 w=3600s]; _[l=5000 w=86400s]",
        ),
        reads(
            r#"RateLimit-Limit: 100, 100;w=60;burst=1000;comment="sliding window", 5000;w=3600;burst=0;comment="fixed window""#,
            "_[l=100 w=60s]; _[l=5000 w=3600s]",
        ),
        reads("RateLimit-Remaining: 50", "_[r=50]"),
        reads("RateLimit-Reset: 50", "_[t=50s]"),
        reads(
            "RateLimit-Limit: 10 || RateLimit-Remaining: 1 || RateLimit-Reset: 7",
            "_[l=10 r=1 t=7s]",
        ),
        reads(
            "RateLimit-Limit: 100 || Ratelimit-Remaining: 0 || Ratelimit-Reset: 50",
            "_[l=100 r=0 t=50s]",
        ),
        // drafts 04-06
        reads("RateLimit-Policy: 100;w=60", "_[l=100 w=60s]"),
        reads(
            "RateLimit-Policy: 10;w=1;burst=1000, 1000;w=3600",
            "_[l=10 w=1s]; _[l=1000 w=3600s]",
        ),
        reads("RateLimit-Policy: 10;w=1, 10;w=60", ""),
        reads(
            r#"RateLimit-Policy: 100;w=60;comment="fixed window""#,
            "_[l=100 w=60s]",
        ),
        reads(
            "RateLimit-Limit: 100 || RateLimit-Policy: 100;w=10 || RateLimit-Remaining: 50 || RateLimit-Reset: 5",
            "_[l=100 r=50 t=5s w=10s]",
        ),
        // draft 07
        reads(
            "RateLimit: limit=100, remaining=50, reset=5",
            "_[l=100 r=50 t=5s]",
        ),
        reads("RateLimit: limit=10, reset=1", "_[l=10 t=1s]"),
        reads(
            "RateLimit: limit=5, remaining=4, reset=60 || RateLimit-Policy: 5;w=60",
            "_[l=5 r=4 t=60s w=60s]",
        ),
        // drafts 08-10
        reads(
            r#"RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400"#,
            "burst[l=100 w=60s]; daily[l=1000 w=86400s]",
        ),
        reads(r#"RateLimit: "default";r=50;t=30"#, "default[r=50 t=30s]"),
        reads(
            r#"RateLimit: "default";r=999;pk=:dHJpYWwxMjEzMjM=:"#,
            "default[r=999]",
        ),
        reads(
            r#"RateLimit: "default";r=300000000;t=60;pk=:QXBwLTk5OQ==:"#,
            "default[r=300000000 t=60s]",
        ),
        reads(
            r#"RateLimit-Policy: "peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:"#,
            "peruser[l=65535 w=10s u=other]",
        ),
        reads(
            r#"RateLimit-Policy: "hour";q=1000;w=3600, "day";q=5000;w=86400 || RateLimit: "day";r=100;t=36000"#,
            "hour[l=1000 w=3600s]; day![l=5000 r=100 t=36000s w=86400s]",
        ),
        reads(
            r#"RateLimit: "a";r=1;t=5 || RateLimit: "b";r=9;t=60"#,
            "a![r=1 t=5s]; b[r=9 t=60s]",
        ),
        reads(
            r#"RateLimit: "5-in-1min"; r=4; t=60"#,
            "5-in-1min[r=4 t=60s]",
        ),
        reads(
            r#"RateLimit-Policy: "5-in-1min"; q=5; w=60; pk=:MTJjYTE3YjQ5YWYy:"#,
            "5-in-1min[l=5 w=60s]",
        ),
        // Received when its Date says (2019), as the draft's example means.
        reads(
            r#"RateLimit: "default";r=0;t=5 || Retry-After: Mon, 05 Aug 2019 09:27:05 GMT || Date: Mon, 05 Aug 2019 09:27:00 GMT"#,
            "retry=5s; default[r=0 t=5s]",
        )
        .received_at(1_564_997_220),
        reads(
            r#"RateLimit: "dynamic";r=15;t=40 || Retry-After: 20"#,
            "retry=20s; dynamic[r=15 t=40s]",
        ),
        // Lenient: a Token name and a missing r still say when quota returns.
        reads("RateLimit: quota;t=1", "quota[t=1s]"),
        reads(
            r#"Ratelimit: "default";r=50;t=30 || Ratelimit-Policy: "burst";q=100;w=60"#,
            "burst[l=100 w=60s]; default![r=50 t=30s]",
        ),
        reads(r#"RateLimit: "default";r=-1;t=30"#, ""),
        reads(r#"RateLimit: "default";r=50;t=1234567890123456"#, ""),
        // 15 digits: an epoch in milliseconds 31,000 years away, saturated at 2^31 s; the
        // layer's cap distrusts it.
        reads(
            r#"RateLimit: "default";r=50;t=999999999999999"#,
            "default[r=50 t=2147483648s]",
        ),
        reads(r#"RateLimit: "default";r=50;t=30.5"#, ""),
        reads(r#"RateLimit: "default";R=50;T=30"#, ""),
        reads(r#"RateLimit: "default";r=50;t=30,"#, ""),
        reads(r#"RateLimit: "default" ;r=50;t=30"#, ""),
        reads(
            r#"RateLimit:    "default";r=50;t=30   "#,
            "default[r=50 t=30s]",
        ),
        reads(r#"RateLimit: "défault";r=1;t=1"#, ""),
        reads(r#"RateLimit: "default";r=5;r=7;t=10"#, "default[r=7 t=10s]"),
        reads("RateLimit:", ""),
        reads(r#"RateLimit-Policy: "p";q=100;w=0"#, ""),
        reads(
            r#"RateLimit: "default";r=50;t=30 || RateLimit: "default";r=49;t=29"#,
            "default[r=49 t=30s]",
        ),
        // express-rate-limit
        reads(
            "X-RateLimit-Limit: 5 || X-RateLimit-Remaining: 4 || Date: Tue, 14 Nov 2023 22:13:20 GMT || X-RateLimit-Reset: 1700000060",
            "_[l=5 r=4 t=60s]",
        ),
        reads(
            "RateLimit-Policy: 5;w=60 || RateLimit-Limit: 5 || RateLimit-Remaining: 4 || RateLimit-Reset: 60",
            "_[l=5 r=4 t=60s w=60s]",
        ),
        reads("Retry-After: 55", "retry=55s"),
        // GitHub
        reads(
            "x-ratelimit-limit: 5000 || x-ratelimit-remaining: 4999 || x-ratelimit-used: 1 || x-ratelimit-reset: 1700003600 || x-ratelimit-resource: core",
            "core[l=5000 r=4999 t=3600s]; group=core",
        ),
        // The reset passed long ago: the window it described is over, nothing is exhausted.
        reads(
            "x-ratelimit-remaining: 0 || x-ratelimit-reset: 1372700873",
            "",
        ),
        reads("retry-after: 60", "retry=60s"),
        // Twitter/X, Okta
        reads(
            "x-rate-limit-limit: 900 || x-rate-limit-remaining: 847 || x-rate-limit-reset: 1705420800",
            "_[l=900 r=847 t=5420800s]",
        ),
        // X's daily cap: a meter of its own over a day (`src/headers/twitter.rs`).
        reads(
            "x-user-limit-24hour-reset: 1700086400",
            "user-24hour[t=86400s w=86400s]",
        ),
        // Its reset (2021) has passed: the limit stands, the quota of that window is unknown.
        reads(
            "X-Rate-Limit-Limit: 1200 || X-Rate-Limit-Remaining: 1199 || X-Rate-Limit-Reset: 1609459200",
            "_[l=1200]",
        ),
        // Discord
        reads("X-RateLimit-Reset-After: 64.57", "_[t=64.57s]"),
        // A fractional epoch, read as one; a day before it passes it is 86400 s away.
        reads("X-RateLimit-Reset: 1470173023.123", "_[t=86400.123s]")
            .received_at(1_470_086_623),
        reads("X-RateLimit-Bucket: abcd1234", "group=abcd1234"),
        reads("X-RateLimit-Global: true", "global"),
        // A shared resource's limit: nothing to read but the wait its 429 carries.
        not_read("X-RateLimit-Scope: shared"),
        reads("Retry-After: 65", "retry=65s"),
        // Shopify
        reads("X-Shopify-Shop-Api-Call-Limit: 39/40", "_[l=40 r=1]"),
        reads(
            "X-Shopify-Shop-Api-Call-Limit: 40/40 || Retry-After: 2.0",
            "retry=2s; _[l=40 r=0]",
        ),
        not_read("X-Shopify-Shop-Api-Call-Limit: 40"),
        // OpenAI / Azure OpenAI
        reads("x-ratelimit-reset-requests: 1s", "requests[t=1s]"),
        reads("x-ratelimit-reset-tokens: 6m0s", "tokens[t=360s u=tokens]"),
        reads("x-ratelimit-reset-requests: 12ms", "requests[t=0.012s]"),
        reads(
            "x-ratelimit-reset-tokens: 1h2m3.5s",
            "tokens[t=3723.5s u=tokens]",
        ),
        reads("x-ratelimit-reset-tokens: 6m", "tokens[t=360s u=tokens]"),
        // Azure's unitless 0: a reset that has come, so nothing of its window is known.
        not_read("x-ratelimit-reset-tokens: 0"),
        not_read("x-ratelimit-remaining-tokens: -1"),
        reads("retry-after-ms: 1500", "retry=1.5s"),
        // Anthropic
        // RFC 3339 instants, read against Date (received two years before them here).
        reads(
            "anthropic-ratelimit-requests-reset: 2025-10-25T12:00:00Z",
            "requests[t=61393600s]",
        ),
        reads(
            "anthropic-ratelimit-tokens-reset: 2025-10-25T12:00:00.5+02:00",
            "tokens[t=61386400.5s u=tokens]",
        ),
        // A meter the crate has no unit for: it holds calls only when the server says it is spent.
        reads(
            "anthropic-ratelimit-unified-reset: 1700000060",
            "unified[t=60s u=other]",
        ),
        // Reddit
        reads(
            "x-ratelimit-used: 2 || x-ratelimit-remaining: 598.0 || x-ratelimit-reset: 356",
            "_[r=598 t=356s]",
        ),
        // Same name, other units. GitLab's epoch under the IETF name, an hour before it.
        reads(
            "RateLimit-Reset: 1609844400 || RateLimit-Observed: 67 || RateLimit-ResetTime: Tue, 05 Jan 2021 11:00:00 GMT",
            "_[t=3600s]",
        )
        .received_at(1_609_840_800),
        // DESIGN: below 1,000,000,000 a reset is delta seconds under every name. Prisjakt means
        // milliseconds; reading seconds errs long, never short, and the cap bounds it.
        reads("X-Rate-Limit-Reset: 600000", "_[t=600000s]"),
        reads("X-Rate-Limit-Reset: 25", "_[t=25s]"),
        reads("X-RateLimit-Reset: 1700000060000", "_[t=60s]"),
        not_read(
            "X-RateLimit-Reset: Tue Feb 16 2021 09:02:42 GMT+0100 (Central European Standard Time)",
        ),
        not_read("x-ratelimit-reset: 2018-03-13T00:00:00Z"),
        reads(
            "X-RateLimit-Reset: Tue, 14 Nov 2023 22:14:20 GMT",
            "_[t=60s]",
        ),
        not_read("X-RateLimit-Next: 2023-11-14T22:14:20Z"),
        // Python servers, tower_governor
        reads(
            "X-RateLimit-Limit: 10 || X-RateLimit-Remaining: 9 || X-RateLimit-Reset: 1700000061 || Retry-After: 60",
            "retry=60s; _[l=10 r=9 t=61s]",
        ),
        reads("X-RateLimit-Reset: 1700000061.437", "_[t=61.437s]"),
        reads("x-ratelimit-after: 3 || retry-after: 3", "retry=3s"),
        // DESIGN: zero is no instruction, so the layer's guessed backoff (with its floor) applies.
        reads("x-ratelimit-after: 0 || retry-after: 0", ""),
        reads(
            "x-ratelimit-limit: 5 || x-ratelimit-remaining: 2",
            "_[l=5 r=2]",
        ),
        not_read("x-ratelimit-whitelisted: true"),
        // RFC 9110 Retry-After
        reads("Retry-After: 120", "retry=120s"),
        // DESIGN: a past date is no instruction (a guess is used), as zero is.
        reads("Retry-After: Fri, 31 Dec 1999 23:59:59 GMT", ""),
        reads("Retry-After: Tue, 14 Nov 2023 22:14:20 GMT", "retry=60s"),
        reads("Retry-After: Tuesday, 14-Nov-23 22:14:20 GMT", "retry=60s"),
        reads("Retry-After: Tue Nov 14 22:14:20 2023", "retry=60s"),
        reads("Retry-After: \t42 ", "retry=42s"),
        reads("Retry-After: 0", ""),
        reads("Retry-After: -5", ""),
        // DESIGN: a non-negative decimal is that duration, not rounded.
        reads("Retry-After: 1.5", "retry=1.5s"),
        reads("Retry-After: 99999999999999999999", "retry=2147483648s"),
        reads("Retry-After: 120, 120", "retry=120s"),
        // DESIGN: values that disagree give the largest.
        reads("Retry-After: 120, 30", "retry=120s"),
        reads("Retry-After: １２０", ""),
        reads("Retry-After:", ""),
        reads(
            "Retry-After: Fri, 31 Dec 9999 23:59:59 GMT",
            "retry=2147483648s",
        ),
        // RFC 9111 Age. DESIGN: a cached meter is used, its countdown shortened by its age.
        reads(
            r#"Age: 30 || RateLimit: "default";r=10;t=50"#,
            "default[r=10 t=20s]",
        ),
        reads("Age: 120 || RateLimit-Reset: 60", ""),
        reads("Age: 10, 20", "_[t=50s]").with("RateLimit-Reset: 60"),
        reads("Age: -1", "_[t=60s]").with("RateLimit-Reset: 60"),
        // A Date behind the receipt is resolution, transit or skew, not age: only Age shortens
        // a countdown.
        reads(
            "Date: Tue, 14 Nov 2023 22:12:20 GMT || RateLimit-Reset: 90",
            "_[t=90s]",
        ),
        // The client clock is 5 s ahead; the epoch is read against Date.
        reads(
            "Date: Tue, 14 Nov 2023 22:13:20 GMT || X-RateLimit-Reset: 1700000060",
            "_[t=60s]",
        )
        .received_at(NOW + 5),
        // Generic malformed / hostile
        reads("X-RateLimit-Remaining: 18446744073709551616", ""),
        reads("X-RateLimit-Remaining: -3", ""),
        reads("X-RateLimit-Remaining: 4abc", ""),
        reads("X-RateLimit-Remaining: ５", ""),
        reads(
            "X-RateLimit-Limit: 5000 || X-RateLimit-Limit: 5000",
            "_[l=5000]",
        ),
        reads("X-RateLimit-Limit: 5000 || X-RateLimit-Limit: 60", "_[l=60]"),
        reads("X-RateLimit-Reset: 1e9", ""),
        reads("X-RateLimit-Reset: NaN", ""),
        reads("X-RateLimit-Reset: 0", ""),
    ]
}

#[test]
fn every_vector_line_has_exactly_one_case() {
    assert_one_case_a_line(VECTORS, &cases());
}

#[test]
fn every_vector_reads_as_the_design_decides() {
    assert_cases_read_as_expected(&cases());
}

#[test]
fn a_response_is_empty_only_when_it_said_nothing_about_limits() {
    let read = |pairs: &[(&'static str, &'static str)]| {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        RateLimitInfo::from_headers(&headers, at(NOW))
    };
    assert!(read(&[]).is_empty());
    assert!(read(&[("content-type", "text/plain")]).is_empty());
    assert!(
        read(&[("retry-after", "0")]).is_empty(),
        "zero is no instruction"
    );
    assert!(
        !read(&[("retry-after", "5")]).is_empty(),
        "an instruction alone"
    );
    assert!(
        !read(&[("x-ratelimit-remaining", "3")]).is_empty(),
        "a meter alone"
    );
    assert!(
        !read(&[
            ("retry-after", "5"),
            ("ratelimit", "limit=10, remaining=0, reset=5")
        ])
        .is_empty()
    );
}

/// A `Date` behind the receipt is not taken for age: a client clock ahead of the server's (or
/// a slow transit) puts it there, and subtracting it would retry early whenever the client's
/// clock runs ahead. Only `Age` shortens the countdown.
#[test]
fn a_countdown_is_measured_from_receipt_and_shortened_only_by_age() {
    let mut headers = HeaderMap::new();
    headers.insert("date", HeaderValue::from_static(NOW_DATE));
    headers.insert(
        "ratelimit",
        HeaderValue::from_static("limit=10, remaining=0, reset=30"),
    );
    for skew in [10, 40] {
        let info = RateLimitInfo::from_headers(&headers, at(NOW + skew));
        let meter = &info.meters()[0];
        assert_eq!(meter.reset_in(), Some(Duration::from_secs(30)), "{skew} s");
        assert!(meter.is_exhausted(), "{skew} s: the spent meter is kept");
        assert_eq!(info.instructed_wait(), Some(Duration::from_secs(30)));
    }
    headers.insert("age", HeaderValue::from_static("12"));
    let cached = RateLimitInfo::from_headers(&headers, at(NOW + 40));
    assert_eq!(cached.meters()[0].reset_in(), Some(Duration::from_secs(18)));
}
