//! How long reading a realistic response's rate-limit headers takes.
//!
//! Two responses, each with the headers a real server sends beside the rate-limit ones:
//! - `draft8`: a 429 with the draft 08 pair, `Retry-After` and `Date`;
//! - `github`: a 200 with GitHub's `x-ratelimit-*` set and `Date`;
//! - `none`: a 200 with no rate-limit field, as most responses are;
//! - `openai` and `anthropic`: a 200 with each vendor's request and token meters.
//!
//! Run: `cargo bench --bench parse`. Target: under 1 µs per response.
//!
//! And a hostile one: a `RateLimit` list of distinct names, 64 KiB and 1 MiB long. The time
//! must grow with the length (a ratio in the tens: 16 and cache misses), not with its square
//! (256 and more).

use std::hint::black_box;
use std::time::{Duration, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use http::HeaderMap;
use tower_retry_after::RateLimitInfo;

fn response(rate_limit_headers: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("content-type", "application/json; charset=utf-8"),
        ("content-length", "173"),
        ("server", "nginx"),
        ("cache-control", "no-cache"),
        ("x-request-id", "6f1c2b9a-3d4e-4f5a-8b7c-1d2e3f4a5b6c"),
        ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
    ]
    .into_iter()
    .chain(rate_limit_headers.iter().copied())
    {
        headers.append(name, value.parse().unwrap());
    }
    headers
}

fn parse(c: &mut Criterion) {
    let received = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let draft8 = response(&[
        ("ratelimit-policy", r#""default";q=100;w=60"#),
        ("ratelimit", r#""default";r=0;t=30"#),
        ("retry-after", "30"),
    ]);
    let github = response(&[
        ("x-ratelimit-limit", "5000"),
        ("x-ratelimit-remaining", "4999"),
        ("x-ratelimit-used", "1"),
        ("x-ratelimit-reset", "1700003600"),
        ("x-ratelimit-resource", "core"),
    ]);
    let none = response(&[]);
    let openai = response(&[
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-remaining-requests", "9999"),
        ("x-ratelimit-reset-requests", "6ms"),
        ("x-ratelimit-limit-tokens", "2000000"),
        ("x-ratelimit-remaining-tokens", "1999984"),
        ("x-ratelimit-reset-tokens", "1m30s"),
    ]);
    let anthropic = response(&[
        ("anthropic-ratelimit-requests-limit", "50"),
        ("anthropic-ratelimit-requests-remaining", "49"),
        ("anthropic-ratelimit-requests-reset", "2023-11-14T22:13:50Z"),
        ("anthropic-ratelimit-tokens-limit", "40000"),
        ("anthropic-ratelimit-tokens-remaining", "39000"),
        ("anthropic-ratelimit-tokens-reset", "2023-11-14T22:13:21.5Z"),
    ]);
    let mut group = c.benchmark_group("parse");
    group.bench_function("draft8", |b| {
        b.iter(|| RateLimitInfo::from_headers(black_box(&draft8), received))
    });
    group.bench_function("github", |b| {
        b.iter(|| RateLimitInfo::from_headers(black_box(&github), received))
    });
    for (label, headers) in [
        ("none", &none),
        ("openai", &openai),
        ("anthropic", &anthropic),
    ] {
        group.bench_function(label, |b| {
            b.iter(|| RateLimitInfo::from_headers(black_box(headers), received))
        });
    }
    group.finish();
}

/// A `RateLimit` list of distinct named members at least `bytes` long.
fn named_list(bytes: usize) -> HeaderMap {
    let mut list = String::new();
    for member in 0.. {
        if list.len() >= bytes {
            break;
        }
        list.push_str(&format!("\"q{member}\";r=50;t=10, "));
    }
    list.push_str("\"last\";r=0;t=3");
    let mut headers = HeaderMap::new();
    headers.insert("ratelimit", list.parse().unwrap());
    headers
}

fn hostile(c: &mut Criterion) {
    let received = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut group = c.benchmark_group("hostile");
    group.sample_size(10);
    for (label, bytes) in [("64KiB", 64 << 10), ("1MiB", 1 << 20)] {
        let headers = named_list(bytes);
        group.bench_function(label, |b| {
            b.iter(|| RateLimitInfo::from_headers(black_box(&headers), received))
        });
    }
    group.finish();
}

criterion_group!(benches, parse, hostile);
criterion_main!(benches);
